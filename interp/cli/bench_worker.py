"""One engine's timing run for ``irlib bench`` (run as ``python -m interp.cli.bench_worker``).

Each engine runs in a process of its own so that one's threads, caches and allocator do not
disturb another's numbers. The worker loads the inputs (an ``.npz``), runs the model once to
warm up and ``--repeat`` timed times, saves the first output as ``.npy`` (for the parent's
comparison) and prints one JSON line: ``{"engine", "warmup_ms", "times_ms"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from irlib.errors import IRError


def _irlib_runner(args, inputs):
    """A callable running the model on irlib's graph executor (weights bound at build)."""
    import irlib
    import interp
    from .common import load_model, typed
    mod, params = load_model(args.model, args.batch)
    with irlib.transform.PassContext(opt_level=3):
        mod = typed(mod)
        func = interp.create_executor("graph", mod=mod, device=interp.cpu(0), target="cpu",
                                      params=params).evaluate()
    return lambda: func(**inputs)


def _onnxruntime_runner(args, inputs):
    """A callable running the exported ONNX model on onnxruntime's CPU provider."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(args.onnx, options,
                                           providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feed = {name: inputs[name] for name in names}
    return lambda: session.run(None, feed)


def _torch_runner(args, inputs):
    """A callable running the model as PyTorch ops (:mod:`interp.cli.torch_engine`)."""
    import torch
    from .torch_engine import torch_function
    from .common import load_model, typed
    torch.set_num_threads(args.threads)
    mod, params = load_model(args.model, args.batch)
    func = torch_function(typed(mod)["main"], params)
    tensors = {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in inputs.items()}

    def call():
        with torch.inference_mode():
            return func(**tensors)
    return call


RUNNERS = {"irlib": _irlib_runner, "onnxruntime": _onnxruntime_runner, "torch": _torch_runner}


def _first_array(output) -> np.ndarray:
    """The first tensor of an engine's output, as numpy."""
    while isinstance(output, (list, tuple)) or hasattr(output, "fields"):
        output = output[0]
    if hasattr(output, "detach"):
        output = output.detach().numpy()
    return np.asarray(output)


def main(argv=None) -> int:
    """Time one engine; print its JSON line."""
    parser = argparse.ArgumentParser(prog="python -m interp.cli.bench_worker")
    parser.add_argument("engine", choices=sorted(RUNNERS))
    parser.add_argument("model")
    parser.add_argument("--inputs", required=True, help=".npz of the input arrays")
    parser.add_argument("--output", required=True, help=".npy to save the first output in")
    parser.add_argument("--onnx", default=None, help="the exported model (onnxruntime)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    with np.load(args.inputs) as data:
        inputs = {name: data[name] for name in data.files}
    try:
        call = RUNNERS[args.engine](args, inputs)
        started = time.perf_counter()
        output = call()
        warm_up = time.perf_counter() - started
    except IRError as error:       # one line for the parent's message (no traceback)
        print(" ".join(str(error).split()), file=sys.stderr)
        return 1
    times = []
    for _ in range(max(args.repeat, 1)):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    np.save(args.output, _first_array(output))
    print(json.dumps({"engine": args.engine, "warmup_ms": 1000 * warm_up,
                      "times_ms": [1000 * t for t in times]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
