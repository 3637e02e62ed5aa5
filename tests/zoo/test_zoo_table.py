"""benchmarks/zoo_table.py: hand-counted parameters and FLOPs, and docs/zoo.md is current."""

import pathlib
import sys

import irlib
import zoo

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import zoo_table  # noqa: E402


def test_mlp_counts_by_hand():
    info = zoo_table.summarize(zoo.mlp.get_net(1))
    assert info["params"] == 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10
    assert info["flops"] == 2 * (784 * 128 + 128 * 64 + 64 * 10)
    assert info["output"] == "(1, 10) float32"


def test_conv_and_deconv_flops_by_hand():
    data = irlib.var("data", shape=(1, 4, 6, 6))
    conv = zoo.layers.conv2d(data, channels=8, kernel_size=(3, 3), groups=2, name="c")
    deconv = zoo.layers.conv2d_transpose(data, channels=2, kernel_size=(2, 2), strides=(2, 2),
                                         name="d")
    info = zoo_table.summarize(zoo.layers.make_function(irlib.Tuple((conv, deconv))))
    # conv: 8 x 4 x 4 outputs, each 2 input channels x 9 taps; deconv: 4 x 6 x 6 inputs,
    # each scattered to 2 output channels x 4 taps
    assert info["flops"] == 2 * (8 * 4 * 4 * 2 * 9 + 4 * 36 * 2 * 4)
    assert info["params"] == 8 * 2 * 9 + 4 * 2 * 4


def test_resnet18_parameter_count_is_the_known_one():
    assert zoo_table.summarize(zoo.resnet.get_net(1, 1000, 18))["params"] == 11_699_892


def test_docs_zoo_md_is_generated_from_the_current_zoo():
    text = (ROOT / "docs" / "zoo.md").read_text()
    assert text == zoo_table.HEADER + zoo_table.table() + "\n"
