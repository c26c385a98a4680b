"""reduction -> grid_split_bulk: a column sum of M x N (float32 or int32) by the
split-reduction pattern (priority 64): each CTA sums its rows of one column tile into a
shared tile, and one ``cp.reduce.async.bulk.global.shared::cta.bulk_group.add`` adds the
tile into ``dst`` in global memory.

* grid: column tiles of 1024 columns (256 threads x 4 columns, ``ld.global.nc.v4``) times
  row splits, about 8 CTAs per multiprocessor; split s takes rows s, s + splits, ...;
* each thread stores its 4 column sums to the shared tile, ``fence.proxy.async.shared::cta``,
  ``bar.sync``; thread 0 issues the bulk reduce of the tile's valid bytes, commits the
  bulk group and waits for it to have read the tile (``wait_group.read 0``).

``dst`` must start at zero: without ``accum`` the launcher zeroes it before each launch
(``bulkred.zero_init``). Floating-point additions of the splits land in any order, so
float results may differ in the last bits between runs: ``deterministic`` declines this
variant (``grid_split_det`` then runs). Needs N a multiple of 4 (16-byte rows) and at
least 2 MiB of ``src`` (below that ``grid_split_det``'s one launch is as fast: MIN_BYTES).

Spec: PTX ISA 9.7.9.25.4.2 (cp.reduce.async.bulk), fence.proxy.async (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.bulk import (
    BulkRedOp,
    BulkRedType,
    CpReduceAsyncBulkGlobalSharedCtaOp,
)
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.sync import (
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkWaitGroupOp,
    FenceProxyAsyncOp,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceKind, ReduceOp, enclosing_kernel
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import Predicate, dtype_in, kind_in, plain_reduction
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    column_partial,
    column_plan,
    form_of,
    global_ptr,
    grid_predicates,
    not_deterministic,
    require_alignment,
    set_launch,
    zero_before_launch,
)
from bulkred_dialect.passes.variants.kernel import elem_of, emitter_at, sm_count

CTAS_PER_SM = 8


MIN_BYTES = 2 << 20
"""Below this many bytes of ``src`` the launcher's zeroing of ``dst`` (a second launch)
costs more than the bulk reduction saves: ``grid_split_det`` (one launch) is as fast or
faster in GPU time and per call (tools/diag.py variants on an H100: 32 x 32 2.9 us
against 3.5 us, 512 x 512 4.3 us against 4.4 us; 1024 x 1024 8.3 us against 6.7 us)."""


def _large(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, ReduceOp)
    f = form_of(op)
    nbytes = f.m * f.n * elem_of(op).bytes
    return nbytes >= MIN_BYTES, f"{nbytes} bytes"


def _rows_of_16_bytes(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, ReduceOp)
    f = form_of(op)
    n = f.n if f else 0
    return n % 4 == 0, f"N = {n}"


PREDICATES = [
    *grid_predicates("outer")[:3],
    Predicate("dtype", dtype_in("float32", "int32"), expected="float32, int32"),
    Predicate("kind", kind_in(ReduceKind.SUM), expected="sum"),
    Predicate("columns", _rows_of_16_bytes, expected="N a multiple of 4"),
    Predicate("size", _large, expected=f">= {MIN_BYTES} bytes"),
    Predicate("deterministic", not_deterministic, expected="not requested"),
    plain_reduction("cp.reduce.async.bulk"),
]


def lower_grid_split_bulk(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    kernel = enclosing_kernel(op)
    assert form is not None and kernel is not None
    elem = elem_of(op)
    plan = column_plan(form, elem, sm_count(target) * CTAS_PER_SM)
    set_launch(kernel, [plan.tiles, plan.split], [plan.block])
    if op.accum is None:
        zero_before_launch(kernel, op.dst)
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    tile_id = e.sreg(SpecialRegister.CTAID_X)
    col, accs = column_partial(e, op, plan, tid, tile_id, e.sreg(SpecialRegister.CTAID_Y))
    tile = e.shared([plan.width], elem.ir, "tile")
    t = elem.ld

    def store(b: Emitter) -> list:
        q = b.ptr_add(tile, b.mul_i(tid, plan.vec * elem.bytes))
        for j, a in enumerate(accs):
            b.st(t, q, a, j * elem.bytes)
        return []

    e.if_(e.cmp("slt", col, plan.n), store)
    e.emit(FenceProxyAsyncOp(StateSpace.SHARED_CTA))
    e.bar_sync()

    def issue(b: Emitter) -> list:
        first = b.mul_i(tile_id, plan.width)
        cols = b.min_s32(b.sub_i(plan.n, first), plan.width)
        dst = b.ptr_add(global_ptr(b, op.dst), b.mul_i(b.wide(first), elem.bytes))
        require_alignment(dst, 16)  # cp.reduce.async.bulk: 16-byte aligned global address
        red_type = BulkRedType.F32 if elem.dtype.is_float else BulkRedType.S32
        b.emit(CpReduceAsyncBulkGlobalSharedCtaOp(BulkRedOp.ADD, red_type, dst, tile, b.mul_i(cols, elem.bytes)))
        b.emit(CpAsyncBulkCommitGroupOp())
        b.emit(CpAsyncBulkWaitGroupOp(0, read=True))
        return []

    e.if_(e.cmp("eq", tid, 0), issue)
    rewriter.erase(op)


GRID_SPLIT_BULK = Variant(
    "bulkred.reduce", "grid_split_bulk", priority=64, predicates=PREDICATES, lower=lower_grid_split_bulk
)
