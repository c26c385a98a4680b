"""The f32 and f64 arithmetic of :mod:`bulkred_dialect.interpreter.values` on numpy arrays:
one value per thread of a CTA run in lockstep (:mod:`bulkred_dialect.interpreter.lockstep`).

Each function gives, element by element, the bits the scalar function gives (the tests
compare them on every class of input: zeros of both signs, subnormals, infinities, NaNs
with payloads): numpy's float32 and float64 ``+ - *`` round once to nearest even as the
scalar path does; the NaN results, ``.ftz`` flushing and ``min``/``max``'s choice of an
input are made on the bits as values.py makes them. Other types and forms are not here:
the lockstep run calls the scalar function per thread for them.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from bulkred_dialect.interpreter.values import CANONICAL_NAN_BITS, INT_WIDTH, SIGNED_TYPES
from bulkred_dialect.ops.ptx.arith import ArithType

# The types done here: numpy's float type and the unsigned integer of its bits.
NP_FLOAT: dict[ArithType, Any] = {ArithType.F32: np.float32, ArithType.F64: np.float64}
_BITS: dict[ArithType, Any] = {ArithType.F32: np.uint32, ArithType.F64: np.uint64}
_F64_QUIET_BIT = np.uint64(1 << 51)
_F32_FTZ = (np.uint32(0x7F800000), np.uint32(0x007FFFFF), np.uint32(0x80000000))
_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}


def _from_bits(t: ArithType, bits: Any) -> np.ndarray:
    return np.asarray(bits, dtype=_BITS[t]).view(NP_FLOAT[t])


def _canonical(t: ArithType) -> Any:
    return _from_bits(t, CANONICAL_NAN_BITS[t])[()]


def flush(a: np.ndarray) -> np.ndarray:
    """``.ftz`` of f32: subnormals become zeros of their sign."""
    bits = a.view(np.uint32)
    exponent, fraction, sign = _F32_FTZ
    sub = ((bits & exponent) == 0) & ((bits & fraction) != 0)
    if not sub.any():
        return a
    return np.where(sub, bits & sign, bits).view(np.float32)


def _quiet(b: np.ndarray) -> np.ndarray:
    """f64 NaNs quieted, payload and sign kept."""
    return (b.view(np.uint64) | _F64_QUIET_BIT).view(np.float64)


def _f64_nan(a: np.ndarray, b: np.ndarray, r: np.ndarray, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """values.py's f64 NaN propagation: the last NaN operand, quieted."""
    return np.where(nb, _quiet(b), np.where(na, _quiet(a), r))


def binary(opcode: str, t: ArithType, a: np.ndarray, b: np.ndarray, ftz: bool) -> np.ndarray:
    """:func:`~bulkred_dialect.interpreter.values.float_binary` (``add``/``sub``/``mul``)."""
    if ftz:
        a, b = flush(a), flush(b)
    with np.errstate(all="ignore"):
        r = _OPS[opcode](a, b)
    nan = np.isnan(r)
    if nan.any():
        if t == ArithType.F32:
            r = np.where(nan, _canonical(t), r)
        else:
            na, nb = np.isnan(a), np.isnan(b)
            r = _f64_nan(a, b, np.where(nan, _canonical(t), r), na, nb)
    if ftz:
        r = flush(r)
    return r


def minmax(opcode: str, t: ArithType, a: np.ndarray, b: np.ndarray, ftz: bool, nan: bool) -> np.ndarray:
    """:func:`~bulkred_dialect.interpreter.values.float_minmax` of two inputs."""
    if ftz:
        a, b = flush(a), flush(b)
    sa, sb = np.signbit(a), np.signbit(b)
    if opcode == "max":
        take_b = (b > a) | ((a == b) & sa & ~sb)
    else:
        take_b = (b < a) | ((a == b) & ~sa & sb)
    r = np.where(take_b, b, a)
    na, nb = np.isnan(a), np.isnan(b)
    if na.any() or nb.any():
        r = np.where(na & ~nb, b, np.where(nb & ~na, a, r))
        bad = (na | nb) if nan else (na & nb)
        if t == ArithType.F32:
            r = np.where(bad, _canonical(t), r)
        else:
            r = np.where(bad, _f64_nan(a, b, r, na, nb), r)
    return r


