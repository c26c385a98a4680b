"""The math ops of fused reductions (ops/ptx/arith.py: abs, neg, sqrt, rcp, ex2, lg2,
div.float, fma, and/or/xor/not .pred): the interpreter's values (bit-exact for abs/neg and
the .rn forms, against references computed here with fractions; the .approx forms within
``APPROX_TOLERANCE``), the Emitter helpers, and one kernel through the interpreter.
The verifier tables are checked against ptxas by tests/test_differential.py
(tests/ptx_cases/arith.py) and their messages by the lit tests ptx_math*.mlir."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter import BF16, make_interpreter
from bulkred_dialect.interpreter.values import APPROX_TOLERANCE, float_bits, float_fma
from bulkred_dialect.ops.ptx.arith import (
    AbsOp,
    AndPredOp,
    ArithType,
    Ex2Op,
    FloatDivOp,
    FmaOp,
    Lg2Op,
    NegOp,
    NotPredOp,
    OrPredOp,
    RcpOp,
    RoundingMode,
    SqrtOp,
    XorPredOp,
)
from bulkred_dialect.ops.ptx.base import bf16, f16, f32, f64, i1, i16, i32, i64
from bulkred_dialect.ops.ptx.control import CmpOp, SelpType, SetpType
from bulkred_dialect.passes.emitter import Emitter

F32, F64, F16, BF = ArithType.F32, ArithType.F64, ArithType.F16, ArithType.BF16
RN = RoundingMode.RN


def f32b(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)


def b32(x: Any) -> int:
    return int(np.float32(x).view(np.uint32))


def f64b(bits: int) -> np.float64:
    return np.uint64(bits).view(np.float64)


def b64(x: Any) -> int:
    return int(np.float64(x).view(np.uint64))


class OneOp:
    """A ``func.func @f`` holding one op on its arguments; call it with Python values."""

    def __init__(self, arg_types: Sequence[Attribute], make: Callable[..., Operation]):
        block = Block(arg_types=arg_types)
        with ImplicitBuilder(block):
            op = make(*block.args)
            func.ReturnOp(*op.results)
        fn = func.FuncOp("f", FunctionType.from_lists(arg_types, [r.type for r in op.results]), Region(block))
        self.module = ModuleOp([fn])
        self.module.verify()
        self.interpreter = make_interpreter(self.module)

    def __call__(self, *args: Any) -> Any:
        return self.interpreter.call_op("f", args)[0]


def unary(cls: type, t: ArithType, ty: Attribute, **kw: Any) -> OneOp:
    return OneOp([ty], lambda a: cls(t, a, **kw))


# region References: exact rationals rounded to nearest even, by search


def _round_nearest_even(x: Fraction, np_type: Any, bits_type: Any) -> Any:
    """The value of ``np_type`` nearest to ``x`` (ties: even bit pattern), found among the
    neighbours of a first guess -- independent of the interpreter's rounding code."""
    guess = np_type(float(x))
    candidates = [guess, np.nextafter(guess, np_type(np.inf)), np.nextafter(guess, np_type(-np.inf))]
    best = min(
        candidates,
        key=lambda c: (abs(Fraction(float(c)) - x), int(np.asarray(c).view(bits_type)) & 1),
    )
    return best


def ref_fma32(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    return _round_nearest_even(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), np.float32, np.uint32)


# endregion

# region fma


def test_fma_f32_rounds_once_where_float64_would_round_twice():
    # a*b = 1 + 2^-11 + 2^-24 is a tie in f32; c = 2^-70 breaks it upward. In float64 the
    # 2^-70 is lost and the tie rounds to even (down): one rounding must give the upper value.
    a = np.float32(1 + 2.0**-12)
    c = np.float32(2.0**-70)
    want = np.float32(1 + 2.0**-11 + 2.0**-23)
    assert np.float32(np.float64(a) * np.float64(a) + np.float64(c)) != want  # double rounding
    fma = OneOp([f32, f32, f32], lambda x, y, z: FmaOp(F32, x, y, z, rnd=RN))
    assert b32(fma(a, a, c)) == b32(want)


