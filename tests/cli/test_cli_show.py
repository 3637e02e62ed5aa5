"""``irlib show``: the drawn graph against the IR (node and cluster counts from
``irlib.analysis.count_ops`` and the FuseOps output), every output format, the text
fallback without ``dot``, and ``mod.show()``."""

from __future__ import annotations

import os
import re
import shutil

import pytest

import irlib
from irlib.ir import expr as E
from irlib.ir.functor import post_order

from .cli_helpers import (GOOD_RLY, assert_one_line_error, irlib_cli, small_onnx_classifier)

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")


def _svg_nodes(svg: str) -> int:
    return len(re.findall(r'<g id="node\d+" class="node">', svg))


def _svg_clusters(svg: str) -> int:
    return len(re.findall(r'<g id="clust\d+" class="cluster">', svg))


@needs_dot
def test_show_resnet18_svg_has_one_node_per_op_input_and_output(tmp_path):
    from zoo import catalog
    mod, _ = catalog.workload("resnet18", 1)
    ops = sum(irlib.analysis.count_ops(mod).values())
    out = irlib_cli("show", "resnet18", "-o", tmp_path / "r.svg")
    assert out.returncode == 0, out.stderr
    svg = (tmp_path / "r.svg").read_text()
    # one input (data; the weights are folded into their ops), every op call, one output
    assert _svg_nodes(svg) == 1 + ops + 1
    assert f"{ops} ops" in out.stdout
    assert "conv0_weight&lt;64x3x7x7&gt;" in svg and "1x1000 float32" in svg


@needs_dot
def test_show_fused_draws_each_primitive_function_as_a_cluster(tmp_path):
    from irlib.transform.pipeline import optimize
    from zoo import catalog
    mod, params = catalog.workload("mlp", 1)
    with irlib.transform.PassContext(opt_level=3):
        fused = optimize(irlib.transform.InferType()(mod), params)
    groups = [n for n in post_order(fused["main"].body)
              if isinstance(n, E.Function) and int((n.attrs or {}).get("Primitive", 0)) == 1]
    ops = sum(irlib.analysis.count_ops(fused).values())
    out = irlib_cli("show", "mlp", "--fused", "-o", tmp_path / "m.svg")
    assert out.returncode == 0, out.stderr
    svg = (tmp_path / "m.svg").read_text()
    assert _svg_clusters(svg) == len(groups) > 1
    assert _svg_nodes(svg) == 1 + ops + 1


@needs_dot
def test_show_writes_png_html_and_dot(tmp_path):
    path = tmp_path / "small.onnx"
    small_onnx_classifier(str(path))
    for name in ("g.png", "g.html", "g.dot"):
        out = irlib_cli("show", path, "-o", tmp_path / name)
        assert out.returncode == 0, out.stderr
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "g.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "nn.conv2d" in page
    source = (tmp_path / "g.dot").read_text()
    assert source.startswith("digraph main {") and "nn.softmax" in source


def test_show_text_listing_of_a_rly_file(tmp_path):
    (tmp_path / "m.rly").write_text(GOOD_RLY)
    out = irlib_cli("show", tmp_path / "m.rly")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "@main: 2 inputs, 3 ops, 0 fused groups"
    assert "  input x : 2x3 float32" in lines and "  input w : 4x3 float32" in lines
    assert "  %0 = nn.dense(x, w) : 2x4 float32" in lines
    assert lines[-1] == "  output = %2 : 2x4 float32"


def test_show_without_dot_prints_the_text_and_fails_in_one_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))   # no `dot` here (python runs by full path)
    out = irlib_cli("show", "mlp", "-o", tmp_path / "m.svg", env=env)
    assert_one_line_error(out, 1, "m.svg not written", "apt-get install graphviz")
    assert out.stdout.startswith("@main: 1 inputs, 10 ops")
    assert not (tmp_path / "m.svg").exists()


def test_show_bad_output_extension_is_one_line(tmp_path):
    assert_one_line_error(irlib_cli("show", "mlp", "-o", tmp_path / "m.jpg"), 1, "m.jpg",
                          ".svg")


def test_mod_show_in_a_notebook():
    x = irlib.var("x", shape=(1, 3))
    w = irlib.var("w", shape=(4, 3))
    f = irlib.infer_type(irlib.Function([x, w], irlib.nn.relu(irlib.nn.dense(x, w))))
    view = irlib.IRModule.from_expr(f).show(params={"w"})
    assert view.graph.count() == 4 and view.graph.count("op") == 2
    assert "nn.dense(x, w<4x3>) : 1x4 float32" in view.text()
    assert view.graph.nodes[1].collapsed == ["w<4x3>"]
    svg = view._repr_svg_()
    if shutil.which("dot"):
        assert "<svg" in svg and _svg_nodes(svg) == 4
    else:
        assert svg is None
    untyped = irlib.add(irlib.var("a"), irlib.var("b")).show()
    assert [n.kind for n in untyped.graph.nodes] == ["input", "input", "op", "output"]


def test_tuples_are_edges_and_projections_label_them():
    x = irlib.var("x", shape=(1, 2))
    y = irlib.var("y", shape=(1, 3))
    cat = irlib.concatenate(irlib.Tuple([irlib.exp(x), y]), axis=1)
    split = irlib.split(cat, indices_or_sections=(1,), axis=1)
    body = irlib.add(irlib.TupleGetItem(split.astuple(), 1), irlib.const(1.0))
    graph = irlib.infer_type(irlib.Function([x, y], body)).show().graph
    kinds = [n.kind for n in graph.nodes]
    assert kinds == ["input", "input", "op", "op", "op", "op", "output"]
    by_title = {n.title: n for n in graph.nodes}
    assert len(by_title["concatenate"].inputs) == 2
    assert by_title["add"].inputs == [(by_title["split"].id, "[1]")]
    assert by_title["add"].collapsed == ["const<scalar>"]


def test_show_opt_level_draws_the_optimized_module(capsys):
    from interp.cli import main
    from irlib.transform.pipeline import optimize
    from zoo import catalog
    mod, params = catalog.workload("mlp", 1)
    with irlib.transform.PassContext(opt_level=3):
        optimized = optimize(irlib.transform.InferType()(mod), params, fuse=False)
    counts = irlib.analysis.count_ops(optimized)
    assert main(["show", "mlp", "--opt-level", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"@main: 1 inputs, {sum(counts.values())} ops, 0 fused groups"
    drawn = [re.match(r"\s+%\d+ = ([\w.]+)\(", line) for line in lines[2:-1]]
    assert sorted(m.group(1) for m in drawn) == sorted(
        name for name, n in counts.items() for _ in range(n))
