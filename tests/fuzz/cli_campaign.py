"""The command-line fuzz campaign (issue #19 item 5): random argument lists for ``irlib``.

Every argument list is drawn from pieces a careless user would type: each subcommand (run,
show, bench, convert, check, models, ops) or none, unknown flags, flags without their value,
``--batch 0/-1/abc/10**9``, ``--input`` with a wrong shape, dtype or a garbage file, missing,
empty, garbage and truncated ``.onnx``/``.rly``/``.params``/``.npy`` files, output paths with
unknown extensions or in missing folders. The oracle, for each invocation:

* the exit status is 0, 1 (a problem with the input) or 2 (a usage error);
* no ``Traceback`` on stderr, and no error that is not an ``IRError`` (or an ``OSError``
  naming the user's file): the CLI marks those with "rerun with --debug";
* for status 1 or 2 exactly one stderr line (``irlib check``
  prints one ``file:line:col: message`` line per problem, so it may print several, each
  naming a file it was given);
* it ends within the per-invocation time limit.

The invocations of a batch run in one worker subprocess (``python -c``), each through
``interp.cli.main(argv)`` with stdout/stderr captured and ``SystemExit`` caught, so the ~0.5 s
of Python start-up is paid once per batch; an exception escaping ``main`` is reported as the
traceback the console script would print. ``real_every`` also runs every n-th argument list
as its own ``python -m interp`` process (the real entry point). Tensors are limited to
``IRLIB_MAX_TENSOR_BYTES`` (64 MiB) so a huge ``--batch`` cannot take the machine's memory.
"""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

from campaigns import Report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_TENSOR_BYTES = 2 ** 26
CASE_TIMEOUT_S = 120

GOOD_RLY = ('#[version = "0.0.5"]\n'
            'def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {\n'
            '  %0 = nn.dense(%x, %w);\n'
            '  nn.softmax(nn.relu(%0))\n'
            '}\n')
TYPE_ERROR_RLY = ('#[version = "0.0.5"]\n'
                  'def @main(%x: Tensor[(1, 4), float32], %y: Tensor[(3, 5), float32]) {\n'
                  '  add(%x, %y)\n'
                  '}\n')
PARSE_ERROR_RLY = '#[version = "0.0.5"]\ndef @main(%x) { add(%x, ) }\n'


