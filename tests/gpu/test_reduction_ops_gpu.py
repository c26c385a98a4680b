"""The ops of warp/CTA/grid reductions on the GPU: shfl.sync (every mode, and a butterfly
sum), ld.vec (.nc, .v2/.v4, and the 256-bit forms on sm_100), st.vec (.v2/.v4 and the
256-bit forms), atom (tickets and every op x type tested), red (scalar, .v2/.v4.f32,
with .sem/.scope), and fence/membar in a "last block" grid reduction. Each result is
checked against a numpy model of the PTX ISA's description; f32 additions agree with
the interpreter's (interpreter/ptx_memory.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx import runtime
from bulkred_dialect.interpreter.ptx_memory import combine_bits
from bulkred_dialect.ops.ptx.atom import AtomType, type_bytes
from gpu import reduction_ops_kernels as R
from gpu.models import NP_DTYPE, f32_to_bf16, mismatch_report, poison, random_values, same_bits

pytestmark = pytest.mark.gpu


# region shfl.sync


def shfl_model(mode: str, values: np.ndarray, b: int, c: int) -> np.ndarray:
    """PTX ISA, shfl.sync: the value each lane gets with every lane in the membermask."""
    bval, cval, segmask = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    out = values.copy()
    for lane in range(32):
        max_lane = (lane & segmask) | (cval & ~segmask)
        min_lane = lane & segmask
        if mode == "up":
            j, ok = lane - bval, lane - bval >= max_lane
        elif mode == "down":
            j, ok = lane + bval, lane + bval <= max_lane
        elif mode == "bfly":
            j, ok = lane ^ bval, (lane ^ bval) <= max_lane
        else:
            j = min_lane | (bval & ~segmask)
            ok = j <= max_lane
        out[lane] = values[j if ok else lane]
    return out


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_sync_modes(mode, rng):
    k = R.shfl_kernel(mode).kernel()
    # the usual c of each mode (up: 0, else 0x1f), then random clamps and segment masks
    usual = 0 if mode == "up" else 0x1F
    cases = [(b, usual) for b in (0, 1, 5, 16, 31)]
    cases += [(int(rng.integers(0, 32)), int(rng.integers(0, 32)) | int(rng.integers(0, 32)) << 8) for _ in range(6)]
    for b, c in cases:
        inp = rng.integers(0, 1 << 32, 32, dtype=np.uint64).astype(np.uint32)
        out, _ = k(poison("u32", 32), inp, np.int32(b), np.int32(c))
        want = shfl_model(mode, inp, b, c)
        assert same_bits(out, want), f"shfl.sync.{mode} b={b} c={c:#x}, {rng}\n" + mismatch_report(out, want)


def test_shfl_butterfly_sum_of_each_warp(rng):
    k = R.shfl_bfly_sum_kernel(2).kernel()
    inp = (rng.standard_normal(64) * 100).astype(np.float32)
    out, _ = k(poison("f32", 64), inp)
    want = np.empty(64, np.float32)
    for w in range(2):
        x = inp[32 * w : 32 * w + 32].copy()
        for m in (16, 8, 4, 2, 1):
            x = (x + x[np.arange(32) ^ m]).astype(np.float32)
        assert len(set(x.view(np.uint32).tolist())) == 1  # every lane ends with the same bits
        want[32 * w : 32 * w + 32] = x
    assert same_bits(out, want), f"{rng}\n" + mismatch_report(out, want)


# endregion

# region ld.vec


def _ld_vec_check(tk, t: str, count: int, offset: int, rng) -> None:
    dt = np.dtype(runtime_np(R.LD_VEC_FORMS[t][2]))
    n = R.ld_vec_elements(t, count, offset)
    inp = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint16).astype(np.uint8).view(dt)
    out_poison = np.full(n * dt.itemsize, 0xA5, np.uint8).view(dt)
    out, _ = tk(out_poison, inp)
    skip = offset // dt.itemsize
    want = inp.copy()
    want[:skip] = out_poison[:skip]
    assert same_bits(out, want), f"{rng}\n" + mismatch_report(out, want)


def runtime_np(spec: str):
    return {"f32": np.float32, "u32": np.uint32, "f64": np.float64, "f16": np.float16, "u16": np.uint16, "u64": np.uint64}[spec]


@pytest.mark.parametrize("t,count,nc", R.LD_VEC_CASES, ids=lambda v: str(v))
def test_ld_vec(t, count, nc, rng):
    _ld_vec_check(R.ld_vec_kernel(t, count, nc=nc).kernel(), t, count, 0, rng)


def test_ld_vec_nc_with_an_offset(rng):
    _ld_vec_check(R.ld_vec_kernel("f32", 4, nc=True, offset=16).kernel(), "f32", 4, 16, rng)


@pytest.mark.parametrize("t,count,nc", R.WIDE_LD_VEC_CASES, ids=lambda v: str(v))
def test_ld_vec_256_bits(t, count, nc, rng):
    arch = runtime.gpu().arch
    if int(arch[3:].rstrip("af")) < 100:
        pytest.skip(f"256-bit loads need sm_100, the GPU is {arch}")
    _ld_vec_check(R.ld_vec_kernel(t, count, nc=nc).kernel(arch), t, count, 0, rng)


@pytest.mark.parametrize("t,count", R.ST_VEC_CASES, ids=lambda v: str(v))
def test_st_vec(t, count, rng):
    _ld_vec_check(R.st_vec_kernel(t, count).kernel(), t, count, 0, rng)


def test_st_vec_with_an_offset(rng):
    _ld_vec_check(R.st_vec_kernel("f32", 4, offset=16).kernel(), "f32", 4, 16, rng)


@pytest.mark.parametrize("t,count", R.WIDE_ST_VEC_CASES, ids=lambda v: str(v))
def test_st_vec_256_bits(t, count, rng):
    arch = runtime.gpu().arch
    if int(arch[3:].rstrip("af")) < 100:
        pytest.skip(f"256-bit stores need sm_100, the GPU is {arch}")
    _ld_vec_check(R.st_vec_kernel(t, count).kernel(arch), t, count, 0, rng)


# endregion

# region atom and red


def _uint(t: str) -> str:
    return f"uint{8 * type_bytes(AtomType(t))}"


def _bits(t: str, a: np.ndarray) -> list[int]:
    return np.ascontiguousarray(a).view(_uint(t)).tolist()


def _fold(op: str, t: str, init: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """The final value after applying every value in order (the order must not matter
    for the values the tests choose), by the interpreter's rule for each operation."""
    cur = _bits(t, init)[0]
    for v in _bits(t, vals):
        cur = combine_bits("model", op, AtomType(t), cur, v)
    return np.array([cur], dtype=_uint(t)).view(NP_DTYPE[t])