def test_fma_f32_matches_exact_rounding_on_random_values():
    rng = np.random.default_rng(7)
    fma = OneOp([f32, f32, f32], lambda x, y, z: FmaOp(F32, x, y, z, rnd=RN))
    for _ in range(400):
        a, b = (np.float32(v) for v in rng.standard_normal(2) * 2.0 ** rng.integers(-30, 30, 2))
        c = np.float32(-float(a) * float(b) * (1 + rng.standard_normal() * 2.0**-20))  # cancellation
        assert b32(fma(a, b, c)) == b32(ref_fma32(a, b, c)), (a, b, c)


def _round_bf16(x: Fraction) -> int:
    """The bits of the bfloat16 nearest to ``x`` (finite, in range; ties: even bits),
    by search among the neighbours of the float32 nearest to it."""
    g = b32(np.float32(float(x))) >> 16
    candidates = [c & 0xFFFF for c in (g - 1, g, g + 1) if 0 <= c & 0x7FFF < 0x7F80]

    def value(b: int) -> Fraction:
        return Fraction(float(np.uint32(b << 16).view(np.float32)))

    return min(candidates, key=lambda b: (abs(value(b) - x), b & 1))


@pytest.mark.parametrize("t", [F32, F16, BF], ids=["f32", "f16", "bf16"])
def test_fma_narrow_types_match_exact_rounding_on_random_bits(t):
    """``float_fma`` of f32, f16 and bf16 (float64 arithmetic with TwoSum and rounding to
    odd, values.py) against the exact rational rounded here, on random bit patterns
    (subnormals, both signs, every exponent) and on cancelling products."""
    rng = np.random.default_rng(11)
    np_type, bits_type, width = {F32: (np.float32, np.uint32, 32), F16: (np.float16, np.uint16, 16), BF: (None, None, 16)}[t]

    def value(bits: int) -> Any:
        return BF16(bits) if t == BF else np.array([bits], bits_type).view(np_type)[0]

    checked = 0
    for i in range(3000):
        a, b, c = (value(int(x)) for x in rng.integers(0, 1 << width, 3))
        if i % 2:  # c near -a*b: the rounding of the product must not be lost
            with np.errstate(all="ignore"):
                near = np.float32(-float(a) * float(b))
                c = BF16(b32(near) >> 16) if t == BF else np_type(near)
        x, y, z = (float(v) for v in (a, b, c))
        if not all(map(math.isfinite, (x, y, z))):
            continue  # NaN and inf inputs: test_fma_signed_zero_and_special_values
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact == 0 or abs(exact) >= (2**15 if t == F16 else 2**127):
            continue  # zeros' signs and overflow: test_fma_signed_zero_and_special_values
        with np.errstate(all="ignore"):
            got = float_bits(t, float_fma(t, a, b, c))
        want = _round_bf16(exact) if t == BF else int(np.asarray(_round_nearest_even(exact, np_type, bits_type)).view(bits_type))
        assert got == want, (t, a, b, c)
        checked += 1
    assert checked > 1000


def test_fma_f64_is_exact_then_rounded():
    fma = OneOp([f64, f64, f64], lambda x, y, z: FmaOp(F64, x, y, z, rnd=RN))
    a = np.float64(1 + 2.0**-30)
    # a*a - 1 - 2^-29 = 2^-60 exactly: lost by a plain multiply-add in float64
    assert fma(a, a, np.float64(-(1 + 2.0**-29))) == np.float64(2.0**-60)
    assert float(a) * float(a) - (1 + 2.0**-29) == 0.0


def test_fma_signed_zero_and_special_values():
    fma = OneOp([f32, f32, f32], lambda x, y, z: FmaOp(F32, x, y, z, rnd=RN))
    z, nz = np.float32(0.0), np.float32(-0.0)
    assert b32(fma(nz, np.float32(1), nz)) == 0x80000000  # -0 + -0
    assert b32(fma(nz, np.float32(1), z)) == 0  # -0 + +0
    assert b32(fma(np.float32(2), np.float32(3), np.float32(-6))) == 0  # exact cancellation: +0
    assert b32(fma(np.float32(np.inf), z, np.float32(1))) == 0x7FFFFFFF  # inf * 0: canonical NaN
    assert fma(np.float32(np.inf), np.float32(2), np.float32(1)) == np.inf
    assert b32(fma(f32b(0x7FC01234), np.float32(1), np.float32(1))) == 0x7FFFFFFF


