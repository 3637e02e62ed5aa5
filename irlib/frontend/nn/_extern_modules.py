"""Extern modules: C/C++ symbols in a shared object, called from nn models (see
:mod:`irlib.frontend.nn.extern` for the calling convention and the errors)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from ...op import extern_call as _ec
from ._builder import current_where
from ._extern_common import (ExternCompileError, ExternError, ExternInferenceError,
                             ExternSymbolError, _convert_args, _emit, _out_types)
from .errors import NNError

__all__ = ["ExternLibrary", "ExternModule", "ObjectModule", "SourceModule"]

_INCLUDE_HOME = Path(__file__).resolve().parent


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

    def is_packed(self, symbol: str) -> bool:
        """Whether ``symbol`` was exported with ``TVM_DLL_EXPORT_TYPED_FUNC`` (packed
        arguments; the library then defines the marker ``irlib_packed__<symbol>``)."""
        return hasattr(self.cdll, f"irlib_packed__{symbol}")

    def __getitem__(self, symbol: str) -> Callable:
        cfunc = _ec.CFunc(self.cfunc(symbol), symbol, packed=self.is_packed(symbol))

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
            entry = self._cfuncs[symbol] = _ec.CFunc(self._resolver(symbol), symbol)
        return entry

    def _resolver(self, symbol: str) -> Callable:
        def resolve():
            library = self._loaded()
            return library.cfunc(symbol), library.is_packed(symbol)
        return resolve

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
