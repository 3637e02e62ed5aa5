"""Custom kernels and extern modules in the nn builder (Relax's ``nn.extern`` family).

Every form below emits one ``call_dps_packed`` call (:mod:`irlib.op.extern_call`): the
function is registered in the process-wide extern function table and the IR names it by its
key, with the output types as attributes. The interpreter, the graph executor and
``Module.jit`` run such a call like any opaque op, through the op's reference implementation,
which allocates the outputs and calls the function in destination-passing style (DPS):
``func(*inputs, *outputs)``.

* :func:`tensor_ir_op` ``(func, name_hint, args, out)``: Relax takes a TIR PrimFunc; irlib
  takes a Python or numba (``@numba.njit``) function in DPS. ``out`` is a placeholder
  :class:`~irlib.frontend.nn.Tensor` (or a list of them) giving the output shapes and dtypes;
  symbolic dims (an input's ``shape[0]``, a ``str`` size name) are bound from the function's
  arguments when it runs.
* :func:`tensor_expr_op` ``(tensor_expr_func, name_hint, args, *, attrs=None)``: Relax takes
  a TE function; irlib takes a value-returning function ``(*numpy arrays) -> array(s)``. The
  output types come from ``attrs["out"]`` (placeholders, as ``tensor_ir_op``'s ``out``) or,
  without it, from one dry run of the function on zero-filled arrays of the inputs' static
  shapes (inputs with symbolic dims then need ``attrs["out"]``). Other ``attrs`` entries are
  accepted and ignored (Relax attaches them to the PrimFunc it generates).
* :func:`extern` ``(name, args, out)``: calls the function registered under ``name`` with
  :func:`register_extern_func` (``tvm.register_func``'s counterpart), in DPS; a name that is
  not registered when the program runs is an error then.
* :class:`SourceModule` (C or C++ source compiled with the system compiler into a shared
  object) and :class:`ObjectModule` (a prebuilt ``.so``, or a ``.o`` linked into one), both
  :class:`ExternModule` s: ``symbols`` maps each C symbol to its shape/dtype inference
  function, which receives the call's arguments (nn Tensors, ints, ...) and returns a
  placeholder Tensor (or a list of them). In ``forward``, ``nn.add_extern(mod)`` (once per
  export) and then ``mod["symbol"](*args)``. The module compiles and loads (ctypes) on its
  first run, or at ``mod.load()``. ``export_tvm(..., allow_extern=True)`` returns the modules.

The C calling convention: one ``DLTensor*`` per tensor (inputs then outputs), ``int64_t``
for ints and size expressions, ``double`` for floats, ``const char*`` for strings; the
function returns ``int`` (0 = success). ``#include <dlpack/dlpack.h>`` (irlib ships its own
DLPack-compatible header) and mark the symbol ``IRLIB_EXTERN_C`` (from
``<irlib/extern.h>``)::

    #include <irlib/extern.h>
    IRLIB_EXTERN_C int scale_shift(DLTensor* x, DLTensor* b, DLTensor* y) { ...; return 0; }

Errors (all :class:`~irlib.frontend.nn.errors.NNError` s): :class:`ExternError` (misuse:
a module not added with ``add_extern``, a missing source file, an unsupported format),
:class:`ExternCompileError` (the compiler is missing or failed; the message shows its
command and output), :class:`ExternSymbolError` (a symbol the module does not declare, or
declares but the library lacks), :class:`ExternInferenceError` (a shape/dtype inference
function failed or returned something other than placeholder Tensors), and
:class:`~irlib.frontend.nn.errors.OpError` for bad ``args``/``out``. Registering one symbol
in two modules of an export is an ``NNError`` from ``add_extern``. See docs/nn_extern.md.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from ...ir.dims import DimExpr
from ...ir.types import TensorType
from ...op import extern_call as _ec
from ._builder import current_where, infer_expr_type
from .core import Tensor, _normalize_shape, wrap_nested
from .errors import NNError, OpError

__all__ = ["tensor_ir_op", "tensor_expr_op", "extern", "register_extern_func",
           "ExternModule", "ObjectModule", "SourceModule", "ExternLibrary", "ExternError",
           "ExternCompileError", "ExternSymbolError", "ExternInferenceError"]

OP_NAMES = ["tensor_ir_op", "tensor_expr_op", "extern"]   # the functional ops (nn.op)

_INCLUDE_HOME = Path(__file__).resolve().parent


class ExternError(NNError):
    """Misuse of an extern module or custom kernel (see the module docstring)."""


class ExternCompileError(ExternError):
    """The C/C++ compiler (or linker) is missing or failed; the message holds its command
    line and output."""


class ExternSymbolError(ExternError, LookupError):
    """A symbol the extern module does not declare in ``symbols``, or declares but its
    shared object does not define."""


class ExternInferenceError(ExternError, TypeError):
    """A shape/dtype inference function raised, or returned something other than a
    placeholder Tensor or a non-empty list/tuple of them."""


def register_extern_func(name: str, func: Optional[Callable] = None, *, override: bool = False):
    """Register a function for :func:`extern` (``tvm.register_func``'s counterpart).

    A Python or numba function is called in DPS, ``func(*inputs, *outputs)`` with numpy
    arrays; a ctypes function pointer is called with ``DLTensor*`` arguments. Usable as a
    decorator: ``@nn.register_extern_func("my.add")``.

    Args:
        name: the name :func:`extern` calls it by.
        func: the function (omitted: a decorator is returned).
        override: replace an existing registration instead of raising.

    Raises:
        irlib.op.extern_call.ExternFuncError: the name is taken (without ``override``).
    """
    return _ec.register_func(name, func, override=override)


# -- emitting the call ------------------------------------------------------------------------

def _scalar(value, where: str, name_hint: str, index):
    if isinstance(value, Tensor):
        return value._expr
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (str, DimExpr)):
        return value
    raise OpError(f"{where}: {name_hint}: argument {index} is a {type(value).__name__}; "
                  "arguments are nn Tensors, ints, floats, strs or size expressions (or "
                  "lists of them, passed one by one)")


def _convert_args(args, name_hint: str) -> list:
    """nn-level arguments as ``call_dps_packed`` arguments (lists/tuples flattened)."""
    where = current_where()
    if isinstance(args, Tensor):
        args = [args]
    if not isinstance(args, (list, tuple)):
        raise OpError(f"{where}: {name_hint}: args must be a Tensor or a list of arguments, "
                      f"got {type(args).__name__}")
    converted = []
    for index, arg in enumerate(args):
        if isinstance(arg, (list, tuple)):
            converted.extend(_scalar(item, where, name_hint, f"{index}.{j}")
                             for j, item in enumerate(arg))
        else:
            converted.append(_scalar(arg, where, name_hint, index))
    return converted


def _out_types(out, what: str, error=OpError):
    """``(types, container)`` for an ``out`` spec: container is None for a single Tensor.

    Args:
        out: a placeholder Tensor or a list/tuple of them.
        what: the message's subject, completed by "must be ...".
        error: the error class raised for anything else.
    """
    if isinstance(out, Tensor):
        return [out._type], None
    if isinstance(out, (list, tuple)) and out and all(isinstance(o, Tensor) for o in out):
        return [o._type for o in out], type(out)
    shown = repr(out) if len(repr(out)) < 200 else type(out).__name__
    raise error(f"{current_where()}: {what} must be a placeholder nn.Tensor or a non-empty "
                f"list/tuple of them (nn.Tensor.placeholder(shape, dtype)), got {shown}")


def _emit(key: str, name_hint: str, args: list, types: list, container):
    call = _ec.call_dps_packed(key, args, types)
    results = wrap_nested(call, name_hint)
    if container is None:
        return results[0]
    return container(results)


def tensor_ir_op(func: Callable, name_hint: str, args, out):
    """Call a Python or numba function in destination-passing style (Relax's call_tir).

    ``func(*inputs, *outputs)`` receives numpy arrays for tensors and Python scalars for
    ints/floats/strs/size expressions, and writes every output (they start uninitialised).

    Args:
        func: the function (a numba ``@njit`` dispatcher works too).
        name_hint: the name of the bound result, and the function's key in the extern table
            (suffixed ``_1``, ``_2``... if another function took it).
        args: a Tensor, or a list of Tensors, ints, floats, strs and size expressions (a
            nested list, e.g. a shape, is passed element by element).
        out: a placeholder Tensor giving the output's shape and dtype, or a list/tuple of
            them; dims may be symbolic.

    Returns:
        A Tensor for a single ``out``, else a list/tuple (as ``out``) of Tensors.

    Raises:
        OpError: bad ``func``, ``args`` or ``out``.
    """
    if not callable(func):
        raise OpError(f"{current_where()}: {name_hint}: tensor_ir_op needs a callable, got "
                      f"{type(func).__name__}")
    types, container = _out_types(out, f"{name_hint}: out")
    key = _ec.register_unique(name_hint, _ec.PythonFunc(func))
    return _emit(key, name_hint, _convert_args(args, name_hint), types, container)


def _dry_run_types(func, args: list, name_hint: str):
    inputs = []
    for arg in args:
        if isinstance(arg, (str, int, float)):
            inputs.append(arg)
            continue
        ty = None if isinstance(arg, DimExpr) else infer_expr_type(arg)
        if ty is None or not all(isinstance(d, int) for d in ty.shape):
            raise OpError(f"{current_where()}: {name_hint}: tensor_expr_op cannot infer the "
                          "output types of a call with symbolic arguments; give them as "
                          "attrs={'out': nn.Tensor.placeholder(shape, dtype)}")
        inputs.append(np.zeros(ty.shape, dtype=_ec._np_dtype(ty.dtype)))
    try:
        with np.errstate(all="ignore"):
            result = func(*inputs)
    except Exception as error:  # noqa: BLE001 - the user's function; reported with context
        raise OpError(f"{current_where()}: {name_hint}: tensor_expr_op ran the function on "
                      f"zero-filled inputs to infer its output types and it raised "
                      f"{type(error).__name__}: {error}; give attrs={{'out': ...}}") from error
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    types = []
    for value in results:
        value = np.asarray(value)
        types.append(TensorType(value.shape, value.dtype.name))
    return types, (None if not isinstance(result, (list, tuple)) else tuple)


def tensor_expr_op(tensor_expr_func: Callable, name_hint: str, args, *,
                   attrs: Optional[Dict] = None):
    """Call a value-returning Python function ``f(*arrays) -> array(s)`` (Relax builds a TE
    function instead; see the module docstring).

    Args:
        tensor_expr_func: the function; it gets numpy arrays (and Python scalars for
            ints/floats/size expressions) and returns an array or a list/tuple of arrays.
        name_hint: the result's name and the function's key in the extern table.
        args: as :func:`tensor_ir_op`'s.
        attrs: ``{"out": placeholder(s)}`` declares the output types (needed when an input
            has symbolic dims); other entries are ignored.

    Returns:
        A Tensor, or a tuple of Tensors when the function returns several arrays (or
        ``out`` is a list/tuple, whose type is then kept).

    Raises:
        OpError: bad arguments, or output types that cannot be inferred.
    """
    if not callable(tensor_expr_func):
        raise OpError(f"{current_where()}: {name_hint}: tensor_expr_op needs a callable, got "
                      f"{type(tensor_expr_func).__name__}")
    converted = _convert_args(args, name_hint)
    out = (attrs or {}).get("out")
    if out is not None:
        types, container = _out_types(out, f"{name_hint}: attrs['out']")
    else:
        types, container = _dry_run_types(tensor_expr_func, converted, name_hint)
    key = _ec.register_unique(name_hint, _ec.ValueFunc(tensor_expr_func))
    return _emit(key, name_hint, converted, types, container)


def extern(name: str, args: Sequence, out):
    """Call the function registered under ``name`` (:func:`register_extern_func`) in DPS.

    Args:
        name: the registered name (looked up when the program runs).
        args: as :func:`tensor_ir_op`'s (Tensors, ints, floats, strs, size expressions).
        out: a placeholder Tensor or a list of them: the output types.

    Returns:
        A Tensor for a single ``out``, else a list/tuple (as ``out``) of Tensors.
    """
    if not isinstance(name, str) or not name:
        raise OpError(f"{current_where()}: extern: name must be a non-empty str, got {name!r}")
    types, container = _out_types(out, f"extern {name!r}: out")
    return _emit(name, name, _convert_args(args, name), types, container)


# -- extern modules ---------------------------------------------------------------------------

class ExternLibrary:
    """A loaded shared object of an extern module (what :meth:`ExternModule.load` returns).

    ``lib["symbol"](*inputs, *outputs)`` calls a symbol on numpy arrays (DPS) outside any
    model, e.g. to test a kernel.

    Args:
        path: the shared object's path when it was loaded.
        cdll: the ``ctypes.CDLL``.
        symbols: the symbol names the module declares (all checked present).
    """

    def __init__(self, path: Path, cdll, symbols: Sequence[str]):
        self.path = Path(path)
        self.cdll = cdll
        self.symbols = list(symbols)

    def cfunc(self, symbol: str):
        """The ctypes function of ``symbol`` (``int`` result).

        Raises:
            ExternSymbolError: the library does not define it.
        """
        try:
            function = getattr(self.cdll, symbol)
        except AttributeError:
            raise ExternSymbolError(f"extern library {self.path.name}: symbol {symbol!r} is "
                                    "not defined (is it declared extern \"C\" / "
                                    "IRLIB_EXTERN_C?)") from None
        function.restype = ctypes.c_int
        return function

    def __getitem__(self, symbol: str) -> Callable:
        cfunc = _ec.CFunc(self.cfunc(symbol), symbol)

        def call(*arrays) -> None:
            cfunc.invoke(list(arrays), [])
        return call

    def __contains__(self, symbol: str) -> bool:
        return hasattr(self.cdll, symbol)

    def __repr__(self) -> str:
        return f"ExternLibrary({str(self.path)!r}, symbols={self.symbols})"


def _find_tool(candidates: Sequence[str], env: str) -> str:
    explicit = os.environ.get(env)
    if explicit:
        return explicit
    for name in candidates:
        if shutil.which(name):
            return name
    raise ExternCompileError(f"no compiler found: none of {list(candidates)} is on PATH (set "
                             f"${env} or pass compiler=...)")


def _run_tool(command: List[str], what: str) -> None:
    if shutil.which(command[0]) is None:
        raise ExternCompileError(f"{what}: compiler {command[0]!r} not found on PATH")
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise ExternCompileError(f"{what} failed (exit status {proc.returncode}):\n  "
                                 f"{' '.join(command)}\n{output}")


class ExternModule:
    """Base class of the extern modules: C symbols with shape/dtype inference functions.

    Args:
        symbols: ``{symbol: inference function}``; the function receives the call's
            arguments and returns a placeholder Tensor or a list of them (the outputs).
    """

    def __init__(self, symbols: Dict[str, Callable]):
        if not isinstance(symbols, dict) or not all(isinstance(k, str) for k in symbols):
            raise ExternError(f"{type(self).__name__}: symbols must be a dict "
                              f"{{symbol name: shape/dtype inference function}}, got {symbols!r}")
        for name, infer in symbols.items():
            if not callable(infer):
                raise ExternError(f"{type(self).__name__}: the inference function of symbol "
                                  f"{name!r} is not callable ({infer!r})")
        self._symbols = dict(symbols)
        self._library: Optional[ExternLibrary] = None
        self._lock = threading.Lock()
        self._cfuncs: dict = {}

    @property
    def symbols(self) -> Dict[str, Callable]:
        """The symbol -> inference function table."""
        return self._symbols

    def __getitem__(self, func_name: str) -> Callable:
        """A callable emitting a call of symbol ``func_name`` (use it inside ``forward``).

        Raises:
            ExternSymbolError: the module does not declare ``func_name``.
        """
        if func_name not in self._symbols:
            raise ExternSymbolError(f"{current_where()}: {type(self).__name__} has no symbol "
                                    f"{func_name!r}; its symbols are {sorted(self._symbols)}")
        infer = self._symbols[func_name]

        def call(*args):
            self._check_added(func_name)
            try:
                result = infer(*args)
            except NNError:
                raise
            except Exception as error:  # noqa: BLE001 - the user's inference function
                raise ExternInferenceError(
                    f"{current_where()}: the shape/dtype inference function of extern symbol "
                    f"{func_name!r} raised {type(error).__name__}: {error}") from error
            types, container = _out_types(
                result, f"the result of extern symbol {func_name!r}'s shape/dtype inference "
                        "function", ExternInferenceError)
            key = _ec.register_unique(func_name, self._cfunc(func_name))
            return _emit(key, func_name, _convert_args(list(args), func_name), types, container)
        return call

    def _check_added(self, func_name: str) -> None:
        from .exporter import Exporter
        stack = getattr(Exporter._local, "stack", None)
        if stack and not any(mod is self for mod in stack[-1].extern_mods):
            raise ExternError(f"{current_where()}: extern symbol {func_name!r} is called but "
                              f"its {type(self).__name__} was not added to this export: call "
                              "nn.add_extern(module) first (once per export)")

    def _cfunc(self, symbol: str) -> _ec.CFunc:
        entry = self._cfuncs.get(symbol)
        if entry is None:
            entry = self._cfuncs[symbol] = _ec.CFunc(lambda: self._loaded().cfunc(symbol),
                                                     symbol)
        return entry

    def _loaded(self) -> ExternLibrary:
        with self._lock:
            if self._library is None:
                self._library = self._load_library()
            return self._library

    def _load_shared(self, path: Path) -> ExternLibrary:
        try:
            cdll = ctypes.CDLL(str(path))
        except OSError as error:
            raise ExternError(f"{type(self).__name__}: cannot load {path}: {error}") from None
        missing = [name for name in self._symbols if not hasattr(cdll, name)]
        if missing:
            raise ExternSymbolError(f"{type(self).__name__}: symbols {missing} are declared "
                                    f"but {path.name} does not define them (C++ needs "
                                    "extern \"C\": use IRLIB_EXTERN_C from <irlib/extern.h>)")
        return ExternLibrary(path, cdll, list(self._symbols))

    def _load_library(self) -> ExternLibrary:
        raise ExternError(f"{type(self).__name__} is abstract: use nn.SourceModule or "
                          "nn.ObjectModule")

    def load(self) -> ExternLibrary:
        """Compile (if needed) and load the module's shared object; cached after the first
        call. Models load it by themselves when they first run.

        Raises:
            ExternCompileError: compiling or linking failed.
            ExternSymbolError: a declared symbol is missing from the library.
        """
        return self._loaded()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(symbols={sorted(self._symbols)})"


def _default_compiler(cxx: bool) -> str:
    if cxx:
        return _find_tool(("c++", "g++", "clang++"), "CXX")
    return _find_tool(("cc", "gcc", "clang"), "CC")


class ObjectModule(ExternModule):
    """An extern module from a prebuilt shared object (``.so``) or an object file (``.o``,
    compiled with ``-fPIC``), which is linked into a shared object with the system C++
    compiler driver (``c++ -shared``) when loaded.

    Args:
        symbols: ``{symbol: shape/dtype inference function}``.
        filepath: the ``.so`` or ``.o`` file.

    Raises:
        ExternError: ``filepath`` is not a file.
    """

    def __init__(self, symbols: Dict[str, Callable], filepath: Path):
        filepath = Path(filepath)
        if not filepath.is_file():
            raise ExternError(f"ObjectModule: not a file: {filepath}")
        self.filepath = filepath
        super().__init__(symbols)

    def _load_library(self) -> ExternLibrary:
        if self.filepath.suffix in (".so", ".dylib"):
            return self._load_shared(self.filepath.resolve())
        folder = Path(tempfile.mkdtemp(prefix="irlib_extern_"))
        try:
            shared = folder / f"{self.filepath.stem}.so"
            _run_tool([_default_compiler(True), "-shared", "-o", str(shared),
                       str(self.filepath)], f"linking {self.filepath.name}")
            return self._load_shared(shared)
        finally:
            shutil.rmtree(folder, ignore_errors=True)   # the loaded mapping stays valid


_SOURCE_SUFFIX = {"cpp": ".cpp", "c": ".c"}


def _read_source(source_code) -> str:
    if isinstance(source_code, Path):
        if not source_code.is_file():
            raise ExternError(f"SourceModule: source file not found: {source_code}")
        return source_code.read_text(encoding="utf-8")
    if not isinstance(source_code, str):
        raise ExternError(f"SourceModule: source_code must be a str or a Path, got "
                          f"{type(source_code).__name__}")
    if "\n" not in source_code and len(source_code) < 4096:
        try:
            path = Path(source_code)
            if path.is_file():
                return path.read_text(encoding="utf-8")
        except OSError:
            pass
    return source_code


class SourceModule(ExternModule):
    """An extern module compiled from C or C++ source with the system compiler.

    Args:
        symbols: ``{symbol: shape/dtype inference function}``.
        source_code: the source text, or a path (``Path`` or ``str``) to a source file.
        source_format: ``"cpp"`` (C++, compiled with ``c++``) or ``"c"`` (``cc``); Relax's
            ``"cu"`` is refused (no CUDA toolchain in irlib's runtime).
        compile_options: compiler flags; default :meth:`get_compile_options`.
        compiler: the compiler command (default ``$CXX``/``$CC`` or the first of
            ``c++ g++ clang++`` / ``cc gcc clang`` on PATH).
        output_format: ``"obj"`` (a shared object, the only one supported).

    Raises:
        ExternError: an unknown ``source_format``/``output_format`` or a missing source file.
    """

    def __init__(self, symbols: Dict[str, Callable], source_code, source_format: str,
                 compile_options: Optional[List[str]] = None, compiler: Optional[str] = None,
                 output_format: str = "obj"):
        if source_format not in _SOURCE_SUFFIX:
            raise ExternError(f"SourceModule: source_format {source_format!r} is not supported "
                              "(irlib compiles 'cpp' and 'c' for the CPU; 'cu' needs nvcc and "
                              "a CUDA runtime irlib does not have)")
        if output_format != "obj":
            raise ExternError(f"SourceModule: output_format {output_format!r} is not supported "
                              "(only 'obj': a shared object loaded with ctypes)")
        self.source_code = _read_source(source_code)
        self.source_format = source_format
        self.compile_options = (SourceModule.get_compile_options(source_format)
                                if compile_options is None else list(compile_options))
        self.compiler = compiler
        self.output_format = output_format
        super().__init__(symbols)

    @staticmethod
    def tvm_home() -> Path:
        """The folder whose ``include/`` holds irlib's C headers (``dlpack/dlpack.h``,
        ``irlib/extern.h``): the ``irlib/frontend/nn`` package folder. Relax returns TVM's
        source tree; irlib has no ``3rdparty`` and does not read ``$TVM_HOME``."""
        return _INCLUDE_HOME

    @staticmethod
    def get_includes(tvm_pkg: Optional[List[str]] = None) -> List[Path]:
        """The include folders: ``tvm_home()/include``, plus ``tvm_home()/3rdparty/<pkg>``
        for each ``tvm_pkg`` entry (each must exist).

        Args:
            tvm_pkg: folders relative to ``tvm_home()/3rdparty``.

        Raises:
            ExternError: a folder does not exist.
        """
        home = SourceModule.tvm_home()
        paths = [home / "include"] + [home / "3rdparty" / pkg for pkg in (tvm_pkg or [])]
        for path in paths:
            if not path.is_dir():
                raise ExternError(f"SourceModule.get_includes: not a folder: {path}")
        return paths

    @staticmethod
    def get_compile_options(source_format: str, tvm_pkg: Optional[List[str]] = None) -> List[str]:
        """Default flags: ``-I`` for each :meth:`get_includes` folder, ``-O3``, ``-fPIC``
        and ``-std=c++17`` (``"cpp"``) or ``-std=c11`` (``"c"``).

        Args:
            source_format: ``"cpp"`` or ``"c"``.
            tvm_pkg: as :meth:`get_includes`.

        Raises:
            ExternError: another source format.
        """
        standard = {"cpp": "-std=c++17", "c": "-std=c11"}.get(source_format)
        if standard is None:
            raise ExternError(f"SourceModule.get_compile_options: source_format "
                              f"{source_format!r} is not supported ('cpp' or 'c')")
        flags = []
        for path in SourceModule.get_includes(tvm_pkg):
            flags += ["-I", str(path)]
        return flags + ["-O3", "-fPIC", standard]

    def compile(self, output_path: Path) -> None:
        """Compile the source into a shared object at ``output_path``.

        The command is ``compiler *compile_options -shared -fPIC source -o output_path``
        (a ``-c`` among the options is dropped: the result is always a shared object).

        Raises:
            ExternCompileError: the compiler is missing or reports an error (its output is in
                the message).
        """
        compiler = self.compiler or _default_compiler(self.source_format == "cpp")
        with tempfile.TemporaryDirectory(prefix="irlib_extern_src_") as folder:
            source = Path(folder) / f"main{_SOURCE_SUFFIX[self.source_format]}"
            source.write_text(self.source_code, encoding="utf-8")
            options = [flag for flag in self.compile_options if flag != "-c"]
            _run_tool([compiler, *options, "-shared", "-fPIC", str(source), "-o",
                       str(output_path)], "compiling the SourceModule")

    def _load_library(self) -> ExternLibrary:
        folder = Path(tempfile.mkdtemp(prefix="irlib_extern_"))
        try:
            shared = folder / "main.so"
            self.compile(shared)
            return self._load_shared(shared)
        finally:
            shutil.rmtree(folder, ignore_errors=True)   # the loaded mapping stays valid