def test_fma_half_types_round_once():
    fh = OneOp([f16, f16, f16], lambda x, y, z: FmaOp(F16, x, y, z, rnd=RN))
    a = np.float16(1 + 2.0**-6)
    # a*a = 1 + 2^-5 + 2^-12: a tie in f16 (ulp 2^-10 at 1... 2^-11 half) broken by c
    c = np.float16(2.0**-20)
    exact = Fraction(float(a)) ** 2 + Fraction(float(c))
    assert fh(a, a, c) == _round_nearest_even(exact, np.float16, np.uint16)
    fb = OneOp([bf16, bf16, bf16], lambda x, y, z: FmaOp(BF, x, y, z, rnd=RN))
    one = BF16(0x3F80)
    assert fb(one, one, one) == BF16(0x4000)  # 1 * 1 + 1 = 2


def test_fma_directed_rounding_is_refused():
    fma = OneOp([f32, f32, f32], lambda x, y, z: FmaOp(F32, x, y, z, rnd=RoundingMode.RZ))
    with pytest.raises(InterpretationError, match="only .rn is modelled"):
        fma(np.float32(1), np.float32(1), np.float32(1))


# endregion

# region sqrt, rcp, div (.rn: IEEE, exact)


def test_sqrt_rn_is_correctly_rounded():
    rng = np.random.default_rng(3)
    sq32 = unary(SqrtOp, F32, f32, rnd=RN)
    sq64 = unary(SqrtOp, F64, f64, rnd=RN)
    for v in rng.random(200) * 2.0 ** rng.integers(-100, 100, 200):
        x = np.float32(v)
        r = sq32(x)
        # r is the nearest f32 to sqrt(x): r^2 brackets x within half an ulp of r either side
        lo, hi = np.nextafter(r, np.float32(0)), np.nextafter(r, np.float32(np.inf))
        mid_lo = (Fraction(float(lo)) + Fraction(float(r))) / 2
        mid_hi = (Fraction(float(r)) + Fraction(float(hi))) / 2
        assert mid_lo**2 <= Fraction(float(x)) <= mid_hi**2
        assert sq64(np.float64(v)) == np.sqrt(np.float64(v))


def test_sqrt_special_values():
    sq = unary(SqrtOp, F32, f32, rnd=RN)
    assert b32(sq(np.float32(-0.0))) == 0x80000000
    assert b32(sq(np.float32(-1.0))) == 0x7FFFFFFF
    assert sq(np.float32(np.inf)) == np.inf
    sqd = unary(SqrtOp, F64, f64, rnd=RN)
    assert b64(sqd(np.float64(-1.0))) == 0xFFF8000000000000  # the f64 default NaN
    assert b64(sqd(f64b(0x7FF0000000001234))) == 0x7FF8000000001234  # NaN input: quieted
    ftz = unary(SqrtOp, F32, f32, rnd=RN, ftz=True)
    assert b32(ftz(f32b(0x80000001))) == 0x80000000  # -subnormal flushed to -0, sqrt(-0) = -0


def test_rcp_and_div_rn():
    rcp = unary(RcpOp, F32, f32, rnd=RN)
    assert rcp(np.float32(3)) == np.float32(1) / np.float32(3)
    assert rcp(np.float32(0.0)) == np.inf and rcp(np.float32(-0.0)) == -np.inf
    assert b32(rcp(np.float32(-np.inf))) == 0x80000000
    rcpd = unary(RcpOp, F64, f64, rnd=RN)
    assert rcpd(np.float64(3)) == 1 / 3
    div = OneOp([f32, f32], lambda a, b: FloatDivOp(F32, a, b, rnd=RN))
    assert div(np.float32(1), np.float32(3)) == np.float32(1) / np.float32(3)
    assert b32(div(np.float32(0), np.float32(0))) == 0x7FFFFFFF
    divd = OneOp([f64, f64], lambda a, b: FloatDivOp(F64, a, b, rnd=RN))
    assert divd(np.float64(2), np.float64(7)) == 2 / 7
    assert b64(divd(np.float64(0), np.float64(0))) == 0xFFF8000000000000
    assert b64(divd(np.float64(1), f64b(0x7FF0000000000005))) == 0x7FF8000000000005