def _half(t: str, x: np.ndarray) -> np.ndarray:
    """float values (exact in t) as the array the kernel takes: f16, or bf16 bits."""
    return x.astype(np.float16) if t == "f16" else f32_to_bf16(x.astype(np.float32))


def _values(op: str, t: str, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(initial memory, values) for which the result does not depend on the order."""
    dt = NP_DTYPE[t]
    if t in ("f32", "f64"):  # small multiples of 1/4: every partial sum is exact
        return np.array([3.25], dt), (rng.integers(-64, 64, n) / 4).astype(dt)
    if t in ("f16", "bf16"):
        # as many +1/8 as -1/8 (and zeros): every partial sum is a multiple of 1/8 below
        # 17 in magnitude, exact in bf16's 8 significant bits
        k = n // 4
        vals = rng.permutation(np.concatenate([np.full(k, 1.0), np.full(k, -1.0), np.zeros(n - 2 * k)])) / 8
        return _half(t, np.array([0.25])), _half(t, vals)
    w = int(t[1:])
    if op == "inc":
        return np.array([7], dt), np.full(n, 0xFFFFFFFF, dt)  # never wraps to 0
    if op == "dec":
        return np.array([n + 9], dt), np.full(n, 0xFFFFFFFF, dt)  # never reaches 0
    raw = rng.integers(0, 1 << 63, n, dtype=np.uint64) if w == 64 else rng.integers(0, 1 << 32, n, dtype=np.uint64)
    init = rng.integers(0, 1 << 32, 1, dtype=np.uint64)
    return init.astype(f"uint{w}").view(dt), raw.astype(f"uint{w}").view(dt)


@pytest.mark.parametrize("op,t", R.ATOM_FORMS, ids=lambda v: str(v))
def test_atom(op, t, rng):
    n = R.ATOM_CTAS * R.ATOM_THREADS
    init, vals = _values(op, t, n, rng)
    mem, _, old = R.atom_kernel(op, t).kernel()(init.copy(), vals, poison(t, n))
    ctx = f"atom.{op}.{t}, {rng}"
    if op == "exch":
        # every value but one was swapped out: the olds and the final value are a
        # permutation of the initial value and the values
        assert sorted(_bits(t, old) + _bits(t, mem)) == sorted(_bits(t, init) + _bits(t, vals)), ctx
        return
    want = _fold(op, t, init, vals)
    assert same_bits(mem, want), ctx + "\n" + mismatch_report(mem, want)
    if op in ("inc", "dec"):  # each thread saw a different count
        start = int(init[0])
        seq = range(start, start + n) if op == "inc" else range(start - n + 1, start + 1)
        assert sorted(_bits(t, old)) == list(seq), ctx


def test_atom_add_tickets_are_unique(rng):
    ctas, threads = 8, 128
    counter, out = R.atom_ticket_kernel(ctas, threads).kernel()(np.array([0], np.uint32), poison("u32", ctas * threads))
    assert counter.tolist() == [ctas * threads]
    assert sorted(out.tolist()) == list(range(ctas * threads))


@pytest.mark.parametrize("op,t", R.RED_FORMS, ids=lambda v: str(v))
def test_red(op, t, rng):
    n = R.ATOM_CTAS * R.ATOM_THREADS
    init, vals = _values(op, t, n, rng)
    mem, _ = R.red_kernel(op, t).kernel()(init.copy(), vals)
    want = _fold(op, t, init, vals)
    assert same_bits(mem, want), f"red.{op}.{t}, {rng}\n" + mismatch_report(mem, want)


def test_red_release_gpu(rng):
    n = R.ATOM_CTAS * R.ATOM_THREADS
    init, vals = _values("add", "f32", n, rng)
    mem, _ = R.red_kernel("add", "f32", sem=R.RedSem.RELEASE, scope=R.MemScope.GPU).kernel()(init.copy(), vals)
    assert same_bits(mem, _fold("add", "f32", init, vals)), f"{rng}"


def test_red_add_f32_subnormals_as_the_interpreter_adds_them(rng):
    """All threads add the smallest subnormal to 0: the interpreter flushes it (PTX ISA:
    red/atom .add.f32 "flushes subnormal inputs and results to sign-preserving zero");
    the GPU must give the same bits."""
    n = R.ATOM_CTAS * R.ATOM_THREADS
    tiny = np.full(n, 1, np.uint32).view(np.float32)
    init = np.array([0], np.float32)
    mem, _ = R.red_kernel("add", "f32").kernel()(init.copy(), tiny)
    want = _fold("add", "f32", init, tiny)
    assert same_bits(mem, want), mismatch_report(mem, want)


@pytest.mark.parametrize("count,t,op", R.RED_VEC_FORMS, ids=lambda v: str(v))
def test_red_vector(count, t, op, rng):
    ctas, threads = (8, 128) if t == "f32" else (1, 64)
    n = ctas * threads
    if op != "add":  # min/max: any values, subnormals included, order never matters
        vals, init = random_values(rng, t, n * count), random_values(rng, t, count)
    elif t == "f32":
        vals = (rng.integers(-64, 64, n * count) / 4).astype(np.float32)
        init = (rng.integers(-8, 8, count) / 2).astype(np.float32)
    else:  # sums of +-1/8 below 9 in magnitude: exact in f16 and bf16
        vals = _half(t, rng.integers(-1, 2, n * count) / 8)
        init = _half(t, rng.integers(-8, 8, count) / 4)
    out, _ = R.red_vec_kernel(count, t, op, ctas, threads).kernel()(init.copy(), vals)
    cols = vals.reshape(n, count)
    want = np.concatenate([_fold(op, t, init[j : j + 1], cols[:, j]) for j in range(count)])
    assert same_bits(out, want), f"red.{op}.v{count}.{t}, {rng}\n" + mismatch_report(out, want)


# endregion

# region fence: the last block sums the partials


def test_last_block_sums_every_partial_after_fences(rng):
    ctas, threads = 16, 128
    vals = rng.integers(0, 1 << 24, ctas * threads, dtype=np.uint64).astype(np.uint32)
    total, partial, counter, _ = R.last_block_sum_kernel(ctas, threads).kernel()(
        poison("u32", 1), poison("u32", ctas), np.array([0], np.uint32), vals
    )
    per_cta = vals.reshape(ctas, threads).astype(np.uint64).sum(axis=1) % (1 << 32)
    assert partial.tolist() == per_cta.tolist()
    assert counter.tolist() == [ctas]
    assert total.tolist() == [int(per_cta.sum()) % (1 << 32)]


# endregion
