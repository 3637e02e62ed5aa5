"""What the ``irlib`` commands share: loading a model, input values, errors, stage display.

Every command reports a problem with the user's input by raising :class:`CLIInputError`
(or letting an :class:`irlib.IRError` through); :func:`interp.cli.main` turns it into one
line on stderr and exit code 1.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

import numpy as np

from irlib.errors import IRError
from irlib.limits import check_type_size
from irlib.progress import redirect


class CLIInputError(IRError):
    """A command-line input the command cannot use (a missing file, an unknown input name,
    a wrong-shaped ``--input`` array). The CLI prints its message as one line, exit code 1."""


class StageDisplay:
    """Shows long steps as they run: a live ``rich`` spinner on a terminal, silent else;
    when a stage ends, one plain line with its duration. Progress of a long step inside a
    stage (:mod:`irlib.progress`: the kernels compiled on a cold cache) is shown on the
    stage's spinner.

    Args:
        stream: where the lines go (stdout by default); the spinner only runs when it is a
            TTY, so piped output and tests see the plain lines alone.
    """

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.console = None
        if self.stream.isatty():
            from rich.console import Console
            self.console = Console(file=self.stream)

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        """Time one stage named ``name`` (``detail`` is shown after it); print its line."""
        started = time.perf_counter()
        if self.console is not None:
            from rich.markup import escape
            base = f"[bold]{name}[/bold] {escape(detail)}"
            with self.console.status(base) as status:
                # a long step inside (compiling kernels 12/31 ...) shows on this spinner
                def show(text: str) -> None:
                    status.update(f"{base}: {escape(text)}" if text else base)
                with redirect(show):
                    yield
        else:
            yield
        elapsed = 1000 * (time.perf_counter() - started)
        line = f"  [{name:<8}] {detail + ' ' if detail else ''}{elapsed:.1f} ms"
        print(line, file=self.stream, flush=True)


def require_file(path: str) -> None:
    """Raise :class:`CLIInputError` unless ``path`` is a readable file."""
    if not os.path.exists(path):
        raise CLIInputError(f"no such file: {path}")
    if not os.path.isfile(path):
        raise CLIInputError(f"not a file: {path}")


def parse_input_options(items) -> dict:
    """``NAME=FILE.npy`` strings -> ``{name: path}`` (each file must exist)."""
    given = {}
    for item in items:
        if "=" not in item:
            raise CLIInputError(f"--input {item!r} is not NAME=FILE.npy")
        name, path = item.split("=", 1)
        require_file(path)
        given[name] = path
    return given


def load_array(path: str) -> np.ndarray:
    """The array saved in the ``.npy`` file ``path`` (CLIInputError if it is not one)."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise CLIInputError(f"{path} is not a .npy array file ({error})") from None


def _onnx_shape_dict(path: str, batch: int, given: dict) -> dict:
    """Static input shapes for an ONNX model: from ``--input`` files, else the model's own
    dims with unknown ones set to ``batch`` (first axis) or 1."""
    import onnx
    try:
        graph = onnx.load(path, load_external_data=False).graph
    except Exception as error:      # protobuf's DecodeError and friends
        raise CLIInputError(f"{path} is not an ONNX model ({error})") from None
    initializers = {init.name for init in graph.initializer}
    shapes = {}
    for value in graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        if value.name in given:
            shape = tuple(load_array(given[value.name]).shape)
            _check_declared(value.name, given[value.name], shape, dims)
            shapes[value.name] = shape
            continue
        shapes[value.name] = tuple(
            d.dim_value if d.HasField("dim_value") else (batch if axis == 0 else 1)
            for axis, d in enumerate(dims))
    return shapes


def _check_declared(name: str, path: str, shape: tuple, dims) -> None:
    """Raise :class:`CLIInputError` when the ``--input`` array of ``shape`` (from ``path``)
    disagrees with the rank or a static dim the ONNX model declares for input ``name``."""
    if not dims:
        return
    declared = tuple(d.dim_value if d.HasField("dim_value") else "?" for d in dims)
    if len(declared) != len(shape) or any(
            want != "?" and want != have for want, have in zip(declared, shape)):
        text = ", ".join(str(d) for d in declared)
        raise CLIInputError(f"--input {name}: {path} has shape {shape}, the model declares "
                            f"({text})")


