"""The irlib exception hierarchy.

Every error a user can cause raises one of these, with a message that says what went wrong,
where (a span ``source:line:col`` or a node printed in the text format) and, where it helps,
how to fix it. Internal ``KeyError``/``IndexError`` must never escape the public API.

::

    IRError
     ├── ParseError            (also a SyntaxError)  text-format input is malformed
     ├── TypeInferenceError                          a program is ill-typed
     ├── WellFormedError                             a program breaks a structural invariant
     ├── PassError                                   a pass failed (names the pass)
     ├── InterpreterError                            evaluation failed (names the node)
     │    ├── MatchError                             no match clause covered a value
     │    ├── ArgumentShapeError                     an argument's shape disagrees with its
     │    │                                          parameter type / bound size variables
     │    └── UnboundSizeVarError                    an attr/type mentions an unbound size var
     ├── OpImplError                                 an op's reference implementation failed
     ├── UnsupportedOpError                          an importer met an op it cannot map
     ├── ParamsFormatError                           a params blob is corrupt
     ├── GradientError        (also NotImplementedError) an op has no gradient rule,
     │                                               or its rule cannot differentiate this call
     ├── TensorTooLargeError                         a tensor over the size limit would be
     │                                               materialised (irlib.limits)
     ├── UnknownNameError     (also a LookupError)  a module has no global/type/ctor by that name
     ├── UntypedError         (also a ValueError)   ``checked_type`` read before inference
     └── OpRegistrationError  (also a ValueError)   an op name is registered by two modules
"""

from __future__ import annotations


class IRError(Exception):
    """Base class of every error irlib raises on purpose."""


class ParseError(IRError, SyntaxError):
    """Malformed text-format input.

    Args:
        message: what is wrong and what was expected.
        span: where (an :class:`irlib.ir.span.Span`), or None.
        source_line: the text of the offending line, printed with a caret under the column.
    """

    def __init__(self, message: str, span=None, source_line: str | None = None):
        self.message = message
        self.span = span
        self.source_line = source_line
        SyntaxError.__init__(self, message)
        if span is not None:
            self.filename = span.source_name
            self.lineno = span.line
            self.offset = span.column

    def __str__(self) -> str:
        if self.span is None:
            return self.message
        text = f"{self.span}: {self.message}"
        if self.source_line is not None:
            caret_width = 1
            if self.span.end_line == self.span.line and self.span.end_column > self.span.column:
                caret_width = self.span.end_column - self.span.column
            text += "\n" + self.source_line.rstrip("\n")
            text += "\n" + " " * max(self.span.column - 1, 0) + "^" * caret_width
        return text


class TypeInferenceError(IRError):
    """An ill-typed program.

    ``errors`` holds one :class:`TypeErrorReport` per problem found; all problems of a
    function are collected before raising, so the message lists each of them.
    """

    def __init__(self, message: str, errors=()):
        super().__init__(message)
        self.errors = list(errors)


class TypeErrorReport:
    """One type error: the offending expression (printed), expected and actual types, span."""

    __slots__ = ("message", "expr_text", "expected", "actual", "span")

    def __init__(self, message, expr_text=None, expected=None, actual=None, span=None):
        self.message = message
        self.expr_text = expr_text
        self.expected = expected
        self.actual = actual
        self.span = span

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        lines = [f"{where}{self.message}"]
        if self.expected is not None or self.actual is not None:
            lines.append(f"  expected: {self.expected}")
            lines.append(f"  actual:   {self.actual}")
        if self.expr_text:
            lines.append("  in expression: " + self.expr_text.replace("\n", "\n    "))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"TypeErrorReport({self.message!r})"


class WellFormedError(IRError):
    """A program that breaks a structural invariant (e.g. a variable bound twice)."""


class PassError(IRError):
    """A pass raised; the message names the pass and the passes that ran before it."""


class InterpreterError(IRError):
    """Evaluation failed; the message names the node being evaluated and its span."""


class MatchError(InterpreterError):
    """No clause of a ``match`` covered the value it was given."""


class ArgumentShapeError(InterpreterError):
    """A function was called with an argument whose shape disagrees with its parameter type.

    Raised at function entry by every executor: a wrong rank, a static dim of another size,
    or a size variable (``Tensor[(n, n), ...]``) met with two different sizes. The message
    names the function, the parameter, the dim and both sizes (see
    :mod:`irlib.ir.dim_binding`).
    """


class UnboundSizeVarError(InterpreterError):
    """An op attribute or type mentions a size variable that no argument bound.

    Size variables get their values at function entry (from the arguments' shapes and the
    ``"size_params"`` attribute); a variable that appears only inside a function body, e.g.
    in ``reshape(%x, newshape=[m])``, has no value to run with.
    """


class OpImplError(IRError):
    """An op's reference implementation failed or returned a wrongly typed result.

    Args:
        message: what went wrong.
        op: the op name.
        input_types: the types the op was called with, if known.
    """

    def __init__(self, message: str, op: str | None = None, input_types=None):
        super().__init__(message)
        self.op = op
        self.input_types = input_types


class UnsupportedOpError(IRError):
    """An importer met operators it cannot map (each with node name, op type and opset)."""


class ParamsFormatError(IRError):
    """A serialized parameter blob is corrupt or of an unknown version."""


class GradientError(IRError, NotImplementedError):
    """An op has no gradient rule, or its rule cannot differentiate a call (symbolic sizes it
    needs, an unsupported attribute combination, missing argument types); names the op and
    why. Also a ``NotImplementedError``, which these rules raised before."""


class TensorTooLargeError(IRError):
    """A tensor larger than the configured limit would be materialised at import or compile
    time (see :mod:`irlib.limits`); raised before numpy allocates.

    Attributes:
        size: the tensor's size in bytes.
        limit: the limit in bytes.
    """

    def __init__(self, message: str, size: int | None = None, limit: int | None = None):
        super().__init__(message)
        self.size = size
        self.limit = limit


class UnknownNameError(IRError, LookupError):
    """A module has no global function, type or constructor of the requested name or tag."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UntypedError(IRError, ValueError):
    """``checked_type`` was read on a node that type inference has not annotated."""


class OpRegistrationError(IRError, ValueError):
    """An op was registered under a name that another module already registered.

    The message names the op and both modules. Re-executing the module that defined an op
    (``importlib.reload``) replaces its definitions instead (see
    :func:`irlib.op.registry.register_op`).
    """
