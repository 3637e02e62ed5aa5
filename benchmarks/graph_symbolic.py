"""Per-call latency of a transformer decode step on the graph executor with symbolic sizes.

A GPT-2-style pre-norm decoder block (layer norm, q/k/v projections, a KV cache grown by
concatenation, causal-free single-token attention, output projection, GELU MLP), written
with irlib ops, is built once with symbolic ``n`` (new tokens) and ``c`` (cache length) and
run:

* ``symbolic new``: every call at a binding the runtime has not cached (the cache length
  cycles through ``LRU_SIZE + 2`` consecutive lengths from the one shown, as a decode loop
  that grows it would): shapes, memory plan and argument tuples are made each call;
* ``symbolic same``: the same sizes call after call (the prepared binding is reused);
* ``static``: the same block built with every size fixed, at the one size it was built for
  (one build per size);
* ``torch``: PyTorch eager on the same weights and inputs (``torch.cat`` grows its cache),
  when torch is installed.

Inputs are copied in (``set_input``) on every call in every irlib column, outputs read back.
Each engine runs in its own process (two thread pools in one process slow each other down,
see shared notes), ``--rounds`` times; the best median per cell is printed. Usage::

    python benchmarks/graph_symbolic.py [--dim 768] [--heads 12] [--layers 2]
                                        [--sizes 16 64 256] [--calls 200] [--rounds 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import subprocess
import sys
import time

import numpy as np

import irlib
import interp
from interp import graph_executor
from interp.graph_symbolic import LRU_SIZE
from irlib.ir.dims import size_var

F32 = "float32"


def _weights(dim: int, layers: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    shapes = {"g1": (dim,), "b1": (dim,), "wq": (dim, dim), "wk": (dim, dim),
              "wv": (dim, dim), "wo": (dim, dim), "g2": (dim,), "b2": (dim,),
              "w1": (4 * dim, dim), "w2": (dim, 4 * dim)}
    return {f"l{k}_{name}": (rng.standard_normal(shape) * 0.05).astype(F32)
            for k in range(layers) for name, shape in shapes.items()}


def _gelu(x):
    inner = irlib.erf(irlib.multiply(x, irlib.const(1.0 / math.sqrt(2.0), F32)))
    return irlib.multiply(irlib.multiply(x, irlib.const(0.5, F32)),
                          irlib.add(irlib.const(1.0, F32), inner))


def build_decoder(dim: int, heads: int, layers: int, n, c) -> irlib.IRModule:
    """The decoder as an IRModule; ``n``/``c`` are size variables or ints."""
    dh = dim // heads
    x = irlib.var("x", shape=(n, dim), dtype=F32)
    params, outputs = [x], []
    caches, weights = [], []
    hidden = x
    for k in range(layers):
        kc = irlib.var(f"k_cache{k}", shape=(c, heads, dh), dtype=F32)
        vc = irlib.var(f"v_cache{k}", shape=(c, heads, dh), dtype=F32)
        caches += [kc, vc]
        w = {name: irlib.var(f"l{k}_{name}", shape=shape, dtype=F32) for name, shape in (
            ("g1", (dim,)), ("b1", (dim,)), ("wq", (dim, dim)), ("wk", (dim, dim)),
            ("wv", (dim, dim)), ("wo", (dim, dim)), ("g2", (dim,)), ("b2", (dim,)),
            ("w1", (4 * dim, dim)), ("w2", (dim, 4 * dim)))}
        weights += list(w.values())
        h = irlib.nn.layer_norm(hidden, w["g1"], w["b1"])
        q = irlib.transpose(irlib.reshape(irlib.nn.dense(h, w["wq"]), (-1, heads, dh)),
                            (1, 0, 2))
        k_all = irlib.concatenate(
            [kc, irlib.reshape(irlib.nn.dense(h, w["wk"]), (-1, heads, dh))], axis=0)
        v_all = irlib.concatenate(
            [vc, irlib.reshape(irlib.nn.dense(h, w["wv"]), (-1, heads, dh))], axis=0)
        scores = irlib.nn.batch_matmul(q, irlib.transpose(k_all, (1, 0, 2)))
        scores = irlib.multiply(scores, irlib.const(1.0 / math.sqrt(dh), F32))
        attn = irlib.nn.batch_matmul(irlib.nn.softmax(scores),
                                     irlib.transpose(v_all, (1, 0, 2)), transpose_b=False)
        attn = irlib.reshape(irlib.transpose(attn, (1, 0, 2)), (-1, dim))
        hidden = irlib.add(hidden, irlib.nn.dense(attn, w["wo"]))
        mlp = irlib.nn.dense(_gelu(irlib.nn.dense(
            irlib.nn.layer_norm(hidden, w["g2"], w["b2"]), w["w1"])), w["w2"])
        hidden = irlib.add(hidden, mlp)
        outputs += [k_all, v_all]
    func = irlib.Function(params + caches + weights, irlib.Tuple([hidden] + outputs))
    return irlib.IRModule.from_expr(func)


def _torch_decoder(weights: dict, dim: int, heads: int, layers: int):
    import torch
    tw = {k: torch.from_numpy(v) for k, v in weights.items()}
    dh = dim // heads

    def step(x, caches):
        with torch.no_grad():
            hidden, new = x, []
            for k in range(layers):
                w = {name: tw[f"l{k}_{name}"] for name in
                     ("g1", "b1", "wq", "wk", "wv", "wo", "g2", "b2", "w1", "w2")}
                h = torch.nn.functional.layer_norm(hidden, (dim,), w["g1"], w["b1"])
                q = (h @ w["wq"].T).reshape(-1, heads, dh).transpose(0, 1)
                k_all = torch.cat([caches[2 * k], (h @ w["wk"].T).reshape(-1, heads, dh)])
                v_all = torch.cat([caches[2 * k + 1], (h @ w["wv"].T).reshape(-1, heads, dh)])
                scores = q @ k_all.permute(1, 2, 0) / math.sqrt(dh)
                attn = torch.softmax(scores, -1) @ v_all.transpose(0, 1)
                hidden = hidden + attn.transpose(0, 1).reshape(-1, dim) @ w["wo"].T
                m = torch.nn.functional.layer_norm(hidden, (dim,), w["g2"], w["b2"])
                m = torch.nn.functional.gelu(m @ w["w1"].T) @ w["w2"].T
                hidden = hidden + m
                new += [k_all, v_all]
            return hidden, new
    return step


def _graph_call(gmod, x, caches):
    gmod.set_input("x", x)
    for k, cache in enumerate(caches):
        gmod.set_input(f"{'kv'[k % 2]}_cache{k // 2}", cache)
    gmod.run()
    return gmod.get_output(0).numpy()


def _median_ms(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def _measure(engine: str, args) -> dict:
    """``{size: ms}`` for one engine, measured in this process."""
    dim, heads, layers = args.dim, args.heads, args.layers
    dh = dim // heads
    weights = _weights(dim, layers)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, dim)).astype(F32)
    longest = max(args.sizes) + args.calls + 2
    base = [rng.standard_normal((longest, heads, dh)).astype(F32) for _ in range(2 * layers)]
    result: dict = {}
    if engine == "torch":
        import torch
        torch.set_num_threads(args.threads)
        step = _torch_decoder(weights, dim, heads, layers)
        tx = torch.from_numpy(x)
        for size in args.sizes:
            caches = [torch.from_numpy(b[:size]) for b in base]
            step(tx, caches)
            result[size] = _median_ms(lambda: step(tx, caches), args.calls)
        return result
    if engine.startswith("symbolic"):
        factory = interp.build(build_decoder(dim, heads, layers, size_var("n"), size_var("c")),
                               params=weights)
        gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        for size in args.sizes:
            if engine == "symbolic-new":
                # The cache length cycles through LRU_SIZE + 2 consecutive lengths from
                # `size`, so every call is a binding the runtime has not cached (as in a
                # decode loop) while the work stays that of about the same length.
                lengths = [size + k for k in range(LRU_SIZE + 2)]
                step = [0]

                def rebinding():
                    caches = [b[:lengths[step[0] % len(lengths)]] for b in base]
                    step[0] += 1
                    return _graph_call(gmod, x, caches)
                rebinding()
                result[size] = _median_ms(rebinding, args.calls)
            else:
                fixed = [b[:size] for b in base]
                _graph_call(gmod, x, fixed)
                result[size] = _median_ms(lambda: _graph_call(gmod, x, fixed), args.calls)
        return result
    for size in args.sizes:                          # static: one build per size
        factory = interp.build(build_decoder(dim, heads, layers, 1, size), params=weights)
        gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        fixed = [b[:size] for b in base]
        _graph_call(gmod, x, fixed)
        result[size] = _median_ms(lambda: _graph_call(gmod, x, fixed), args.calls)
    return result


def _check(args) -> int:
    """Build the symbolic decoder, compare it with the static one and torch at one size;
    return the number of op nodes."""
    dim, heads, layers = args.dim, args.heads, args.layers
    weights = _weights(dim, layers)
    rng = np.random.default_rng(2)
    size = args.sizes[0]
    x = rng.standard_normal((1, dim)).astype(F32)
    caches = [rng.standard_normal((size, heads, dim // heads)).astype(F32)
              for _ in range(2 * layers)]
    start = time.perf_counter()
    factory = interp.build(build_decoder(dim, heads, layers, size_var("n"), size_var("c")),
                           params=weights)
    build_s = time.perf_counter() - start
    gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    got = _graph_call(gmod, x, caches)
    static = interp.build(build_decoder(dim, heads, layers, 1, size), params=weights)
    smod = graph_executor.GraphModule(static["default"](interp.cpu(0)))
    np.testing.assert_allclose(got, _graph_call(smod, x, caches), rtol=1e-4, atol=1e-4)
    try:
        import torch
        hidden, _ = _torch_decoder(weights, dim, heads, layers)(
            torch.from_numpy(x), [torch.from_numpy(c) for c in caches])
        np.testing.assert_allclose(hidden.numpy(), got, rtol=1e-3, atol=1e-3)
    except ImportError:
        pass
    print(f"decoder dim={dim} heads={heads} layers={layers}: "
          f"{len(gmod._runtime._node_args)} op nodes, symbolic build {build_s:.2f} s; "
          f"outputs agree with the static build and torch")
    return len(gmod._runtime._node_args)


ENGINES = ("symbolic-new", "symbolic-same", "static", "torch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2,
                        help="each engine runs this many times (own process each time); "
                             "the best median is kept")
    parser.add_argument("--threads", type=int, default=2, help="torch's thread count")
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:                                   # a child: measure and print JSON
        print(json.dumps(_measure(args.engine, args)))
        return
    _check(args)
    engines = [e for e in ENGINES if e != "torch" or importlib.util.find_spec("torch")]
    best: dict = {e: {} for e in engines}
    for _ in range(args.rounds):
        for engine in engines:
            command = [sys.executable, __file__, "--engine", engine] + [
                f"--{key}={value}" for key, value in (("dim", args.dim), ("heads", args.heads),
                                                       ("layers", args.layers),
                                                       ("calls", args.calls),
                                                       ("threads", args.threads))]
            command += ["--sizes"] + [str(s) for s in args.sizes]
            output = subprocess.run(command, check=True, capture_output=True, text=True)
            for size, ms in json.loads(output.stdout.strip().splitlines()[-1]).items():
                best[engine][int(size)] = min(ms, best[engine].get(int(size), float("inf")))
    print(f"{'cache':>6} " + " ".join(f"{e:>13}" for e in engines)
          + f"   (ms per decode call: median of {args.calls}, best of {args.rounds} rounds, "
            f"each engine in its own process)")
    for size in args.sizes:
        print(f"{size:>6} " + " ".join(f"{best[e][size]:13.3f}" for e in engines))


if __name__ == "__main__":
    main()