def load_model(model: str, batch: int = 1, given: dict | None = None,
               keep_params: bool = False, params_file: str | None = None):
    """``(mod, params)`` for a zoo name, a ``.rly`` text file or an ``.onnx`` file.

    Args:
        model: the zoo name (``irlib models``) or a file path.
        batch: the batch size of a zoo model, or of an ONNX model's unknown first dims.
        given: input name -> ``.npy`` path; an ONNX model's input shapes are taken from them.
        keep_params: for an ONNX model, keep the initializers as trailing parameters of
            ``main`` (returned in ``params``) instead of folding them in as constants.
        params_file: a ``.params`` blob (``interp.save_param_dict``) whose arrays bind the
            parameters of ``main`` with the same names (for a ``.rly`` model).

    Raises:
        CLIInputError: a missing or unreadable file.
        IRError: a parse error (with line:col), an unsupported ONNX op, an unknown model name.
    """
    if model.endswith(".onnx"):
        require_file(model)
        from irlib.frontend.onnx import from_onnx
        shapes = _onnx_shape_dict(model, batch, given or {})
        if not keep_params:
            # Initializers are folded into the module as constants: no params to pass.
            mod, _ = from_onnx(model, shape_dict=shapes)
            return mod, {}
        from irlib.frontend import detach_params
        mod, params = from_onnx(model, shape_dict=shapes, keep_params_in_input=True)
        mod, _ = detach_params(mod)
        return mod, {name: value.numpy() for name, value in params.items()}
    if model.endswith(".rly"):
        require_file(model)
        import irlib
        try:
            with open(model, encoding="utf-8") as handle:
                text = handle.read()
        except UnicodeDecodeError:
            raise CLIInputError(f"{model} is not a UTF-8 text file") from None
        mod = irlib.parse(text, source_name=model)
        return mod, (read_params(params_file) if params_file else {})
    if params_file is not None:
        raise CLIInputError("--params goes with a .rly model")
    if os.path.sep in model or os.path.exists(model):
        raise CLIInputError(f"{model}: a model file must end in .rly or .onnx")
    from zoo import catalog
    return catalog.workload(model, batch)


def read_params(path: str) -> dict:
    """``{name: numpy array}`` from a ``.params`` file (``interp.save_param_dict`` bytes).

    Raises:
        CLIInputError: a missing file; ParamsFormatError: bytes that are not a params blob.
    """
    require_file(path)
    from interp.params import load_param_dict
    with open(path, "rb") as handle:
        blob = handle.read()
    return {name: value.numpy() for name, value in load_param_dict(blob).items()}


def _random_value(ty, rng) -> np.ndarray:
    """A seeded random array of the tensor type ``ty`` (static shape)."""
    shape = tuple(int(d) for d in ty.shape)
    if ty.dtype.startswith(("int", "uint")):
        return rng.integers(0, 10, shape).astype(ty.dtype)
    if ty.dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.standard_normal(shape).astype(ty.dtype)


def make_inputs(func, params: dict, given: dict, seed: int) -> dict:
    """Values for the non-parameter inputs of the typed ``func``: loaded from ``given``
    (name -> ``.npy`` path; shape and dtype checked against the parameter's type) or seeded
    random.

    Raises:
        CLIInputError: a name in ``given`` is not an input, or its array has the wrong shape
            or dtype.
    """
    rng = np.random.default_rng(seed)
    inputs = {}
    for param in func.params:
        name = param.name_hint
        if name in params or name in inputs:
            continue
        ty = param.checked_type
        if name not in given:
            # a huge --batch is refused here, before numpy allocates (irlib.limits)
            check_type_size(ty, f"the random value of input {name!r}")
            inputs[name] = _random_value(ty, rng)
            continue
        value = load_array(given[name])
        expected = tuple(int(d) for d in ty.shape)
        if tuple(value.shape) != expected:
            raise CLIInputError(f"--input {name}: {given[name]} has shape {tuple(value.shape)}"
                                f", the model expects {expected}")
        if str(value.dtype) != ty.dtype:
            raise CLIInputError(f"--input {name}: {given[name]} has dtype {value.dtype}, the "
                                f"model expects {ty.dtype}")
        inputs[name] = value
    unknown = set(given) - set(inputs)
    if unknown:
        raise CLIInputError(f"--input names {sorted(unknown)} are not inputs of the model; "
                            f"inputs are {sorted(inputs)}")
    return inputs


def summarize(output) -> list:
    """Lines describing a model output (tensors, tuples of tensors)."""
    if isinstance(output, (tuple, list)) or hasattr(output, "fields"):
        lines = []
        for index, item in enumerate(output):
            lines += [f"[{index}] {line}" for line in summarize(item)]
        return lines
    array = np.asarray(output)
    lines = [f"output: shape={tuple(array.shape)} dtype={array.dtype}"]
    if array.ndim == 2 and array.shape[0] > 0 and array.shape[1] > 1:
        top = np.argsort(-array[0])[:5]
        lines.append("top-5 of sample 0: " + ", ".join(f"{i}:{array[0, i]:.4f}" for i in top))
    elif array.size:
        lines.append(f"mean={array.mean():.6g} min={array.min():.6g} max={array.max():.6g}")
    return lines


def typed(mod):
    """``mod`` after InferType (type errors raise :class:`irlib.errors.TypeInferenceError`)."""
    import irlib
    return irlib.transform.InferType()(mod)
