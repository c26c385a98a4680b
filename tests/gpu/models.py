"""numpy models of what the GPU computes, for the GPU tests: element-wise
``cp.reduce.async.bulk`` / ``red.async`` updates, ``redux.sync``, and random data.

Rules modelled (PTX ISA 9.7.9.25.4.2, 9.7.13.7):

* integer ``.add`` wraps; ``.min``/``.max`` compare by the type's signedness;
* ``.inc``: ``d = (d >= s) ? 0 : d + 1``; ``.dec``: ``d = (d == 0 || d > s) ? s : d - 1``;
* ``.add.f32`` flushes subnormal inputs and results to sign-preserving zero;
* ``.add.noftz.f16`` / ``.bf16`` round to nearest even and keep subnormals;
* ``.f64`` add rounds to nearest even (no flushing).
"""

from __future__ import annotations

import numpy as np

# element type -> numpy dtype holding it (bf16 as its bits in uint16)
NP_DTYPE = {
    "b32": np.uint32,
    "u32": np.uint32,
    "s32": np.int32,
    "b64": np.uint64,
    "u64": np.uint64,
    "s64": np.int64,
    "f16": np.float16,
    "bf16": np.uint16,
    "f32": np.float32,
    "f64": np.float64,
}

SIZE = {t: np.dtype(d).itemsize for t, d in NP_DTYPE.items()}

# The spec's table of valid (.redOp, .type) per .dst (PTX ISA 9.7.9.25.4.2).
CP_REDUCE_TABLE = {
    "shared::cluster": {
        "add": ("u32", "s32", "u64"),
        "min": ("u32", "s32"),
        "max": ("u32", "s32"),
        "inc": ("u32",),
        "dec": ("u32",),
        "and": ("b32",),
        "or": ("b32",),
        "xor": ("b32",),
    },
    "global": {
        "add": ("u32", "s32", "u64", "f32", "f64", "f16", "bf16"),
        "min": ("u32", "s32", "u64", "s64", "f16", "bf16"),
        "max": ("u32", "s32", "u64", "s64", "f16", "bf16"),
        "inc": ("u32",),
        "dec": ("u32",),
        "and": ("b32", "b64"),
        "or": ("b32", "b64"),
        "xor": ("b32", "b64"),
    },
}


def cp_reduce_forms(dst: str) -> list[tuple[str, str]]:
    """Every valid (.redOp, .type) pair for ``dst`` ('global' or 'shared::cluster')."""
    return [(op, t) for op, types in CP_REDUCE_TABLE[dst].items() for t in types]


