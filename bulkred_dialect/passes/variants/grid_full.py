"""reduction -> grid_full: a whole kernel reduces every element of a global buffer
into one value (priority 60), for every kind and every type the collective lowerings
take, with the same bits on every run.

* grid: up to 4 CTAs per multiprocessor of 512 threads, sized so that each thread
  loads at least 4 vectors; thread g of S reads the 16-byte vectors g, g + S, ...
  (``ld.global.nc.v4``, 4 loads in flight), one accumulator per vector lane;
* each CTA: the lane accumulators folded, a warp reduction (``redux.sync`` for int32,
  else a ``shfl.sync`` butterfly), warp partials through shared memory;
* a grid of one CTA (small inputs: one warp for up to 128 vectors) writes ``dst``
  from thread 0 directly, with no workspace;
* otherwise thread 0 writes the CTA's partial into the workspace, ``fence.acq_rel.gpu``,
  and takes a ticket with ``atom.add.u32``; the CTA that arrives last reduces the
  partials in CTA order, writes ``dst`` and resets the ticket counter.

The grid depends only on the shape and the target, and every combining step has a
fixed order: the result is deterministic. f16 and bf16 are combined in float32.

Spec: PTX ISA, ld (.nc, vectors), shfl.sync, redux.sync, atom, fence (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceOp, enclosing_kernel
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    add_workspace,
    align16,
    asks_one_cta,
    checked,
    form_of,
    global_ptr,
    grid_ctas,
    grid_predicates,
    neutral,
    one_cta_block,
    reducer,
    set_launch,
    store_out,
    stream,
)
from bulkred_dialect.passes.variants.kernel import (
    COUNTER_BYTES,
    acquire,
    cta_reduce_state,
    elem_of,
    emitter_at,
    last_cta,
    reset_counter,
    sm_count,
)

BLOCK = 512
CTAS_PER_SM = 4
UNROLL = 4
ONE_CTA_BYTES = 256 << 10
"""A plain reduction of at most this many bytes runs in one CTA of up to
:data:`ONE_CTA_BLOCK` threads: on an H100 one CTA read 64 KiB of float32 in 1.9 us
against 3.4 us for two CTAs and the ticket, 256 KiB in 2.6 us against 3.6 us for 8
(tools/diag.py variants, docs/benchmarks.md)."""
ONE_CTA_BLOCK = 1024


def full_grid(n: int, vec: int, target: Target, nbytes: int = 0) -> int:
    """CTAs of the grid: one for a plain reduction of at most :data:`ONE_CTA_BYTES`
    (``nbytes``; 0 for a fused one), else enough for ``UNROLL`` vectors per thread."""
    if 0 < nbytes <= ONE_CTA_BYTES:
        return 1
    vectors = n // vec
    return max(1, min(sm_count(target) * CTAS_PER_SM, -(-vectors // (BLOCK * UNROLL))))


def lower_grid_full(op: Operation, rewriter: PatternRewriter, target: Target, vec: int | None = None) -> None:
    """``vec``: elements per load (default the element type's vector; 1: scalar loads,
    any address, as ``grid_gather`` runs it for a view off the vector alignment)."""
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    assert form is not None
    kernel = enclosing_kernel(op)
    assert kernel is not None
    elem = elem_of(op)
    vec = elem.vector if vec is None else vec
    # the CTAs share the vectors in a grid-stride loop: a grid the kernel's bulkred.launch
    # asks is taken (with this variant's block), and so is its block for one CTA
    chosen = full_grid(form.n, vec, target, form.n * elem.bytes if reducer(op).plain else 0)
    ctas = 1 if asks_one_cta(kernel) else grid_ctas(kernel, chosen, BLOCK)
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    cta = e.sreg(SpecialRegister.CTAID_X)
    if ctas == 1:
        # one CTA covers it: no workspace, no ticket; thread 0 writes dst
        limit = ONE_CTA_BLOCK if reducer(op).plain else BLOCK
        block = one_cta_block(kernel, single_cta_block(form.n // vec, limit), limit)
        set_launch(kernel, [1], [block])
        r = cta_partial(e, op, tid, cta, 1, block, redux_f32=absmax_redux(op, target), vec=vec)

        def out(b: Emitter) -> list:
            store_out(b, reducer(op), global_ptr(b, op.dst), r, 0)
            return []

        e.if_(e.cmp("eq", tid, 0), out)
    else:
        set_launch(kernel, [ctas], [BLOCK])
        ws = add_workspace(kernel, workspace_bytes(ctas, reducer(op).slot_bytes))
        r = cta_partial(e, op, tid, cta, ctas, BLOCK, redux_f32=absmax_redux(op, target), vec=vec)
        grid_combine(e, op, global_ptr(e, ws), r, tid, cta, ctas, BLOCK)
    rewriter.erase(op)


GRID_FULL = Variant(
    "bulkred.reduce", "grid_full", priority=60, predicates=grid_predicates("whole"), lower=lower_grid_full
)


def absmax_redux(op: ReduceOp, target: Target) -> bool:
    """An absmax (float32 max or min after the prologue ``abs``) on an sm_100a-class
    target: its warp steps take ``redux.sync.max.abs.NaN.f32``."""
    maps = op.maps("prologue")
    return (
        target.sm >= 100 and target.suffix == "a" and op.kind.data in ("max", "min")
        and bool(maps) and maps[-1].map_fn == "abs" and elem_of(op).acc == f32
    )


def workspace_bytes(nslots: int, slot_bytes: int) -> int:
    """The workspace of :func:`grid_combine`: ``nslots`` partials, then the ticket counter."""
    return align16(nslots * slot_bytes) + COUNTER_BYTES


def single_cta_block(vectors: int, limit: int = BLOCK) -> int:
    """Threads of the one CTA of a small reduction: a multiple of 32, at most
    ``limit``, about ``UNROLL`` vectors per thread (one warp for 32 floats)."""
    want = -(-vectors // UNROLL)
    return min(limit, max(32, -(-want // 32) * 32))


def cta_partial(e: Emitter, op: ReduceOp, tid, cta, ctas: int, block: int, *, redux_f32: bool = False, vec: int | None = None):
    """This CTA's share of the full reduction of ``op.src`` (a state, valid in thread 0;
    a plain kind's one value when ``plain``)."""
    form = form_of(op)
    assert form is not None
    r = reducer(op)
    elem = r.elem
    if r.exp_sub:
        r.load_shifts(e, global_ptr(e, op.aux), 0)
    vec = elem.vector if vec is None else vec
    n, threads = form.n, ctas * block
    vectors = n // vec
    x = global_ptr(e, op.src)
    g = e.wide(e.add_i(e.mul_i(cta, block), tid))
    mine = e.ptr_add(x, e.mul_i(g, vec * elem.bytes))
    accs = neutral(e, r, vec)
    full = vectors // threads
    index = (e.mul_i(g, vec), threads * vec, 1) if r.needs_index else None
    accs, nxt, at = stream(e, r, mine, accs, full, threads * vec * elem.bytes, vec, UNROLL, index)
    if vectors % threads:
        accs = checked(e, r, e.cmp("ult", g, vectors - full * threads), nxt, accs, vec, at)
    tail = n - vectors * vec
    w = r.width
    if tail:
        p = e.ptr_add(x, e.add_i(e.mul_i(g, elem.bytes), vectors * vec * elem.bytes))
        i = e.add_i(r.as_index(e, g), vectors * vec) if r.needs_index else None
        head = checked(e, r, e.cmp("ult", g, tail), p, accs[:w], 1, i)
        accs = head + accs[w:]
    if r.width == 1:
        v = e.fold(r.kind, elem.accumulator, accs)
        return cta_reduce_state(e, r, [v], tid, block, redux_f32=redux_f32)
    return cta_reduce_state(e, r, r.fold(e, r.split(accs)), tid, block)


