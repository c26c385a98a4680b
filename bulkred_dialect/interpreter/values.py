"""Bit-exact scalar arithmetic as the GPU computes it (PTX ISA 9.7.1 integer,
9.7.3 floating point, 9.7.4 half precision).

Python values the interpreter carries for each IR type:

* ``f32`` -> ``numpy.float32``, ``f64`` -> ``numpy.float64``, ``f16`` -> ``numpy.float16``,
  ``bf16`` -> :class:`BF16` (its 16 bits; numpy has no bfloat16);
* integers (``i16``/``i32``/``i64``, ``index``) -> Python ``int``, sign-canonical for the width
  (the bits of an unsigned value are kept; ``0xffffffff : i32`` is ``-1``);
* ``vector<2xf32>`` (a packed ``.b64`` register) -> a ``(lo, hi)`` tuple of ``numpy.float32``.

Rounding is round-to-nearest-even for every operation (numpy's float32/float64 ops
round once per op; f16 goes through float32 and bf16 through float64, both exact or
innocuous double roundings). A NaN result of an f32/f16/bf16 add/sub/mul is the
canonical NaN of its type (the GPU propagates no payload); f64 propagates the last NaN
operand, quieted. ``min``/``max`` return one of their inputs bit for bit (all inputs
NaN: the canonical NaN, or for f64 the last one quieted). These rules were checked
against an H200 (sm_90) by ``tests/test_interpreter.py::test_interpreter_matches_the_gpu``;
the sm_100 instructions (``add.f32x2``, three-input ``max``/``min``) are modelled as
their scalar forms.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from bulkred_dialect.ops.ptx.arith import ArithType

# region Float formats


@dataclass(frozen=True)
class BF16:
    """A bfloat16 value, by its 16 bits."""

    bits: int

    def to_float32(self) -> np.float32:
        return np.uint32(self.bits << 16).view(np.float32)

    def __float__(self) -> float:
        return float(self.to_float32())


# The NaN each type's operations produce. f32, f16 and bf16 results are this canonical NaN
# whatever the inputs (PTX ISA 9.7.3; checked on an H200). f64 results propagate a NaN
# input instead (see _f64_nan_result) and only an invalid operation (inf - inf, 0 * inf)
# gives this default NaN.
CANONICAL_NAN_BITS: dict[ArithType, int] = {
    ArithType.F16: 0x7FFF,
    ArithType.BF16: 0x7FFF,
    ArithType.F32: 0x7FFFFFFF,
    ArithType.F64: 0xFFF8000000000000,
}
_F64_QUIET_BIT = 1 << 51

_NP_TYPE: dict[ArithType, Any] = {
    ArithType.F16: np.float16,
    ArithType.F32: np.float32,
    ArithType.F64: np.float64,
}
_NP_BITS: dict[ArithType, Any] = {
    ArithType.F16: np.uint16,
    ArithType.F32: np.uint32,
    ArithType.F64: np.uint64,
}


def float_from_bits(t: ArithType, bits: int) -> Any:
    """The value of type ``t`` whose bit pattern is ``bits``."""
    if t == ArithType.BF16:
        return BF16(bits & 0xFFFF)
    return _NP_BITS[t](bits).view(_NP_TYPE[t])


def float_bits(t: ArithType, v: Any) -> int:
    """The bit pattern of ``v`` as a value of type ``t``."""
    v = coerce_float(t, v)
    if t == ArithType.BF16:
        return v.bits
    return int(v.view(_NP_BITS[t]))


def canonical_nan(t: ArithType) -> Any:
    return float_from_bits(t, CANONICAL_NAN_BITS[t])


def _bf16_from_float64(x: float) -> BF16:
    """Round a float64 to bfloat16, to nearest even (8 significant bits, emin -126)."""
    if math.isnan(x):
        return BF16(CANONICAL_NAN_BITS[ArithType.BF16])
    if x == 0.0 or math.isinf(x):
        return BF16(int(np.float32(x).view(np.uint32)) >> 16)
    _, e = math.frexp(x)  # |x| = m * 2**e, 0.5 <= m < 1
    quantum = math.ldexp(1.0, max(e, -125) - 8)
    r = math.copysign(float(round(x / quantum)) * quantum, x)
    if abs(r) >= 2.0**128:
        r = math.copysign(math.inf, x)
    return BF16(int(np.float32(r).view(np.uint32)) >> 16)


def coerce_float(t: ArithType, v: Any) -> Any:
    """``v`` as the interpreter's value of float type ``t`` (exact for values already of
    that type; a Python float, e.g. from a constant, is rounded to nearest even)."""
    if t == ArithType.BF16:
        if isinstance(v, BF16):
            return v
        return _bf16_from_float64(float(v))
    np_type = _NP_TYPE[t]
    if isinstance(v, np_type):
        return v
    if isinstance(v, BF16):
        v = v.to_float32()
    return np_type(v)


def _wide(t: ArithType, v: Any) -> np.floating:
    """The value in the format the operation is computed in."""
    if t == ArithType.F16:
        return np.float32(v)
    if t == ArithType.BF16:
        return np.float64(v.to_float32())
    return v


def _narrow(t: ArithType, x: np.floating) -> Any:
    if x != x:  # NaN (np.isnan of a scalar costs ten times as much)
        return canonical_nan(t)
    if t == ArithType.F16:
        return np.float16(x)
    if t == ArithType.BF16:
        return _bf16_from_float64(float(x))
    return x


def is_nan(t: ArithType, v: Any) -> bool:
    if t == ArithType.BF16:
        return (v.bits & 0x7F80) == 0x7F80 and (v.bits & 0x7F) != 0
    return bool(v != v)  # NaN (np.isnan of a scalar costs ten times as much)


_FTZ_MASKS: dict[ArithType, tuple[int, int, int]] = {
    # exponent field, fraction field, sign bit
    ArithType.F32: (0x7F800000, 0x007FFFFF, 0x80000000),
    ArithType.F16: (0x7C00, 0x03FF, 0x8000),
    ArithType.BF16: (0x7F80, 0x007F, 0x8000),  # ex2.approx.ftz.bf16
}


def flush_subnormal(t: ArithType, v: Any) -> Any:
    """``.ftz`` (f32, f16; bf16 for ex2.approx.ftz.bf16): a subnormal becomes a zero of
    the same sign."""
    if t not in _FTZ_MASKS:
        raise ValueError(f"'.ftz' has no meaning for '.type' {t}")
    exponent, fraction, sign = _FTZ_MASKS[t]
    bits = float_bits(t, v)
    if bits & exponent == 0 and bits & fraction != 0:
        return float_from_bits(t, bits & sign)
    return v


def _f64_nan_result(*inputs: np.float64) -> np.float64 | None:
    """f64 NaN propagation as the GPU does it (observed on an H200 for ``op d, a, b``): the
    last NaN operand, quieted, payload and sign kept; None when no operand is NaN."""
    for v in reversed(inputs):
        if np.isnan(v):
            return float_from_bits(ArithType.F64, float_bits(ArithType.F64, v) | _F64_QUIET_BIT)
    return None


def float_binary(op: str, t: ArithType, a: Any, b: Any, *, ftz: bool = False) -> Any:
    """``add``/``sub``/``mul`` of type ``t``, rounded to nearest even.

    With ``ftz`` (f32, f16), subnormal inputs and results are flushed to sign-preserving zero.
    """
    a, b = coerce_float(t, a), coerce_float(t, b)
    if ftz:
        a, b = flush_subnormal(t, a), flush_subnormal(t, b)
    if t == ArithType.F32:
        return _f32_binary(op, a, b, ftz)
    if t == ArithType.F64 and (nan := _f64_nan_result(a, b)) is not None:
        return nan
    wa, wb = _wide(t, a), _wide(t, b)
    with np.errstate(all="ignore"):
        r = _narrow(t, _BINARY[op](wa, wb))
    if ftz:
        r = flush_subnormal(t, r)
    return r


_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
"""The float operations :func:`float_binary` takes (callers pass one of the three)."""

# The smallest float64 that rounds to float32 infinity: halfway between the largest
# float32, 2^128 - 2^104, and 2^128 (a tie, rounded to the even 2^128).
_F32_OVERFLOW = 2.0**128 - 2.0**103
_F32_CANONICAL_NAN = float_from_bits(ArithType.F32, CANONICAL_NAN_BITS[ArithType.F32])


def _f32_binary(op: str, a: np.float32, b: np.float32, ftz: bool) -> np.float32:
    """:func:`float_binary` of f32 in Python's float64: the sum, difference or product
    of two float32 in float64 rounded once more to float32 is the correctly rounded
    float32 result (float64 has more than 2 x 24 + 2 bits: the second rounding is
    innocuous; a product is even exact), with an overflow to infinity at
    ``_F32_OVERFLOW`` as the rounding gives it."""
    r = _BINARY[op](float(a), float(b))
    if r != r:
        return _F32_CANONICAL_NAN
    if abs(r) >= _F32_OVERFLOW:
        r = math.copysign(math.inf, r)
    result = np.float32(r)
    return flush_subnormal(ArithType.F32, result) if ftz else result


def _signbit(t: ArithType, v: Any) -> bool:
    if t == ArithType.BF16:
        return bool(v.bits & 0x8000)
    return math.copysign(1.0, v) < 0  # the sign bit (of a zero and a NaN too)


def float_minmax(
    op: str, t: ArithType, values: tuple[Any, ...], *, ftz: bool = False, nan: bool = False
) -> Any:
    """PTX ``max``/``min`` over two or three inputs, returning one input bit for bit.

    A NaN input is ignored (the result is the max/min of the others); all NaN gives the
    canonical NaN (f64: the last NaN input, quieted); with ``nan`` (``.NaN``) any NaN
    input gives the canonical NaN.
    ``-0.0`` is less than ``+0.0``. ``ftz`` flushes subnormal inputs first.
    """
    vs = [coerce_float(t, v) for v in values]
    if ftz:
        vs = [flush_subnormal(t, v) for v in vs]
    numbers = [v for v in vs if not is_nan(t, v)]
    if not numbers or (nan and len(numbers) != len(vs)):
        if t == ArithType.F64:
            return _f64_nan_result(*vs)
        return canonical_nan(t)
    best = numbers[0]
    for v in numbers[1:]:
        wv, wb = _wide(t, v), _wide(t, best)
        if wv == wb:
            # Only zeros of opposite sign compare equal yet differ; +0.0 > -0.0.
            if op == "max" and _signbit(t, best) and not _signbit(t, v):
                best = v
            elif op == "min" and not _signbit(t, best) and _signbit(t, v):
                best = v
        elif (wv > wb) == (op == "max"):
            best = v
    return best



# region Math of fused reductions (abs, neg, sqrt, rcp, ex2, lg2, fma, div)
#
# Exact where PTX defines the result exactly: abs/neg (a sign-bit operation; PTX leaves
# the NaN of a NaN input unspecified, here the input with its sign bit cleared / flipped),
# and the IEEE-rounded .rn forms of sqrt, rcp, div and fma (one rounding to nearest even;
# NaN results as for add: f32/f16/bf16 the canonical NaN, f64 the last NaN input quieted
# or, for an invalid operation, the default NaN). The .approx forms (and div.full) return
# the correctly rounded value of the exact function instead of the GPU's approximation:
# APPROX_TOLERANCE gives how far the GPU's result may be from it.

# How far a GPU's .approx / .full f32 result may be from the interpreter's correctly
# rounded one, for tests that compare them: a relative error, except for lg2 an absolute
# one (plus the rounding of the result to f32, half an ulp). The PTX ISA bounds the error
# of each form in its section (a few ulp for sqrt/rcp/div/ex2, div.full 2 ulp; lg2 an
# absolute error near 2^-22); these bounds are looser, not the ISA's figures.
APPROX_TOLERANCE: dict[str, float] = {
    "sqrt": 2.0**-21,
    "rcp": 2.0**-21,
    "div": 2.0**-21,
    "ex2": 2.0**-20,
    "lg2": 2.0**-20,
}

_SIGN_BIT: dict[ArithType, int] = {ArithType.F16: 0x8000, ArithType.BF16: 0x8000, ArithType.F32: 1 << 31, ArithType.F64: 1 << 63}


def float_abs_neg(op: str, t: ArithType, a: Any, *, ftz: bool = False) -> Any:
    """``abs``/``neg`` of float type ``t``: the sign bit cleared / flipped (after ``.ftz``
    flushes a subnormal input to a zero of its sign)."""
    a = coerce_float(t, a)
    if ftz:
        a = flush_subnormal(t, a)
    bits = float_bits(t, a)
    bits = bits & ~_SIGN_BIT[t] if op == "abs" else bits ^ _SIGN_BIT[t]
    return float_from_bits(t, bits)


def int_abs_neg(op: str, t: ArithType, a: Any) -> int:
    """``abs``/``neg`` of a signed integer type, wrapping (the most negative value stays)."""
    w = INT_WIDTH[t]
    x = to_signed(to_unsigned(int(a), w), w)
    return to_signed(abs(x) if op == "abs" else -x, w)


def _nan_result(t: ArithType, inputs: tuple[Any, ...]) -> Any | None:
    """The NaN a NaN input gives (f64: the last NaN input quieted), None without one."""
    if t == ArithType.F64:
        return _f64_nan_result(*inputs)
    if any(is_nan(t, v) for v in inputs):
        return canonical_nan(t)
    return None


def float_math(op: str, t: ArithType, args: tuple[Any, ...], *, ftz: bool = False) -> Any:
    """``sqrt``/``rcp``/``ex2``/``lg2`` (one input) and ``div`` (two) of type ``t``, the
    result rounded once to nearest even from the exact value (numpy's correctly rounded
    sqrt and division; ex2 and lg2 in float64, then rounded to ``t``). ``ftz`` flushes
    subnormal inputs and results."""
    vs = tuple(coerce_float(t, v) for v in args)
    if ftz:
        vs = tuple(flush_subnormal(t, v) for v in vs)
    if (nan := _nan_result(t, vs)) is not None:
        return nan
    wide = tuple(np.float64(v.to_float32()) if t == ArithType.BF16 else _wide(t, v) for v in vs)
    with np.errstate(all="ignore"):
        if op == "sqrt":
            r = np.sqrt(wide[0])
        elif op == "rcp":
            r = wide[0].dtype.type(1) / wide[0]
        elif op == "div":
            r = wide[0] / wide[1]
        elif op == "ex2":
            r = np.exp2(np.float64(wide[0]))
        elif op == "lg2":
            r = np.log2(np.float64(wide[0]))
        else:  # pragma: no cover - callers pass one of the above
            raise ValueError(f"unknown float operation {op}")
    if np.isnan(r):
        r = canonical_nan(t)  # an invalid operation: the default NaN of the type
    elif t == ArithType.BF16:
        r = _bf16_from_float64(float(r))
    else:
        r = _NP_TYPE[t](r)
    if ftz:
        r = flush_subnormal(t, r)
    return r


def _round_to_odd(x: Fraction) -> np.float64:
    """``x`` (finite, within float64's range) in float64 rounded to odd: exact, or else the
    one of its two float64 neighbours whose last bit is 1. Rounding that once more to a
    format of at most 51 significant bits gives ``x`` correctly rounded."""
    r = np.float64(float(x))  # correctly rounded (int / int)
    if Fraction(float(r)) == x:
        return r
    if Fraction(float(r)) > x:
        lo, hi = np.nextafter(r, -np.inf), r
    else:
        lo, hi = r, np.nextafter(r, np.inf)
    return lo if int(lo.view(np.uint64)) & 1 else hi


def float_fma(t: ArithType, a: Any, b: Any, c: Any, *, ftz: bool = False) -> Any:
    """``fma.rn`` of type ``t``: ``a * b + c`` computed exactly, rounded once to nearest
    even (f64 directly from the exact rational; f32/f16/bf16 through a float64 rounded to
    odd, which rounds correctly once more). An exact zero is -0.0 only when ``a * b`` and
    ``c`` are both negative zeros. ``ftz`` flushes subnormal inputs and the result."""
    vs = tuple(coerce_float(t, v) for v in (a, b, c))
    if ftz:
        vs = tuple(flush_subnormal(t, v) for v in vs)
    if (nan := _nan_result(t, vs)) is not None:
        return nan
    x, y, z = (float(v) for v in vs)
    if not all(math.isfinite(v) for v in (x, y, z)):
        with np.errstate(all="ignore"):
            r = np.float64(x) * np.float64(y) + np.float64(z)  # inf arithmetic is exact
        return canonical_nan(t) if np.isnan(r) else coerce_float(t, float(r))
    if t != ArithType.F64:
        return _fma_narrow(t, x, y, z, ftz)
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:
        product_negative = (x == 0 or y == 0) and (math.copysign(1, x) * math.copysign(1, y) < 0)
        r = -0.0 if (product_negative and z == 0 and math.copysign(1, z) < 0) else 0.0
        return coerce_float(t, r)
    try:
        r = float(exact)  # f64 (ftz is refused for f64 by _math)
    except OverflowError:
        r = math.inf if exact > 0 else -math.inf  # (float(exact) would overflow again)
    result = np.float64(r)
    if ftz:
        result = flush_subnormal(t, result)
    return result


def _fma_narrow(t: ArithType, x: float, y: float, z: float, ftz: bool) -> Any:
    """:func:`float_fma` of f32, f16 or bf16 inputs (finite, as float64) without
    rationals: ``x * y`` is exact in float64 (at most 2 x 24 significant bits, and far
    from float64's underflow and overflow), and Knuth's TwoSum gives ``s + e == x * y + z``
    exactly; the float64 rounded to odd of that sum is then ``s`` when ``e`` is 0, else
    whichever of ``s`` and its neighbour towards ``e`` has its last bit 1 (the exact sum
    lies strictly between them). Rounded once more to ``t``, as the rational path does."""
    p = x * y
    s = p + z
    b = s - z
    e = (p - b) + (z - (s - b))
    if s == 0 and e == 0:
        product_negative = (x == 0 or y == 0) and (math.copysign(1, x) * math.copysign(1, y) < 0)
        r = -0.0 if (product_negative and z == 0 and math.copysign(1, z) < 0) else 0.0
        return coerce_float(t, r)
    odd = np.float64(s)
    if e != 0 and not int(odd.view(np.uint64)) & 1:
        odd = np.float64(math.nextafter(s, math.copysign(math.inf, e)))
    result = np.float16(odd) if t == ArithType.F16 else coerce_float(t, odd)
    if ftz:
        result = flush_subnormal(t, result)
    return result


# endregion

# region Integers

INT_WIDTH: dict[ArithType, int] = {
    ArithType.U16: 16,
    ArithType.S16: 16,
    ArithType.B16: 16,
    ArithType.U32: 32,
    ArithType.S32: 32,
    ArithType.B32: 32,
    ArithType.U64: 64,
    ArithType.S64: 64,
    ArithType.B64: 64,
}
SIGNED_TYPES = (ArithType.S16, ArithType.S32, ArithType.S64)


def to_signed(x: int, width: int) -> int:
    x &= (1 << width) - 1
    return x - (1 << width) if x >> (width - 1) else x


def to_unsigned(x: int, width: int) -> int:
    return int(x) & ((1 << width) - 1)


def int_binary(op: str, t: ArithType, a: Any, b: Any) -> int:
    """Integer ``add``/``sub``/``mul.lo``/``min``/``max``/``and``/``or``/``xor``/``shl``/``shr``
    of type ``t``, wrapping; the result is sign-canonical for the width."""
    w = INT_WIDTH[t]
    signed = t in SIGNED_TYPES
    ua, ub = to_unsigned(int(a), w), to_unsigned(int(b), w)
    if op == "add":
        r = ua + ub
    elif op == "sub":
        r = ua - ub
    elif op == "mul.lo":
        r = ua * ub
    elif op in ("min", "max"):
        ka, kb = (to_signed(ua, w), to_signed(ub, w)) if signed else (ua, ub)
        r = (max if op == "max" else min)(ka, kb)
    elif op == "and":
        r = ua & ub
    elif op == "or":
        r = ua | ub
    elif op == "xor":
        r = ua ^ ub
    elif op in ("shl", "shr"):
        # The shift amount is a u32; amounts above the width are clamped to it.
        amount = min(to_unsigned(int(b), 32), w)
        if op == "shl":
            r = ua << amount
        elif signed:
            r = to_signed(ua, w) >> amount
        else:
            r = ua >> amount
    else:  # pragma: no cover - callers pass one of the above
        raise ValueError(f"unknown integer operation {op}")
    return to_signed(r, w)


# endregion
