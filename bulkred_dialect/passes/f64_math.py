"""float64 ``exp``, ``log`` and ``pow`` from FMA and integer operations, as libdevice's
``__nv_exp`` and ``__nv_log`` build them (PTX has ``ex2``/``lg2`` in float32 only): what the
fused lowering (``passes/fused.py``) uses where the accumulator is float64 (logsumexp's
``exp(x - shift)`` and final ``log``, the ``pow`` maps ``|x| ** p = exp(p * log|x|)`` of
p-norms, ``log``, ``exp_sub``), through :meth:`Emitter.exp_f64
<bulkred_dialect.passes.emitter.Emitter.exp_f64>`, ``log_f64`` and ``pow_f64``.

Every op is a ptx op the CPU interpreter runs bit for bit (``fma.rn.f64``,
``add/sub/mul.rn.f64``, ``div.rn.f64``, ``mov.b64`` of the two 32-bit halves,
``add/sub/shl/shr/and`` of 32 bits, ``cvt.rn.f64.s32``, ``setp``/``selp``), so the
interpreter gives exactly the GPU's result (checked on an H100: 2000 inputs of each
routine, bit for bit). No branch: the special values are selected. Errors below are
against the exact value, the largest measured over 75000 inputs of exp and of log and
30000 of pow (tests/test_f64_math.py checks a seeded part of them).

**exp(x)**, 0.84 ulp (the bound: half an ulp for the last rounding, about 0.2 for the
rounding of ``t`` and 0.2 for the polynomial's last step):

1. clamp ``x`` to [-746, 710] by ``setp``/``selp`` (a NaN stays NaN, unlike ``min``/``max``);
   exp(-746) rounds to 0 and exp(710) overflows, so the clamp changes no result;
2. ``k = rint(x / ln2)`` by ``fma(x, log2(e), 1.5 * 2^52)``: the low 32 bits of the sum are
   ``k`` (a two's complement int), the sum less 1.5 * 2^52 is ``k`` as a double;
3. ``t = x - k ln2`` (Cody-Waite, with FMA): ``fma(k, -LN2_HI, x)`` is exact (``LN2_HI`` is
   ln2 rounded to 53 bits, ``|t| <= ln2/2``), then ``fma(k, -LN2_LO, .)``;
4. ``exp(t) = 1 + t + t^2/2 + t^3 P(t)``, ``P`` of degree 9 (:data:`EXP_POLY`, the
   interpolant of ``(exp(t) - 1 - t - t^2/2) / t^3`` at the 10 Chebyshev points of
   [-1.0005 ln2/2, 1.0005 ln2/2], rounded to doubles: relative error below 1e-18), by
   Horner's rule in 12 ``fma.rn.f64``;
5. times ``2^k`` in two steps, ``2^(k - h)`` then ``2^h`` with ``h = k >> 1``, each power
   built by ``mov.b64 {0, (e + 1023) << 20}``: the first product is exact, the second
   rounds once, so a subnormal result (down to exp(-745.13) = 2^-1074) is correctly
   scaled and a result above the largest double (x > 709.78) is +inf. +inf gives +inf,
   -inf gives +0, NaN gives NaN (``NaN * 2^k``).

**log(x)**, 0.75 ulp, fdlibm's ``e_log.c`` (musl's form) with FMA (fdlibm's bound: 1 ulp):

1. a subnormal ``x`` (``x < 2^-1022``) is scaled by 2^54 (its exponent less 54);
2. the high word plus ``0x3ff00000 - 0x3fe6a09e`` splits ``x = 2^k m`` with ``m`` in
   [sqrt(2)/2, sqrt(2)) (integer ``add``, ``shr.u32 20``, ``and 0xfffff``, ``mov.b64``);
3. ``f = m - 1`` (exact), ``s = f / (2 + f)`` (``div.rn.f64``), ``z = s^2``,
   ``R = z (Lg1 + z (Lg2 + ... + z Lg7))`` (fdlibm's Remez coefficients :data:`LOG_POLY`),
   ``hfsq = f^2 / 2``;
4. ``log(x) = k LN2_HI + (f - (hfsq - (s (hfsq + R) + k LN2_LO)))`` with fdlibm's split of
   ln2 (``LN2_HI`` has 21 trailing zero bits, so ``k LN2_HI`` is exact);
5. selected at the end: ``x = +-0`` gives -inf, ``x < 0`` (and -inf) NaN, +inf +inf, NaN
   itself.

**pow(x, p)** (``x >= 0``, ``p`` a constant), 0.95 ulp for p = 3, 1/3, 2.5, -1.5, 7, 0.1:
``exp(p log(x))`` with ``log(x)`` as ``hi + lo`` (:func:`log_ext`: Fast2Sum of the last two
additions) and ``p * hi`` split by ``fma`` into its rounded value and error, which
:func:`exp` takes as a tail of its reduced argument. A plain ``exp(p * log(x))`` is off by
up to ``|p log(x)| 2^-53`` relative: hundreds of ulp where ``x ** p`` nears the ends of the
double range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import f64, i32
from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.arith import (
    AddOp,
    AndOp,
    ArithType,
    FloatDivOp,
    FmaOp,
    MulOp,
    PackB32x2Op,
    RoundingMode,
    ShlOp,
    ShrOp,
    SubOp,
    UnpackB32x2Op,
)
from bulkred_dialect.ops.ptx.control import (
    CmpOp,
    CvtOp,
    CvtRounding,
    CvtType,
    SelpOp,
    SelpType,
    SetpOp,
    SetpType,
)

if TYPE_CHECKING:
    from bulkred_dialect.passes.emitter import Emitter

F64 = ArithType.F64
RN = RoundingMode.RN

# region Constants

LOG2E = float.fromhex("0x1.71547652b82fep+0")  # 1.4426950408889634, log2(e) rounded
SHIFTER = float.fromhex("0x1.8p+52")  # 1.5 * 2^52: adding it rounds to an integer, in the low word
# ln2 = LN2_HI + LN2_LO (exp): LN2_HI is ln2 rounded to a double, LN2_LO the rest rounded
EXP_LN2_HI = float.fromhex("0x1.62e42fefa39efp-1")  # 6.9314718055994529e-01
EXP_LN2_LO = float.fromhex("0x1.abc9e3b39803fp-56")  # 2.3190468138462996e-17
EXP_MIN, EXP_MAX = -746.0, 710.0  # exp rounds to 0 below EXP_MIN and overflows above EXP_MAX
# exp(t) = 1 + t + t^2/2 + t^3 (c3 + c4 t + ... + c12 t^9): c3 .. c12
EXP_POLY = tuple(
    float.fromhex(h)
    for h in (
        "0x1.5555555555556p-3",  # 1.6666666666666669e-01
        "0x1.5555555555555p-5",  # 4.1666666666666664e-02
        "0x1.11111111109adp-7",  # 8.3333333333330051e-03
        "0x1.6c16c16c167dep-10",  # 1.3888888888886545e-03
        "0x1.a01a01a7c8d47p-13",  # 1.9841269863105968e-04
        "0x1.a01a01a47db6fp-16",  # 2.4801587317181886e-05
        "0x1.71de0d9c145d0p-19",  # 2.7557268378684192e-06
        "0x1.27e4e1ea0f53ap-22",  # 2.7557282911482680e-07
        "0x1.af38d53857513p-26",  # 2.5100424157005067e-08
        "0x1.1f66f85dfa20bp-29",  # 2.0911264239196087e-09
    )
)

# fdlibm e_log.c: ln2 = LN2_HI + LN2_LO with 32 significant bits in LN2_HI (k * LN2_HI is
# exact for |k| < 2^21), and Lg1 .. Lg7 (a Remez fit of (log((1+s)/(1-s)) - 2s) / s
# in s^2, |s| <= 0.1716).
LOG_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")  # 6.93147180369123816490e-01, 3fe62e42 fee00000
LOG_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")  # 1.90821492927058770002e-10, 3dea39ef 35793c76
LOG_POLY = tuple(
    float.fromhex(h)
    for h in (
        "0x1.5555555555593p-1",  # Lg1 6.666666666666735130e-01, 3FE55555 55555593
        "0x1.999999997fa04p-2",  # Lg2 3.999999999940941908e-01, 3FD99999 9997FA04
        "0x1.2492494229359p-2",  # Lg3 2.857142874366239149e-01, 3FD24924 94229359
        "0x1.c71c51d8e78afp-3",  # Lg4 2.222219843214978396e-01, 3FCC71C5 1D8E78AF
        "0x1.7466496cb03dep-3",  # Lg5 1.818357216161805012e-01, 3FC74664 96CB03DE
        "0x1.39a09d078c69fp-3",  # Lg6 1.531383769920937332e-01, 3FC39A09 D078C69F
        "0x1.2f112df3e5244p-3",  # Lg7 1.479819860511658591e-01, 3FC2F112 DF3E5244
    )
)
TWO54 = float.fromhex("0x1p+54")
MIN_NORMAL = float.fromhex("0x1p-1022")
# the high word of sqrt(2)/2 (0x3fe6a09e...): x's high word plus 0x3ff00000 - SQRT_HALF_HI
# carries into the exponent exactly when the mantissa is at least sqrt(2)
SQRT_HALF_HI = 0x3FE6A09E

# endregion

# region Helpers


def _c(e: Emitter, v: float) -> SSAValue:
    return e.const(v, f64)


def _fma(e: Emitter, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    return e.value(FmaOp(F64, a, b, c, rnd=RN))


def _mul(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(MulOp(F64, a, b, rnd=RN))


def _add(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(AddOp(F64, a, b, rnd=RN))


def _sub(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(SubOp(F64, a, b, rnd=RN))


def _setp(e: Emitter, cmp: CmpOp, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(SetpOp(cmp, SetpType.F64, a, b))


def _selp(e: Emitter, a: SSAValue, b: SSAValue, pred: SSAValue) -> SSAValue:
    return e.value(SelpOp(SelpType.F64 if a.type == f64 else SelpType.S32, a, b, pred))


def _add_s32(e: Emitter, a: SSAValue, b: SSAValue | int) -> SSAValue:
    return e.value(AddOp(ArithType.S32, a, e.const(b, i32) if isinstance(b, int) else b))


def _halves(e: Emitter, v: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``mov.b64 {lo, hi}, v``: the low and high 32 bits of a double."""
    op = e.emit(UnpackB32x2Op(v))
    return op.results[0], op.results[1]


