"""Interpreter implementations of the ptx arithmetic ops (``ops/ptx/arith.py``),
bit-exact against the GPU: see :mod:`bulkred_dialect.interpreter.values` for the
value representation and rounding rules.

Only round-to-nearest-even is modelled: ``.rz``/``.rm``/``.rp`` raise an
``InterpretationError`` naming the op and the modifier.

The math ops of fused reductions (abs, neg, sqrt, rcp, ex2, lg2, div.float, fma, and the
``.pred`` logic ops): abs/neg and the ``.rn`` forms are exact; the ``.approx`` forms and
``div.full`` return the correctly rounded value, within
:data:`~bulkred_dialect.interpreter.values.APPROX_TOLERANCE` of what a GPU gives
(values.py); ``rcp.approx.ftz.f64`` and ``.ftz`` with ``rcp.rnd.f64`` raise.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import f64
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter import values as _values
from bulkred_dialect.interpreter.values import (
    INT_WIDTH,
    SIGNED_TYPES,
    coerce_float,
    float_bits,
    float_from_bits,
    to_signed,
    to_unsigned,
    float_abs_neg,
    float_binary,
    float_fma,
    float_math,
    float_minmax,
    int_abs_neg,
    int_binary,
)
from bulkred_dialect.ops.ptx.arith import (
    FLOAT_TYPES,
    AbsOp,
    AndPredOp,
    Ex2Op,
    FloatDivOp,
    FmaOp,
    Lg2Op,
    MathOp,
    NegOp,
    NotPredOp,
    OrPredOp,
    RcpOp,
    SqrtOp,
    XorPredOp,
    AddF32x2Op,
    AddOp,
    AndOp,
    ArithType,
    BinaryArithOp,
    BitwiseOp,
    DivOp,
    Max3Op,
    MaxOp,
    Min3Op,
    MinMaxOp,
    MinOp,
    MulLoOp,
    MulOp,
    OrOp,
    PackB32x2Op,
    PackF32x2Op,
    RemOp,
    RoundingMode,
    ShlOp,
    ShrOp,
    SubOp,
    ThreeInputMinMaxOp,
    UnpackB32x2Op,
    UnpackF32x2Op,
    XorOp,
)


def _check_rounding(op: BinaryArithOp | AddF32x2Op) -> None:
    if op.rnd is not None and op.rnd.data != RoundingMode.RN:
        raise InterpretationError(
            f"'{op.name}' rounding modifier '.{op.rnd.data}' is not supported by the interpreter "
            "(only .rn is modelled)"
        )


def _binary_form(op: BinaryArithOp) -> tuple[Any, ...]:
    """What :func:`_binary` reads of ``op``: (type, float, min/max, opcode, ftz, .NaN)."""
    t = op.type.data
    if t in FLOAT_TYPES:
        _check_rounding(op)
        minmax = isinstance(op, MinMaxOp)
        return (t, True, minmax, op.OPCODE, op.ftz is not None, minmax and op.nan is not None)
    if t not in INT_WIDTH:  # pragma: no cover - the verifier rejects other types
        raise InterpretationError(f"'{op.name}' has no interpretation for '.type' {t}")
    return (t, False, False, op.OPCODE, False, False)


def _binary(op: BinaryArithOp, args: PythonValues, form: tuple[Any, ...] | None = None) -> Any:
    t, is_float, minmax, opcode, ftz, nan = form if form is not None else _binary_form(op)
    a, b = args
    if is_float:
        if minmax:
            return float_minmax(opcode, t, (a, b), ftz=ftz, nan=nan)
        return float_binary(opcode, t, a, b, ftz=ftz)
    return int_binary(opcode, t, a, b)


def _three_input(op: ThreeInputMinMaxOp, args: PythonValues) -> Any:
    return float_minmax(
        op.OPCODE, ArithType.F32, tuple(args), ftz=op.ftz is not None, nan=op.nan is not None
    )


def _math_form(op: MathOp) -> tuple[Any, ...]:
    """What :func:`_math` reads of ``op`` (its unmodelled forms refused): (what, type,
    ftz, opcode), what one of ``"abs_neg"``, ``"fma"``, ``"math"``."""
    t = op.type.data
    ftz = op.ftz is not None
    if op.rnd is not None and op.rnd.data != RoundingMode.RN:
        raise InterpretationError(
            f"'{op.name}' rounding modifier '.{op.rnd.data}' is not supported by the interpreter "
            "(only .rn is modelled)"
        )
    if isinstance(op, (AbsOp, NegOp)):
        return ("abs_neg", t, ftz, op.OPCODE)
    if t == ArithType.F64 and ftz:
        raise InterpretationError(f"'{op.name}' with '.ftz' and '.type' f64 is not modelled by the interpreter")
    return ("fma" if isinstance(op, FmaOp) else "math", t, ftz, op.OPCODE)


def _math(op: MathOp, args: PythonValues, form: tuple[Any, ...] | None = None) -> Any:
    """abs, neg, sqrt, rcp, ex2, lg2, div.float and fma (see the module docstring)."""
    what, t, ftz, opcode = form if form is not None else _math_form(op)
    if what == "abs_neg":
        if t in FLOAT_TYPES:
            return float_abs_neg(opcode, t, args[0], ftz=ftz)
        return int_abs_neg(opcode, t, args[0])
    if what == "fma":
        return float_fma(t, *args, ftz=ftz)
    return float_math(opcode, t, tuple(args), ftz=ftz)


@register_impls
class PtxMathFunctions(InterpreterFunctions):
    """ptx.abs/neg/sqrt/rcp/ex2/lg2/div.float/fma and ptx.and/or/xor/not.pred (the math
    ops' attributes read once per op, as for the binary ops)."""

    def _run_math(self, op: MathOp, args: PythonValues) -> PythonValues:
        forms = self.__dict__.setdefault("_forms", {})
        form = forms.get(op)
        if form is None:
            form = forms[op] = _math_form(op)
        return (_math(op, args, form),)

    @impl(AbsOp)
    def run_abs(self, interpreter: Interpreter, op: AbsOp, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(NegOp)
    def run_neg(self, interpreter: Interpreter, op: NegOp, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(SqrtOp)
    def run_sqrt(self, interpreter: Interpreter, op: SqrtOp, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(RcpOp)
    def run_rcp(self, interpreter: Interpreter, op: RcpOp, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(Ex2Op)
    def run_ex2(self, interpreter: Interpreter, op: Ex2Op, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(Lg2Op)
    def run_lg2(self, interpreter: Interpreter, op: Lg2Op, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(FloatDivOp)
    def run_div_float(self, interpreter: Interpreter, op: FloatDivOp, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(FmaOp)
    def run_fma(self, interpreter: Interpreter, op: FmaOp, args: PythonValues) -> PythonValues:
        return self._run_math(op, args)

    @impl(AndPredOp)
    def run_and_pred(self, interpreter: Interpreter, op: AndPredOp, args: PythonValues) -> PythonValues:
        return (bool(args[0]) and bool(args[1]),)

    @impl(OrPredOp)
    def run_or_pred(self, interpreter: Interpreter, op: OrPredOp, args: PythonValues) -> PythonValues:
        return (bool(args[0]) or bool(args[1]),)

    @impl(XorPredOp)
    def run_xor_pred(self, interpreter: Interpreter, op: XorPredOp, args: PythonValues) -> PythonValues:
        return (bool(args[0]) != bool(args[1]),)

    @impl(NotPredOp)
    def run_not_pred(self, interpreter: Interpreter, op: NotPredOp, args: PythonValues) -> PythonValues:
        return (not bool(args[0]),)


@register_impls
class PtxArithFunctions(PtxMathFunctions):
    """ptx.add/sub/mul/mul.lo/max/min, and/or/xor/shl/shr, max3/min3, add.f32x2,
    mov.pack/unpack, mov.pack/unpack.b32x2; and the math ops (:class:`PtxMathFunctions`).

    The binary ops' attributes are read once per op (``_forms``: the interpreter runs an
    op many times, and the IR does not change while it runs)."""

    def _binary(self, op: BinaryArithOp, args: PythonValues) -> PythonValues:
        forms = self.__dict__.setdefault("_forms", {})
        form = forms.get(op)
        if form is None:
            form = forms[op] = _binary_form(op)
        return (_binary(op, args, form),)

    @impl(AddOp)
    def run_add(self, interpreter: Interpreter, op: AddOp, args: PythonValues) -> PythonValues:
        return self._binary(op, args)

    @impl(SubOp)
    def run_sub(self, interpreter: Interpreter, op: SubOp, args: PythonValues) -> PythonValues:
        return self._binary(op, args)

    @impl(MulOp)
    def run_mul(self, interpreter: Interpreter, op: MulOp, args: PythonValues) -> PythonValues:
        return self._binary(op, args)

    @impl(MulLoOp)
    def run_mul_lo(self, interpreter: Interpreter, op: MulLoOp, args: PythonValues) -> PythonValues:
        return self._binary(op, args)

    @impl(MaxOp)
    def run_max(self, interpreter: Interpreter, op: MaxOp, args: PythonValues) -> PythonValues:
        return self._binary(op, args)

    @impl(MinOp)
    def run_min(self, interpreter: Interpreter, op: MinOp, args: PythonValues) -> PythonValues:
        return self._binary(op, args)

    def _bitwise(self, op: BitwiseOp, args: PythonValues) -> PythonValues:
        a, b = args
        return (int_binary(op.OPCODE, op.type.data, a, b),)

    @impl(AndOp)
    def run_and(self, interpreter: Interpreter, op: AndOp, args: PythonValues) -> PythonValues:
        return self._bitwise(op, args)

    @impl(OrOp)
    def run_or(self, interpreter: Interpreter, op: OrOp, args: PythonValues) -> PythonValues:
        return self._bitwise(op, args)

    @impl(XorOp)
    def run_xor(self, interpreter: Interpreter, op: XorOp, args: PythonValues) -> PythonValues:
        return self._bitwise(op, args)

    @impl(ShlOp)
    def run_shl(self, interpreter: Interpreter, op: ShlOp, args: PythonValues) -> PythonValues:
        return self._bitwise(op, args)

    @impl(ShrOp)
    def run_shr(self, interpreter: Interpreter, op: ShrOp, args: PythonValues) -> PythonValues:
        return self._bitwise(op, args)

    @impl(Max3Op)
    def run_max3(self, interpreter: Interpreter, op: Max3Op, args: PythonValues) -> PythonValues:
        return (_three_input(op, args),)

    @impl(Min3Op)
    def run_min3(self, interpreter: Interpreter, op: Min3Op, args: PythonValues) -> PythonValues:
        return (_three_input(op, args),)

    @impl(AddF32x2Op)
    def run_add_f32x2(self, interpreter: Interpreter, op: AddF32x2Op, args: PythonValues) -> PythonValues:
        _check_rounding(op)
        (a_lo, a_hi), (b_lo, b_hi) = args
        ftz = op.ftz is not None
        return (
            (
                float_binary("add", ArithType.F32, a_lo, b_lo, ftz=ftz),
                float_binary("add", ArithType.F32, a_hi, b_hi, ftz=ftz),
            ),
        )

    @impl(PackF32x2Op)
    def run_pack(self, interpreter: Interpreter, op: PackF32x2Op, args: PythonValues) -> PythonValues:
        lo, hi = args
        return ((coerce_float(ArithType.F32, lo), coerce_float(ArithType.F32, hi)),)

    @impl(UnpackF32x2Op)
    def run_unpack(self, interpreter: Interpreter, op: UnpackF32x2Op, args: PythonValues) -> PythonValues:
        ((lo, hi),) = args
        return (lo, hi)

    @impl(PackB32x2Op)
    def run_pack_b32x2(self, interpreter: Interpreter, op: PackB32x2Op, args: PythonValues) -> PythonValues:
        lo, hi = (to_unsigned(int(x), 32) for x in args)
        bits = lo | hi << 32
        if op.result.type == f64:
            return (float_from_bits(ArithType.F64, bits),)
        return (to_signed(bits, 64),)

    @impl(UnpackB32x2Op)
    def run_unpack_b32x2(self, interpreter: Interpreter, op: UnpackB32x2Op, args: PythonValues) -> PythonValues:
        (v,) = args
        bits = float_bits(ArithType.F64, v) if op.src.type == f64 else to_unsigned(int(v), 64)
        return (to_signed(bits & 0xFFFFFFFF, 32), to_signed(bits >> 32, 32))

    @impl(DivOp)
    def run_div(self, interpreter: Interpreter, op: DivOp, args: PythonValues) -> PythonValues:
        return (_div_rem(op, args)[0],)

    @impl(RemOp)
    def run_rem(self, interpreter: Interpreter, op: RemOp, args: PythonValues) -> PythonValues:
        return (_div_rem(op, args)[1],)


def _div_rem(op: DivOp | RemOp, args: PythonValues) -> tuple[int, int]:
    """Integer ``div`` (rounding toward zero) and ``rem`` (the sign of ``a``) of
    ``op``'s type; a zero divisor, unspecified in PTX, raises."""
    t = op.type.data
    if t not in INT_WIDTH:  # pragma: no cover - the verifier rejects other types
        raise InterpretationError(f"'{op.name}' has no interpretation for '.type' {t}")
    w = INT_WIDTH[t]
    a, b = (_values.to_unsigned(int(x), w) for x in args)
    if t in SIGNED_TYPES:
        a, b = _values.to_signed(a, w), _values.to_signed(b, w)
    if b == 0:
        raise InterpretationError(f"'{op.name}' divides by zero (unspecified on the GPU)")
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return _values.to_signed(q, w), _values.to_signed(a - b * q, w)

