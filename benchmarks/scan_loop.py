"""An LSTM written as an ONNX ``Scan``: graph executor vs interpreter vs onnxruntime.

Before interp.graph_growing, the graph executor fell back to the interpreter for the whole
model (the scan output is loop state that grows). The script times one inference of each
engine, back to back in one process, on one thread (``IRLIB_NUM_THREADS``,
``NUMBA_NUM_THREADS`` and onnxruntime's intra-op threads at 1), and prints min and median
wall and CPU (``time.process_time``) milliseconds and the ratios to onnxruntime::

    python benchmarks/scan_loop.py --steps 16 --hidden 64 --runs 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("IRLIB_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def lstm_scan(steps: int, features: int, hidden: int, seed: int = 0):
    """The ONNX model: states h, c (1, hidden); gates x_t W + h R + b split into i, f, g, o;
    scan output h' stacked over ``steps``; inputs h0, c0, x (steps, 1, features)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    state = [1, hidden]

    def info(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    nodes = [helper.make_node("MatMul", ["x_t", "W"], ["xw"]),
             helper.make_node("MatMul", ["h_in", "R"], ["hr"]),
             helper.make_node("Add", ["xw", "hr"], ["pre"]),
             helper.make_node("Add", ["pre", "B"], ["gates"]),
             helper.make_node("Split", ["gates"], ["gi", "gf", "gg", "go"], axis=1),
             helper.make_node("Sigmoid", ["gi"], ["i"]),
             helper.make_node("Sigmoid", ["gf"], ["f"]),
             helper.make_node("Tanh", ["gg"], ["g"]),
             helper.make_node("Sigmoid", ["go"], ["o"]),
             helper.make_node("Mul", ["f", "c_in"], ["fc"]),
             helper.make_node("Mul", ["i", "g"], ["ig"]),
             helper.make_node("Add", ["fc", "ig"], ["c_out"]),
             helper.make_node("Tanh", ["c_out"], ["tc"]),
             helper.make_node("Mul", ["o", "tc"], ["h_out"]),
             helper.make_node("Identity", ["h_out"], ["y_t"])]
    body = helper.make_graph(nodes, "cell",
                             [info("h_in", state), info("c_in", state),
                              info("x_t", [1, features])],
                             [info("h_out", state), info("c_out", state), info("y_t", state)])
    weights = [numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32),
                                       name)
               for name, shape in (("W", (features, 4 * hidden)),
                                   ("R", (hidden, 4 * hidden)), ("B", (4 * hidden,)))]
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "c0", "x"], ["h", "c", "ys"], body=body,
                          num_scan_inputs=1)],
        "lstm_scan", [info("h0", state), info("c0", state), info("x", [steps, 1, features])],
        [info("h", state), info("c", state), info("ys", [steps] + state)],
        initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"h0": np.zeros(state, np.float32), "c0": np.zeros(state, np.float32),
             "x": rng.standard_normal((steps, 1, features)).astype(np.float32)}
    return model, feeds


def _times(run, runs: int) -> tuple:
    run()
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def main(argv=None) -> None:
    """Time the three engines (see the module docstring) and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    import onnxruntime
    import irlib
    import interp
    from irlib.frontend.onnx import from_onnx
    model, feeds = lstm_scan(args.steps, args.features, args.hidden)
    mod, params = from_onnx(model)
    order = [feeds[name] for name in ("h0", "c0", "x")]
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    engines = {"onnxruntime": lambda: session.run(None, feeds)}
    with irlib.transform.PassContext(opt_level=3):
        typed = irlib.transform.InferType()(mod)
        graph = interp.create_executor("graph", mod=typed, device=interp.cpu(0),
                                       target="cpu", params=params)
        graph_fn = graph.evaluate()
        debug_fn = interp.create_executor("debug", mod=typed, device=interp.cpu(0),
                                          target="cpu", params=params).evaluate()
    if graph.fallback is not None:
        print("graph executor fell back:", graph.fallback)
    engines["graph executor"] = lambda: graph_fn(*order)
    engines["interpreter"] = lambda: debug_fn(*order)
    want = session.run(None, feeds)
    for name in ("graph executor", "interpreter"):
        got = engines[name]()
        for value, ref in zip(got, want):
            np.testing.assert_allclose(np.asarray(value.numpy()), ref, rtol=1e-4, atol=1e-5)
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[:3]
    print(f"LSTM as Scan: {args.steps} steps, {args.features} features, hidden {args.hidden}; "
          f"one thread; {args.runs} runs; load average {' '.join(load)}")
    results = {name: _times(run, args.runs) for name, run in engines.items()}
    base_wall = statistics.median(results["onnxruntime"][0])
    base_cpu = statistics.median(results["onnxruntime"][1])
    print(f"{'engine':<16}{'wall min':>10}{'wall med':>10}{'cpu min':>10}{'cpu med':>10}"
          f"{'wall/ort':>10}{'cpu/ort':>10}   (ms)")
    for name, (walls, cpus) in results.items():
        print(f"{name:<16}{min(walls) * 1e3:>10.3f}{statistics.median(walls) * 1e3:>10.3f}"
              f"{min(cpus) * 1e3:>10.3f}{statistics.median(cpus) * 1e3:>10.3f}"
              f"{statistics.median(walls) / base_wall:>10.2f}"
              f"{statistics.median(cpus) / base_cpu:>10.2f}")


if __name__ == "__main__":
    main()
