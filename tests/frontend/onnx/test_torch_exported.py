"""Models written in plain torch.nn, exported with torch.onnx.export (opset 17), imported with
from_onnx and run on the reference interpreter and the graph executor: outputs match
onnxruntime's within rtol 1e-4.

Skipped when torch is absent (CI does not install it): ``pip install torch==2.13.0``.
"""

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from torch import nn  # noqa: E402

import interp  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


class _Block(nn.Module):
    """A ResNet basic block: two 3x3 conv + batch norm, identity or 1x1 projection shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.short(x))


class ResNet(nn.Module):
    """A small ResNet: stem conv + max pool, three stages of basic blocks, global pool, fc."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.stages = nn.Sequential(_Block(16, 16, 1), _Block(16, 32, 2), _Block(32, 64, 2))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class _InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project (ReLU6), residual."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNet(nn.Module):
    """A small MobileNetV2-style network of depthwise-separable inverted residual blocks."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
            _InvertedResidual(16, 16, 1, 1), _InvertedResidual(16, 24, 2, 6),
            _InvertedResidual(24, 24, 1, 6), _InvertedResidual(24, 32, 2, 6),
            nn.Conv2d(32, 64, 1, bias=False), nn.BatchNorm2d(64), nn.Hardswish())
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


class _EncoderLayer(nn.Module):
    """A BERT layer written out: multi-head self-attention, add & layer norm, GELU MLP."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x, mask):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, dim // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (dim // self.heads) ** 0.5 + mask
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, dim)
        x = self.norm1(x + self.out(attended))
        return self.norm2(x + self.mlp(x))


class Bert(nn.Module):
    """A 2-layer BERT-style encoder: token + position + segment embeddings, attention mask."""

    def __init__(self, vocab=100, dim=32, heads=4, hidden=64, layers=2, max_len=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.segments = nn.Embedding(2, dim)
        self.norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(_EncoderLayer(dim, heads, hidden) for _ in range(layers))
        self.pooler = nn.Linear(dim, dim)

    def forward(self, ids, segment, attention_mask):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(ids) + self.positions(positions) + self.segments(segment))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class Lstm(nn.Module):
    """A 2-layer LSTM over a sequence with a linear head on every step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return self.head(y), h, c


def _inputs(name):
    rng = np.random.default_rng(0)
    if name in ("resnet", "mobilenet"):
        return [rng.standard_normal((2, 3, 64, 64)).astype("float32")]
    if name == "bert":
        mask = np.ones((2, 12), "int64")
        mask[1, 8:] = 0
        return [rng.integers(0, 100, (2, 12)).astype("int64"),
                (np.arange(12) >= 6).astype("int64")[None].repeat(2, 0), mask]
    return [rng.standard_normal((2, 7, 8)).astype("float32"),
            rng.standard_normal((2, 2, 16)).astype("float32"),
            rng.standard_normal((2, 2, 16)).astype("float32")]


MODELS = {"resnet": ResNet, "mobilenet": MobileNet, "bert": Bert, "lstm": Lstm}


def _export(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics, as a trained model has
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    inputs = _inputs(name)
    buffer = io.BytesIO()
    torch.onnx.export(model, tuple(torch.from_numpy(a) for a in inputs), buffer,
                      opset_version=17, dynamo=False,
                      input_names=[f"in{i}" for i in range(len(inputs))])
    return onnx.load_from_string(buffer.getvalue()), inputs


@pytest.fixture(scope="module", params=sorted(MODELS))
def exported(request):
    model, inputs = _export(request.param)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {f"in{i}": a for i, a in enumerate(inputs)})
    return request.param, model, inputs, want


def _compare(got, want):
    got = [g.numpy() for g in got] if isinstance(got, (tuple, list)) else [got.numpy()]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_interpreter_matches_onnxruntime(exported):
    _, model, inputs, want = exported
    mod, _ = from_onnx(model)
    _compare(interp.create_executor("debug", mod=mod).evaluate()(*inputs), want)


def test_graph_executor_matches_onnxruntime(exported):
    _, model, inputs, want = exported
    mod, params = from_onnx(model, keep_params_in_input=True)
    run = interp.create_executor("graph", mod=mod, device=interp.cpu(0), target="cpu",
                                 params=params).evaluate()
    _compare(run(*inputs), want)