_ORDERED = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


def setp(c: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``setp`` of a float type (ptx_cvt.setp): ordered comparisons false with a NaN,
    the ``u`` forms true; ``num`` / ``nan``."""
    either = np.isnan(a) | np.isnan(b)
    if c in ("num", "nan"):
        return either if c == "nan" else ~either
    if c.endswith("u") and c != "eq":
        return either | _ORDERED[c[:-1]](a, b)
    return ~either & _ORDERED[c](a, b)


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray, ftz: bool) -> np.ndarray:
    """:func:`~bulkred_dialect.interpreter.values.float_fma` of f32 (``fma.rn``): the
    float64 rounded to odd of ``a * b + c`` (TwoSum of the exact float64 product and
    ``c``) rounded once more to f32, as values.py's ``_fma_narrow`` does; infinities in
    float64, a NaN input the canonical NaN."""
    if ftz:
        a, b, c = flush(a), flush(b), flush(c)
    with np.errstate(all="ignore"):
        x, y, z = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
        p = x * y
        s = p + z
        back = s - z
        e = (p - back) + (z - (s - back))
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        fix = (e != 0) & even
        odd = np.where(fix, np.nextafter(s, np.copysign(np.inf, e)), s)
        r = odd.astype(np.float32)
        zero = (s == 0) & (e == 0)
        if zero.any():
            negative = ((x == 0) | (y == 0)) & (np.signbit(x) ^ np.signbit(y)) & (z == 0) & np.signbit(z)
            r = np.where(zero, np.where(negative, np.float32(-0.0), np.float32(0.0)), r)
        if ftz:
            r = flush(r)
        finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
        if not finite.all():
            wide = x * y + z
            inf = np.where(np.isnan(wide), _canonical(ArithType.F32), wide.astype(np.float32))
            r = np.where(finite, r, inf)
        nan = np.isnan(x) | np.isnan(y) | np.isnan(z)
        if nan.any():
            r = np.where(nan, _canonical(ArithType.F32), r)
    return r


# fma_f64's fast lanes: |a|, |b| in [2^-400, 2^400] and c 0 or |c| in [2^-800, 2^900].
_F64_AB = (2.0**-400, 2.0**400)
_F64_C = (2.0**-800, 2.0**900)
_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's split of a float64 into two 26-bit halves


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``s + e == a + b`` exactly, ``s`` the rounded sum."""
    s = a + b
    back = s - a
    return s, (a - (s - back)) + (b - back)


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: Any) -> np.ndarray:
    """:func:`~bulkred_dialect.interpreter.values.float_fma` of f64 (``fma.rn``, no
    ``.ftz``) without rationals, where every step is exact: Dekker's product
    ``p + e == a * b`` (Veltkamp's split), TwoSums giving ``vh + vl + tl == a * b + c``,
    and Boldo and Melquiond's correctly rounded sum of three (``RN(vh + RO(vl + tl))``,
    the inner sum rounded to odd: "Emulation of FMA and correctly rounded sums: proved
    algorithms using rounding to odd", IEEE TC 2008). It holds without underflow and
    overflow: on the lanes where ``a`` and ``b`` are within [2^-400, 2^400] in magnitude
    and ``c`` is 0 or within [2^-800, 2^900], every intermediate is 0 or a multiple of
    2^-904 below 2^902 (normal). A zero factor (the other finite, ``c`` finite) gives
    the product's exact signed zero plus ``c``. The other lanes (subnormals, infinities,
    NaNs, extreme exponents) and any result outside [2^-900, 2^900] are computed by ``scalar``
    (values.py's ``float_fma`` of one lane), as the per-thread run does."""
    with np.errstate(all="ignore"):
        x, y, z = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
        ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
        fast = (ax >= _F64_AB[0]) & (ax <= _F64_AB[1]) & (ay >= _F64_AB[0]) & (ay <= _F64_AB[1])
        fast &= (z == 0) | ((az >= _F64_C[0]) & (az <= _F64_C[1]))
        p = x * y
        t = _SPLIT * x
        xh = t - (t - x)
        xl = x - xh
        t = _SPLIT * y
        yh = t - (t - y)
        yl = y - yh
        e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl  # p + e == x * y
        th, tl = _two_sum(z, e)
        vh, vl = _two_sum(p, th)  # vh + vl + tl == x * y + z
        s, err = _two_sum(vl, tl)
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        s = np.where((err != 0) & even, np.nextafter(s, np.copysign(np.inf, err)), s)  # RO(vl + tl)
        r = vh + s
        ar = np.abs(r)
        fast &= (r == 0) | ((ar >= 2.0**-900) & (ar <= 2.0**900))
        # a zero factor (the other finite): the product is an exact zero of its sign, and
        # the rounded sum with c is the result, the sign of a zero one included
        zero = ((x == 0) & (ay <= np.finfo(np.float64).max)) | ((y == 0) & (ax <= np.finfo(np.float64).max))
        zero &= np.isfinite(z)
        if zero.any():
            r = np.where(zero, x * y + z, r)
            fast |= zero
    if not fast.all():
        r = np.array(r, dtype=np.float64)  # writable (a broadcast input may be read-only)
        for i in np.flatnonzero(~fast.ravel()).tolist():
            r.flat[i] = scalar(x.flat[i], y.flat[i], z.flat[i])
    return r


