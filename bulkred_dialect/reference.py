"""numpy references of the thread-scope reduction variants, written from the
algorithms in docs/lowering.md and independent of the interpreter (so that tests of
the lowering check the lowering and the interpreter together against these).

GPU arithmetic modelled here: every add rounds to nearest even in the element type;
``.ftz`` (f32 only) flushes subnormal inputs and results to a zero of the same sign;
an f32/f16/bf16 add with a NaN result gives the canonical NaN (``0x7fffffff``,
``0x7fff``); an f64 add with a NaN operand gives the second NaN operand (else the first)
with its quiet bit set, and an invalid f64 add (inf - inf) ``0xfff8000000000000``;
every mul rounds to nearest even the same way (a NaN result as for add); ``max``/``min``
propagate NaN by default (``max.NaN``: any NaN input gives the canonical NaN; f64, whose
``max`` has no ``.NaN``, gives ``add.rn.f64`` of the two operands, see
``Emitter.minmax``), and with ``ignore_nan`` ignore a NaN input (all NaN gives the
canonical NaN, for f64 the second operand quieted); both order ``-0.0 < +0.0``. Integer
adds and muls wrap; integer min/max are signed.

These rules were checked on an H200 (sm_90): tests/test_interpreter.py and
tests/gpu/test_lowering_numerics_gpu.py run the same cases on the GPU under ``pytest -m gpu``.

``kind`` is one of ``sum``, ``prod``, ``max``, ``min``, ``and``, ``or``, ``xor``. Each function
returns a new array of the destination's shape: ``[1]`` for a 1-D source, ``src.shape[:-1]``
otherwise (rows are reduced along the last axis). bfloat16 arrays are their bits (uint16).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_CANONICAL_NAN = {
    np.dtype(np.float16): np.array([0x7FFF], dtype=np.uint16).view(np.float16)[0],
    np.dtype(np.float32): np.array([0x7FFFFFFF], dtype=np.uint32).view(np.float32)[0],
    np.dtype(np.float64): np.array([0xFFF8000000000000], dtype=np.uint64).view(np.float64)[0],
}

_F32_TINY = np.finfo(np.float32).tiny  # smallest normal f32, 2**-126


def bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns of an array, for bit-for-bit comparison."""
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def canonical_nan(dtype: Any) -> np.floating:
    return _CANONICAL_NAN[np.dtype(dtype)]


# region Scalar GPU operations


def _canon(x: np.floating) -> np.floating:
    return canonical_nan(x.dtype) if np.isnan(x) else x


def ftz(x: np.float32) -> np.float32:
    """Flush a subnormal f32 to a zero of the same sign."""
    if x != 0 and abs(x) < _F32_TINY:
        return np.copysign(np.float32(0.0), x)
    return x


def _quiet_f64(x: np.float64) -> np.float64:
    bits_ = np.array([x], dtype=np.float64).view(np.uint64) | np.uint64(1 << 51)
    return bits_.view(np.float64)[0]


def add_rn(a: np.floating, b: np.floating) -> np.floating:
    """``add.rn`` in the operands' dtype."""
    if a.dtype == np.float64 and (np.isnan(a) or np.isnan(b)):
        return _quiet_f64(b if np.isnan(b) else a)
    with np.errstate(all="ignore"):
        return _canon(a + b)


def mul_rn(a: np.floating, b: np.floating) -> np.floating:
    """``mul.rn`` in the operands' dtype (NaN results as :func:`add_rn`'s)."""
    if a.dtype == np.float64 and (np.isnan(a) or np.isnan(b)):
        return _quiet_f64(b if np.isnan(b) else a)
    with np.errstate(all="ignore"):
        return _canon(a * b)


def add_rn_ftz(a: np.float32, b: np.float32) -> np.float32:
    """``add.rn.ftz.f32``."""
    return ftz(add_rn(ftz(a), ftz(b)))


def _pick(kind: str, a: np.floating, b: np.floating) -> np.floating:
    """PTX two-input max/min of two non-NaN numbers."""
    if a == b:
        # equal: identical bits, or +0.0 and -0.0
        a_neg = bool(np.signbit(a))
        if kind == "max":
            return b if a_neg else a
        return a if a_neg else b
    if kind == "max":
        return a if a > b else b
    return a if a < b else b


