"""reduction -> grid_runs: a ``general`` or ``strided`` reduction whose innermost axis
is reduced with unit stride and which reduces one other axis (after merging), e.g.
axes (0, 2) of [A, K, C]: each ``dst`` value combines A contiguous runs of C elements
(priority 66; it takes no form another variant takes but ``grid_gather``, its
fallback).

* grid: x the ``dst`` values (their kept indices give the base address, once per
  CTA), y the row splits S; a CTA reduces rows a = s, s + S, ... of its value;
* in a CTA of up to 256 threads, each row's C elements are read as vectors
  (``ld.global.nc.v4`` for float32 when C and the strides allow, else narrower): a
  thread takes one vector position of several rows when a row has fewer vectors than
  the CTA has threads (4 rows in flight per thread), else several positions of each
  row; one accumulator per vector lane;
* the CTA's partial: the lane states folded, a warp reduction, warp partials through
  shared memory;
* S = 1: thread 0 writes ``dst``. S > 1: thread 0 writes the partial into the
  workspace, ``fence.acq_rel.gpu``, a ticket per ``dst`` value (``atom.add.u32``); the
  CTA that arrives last combines the S partials in split order, writes ``dst`` and
  resets the ticket.

S is chosen so that about 8 CTAs per multiprocessor run, each thread reading at least
2 vectors. Every combining step has a fixed order: the same bits on every run.

Spec: PTX ISA, ld (.nc, vectors), shfl.sync, redux.sync, atom, fence (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.dialects.builtin import i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.arith import ArithType, DivOp, RemOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceOp, enclosing_kernel
from bulkred_dialect.passes.canonical import GENERAL, STRIDED, Canonical
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import WARP, Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    MAX_GRID_Y,
    add_workspace,
    align16,
    checked,
    form_of,
    global_ptr,
    grid_predicates,
    neutral,
    offset_of,
    reducer,
    set_launch,
    store_out,
    stream,
)
from bulkred_dialect.passes.variants.grid_full import grid_combine, workspace_bytes
from bulkred_dialect.passes.variants.kernel import (
    cta_reduce_state,
    elem_of,
    emitter_at,
    sm_count,
)

BLOCK = 256
CTAS_PER_SM = 8
MIN_ITEMS = 2
"""Vectors a thread reads at least (fewer splits below that)."""
UNROLL = 4


def _verdict(f: Canonical) -> tuple[bool, str]:
    """Whether this variant takes form ``f``, and what it saw (the ``runs`` row)."""
    if f.form not in (GENERAL, STRIDED):
        return False, f"form {f.form}"
    if not f.reduced[-1]:
        return False, "innermost axis kept"
    if f.element_strides()[-1] != 1:
        return False, f"innermost stride {f.element_strides()[-1]}"
    n = sum(f.reduced)
    return n == 2, f"{n} reduced axes, the innermost contiguous"


def runs_form(f: Canonical) -> bool:
    """``f`` is a form this variant takes (its form and ``runs`` predicates)."""
    return _verdict(f)[0]


def _runs(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, ReduceOp)
    return _verdict(form_of(op))


PREDICATES = [
    *grid_predicates(GENERAL, STRIDED),
    Predicate("runs", _runs, expected="2 reduced axes, the innermost contiguous"),
]


def _vector(form: Canonical, lanes: int) -> int:
    """The widest vector (at most ``lanes`` elements) that divides the run and every
    other stride, so that each vector's address is a multiple of its size."""
    strides = form.element_strides()
    vec = lanes
    while vec > 1 and (form.shape[-1] % vec or any(s % vec for s in strides[:-1])):
        vec //= 2
    return vec