def _join(e: Emitter, lo: SSAValue, hi: SSAValue) -> SSAValue:
    """``mov.b64 d, {lo, hi}``: the double of two 32-bit halves."""
    return e.value(PackB32x2Op(lo, hi, f64))


def _pow2(e: Emitter, n: SSAValue, zero: SSAValue) -> SSAValue:
    """``2^n`` for ``-1022 <= n <= 1023`` (an ``i32``): the exponent field ``n + 1023``."""
    hi = e.value(ShlOp(ArithType.B32, _add_s32(e, n, 1023), e.const(20)))
    return _join(e, zero, hi)


# endregion


def exp(e: Emitter, x: SSAValue, tail: SSAValue | None = None) -> SSAValue:
    """``exp(x)`` of an ``f64`` (the module docstring gives the method); with ``tail`` (a
    finite ``f64`` far below ``ulp(x)``), ``exp(x + tail)``: ``tail`` joins the reduced
    argument."""
    top, bottom = _c(e, EXP_MAX), _c(e, EXP_MIN)
    x = _selp(e, top, x, _setp(e, CmpOp.GT, x, top))
    x = _selp(e, bottom, x, _setp(e, CmpOp.LT, x, bottom))
    shifter = _c(e, SHIFTER)
    big = _fma(e, x, _c(e, LOG2E), shifter)  # 1.5 * 2^52 + rint(x log2(e))
    k, _ = _halves(e, big)
    kf = _sub(e, big, shifter)
    t = _fma(e, kf, _c(e, -EXP_LN2_HI), x)
    t = _fma(e, kf, _c(e, -EXP_LN2_LO), t)
    if tail is not None:
        t = _add(e, t, tail)
    one = _c(e, 1.0)
    p = _c(e, EXP_POLY[-1])
    for c in (*reversed(EXP_POLY[:-1]), 0.5):
        p = _fma(e, p, t, _c(e, c))
    p = _fma(e, _fma(e, p, t, one), t, one)
    half = e.value(ShrOp(ArithType.S32, k, e.const(1)))  # floor(k / 2)
    zero = e.const(0, i32)
    scaled = _mul(e, p, _pow2(e, e.value(SubOp(ArithType.S32, k, half)), zero))
    return _mul(e, scaled, _pow2(e, half, zero))