def _onnx_bytes(dynamic: bool) -> bytes:
    """A tiny ONNX model (``y = relu(x + w)``; batch ``N`` when ``dynamic``) as bytes."""
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.arange(3, dtype="float32"), "w")
    batch = "N" if dynamic else 2
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def make_fixtures(folder: str) -> dict:
    """Write the campaign's files into ``folder``; ``{kind: [paths]}`` for the argument
    pools (``models``, ``params``, ``npy``, ``outputs``)."""
    from interp.params import save_param_dict

    def write(name, data):
        path = os.path.join(folder, name)
        with open(path, "wb") as handle:
            handle.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        return path

    rng = np.random.default_rng(0)
    garbage = bytes(rng.integers(0, 256, 300, dtype="uint8"))
    onnx_static, onnx_dynamic = _onnx_bytes(False), _onnx_bytes(True)
    params = save_param_dict({"w": rng.standard_normal((4, 3)).astype("float32")})
    wrong_params = save_param_dict({"w": np.zeros((2, 2), "int64")})
    models = [
        write("good.rly", GOOD_RLY), write("type_error.rly", TYPE_ERROR_RLY),
        write("parse_error.rly", PARSE_ERROR_RLY), write("empty.rly", ""),
        write("garbage.rly", garbage), write("latin1.rly", GOOD_RLY.encode() + b"\xe9\xff"),
        write("truncated.rly", GOOD_RLY[:70]),
        write("good.onnx", onnx_static), write("dynamic.onnx", onnx_dynamic),
        write("truncated.onnx", onnx_dynamic[:len(onnx_dynamic) // 2]),
        write("garbage.onnx", garbage), write("empty.onnx", b""),
        os.path.join(folder, "missing.onnx"), os.path.join(folder, "missing.rly"),
        folder, folder + os.sep + "sub.rly", "mlp", "nosuchmodel", "model.txt", "",
    ]
    os.makedirs(os.path.join(folder, "sub.rly"), exist_ok=True)
    params_files = [write("good.params", params), write("wrong.params", wrong_params),
                    write("garbage.params", garbage), write("empty.params", b""),
                    write("truncated.params", params[:len(params) // 2]),
                    os.path.join(folder, "missing.params"), write("text.params", GOOD_RLY)]
    arrays = {"x23": np.ones((2, 3), "float32"), "x33": np.ones((3, 3), "float32"),
              "xint": np.ones((2, 3), "int64"), "x0d": np.array(1.0, "float32"),
              "xbig": np.ones((64, 3), "float32"), "xempty": np.ones((0, 3), "float32")}
    npy = []
    for name, array in arrays.items():
        path = os.path.join(folder, f"{name}.npy")
        np.save(path, array)
        npy.append(path)
    objects = os.path.join(folder, "object.npy")
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    npy += [objects, write("garbage.npy", garbage), os.path.join(folder, "missing.npy"),
            write("truncated.npy", open(npy[0], "rb").read()[:60])]
    outputs = [os.path.join(folder, name) for name in
               ("out.rly", "out.onnx", "out.params", "out.svg", "out.png", "out.html",
                "out.dot", "out.txt", "out.xyz", "out", "nodir/out.rly", "nodir/out.svg")]
    outputs += [folder, "/dev/full"]
    return {"models": models, "params": params_files, "npy": npy, "outputs": outputs}


_COMMANDS = ("run", "show", "bench", "convert", "check", "models", "ops")
#: how often each command is drawn (the ones that read files most)
_COMMAND_WEIGHTS = (6, 4, 2, 4, 3, 1, 1)
_INTS = ["0", "-1", "1", "2", "64", "-7", "10000000000", "2", "1", "abc", "", "3.5"]
_UNKNOWN = ["--nope", "-z", "--batch=", "--", "-", "---", "--input", "--debugx", "-h=1",
            "--opt-level=9", "--Batch", "é", "\x00", "--vs=bogus", "-o"]


def random_argv(rng: random.Random, pools: dict) -> list:
    """One random argument list for ``irlib`` drawn from ``pools``
    (:func:`make_fixtures`)."""
    def pick(kind):
        return rng.choice(pools[kind])

    def int_value():
        return rng.choice(_INTS + ["1", "1", "2"])

    def input_item():
        name = rng.choice(["x", "w", "y", "", "x=x", "é"])
        form = rng.randrange(5)
        if form == 0:
            return name                                  # no '='
        if form == 1:
            return f"{name}="
        return f"{name}={pick('npy')}"

    def model():
        # a tiny good model half the time, so that flags are exercised past loading
        if rng.random() < 0.5:
            return rng.choice([p for p in pools["models"]
                               if p.endswith(("good.rly", "good.onnx", "dynamic.onnx"))])
        return pick("models")

    argv = []
    if rng.random() < 0.05:
        argv.append(rng.choice(_UNKNOWN))
    command = rng.choices(_COMMANDS + ("", "nosuchcommand"), _COMMAND_WEIGHTS + (1, 1))[0]
    if command:
        argv.append(command)
    # (run without a model builds resnet18: too slow to draw here)
    if command == "run" or (command in ("show", "bench", "convert") and rng.random() < 0.93):
        argv.append(model())
    if command == "convert":
        argv += [pick("outputs") for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    if command == "check":
        argv += [rng.choice(pools["models"] + pools["params"])
                 for _ in range(rng.choice([0, 1, 1, 2]))]
    flags = {
        "run": ["--batch", "--target", "--input", "--params", "--opt-level", "--repeat",
                "--seed", "--np", "--profile"],
        "show": ["-o", "--output", "--fused", "--opt-level", "--params", "--batch"],
        "bench": ["--vs", "--batch", "--threads", "--repeat", "--seed", "--plot"],
        "convert": ["--params", "--batch"],
        "ops": ["--markdown"],
    }.get(command, [])
    for _ in range(rng.choice([0, 1, 2, 2, 3, 4])):
        if not flags or rng.random() < 0.06:
            argv.append(rng.choice(_UNKNOWN))
            continue
        flag = rng.choice(flags)
        if flag in ("--profile", "--fused", "--markdown"):
            argv.append(flag)
            continue
        argv.append(flag)
        if rng.random() < 0.08:
            continue                                     # the value is missing
        if flag in ("--batch", "--opt-level", "--seed", "--threads"):
            argv.append(int_value())
        elif flag == "--repeat":
            argv.append(rng.choice(["0", "-1", "1", "abc", "1", "2"]))
        elif flag == "--np":
            argv.append(rng.choice(["0", "-1", "abc", "1"]))
        elif flag == "--target":
            argv.append(rng.choice(["cpu", "python", "python", "cuda", "gpu", ""]))
        elif flag == "--input":
            argv.append(input_item())
        elif flag == "--params":
            argv.append(pick("params"))
        elif flag == "--vs":
            argv.append(rng.choice(["onnxruntime", "torch", "tvm", ""]))
        else:                                            # -o/--output/--plot
            argv.append(pick("outputs"))
    if command == "bench" and "--repeat" not in argv and rng.random() < 0.9:
        argv += ["--repeat", "1"]                        # a bench that works stays short
    if rng.random() < 0.03:
        argv.insert(rng.randrange(len(argv) + 1), rng.choice(_UNKNOWN))
    return argv


def judge(argv: list, code, stderr: str) -> str | None:
    """The failure described by an invocation's outcome, or None when it is acceptable."""
    if code is None:
        return "no exit status"
    if code not in (0, 1, 2):
        return f"exit status {code}"
    if "Traceback" in stderr:
        return f"traceback: {stderr.strip().splitlines()[-1][:200]}"
    if "rerun with --debug" in stderr:
        return f"not an irlib error: {stderr.strip()[:200]}"
    if code == 0:
        return None
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return f"exit status {code} without a message on stderr"
    if "check" in argv and len(lines) > 1 and code == 1:
        given = [a for a in argv[argv.index("check") + 1:]]
        stray = [line for line in lines if not line.startswith("irlib check:")
                 and not any(line.startswith(path) for path in given if path)]
        return f"check printed a line naming no file: {stray[0][:200]}" if stray else None
    if len(lines) != 1:
        return f"{len(lines)} stderr lines for exit status {code}: {lines[:3]}"
    return None


_WORKER = r"""
import contextlib, io, os, pickle, signal, sys, time, traceback
sys.setrecursionlimit(20000)
from interp.cli import main

class _Hang(Exception):
    pass

def _alarm(signum, frame):
    raise _Hang()

signal.signal(signal.SIGALRM, _alarm)
cases, limit = pickle.load(sys.stdin.buffer)
results = []
for argv in cases:
    out, err = io.StringIO(), io.StringIO()
    code = None
    started = time.perf_counter()
    signal.alarm(limit)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
                if not isinstance(stop.code, (int, type(None))):
                    print(stop.code, file=sys.stderr)
    except _Hang:
        code = "hang"
    except BaseException:
        err.write(traceback.format_exc())
        code = 1
    finally:
        signal.alarm(0)
    results.append((code, err.getvalue()[-4000:], time.perf_counter() - started))
    print(len(results), flush=True, file=sys.__stderr__)
pickle.dump(results, sys.stdout.buffer)
"""


def _environment() -> dict:
    env = dict(os.environ, IRLIB_MAX_TENSOR_BYTES=str(MAX_TENSOR_BYTES),
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _record(report: Report, argv, code, stderr) -> None:
    report.cases += 1
    failure = "hang: over the time limit" if code == "hang" else judge(argv, code, stderr)
    if failure is not None:
        report.failures.append((argv, failure))
    elif code == 0:
        report.ok += 1
    else:
        report.irlib_errors += 1


def run_real(argv: list, folder: str, env: dict, timeout: float = CASE_TIMEOUT_S):
    """``python -m interp ARGV`` in ``folder``: ``(exit status, stderr)`` (``"hang"`` past
    ``timeout`` seconds); None for an argument list no process can get (a NUL byte)."""
    if any("\x00" in arg for arg in argv):
        return None
    try:
        proc = subprocess.run([sys.executable, "-m", "interp", *argv], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=timeout,
                              errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", ""
    return proc.returncode, proc.stderr


def cli_campaign(count: int, seed: int = 0, batch: int = 200, real_every: int = 0,
                 timeout: float = CASE_TIMEOUT_S) -> Report:
    """Run ``count`` random ``irlib`` argument lists (``batch`` per worker subprocess;
    every ``real_every``-th also as its own process when ``real_every`` > 0).

    Returns:
        A :class:`~campaigns.Report`: ``ok`` counts exit status 0, ``irlib_errors`` the
        one-line errors (status 1 or 2), ``failures`` lists ``(argv, what was wrong)``.
    """
    rng = random.Random(seed)
    report = Report("cli")
    report.slowest = (0.0, [])     # (seconds, argv) of the slowest in-process invocation
    start = time.perf_counter()
    env = _environment()
    with tempfile.TemporaryDirectory(prefix="irlib-cli-fuzz-") as folder:
        pools = make_fixtures(folder)
        done = 0
        while done < count:
            cases = [random_argv(rng, pools) for _ in range(min(batch, count - done))]
            done += len(cases)
            try:
                proc = subprocess.run([sys.executable, "-c", _WORKER], cwd=folder, env=env,
                                      input=pickle.dumps((cases, int(timeout))),
                                      capture_output=True, timeout=timeout * len(cases) + 60)
            except subprocess.TimeoutExpired as error:
                finished = (error.stderr or b"").decode(errors="replace").split()
                at = int(finished[-1]) if finished and finished[-1].isdigit() else 0
                report.cases += len(cases)
                report.failures.append((cases[min(at, len(cases) - 1)],
                                        f"hang: worker stuck at case {at}"))
                continue
            if proc.returncode != 0:
                finished = proc.stderr.decode(errors="replace").split()
                at = int(finished[-1]) if finished and finished[-1].isdigit() else 0
                report.cases += len(cases)
                report.failures.append((cases[min(at, len(cases) - 1)],
                                        f"crash: worker exit {proc.returncode}: "
                                        f"{proc.stderr.decode(errors='replace')[-300:]}"))
                continue
            for argv, (code, stderr, seconds) in zip(cases, pickle.loads(proc.stdout)):
                _record(report, argv, code, stderr)
                report.slowest = max(report.slowest, (seconds, argv), key=lambda s: s[0])
            if real_every > 0:
                for argv in cases[::real_every]:
                    outcome = run_real(argv, folder, env, timeout)
                    if outcome is not None:
                        _record(report, ["(process)"] + argv, *outcome)
    report.seconds = time.perf_counter() - start
    return report
