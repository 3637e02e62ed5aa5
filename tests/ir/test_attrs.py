"""Attrs: normalisation, immutability, defaults and structural comparison."""

import numpy as np
import pytest

from irlib.ir.attrs import Attrs


def test_values_are_normalised():
    attrs = Attrs({"strides": [1, 2], "pad": np.array([0, 1]), "eps": np.float32(0.5)})
    assert attrs.strides == (1, 2)
    assert attrs["pad"] == (0, 1)
    assert attrs.eps == 0.5 and isinstance(attrs.eps, float)


def test_attrs_are_immutable_and_compare_by_value():
    a = Attrs({"axis": 1}, "relay.attrs.X")
    with pytest.raises(AttributeError):
        a.axis = 2
    assert a == Attrs({"axis": 1}, "relay.attrs.X")
    assert hash(a) == hash(Attrs({"axis": 1}, "relay.attrs.X"))
    assert a != Attrs({"axis": 1}, "relay.attrs.Y")
    assert a != Attrs({"axis": True}, "relay.attrs.X")


def test_missing_attribute_message_lists_fields():
    with pytest.raises(AttributeError, match="fields are"):
        Attrs({"axis": 1}).stride


def test_non_default_items_and_with_changes():
    a = Attrs({"axis": 1, "eps": 1e-5}, "T", defaults={"axis": 1, "eps": 1e-5})
    assert list(a.non_default_items()) == []
    b = a.with_changes(axis=2)
    assert list(b.non_default_items()) == [("axis", 2)] and a.axis == 1


def test_attrs_pickle_round_trip():
    import pickle
    a = Attrs({"axis": (1, 2)}, "T", defaults={"axis": (0,)})
    b = pickle.loads(pickle.dumps(a))
    assert a == b and b.defaults == {"axis": (0,)}