def lower_grid_runs(op: Operation, rewriter: PatternRewriter, target: Target, max_vec: int = 16) -> None:
    """``max_vec``: 1 for scalar loads (``grid_gather`` of a view off the vector alignment)."""
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    kernel = enclosing_kernel(op)
    assert kernel is not None
    r = reducer(op)
    elem = elem_of(op)
    strides = form.element_strides()
    kept = [(d, s) for d, s, red in zip(form.shape, strides, form.reduced, strict=True) if not red]
    (rows, row_stride), (run, _) = [(d, s) for d, s, red in zip(form.shape, strides, form.reduced, strict=True) if red]
    outputs = form.kept
    vec = _vector(form, min(elem.vector, max_vec))
    cw = run // vec  # vectors per run
    block = min(BLOCK, max(WARP, -(-(cw * rows) // WARP) * WARP))
    step = max(1, block // cw)  # rows a CTA reads side by side (1 when a row fills it)
    wanted = sm_count(target) * CTAS_PER_SM
    per_thread = MIN_ITEMS if cw <= block else 1
    split = max(1, min(wanted // outputs, -(-rows // (step * per_thread)), MAX_GRID_Y))
    set_launch(kernel, [outputs, *([split] if split > 1 else [])], [block])
    ws = add_workspace(kernel, outputs * align16(workspace_bytes(split, r.slot_bytes))) if split > 1 else None

    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    o = e.wide(e.sreg(SpecialRegister.CTAID_X))
    s = e.wide(e.sreg(SpecialRegister.CTAID_Y)) if split > 1 else e.const(0, i64)
    if r.exp_sub:
        r.load_shifts(e, global_ptr(e, op.aux), o)
    x = e.ptr_add(global_ptr(e, op.src), e.mul_i(offset_of(e, o, kept), elem.bytes))
    row_bytes = row_stride * elem.bytes
    item_bytes = vec * elem.bytes
    pass_rows = split * step  # rows from one item of a thread to its next

    if cw <= block:
        # thread t: vector position t % cw of rows s + S * (t // cw + step * j)
        col = e.value(RemOp(ArithType.U32, tid, e.const(cw)))
        r0 = e.wide(e.value(DivOp(ArithType.U32, tid, e.const(cw))))
        first = e.add_i(s, e.mul_i(r0, split))  # the thread's first row
        full = rows // pass_rows

        def mine(b: Emitter) -> list[SSAValue]:
            start = b.ptr_add(x, b.add_i(b.mul_i(first, row_bytes), b.mul_i(b.wide(col), item_bytes)))
            index = None
            if r.needs_index:
                index = (b.add_i(b.mul_i(first, run), b.mul_i(b.wide(col), vec)), pass_rows * run, 1)
            accs, nxt, at = stream(b, r, start, neutral(b, r, vec), full, pass_rows * row_bytes, vec, UNROLL, index)
            if rows % pass_rows:
                last_row = b.add_i(first, full * pass_rows)
                accs = checked(b, r, b.cmp("ult", last_row, rows), nxt, accs, vec, at)
            return accs

        accs = e.if_(e.cmp("ult", tid, step * cw), mine, lambda b: neutral(b, r, vec), r.types * vec)
    else:
        # thread t: vector positions t, t + block, ... of rows s, s + S, ...
        chunks = cw // block
        tid_w = e.wide(tid)
        ntail = cw - chunks * block

        def row(b: Emitter, a: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            start = b.ptr_add(x, b.add_i(b.mul_i(a, row_bytes), b.mul_i(tid_w, item_bytes)))
            index = (b.add_i(b.mul_i(a, run), b.mul_i(tid_w, vec)), block * vec, 1) if r.needs_index else None
            accs, nxt, at = stream(b, r, start, accs, chunks, block * item_bytes, vec, UNROLL, index)
            if ntail:
                accs = checked(b, r, b.cmp("ult", tid_w, ntail), nxt, accs, vec, at)
            return accs

        accs = e.for_(s, rows, split, neutral(e, r, vec), row)

    if r.width == 1:
        v = [e.fold(r.kind, elem.accumulator, accs)]
    else:
        v = r.fold(e, r.split(accs))
    total = cta_reduce_state(e, r, v, tid, block)
    if ws is None:

        def out(b: Emitter) -> list:
            store_out(b, r, global_ptr(b, op.dst), total, o)
            return []

        e.if_(e.cmp("eq", tid, 0), out)
    else:
        region = e.ptr_add(global_ptr(e, ws), e.mul_i(o, align16(workspace_bytes(split, r.slot_bytes))))
        grid_combine(e, op, region, total, tid, e.sreg(SpecialRegister.CTAID_Y), split, block, out_index=o)
    rewriter.erase(op)


GRID_RUNS = Variant("bulkred.reduce", "grid_runs", priority=66, predicates=PREDICATES, lower=lower_grid_runs)