# region bf16 and f32 helpers


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 bits, to nearest even (no NaNs expected)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = u + 0x7FFF + ((u >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def flush_f32(x: np.ndarray) -> np.ndarray:
    """Subnormal float32 values to zero of the same sign."""
    x = np.asarray(x, dtype=np.float32).copy()
    tiny = np.abs(x) < np.finfo(np.float32).tiny
    x[tiny] = np.copysign(np.float32(0), x[tiny])
    return x


# endregion

# region Element-wise reduction updates


def reduce_update(op: str, t: str, d: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The destination after ``d <op>= s`` element-wise, as the GPU computes it for
    cp.reduce.async.bulk and red.async (``t`` is the PTX .type)."""
    dt = NP_DTYPE[t]
    d = np.asarray(d, dtype=dt)
    s = np.asarray(s, dtype=dt)
    if t == "f32":
        if op != "add":
            raise ValueError(f"no .{op}.f32 form")
        with np.errstate(over="ignore"):
            return flush_f32(flush_f32(d) + flush_f32(s))
    if t == "f64":
        if op != "add":
            raise ValueError(f"no .{op}.f64 form")
        return d + s
    if t == "f16":
        with np.errstate(over="ignore"):
            # f16 + f16 in f32 then to f16 is correctly rounded (24 >= 2*11+2)
            if op == "add":
                return (d.astype(np.float32) + s.astype(np.float32)).astype(np.float16)
            return np.minimum(d, s) if op == "min" else np.maximum(d, s)
    if t == "bf16":
        fd, fs = bf16_to_f32(d), bf16_to_f32(s)
        if op == "add":
            with np.errstate(over="ignore"):
                return f32_to_bf16(fd + fs)  # 24 >= 2*8+2: rounding twice is exact
        pick_d = fd <= fs if op == "min" else fd >= fs
        return np.where(pick_d, d, s).astype(np.uint16)
    # integers
    if op == "add":
        return (d + s).astype(dt)  # numpy wraps
    if op == "min":
        return np.minimum(d, s)
    if op == "max":
        return np.maximum(d, s)
    if op == "and":
        return d & s
    if op == "or":
        return d | s
    if op == "xor":
        return d ^ s
    if op == "inc":
        return np.where(d >= s, dt(0), d + dt(1)).astype(dt)
    if op == "dec":
        return np.where((d == 0) | (d > s), s, d - dt(1)).astype(dt)
    raise ValueError(f"unknown .redOp {op}")


def redux_sync(op: str, t: str, values: np.ndarray, mask: int) -> np.ndarray:
    """``redux.sync.op.type`` over one warp: the result each participating lane gets
    (lanes outside ``mask`` are not modelled)."""
    dt = NP_DTYPE[t]
    lanes = [i for i in range(32) if mask >> i & 1]
    v = np.asarray(values, dtype=dt)[lanes]
    if op == "add":
        total = sum(int(x) for x in v) & 0xFFFFFFFF  # the result is truncated to 32 bits
        return np.array(total, dtype=np.uint32).view(dt)[()]
    if op == "min":
        return np.asarray(v.min(), dtype=dt)
    if op == "max":
        return np.asarray(v.max(), dtype=dt)
    acc = v[0]
    for x in v[1:]:
        acc = {"and": acc & x, "or": acc | x, "xor": acc ^ x}[op]
    return np.asarray(acc, dtype=dt)


# endregion

# region Random data


def random_values(rng: np.random.Generator, t: str, n: int, *, op: str = "add", subnormals: bool = True) -> np.ndarray:
    """Fresh random values of PTX type ``t`` (never all zeros; no NaN or infinity).

    Floats mix normal values of both signs with, when ``subnormals``, some subnormal
    ones, so that flushing (f32) or keeping (f16/bf16 .noftz) subnormals is visible.
    For ``inc``/``dec`` the values are small so that both branches of the rule occur.
    """
    dt = NP_DTYPE[t]
    if t in ("f32", "f64", "f16"):
        if t == "f16":
            mag = rng.uniform(-8, 8, n).astype(np.float16)
            sub = (rng.integers(1, 0x3FF, n).astype(np.uint16)).view(np.float16)  # f16 subnormals
        elif t == "f32":
            mag = (rng.standard_normal(n) * 10).astype(np.float32)
            sub = (rng.integers(1, 0x7FFFFF, n).astype(np.uint32)).view(np.float32)
        else:
            mag = rng.standard_normal(n) * 10
            sub = (rng.integers(1, 1 << 52, n).astype(np.uint64)).view(np.float64)
        sign = np.where(rng.integers(0, 2, n) == 1, -1, 1).astype(dt)
        x = np.where(rng.random(n) < (0.25 if subnormals else 0), sub * sign, mag).astype(dt)
        x[x == 0] = dt(1.5)
        return x
    if t == "bf16":
        mag = f32_to_bf16((rng.standard_normal(n) * 10).astype(np.float32))
        sub = rng.integers(1, 0x7F, n).astype(np.uint16) | np.where(rng.integers(0, 2, n) == 1, 0x8000, 0).astype(np.uint16)
        x = np.where(rng.random(n) < (0.25 if subnormals else 0), sub, mag).astype(np.uint16)
        x[(x & 0x7FFF) == 0] = 0x3FC0  # 1.5
        return x
    if op in ("inc", "dec"):
        return rng.integers(0, 8, n).astype(dt)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    x[x == 0] = dt(7)
    return x


def cancelling_pairs(rng: np.random.Generator, t: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(d, s) float pairs whose sums land in the subnormal range (f32: flushed to a
    signed zero by cp.reduce.async.bulk.add.f32; f16/bf16 .noftz: kept)."""
    dt = NP_DTYPE[t]
    if t == "f32":
        tiny = np.finfo(np.float32).tiny
        d = (tiny * rng.uniform(1.0, 1.9, n)).astype(np.float32)
        s = -(d - (rng.integers(1, 0x7FFFF, n).astype(np.uint32)).view(np.float32))
        sign = np.where(rng.integers(0, 2, n) == 1, -1, 1).astype(np.float32)
        return (d * sign).astype(dt), (s * sign).astype(dt)
    if t == "f16":
        tiny = np.float16(np.finfo(np.float16).tiny)
        d = (tiny * rng.uniform(1.0, 1.9, n)).astype(np.float16)
        s = (-(d.astype(np.float32) - (rng.integers(1, 0x1FF, n).astype(np.uint16)).view(np.float16).astype(np.float32))).astype(np.float16)
        return d, s
    if t == "bf16":
        tiny = np.finfo(np.float32).tiny
        d = f32_to_bf16((tiny * rng.uniform(1.0, 1.9, n)).astype(np.float32))
        sub = rng.integers(1, 0x3F, n).astype(np.uint16)
        s = f32_to_bf16(-(bf16_to_f32(d) - bf16_to_f32(sub)))
        return d, s
    raise ValueError(f"no cancelling pairs for {t}")


def poison(t: str, n: int) -> np.ndarray:
    """An output buffer filled with a recognisable non-result pattern (0xA5 bytes)."""
    return np.full(n * SIZE[t], 0xA5, dtype=np.uint8).view(NP_DTYPE[t])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and bytes(a.view(np.uint8)) == bytes(
        b.view(np.uint8)
    )


def mismatch_report(got: np.ndarray, want: np.ndarray, extra: dict[str, np.ndarray] | None = None, limit: int = 8) -> str:
    """The first differing elements, with their bit patterns, for an assertion message."""
    g = np.ascontiguousarray(got).reshape(-1)
    w = np.ascontiguousarray(want).reshape(-1)
    ubits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[g.dtype.itemsize]
    gb, wb = g.view(ubits), w.view(ubits)
    bad = np.nonzero(gb != wb)[0]
    lines = [f"{len(bad)} of {g.size} elements differ"]
    for i in bad[:limit]:
        line = f"  [{i}] got {g[i]!r} (0x{int(gb[i]):x}) want {w[i]!r} (0x{int(wb[i]):x})"
        for k, v in (extra or {}).items():
            v = np.ascontiguousarray(v).reshape(-1)
            line += f" {k}={v[i]!r}"
        lines.append(line)
    return "\n".join(lines)


# endregion