_INT_OPS = {
    "add": np.add, "sub": np.subtract, "mul.lo": np.multiply,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def int_binary(opcode: str, t: ArithType, a: list[Any], b: list[Any]) -> list[int] | None:
    """:func:`~bulkred_dialect.interpreter.values.int_binary` (``add``/``sub``/``mul.lo``/
    ``min``/``max``/``and``/``or``/``xor``/``shl``/``shr``) of each pair, as the ints it
    gives (sign-canonical for the width), or None where an operand is not an integer of
    int64's range (the caller then calls the scalar function). In uint64: each operand's
    low ``w`` bits, the operation modulo 2^64 (a multiple of 2^w), the low ``w`` bits of
    the result read as signed; ``min``/``max`` compare the operands read as the type's
    signed or unsigned values."""
    if opcode not in _INT_OPS and opcode not in ("min", "max", "shl", "shr"):
        return None
    try:
        x, y = np.asarray(a), np.asarray(b)
    except OverflowError:
        return None
    if x.dtype.kind not in "iub" or y.dtype.kind not in "iub":
        return None
    w = INT_WIDTH[t]
    mask = np.uint64((1 << w) - 1)
    ux, uy = x.astype(np.int64).astype(np.uint64) & mask, y.astype(np.int64).astype(np.uint64) & mask
    if opcode in _INT_OPS:
        with np.errstate(all="ignore"):
            r = _INT_OPS[opcode](ux, uy) & mask
    elif opcode in ("shl", "shr"):
        # the amount: b's low 32 bits (a u32), clamped to the width; numpy's shifts of
        # 64 bits or more are not Python's, so those lanes are set apart (0, or the sign)
        amount = np.minimum(y.astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF), np.uint64(w))
        short = np.minimum(amount, np.uint64(63))
        if opcode == "shl":
            r = np.where(amount >= 64, np.uint64(0), ux << short) & mask
        elif t in SIGNED_TYPES:
            r = (_signed(ux, w) >> short.astype(np.int64)).astype(np.uint64) & mask
        else:
            r = np.where(amount >= 64, np.uint64(0), ux >> short)
    else:
        kx, ky = (_signed(ux, w), _signed(uy, w)) if t in SIGNED_TYPES else (ux, uy)
        pick = np.maximum(kx, ky) if opcode == "max" else np.minimum(kx, ky)
        r = pick.astype(np.int64).astype(np.uint64) & mask
    return _signed(r, w).tolist()


