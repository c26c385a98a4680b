"""reduction -> grid_split_det: a column reduction of M x N with the same bits on every
run, for every kind and every type the collective lowerings take (priority 62).

Each CTA reduces its rows of one column tile as ``grid_split_bulk`` does and writes its
partial row into the workspace; ``fence.acq_rel.gpu``, ``bar.sync``, and thread 0 takes a
ticket of its column tile with ``atom.add.u32``. The CTA that arrives last for a tile
reduces the tile's partial rows in split order, writes ``dst`` and resets the ticket.
This is the split reduction's second pass, done by the last CTA of each tile inside the
same launch.

Spec: PTX ISA, ld, atom, fence (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.dialects.builtin import i8
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.arith import ArithType, DivOp, RemOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceOp, enclosing_kernel
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import WARP
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    Form,
    accumulate,
    add_workspace,
    align16,
    checked,
    column_partial,
    column_plan,
    form_of,
    global_ptr,
    grid_predicates,
    load_item,
    neutral,
    reducer,
    set_launch,
    store_lanes,
    stream,
)
from bulkred_dialect.passes.variants.kernel import (
    COUNTER_BYTES,
    acquire,
    emitter_at,
    last_cta,
    reset_counter,
    sm_count,
)

CTAS_PER_SM = 4
FINISH_UNROLL = 4
TALL = 16384
"""Rows from which a fused column reduction streams vectors (:func:`fused_vec`)."""
"""Partial rows the last CTA of a tile loads at once (fused states, scalar loads)."""


def fused_vec(r, form: Form) -> int:
    """Columns per thread of a fused reduction, as measured on the H100
    (tools/diag.py fused_kernels; docs/fused.md): one column on matrices of fewer than
    16384 rows (more column tiles, fewer row splits for the last CTA to combine); on
    taller ones whole vectors for a one-register state, 2 columns for a state of several
    registers (fewer registers per thread); a plain reduction whole vectors."""
    if r.plain:
        return 4
    if form.m < TALL:
        return 1
    return 4 if r.width == 1 else 2


ONE_CTA_BYTES = 64 << 10
"""A column reduction of at most this many bytes runs in one CTA (:func:`one_cta`)."""
ONE_CTA_THREADS = 1024
ONE_CTA_GROUPS = 32
ONE_CTA_SHARED = 32 << 10


def one_cta_plan(form: Form, r, max_vec: int = 16) -> tuple[int, int, int] | None:
    """(vec, columns of vectors, row groups) of a column reduction small enough for one
    CTA (at most :data:`ONE_CTA_BYTES`, one block), or None."""
    elem = r.elem
    if form.batch != 1 or form.m * form.n * elem.bytes > ONE_CTA_BYTES:
        return None
    vec = min(elem.vector, elem.partials.vector, max_vec)
    vec = vec if form.n % vec == 0 else 1
    cols = form.n // vec
    if cols > ONE_CTA_THREADS:
        return None
    groups = min(ONE_CTA_THREADS // cols, ONE_CTA_GROUPS, form.m, ONE_CTA_SHARED // (cols * vec * r.slot_bytes))
    return (vec, cols, groups) if groups >= 1 else None


def one_cta(op: ReduceOp, rewriter: PatternRewriter, form: Form, vec: int, cols: int, groups: int) -> None:
    """A small column reduction in one CTA: thread t reads the vector column t % C of
    rows t / C, t / C + G, ... (G row groups); each group's partial row goes to shared
    memory; after ``bar.sync`` the threads of group 0 combine the G partials of their
    column in group order and write ``dst``. One launch, no workspace, no ticket."""
    kernel = enclosing_kernel(op)
    assert kernel is not None
    r = reducer(op)
    elem = r.elem
    m, n = form.m, form.n
    active = cols * groups
    set_launch(kernel, [1], [-(-active // WARP) * WARP])
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    col = e.value(RemOp(ArithType.U32, tid, e.const(cols)))
    g = e.value(DivOp(ArithType.U32, tid, e.const(cols)))
    row_bytes = n * elem.bytes
    full = m // groups

    def mine(b: Emitter) -> list[SSAValue]:
        if r.exp_sub:
            r.load_shifts(b, global_ptr(b, op.aux), b.mul_i(b.wide(col), vec), vec)
        start = b.ptr_add(
            global_ptr(b, op.src), b.add_i(b.mul_i(b.wide(g), row_bytes), b.mul_i(b.wide(col), vec * elem.bytes))
        )
        index = (g, groups, 0) if r.needs_index else None
        accs, nxt, at = stream(b, r, start, neutral(b, r, vec), full, groups * row_bytes, vec, 4, index)
        if m % groups:
            accs = checked(b, r, b.cmp("ult", g, m - full * groups), nxt, accs, vec, at, 0)
        return accs

    inside = e.cmp("ult", tid, active)
    accs = e.if_(inside, mine, lambda b: neutral(b, r, vec), r.types * vec)
    slot = r.slot_bytes
    sh = e.shared([groups * cols * vec * slot], i8, "column_partials")  # [group][column lane]

    def write(b: Emitter) -> list:
        q = b.ptr_add(sh, b.mul_i(tid, vec * slot))  # tid = g * cols + col
        for j, state in enumerate(r.split(accs)):
            r.store(b, q, state, j * slot)
        return []

    e.if_(inside, write)
    e.bar_sync()

    def finish(b: Emitter) -> list:
        q = b.ptr_add(sh, b.mul_i(col, vec * slot))
        totals = []
        for j in range(vec):
            total = r.load(b, q, j * slot)
            for k in range(1, groups):
                total = r.combine(b, total, r.load(b, q, (k * cols * vec + j) * slot))
            totals.append(total)
        store_lanes(b, r, global_ptr(b, op.dst), totals, b.mul_i(b.wide(col), vec))
        return []

    e.if_(e.cmp("ult", tid, cols), finish)
    rewriter.erase(op)


def lower_grid_split_det(op: Operation, rewriter: PatternRewriter, target: Target, max_vec: int = 16) -> None:
    """``max_vec``: 1 for scalar loads (any address: ``grid_gather`` of a view off the
    vector alignment)."""
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    small = one_cta_plan(form, reducer(op), max_vec)
    if small is not None:
        one_cta(op, rewriter, form, *small)
        return
    split_det(op, rewriter, target, form, max_vec=max_vec)


def split_det(
    op: ReduceOp, rewriter: PatternRewriter, target: Target, form: Form, block: int = 256, ctas: int | None = None,
    max_vec: int = 16,
) -> None:
    """The deterministic split reduction of ``form``'s ``batch`` column reductions of
    m x n (``outer``: one; ``middle`` [O, R, I]: O, one per ``ctaid.z``), over about
    ``ctas`` CTAs of ``block`` threads (4 per multiprocessor by default)."""
    kernel = enclosing_kernel(op)
    assert kernel is not None
    r = reducer(op)
    elem = r.elem
    batch = form.batch
    ctas = sm_count(target) * CTAS_PER_SM if ctas is None else ctas
    plan = column_plan(form, elem, max(1, ctas // batch), block, max_vec=min(fused_vec(r, form), max_vec))
    set_launch(kernel, [plan.tiles, plan.split, *([batch] if batch > 1 else [])], [plan.block])
    slot = r.slot_bytes
    # the workspace: a partial row per split (split-major, per block of the batch), then
    # a ticket counter per tile
    partial_bytes = align16(batch * plan.split * plan.n * slot)
    # no workspace for one row split: each CTA's states are its columns' results
    ws = add_workspace(kernel, partial_bytes + batch * plan.tiles * COUNTER_BYTES) if plan.split > 1 else None
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    tile_id = e.sreg(SpecialRegister.CTAID_X)
    s = e.sreg(SpecialRegister.CTAID_Y)
    o = e.sreg(SpecialRegister.CTAID_Z) if batch > 1 else None
    base = None if o is None else e.mul_i(e.wide(o), plan.m * plan.n * elem.bytes)
    # a fused state's step is longer: 8 loads in flight (measured: +5 to +10% at 1 GiB)
    out_base = None if o is None or not r.exp_sub else e.mul_i(e.wide(o), plan.n)
    col, accs = column_partial(e, op, plan, tid, tile_id, s, 4 if r.plain else 8, base=base, out_base=out_base)
    valid = e.cmp("slt", col, plan.n)

    def store_columns(b: Emitter, states: list[list[SSAValue]]) -> None:
        """``dst`` of the thread's columns (of block ``o`` of the batch)."""
        first = b.wide(col)
        if o is not None:
            first = b.add_i(first, b.mul_i(b.wide(o), plan.n))
        store_lanes(b, r, global_ptr(b, op.dst), states, first)

    if ws is None:  # one CTA per column tile (a short matrix): its states are the results
        e.if_(valid, lambda b: store_columns(b, r.split(accs)))
        rewriter.erase(op)
        return
    w = global_ptr(e, ws)

    def partial_at(b: Emitter, split: SSAValue) -> SSAValue:
        if o is not None:
            split = b.add_i(b.mul_i(b.wide(o), plan.split), split)
        return b.ptr_add(w, b.mul_i(b.add_i(b.mul_i(split, plan.n), b.wide(col)), slot))

    def write(b: Emitter) -> list:
        q = partial_at(b, b.wide(s))
        for j, a in enumerate(r.split(accs)):
            r.store(b, q, a, slot * j)
        return []

    e.if_(valid, write)
    ticket = tile_id if o is None else e.add_i(e.mul_i(o, plan.tiles), tile_id)
    counter = e.ptr_add(w, e.add_i(e.mul_i(e.wide(ticket), COUNTER_BYTES), partial_bytes))
    last = last_cta(e, counter, plan.split, tid)

    def finish(b: Emitter) -> list:
        acquire(b)

        def columns(c: Emitter) -> list:
            acc_elem = elem.partials

            def step(d: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
                return accumulate(d, r, args, load_item(d, acc_elem, partial_at(d, iv), 0, plan.vec, nc=False))

            def partial_row(d: Emitter, q: SSAValue) -> list[list[SSAValue]]:
                # a one-register state's partials are read as whole vectors (combined,
                # not absorbed: the prologue was applied when the elements were loaded)
                if r.width == 1:
                    return [[v] for v in load_item(d, acc_elem, q, 0, plan.vec, nc=False)]
                return [r.load(d, q, slot * j) for j in range(plan.vec)]

            def unrolled(unroll: int):
                # `unroll` partial rows loaded before they are combined (in split order):
                # the loads overlap instead of one L2 round trip per split
                def body(d: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
                    loaded = [partial_row(d, partial_at(d, d.add_i(iv, u) if u else iv)) for u in range(unroll)]
                    states = r.split(args)
                    for row in loaded:
                        states = [r.combine(d, a, b) for a, b in zip(states, row, strict=True)]
                    return r.flat(states)

                return body

            if r.plain:
                total = c.for_(0, plan.split, 1, neutral(c, r, plan.vec), step)
            else:
                rounds = plan.split // FINISH_UNROLL * FINISH_UNROLL
                total = neutral(c, r, plan.vec)
                if rounds:
                    total = c.for_(0, rounds, FINISH_UNROLL, total, unrolled(FINISH_UNROLL))
                if plan.split > rounds:
                    total = c.for_(rounds, plan.split, 1, total, unrolled(1))
            store_columns(c, r.split(total))
            return []

        def reset(c: Emitter) -> list:
            reset_counter(c, counter)
            return []

        b.if_(valid, columns)
        b.if_(b.cmp("eq", tid, 0), reset)
        return []

    e.if_(last, finish)
    rewriter.erase(op)


GRID_SPLIT_DET = Variant(
    "bulkred.reduce", "grid_split_det", priority=62, predicates=grid_predicates("outer"),
    lower=lower_grid_split_det,
)