def log(e: Emitter, x: SSAValue) -> SSAValue:
    """``log(x)`` of an ``f64`` (the module docstring gives the method)."""
    return _log(e, x, False)[0]


def log_ext(e: Emitter, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``log(x)`` as ``(hi, lo)``: ``hi`` is :func:`log`'s result, ``lo`` the rounding
    error of its last addition ``k LN2_HI + w`` (Fast2Sum: ``|k LN2_HI| >= ln2 > |w|`` or
    ``k = 0``), 0 for the special values, so that ``hi + lo`` is within about
    ``2^-54`` of ``log(x)`` whatever its magnitude (``hi`` alone: half an ulp of up to 744)."""
    return _log(e, x, True)  # type: ignore[return-value]


def _log(e: Emitter, x: SSAValue, ext: bool) -> tuple[SSAValue, SSAValue | None]:
    small = _setp(e, CmpOp.LT, x, _c(e, MIN_NORMAL))  # subnormal (or 0, or negative)
    xs = _selp(e, _mul(e, x, _c(e, TWO54)), x, small)
    bias = _selp(e, e.const(-1023 - 54, i32), e.const(-1023, i32), small)
    xlo, xhi = _halves(e, xs)
    hx = _add_s32(e, xhi, 0x3FF00000 - SQRT_HALF_HI)
    k = _add_s32(e, e.value(ShrOp(ArithType.U32, hx, e.const(20))), bias)
    mhi = _add_s32(e, e.value(AndOp(ArithType.B32, hx, e.const(0x000FFFFF))), SQRT_HALF_HI)
    f = _sub(e, _join(e, xlo, mhi), _c(e, 1.0))  # m - 1, m in [sqrt(2)/2, sqrt(2))
    hfsq = _mul(e, _mul(e, f, _c(e, 0.5)), f)
    s = e.value(FloatDivOp(F64, f, _add(e, f, _c(e, 2.0)), rnd=RN))
    z = _mul(e, s, s)
    q = _c(e, LOG_POLY[-1])
    for c in reversed(LOG_POLY[:-1]):
        q = _fma(e, q, z, _c(e, c))
    r = _mul(e, q, z)
    dk = e.value(CvtOp(CvtType.F64, CvtType.S32, k, f64, rnd=CvtRounding.RN))
    u = _fma(e, s, _add(e, hfsq, r), _mul(e, dk, _c(e, LOG_LN2_LO)))
    d = _sub(e, u, hfsq)
    w = _add(e, d, f)
    y = _fma(e, dk, _c(e, LOG_LN2_HI), w)  # k LN2_HI is exact
    # the special values: +-0 -> -inf, x < 0 -> NaN, +inf and NaN -> x
    zero = _c(e, 0.0)
    regular = e.and_pred(_setp(e, CmpOp.GT, x, zero), _setp(e, CmpOp.LT, x, _c(e, float("inf"))))
    special = _selp(e, _c(e, float("nan")), x, _setp(e, CmpOp.LT, x, zero))
    special = _selp(e, _c(e, float("-inf")), special, _setp(e, CmpOp.EQ, x, zero))
    hi = _selp(e, y, special, regular)
    if not ext:
        return hi, None
    wlo = _add(e, _sub(e, f, w), d)  # f + d - w exactly (Fast2Sum: |f| >= |d|)
    lo = _add(e, _add(e, _sub(e, _mul(e, dk, _c(e, LOG_LN2_HI)), y), w), wlo)
    return hi, _selp(e, lo, zero, regular)


def pow(e: Emitter, x: SSAValue, p: float) -> SSAValue:
    """``x ** p`` of an ``f64`` ``x >= 0`` (or -0) and a constant ``p``, as
    ``exp(p log(x))`` with ``log(x)`` in two parts (:func:`log_ext`) and ``p log(x)``
    too (``fma`` gives the rounding error of ``p * hi``), passed to :func:`exp` as its
    tail: the error stays near 1 ulp however large ``|p log(x)|`` (a rounded
    ``p * log(x)`` near 700 alone is off by up to 2^-43, hundreds of ulp of the power). A tail that
    is not finite (``log(0) = -inf``, ``p log(x)`` beyond the double range) is 0:
    ``0 ** p`` is 0 for ``p > 0`` and +inf for ``p < 0``, ``inf ** p`` the reverse,
    ``NaN ** p`` NaN."""
    hi, lo = log_ext(e, x)
    pc = _c(e, p)
    y = _mul(e, hi, pc)
    err = _fma(e, hi, pc, e.neg(F64, y))  # p * hi - y, exactly
    tail = _fma(e, lo, pc, err)
    finite = _setp(e, CmpOp.EQ, _sub(e, tail, tail), _c(e, 0.0))  # inf - inf and NaN are NaN
    return exp(e, y, _selp(e, tail, _c(e, 0.0), finite))