def int_bits(values: list[Any]) -> np.ndarray | None:
    """``values`` (ints) as uint64 two's complement bits, or None where one is not an
    integer of int64's (or uint64's) range."""
    try:
        x = np.asarray(values)
    except OverflowError:
        return None
    if x.dtype.kind not in "iub":
        return None
    return x.astype(np.int64).astype(np.uint64) if x.dtype.kind != "u" else x.astype(np.uint64)


def cvt_int(values: list[Any], src_bits: int, src_signed: bool, dst_bits: int, dst_signed: bool, width: int) -> list[int] | None:
    """ptx_cvt's integer to integer ``cvt`` (``_read_int`` of the source type, then
    ``_write_int`` into a register ``width`` bits wide) of each value, or None (see
    :func:`int_bits`)."""
    u = int_bits(values)
    if u is None:
        return None
    u &= np.uint64((1 << src_bits) - 1)
    n = _signed(u, src_bits).astype(np.uint64) if src_signed else u  # the source value, as 64 bits
    v = n & np.uint64((1 << dst_bits) - 1)
    if dst_signed:
        v = _signed(v, dst_bits).astype(np.uint64)
    return _signed(v & np.uint64((1 << width) - 1) if width < 64 else v, width).tolist()


def bf16_bits_to_f32(bits: list[int]) -> np.ndarray:
    """bf16 values (their 16 bits) widened to f32, exactly (NaN payloads kept)."""
    return (np.asarray(bits, np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(a: np.ndarray) -> list[int]:
    """f32 values rounded to nearest even bf16 (subnormals kept, overflow to infinity, a
    NaN the canonical NaN), as values.py's ``_bf16_from_float64`` rounds them: their bits."""
    b = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) & np.uint64(0xFFFF)
    r = np.where(np.isnan(a), np.uint64(CANONICAL_NAN_BITS[ArithType.BF16]), r)
    return r.tolist()


def signed_bits(u: np.ndarray, w: int) -> np.ndarray:
    """uint64 values below 2^w read as w-bit two's complement, as int64."""
    return _signed(u, w)


def _signed(u: np.ndarray, w: int) -> np.ndarray:
    """uint64 values below 2^w read as w-bit two's complement, as int64 (``(u ^ 2^(w-1))
    - 2^(w-1)``: the sign bit's weight made negative)."""
    if w == 64:
        return u.view(np.int64)
    half = np.int64(1 << (w - 1))
    return (u.astype(np.int64) ^ half) - half


def math(opcode: str, t: ArithType, args: list[Any], ftz: bool) -> np.ndarray:
    """:func:`~bulkred_dialect.interpreter.values.float_math` of ``sqrt``, ``rcp`` and
    ``div`` (IEEE-rounded in numpy as in values.py; f32 or f64, ``.ftz`` for f32 only), and
    of ``ex2`` and ``lg2`` of f32 (numpy's exp2/log2 in float64, as values.py calls them,
    rounded to f32)."""
    if ftz:
        args = [flush(a) for a in args]
    nans = [np.isnan(a) for a in args]
    with np.errstate(all="ignore"):
        if opcode in ("ex2", "lg2"):
            wide = (np.exp2 if opcode == "ex2" else np.log2)(np.asarray(args[0], np.float64))
            r = wide.astype(NP_FLOAT[t])
            r = np.where(np.isnan(wide), _canonical(t), r)
        elif opcode == "sqrt":
            r = np.sqrt(args[0])
        elif opcode == "rcp":
            r = NP_FLOAT[t](1) / args[0]
        else:
            r = args[0] / args[1]
        r = np.where(np.isnan(r), _canonical(t), r)
        if ftz:
            r = flush(r)
        any_nan = nans[0] if len(nans) == 1 else nans[0] | nans[1]
        if any_nan.any():
            if t == ArithType.F32:
                r = np.where(any_nan, _canonical(t), r)
            elif len(args) == 1:
                r = np.where(nans[0], _quiet(np.asarray(args[0], np.float64)), r)
            else:
                a, b = np.broadcast_arrays(np.asarray(args[0], np.float64), np.asarray(args[1], np.float64))
                r = np.where(any_nan, _f64_nan(a, b, r, nans[0], nans[1]), r)
    return r