def ptx_minmax(kind: str, *xs: np.floating, nan: bool = False) -> np.floating:
    """PTX ``max``/``min`` of two or three float inputs: NaN inputs are ignored, or with
    ``nan`` (``.NaN``) any NaN input gives the canonical NaN."""
    numbers = [x for x in xs if not np.isnan(x)]
    if nan and len(numbers) != len(xs) and xs[0].dtype != np.float64:
        return canonical_nan(xs[0].dtype)
    if not numbers:
        return _quiet_f64(xs[-1]) if xs[-1].dtype == np.float64 else canonical_nan(xs[0].dtype)
    r = numbers[0]
    for x in numbers[1:]:
        r = _pick(kind, r, x)
    return r


def _int_op(kind: str, dtype: np.dtype) -> Callable[[Any, Any], Any]:
    width = dtype.itemsize * 8
    info = np.iinfo(dtype)

    def wrap(v: int) -> int:
        return (v - info.min) % (1 << width) + info.min

    return {
        "sum": lambda a, b: wrap(int(a) + int(b)),
        "prod": lambda a, b: wrap(int(a) * int(b)),
        "max": lambda a, b: max(int(a), int(b)),
        "min": lambda a, b: min(int(a), int(b)),
        "and": lambda a, b: int(a) & int(b),
        "or": lambda a, b: int(a) | int(b),
        "xor": lambda a, b: int(a) ^ int(b),
    }[kind]


def minmax(kind: str, a: np.floating, b: np.floating, *, ignore_nan: bool = False) -> np.floating:
    """``Emitter.minmax``: two-input max/min of ``bulkred.reduce``'s NaN rule. f64 has no
    ``max.NaN``: a NaN operand gives ``add.rn.f64 a, b``."""
    if not ignore_nan and a.dtype == np.float64 and (np.isnan(a) or np.isnan(b)):
        return add_rn(a, b)
    return ptx_minmax(kind, a, b, nan=not ignore_nan)


def combine(kind: str, dtype: Any, *, ignore_nan: bool = False) -> Callable[[Any, Any], Any]:
    """The local variant's combining step for ``kind`` on elements of ``dtype``
    (float max/min propagate NaN unless ``ignore_nan``)."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        op = _int_op(kind, dtype)
        return lambda a, b: dtype.type(op(a, b))
    if kind == "sum":
        return add_rn
    if kind == "prod":
        return mul_rn
    if kind in ("max", "min"):
        return lambda a, b: minmax(kind, a, b, ignore_nan=ignore_nan)
    raise ValueError(f"kind {kind} needs an integer element type, got {dtype}")


# bfloat16, by its bits: widen exactly to float32, compute in float64 (exact for a sum of
# two bfloat16 values, or innocuously rounded), round to float32 by rounding to odd and
# then to bfloat16 to nearest even (round-to-odd with 2 or more extra bits makes the
# second rounding correct).


def bf16_to_f32(b: Any) -> np.float32:
    return np.array([int(b) << 16], dtype=np.uint32).view(np.float32)[0]


def _f32_round_to_odd(x: np.float64) -> np.float32:
    with np.errstate(all="ignore"):
        r = np.float32(x)
    if np.isinf(r) and not np.isinf(x):
        r = np.float32(np.copysign(np.finfo(np.float32).max, x))
    if np.float64(r) == x:
        return r
    if abs(np.float64(r)) > abs(x):
        r = np.nextafter(r, np.float32(0.0))
    return np.array([int(r.view(np.uint32)) | 1], dtype=np.uint32).view(np.float32)[0]


def f64_to_bf16(x: np.float64) -> np.uint16:
    if np.isnan(x):
        return np.uint16(0x7FFF)
    b = int(_f32_round_to_odd(x).view(np.uint32))
    return np.uint16((b + 0x7FFF + ((b >> 16) & 1)) >> 16)


def _bf16_combine(kind: str, ignore_nan: bool = False) -> Callable[[Any, Any], Any]:
    if kind in ("sum", "prod"):

        def arith(a: Any, b: Any) -> np.uint16:
            fa, fb = np.float64(bf16_to_f32(a)), np.float64(bf16_to_f32(b))
            with np.errstate(all="ignore"):  # exact in float64, then rounded once
                return f64_to_bf16(fa + fb if kind == "sum" else fa * fb)

        return arith
    if kind in ("max", "min"):

        def pick(a: Any, b: Any) -> np.uint16:
            fa, fb = bf16_to_f32(a), bf16_to_f32(b)
            r = ptx_minmax(kind, fa, fb, nan=not ignore_nan)
            return np.uint16(0x7FFF) if np.isnan(r) else (a if r is fa else b)

        return pick
    raise ValueError(f"kind {kind} needs an integer element type, got bfloat16")


# endregion

# region Variants


def _rows(src: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """The rows of ``src`` (reduced along its last axis) and the destination's shape."""
    if src.ndim == 0:
        raise ValueError("src must have at least one dimension")
    dst_shape = (1,) if src.ndim == 1 else src.shape[:-1]
    return src.reshape(-1, src.shape[-1]), dst_shape


