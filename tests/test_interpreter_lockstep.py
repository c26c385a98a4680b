"""The lockstep run of a CTA (interpreter/lockstep.py) against the thread-by-thread run
(interpreter/threads.py): the same bits from the same kernels, the kernels of each scope
run without falling back, and the array arithmetic (interpreter/vector.py) against the
scalar functions of interpreter/values.py on every class of input."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.interpreter import lockstep, threads, vector
from bulkred_dialect.interpreter.ptx_cvt import _setp, _setp_form
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.interpreter.values import float_binary, float_fma, float_math, float_minmax
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.control import CmpOp, SetpType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import scopes  # noqa: E402

# region The array arithmetic against the scalar one


def _specials(t: ArithType) -> np.ndarray:
    """Zeros, subnormals, normals, the largest finite, infinities and NaNs (quiet and
    signalling, with payloads, both signs) of type ``t``, as values of its numpy type."""
    if t == ArithType.F32:
        bits = [0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800001, 0x7F7FFFFF, 0xFF7FFFFF,
                0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x40490FDB, 0x33800000]
        return np.array(bits, np.uint32).view(np.float32)
    bits = [0, 1 << 63, 1, (1 << 63) | 0xFFFFFFFFFFFFF, 0x3FF0000000000000, 0xBFF0000000000001,
            0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
            0xFFF8000000000123, 0x7FF0000000000001, 0x400921FB54442D18, 0x3CA0000000000000]
    return np.array(bits, np.uint64).view(np.float64)


def _bits(v) -> int:
    return int(np.asarray(v).view(np.uint32 if np.asarray(v).dtype == np.float32 else np.uint64))


@pytest.mark.parametrize("t", [ArithType.F32, ArithType.F64])
def test_array_arithmetic_gives_the_scalar_bits(t):
    s = _specials(t)
    a, b = (np.array(p) for p in zip(*itertools.product(s, s)))
    for ftz in (False, True) if t == ArithType.F32 else (False,):
        for opcode in ("add", "sub", "mul"):
            got = vector.binary(opcode, t, a, b, ftz)
            want = [float_binary(opcode, t, x, y, ftz=ftz) for x, y in zip(a, b)]
            assert [_bits(g) for g in got] == [_bits(w) for w in want], (opcode, ftz)
        for opcode in ("sqrt", "rcp", "div") + (("ex2", "lg2") if t == ArithType.F32 else ()):
            args = [a, b] if opcode == "div" else [a]
            got = vector.math(opcode, t, args, ftz)
            want = [float_math(opcode, t, v, ftz=ftz) for v in zip(*args)]
            assert [_bits(g) for g in got] == [_bits(w) for w in want], (opcode, ftz)
        for opcode, nan in itertools.product(("min", "max"), (False, True)):
            got = vector.minmax(opcode, t, a, b, ftz, nan)
            want = [float_minmax(opcode, t, (x, y), ftz=ftz, nan=nan) for x, y in zip(a, b)]
            assert [_bits(g) for g in got] == [_bits(w) for w in want], (opcode, ftz, nan)
    if t == ArithType.F32:  # ex2 and lg2 on random values of every magnitude too
        r = np.random.default_rng(4)
        x = (r.standard_normal(2000) * np.exp2(r.integers(-130, 8, 2000))).astype(np.float32)
        for opcode, v in (("ex2", x), ("lg2", np.abs(x))):
            for ftz in (False, True):
                got = vector.math(opcode, t, [v], ftz)
                with np.errstate(over="ignore"):  # (the scalar path's cast of a large ex2 to f32)
                    want = [float_math(opcode, t, (e,), ftz=ftz) for e in v]
                assert [_bits(g) for g in got] == [_bits(w) for w in want], (opcode, ftz)
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
        form = _setp_form(CmpOp(cmp), SetpType(t.value))
        with np.errstate(all="ignore"):
            got = vector.setp(cmp, a, b).tolist()
        assert got == [_setp(form, x, y) for x, y in zip(a, b)], cmp


def test_array_fma_gives_the_scalar_bits():
    """fma.rn.f32 on every triple of the specials and on random triples whose product
    and addend nearly cancel (the rounding to odd decides those)."""
    t = ArithType.F32
    s = _specials(t)
    a, b, c = (np.array(p) for p in zip(*itertools.product(s, s, s)))
    rng = np.random.default_rng(9)
    x = rng.standard_normal(3000).astype(np.float32)
    y = rng.standard_normal(3000).astype(np.float32)
    z = (-(x.astype(np.float64) * y) * (1 + rng.standard_normal(3000) * 2.0**-20)).astype(np.float32)
    a, b, c = np.concatenate([a, x]), np.concatenate([b, y]), np.concatenate([c, z])
    for ftz in (False, True):
        got = vector.fma_f32(a, b, c, ftz)
        want = [float_fma(t, *v, ftz=ftz) for v in zip(a, b, c)]
        assert [_bits(g) for g in got] == [_bits(w) for w in want], ftz



def test_array_fma_f64_gives_the_scalar_bits():
    """fma.rn.f64 (vector.fma_f64: Dekker's product, TwoSums and a sum rounded to odd on
    the lanes within its exponent bounds, the scalar function on the others) on every
    triple of the specials and their bounds, on random triples whose product and addend
    cancel exactly, to an ulp or nearly (the rounding to odd decides those), whose addend
    is half an ulp of the product (ties), and on random exponents beyond the bounds."""
    t = ArithType.F64
    s = np.concatenate([_specials(t), [2.0**-400, 2.0**400, 2.0**-401, 2.0**-800, 2.0**900, -(2.0**901), 3.0]])
    a, b, c = (np.array(p) for p in zip(*itertools.product(s, s, s)))
    rng = np.random.default_rng(11)
    n = 1000

    def rnd(lo: int, hi: int) -> np.ndarray:
        m = (rng.integers(0, 2**52, n, dtype=np.uint64) | np.uint64(0x3FF << 52)).view(np.float64)
        return m * np.ldexp(1.0, rng.integers(lo, hi, n)) * rng.choice([-1.0, 1.0], n)

    x, y = rnd(-60, 60), rnd(-60, 60)
    p = x * y
    near = -p * (1 + rnd(-60, -20) * 2.0**-30)
    ulp = np.nextafter(-p, rng.choice([-np.inf, np.inf], n))
    tie = np.spacing(np.abs(p)) / 2 * rng.choice([-1.0, 1.0], n) * rng.choice([1.0, 1 + 2.0**-52, 1 - 2.0**-53], n)
    wide = [rnd(-1100, 1000) for _ in range(3)]
    with np.errstate(all="ignore"):
        wide[0] = np.where(np.isfinite(wide[0]), wide[0], 1.0)
    a = np.concatenate([a, x, x, x, x, x, wide[0]])
    b = np.concatenate([b, y, y, y, y, y, wide[1]])
    c = np.concatenate([c, rnd(-60, 60), near, -p, ulp, tie, wide[2]])
    calls = []

    def scalar(*v):
        calls.append(v)
        return float_fma(t, *v)

    got = vector.fma_f64(a, b, c, scalar)
    want = [float_fma(t, *v) for v in zip(a, b, c)]
    assert [_bits(g) for g in got] == [_bits(w) for w in want]
    assert 0 < len(calls) <= len(a) - 5 * n  # the random triples within the bounds took the fast lanes
    assert float_fma(t, 2.0**1000, 2.0**100, 1.0) == np.inf  # an exact result beyond float64's range
    assert float_fma(t, -(2.0**1000), 2.0**100, 1.0) == -np.inf



def test_array_int_ops_give_the_scalar_ints():
    """vector.int_binary against values.int_binary on every integer type: edge values of
    each width (pairwise) and random int64 operands, the shifts also by every amount to
    70; None (the scalar path) for a float operand and an int beyond int64."""
    from bulkred_dialect.interpreter.values import INT_WIDTH, int_binary

    rng = np.random.default_rng(5)
    edge = [0, 1, -1, 127, -128, 255, 2**15 - 1, -(2**15), 2**16 - 1, 2**31 - 1, -(2**31), 2**32 - 1, 2**32, 2**63 - 1, -(2**63)]
    a = [x for x in edge for _ in edge] + rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64).tolist()
    b = [y for _ in edge for y in edge] + rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64).tolist()
    for t in INT_WIDTH:
        for opcode in ("add", "sub", "mul.lo", "and", "or", "xor", "min", "max", "shl", "shr"):
            assert vector.int_binary(opcode, t, a, b) == [int_binary(opcode, t, x, y) for x, y in zip(a, b)], (t, opcode)
        for opcode in ("shl", "shr"):
            amounts = [k % 70 for k in range(len(a))]
            assert vector.int_binary(opcode, t, a, amounts) == [int_binary(opcode, t, x, k) for x, k in zip(a, amounts)]
    s32 = ArithType.S32
    assert vector.int_binary("add", s32, [1.5], [1]) is None
    assert vector.int_binary("add", s32, [-1, 2**64], [1, 1]) is None



def test_array_conversions_give_the_scalar_values():
    """vector.cvt_int against ptx_cvt's integer cvt for every pair of integer types into
    registers of 16, 32 and 64 bits, on edge and random values; bf16 to f32 and f32 to bf16
    (specials, subnormals, values at a tie, random) against the scalar conversions."""
    from xdsl.dialects.builtin import IntegerType

    from bulkred_dialect.interpreter.ptx_cvt import _convert
    from bulkred_dialect.interpreter.values import BF16, coerce_float
    from bulkred_dialect.ops.ptx.control import CvtType

    rng = np.random.default_rng(6)
    values = [0, 1, -1, 127, -128, 255, 2**15 - 1, -(2**15), 2**16 - 1, 2**31 - 1, -(2**31), 2**32 - 1, 2**63 - 1, -(2**63)]
    # 100 random values besides the edges: a conversion keeps or extends the low bits of
    # its source (its code path is the pair of types, not the value), and each of 100
    # uniform int64 draws brings 64 random bits (300 took 0.3 CPU-s more)
    values += rng.integers(-(2**63), 2**63 - 1, 100, dtype=np.int64).tolist()
    ints = [t for t in CvtType if not t.is_float and t.bits >= 8]
    for a, d in itertools.product(ints, ints):
        for width in (16, 32, 64):
            got = vector.cvt_int(values, a.bits, a.value[0] == "s", d.bits, d.value[0] == "s", width)
            want = [_convert("cvt", d, a, None, IntegerType(width), x) for x in values]
            assert got == want, (a, d, width)
    f = np.concatenate([_specials(ArithType.F32), rng.standard_normal(500).astype(np.float32) * np.float32(1e3)])
    ties = (np.arange(1, 200, dtype=np.uint32) << np.uint32(16)) | np.uint32(0x8000)  # exactly between two bf16
    f = np.concatenate([f, ties.view(np.float32), np.array([3.4e38, -3.4e38, 1e-40, -1e-45], np.float32)])
    got = vector.f32_to_bf16_bits(f)
    assert got == [coerce_float(ArithType.BF16, x).bits for x in f]
    bits = list(range(0, 1 << 16, 7)) + [0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x8000]
    wide = vector.bf16_bits_to_f32(bits)
    assert [_bits(w) for w in wide] == [_bits(BF16(b).to_float32()) for b in bits]


# endregion

# region Lockstep against thread by thread


@pytest.fixture(scope="module")
def scopes_lowered():
    m = scopes.scopes_module("sm_90a")
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    return m


def _both(monkeypatch, module, name, *arrays):
    """The outputs of ``name`` run in lockstep and thread by thread, and the fallbacks of
    the lockstep run."""
    before = sum(lockstep.FALLBACKS.values())
    fast = run_grid(module, name, *(a.copy() for a in arrays))
    fell = sum(lockstep.FALLBACKS.values()) - before
    monkeypatch.setattr(threads, "LOCKSTEP", False)
    slow = run_grid(module, name, *(a.copy() for a in arrays))
    monkeypatch.setattr(threads, "LOCKSTEP", True)
    return fast, slow, fell


def _same_bits(fast, slow):
    for f, s in zip(fast, slow, strict=True):
        assert f.dtype == s.dtype and f.tobytes() == s.tobytes()


# one warp and one CTA kernel (test_interpreter_threads checks all four against numpy,
# in lockstep)
@pytest.mark.parametrize("name", ["warp_sum_i32", "cta_sum_f32"])
def test_scope_kernels_run_in_lockstep_with_the_same_bits(monkeypatch, scopes_lowered, name):
    n = scopes.CTAS * scopes.THREADS
    rng = np.random.default_rng(7)
    if name.endswith("f32"):
        x = (rng.standard_normal(n) * 100).astype(np.float32)
        x[::17] = np.nan
    else:
        x = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    fast, slow, fell = _both(monkeypatch, scopes_lowered, name, x, np.zeros(n, x.dtype))
    assert fell == 0
    _same_bits(fast, slow)


def _grid(kind: str, shape: list[int], axes, dtype: str, **options):
    with T.kernel("k") as k:
        a = k.param("a", shape, dtype)
        out_shape = [1] if axes is None else [s for i, s in enumerate(shape) if i not in axes]
        b = k.param("b", out_shape, dtype)
        getattr(T, kind)(b, a, axes=axes, **options)
    m = T.module(k, target="sm_90a")
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    f = next(iter(m.ops))
    workspace = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[2:]]
    return m, out_shape, workspace


@pytest.mark.parametrize(
    "kind, shape, axes, dtype, options",
    [
        ("sum", [9000], None, "float32", {}),  # grid_full: two CTAs, a ticket, divergent thread 0
        ("max", [16, 72], [1], "float32", {}),  # rows: a loop with per-thread bounds
        ("sum", [40, 6], [0], "float64", {}),  # columns
        ("sum", [4, 100], [1], "float64", {}),  # rows of f64: shuffles of its halves (mov.b64 unpack, pack)
        ("sum", [1000], None, "int32", {"variant": "grid_full"}),
    ],
)
def test_grid_kernels_run_in_lockstep_with_the_same_bits(monkeypatch, kind, shape, axes, dtype, options):
    m, out_shape, ws = _grid(kind, shape, axes, dtype, **options)
    rng = np.random.default_rng(8)
    if dtype.startswith("float"):
        x = rng.standard_normal(shape).astype(dtype)
        x.reshape(-1)[::13] = -0.0
    else:
        x = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(dtype)
    fast, slow, fell = _both(monkeypatch, m, "k", x, np.zeros(out_shape, dtype), *ws)
    assert fell == 0
    _same_bits(fast, slow)


# endregion


def test_a_fallback_runs_the_grid_thread_by_thread_from_the_start(monkeypatch):
    """An scf.while of a different trip count per thread after each thread's first
    store: in lockstep, the bits of the thread-by-thread run without a fallback; where the
    while falls back (made to here) in the first CTA, the buffers are put back and the
    thread-by-thread run gives each element one increment and its loop's count (not two
    increments)."""
    from test_interpreter_threads import TID_X, module

    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, func, gpu, memref, scf

    from bulkred_dialect.ops import ptx
    from bulkred_dialect.ops.tile import BULKRED

    ctx = Context()
    for d in (builtin.Builtin, func.Func, memref.MemRef, arith.Arith, scf.Scf, gpu.GPU, BULKRED, ptx.PTX):
        ctx.load_dialect(d)
    g = "memref<64xi32, #bulkred.scope<global>>"
    m = module(
        ctx,
        f"""
  func.func @k(%Out: {g}) attributes {{bulkred.launch = #bulkred.launch<grid = [2], block = [32]>}} {{
    %t = {TID_X}
    %b = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
    %c32 = arith.constant 32 : index
    %base = arith.muli %b, %c32 : index
    %i = arith.addi %base, %t : index
    %one = arith.constant 1 : i32
    %zero = arith.constant 0 : i32
    %five = arith.constant 5 : index
    %lim_index = arith.remui %t, %five : index
    %lim = arith.index_cast %lim_index : index to i32
    %v = memref.load %Out[%i] : {g}
    %v1 = arith.addi %v, %one : i32
    memref.store %v1, %Out[%i] : {g}
    %n = scf.while (%k = %zero) : (i32) -> i32 {{
      %go = arith.cmpi slt, %k, %lim : i32
      scf.condition(%go) %k : i32
    }} do {{
    ^bb0(%k2: i32):
      %k3 = arith.addi %k2, %one : i32
      scf.yield %k3 : i32
    }}
    %w = memref.load %Out[%i] : {g}
    %w1 = arith.addi %w, %n : i32
    memref.store %w1, %Out[%i] : {g}
    func.return
  }}""",
    )
    want = [1 + t % 5 for t in range(32)] * 2
    fast, slow, fell = _both(monkeypatch, m, "k", np.zeros(64, np.int32))
    assert fell == 0 and fast[0].tolist() == slow[0].tolist() == want

    def fall_back(self, op, inputs, varying):
        raise lockstep.Fallback("scf.while")

    monkeypatch.setitem(lockstep._SPECIAL, scf.WhileOp, fall_back)
    before = lockstep.FALLBACKS["scf.while"]
    (out,) = run_grid(m, "k", np.zeros(64, np.int32))
    assert lockstep.FALLBACKS["scf.while"] == before + 1
    assert out.tolist() == want


def test_stores_of_every_thread_in_lockstep(monkeypatch):
    """ptx.st of each thread's id into its own element (written at once in lockstep) and
    into one element all threads write (the thread order decides: the last thread's id,
    run per thread), and a st.vec of an f32 pair per thread: the bits of the
    thread-by-thread run."""
    from test_interpreter_threads import TID_X, module

    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, func, gpu, memref, scf

    from bulkred_dialect.ops import ptx
    from bulkred_dialect.ops.tile import BULKRED

    ctx = Context()
    for d in (builtin.Builtin, func.Func, memref.MemRef, arith.Arith, scf.Scf, gpu.GPU, BULKRED, ptx.PTX):
        ctx.load_dialect(d)
    G = "#bulkred.scope<global>"
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<40xi32, {G}>, %F: memref<64xf32, {G}>) attributes {{bulkred.launch = #bulkred.launch<grid = [1], block = [32]>}} {{
    %t = {TID_X}
    %ti = arith.index_cast %t : index to i32
    %a = builtin.unrealized_conversion_cast %A : memref<40xi32, {G}> to !ptx.ptr<global>
    %f = builtin.unrealized_conversion_cast %F : memref<64xf32, {G}> to !ptx.ptr<global>
    %tl = arith.index_cast %t : index to i64
    %four = arith.constant 4 : i64
    %eight = arith.constant 8 : i64
    %off = arith.muli %tl, %four : i64
    %mine = ptx.add.ptr %a, %off : !ptx.ptr<global>, i64
    ptx.st u32 %mine offset 32, %ti : !ptx.ptr<global>, i32
    ptx.st u32 %a, %ti : !ptx.ptr<global>, i32
    %x = ptx.cvt rn f32 s32 %ti : i32 -> f32
    %off2 = arith.muli %tl, %eight : i64
    %pair = ptx.add.ptr %f, %off2 : !ptx.ptr<global>, i64
    ptx.st.vec f32 %pair, %x, %x : !ptx.ptr<global>, f32, f32
    func.return
  }}""",
    )
    fast, slow, fell = _both(monkeypatch, m, "k", np.zeros(40, np.int32), np.zeros(64, np.float32))
    assert fell == 0
    _same_bits(fast, slow)
    assert fast[0][0] == 31 and fast[0][8:].tolist() == list(range(32)) and fast[1].tolist() == [float(t // 2) for t in range(64)]


# region Clusters in lockstep


def test_cluster_kernels_run_in_lockstep_with_the_same_bits(monkeypatch):
    """rows_cluster's softmax in clusters of 2 CTAs of one warp (its push exchange:
    ``mapa``, ``st.async`` into each peer's slot, the mbarriers' transaction counts and
    ``try_wait.parity`` in an ``scf.while``; 5 rows: both slot sets and both phases): the
    whole cluster in lockstep gives the bits of the thread-by-thread run, without falling
    back; and where the lockstep run cannot go on (a wait whose phase is still pending),
    the grid is run thread by thread with the same bits."""
    from bulkred_dialect.interpreter.clusters import run_cluster_grid
    from bulkred_dialect.ops.tile import kernel_launch
    from bulkred_dialect.passes.variants import rows_cluster, rows_common
    from bulkred_dialect.row_kernels import module

    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    monkeypatch.setattr(rows_cluster, "SLICE", 128)
    monkeypatch.setattr(rows_cluster, "MIN_BLOCK", 32)
    m, n = 5, 132
    built = module("softmax", m, n, "float32", stats=("row_max", "row_sum"), variant="rows_cluster")
    lower_tile_module(built, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    kernel = next(o for o in built.walk() if o.name == "func.func")
    assert {"ptx.st.async", "ptx.mbarrier.try_wait.parity", "ptx.mapa", "scf.while"} <= {o.name for o in kernel.walk()}
    assert kernel_launch(kernel).cluster_dims == (2, 1, 1)
    x = (np.random.default_rng(3).standard_normal((m, n)) * 3).astype(np.float32)
    arrays = (x, np.zeros((m, n), np.float32), np.zeros(m, np.float32), np.zeros(m, np.float32))

    def outputs():
        return run_cluster_grid(built, "rows", *(a.copy() for a in arrays))

    groups = []  # loads of the cluster's shared memory: one gather per CTA's buffer
    real = lockstep.LockstepInterpreter._buffers
    monkeypatch.setattr(lockstep.LockstepInterpreter, "_buffers", lambda self, base: groups.append(real(self, base)) or groups[-1])
    before = lockstep.FALLBACKS.copy()
    fast = outputs()
    assert lockstep.FALLBACKS == before
    assert any(g is not None and len(g) == 2 for g in groups), groups[:3]
    monkeypatch.setattr(threads, "LOCKSTEP", False)
    slow = outputs()
    _same_bits(fast, slow)
    assert np.allclose(fast[1], np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True), rtol=1e-5)
    monkeypatch.setattr(threads, "LOCKSTEP", True)

    def pending(self, op, inputs, varying):
        raise lockstep.Fallback("pending")

    monkeypatch.setitem(lockstep._SPECIAL, lockstep.MbarrierTryWaitParityOp, pending)
    _same_bits(outputs(), slow)
    assert lockstep.FALLBACKS["pending"] == before["pending"] + 1



def test_cluster_ids_vary_across_the_cluster_in_lockstep():
    """``gpu.block_id`` and ``bulkred.cluster_rank`` differ between the CTAs of a cluster
    run in lockstep (each thread's own), as thread by thread."""
    from bulkred_dialect.backend_ptx.runtime import context
    from bulkred_dialect.diagnostics import parse_module
    from bulkred_dialect.interpreter.clusters import run_cluster_grid

    g = "memref<4x2xindex, #bulkred.scope<global>>"
    text = (
        f"func.func @k(%A: {g}) attributes {{bulkred.launch = #bulkred.launch<grid = [4], block = [2], cluster = [2]>}} {{\n"
        '  %b = "gpu.block_id"() {dimension = #gpu<dim x>} : () -> index\n'
        '  %t = "gpu.thread_id"() {dimension = #gpu<dim x>} : () -> index\n'
        "  %r = bulkred.cluster_rank\n"
        "  %s = arith.addi %b, %r : index\n"
        "  %v = arith.muli %s, %t : index\n"
        "  %w = arith.addi %v, %r : index\n"
        f"  memref.store %w, %A[%b, %t] : {g}\n"
        "  func.return\n}\n"
    )
    m = parse_module(context(), text)
    before = lockstep.FALLBACKS.copy()
    (got,) = run_cluster_grid(m, "k", np.zeros((4, 2), np.int64))
    assert lockstep.FALLBACKS == before
    b, t = np.arange(4)[:, None], np.arange(2)[None, :]
    assert got.tolist() == ((b + b % 2) * t + b % 2).tolist()


# endregion


def _rank_barrier_kernel(condition: str) -> str:
    """Clusters of 2 CTAs of 4 threads: under ``condition`` (on %r, the rank, and %t, the
    thread), each thread stores its id in the CTA's shared buffer, waits at ``bar.sync``
    and writes its neighbour's (the barrier orders the exchange)."""
    g = "memref<4x4xindex, #bulkred.scope<global>>"
    s = "memref<4xindex, #bulkred.scope<shared>>"
    return (
        f"func.func @k(%A: {g}) attributes {{bulkred.launch = #bulkred.launch<grid = [4], block = [4], cluster = [2]>}} {{\n"
        '  %b = "gpu.block_id"() {dimension = #gpu<dim x>} : () -> index\n'
        '  %t = "gpu.thread_id"() {dimension = #gpu<dim x>} : () -> index\n'
        "  %r = bulkred.cluster_rank\n"
        f"  %S = memref.alloca() : {s}\n"
        "  %c1 = arith.constant 1 : index\n"
        "  %c2 = arith.constant 2 : index\n"
        "  %c4 = arith.constant 4 : index\n"
        f"  %go = {condition}\n"
        "  scf.if %go {\n"
        f"    memref.store %t, %S[%t] : {s}\n"
        "    ptx.bar.sync 0\n"
        "    %t1 = arith.addi %t, %c1 : index\n"
        "    %n = arith.remui %t1, %c4 : index\n"
        f"    %v = memref.load %S[%n] : {s}\n"
        f"    memref.store %v, %A[%b, %t] : {g}\n"
        "  }\n"
        "  func.return\n}\n"
    )


def test_a_barrier_of_some_whole_ctas_of_a_cluster_runs_in_lockstep(monkeypatch):
    """``bar.sync`` is each CTA's own: inside an ``scf.if`` that only the cluster's rank-1
    CTA takes (every one of its threads), the lockstep run goes on (no fallback) with the
    bits of the thread-by-thread run; inside one that half of each CTA's threads take, it
    falls back ('bar.sync'), and the thread-by-thread run reports the threads that never
    arrive."""
    from bulkred_dialect.backend_ptx.runtime import context
    from bulkred_dialect.diagnostics import parse_module
    from bulkred_dialect.interpreter.clusters import run_cluster_grid

    m = parse_module(context(), _rank_barrier_kernel("arith.cmpi eq, %r, %c1 : index"))
    before = lockstep.FALLBACKS.copy()
    (fast,) = run_cluster_grid(m, "k", np.zeros((4, 4), np.int64))
    assert lockstep.FALLBACKS == before
    monkeypatch.setattr(threads, "LOCKSTEP", False)
    (slow,) = run_cluster_grid(m, "k", np.zeros((4, 4), np.int64))
    monkeypatch.setattr(threads, "LOCKSTEP", True)
    _same_bits((fast,), (slow,))
    assert fast.tolist() == [[0] * 4, [1, 2, 3, 0], [0] * 4, [1, 2, 3, 0]]
    half = parse_module(context(), _rank_barrier_kernel("arith.cmpi ult, %t, %c2 : index"))
    with pytest.raises(Exception, match="not every thread arrived"):
        run_cluster_grid(half, "k", np.zeros((4, 4), np.int64))
    assert lockstep.FALLBACKS["bar.sync"] == before["bar.sync"] + 1
