"""Decode speed of the nn builder's GPT-2-style decoder (zoo.gpt2) next to PyTorch eager.

Run: ``python benchmarks/nn_decode.py [--hidden 256] [--heads 8] [--layers 4] [--vocab 2048]
[--prompt 16] [--steps 64] [--engines irlib,torch]``.

Both engines get the same weights (a seeded PyTorch model's state dict, saved once) and the
same prompt; each runs in its own process (thread pools of two runtimes in one process slow
each other down). Each process runs the prompt (prefill), then ``--steps`` greedy decode steps
with its KV cache, timing every step; the table shows the median decode step, tokens/s, the
prefill time and whether the generated tokens agree. irlib runs the jitted model
(``Module.jit``, graph executor, numba kernels, built once with symbolic lengths); PyTorch
runs eager under ``torch.no_grad()`` with ``torch.cat`` caches.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "frontend", "nn"))


def _config(args):
    from zoo.gpt2 import GPT2Config
    return GPT2Config(vocab_size=args.vocab, max_positions=args.prompt + args.steps + 8,
                      hidden_size=args.hidden, num_heads=args.heads, num_layers=args.layers)


def _decode_loop(forward, prompt, steps):
    """Prefill + ``steps`` greedy decode steps; per-step seconds and the tokens."""
    from zoo.gpt2 import causal_mask
    ids = np.array([prompt], "int32")
    past, tokens, times = 0, [], []
    for step in range(steps + 1):
        seq_len = ids.shape[1]
        positions = np.arange(past, past + seq_len, dtype="int32")[None]
        mask = causal_mask(seq_len, past)
        start = time.perf_counter()
        logits = forward(ids, positions, mask)
        times.append(time.perf_counter() - start)
        past += seq_len
        tokens.append(int(np.argmax(np.asarray(logits)[0, -1])))
        ids = np.array([[tokens[-1]]], "int32")
    return times, tokens


def _run_irlib(args, weights_path):
    from zoo.gpt2 import GPT2LMHeadModel
    model = GPT2LMHeadModel(_config(args))
    with np.load(weights_path) as weights:
        model.load_state_dict({key: weights[key] for key in weights.files})
    start = time.perf_counter()
    runner = model.jit(model.get_default_spec(), device="cpu", out_format="numpy")
    build = time.perf_counter() - start
    prompt = list(range(1, args.prompt + 1))
    _decode_loop(runner.forward, prompt, 4)          # warm-up: compiles every kernel
    runner.reset_effects()
    times, tokens = _decode_loop(runner.forward, prompt, args.steps)
    return {"build_s": build, "times": times, "tokens": tokens}


def _run_torch(args, weights_path):
    import torch
    from gpt2_torch import TorchGPT2
    model = TorchGPT2(_config(args)).eval()
    with np.load(weights_path) as weights:
        model.load_state_dict({key: torch.from_numpy(weights[key]) for key in weights.files})
    prompt = list(range(1, args.prompt + 1))

    def forward_with(caches):
        def forward(ids, positions, mask):
            with torch.no_grad():
                return model(torch.from_numpy(ids).long(), torch.from_numpy(positions).long(),
                             torch.from_numpy(mask), caches).numpy()
        return forward

    _decode_loop(forward_with([{} for _ in model.h]), prompt, 4)
    times, tokens = _decode_loop(forward_with([{} for _ in model.h]), prompt, args.steps)
    return {"build_s": 0.0, "times": times, "tokens": tokens}


def _child(args):
    runner = {"irlib": _run_irlib, "torch": _run_torch}[args.child]
    print(json.dumps(runner(args, args.weights)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--engines", default="irlib,torch")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return

    import torch
    from gpt2_torch import TorchGPT2, randomize
    reference = randomize(TorchGPT2(_config(args)), seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        weights_path = os.path.join(tmp, "weights.npz")
        np.savez(weights_path, **{k: v.numpy() for k, v in reference.state_dict().items()})
        results = {}
        for engine in args.engines.split(","):
            command = [sys.executable, os.path.abspath(__file__), "--child", engine,
                       "--weights", weights_path] + [f"--{k}={getattr(args, k)}" for k in
                                                      ("hidden", "heads", "layers", "vocab",
                                                       "prompt", "steps")]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"{engine} failed:\n{done.stderr[-3000:]}")
            results[engine] = json.loads(done.stdout.strip().splitlines()[-1])
    del torch
    print(f"GPT-2-style decoder: hidden {args.hidden}, {args.heads} heads, {args.layers} layers, "
          f"vocab {args.vocab}; prompt {args.prompt}, {args.steps} decode steps, 1 process each")
    print(f"{'engine':<8} {'decode ms (median)':>19} {'tokens/s':>9} {'prefill ms':>11} "
          f"{'build s':>8}")
    first = None
    for engine, result in results.items():
        decode = float(np.median(result["times"][1:])) * 1e3
        print(f"{engine:<8} {decode:>19.3f} {1e3 / decode:>9.1f} "
              f"{result['times'][0] * 1e3:>11.2f} {result['build_s']:>8.2f}")
        first = first or result["tokens"]
        if result["tokens"] != first:
            print(f"  note: {engine}'s tokens differ from {list(results)[0]}'s")


if __name__ == "__main__":
    main()