def grid_combine(
    e: Emitter, op: ReduceOp, ws, r, tid, slot, nslots: int, block: int, participates=None, out_index=0
) -> None:
    """Thread 0 writes the state ``r`` into workspace slot ``slot`` (an i32); the last of the
    ``nslots`` CTAs that write reduces the slots in order into ``dst[out_index]`` (an
    ``i64`` or int). The workspace (``ws``, a global address) holds the slots, then the
    ticket counter (:func:`workspace_bytes`)."""
    red = reducer(op)
    slot_bytes = red.slot_bytes
    counter = e.ptr_add(ws, align16(nslots * slot_bytes))

    def write(b: Emitter) -> list:
        red.store(b, b.ptr_add(ws, b.mul_i(b.wide(slot), slot_bytes)), r)
        return []

    def write_if_participating(b: Emitter) -> list:
        return write(b) if participates is None else b.if_(participates, write)

    e.if_(e.cmp("eq", tid, 0), write_if_participating)
    last = last_cta(e, counter, nslots, tid, participates)

    def finish(b: Emitter) -> list:
        acquire(b)
        accs = neutral(b, red, 1)
        for k in range(-(-nslots // block)):
            idx = b.wide(b.add_i(tid, k * block))
            q = b.ptr_add(ws, b.mul_i(idx, slot_bytes))
            accs = b.if_(
                b.cmp("ult", idx, nslots),
                lambda c, q=q: red.combine(c, accs, red.load(c, q)),
                lambda c: list(accs),
                red.types,
            )
        total = cta_reduce_state(b, red, accs, tid, block, name="grid_partials")

        def out(c: Emitter) -> list:
            store_out(c, red, global_ptr(c, op.dst), total, out_index)
            reset_counter(c, counter)
            return []

        b.if_(b.cmp("eq", tid, 0), out)
        return []

    e.if_(last, finish)

