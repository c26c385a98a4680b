"""float64 ``sin``/``cos`` and ``atan2`` from FMA, one division and integer operations
(PTX has ``sin.approx``/``cos.approx`` in float32 only, about 2^-21 absolute, and no
``atan2``): what the fused lowering's complex ``logsumexp`` needs (``passes/fused.py``,
:meth:`Reducer.absorb_pair <bulkred_dialect.passes.fused.Reducer.absorb_pair>`): each
element's ``exp(z - shift) = e^(re - shift) (cos im + i sin im)`` and the result's
``log(s) = log|s| + i atan2(im s, re s)``. A float32 reduction computes them in float64
and rounds once (the float32 result within half an ulp of the float64 one).

Every op is a ptx op the CPU interpreter runs bit for bit (``fma.rn.f64``,
``add/sub/mul/div.rn.f64``, ``mov.b64`` of the two halves, ``and.b32``, ``setp``/``selp``,
``abs``/``neg``/``min``/``max`` of f64), as ``passes/f64_math.py``'s ``exp`` and ``log``.
No branch.

**sin(x), cos(x)** (fdlibm's ``k_sin.c``/``k_cos.c`` kernels on a Cody-Waite reduction):

1. ``k = rint(x 2/pi)`` by ``fma(x, 2/pi, 1.5 * 2^52)`` (``k`` in the low word, as
   ``exp``'s);
2. ``r = x - k pi/2`` with pi/2 in three doubles (``PIO2_1 + PIO2_2 + PIO2_3``, 159
   bits), each step an ``fma``: the first is exact while ``|k| < 2^20``, so ``r`` is
   within about 1 ulp for ``|x| < 2^20 pi/2`` (1.6e6); beyond it the error grows with
   ``|x|`` (no Payne-Hanek reduction) and above 2^51 the quadrant is lost;
3. ``sin(r) = r + r^3 (S1 + r^2 (S2 + ... + r^2 S6))``,
   ``cos(r) = (1 - r^2/2) + r^4 (C1 + ... + r^2 C6)`` with fdlibm's coefficients
   (|r| <= pi/4, below 1 ulp);
4. the quadrant ``k mod 4`` swaps them and sets the signs; inf and NaN give NaN.

**atan2(y, x)** (fdlibm's ``s_atan.c`` kernel): ``a = min(|x|, |y|) / max(|x|, |y|)`` in
[0, 1], ``atan(a)`` about 0 (``a < 7/16``), 0.5 (``a < 11/16``) or 1 from its
argument-reduced form ``atan(c) + atan((a - c) / (1 + c a))`` and fdlibm's degree-11
odd polynomial, then ``pi/2 - .`` where ``|y| > |x|``, ``pi - .`` where ``x < 0``, and the
sign of ``y``: within about 2 ulp. ``atan2(0, 0)`` is 0 (``pi`` for ``x = -0`` is not
kept: both zeros give 0), two infinities ``pi/4`` (or ``3 pi/4``), a NaN NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.arith import AbsOp, AddOp, AndOp, ArithType, FloatDivOp, MaxOp, MinOp, NegOp
from bulkred_dialect.ops.ptx.control import CmpOp, SetpOp, SetpType
from bulkred_dialect.passes.f64_math import F64, RN, SHIFTER, _add, _c, _fma, _halves, _mul, _selp, _setp, _sub

if TYPE_CHECKING:
    from bulkred_dialect.passes.emitter import Emitter

# region Constants

TWO_OVER_PI = float.fromhex("0x1.45f306dc9c883p-1")  # 2/pi rounded
# pi/2 = PIO2_1 + PIO2_2 + PIO2_3 (each the rest rounded to a double)
PIO2_1 = float.fromhex("0x1.921fb54442d18p+0")
PIO2_2 = float.fromhex("0x1.1a62633145c07p-54")
PIO2_3 = float.fromhex("-0x1.f1976b7ed8fbcp-110")
PI = float.fromhex("0x1.921fb54442d18p+1")
PI_LO = float.fromhex("0x1.1a62633145c07p-53")  # pi - PI
# fdlibm k_sin.c: sin(r) = r + r^3 (S1 + z (S2 + z (S3 + z (S4 + z (S5 + z S6))))), z = r^2
SIN_POLY = (
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
)
# fdlibm k_cos.c: cos(r) = 1 - z/2 + z^2 (C1 + z (C2 + ... + z C6))
COS_POLY = (
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
)
# fdlibm s_atan.c: atan(t) = t - t (s1 + s2), s1 = z (aT0 + w (aT2 + ...)), s2 = w (aT1 + ...)
ATAN_POLY = (
    3.33333333333329318027e-01,
    -1.99999999998764832476e-01,
    1.42857142725034663711e-01,
    -1.11111104054623557880e-01,
    9.09088713343650656196e-02,
    -7.69187620504482999495e-02,
    6.66107313738753120669e-02,
    -5.83357013379057348645e-02,
    4.97687799461593236017e-02,
    -3.65315727442169155270e-02,
    1.62858201153657823623e-02,
)
ATAN_HALF = (4.63647609000806093515e-01, 2.26987774529616870924e-17)  # atan(0.5): hi, lo
ATAN_ONE = (7.85398163397448278999e-01, 3.06161699786838301793e-17)  # atan(1) = pi/4: hi, lo

# endregion


def _poly(e: Emitter, z: SSAValue, coefs) -> SSAValue:
    """``c0 + z (c1 + z (c2 + ...))`` by Horner's rule."""
    p = _c(e, coefs[-1])
    for c in reversed(coefs[:-1]):
        p = _fma(e, p, z, _c(e, c))
    return p