def test_f64_ftz_and_rcp_approx_f64_are_not_modelled():
    with pytest.raises(InterpretationError, match="not modelled"):
        unary(RcpOp, F64, f64, approx=True, ftz=True)(np.float64(3))
    with pytest.raises(InterpretationError, match="not modelled"):
        unary(RcpOp, F64, f64, rnd=RN, ftz=True)(np.float64(3))


# endregion

# region .approx forms (within APPROX_TOLERANCE of the exact function)


@pytest.mark.parametrize(
    "cls, fn, kw",
    [
        (SqrtOp, math.sqrt, {"approx": True}),
        (RcpOp, lambda x: 1 / x, {"approx": True}),
        (Ex2Op, lambda x: 2.0**x, {"approx": True}),
    ],
)
def test_approx_ops_are_within_tolerance(cls: type, fn: Callable[[float], float], kw: dict):
    op = unary(cls, F32, f32, **kw)
    for x in (0.5, 1.0, 1.7, 3.0, 10.25, 100.0):
        got = float(op(np.float32(x)))
        assert abs(got - fn(x)) <= APPROX_TOLERANCE[cls.OPCODE] * abs(fn(x))


def test_lg2_and_ex2_special_values_and_absolute_error():
    lg2 = unary(Lg2Op, F32, f32, approx=True)
    for x in (0.5, 1.0, 1.0001, 2.0, 10.0, 1e30):
        exact = math.log2(np.float32(x))
        assert abs(float(lg2(np.float32(x))) - exact) <= APPROX_TOLERANCE["lg2"] + abs(exact) * 2.0**-24
    assert lg2(np.float32(0.0)) == -np.inf
    assert b32(lg2(np.float32(-1.0))) == 0x7FFFFFFF
    ex2 = unary(Ex2Op, F32, f32, approx=True)
    assert ex2(np.float32(-np.inf)) == 0.0 and ex2(np.float32(np.inf)) == np.inf
    assert ex2(np.float32(3)) == 8.0
    div = OneOp([f32, f32], lambda a, b: FloatDivOp(F32, a, b, full=True))
    assert abs(float(div(np.float32(1), np.float32(3))) - 1 / 3) <= APPROX_TOLERANCE["div"] / 3


def test_ex2_half_types():
    eh = unary(Ex2Op, F16, f16, approx=True)
    assert eh(np.float16(2)) == np.float16(4)
    eb = unary(Ex2Op, BF, bf16, approx=True, ftz=True)
    assert eb(BF16(0x3F80)) == BF16(0x4000)  # 2^1 = 2


# endregion

# region abs, neg (bit operations; integers wrap)


def test_abs_neg_float_bits():
    a32, n32 = unary(AbsOp, F32, f32), unary(NegOp, F32, f32)
    assert b32(a32(np.float32(-0.0))) == 0 and b32(n32(np.float32(0.0))) == 0x80000000
    assert b32(a32(f32b(0x80000001))) == 1  # subnormals kept without .ftz
    assert b32(unary(AbsOp, F32, f32, ftz=True)(f32b(0x80000001))) == 0  # flushed, then +0
    assert b32(unary(NegOp, F32, f32, ftz=True)(f32b(0x00000001))) == 0x80000000
    assert b32(a32(f32b(0xFFC01234))) == 0x7FC01234  # NaN: sign cleared (PTX: unspecified NaN)
    assert b64(unary(NegOp, F64, f64)(np.float64(2.5))) == b64(-2.5)
    assert float_bits(F16, unary(AbsOp, F16, f16)(np.float16(-3))) == 0x4200
    assert unary(NegOp, BF, bf16)(BF16(0x3F80)) == BF16(0xBF80)
    assert unary(AbsOp, BF, bf16)(BF16(0xBF80)) == BF16(0x3F80)


