"""Kernel indices, index arithmetic, tile loops and views: the builder functions (IR they
build, errors naming the argument), the interpreter (one thread, views and loops, the
unsigned index arithmetic), lowering to PTX and assembling for sm_90a, and the bulk ops
into cluster_shared by rank (the kernels the GPU tests run, tests/gpu/tile_kernels.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import IndexType, i64

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.printer import assemble_module, print_ptx
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.interpreter import run_kernel
from bulkred_dialect.ops.tile import BulkCopyOp, BulkReduceOp, ClusterRankOp, ClusterSizeOp, CopyOp
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass

from gpu import tile_kernels as K


def _level2(k: T.Kernel):
    m = k.module(target="sm_90a")
    LowerTileReductionsPass().apply(T.context(), m)
    return m


def _ops(m, cls) -> list:
    return [op for op in m.walk() if isinstance(op, cls)]


# region Builder


def test_index_functions_build_gpu_and_bulkred_ops():
    with T.kernel("ids", grid=[2], block=[64], cluster=[2]) as k:
        values = [
            T.thread_id("y"),
            T.block_id("z"),
            T.block_dim(),
            T.grid_dim("x"),
            T.lane_id(),
            T.cluster_rank(),
            T.cluster_size(),
        ]
    m = k.module()
    want = [gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp, gpu.LaneIdOp, ClusterRankOp, ClusterSizeOp]
    assert [type(v.owner) for v in values] == want
    assert all(isinstance(v.type, IndexType) for v in values)
    assert values[0].owner.dimension.data == "y" and values[1].owner.dimension.data == "z"
    assert str(m) == str(_reparse(m))


def _reparse(m):
    from bulkred_dialect.diagnostics import parse_module

    return parse_module(T.context(), str(m), "<test>")


def test_index_arithmetic_ops():
    with T.kernel("math") as k:
        t = T.thread_id()
        results = [T.add(t, 1), T.sub(t, 1), T.mul(2, t), T.div(t, 32), T.rem(t, 32), T.min_of(t, 7), T.max_of(t, 7)]
    k.module()
    want = [arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp, arith.MinUIOp, arith.MaxUIOp]
    assert [type(r.owner) for r in results] == want
    # ints become index constants
    c = results[2].owner.lhs.owner
    assert isinstance(c, arith.ConstantOp) and c.value.value.data == 2 and isinstance(c.result.type, IndexType)


def test_serial_builds_a_for_with_its_body():
    with T.kernel("loop", block=[32]) as k:
        A = k.param("A", [64], "float32")
        loc = T.alloc_buffer([1], "float32")
        with T.serial(T.thread_id(), 64, step=T.block_dim()) as i:
            T.copy(T.view(A, [i], [1]), loc)
        with T.serial(3) as j:  # from 0
            pass
    k.module()
    loops = [op for op in k.func_op.walk() if isinstance(op, scf.ForOp)]  # the built kernel
    assert len(loops) == 2
    first, second = loops
    assert isinstance(first.lb.owner, gpu.ThreadIdOp) and isinstance(first.step.owner, gpu.BlockDimOp)
    assert [type(op) for op in first.body.block.ops] == [memref.SubviewOp, CopyOp, scf.YieldOp]
    assert [type(op) for op in second.body.block.ops] == [scf.YieldOp]
    assert second.lb.owner.value.value.data == 0 and second.ub.owner.value.value.data == 3
    assert j is second.body.block.args[0] and i.name_hint == "i"


def test_view_types():
    with T.kernel("views") as k:
        M = k.param("M", [8, 64], "float32")
        b = T.block_id()
        rows = T.view(M, [b, 0], [2, 64])
        fixed = T.view(M, [1, 16], [1, 32])
        inner = T.view(rows, [1, 8], [1, 16])
    k.module()
    assert str(rows.type) == "memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>"
    assert str(fixed.type) == "memref<1x32xf32, strided<[64, 1], offset: 80>, #bulkred.scope<global>>"
    assert str(inner.type) == "memref<1x16xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>"


def test_rank_operand_of_bulk_ops():
    with T.kernel("peer", grid=[2], block=[32], cluster=[2]) as k:
        s = T.alloc_shared([16], "int32")
        c = T.alloc_buffer([16], "int32", scope="cluster_shared")
        mbar = T.alloc_mbarrier()
        rank = T.cluster_rank()
        copy = T.bulk_copy(s, c, mbar=mbar, rank=rank)
        red = T.bulk_reduce("sum", s, c, mbar=mbar, rank=1)
    k.module()
    assert isinstance(copy, BulkCopyOp) and copy.rank is rank and copy.cta_mask is None
    assert isinstance(red, BulkReduceOp) and red.rank.owner.value.value.data == 1 and red.mbar is mbar


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: T.thread_id("w"), r"'dim' of T.thread_id must be one of x, y, z, got 'w'"),
        (lambda: T.block_dim(0), r"'dim' of T.block_dim must be one of x, y, z, got 0"),
        (lambda: T.add("a", 1), r"'a' of T.add must be an int or an index value, got str 'a'"),
        (lambda: T.div(T.thread_id(), 2.0), r"'b' of T.div must be an int or an index value, got float 2.0"),
        (lambda: T.mul(T.thread_id(), True), r"'b' of T.mul must be an int or an index value, got bool True"),
        (lambda: T.rem(1, 2**64), r"'b' of T.rem must fit in 64 bits, got 18446744073709551616"),
        (lambda: T.serial(0, 8, step=0), r"'step' of T.serial must be >= 1, got 0"),
        (lambda: T.serial(0, "n"), r"'hi' of T.serial must be an int or an index value, got str 'n'"),
        (lambda: T.view(T.alloc_shared([8], "float32"), [0, 0], [4]), r"'offsets' and 'shape' of T.view must have one entry per dimension of 'buf' \(1\), got 2 and 1"),
        (lambda: T.view(T.alloc_shared([8], "float32"), [0], [16]), r"'shape' of T.view must fit in 'buf' \[8\], got \[16\] \(axis 0\)"),
        (lambda: T.view(T.alloc_shared([8], "float32"), [6], [4]), r"'offsets' of T.view must keep the view inside 'buf' \[8\]: axis 0 offset 6 with size 4"),
        (lambda: T.view(T.alloc_shared([8], "float32"), 0, [4]), r"'offsets' of T.view must be a list of ints or index values, got int 0"),
        (lambda: T.view(T.alloc_shared([8], "float32"), [0], [0]), r"'shape' of T.view must be a non-empty list of positive integers, got \[0\]"),
        (lambda: T.view(3, [0], [1]), r"'buf' of T.view must be a buffer from k.param or T.alloc_buffer, got int 3"),
        (lambda: T.bulk_copy(T.alloc_shared([4], "int32"), T.alloc_buffer([4], "int32", scope="cluster_shared"), mbar=T.alloc_mbarrier(), rank="0"), r"'rank' of T.bulk_copy must be an int or an index value, got str '0'"),
        (lambda: T.bulk_reduce("sum", T.alloc_shared([4], "int32"), T.alloc_buffer([4], "int32", scope="cluster_shared"), mbar=T.alloc_mbarrier(), rank=1.5), r"'rank' of T.bulk_reduce must be an int or an index value, got float 1.5"),
    ],
)
def test_argument_errors_name_the_argument(build, message):
    with T.kernel("bad"):
        with pytest.raises(ValueError, match=message):
            build()


def test_index_outside_a_kernel_and_from_another_kernel():
    with pytest.raises(ValueError, match=r"T.thread_id must be called inside a 'with T.kernel\(...\)' block"):
        T.thread_id()
    with T.kernel("first"):
        t = T.thread_id()
    with T.kernel("second"):
        with pytest.raises(ValueError, match=r"'a' of T.add belongs to another kernel, not to the open kernel 'second'"):
            T.add(t, 1)


def test_verifier_errors_are_located_at_the_builder_line():
    from bulkred_dialect.diagnostics import LocatedError

    with T.kernel("no_rank", grid=[2], block=[32], cluster=[2]) as k:
        s = T.alloc_shared([16], "int32")
        c = T.alloc_buffer([16], "int32", scope="cluster_shared")
        T.bulk_copy(s, c, mbar=T.alloc_mbarrier())
    with pytest.raises(LocatedError, match=r"test_kernel_indices.py:\d+:9: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a 'rank' operand"):
        k.module()
    with T.kernel("column", grid=[1], block=[32]) as k2:
        M = k2.param("M", [8, 64], "float32")
        T.bulk_copy(T.alloc_shared([8, 32], "float32"), T.view(M, [0, 32], [8, 32]))
    with pytest.raises(LocatedError, match=r"'dst' must be one contiguous range of memory for a bulk operation, got strides \[64, 1\] for shape \[8, 32\]"):
        k2.module()


# endregion

# region Interpreter


def test_interpreter_thread_views_and_tile_loop(rng=np.random.default_rng(7)):
    m = _level2(K.thread_sums())
    A = rng.integers(-1000, 1000, K.GRID * K.THREADS * K.PER_THREAD).astype(np.float32)
    P = np.full(K.GRID * K.THREADS, np.nan, np.float32)
    ran = [(0, 0), (0, 127), (1, 5), (3, 127)]
    for cta, tid in ran:
        run_kernel(m, "thread_sums", A, P, thread_id=(tid, 0, 0), block_id=(cta, 0, 0))
    sums = A.reshape(-1, K.PER_THREAD).sum(axis=1)
    for cta, tid in ran:
        g = cta * K.THREADS + tid
        assert P[g] == sums[g], (cta, tid)
    untouched = np.ones(P.shape, bool)
    untouched[[c * K.THREADS + t for c, t in ran]] = False
    assert np.isnan(P[untouched]).all()  # each thread wrote only its own partial


def test_interpreter_index_arithmetic():
    """divui/remui/minui/maxui/minsi/maxsi on indices (and on i64), read back."""
    with T.kernel("math", block=[64]) as k:
        out = k.param("out", [8], "int64")
        t = T.thread_id()
        vals = [T.div(t, 32), T.rem(t, 32), T.min_of(t, 7), T.max_of(t, 7), T.sub(t, 100)]
        a, b = T.sub(0, 3), T.add(0, 2)
        vals += [arith.MinSIOp(a, b).result, arith.MaxSIOp(a, b).result, T.min_of(a, b)]
        for n, v in enumerate(vals):
            memref.StoreOp.get(arith.IndexCastOp(v, i64).result, out, [T.add(0, n)])
    m = k.module()
    (got,) = run_kernel(m, "math", np.zeros(8, np.int64), thread_id=(45, 0, 0))
    # unsigned min of -3 and 2 is 2 (-3 is 2^64 - 3)
    assert got.tolist() == [1, 13, 7, 45, -55, -3, 2, 2]


def test_interpreter_ids_and_launch_extents():
    with T.kernel("ids", grid=[6, 2], block=[32, 2], cluster=[3]) as k:
        out = k.param("out", [7], "int64")
        vals = [T.thread_id("y"), T.block_id("x"), T.block_dim("y"), T.grid_dim("x"), T.lane_id(), T.cluster_rank(), T.cluster_size()]
        for n, v in enumerate(vals):
            memref.StoreOp.get(arith.IndexCastOp(v, i64).result, out, [T.add(0, n)])
    (got,) = run_kernel(k.module(), "ids", np.zeros(7, np.int64), thread_id=(5, 1, 0), block_id=(4, 1, 0), cluster_rank=1)
    assert got.tolist() == [1, 4, 2, 6, (32 + 5) % 32, 1, 3]


def test_interpreter_view_out_of_bounds():
    from xdsl.utils.exceptions import InterpretationError

    with T.kernel("oob") as k:
        A = k.param("A", [8], "float32")
        loc = T.alloc_buffer([4], "float32")
        T.copy(T.view(A, [T.mul(T.block_id(), 4)], [4]), loc)
    m = _level2(k)
    run_kernel(m, "oob", np.zeros(8, np.float32), block_id=(1, 0, 0))
    with pytest.raises(InterpretationError, match=r"memref.subview axis 0: offset 8, size 4, stride 1 leaves a buffer of shape \[8\]"):
        run_kernel(m, "oob", np.zeros(8, np.float32), block_id=(2, 0, 0))


# endregion

# region Lowering and assembling


@pytest.mark.parametrize(
    "kernel",
    [K.thread_sums, lambda: K.cluster_peer("reduce"), lambda: K.cluster_peer("copy"), K.cluster_gather, lambda: K.cluster_multicast(0b1010)],
    ids=["thread_sums", "cluster_reduce", "cluster_copy", "cluster_gather", "cluster_multicast"],
)
def test_gpu_test_kernels_assemble_for_sm_90a(kernel):
    k = kernel()
    m = lower_tile_module(k.module(target="sm_90a"), "sm_90a")
    ptx = print_ptx(m, "sm_90a")
    assert assemble_module(m, "sm_90a")
    if k.name.startswith("cluster_multicast"):
        assert ".reqnctapercluster 4, 1, 1" in ptx and ".multicast::cluster" in ptx
    elif k.name.startswith("cluster"):
        assert ".reqnctapercluster 2, 1, 1" in ptx
        assert "mapa.shared::cluster.u32" in ptx and "barrier.cluster.arrive.release;" in ptx
    if k.name == "cluster_reduce":
        assert "cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.s32" in ptx
    if k.name == "thread_sums":
        assert "mov.u32 %r1, %ctaid.x;" in ptx and "%tid.x" in ptx and "%ntid" not in ptx


# endregion
