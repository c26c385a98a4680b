"""Every thread of a kernel in the interpreter (interpreter/threads.py): the warp and CTA
collectives against their PTX ISA descriptions, the warp/CTA variants of
examples/scopes.py and whole grid reductions bit for bit against numpy models, and the
errors of kernels the interpreter cannot run; ptx.cvt (interpreter/ptx_cvt.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, memref, scf
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.errors import InterpretError
from bulkred_dialect.interpreter import run_kernel
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops import ptx
from bulkred_dialect.ops.tile import BULKRED

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import scopes  # noqa: E402

G = "#bulkred.scope<global>"
TID_X = '"gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index'
BID_X = '"gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index'


@pytest.fixture(scope="module")
def ctx() -> Context:
    c = Context()
    for d in (builtin.Builtin, func.Func, memref.MemRef, arith.Arith, scf.Scf, gpu.GPU, BULKRED, ptx.PTX):
        c.load_dialect(d)
    return c


def module(ctx: Context, body: str) -> builtin.ModuleOp:
    m = parse_module(ctx, "builtin.module {\n" + body + "\n}")
    m.verify()
    return m


def _lane_kernel(ctx: Context, threads: int, body: str, out_type: str = "i32") -> builtin.ModuleOp:
    """@k(%X, %Out): thread t reads X[t] into %x (i32), runs ``body`` (which defines %r of
    ``out_type``) and stores it to Out[t]."""
    return module(
        ctx,
        f"""
  func.func @k(%X: memref<{threads}xi32, {G}>, %Out: memref<{threads}x{out_type}, {G}>) attributes {{bulkred.launch = #bulkred.launch<grid = [1], block = [{threads}]>}} {{
    %t = {TID_X}
    %x = memref.load %X[%t] : memref<{threads}xi32, {G}>
    %all = arith.constant -1 : i32
{body}
    memref.store %r, %Out[%t] : memref<{threads}x{out_type}, {G}>
    func.return
  }}""",
    )


@pytest.mark.parametrize(
    "mode,b,c,source",
    [
        ("up", 1, 0, lambda i: i - 1 if i >= 1 else i),
        ("down", 3, 0x1F, lambda i: i + 3 if i + 3 <= 31 else i),
        ("bfly", 5, 0x1F, lambda i: i ^ 5),
        ("idx", 7, 0x1F, lambda i: 7),
        # segments of 8 lanes (c = (32 - 8) << 8 | 0x1f): idx 3 of the lane's own segment
        ("idx", 3, (24 << 8) | 0x1F, lambda i: (i & ~7) + 3),
        ("up", 2, 24 << 8, lambda i: i - 2 if i % 8 >= 2 else i),
    ],
)
def test_shfl_sync_modes(ctx, mode, b, c, source):
    m = _lane_kernel(
        ctx,
        64,
        f"""    %b = arith.constant {b} : i32
    %c = arith.constant {c} : i32
    %r = ptx.shfl.sync {mode} %x, %b, %c, %all : i32""",
    )
    x = np.arange(64, dtype=np.int32) * 3 + 100
    _, out = run_grid(m, "k", x, np.zeros(64, np.int32))
    want = [x[32 * (i // 32) + source(i % 32)] for i in range(64)]
    assert out.tolist() == want


def test_redux_sync_per_warp(ctx):
    m = _lane_kernel(ctx, 64, "    %r = ptx.redux.sync max s32 %x, %all : i32")
    x = np.random.default_rng(0).integers(-1000, 1000, 64).astype(np.int32)
    _, out = run_grid(m, "k", x, np.zeros(64, np.int32))
    assert out.tolist() == np.repeat(x.reshape(2, 32).max(axis=1), 32).tolist()


def test_bar_sync_and_shared_memory_are_per_cta(ctx):
    """Thread t writes X[t] to shared slot t; after bar.sync it reads slot (t + 1) % 32 of
    its own CTA's shared buffer."""
    m = module(
        ctx,
        f"""
  func.func @k(%X: memref<64xi32, {G}>, %Out: memref<64xi32, {G}>) attributes {{bulkred.launch = #bulkred.launch<grid = [2], block = [32]>}} {{
    %s = memref.alloca() : memref<32xi32, #bulkred.scope<shared>>
    %t = {TID_X}
    %bid = {BID_X}
    %c32 = arith.constant 32 : index
    %c1 = arith.constant 1 : index
    %base = arith.muli %bid, %c32 : index
    %g = arith.addi %base, %t : index
    %x = memref.load %X[%g] : memref<64xi32, {G}>
    memref.store %x, %s[%t] : memref<32xi32, #bulkred.scope<shared>>
    ptx.bar.sync 0
    %n = arith.addi %t, %c1 : index
    %j = arith.remui %n, %c32 : index
    %y = memref.load %s[%j] : memref<32xi32, #bulkred.scope<shared>>
    memref.store %y, %Out[%g] : memref<64xi32, {G}>
    func.return
  }}""",
    )
    x = np.arange(64, dtype=np.int32)
    _, out = run_grid(m, "k", x, np.zeros(64, np.int32))
    assert out.tolist() == [32 * (i // 32) + (i + 1) % 32 for i in range(64)]


def test_atomics_of_every_thread_are_atomic(ctx):
    m = module(
        ctx,
        f"""
  func.func @k(%C: memref<1xi32, {G}>, %Out: memref<256xi32, {G}>) attributes {{bulkred.launch = #bulkred.launch<grid = [2], block = [128]>}} {{
    %c = builtin.unrealized_conversion_cast %C : memref<1xi32, {G}> to !ptx.ptr<global>
    %one = arith.constant 1 : i32
    %old = ptx.atom add u32 %c, %one : !ptx.ptr<global>, i32
    %t = {TID_X}
    %bid = {BID_X}
    %n = arith.constant 128 : index
    %base = arith.muli %bid, %n : index
    %g = arith.addi %base, %t : index
    memref.store %old, %Out[%g] : memref<256xi32, {G}>
    func.return
  }}""",
    )
    c, out = run_grid(m, "k", np.zeros(1, np.int32), np.full(256, -1, np.int32))
    assert c.tolist() == [256] and sorted(out.tolist()) == list(range(256))


def test_partial_membermask_and_missed_barrier_are_errors(ctx):
    m = _lane_kernel(
        ctx,
        32,
        """    %lo = arith.constant 65535 : i32
    %r = ptx.redux.sync add u32 %x, %lo : i32""",
    )
    with pytest.raises(InterpretationError, match=r"membermask 0x0000ffff: the interpreter runs only whole warps \(mask 0xffffffff\)"):
        run_grid(m, "k", np.zeros(32, np.int32), np.zeros(32, np.int32))
    m = module(
        ctx,
        f"""
  func.func @k(%X: memref<32xi32, {G}>) attributes {{bulkred.launch = #bulkred.launch<grid = [1], block = [32]>}} {{
    %t = {TID_X}
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {{
      ptx.bar.sync 0
    }}
    func.return
  }}""",
    )
    with pytest.raises(InterpretationError, match=r"thread \(0, 0, 0\) of CTA \(0, 0, 0\): 'ptx.bar.sync' 0: not every thread arrived"):
        run_grid(m, "k", np.zeros(32, np.int32))


# region The project's variants


@pytest.fixture(scope="module")
def scopes_lowered():
    m = scopes.scopes_module("sm_90a")
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    return m


def _butterfly_f32(x: np.ndarray, combine) -> np.ndarray:
    """Every lane's value after shfl.sync.bfly steps 16..1 over rows of 32."""
    x = x.reshape(-1, 32).copy()
    for m in (16, 8, 4, 2, 1):
        x = combine(x, x[:, np.arange(32) ^ m]).astype(np.float32)
    return x


def test_warp_variants_match_numpy(scopes_lowered):
    n = scopes.CTAS * scopes.THREADS
    rng = np.random.default_rng(1)
    xi = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    _, out = run_grid(scopes_lowered, "warp_sum_i32", xi, np.zeros(n, np.int32))
    want = np.repeat(xi.reshape(-1, 32).astype(np.int64).sum(1), 32).astype(np.int32)  # wraps
    assert out.tolist() == want.tolist()
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    _, out = run_grid(scopes_lowered, "warp_max_f32", x, np.zeros(n, np.float32))
    assert out.tolist() == np.repeat(x.reshape(-1, 32).max(1), 32).tolist()


def test_cta_variants_match_numpy(scopes_lowered):
    """cta_shared: a butterfly per warp, the 4 warp sums through shared memory, a second
    butterfly in warp 0 (lanes past the 4 partials add 0)."""
    n = scopes.CTAS * scopes.THREADS
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    _, out = run_grid(scopes_lowered, "cta_sum_f32", x, np.zeros(n, np.float32))
    partials = _butterfly_f32(x, np.add)[:, 0].reshape(scopes.CTAS, -1)
    second = np.zeros((scopes.CTAS, 32), np.float32)
    second[:, : partials.shape[1]] = partials
    want = np.repeat(_butterfly_f32(second, np.add)[:, 0], scopes.THREADS)
    assert out.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    xi = rng.integers(0, 2**31, n, dtype=np.int64).astype(np.int32)
    _, out = run_grid(scopes_lowered, "cta_xor_i32", xi, np.zeros(n, np.int32))
    assert out.tolist() == np.repeat(np.bitwise_xor.reduce(xi.reshape(scopes.CTAS, -1), axis=1), scopes.THREADS).tolist()


def _whole(kind: str, shape: list[int], axes, dtype: str, variant: str | None = None):
    with T.kernel("k") as k:
        a = k.param("a", shape, dtype)
        out_shape = [1] if axes is None else [s for i, s in enumerate(shape) if i not in axes]
        b = k.param("b", out_shape, dtype)
        getattr(T, kind)(b, a, axes=axes, variant=variant)
    m = T.module(k, target="sm_90a")
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    f = next(iter(m.ops))
    workspace = [np.zeros(t.get_shape(), np.uint8) for t in f.function_type.inputs.data[2:]]
    return m, out_shape, workspace


def test_grid_sum_of_a_vector_over_two_ctas():
    """The whole-reduction kernel (ld.global.nc.v4, butterflies, partials, fence,
    atom.add ticket, last CTA) over 2 CTAs: within float32 rounding of the exact sum."""
    n = 9000
    m, out_shape, ws = _whole("sum", [n], None, "float32")
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    _, out, *_ = run_grid(m, "k", x, np.zeros(out_shape, np.float32), *ws)
    exact = x.astype(np.float64).sum()
    assert abs(out[0] - exact) <= 1e-6 * np.abs(x).astype(np.float64).sum() * np.log2(n)


@pytest.mark.parametrize("kind", ["sum"])  # max and min: the one-CTA test below and the GPU tests
def test_grid_int32_reductions_are_exact(kind):
    n = 9000
    m, out_shape, ws = _whole(kind, [n], None, "int32", variant="grid_full")
    x = np.random.default_rng(4).integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    _, out, *_ = run_grid(m, "k", x, np.zeros(out_shape, np.int32), *ws)
    want = {"sum": lambda: x.sum(dtype=np.int32), "max": x.max, "min": x.min}[kind]()  # the sum wraps
    assert out.tolist() == [int(want)]


@pytest.mark.parametrize("n, block", [(1, 32), (7, 32), (32, 32), (33, 32), (130, 32), (1000, 64)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_grid_full_of_one_cta_needs_no_workspace(n, block, dtype):
    """A small whole reduction is one CTA (one warp up to 128 vectors) that writes dst
    from thread 0: no workspace parameter, no ticket, and the exact result."""
    m, out_shape, ws = _whole("max" if dtype == "float32" else "sum", [n], None, dtype, variant="grid_full")
    assert ws == []
    f = next(iter(m.ops))
    launch = f.attributes["bulkred.launch"]
    assert f"grid = [1], block = [{block}]" in str(launch)
    rng = np.random.default_rng(n)
    if dtype == "float32":
        x = rng.standard_normal(n).astype(np.float32)
        want = [float(x.max())]
    else:
        x = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        want = [int(x.sum(dtype=np.int32))]
    _, out = run_grid(m, "k", x, np.full(out_shape, 7, x.dtype))
    assert out.tolist() == want


def test_clusters_are_not_run():
    m, out_shape, ws = _whole("sum", [9000], None, "int32", variant="grid_full_cluster")
    with pytest.raises(InterpretError, match=r"'k' runs in clusters of \(2, 1, 1\): the interpreter runs no clusters"):
        run_grid(m, "k", np.zeros(9000, np.int32), np.zeros(out_shape, np.int32), *ws)


def test_grid_row_sum():
    m, out_shape, ws = _whole("sum", [16, 72], [1], "float32")
    x = np.random.default_rng(5).standard_normal((16, 72)).astype(np.float32)
    _, out, *_ = run_grid(m, "k", x, np.zeros(out_shape, np.float32), *ws)
    exact = x.astype(np.float64).sum(axis=1)
    assert np.all(np.abs(out - exact) <= 1e-6 * np.abs(x).astype(np.float64).sum(axis=1) * 8)


# endregion

# region ptx.cvt


def _cvt(ctx: Context, spec: str, src: str, dst: str, x):
    m = module(
        ctx,
        f"""
  func.func @k(%x: {src}, %O: memref<1x{dst}, {G}>) {{
    %r = ptx.cvt {spec} %x : {src} -> {dst}
    %c0 = arith.constant 0 : index
    memref.store %r, %O[%c0] : memref<1x{dst}, {G}>
    func.return
  }}""",
    )
    dt = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16, "f64": np.float64, "i16": np.int16}[dst]
    (out,) = run_kernel(m, "k", x, np.zeros(1, dt))
    return out[0]


def test_cvt(ctx):
    assert _cvt(ctx, "s64 s32", "i32", "i64", -5) == -5
    assert _cvt(ctx, "u64 u32", "i32", "i64", -1) == 2**32 - 1
    assert _cvt(ctx, "u32 u64", "i64", "i32", 2**32 + 7) == 7
    assert _cvt(ctx, "s16 s32", "i32", "i16", 70000) == 70000 - 65536
    assert _cvt(ctx, "rn f32 s32", "i32", "f32", 16777217) == np.float32(16777216)
    assert _cvt(ctx, "rzi s32 f32", "f32", "i32", -2.7) == -2
    assert _cvt(ctx, "rni s32 f32", "f32", "i32", 2.5) == 2
    assert _cvt(ctx, "rmi s32 f32", "f32", "i32", 2.5) == 2
    assert _cvt(ctx, "rpi s32 f32", "f32", "i32", 2.1) == 3
    assert _cvt(ctx, "rzi s32 f32", "f32", "i32", 1e20) == 2**31 - 1  # saturates
    assert _cvt(ctx, "rzi u32 f32", "f32", "i32", -3.0) == 0
    assert _cvt(ctx, "rzi s32 f32", "f32", "i32", float("nan")) == 0
    assert _cvt(ctx, "rn f16 f32", "f32", "f16", 1.0 + 2**-11) == np.float16(1.0)  # ties to even
    assert _cvt(ctx, "rn bf16 f32", "f32", "bf16", 1.0 + 2**-8 + 2**-9) == 0x3F81
    assert _cvt(ctx, "f32 f16", "f16", "f32", np.float16(0.1)) == np.float32(np.float16(0.1))
    assert _cvt(ctx, "rn f32 f64", "f64", "f32", 0.1) == np.float32(0.1)
    with pytest.raises(InterpretationError, match=r"'ptx.cvt' rounding modifier '.rz' is not supported"):
        _cvt(ctx, "rz f32 f64", "f64", "f32", 0.1)


# endregion