@pytest.mark.parametrize("t, ty, w", [(ArithType.S16, i16, 16), (ArithType.S32, i32, 32), (ArithType.S64, i64, 64)])
def test_abs_neg_integers_wrap(t: ArithType, ty: Attribute, w: int):
    lowest = -(1 << (w - 1))
    assert unary(AbsOp, t, ty)(lowest) == lowest
    assert unary(NegOp, t, ty)(lowest) == lowest
    assert unary(AbsOp, t, ty)(-5) == 5 and unary(NegOp, t, ty)(5) == -5
    assert unary(AbsOp, t, ty)((1 << w) - 1) == 1  # the bits of -1


# endregion

# region .pred logic


def test_pred_logic():
    for a in (False, True):
        assert OneOp([i1], lambda x: NotPredOp(x))(a) == (not a)
        for b in (False, True):
            assert OneOp([i1, i1], lambda x, y: AndPredOp(x, y))(a, b) == (a and b)
            assert OneOp([i1, i1], lambda x, y: OrPredOp(x, y))(a, b) == (a or b)
            assert OneOp([i1, i1], lambda x, y: XorPredOp(x, y))(a, b) == (a != b)


# endregion

# region Emitter helpers


def test_emitter_math_helpers_build_the_forms():
    """Each helper emits one op of the documented form; the kernel runs in the interpreter:
    selp(setp(gt, fma(a, b, c), div(a, b)) and not(setp(nan)), sqrt(rcp(abs(neg(a)))), ...)."""
    block = Block(arg_types=[f32, f32, f32, f64])
    ret = func.ReturnOp()
    block.add_op(ret)
    e = Emitter(InsertPoint.before(ret))
    a, b, c, d = block.args
    f = e.fma(F32, a, b, c)
    q = e.div(F32, a, b)
    s = e.sqrt(F32, e.rcp(F32, e.abs_(F32, e.neg(F32, a))))
    x = e.lg2(e.ex2(s))
    gt = e.setp(CmpOp.GT, SetpType.F32, f, q)
    notnan = e.not_pred(e.setp(CmpOp.NAN, SetpType.F32, a, b))
    both = e.and_pred(gt, notnan)
    either = e.or_pred(both, e.setp(CmpOp.LT, SetpType.F64, d, e.sqrt(F64, d)))
    r = e.selp(SelpType.F32, x, q, either)
    dd = e.fma(F64, d, e.div(F64, d, e.rcp(F64, d)), e.abs_(F64, d))
    ret.operands = [r, dd]
    names = [op.name for op in block.ops]
    assert names.count("ptx.fma") == 2 and "ptx.not.pred" in names and "ptx.selp" in names
    by_name = {op.name: op for op in block.ops}
    assert by_name["ptx.ex2"].ptx_mnemonic() == "ex2.approx.f32"
    assert by_name["ptx.lg2"].ptx_mnemonic() == "lg2.approx.f32"
    assert [op.ptx_mnemonic() for op in block.ops if op.name == "ptx.div.float"] == ["div.rn.f32", "div.rn.f64"]
    assert [op.ptx_mnemonic() for op in block.ops if op.name == "ptx.sqrt"] == ["sqrt.rn.f32", "sqrt.rn.f64"]
    fn = func.FuncOp("f", FunctionType.from_lists([f32, f32, f32, f64], [f32, f64]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    r1, r2 = make_interpreter(module).call_op("f", (np.float32(3), np.float32(2), np.float32(1), np.float64(4)))
    # fma = 7 > 1.5 and no NaN: x = lg2(ex2(sqrt(1/3))) ~ 0.57735
    assert abs(float(r1) - math.sqrt(1 / 3)) < 1e-5
    assert r2 == 4 * (4 / 0.25) + 4


# endregion
