"""Depthwise-convolution and pooling kernels on the zoo's layer shapes, next to a memory copy.

Run: ``python benchmarks/dw_pool_kernels.py [--threads 1] [--repeat 30] [--before DIR]``,
or ``python benchmarks/dw_pool_kernels.py --graph squeezenet1.1,mobilenet [--repeat 200]``

Each row is one distinct layer of the zoo models at batch 1, float32, channels-last (as the
graph executor runs them): MobileNet's depthwise 3x3 convolutions with their fused bias +
ReLU epilogue (:func:`jitkernels.cpu.depthwise.depthwise_nhwc`), and the max/avg pools of
SqueezeNet 1.1, ResNet, DenseNet-121 and Inception v3
(:func:`jitkernels.cpu.pool.pool_ndhwc`). The ``copy`` column times ``np.copyto`` of as
many elements as the layer's input and output together: a layer within ~2x of it runs at
memory speed. Arrays start at 64-byte boundaries, as the graph executor's buffers do.

Times are microseconds, wall (``time.perf_counter``) and CPU (``time.process_time``, all
threads of the process), min and median of ``--repeat`` calls after warm-up calls (which
compile or load the kernels). ``--threads`` sets numba's threads
(``numba.set_num_threads``). ``--before DIR`` also times the kernels of another version,
``DIR/old_depthwise.py`` and ``DIR/old_pool.py`` (copies of the two modules with absolute
imports), in the same run, alternating call by call with the current ones.

``--graph MODELS`` times the same kinds of nodes where it matters, inside the zoo models'
graphs (batch 1, ``opt_level=3``, the graph executor's own buffers and call order): every
node that pools, concatenates or runs a depthwise convolution, median CPU µs per node over
``--repeat`` passes of the whole graph (a node's input was just written by its producer,
its output buffer may be cold: these times are what a model pays, and run 1.5-3x the
kernel-alone ones). Set ``NUMBA_NUM_THREADS=1`` (and the BLAS thread variables) before
starting Python for one-thread figures.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402

from jitkernels.cpu import depthwise, pool  # noqa: E402
from jitkernels.cpu.epilogue import ADD, RELU, Epilogue  # noqa: E402

# (model, H, W, C, stride): MobileNet's depthwise 3x3 layers (padding 1), input sizes.
MOBILENET = [
    ("mobilenet", 112, 112, 32, 1), ("mobilenet", 112, 112, 64, 2),
    ("mobilenet", 56, 56, 128, 1), ("mobilenet", 56, 56, 128, 2),
    ("mobilenet", 28, 28, 256, 1), ("mobilenet", 28, 28, 256, 2),
    ("mobilenet x5", 14, 14, 512, 1), ("mobilenet", 14, 14, 512, 2),
    ("mobilenet", 7, 7, 1024, 1),
]

# (model, H, W, C, kernel, stride, pad, ceil_out, is_max, count_include_pad): the pools.
POOLS = [
    ("squeezenet", 112, 112, 64, 3, 2, 0, 55, True, False),
    ("squeezenet", 55, 55, 128, 3, 2, 0, 27, True, False),
    ("squeezenet", 27, 27, 256, 3, 2, 0, 13, True, False),
    ("resnet/densenet", 112, 112, 64, 3, 2, 1, 56, True, False),
    ("densenet avg", 56, 56, 128, 2, 2, 0, 28, False, False),
    ("densenet avg", 28, 28, 256, 2, 2, 0, 14, False, False),
    ("inception", 147, 147, 64, 3, 2, 0, 73, True, False),
    ("inception", 71, 71, 192, 3, 2, 0, 35, True, False),
    ("inception avg", 35, 35, 256, 3, 1, 1, 35, False, True),
    ("inception avg", 17, 17, 768, 3, 1, 1, 17, False, True),
    ("inception", 17, 17, 768, 3, 2, 0, 8, True, False),
    ("inception avg", 8, 8, 1280, 3, 1, 1, 8, False, True),
]


def _load(directory: str, name: str):
    """The module ``directory/name.py`` (imported by name: numba's cache needs one)."""
    if directory not in sys.path:
        sys.path.insert(0, directory)
    return importlib.import_module(name)


def _time(functions, repeat: int, warmup: int = 3):
    """Per function: (wall min, wall median, cpu min, cpu median) in us, calls interleaved
    (CPU time is the whole process's: with several numba threads, a worker's CPU time is
    only counted once the OS accounts it, so short parallel calls under-report)."""
    for function in functions:
        for _ in range(warmup):
            function()
    walls = [[] for _ in functions]
    cpus = [[] for _ in functions]
    for _ in range(repeat):
        for index, function in enumerate(functions):
            c0, w0 = time.process_time(), time.perf_counter()
            function()
            w1, c1 = time.perf_counter(), time.process_time()
            walls[index].append((w1 - w0) * 1e6)
            cpus[index].append((c1 - c0) * 1e6)
    return [(min(w), statistics.median(w), min(c), statistics.median(c))
            for w, c in zip(walls, cpus)]


def aligned(shape, dtype=np.float32, fill=None) -> np.ndarray:
    """An array starting at a 64-byte boundary, as the graph executor's buffers do (numpy's
    own large arrays start 16 bytes past one, splitting every 64-byte vector in two lines).

    Args:
        shape: the shape; dtype: the dtype; fill: values to copy in (else uninitialised).
    """
    count = int(np.prod(shape))
    raw = np.empty(count + 64, dtype)
    skip = (-raw.ctypes.data) % 64 // raw.itemsize
    array = raw[skip:skip + count].reshape(shape)
    if fill is not None:
        array[...] = fill
    return array


def _copy(elements: int, dtype):
    """A function copying ``elements`` values (the memory-speed yardstick)."""
    src = aligned(elements, dtype, np.random.default_rng(1).standard_normal(elements))
    dst = aligned(elements, dtype)
    return lambda: np.copyto(dst, src)


def depthwise_rows(repeat: int, before=None):
    """Rows of (label, [timings of current, (before), copy]) for the MobileNet layers."""
    rng = np.random.default_rng(0)
    rows = []
    for model, h, w, c, stride in MOBILENET:
        x = aligned((1, h, w, c), np.float32, rng.standard_normal((1, h, w, c)))
        weight = rng.standard_normal((3, 3, c)).astype(np.float32)
        oh, ow = (h - 1) // stride + 1, (w - 1) // stride + 1
        out = aligned((1, oh, ow, c), np.float32)
        steps = Epilogue(np.array([ADD, RELU], np.int64),
                         np.stack([rng.standard_normal(c), np.zeros(c)]).astype(np.float32),
                         np.zeros((1, 1, 1, 1), np.float32))
        args = (x, weight, out, (stride, stride), (1, 1), (1, 1), steps)
        functions = [lambda: depthwise.depthwise_nhwc(*args)]
        if before is not None:
            functions.append(lambda: before.depthwise_nhwc(*args))
        functions.append(_copy(x.size + out.size, np.float32))
        label = f"{model} dw3x3/{stride} {h}x{w}x{c}"
        rows.append((label, _time(functions, repeat)))
    return rows


def pool_rows(repeat: int, before=None):
    """Rows of (label, [timings of current, (before), copy]) for the pools."""
    rng = np.random.default_rng(0)
    rows = []
    for model, h, w, c, k, s, p, o, is_max, include in POOLS:
        x = aligned((1, 1, h, w, c), np.float32, rng.standard_normal((1, 1, h, w, c)))
        out = aligned((1, 1, o, o, c), np.float32)
        after = max(0, (o - 1) * s + k - h - p)
        args = (x, out, (1, k, k), (1, s, s), (1, 1, 1), (0, p, p), (0, after, after),
                is_max, include)
        functions = [lambda: pool.pool_ndhwc(*args)]
        if before is not None:
            functions.append(lambda: before.pool_ndhwc(*args))
        functions.append(_copy(x.size + out.size, np.float32))
        kind = "max" if is_max else "avg"
        label = f"{model} {kind}{k}x{k}/{s} {h}x{w}x{c}"
        rows.append((label, _time(functions, repeat)))
    return rows


def _graph_calls(model: str):
    """``(calls, labels)``: the ``(fn, args)`` of every executed node of zoo ``model``'s
    graph and, for the nodes to time, ``index -> label``."""
    import irlib
    import interp
    from interp.cli.common import load_model, make_inputs
    from interp.debug_executor import GraphModuleDebug
    mod, params = load_model(model, 1, {})
    with irlib.transform.PassContext(opt_level=3):
        mod = irlib.transform.InferType()(mod)
        inputs = make_inputs(mod["main"], params, {}, 0)
        run = interp.create_executor("graph", mod=mod, device=interp.cpu(0), target="cpu",
                                     params=params).evaluate()
    for _ in range(3):
        run(**inputs)
    debug = GraphModuleDebug(run.module)
    calls = debug._calls()
    labels = {}
    for index, nid in enumerate(debug._op_nids):
        ops = [name.split(".")[-1] for name in debug._ops[nid]]
        shapes = [a.shape for a in calls[index][1] if hasattr(a, "shape")]
        depthwise_layer = "conv2d" in ops and any(
            len(s) == 4 and s[2] == 1 and s[3] > 1 for s in shapes[1:2])
        if depthwise_layer or any("pool" in o or o == "concatenate" for o in ops):
            inputs_text = " ".join("x".join(map(str, s)) for s in shapes[:-1])
            labels[index] = f"{','.join(ops)} {inputs_text}"
    return calls, labels


def graph_rows(model: str, repeat: int):
    """Rows of (label, median CPU us) for the timed nodes of ``model``'s graph, plus the
    whole pass's median (ms)."""
    calls, labels = _graph_calls(model)
    times = {index: [] for index in labels}
    passes = []
    clock = time.process_time
    for _ in range(repeat):
        begin = clock()
        for index, (fn, args) in enumerate(calls):
            start = clock()
            fn(*args)
            if index in times:
                times[index].append((clock() - start) * 1e6)
        passes.append((clock() - begin) * 1e3)
    rows = [(labels[index], statistics.median(times[index])) for index in labels]
    return rows, statistics.median(passes)


def _print_graph(model: str, repeat: int) -> None:
    rows, whole = graph_rows(model, repeat)
    print(f"{model}: median CPU us per node over {repeat} passes (whole pass {whole:.3f} ms)")
    for label, value in rows:
        print(f"  {label[:72]:72}{value:9.1f}")
    print(f"  {'sum of these nodes':72}{sum(v for _, v in rows):9.1f}")


def _print(rows, names) -> None:
    header = "".join(f"{name + ' wall':>17}{name + ' cpu':>17}" for name in names)
    print(f"{'layer':42}{header}   (us: min/median)")
    for label, timings in rows:
        cells = "".join(f"{t[0]:8.1f}/{t[1]:<8.1f}{t[2]:8.1f}/{t[3]:<8.1f}" for t in timings)
        ratio = timings[0][1] / timings[-1][1]
        print(f"{label:42}{cells}  x{ratio:.2f} of copy")


def main(argv=None) -> int:
    """Print the depthwise and pool tables; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="numba threads")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--before", default=None, help="folder with old_depthwise.py, "
                        "old_pool.py to time in the same run")
    parser.add_argument("--only", choices=("depthwise", "pool"), default=None)
    parser.add_argument("--graph", default=None, help="comma-separated zoo models: time "
                        "their pool/concatenate/depthwise nodes inside the graph instead")
    args = parser.parse_args(argv)
    if args.threads:
        numba.set_num_threads(args.threads)
    if args.graph:
        for model in args.graph.split(","):
            _print_graph(model, args.repeat)
        return 0
    names = ["now"] + (["before"] if args.before else []) + ["copy"]
    old_dw = _load(args.before, "old_depthwise") if args.before else None
    old_pool = _load(args.before, "old_pool") if args.before else None
    with open("/proc/loadavg") if Path("/proc/loadavg").exists() else open(__file__) as f:
        print("load average:", f.readline().split()[:3], "numba threads:",
              numba.get_num_threads())
    if args.only in (None, "depthwise"):
        _print(depthwise_rows(args.repeat, old_dw), names)
    if args.only in (None, "pool"):
        _print(pool_rows(args.repeat, old_pool), names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