def sincos(e: Emitter, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``(sin(x), cos(x))`` of an ``f64`` (the module docstring gives the method)."""
    shifter = _c(e, SHIFTER)
    big = _fma(e, x, _c(e, TWO_OVER_PI), shifter)  # 1.5 * 2^52 + rint(x 2/pi)
    k, _ = _halves(e, big)
    kf = _sub(e, big, shifter)
    nk = e.value(NegOp(F64, kf))
    r = _fma(e, nk, _c(e, PIO2_1), x)
    r = _fma(e, nk, _c(e, PIO2_2), r)
    r = _fma(e, nk, _c(e, PIO2_3), r)
    z = _mul(e, r, r)
    s = _fma(e, _mul(e, z, r), _poly(e, z, SIN_POLY), r)  # r + r^3 P(z)
    hz = _mul(e, z, _c(e, 0.5))
    w = _sub(e, _c(e, 1.0), hz)
    c = _add(e, w, _fma(e, _mul(e, z, z), _poly(e, z, COS_POLY), _sub(e, _sub(e, _c(e, 1.0), w), hz)))
    odd = _bit(e, k, 1)
    sin_, cos_ = _selp(e, c, s, odd), _selp(e, s, c, odd)  # quadrants 1, 3: sin is cos(r), cos is sin(r)
    # sin < 0 in quadrants 2, 3; cos < 0 in quadrants 1, 2 (k + 1 has bit 1)
    sin_ = _selp(e, e.value(NegOp(F64, sin_)), sin_, _bit(e, k, 2))
    cos_ = _selp(e, e.value(NegOp(F64, cos_)), cos_, _bit(e, e.value(AddOp(ArithType.S32, k, e.const(1, i32))), 2))
    nan = _setp(e, CmpOp.NAN, r, r)  # inf or NaN: r is NaN, the selects above keep it
    return _selp(e, r, sin_, nan), _selp(e, r, cos_, nan)


def _bit(e: Emitter, k: SSAValue, bit: int) -> SSAValue:
    """Whether ``k & bit`` is nonzero (a predicate)."""
    masked = e.value(AndOp(ArithType.B32, k, e.const(bit, i32)))
    return e.value(SetpOp(CmpOp.NE, SetpType.B32, masked, e.const(0, i32)))


def atan2(e: Emitter, y: SSAValue, x: SSAValue) -> SSAValue:
    """``atan2(y, x)`` of two ``f64`` (the module docstring gives the method)."""
    ax, ay = e.value(AbsOp(F64, x)), e.value(AbsOp(F64, y))
    lo, hi = e.value(MinOp(F64, ax, ay)), e.value(MaxOp(F64, ax, ay))
    a = e.value(FloatDivOp(F64, lo, hi, rnd=RN))
    zero, one = _c(e, 0.0), _c(e, 1.0)
    a = _selp(e, zero, a, _setp(e, CmpOp.EQ, hi, zero))  # 0 / 0: atan2(0, 0) = 0
    both_inf = _setp(e, CmpOp.EQ, lo, _c(e, float("inf")))
    a = _selp(e, one, a, both_inf)  # inf / inf: pi/4
    nan = e.value(SetpOp(CmpOp.NAN, SetpType.F64, _add(e, x, y), _add(e, x, y)))
    # reduce a in [0, 1] about c = 0, 0.5 or 1: t = (a - c) / (1 + c a)
    mid = _setp(e, CmpOp.GE, a, _c(e, 7 / 16))
    top = _setp(e, CmpOp.GE, a, _c(e, 11 / 16))
    c = _selp(e, one, _selp(e, _c(e, 0.5), zero, mid), top)
    t = e.value(FloatDivOp(F64, _sub(e, a, c), _fma(e, c, a, one), rnd=RN))
    base_hi = _selp(e, _c(e, ATAN_ONE[0]), _selp(e, _c(e, ATAN_HALF[0]), zero, mid), top)
    base_lo = _selp(e, _c(e, ATAN_ONE[1]), _selp(e, _c(e, ATAN_HALF[1]), zero, mid), top)
    z = _mul(e, t, t)
    w = _mul(e, z, z)
    s1 = _mul(e, z, _poly(e, w, ATAN_POLY[0::2]))
    s2 = _mul(e, w, _poly(e, w, ATAN_POLY[1::2]))
    # atan(a) = base_hi - ((t (s1 + s2) - base_lo) - t)
    at = _sub(e, base_hi, _sub(e, _sub(e, _mul(e, t, _add(e, s1, s2)), base_lo), t))
    # |y| > |x|: pi/2 - atan(a); x < 0: pi - that; y < 0: negated
    half_pi = _sub(e, _c(e, PIO2_1), _sub(e, at, _c(e, PIO2_2)))
    at = _selp(e, half_pi, at, _setp(e, CmpOp.GT, ay, ax))
    back = _sub(e, _c(e, PI), _sub(e, at, _c(e, PI_LO)))
    at = _selp(e, back, at, _setp(e, CmpOp.LT, x, zero))
    at = _selp(e, e.value(NegOp(F64, at)), at, _setp(e, CmpOp.LT, y, zero))
    return _selp(e, _add(e, x, y), at, nan)


__all__ = ["atan2", "sincos"]
