"""reduction -> grid_rows: a whole kernel reduces each row of M x N into one value
(priority 65): one warp per row.

* grid: CTAs of 256 threads (8 warps), up to 8 per multiprocessor; warp w of W takes
  rows w, w + W, ...;
* each row: lane l reads the vectors l, l + 32, ... of the row (``ld.global.nc.v4`` when
  a row is a whole number of vectors, else scalar loads), 4 loads in flight, one
  accumulator per vector lane; then a warp reduction (``redux.sync`` for int32, else a
  ``shfl.sync`` butterfly) and lane 0 writes ``dst[row]``.

No atomics: the same bits on every run. f16 and bf16 are combined in float32.

Spec: PTX ISA, ld (.nc, vectors), shfl.sync, redux.sync (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceKind, ReduceOp, enclosing_kernel
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import WARP
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    checked,
    form_of,
    global_ptr,
    grid_ctas,
    grid_predicates,
    neutral,
    reducer,
    set_launch,
    store_out,
    stream,
)
from bulkred_dialect.passes.variants.kernel import (
    elem_of,
    emitter_at,
    sm_count,
    warp_reduce_state,
)

BLOCK = 256
WARPS = BLOCK // WARP
CTAS_PER_SM = 8
UNROLL = 4


def _redux_f32(op: ReduceOp, target: Target) -> bool:
    return target.sm >= 100 and target.suffix == "a" and op.kind.data in (ReduceKind.MAX, ReduceKind.MIN)


def lower_grid_rows(op: Operation, rewriter: PatternRewriter, target: Target, vec: int | None = None) -> None:
    """``vec``: 1 for scalar loads (any address: ``grid_gather`` of a view off the
    vector alignment), else the element type's vector where a row is whole vectors."""
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    kernel = enclosing_kernel(op)
    assert form is not None and kernel is not None
    elem, kind = elem_of(op), op.kind.data
    m, n = form.m, form.n
    vec = (elem.vector if n % elem.vector == 0 else 1) if vec is None else vec
    ctas = grid_ctas(kernel, max(1, min(sm_count(target) * CTAS_PER_SM, -(-m // WARPS))), BLOCK)  # warps loop over rows
    set_launch(kernel, [ctas], [BLOCK])
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    lane = e.wide(e.and_b32(tid, WARP - 1))
    warp = e.add_i(e.mul_i(e.sreg(SpecialRegister.CTAID_X), WARPS), e.shr_u32(tid, 5))
    x, y = global_ptr(e, op.src), global_ptr(e, op.dst)
    items = n // vec
    item_bytes = vec * elem.bytes
    full = items // WARP

    red = reducer(op)

    def row(b: Emitter, r: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        if red.exp_sub:
            red.load_shifts(b, global_ptr(b, op.aux), r)
        start = b.ptr_add(x, b.add_i(b.mul_i(r, n * elem.bytes), b.mul_i(lane, item_bytes)))
        index = (b.mul_i(lane, vec), WARP * vec, 1) if red.needs_index else None
        accs, nxt, at = stream(b, red, start, neutral(b, red, vec), full, WARP * item_bytes, vec, UNROLL, index)
        if items % WARP:
            accs = checked(b, red, b.cmp("ult", lane, items - full * WARP), nxt, accs, vec, at)
        if red.width == 1:
            v = [b.fold(kind, elem.accumulator, accs)]
        else:
            v = red.fold(b, red.split(accs))
        v = warp_reduce_state(b, red, v, redux_f32=_redux_f32(op, target))

        def write(c: Emitter) -> list[SSAValue]:
            store_out(c, red, y, v, r)
            return []

        b.if_(b.cmp("eq", lane, 0), write)
        return []

    e.for_(e.wide(warp), m, ctas * WARPS, [], row)
    rewriter.erase(op)


GRID_ROWS = Variant(
    "bulkred.reduce", "grid_rows", priority=65, predicates=grid_predicates("inner"), lower=lower_grid_rows
)