def reduce_local(
    kind: str, src: np.ndarray, dst_old: np.ndarray | None = None, *, bf16: bool = False, ignore_nan: bool = False
) -> np.ndarray:
    """The ``local`` variant: each row folded left to right, ``acc = op(acc, x[i])``;
    with ``dst_old`` (accum) the row's result is ``op(dst_old[row], acc)``.

    With ``bf16`` the arrays hold bfloat16 bit patterns (uint16). Float max/min
    propagate NaN unless ``ignore_nan`` (the op's property).
    """
    rows, dst_shape = _rows(src)
    op = _bf16_combine(kind, ignore_nan) if bf16 else combine(kind, src.dtype, ignore_nan=ignore_nan)
    old = None if dst_old is None else dst_old.reshape(-1)
    out = np.empty(rows.shape[0], dtype=src.dtype)
    for r, row in enumerate(rows):
        acc = row[0]
        for x in row[1:]:
            acc = op(acc, x)
        if old is not None:
            acc = op(old[r], acc)
        out[r] = acc
    return out.reshape(dst_shape)


def _sum_sm100_packed(x: np.ndarray, old: np.float32 | None) -> np.float32:
    n, full = len(x), len(x) // 8
    ls = [x[j] for j in range(8)]
    if old is not None:
        ls[0] = add_rn(x[0], old)  # scalar, no ftz
    for k in range(1, full):
        for j in range(8):  # four add.rn.ftz.f32x2, lane by lane
            ls[j] = add_rn_ftz(ls[j], x[8 * k + j])
    for i in range(8 * full, n):  # the whole remainder into ls[0], scalar
        ls[0] = add_rn(ls[0], x[i])
    # 8 -> 4 -> 2 -> 1: (l0,l1)+=(l2,l3); (l4,l5)+=(l6,l7); (l0,l1)+=(l4,l5); l0+l1
    ls[0], ls[1] = add_rn_ftz(ls[0], ls[2]), add_rn_ftz(ls[1], ls[3])
    ls[4], ls[5] = add_rn_ftz(ls[4], ls[6]), add_rn_ftz(ls[5], ls[7])
    ls[0], ls[1] = add_rn_ftz(ls[0], ls[4]), add_rn_ftz(ls[1], ls[5])
    return add_rn(ls[0], ls[1])


def _minmax_sm100_packed(kind: str, x: np.ndarray, old: np.float32 | None, nan: bool) -> np.float32:
    n, full = len(x), len(x) // 8

    def mm(*xs: np.float32) -> np.float32:
        return ptx_minmax(kind, *xs, nan=nan)

    t = [mm(x[2 * i], x[2 * i + 1]) for i in range(4)]
    if old is not None:
        t[0] = mm(x[0], x[1], old)
    for k in range(1, full):
        for i in range(4):
            t[i] = mm(t[i], x[8 * k + 2 * i], x[8 * k + 2 * i + 1])
    for i in range(8 * full, n):
        t[0] = mm(t[0], x[i])
    return mm(mm(t[0], t[1]), t[2], t[3])


def reduce_sm100_packed(
    kind: str, src: np.ndarray, dst_old: np.ndarray | None = None, *, ignore_nan: bool = False
) -> np.ndarray:
    """The ``sm100_packed`` variant (1-D float32, at least 8 elements), in TVM TIRx's
    order: sum through an 8-wide accumulator of ``add.rn.ftz.f32x2`` steps, max/min
    through a 4-wide accumulator of three-input max/min, the elements after the last
    full chunk of 8 into accumulator 0; with ``dst_old`` (accum) ``dst_old[0]`` enters
    accumulator 0 first (``src[0] + dst_old[0]`` by ``add.rn``, or the three-input
    ``op(src[0], src[1], dst_old[0])``). max/min are ``.NaN`` unless ``ignore_nan``."""
    if src.dtype != np.float32 or src.ndim != 1 or len(src) < 8:
        raise ValueError(f"sm100_packed needs a 1-D float32 source of at least 8 elements, got {src.dtype} {src.shape}")
    old = None if dst_old is None else np.float32(dst_old.reshape(-1)[0])
    if kind == "sum":
        r = _sum_sm100_packed(src, old)
    elif kind in ("max", "min"):
        r = _minmax_sm100_packed(kind, src, old, nan=not ignore_nan)
    else:
        raise ValueError(f"sm100_packed has no {kind} reduction")
    return np.array([r], dtype=np.float32)


# endregion
