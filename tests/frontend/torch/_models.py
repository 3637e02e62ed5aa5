"""Small torch models written out in plain torch for the frontend tests.

Torchvision-style ResNet-18 and MobileNetV2 (at a small width), SqueezeNet/VGG,
DenseNet/Inception and EfficientNet/MobileNetV3 blocks, a 2-layer BERT-style encoder, a
GPT-2-style decoder block, an nn.MultiheadAttention encoder and an LSTM tagger. Every model is put in eval mode by its
``make_*`` function with fixed random weights (and non-trivial batch-norm statistics).
"""

import math

import torch
from torch import nn
import torch.nn.functional as F


def _randomize_norms(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every batch norm random running statistics and affine weights (eval mode)."""
    gen = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            count = module.num_features
            module.running_mean.copy_(torch.randn(count, generator=gen) * 0.1)
            module.running_var.copy_(torch.rand(count, generator=gen) + 0.5)
            module.weight.data.copy_(torch.rand(count, generator=gen) + 0.5)
            module.bias.data.copy_(torch.randn(count, generator=gen) * 0.1)
    return model.eval()


class BasicBlock(nn.Module):
    """ResNet basic block (two 3x3 convs, identity or 1x1 projection shortcut)."""

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision's ResNet-18 layout at width ``width`` (64 in torchvision)."""

    def __init__(self, width=8, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inplanes = [], width
        for index, planes in enumerate([width, width * 2, width * 4, width * 8]):
            stride = 1 if index == 0 else 2
            layers.append(nn.Sequential(BasicBlock(inplanes, planes, stride),
                                        BasicBlock(planes, planes)))
            inplanes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def _conv_bn(inp, oup, kernel, stride, groups=1):
    return nn.Sequential(nn.Conv2d(inp, oup, kernel, stride, (kernel - 1) // 2, groups=groups,
                                   bias=False),
                         nn.BatchNorm2d(oup), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """MobileNetV2's inverted residual block."""

    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = inp * expand_ratio
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(_conv_bn(inp, hidden, 1, 1))
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2 layout with a reduced block list and width."""

    def __init__(self, num_classes=10):
        super().__init__()
        settings = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 24, 1, 1)]
        features = [_conv_bn(3, 8, 3, 2)]
        inp = 8
        for t, c, n, s in settings:
            for i in range(n):
                features.append(InvertedResidual(inp, c, s if i == 0 else 1, t))
                inp = c
        features.append(_conv_bn(inp, 64, 1, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


class BertSelfAttention(nn.Module):
    """BERT's self-attention written with explicit matmuls, view/permute and a padding mask."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def _split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size(0), ctx.size(1), -1)


class BertLayer(nn.Module):
    """One BERT encoder layer (post-norm, GELU feed-forward)."""

    def __init__(self, hidden, heads, inter):
        super().__init__()
        self.attn = BertSelfAttention(hidden, heads)
        self.attn_out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.inter = nn.Linear(hidden, inter)
        self.out = nn.Linear(inter, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn_out(self.attn(x, mask)))
        return self.ln2(x + self.out(F.gelu(self.inter(x))))


class BertEncoder(nn.Module):
    """A 2-layer BERT-style encoder: token + position + type embeddings, padding mask."""

    def __init__(self, vocab=50, hidden=32, heads=4, inter=64, layers=2, max_len=16):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_len, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, inter) for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + \
            self.token_type(torch.zeros_like(input_ids))
        x = self.ln(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


class GPT2Block(nn.Module):
    """A GPT-2-style pre-norm decoder block: fused qkv projection, split, causal SDPA, MLP."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(h)


class MHAEncoder(nn.Module):
    """nn.MultiheadAttention (batch_first) with a key padding mask, then SiLU feed-forward."""

    def __init__(self, hidden=16, heads=2):
        super().__init__()
        self.mha = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.norm = nn.LayerNorm(hidden)
        self.ff = nn.Linear(hidden, hidden)

    def forward(self, x):
        attn, _ = self.mha(x, x, x, need_weights=False)
        x = self.norm(x + attn)
        return x + F.silu(self.ff(x))


class LSTMTagger(nn.Module):
    """Embedding -> (batch_first) LSTM -> Linear -> log_softmax over tags."""

    def __init__(self, vocab=30, emb=8, hidden=12, tags=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, tokens):
        h, _ = self.lstm(self.embedding(tokens))
        return F.log_softmax(self.out(h), dim=-1)


class SqueezeVGG(nn.Module):
    """SqueezeNet fire modules (ceil-mode max pools, concat of 1x1/3x3 expands) and a
    VGG-style conv stack with a dropout classifier."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, ceil_mode=True))
        self.squeeze = nn.Conv2d(8, 4, 1)
        self.expand1 = nn.Conv2d(4, 8, 1)
        self.expand3 = nn.Conv2d(4, 8, 3, padding=1)
        self.vgg = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
                                 nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
                                 nn.MaxPool2d(2, 2))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Linear(16 * 2 * 2, 32),
                                        nn.ReLU(True), nn.Dropout(0.5),
                                        nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.stem(x)
        s = F.relu(self.squeeze(x))
        x = torch.cat([F.relu(self.expand1(s)), F.relu(self.expand3(s))], 1)
        x = F.adaptive_avg_pool2d(self.vgg(x), (2, 2))
        return self.classifier(torch.flatten(x, 1))


class DenseInception(nn.Module):
    """A DenseNet dense block (BN-ReLU-conv, concatenation growth, transition with avg
    pooling) followed by an Inception block (four branches, avg-pool branch, concat)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.dense = nn.ModuleList()
        channels = 8
        for _ in range(3):
            self.dense.append(nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU(inplace=True),
                                            nn.Conv2d(channels, 4, 3, padding=1, bias=False)))
            channels += 4
        self.transition = nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU(inplace=True),
                                        nn.Conv2d(channels, 12, 1, bias=False),
                                        nn.AvgPool2d(2, 2))
        self.b1 = nn.Conv2d(12, 4, 1)
        self.b3 = nn.Sequential(nn.Conv2d(12, 4, 1), nn.ReLU(), nn.Conv2d(4, 6, 3, padding=1))
        self.b5 = nn.Sequential(nn.Conv2d(12, 2, 1), nn.ReLU(), nn.Conv2d(2, 4, 5, padding=2))
        self.pool_proj = nn.Conv2d(12, 4, 1)

    def forward(self, x):
        features = [self.stem(x)]
        for layer in self.dense:
            features.append(layer(torch.cat(features, 1)))
        x = self.transition(torch.cat(features, 1))
        pooled = F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        out = torch.cat([self.b1(x), self.b3(x), self.b5(x), self.pool_proj(pooled)], 1)
        return F.relu(out).mean((2, 3))


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation: global pool, two 1x1 convs, a gate multiplied in."""

    def __init__(self, channels, reduced, gate):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, reduced, 1)
        self.fc2 = nn.Conv2d(reduced, channels, 1)
        self.act = nn.SiLU() if gate == "sigmoid" else nn.ReLU()
        self.gate = nn.Sigmoid() if gate == "sigmoid" else nn.Hardsigmoid()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class EfficientMobileV3(nn.Module):
    """An EfficientNet-B0 MBConv (SiLU, SE with sigmoid) and a MobileNetV3 block (hardswish,
    SE with hardsigmoid), each with depthwise convs and residuals."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.SiLU())
        self.mbconv = nn.Sequential(nn.Conv2d(16, 64, 1, bias=False), nn.BatchNorm2d(64),
                                    nn.SiLU(), nn.Conv2d(64, 64, 5, 1, 2, groups=64, bias=False),
                                    nn.BatchNorm2d(64), nn.SiLU(),
                                    SqueezeExcite(64, 4, "sigmoid"),
                                    nn.Conv2d(64, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.v3 = nn.Sequential(nn.Conv2d(16, 48, 1, bias=False), nn.BatchNorm2d(48),
                                nn.Hardswish(), nn.Conv2d(48, 48, 3, 1, 1, groups=48, bias=False),
                                nn.BatchNorm2d(48), SqueezeExcite(48, 12, "hard"), nn.Hardswish(),
                                nn.Conv2d(48, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.head = nn.Sequential(nn.Linear(16, 32), nn.Hardswish(), nn.Dropout(0.2),
                                  nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.stem(x)
        x = x + self.mbconv(x)
        x = x + self.v3(x)
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make(name: str, seed: int = 0) -> nn.Module:
    """The test model ``name`` with deterministic random weights, in eval mode."""
    torch.manual_seed(seed)
    model = {"resnet18": ResNet18, "mobilenet_v2": MobileNetV2, "bert": BertEncoder,
             "gpt2_block": GPT2Block, "mha": MHAEncoder, "lstm": LSTMTagger,
             "squeeze_vgg": SqueezeVGG, "dense_inception": DenseInception,
             "efficient_mobilev3": EfficientMobileV3}[name]()
    return _randomize_norms(model, seed)


def example_inputs(name: str, seed: int = 0) -> tuple:
    """Example inputs of model ``name`` (torch tensors)."""
    gen = torch.Generator().manual_seed(seed)
    if name in ("resnet18", "mobilenet_v2", "squeeze_vgg", "dense_inception",
                "efficient_mobilev3"):
        return (torch.randn(2, 3, 32, 32, generator=gen),)
    if name == "bert":
        ids = torch.randint(0, 50, (2, 8), generator=gen)
        mask = torch.ones(2, 8, dtype=torch.int64)
        mask[1, 5:] = 0
        return ids, mask
    if name in ("gpt2_block",):
        return (torch.randn(2, 8, 32, generator=gen),)
    if name == "mha":
        return (torch.randn(2, 6, 16, generator=gen),)
    if name == "lstm":
        return (torch.randint(0, 30, (2, 7), generator=gen),)
    raise KeyError(name)
