"""Interpreter implementations of ``ptx.cvt`` (PTX ISA 9.7.9.21), as the GPU converts,
and of ``ptx.setp`` / ``ptx.selp`` (9.7.7.1, 9.7.7.3; the NaN-propagating f64 max/min
of ``Emitter.minmax`` uses them at level 2). ``cvt``:

* integer to integer: the source is read as ``.atype`` (sign- or zero-extended), then
  truncated to ``.dtype`` and extended into the destination register by ``.dtype``'s
  signedness;
* float to float: widening is exact; narrowing rounds to nearest even (``.rn``; the
  other float roundings raise an ``InterpretationError``);
* integer to float: rounds to nearest even (``.rn`` only);
* float to integer: ``.rni``/``.rzi``/``.rmi``/``.rpi`` round to an integer, which
  saturates to ``.dtype``'s range; NaN gives 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter.values import coerce_float, is_nan, to_signed, to_unsigned
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.control import CmpOp, CvtOp, CvtRounding, CvtType, SelpOp, SetpOp, SetpType

_FLOAT: dict[CvtType, ArithType] = {
    CvtType.F16: ArithType.F16,
    CvtType.BF16: ArithType.BF16,
    CvtType.F32: ArithType.F32,
    CvtType.F64: ArithType.F64,
}


def _signed(t: CvtType) -> bool:
    return t.value[0] == "s"


def _read_int(t: CvtType, x: Any) -> int:
    v = to_unsigned(int(x), t.bits)
    return to_signed(v, t.bits) if _signed(t) else v


def _write_int(t: CvtType, v: int, register: Attribute) -> int:
    """``v`` truncated to ``t``, extended into a register of IR type ``register``."""
    v = to_unsigned(v, t.bits)
    if _signed(t):
        v = to_signed(v, t.bits)
    width = register.width.data if isinstance(register, IntegerType) else t.bits
    return to_signed(v, width)


def _to_integer(x: float, rnd: CvtRounding) -> int:
    if rnd == CvtRounding.RZI:
        return math.trunc(x)
    if rnd == CvtRounding.RMI:
        return math.floor(x)
    if rnd == CvtRounding.RPI:
        return math.ceil(x)
    return round(x)  # Python rounds halves to even


def convert(op: CvtOp, x: Any) -> Any:
    """The value ``op`` gives for the source value ``x``."""
    return converter(op)(x)


def converter(op: CvtOp) -> Callable[[Any], Any]:
    """:func:`convert` of ``op`` as a function of the source value (``op``'s types and
    rounding read once)."""
    d, a = op.dtype.data, op.atype.data
    rnd = op.rnd.data if op.rnd is not None else None
    return partial(_convert, op.name, d, a, rnd, op.result.type)


def _convert(name: str, d: CvtType, a: CvtType, rnd: CvtRounding | None, result: Attribute, x: Any) -> Any:
    if not d.is_float and not a.is_float:
        return _write_int(d, _read_int(a, x), result)
    if not d.is_float:  # float to integer
        if rnd is None:  # pragma: no cover - the verifier asks for an integer rounding
            raise InterpretationError(f"'{name}' float to integer needs a rounding modifier")
        v = float(coerce_float(_FLOAT[a], x))
        if math.isnan(v):
            return _write_int(d, 0, result)
        lo, hi = (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if _signed(d) else (0, (1 << d.bits) - 1)
        if math.isinf(v):
            n = hi if v > 0 else lo
        else:
            n = min(max(_to_integer(v, rnd), lo), hi)
        return _write_int(d, n, result)
    if rnd not in (None, CvtRounding.RN):
        raise InterpretationError(
            f"'{name}' rounding modifier '.{rnd}' is not supported by the interpreter (only .rn is modelled)"
        )
    dk = _FLOAT[d]
    if not a.is_float:  # integer to float
        n = _read_int(a, x)
        if dk == ArithType.F32:
            return np.float32(np.int64(n)) if _signed(a) or n < 2**63 else np.float32(np.uint64(n))
        return coerce_float(dk, float(n))
    v = coerce_float(_FLOAT[a], x)
    if dk == ArithType.F16 and _FLOAT[a] == ArithType.F64:
        return np.float16(v)  # numpy rounds f64 to f16 once
    return coerce_float(dk, v if _FLOAT[a] != ArithType.BF16 else v.to_float32())


@register_impls
class PtxCvtFunctions(InterpreterFunctions):
    """``ptx.cvt``."""

    @impl(CvtOp)
    def run_cvt(self, interpreter: Interpreter, op: CvtOp, args: PythonValues) -> PythonValues:
        return (self.converter(op)(args[0]),)

    def converter(self, op: CvtOp) -> Callable[[Any], Any]:
        """:func:`converter` of ``op``, made once per op."""
        memo = self.__dict__.setdefault("_converters", {})
        f = memo.get(op)
        if f is None:
            f = memo[op] = converter(op)
        return f


# region setp / selp

_ORDERED_CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
_UNSIGNED_CMP = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


_FLOAT_SETP = (SetpType.F16, SetpType.BF16, SetpType.F32, SetpType.F64)


def _setp_form(cmp: CmpOp, t: SetpType) -> tuple[Any, ...]:
    """What :func:`setp` reads of its comparison and type."""
    c = str(cmp)
    if t in _FLOAT_SETP:
        return (c, ArithType(t.value), 0, False)
    return (c, None, int(t.value[1:]), t.value[0] == "s")


def setp(cmp: CmpOp, t: SetpType, a: Any, b: Any) -> bool:
    """``setp.cmp.type a, b``: float comparisons are false with a NaN operand, their
    ``u`` forms true; ``num`` / ``nan``: neither / either operand is NaN."""
    return _setp(_setp_form(cmp, t), a, b)


def _setp(form: tuple[Any, ...], a: Any, b: Any) -> bool:
    """:func:`setp` of the comparison and type that ``form`` (:func:`_setp_form`) reads."""
    c, ft, bits, signed = form
    if ft is not None:
        x, y = coerce_float(ft, a), coerce_float(ft, b)
        either = is_nan(ft, x) or is_nan(ft, y)
        if c in ("num", "nan"):
            return either == (c == "nan")
        fx, fy = float(x), float(y)
        if c.endswith("u") and c != "eq":  # equ, neu, ltu, ...
            return either or _ORDERED_CMP[c[:-1]](fx, fy)
        return not either and _ORDERED_CMP[c](fx, fy)
    x, y = (to_signed(int(v), bits) if signed else to_unsigned(int(v), bits) for v in (a, b))
    return _ORDERED_CMP[_UNSIGNED_CMP.get(c, c)](x, y)


@register_impls
class PtxPredicateFunctions(InterpreterFunctions):
    """ptx.setp (into an ``i1``) and ptx.selp."""

    @impl(SetpOp)
    def run_setp(self, interpreter: Interpreter, op: SetpOp, args: PythonValues) -> PythonValues:
        forms = self.__dict__.setdefault("_forms", {})  # read once per op
        form = forms.get(op)
        if form is None:
            form = forms[op] = _setp_form(op.cmp.data, op.type.data)
        a, b = args
        return (_setp(form, a, b),)

    @impl(SelpOp)
    def run_selp(self, interpreter: Interpreter, op: SelpOp, args: PythonValues) -> PythonValues:
        on_true, on_false, cond = args
        return (on_true if cond else on_false,)


# endregion
