"""reduction -> grid_gather: any grid reduction, whatever its canonical form, with
scalar loads (priority 59, the last grid variant tried). It serves the ``general`` and
``strided`` forms ``grid_runs`` does not take (three or more reduced axes, the innermost
axis kept, a view that stride order does not make contiguous: each element's address
from its indices times the view's element strides), and a ``middle`` form whose O
exceeds the grid. The API forces it for
a view off its kernel's vector alignment: a ``whole``, ``inner`` or ``outer`` form then
runs ``grid_full``'s, ``grid_rows``' or ``grid_split_det``'s loop with scalar loads
(``vec = 1``: no alignment needed, the same grid); the other forms run the loop below.

* grid: CTAs of 256 threads (8 warps), up to 8 per multiprocessor; warp w of W takes
  the ``dst`` values w, w + W, ... (row-major over the kept axes);
* each value: its kept indices (``div`` / ``rem`` by the kept extents) give the base
  address; lane l takes the reduced elements l, l + 32, ... (row-major over the reduced
  axes, decomposed the same way), one scalar ``ld.global`` each; when the innermost
  axis is reduced and at least 32 long, the warp instead walks its runs (contiguous, or
  of the view's innermost stride) one after another, the lanes reading each run together
  (index arithmetic once per run);
  then a warp reduction and lane 0 writes the value.

The ``pairs`` form (complex numbers as (re, im), ``bulkred.reduce ... pairs``) is this
variant's alone: the loop above over the complex elements, each lane loading a pair's re
and im with two scalar loads (``Reducer.absorb_pair``); a complex result (``prod``, var's
mean) is stored as two values.

No atomics: the same bits on every run. Correct first: each element costs its index
arithmetic, so this is far from memory speed (docs/scopes.md).

Spec: PTX ISA, div, rem, ld, shfl.sync, redux.sync (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceOp, enclosing_kernel
from bulkred_dialect.passes.canonical import FORMS, INNER, MIDDLE, OUTER, PAIRS, WHOLE
from bulkred_dialect.passes.elements import Elem, ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import WARP
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    MAX_GRID_Y,
    form_of,
    global_ptr,
    grid_ctas,
    grid_predicates,
    load_item,
    neutral,
    offset_of,
    reducer,
    set_launch,
    store_out,
)
from bulkred_dialect.passes.variants.grid_full import lower_grid_full
from bulkred_dialect.passes.variants.grid_middle import lower_grid_middle
from bulkred_dialect.passes.variants.grid_rows import lower_grid_rows
from bulkred_dialect.passes.variants.grid_runs import lower_grid_runs, runs_form
from bulkred_dialect.passes.variants.grid_split_det import lower_grid_split_det
from bulkred_dialect.passes.variants.kernel import (
    emitter_at,
    sm_count,
    warp_reduce_state,
)

BLOCK = 256
WARPS = BLOCK // WARP
CTAS_PER_SM = 8


def lower_grid_gather(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    if form.form == PAIRS:
        return _lower_pairs(op, rewriter, target, form)
    # a form another variant streams reaches this one when forced (a view off the vector
    # alignment): that variant's loop with scalar loads, which need no alignment
    if form.form == WHOLE:
        return lower_grid_full(op, rewriter, target, vec=1)
    if form.form == INNER:
        return lower_grid_rows(op, rewriter, target, vec=1)
    if form.form == OUTER:
        return lower_grid_split_det(op, rewriter, target, max_vec=1)
    if form.form == MIDDLE and form.batch <= MAX_GRID_Y:
        return lower_grid_middle(op, rewriter, target, max_vec=1)
    if runs_form(form):
        return lower_grid_runs(op, rewriter, target, max_vec=1)
    red = reducer(op)
    elem = red.elem
    kept, reduced, outputs, count = _axes(form)
    ctas, e, lane, warp, x, y = _warp_per_output(op, target, outputs)

    # the innermost axis reduced: its run of `run` elements is contiguous, and the lanes
    # read it together; the index arithmetic is then per run, not per element
    run = reduced[-1][0] if form.reduced[-1] else 1
    step_bytes = (reduced[-1][1] if form.reduced[-1] else 1) * elem.bytes
    outer = reduced[:-1] if form.reduced[-1] else reduced

    def value(b: Emitter, o: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        if red.exp_sub:
            red.load_shifts(b, global_ptr(b, op.aux), o)
        base = offset_of(b, o, kept)

        def element(c: Emitter, j: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            at = c.mul_i(c.add_i(base, offset_of(c, j, reduced)), elem.bytes)
            v = load_item(c, elem, c.ptr_add(x, at), 0, 1)
            return red.absorb(c, accs, v[0], red.as_index(c, j) if red.needs_index else None)

        def runs(c: Emitter, p: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            start = c.ptr_add(x, c.mul_i(c.add_i(base, offset_of(c, p, outer)), elem.bytes))
            first = red.as_index(c, c.mul_i(p, run)) if red.needs_index else None

            def step(d: Emitter, j: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
                v = load_item(d, elem, d.ptr_add(start, d.mul_i(j, step_bytes)), 0, 1)
                return red.absorb(d, a, v[0], d.add_i(first, red.as_index(d, j)) if first is not None else None)

            return c.for_(lane, run, WARP, accs, step)

        if run >= WARP:
            acc = b.for_(0, count // run, 1, neutral(b, red, 1), runs)
        else:
            acc = b.for_(lane, count, WARP, neutral(b, red, 1), element)
        r = warp_reduce_state(b, red, acc)

        def write(c: Emitter) -> list[SSAValue]:
            store_out(c, red, y, r, o)
            return []

        b.if_(b.cmp("eq", lane, 0), write)
        return []

    e.for_(e.wide(warp), outputs, ctas * WARPS, [], value)
    rewriter.erase(op)


def _axes(form) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int, int]:
    """The kept and the reduced axes as (extent, element stride) pairs (row-major, or a
    view's strides), the number of outputs and of elements reduced into each."""
    strides = form.element_strides()
    kept = [(d, s) for d, s, r in zip(form.shape, strides, form.reduced, strict=True) if not r]
    reduced = [(d, s) for d, s, r in zip(form.shape, strides, form.reduced, strict=True) if r]
    return kept, reduced, form.kept, form.reduced_count


def _warp_per_output(op: ReduceOp, target: Target, outputs: int) -> tuple:
    """The launch (warps loop over the outputs) and the kernel's (ctas, emitter, lane,
    global warp index, x, y)."""
    kernel = enclosing_kernel(op)
    assert kernel is not None
    ctas = grid_ctas(kernel, max(1, min(sm_count(target) * CTAS_PER_SM, -(-outputs // WARPS))), BLOCK)
    set_launch(kernel, [ctas], [BLOCK])
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    lane = e.wide(e.and_b32(tid, WARP - 1))
    warp = e.add_i(e.mul_i(e.sreg(SpecialRegister.CTAID_X), WARPS), e.shr_u32(tid, 5))
    return ctas, e, lane, warp, global_ptr(e, op.src), global_ptr(e, op.dst)


def _lower_pairs(op: ReduceOp, rewriter: PatternRewriter, target: Target, form) -> None:
    """The ``pairs`` form: a warp per output (as above), lane l taking the complex
    elements l, l + 32, ... (re at the element's offset, im ``form.pair`` elements on)."""
    red = reducer(op)
    elem = red.elem
    parts = Elem.of(elem.dtype)  # re and im as floats (nonzero is the pair's, Reducer.absorb_pair)
    kept, reduced, outputs, count = _axes(form)
    ctas, e, lane, warp, x, y = _warp_per_output(op, target, outputs)
    im_bytes = (form.pair or 0) * elem.bytes

    def value(b: Emitter, o: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        base = offset_of(b, o, kept)

        def element(c: Emitter, j: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            p = c.ptr_add(x, c.mul_i(c.add_i(base, offset_of(c, j, reduced)), elem.bytes))
            re = load_item(c, parts, p, 0, 1)[0]
            im = load_item(c, parts, c.ptr_add(p, im_bytes), 0, 1)[0]
            return red.absorb_pair(c, accs, re, im, parts.accumulator)

        acc = b.for_(lane, count, WARP, neutral(b, red, 1), element)
        r = warp_reduce_state(b, red, acc)

        def write(c: Emitter) -> list[SSAValue]:
            if not red.complex_state:
                store_out(c, red, y, r, o)
                return []
            value, aux = red.results(c, r)
            out = elem.out
            if red.keeps_pair:  # dst[o] is the pair (re, im)
                _store(c, out, elem.accumulator, y, c.mul_i(o, 2), [value, aux])
            else:  # var: dst[o] the variance, aux[o] the complex mean
                _store(c, out, elem.accumulator, y, o, [value])
                if op.aux is not None:
                    _store(c, out, elem.accumulator, global_ptr(c, op.aux), c.mul_i(o, 2), aux)
            return []

        b.if_(b.cmp("eq", lane, 0), write)
        return []

    e.for_(e.wide(warp), outputs, ctas * WARPS, [], value)
    rewriter.erase(op)


def _store(e: Emitter, out, acc, p: SSAValue, index: SSAValue, values: list[SSAValue]) -> None:
    """``values`` (accumulators) at ``p[index]``, ``p[index + 1]``, ... in the output type."""
    q = e.ptr_add(p, e.mul_i(index, out.bytes))
    for k, v in enumerate(values):
        e.st(ld_type(out), q, e.convert(v, acc, out), k * out.bytes)


GRID_GATHER = Variant(
    "bulkred.reduce", "grid_gather", priority=59, predicates=grid_predicates(*FORMS, expected="any"),
    lower=lower_grid_gather,
)
