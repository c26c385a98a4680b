"""The backward kinds of ``bulkred.normalize_rows`` (docs/rows.md), lowered by
:func:`~bulkred_dialect.passes.variants.rows_lower.lower_rows` with the row helpers of
``rows_common``:

* softmax's and log_softmax's (:func:`registers_backward`, :func:`stream_backward`):
  one row sum (``sum(grad * y)``, ``sum(grad)``), then dx;
* the norms' (:func:`registers_norm_backward`, :func:`stream_norm_backward`): dx from
  the stored statistics and one or two row sums; dweight and dbias as per-unit float32
  partial rows added in a fixed order (:class:`ColumnSums`, :func:`finish_columns`);
  two settings, off until measured, overlap a row's reads with the previous row's
  reduction (:data:`PIPELINE`: rows_cta, rows_cluster) or second read (:data:`OVERLAP`:
  rows_slices), the bits unchanged;
* cross_entropy's (:func:`ce_backward`): elementwise from the stored lse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import SSAValue

from bulkred_dialect.ops.dtypes import of_ir
from bulkred_dialect.ops.ptx.atom import AtomOp, AtomOpKind, AtomType, FenceOp, FenceSem, MemScope
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType, SelpType
from bulkred_dialect.ops.ptx.memory import LdStType
from bulkred_dialect.ops.tile import ReduceKind
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp, NormKind
from bulkred_dialect.passes.elements import ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.variants.rows_common import (
    setting_of,
    half_as_bfloat16,
    exp_shifted,
    AT,
    BF16,
    F16,
    PairSums,
    packed_bf16,
    raw_count,
    raw_load,
    widen_raw,
    F32,
    I64,
    RowPlan,
    f32_add,
    RowBuf,
    f32_exp,
    load_vec,
    f32_mul,
    RowState,
    store_vec,
    f32_sub,
    visit_vectors,
)


def backward_sum(r: RowState, e: Emitter, xs: list[SSAValue], gs: list[SSAValue], acc: SSAValue | None) -> SSAValue:
    """softmax_backward's ``sum(grad * x)``, log_softmax_backward's ``sum(grad)``, of one
    thread's values, added to ``acc``."""
    for x, g in zip(xs, gs, strict=True):
        if r.p.kind == NormKind.SOFTMAX_BACKWARD:
            acc = f32_mul(e, x, g) if acc is None else e.fma(AT, x, g, acc)
        else:
            acc = g if acc is None else f32_add(e, acc, g)
    assert acc is not None
    return acc


def backward_out(r: RowState, e: Emitter, xs: list[SSAValue], gs: list[SSAValue], s: SSAValue) -> list[SSAValue]:
    """dx of one vector from the row's sum ``s``."""
    if r.p.kind == NormKind.SOFTMAX_BACKWARD:
        return [f32_mul(e, x, f32_sub(e, g, s)) for x, g in zip(xs, gs, strict=True)]
    return [f32_sub(e, g, f32_mul(e, f32_exp(e, x), s)) for x, g in zip(xs, gs, strict=True)]


def registers_backward(r: RowState, e: Emitter, row: SSAValue) -> None:
    """A backward row held in registers: one read of x and of grad, one write of dx."""
    p = r.p
    assert r.grad is not None and r.y is not None
    conds = r.item_conds(e)
    items: list[tuple[list[SSAValue], list[SSAValue]]] = []
    for k, cond in enumerate(conds):

        def both(b: Emitter, k: int = k) -> list[SSAValue]:
            return r.x.load(b, k * p.group, p.vec) + r.grad.load(b, k * p.group, p.vec)  # type: ignore[union-attr]

        v = both(e) if cond is None else e.if_(cond, both, lambda b: [b.const(0.0, f32)] * (2 * p.vec), [f32] * (2 * p.vec))
        items.append((v[:p.vec], v[p.vec:]))
    part = None
    for xs, gs in items:
        part = backward_sum(r, e, xs, gs, part)
    assert part is not None
    s = r.reduce(e, ReduceKind.SUM, part, "row_dot")
    for k, (cond, (xs, gs)) in enumerate(zip(conds, items, strict=True)):
        if cond is None:
            r.y.store(e, k * p.group, p.vec, backward_out(r, e, xs, gs, s))
            continue

        def guarded(b: Emitter, k: int = k, xs=xs, gs=gs) -> list[SSAValue]:
            r.y.store(b, k * p.group, p.vec, backward_out(r, b, xs, gs, s))  # type: ignore[union-attr]
            return []

        e.if_(cond, guarded)


def _slice_span(r: RowState, e: Emitter) -> tuple[int, SSAValue | None]:
    """rows_slices: (vectors of its slice every thread has, the condition of the one more
    some threads have)."""
    full, rest = divmod(r.p.slice, r.p.group)
    return full, (e.cmp("ult", r.g, rest) if rest else None)


def stream_backward(r: RowState, e: Emitter, row: SSAValue) -> None:
    """A backward row of any length: the sum, then x and grad read again for dx (with a
    cluster, rows_slices: the CTA's slice of the row, the sum combined over the cluster)."""
    p = r.p
    assert r.grad is not None and r.y is not None
    full, cond = _slice_span(r, e) if p.cluster > 1 else r.partial(e)

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        xs, gs = r.x.load(b, first, p.vec, extra), r.grad.load(b, first, p.vec, extra)  # type: ignore[union-attr]
        return [backward_sum(r, b, xs, gs, state[0])]

    (part,) = visit_vectors(e, p, full, cond, [e.const(0.0, f32)], read)
    s = r.reduce(e, ReduceKind.SUM, part, "row_dot")

    def write(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        xs, gs = r.x.load(b, first, p.vec, extra), r.grad.load(b, first, p.vec, extra)  # type: ignore[union-attr]
        r.y.store(b, first, p.vec, backward_out(r, b, xs, gs, s), extra)  # type: ignore[union-attr]
        return state

    visit_vectors(e, p, full, cond, [], write)


# region The norms' backward and cross-entropy's


def _row_stat(e: Emitter, buf: SSAValue, row: SSAValue) -> SSAValue:
    """The float32 statistic of ``row`` in the ``[M]`` buffer ``buf`` (the forward's)."""
    return e.ld(ld_type(F32), e.ptr_add(e.ptr(buf, StateSpace.GLOBAL), e.mul_i(row, 4)), f32)


def norm_terms(r: RowState, e: Emitter, xs: list[SSAValue], dys: list[SSAValue], ws: list[SSAValue] | None,
                st: dict[str, SSAValue]) -> tuple[list[SSAValue], list[SSAValue]]:
    """(xhat, g) of one vector: ``xhat = (x - mean) * rstd`` (rms_norm: ``x * rstd``), ``g = dy * w``."""
    xh = [f32_mul(e, f32_sub(e, x, st["mean"]) if "mean" in st else x, st["rstd"]) for x in xs]
    g = [f32_mul(e, dy, w) for dy, w in zip(dys, ws, strict=True)] if ws is not None else list(dys)
    return xh, g


def norm_sums(e: Emitter, xh: list[SSAValue], g: list[SSAValue], acc: list[SSAValue | None], layer: bool) -> list[SSAValue | None]:
    """A thread's ``sum(g * xhat)`` (and layer_norm's ``sum(g)``), added to ``acc``."""
    a, b = acc
    for h, gv in zip(xh, g, strict=True):
        a = f32_mul(e, gv, h) if a is None else e.fma(AT, gv, h, a)
        if layer:
            b = gv if b is None else f32_add(e, b, gv)
    return [a, b]


def norm_dx(r: RowState, e: Emitter, xh: list[SSAValue], g: list[SSAValue], st: dict[str, SSAValue]) -> list[SSAValue]:
    """dx of one vector: ``rstd * (g - mean(g) - xhat * mean(g * xhat))`` (rms_norm: no ``mean(g)``)."""
    if "fold_h" in st:  # NORM_FOLD_DX: fma(xhat, -rstd mean(g xhat), fma(g, rstd, -rstd mean(g)))
        return [e.fma(AT, h, st["fold_h"], e.fma(AT, gv, st["rstd"], st["fold_c"])) for h, gv in zip(xh, g, strict=True)]
    out = []
    for h, gv in zip(xh, g, strict=True):
        t = f32_sub(e, gv, st["mean_g"]) if "mean_g" in st else gv
        out.append(f32_mul(e, st["rstd"], f32_sub(e, t, f32_mul(e, h, st["mean_gx"]))))
    return out


def add_column_sums(e: Emitter, op: NormalizeRowsOp, dys: list[SSAValue], xh: list[SSAValue], acc: list[SSAValue]) -> list[SSAValue]:
    """The thread's column sums of one vector after this row: ``dweight += dy * xhat``,
    then ``dbias += dy`` (``acc``: V values of each of those present)."""
    v, out = len(dys), []
    if op.dweight is not None:
        out += [e.fma(AT, dy, h, a) for dy, h, a in zip(dys, xh, acc[:v], strict=True)]
    if op.dbias is not None:
        out += [f32_add(e, a, dy) for a, dy in zip(acc[len(out):len(out) + v], dys, strict=True)]
    return out


def norm_row_stats(r: RowState, e: Emitter, row: SSAValue, sums: list[SSAValue | None],
                   rstd: SSAValue | None = None) -> dict[str, SSAValue]:
    """The row's ``mean(g * xhat)`` (and ``mean(g)``) over the group from the thread's sums;
    with ``rstd`` (the row's) and :data:`NORM_FOLD_DX` on, layer_norm's dx constants too
    (:func:`norm_dx`)."""
    n = r.p.n
    scale = norm_lean(r.p) and n & (n - 1) == 0  # NORM_LEAN: v * 2^-k, exactly v / 2^k rounded (the same bits)
    nf = e.const(1.0 / n if scale else float(n), f32)

    def mean(v: SSAValue) -> SSAValue:
        return f32_mul(e, v, nf) if scale else e.div(AT, v, nf)

    if sums[1] is None:
        return {"mean_gx": mean(r.reduce(e, ReduceKind.SUM, sums[0], "row_gx"))}  # type: ignore[arg-type]
    gx, g = r._state(e, PairSums(), [sums[0], sums[1]], "row_gx_g")  # both in one exchange  # type: ignore[list-item]
    out = {"mean_gx": mean(gx), "mean_g": mean(g)}
    if rstd is not None and norm_fold_dx(r.p):  # NORM_FOLD_DX: -rstd mean(g), -rstd mean(g xhat), once a row
        out["fold_c"] = e.neg(AT, f32_mul(e, rstd, out["mean_g"]))
        out["fold_h"] = e.neg(AT, f32_mul(e, rstd, out["mean_gx"]))
    return out


def read_stats(r: RowState, e: Emitter, row: SSAValue) -> dict[str, SSAValue]:
    op = r.op
    assert op.rstd is not None
    st = {"rstd": _row_stat(e, op.rstd, row)}
    if op.mean is not None:
        st["mean"] = _row_stat(e, op.mean, row)
    return st


def registers_norm_backward(r: RowState, e: Emitter, row: SSAValue, acc: list[SSAValue],
                             parts: list[RowBuf] | None = None,
                             ahead: tuple[list[SSAValue], Callable[[Emitter], list[SSAValue]]] | None = None) -> list[SSAValue]:
    """A norm's backward with the row in registers: one read of x, dy (and the weight),
    one write of dx; the thread's column sums (``acc``: per vector, V of dweight then V
    of dbias) updated, or with ``parts`` (:data:`SHARED_COLUMNS`) those in shared memory.
    With ``ahead`` (:data:`PIPELINE`): (this row's values as loaded, read during the
    previous row: :func:`prefetch_norm_row`; a function that issues the loads of the
    next row) the row's values come from the first, and the second is called after the
    thread's sums, before the row's reduction: its results follow the column sums in
    the returned list."""
    p = r.p
    assert r.grad is not None and r.y is not None
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD
    conds = r.item_conds(e)
    nw = p.vec if r.w is not None else 0
    if ahead is not None:
        st, got = _widen_norm_row(r, e, ahead[0])
    else:
        st = read_stats(r, e, row)
    items = []
    for k, cond in enumerate(conds):

        def loads(b: Emitter, k: int = k) -> list[SSAValue]:
            vals = r.x.load(b, k * p.group, p.vec) + r.grad.load(b, k * p.group, p.vec)  # type: ignore[union-attr]
            return vals + (r.w.load(b, k * p.group, p.vec) if r.w is not None else [])

        n = 2 * p.vec + nw
        if ahead is not None:
            assert cond is None  # (pipelined: plans whose threads hold every vector, :func:`pipelined`)
            v = got[k]
        else:
            v = loads(e) if cond is None else e.if_(cond, loads, lambda b: [b.const(0.0, f32)] * n, [f32] * n)
        xs, dys, ws = v[:p.vec], v[p.vec:2 * p.vec], (v[2 * p.vec:] if nw else None)
        xh, g = norm_terms(r, e, xs, dys, ws, st)
        items.append((dys, xh, g))
    sums: list[SSAValue | None] = [None, None]
    for _, xh, g in items:
        sums = norm_sums(e, xh, g, sums, layer)
    following = ahead[1](e) if ahead is not None else []  # the next row's loads, in flight over the reduction
    st.update(norm_row_stats(r, e, row, sums, st["rstd"]))
    per = len(acc) // max(1, p.items)
    out: list[SSAValue] = []
    for k, (cond, (dys, xh, g)) in enumerate(zip(conds, items, strict=True)):
        if cond is None:
            r.y.store(e, k * p.group, p.vec, norm_dx(r, e, xh, g, st))
        else:

            def guarded(b: Emitter, k: int = k, xh=xh, g=g) -> list[SSAValue]:
                r.y.store(b, k * p.group, p.vec, norm_dx(r, b, xh, g, st))  # type: ignore[union-attr]
                return []

            e.if_(cond, guarded)
        if per:  # (a missing vector's loads are 0: it adds 0)
            out += add_column_sums(e, r.op, dys, xh, acc[k * per:(k + 1) * per])
        if parts:

            def add(b: Emitter, k: int = k, dys=dys, xh=xh) -> list[SSAValue]:
                old = [v for part in parts for v in part.load(b, k * p.group, p.vec, nc=False)]
                new = add_column_sums(b, r.op, dys, xh, old)
                for i, part in enumerate(parts):
                    part.store(b, k * p.group, p.vec, new[i * p.vec:(i + 1) * p.vec])
                return []

            add(e) if cond is None else e.if_(cond, add)
    return out + following


PIPELINE: bool | None = None
"""None: where :data:`MEASURED` says; True or False: everywhere or nowhere (the probe's
and the tests' settings). Pipelined, rows_cta and rows_cluster (a norm's backward, the row in registers, every
thread holding all its vectors) issue the loads of the unit's next row (x, dy, the
stored rstd and mean) after the thread's sums of the current row and before
its reduction (a CTA or cluster exchange), carried as loaded into the next step of the
loop over rows (:func:`prefetch_norm_row`): the reduction and the stores of dx overlap
the next row's reads. The last row of a unit reads itself again (from L2) instead of a
row past M. Neither the rows a unit takes nor the order of its column sums change (bits
identical to the default). Measured on an H200 (tools/probes/rows_backward.py --set pipeline,
docs/rows_bench_bwd_h200.md): :data:`MEASURED`."""

MEASURED = {
    # element type: (N from, N to, PIPELINE, SHARED_COLUMNS), the first range holding N
    BF16.name: ((1, 65536, True, False),),  # 4096: 0.72 -> 0.83 (rms), 0.73 -> 0.88 (layer); 16384: 0.68 -> 0.83, 0.63 -> 0.79; 65536 (rows_cluster): 0.67 -> 0.74, 0.47 -> 0.64
    F32.name: ((1, 8192, False, False),  # 4096: pipelined 0.86 / 0.87 against 0.91 / 0.94
                (8193, 65536, True, True)),  # 16384: 0.90 -> 0.93, 0.89 -> 0.90; 65536: 0.78 -> 0.91, 0.72 -> 0.82
    # (kind, element type): before the type's own. float16 layer_norm's (--set pipeline, 2026-11-29 later):
    # the column sums in shared memory, 4096 0.66 -> 0.83, 16384 0.59 -> 0.80, 65536 0.61 -> 0.75; bfloat16's
    # not (0.88 -> 0.84, 0.87 -> 0.81), nor float16 rms_norm's (0.92 -> 0.91, 0.88 -> 0.85)
    ("layer_norm_backward", F16.name): ((1, 65536, True, True),),
}
"""The norms' backward settings by element type (or kind and element type) and N (never
M) where the H200 measured them faster; elsewhere (longer rows) neither."""
MEASURED = half_as_bfloat16(MEASURED)  # float16 as bfloat16 where unmeasured


WARP_PIPELINE = True
"""Measured on an H200 (tools/probes/rows_backward.py ``--set norms``, 2026-11-29, bfloat16
1024, x copy): rms_norm's backward 0.874 -> 0.945, layer_norm's 0.828 -> 0.916 (the same
bits). With True, where
:data:`PIPELINE` / :data:`MEASURED` pipeline the cell (bfloat16 to 65536), rows_warp's
norm backward too: each warp issues the loads of its group's next row (its ``N / 32``
values of x and dy as loaded, bfloat16 in words of two, and the row's rstd and mean)
before this row's butterfly, carried over the loop step as rows_cta's. rows_warp's
registers (168 for rms_norm's, 199 for layer_norm's at bfloat16 1024: one CTA of 256
threads a multiprocessor, 8 rows in flight) leave room for the next row's 32 words: twice
the bytes in flight at the same occupancy. The same rows per warp and sums in the same
order: the bits of the default."""


def measured(p: RowPlan) -> tuple[bool, bool]:
    """(PIPELINE, SHARED_COLUMNS) of :data:`MEASURED` for plan ``p``'s kind, element type and
    N (a ``(kind, type)`` entry before the type's own)."""
    kind = getattr(p, "kind", None)
    own = MEASURED.get((kind.value, p.dtype.name)) if kind is not None else None
    for lo, hi, pipe, shared in own or MEASURED.get(p.dtype.name, ()):
        if lo <= p.n <= hi:
            return pipe, shared
    return False, False


def pipelined(p: RowPlan, op: NormalizeRowsOp) -> bool:
    """Whether plan ``p`` of ``op`` pipelines its rows (:data:`PIPELINE`): a norm's
    backward in registers, one row per CTA or cluster, every thread holding ``p.items``
    whole vectors of the row (no partial vector to guard)."""
    from bulkred_dialect.ops.tile.rows import NORM_BACKWARD_KINDS

    on = measured(p)[0] if PIPELINE is None else PIPELINE
    warp = WARP_PIPELINE and p.cluster == 1 and p.group < p.block  # rows_warp (WARP_PIPELINE)
    if not (on and p.kind in NORM_BACKWARD_KINDS and p.items and (p.group == p.block or warp)):
        return False
    return p.exact if p.cluster > 1 else p.vectors == p.items * p.group


NORM_LEAN: bool | None = None
"""None: where :data:`NORM_LEAN_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings, tools/probes/rows_ln_bf16.py). On, a norm's backward
issues fewer instructions a row and an element for the same bits: the row's means
``sum / N`` as ``sum * 2^-k`` where N is a power of two ``2^k`` (the same correctly rounded
value: a scaling by a power of two, where the default's ``div.rn.f32`` is an FCHK, a branch
around ptxas's slow path and 5 FFMA a mean, layer_norm's two a row: about 20 SASS
instructions a row of a thread's 16 values), and a pipelined row's weight
(:data:`PIPELINE`) read as 32-bit words of two bfloat16 (:func:`raw_load`,
:func:`widen_raw`: a SHF or a LOP3 an element, where ``ld.v4.b16`` and its ``cvt`` take a
PRMT and a SHF for every second one). Any variant whose row statistics come from
:func:`norm_row_stats` (rows_bulk_backward's too); the weight in words on rows_cta,
rows_cluster and rows_warp pipelined."""

NORM_LEAN_MEASURED: dict = half_as_bfloat16({
    # (tools/probes/rows_ln_bf16.py on an H200, the seventh session of 2026-11-29, x copy, with
    # NORM_FOLD_DX: bfloat16 16384 0.860 -> 0.870, 65536 0.818 -> 0.832; float16 16384 0.799 -> 0.825,
    # 65536 0.738 -> 0.758; rms_norm and the other N within 1%, float16 4096 slower: 130 registers)
    ("layer_norm_backward", BF16.name): ((16384, 16384), (65536, 65536)),
})
""":data:`NORM_LEAN` by element type name, or ``(kind, type name)``, and N (never M): the
ranges (N from, N to) where it is on (tools/probes/rows_ln_bf16.py)."""

NORM_FOLD_DX: bool | None = None
"""None: where :data:`NORM_FOLD_DX_MEASURED` says; True or False: everywhere or nowhere.
On, layer_norm's backward writes each element's dx as two FFMA, ``fma(xhat, -rstd
mean(g xhat), fma(g, rstd, -rstd mean(g)))``, the two products of the row's statistics
rounded once a row (:func:`norm_row_stats`), where the default's ``rstd (g - mean(g) -
xhat mean(g xhat))`` takes FADD, FMUL, FADD and FMUL an element (rms_norm's dx is two
instructions either way: unchanged). Bits change (two roundings fewer an element, two
more a row: within a few float32 ulps of the row's largest term), never with M; dweight
and dbias unchanged. The variants that write dx through :func:`norm_dx` with the row's
statistics from this module (rows_warp, rows_cta, rows_cluster, rows_slices, rows_stream;
not rows_bulk_backward)."""

NORM_FOLD_DX_MEASURED: dict = half_as_bfloat16({
    # (with NORM_LEAN, the same run: above)
    ("layer_norm_backward", BF16.name): ((16384, 16384), (65536, 65536)),
})
""":data:`NORM_FOLD_DX` by element type name, or ``(kind, type name)``, and N (never M)
(tools/probes/rows_ln_bf16.py)."""


def norm_lean(p: RowPlan) -> bool:
    """Whether plan ``p`` (a norm's backward) takes :data:`NORM_LEAN`'s instructions."""
    from bulkred_dialect.ops.tile.rows import NORM_BACKWARD_KINDS

    return p.kind in NORM_BACKWARD_KINDS and setting_of(NORM_LEAN, NORM_LEAN_MEASURED, p.dtype.name, p.n, p.kind.value)


def norm_fold_dx(p: RowPlan) -> bool:
    """Whether plan ``p`` (layer_norm's backward) writes dx in :data:`NORM_FOLD_DX`'s form."""
    return (p.kind == NormKind.LAYER_NORM_BACKWARD
            and setting_of(NORM_FOLD_DX, NORM_FOLD_DX_MEASURED, p.dtype.name, p.n, p.kind.value))


def prefetch_norm_row(e: Emitter, r: RowState, x: RowBuf, grad: RowBuf, w: RowBuf | None, row: SSAValue) -> list[SSAValue]:
    """The loads of a row of a pipelined norm's backward (:data:`PIPELINE`): its stored
    rstd (and mean), then per vector the thread holds x's and dy's registers as loaded
    (bfloat16 in words of two: :func:`raw_load`); ``x``, ``grad``: the row's buffers at
    the thread's first vector (``r``: for the plan and the op only; the weight, the same
    every row, is read when the row is used, ``w`` unused)."""
    p, op = r.p, r.op
    assert op.rstd is not None
    out = [_row_stat(e, op.rstd, row)] + ([_row_stat(e, op.mean, row)] if op.mean is not None else [])
    for k in range(p.items):
        for buf in (x, grad):
            out += raw_load(e, buf.dtype, buf.base, k * p.group * p.vec * buf.dtype.bytes, p.vec)
    return out


def prefetch_types(p: RowPlan, op: NormalizeRowsOp) -> list:
    """The types of the registers :func:`prefetch_norm_row` gives."""
    out: list = [f32] * (1 + (op.mean is not None))
    for _ in range(p.items):
        for d in (p.dtype, p.dtype):
            t = i32 if packed_bf16(d, p.vec) else d.ir
            out += [t] * raw_count(d, p.vec)
    return out


def _widen_norm_row(r: RowState, e: Emitter, raw: list[SSAValue]) -> tuple[dict[str, SSAValue], list[list[SSAValue]]]:
    """(the statistics, per vector x's, dy's and the weight's float32 values) of a row
    loaded by :func:`prefetch_norm_row`."""
    p = r.p
    st = {"rstd": raw[0]}
    i = 1
    if r.op.mean is not None:
        st["mean"] = raw[1]
        i = 2
    got = []
    for k in range(p.items):
        vals: list[SSAValue] = []
        for d in (p.dtype, p.dtype):
            c = raw_count(d, p.vec)
            vals += widen_raw(e, d, raw[i:i + c], p.vec)
            i += c
        got.append(vals + (_weight(r, e, k) if r.w is not None else []))  # (the weight: from L1)
    assert i == len(raw)
    return st, got


def _weight(r: RowState, e: Emitter, k: int) -> list[SSAValue]:
    """The float32 weight of the thread's vector ``k`` of a pipelined row: with
    :data:`NORM_LEAN` bfloat16 read as 32-bit words (:func:`raw_load`, :func:`widen_raw`:
    the same values), else as :class:`RowBuf` reads it."""
    p, w = r.p, r.w
    assert w is not None
    if norm_lean(p) and type(w) is RowBuf and packed_bf16(w.dtype, p.vec):
        at, off = w.at(e, k * p.group, p.vec)
        return widen_raw(e, w.dtype, raw_load(e, w.dtype, at, off, p.vec), p.vec)
    return w.load(e, k * p.group, p.vec)


def stream_norm_backward(r: RowState, e: Emitter, row: SSAValue, parts: list[RowBuf]) -> None:
    """A norm's backward of a row of any length: the sums, then x, dy (and the weight)
    read again for dx; the column sums added to the unit's partial rows ``parts`` (its
    own columns: no other thread touches them). With a cluster (rows_slices) the CTA
    streams its slice of the row (``p.slice`` vectors, the slices exact), the sums are
    combined over the cluster, and ``parts`` are the CTA's float32 columns in shared
    memory (:func:`slice_accumulators`)."""
    span = _slice_span(r, e) if r.p.cluster > 1 else r.partial(e)
    st = _norm_first_pass(r, e, row, span)
    _norm_second_pass(r, e, st, parts, span)


def _stream_terms(r: RowState, b: Emitter, first: SSAValue | int, extra: int, st: dict[str, SSAValue],
                  ws: list[SSAValue] | None = None) -> tuple[list[SSAValue], list[SSAValue], list[SSAValue]]:
    """(dy, xhat, g) of one vector of the row read from x and dy (and the weight, unless ``ws``)."""
    p = r.p
    xs, dys = r.x.load(b, first, p.vec, extra), r.grad.load(b, first, p.vec, extra)  # type: ignore[union-attr]
    if ws is None and r.w is not None:
        ws = r.w.load(b, first, p.vec, extra)
    return (dys, *norm_terms(r, b, xs, dys, ws, st))


def _dx_and_columns(r: RowState, b: Emitter, first: SSAValue | int, extra: int, dys: list[SSAValue], xh: list[SSAValue],
                    g: list[SSAValue], st: dict[str, SSAValue], parts: list[RowBuf]) -> None:
    """One vector's dx written, its ``dy * xhat`` (and ``dy``) added to the columns ``parts``."""
    p = r.p
    r.y.store(b, first, p.vec, norm_dx(r, b, xh, g, st), extra)  # type: ignore[union-attr]
    for k, part in enumerate(parts):
        old = part.load(b, first, p.vec, extra, nc=False)
        new = [b.fma(AT, dy, h, a) for dy, h, a in zip(dys, xh, old, strict=True)] if k == 0 and r.op.dweight is not None \
            else [f32_add(b, a, dy) for a, dy in zip(old, dys, strict=True)]
        part.store(b, first, p.vec, new, extra)


def _norm_first_pass(r: RowState, e: Emitter, row: SSAValue, span: tuple[int, SSAValue | None]) -> dict[str, SSAValue]:
    """The streamed row's statistics: the stored ones, then ``mean(g * xhat)`` (and
    ``mean(g)``) from a read of the thread's vectors (``span``: :func:`_slice_span`)."""
    p = r.p
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD
    st = read_stats(r, e, row)

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        _, xh, g = _stream_terms(r, b, first, extra, st)
        return [v for v in norm_sums(b, xh, g, [state[0], state[1] if layer else None], layer) if v is not None]

    zero = e.const(0.0, f32)
    state = visit_vectors(e, p, span[0], span[1], [zero, zero] if layer else [zero], read)
    st.update(norm_row_stats(r, e, row, [state[0], state[1] if layer else None], st["rstd"]))
    return st


def _norm_second_pass(r: RowState, e: Emitter, st: dict[str, SSAValue], parts: list[RowBuf],
                      span: tuple[int, SSAValue | None]) -> None:
    """The streamed row's dx from its statistics ``st``, x and dy read again; its column sums."""

    def write(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        _dx_and_columns(r, b, first, extra, *_stream_terms(r, b, first, extra, st), st, parts)
        return state

    visit_vectors(e, r.p, span[0], span[1], [], write)


OVERLAP = False
"""With True, rows_slices (a norm's backward streamed by a cluster) reads each row of a
unit but its first once from DRAM in the same loop as the previous row's second read
(from L2) and dx: :func:`overlapped_pass`; the unit's first row's sums before the loop,
its last row's dx after it. The rows a unit takes and the order in which each thread
adds its columns (row after row) do not change (bits identical to the default). Off until
measured (tools/probes/rows_backward.py)."""


def overlapped(p: RowPlan, op: NormalizeRowsOp) -> bool:
    """Whether plan ``p`` of ``op`` overlaps its rows' two reads (:data:`OVERLAP`): a
    norm's backward streamed by a cluster's CTAs (rows_slices), one row per unit."""
    from bulkred_dialect.ops.tile.rows import NORM_BACKWARD_KINDS

    return OVERLAP and p.kind in NORM_BACKWARD_KINDS and not p.items and p.cluster > 1 and p.group == p.block


def stat_names(p: RowPlan) -> list[str]:
    """The statistics of a streamed norm's backward row, in the order they are carried."""
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD
    return ["rstd"] + (["mean", "mean_gx", "mean_g"] if layer else ["mean_gx"])


def first_pass(r: RowState, e: Emitter, row: SSAValue) -> list[SSAValue]:
    """:data:`OVERLAP`: a unit's first row's statistics (:func:`stat_names`' order)."""
    st = _norm_first_pass(r, e, row, _slice_span(r, e))
    return [st[k] for k in stat_names(r.p)]


def second_pass(r: RowState, e: Emitter, stats: list[SSAValue], parts: list[RowBuf]) -> None:
    """:data:`OVERLAP`: a unit's last row's dx and column sums from its statistics."""
    _norm_second_pass(r, e, dict(zip(stat_names(r.p), stats, strict=True)), parts, _slice_span(r, e))


def overlapped_pass(prev: RowState, stats: list[SSAValue], r: RowState, e: Emitter, row: SSAValue,
                    parts: list[RowBuf]) -> list[SSAValue]:
    """:data:`OVERLAP`: one read of the thread's vectors of row ``row`` (``r``: its sums)
    and of the previous row of the unit (``prev``, its statistics ``stats``: its dx and
    column sums, the weight read once for both); then ``row``'s statistics."""
    p = r.p
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD
    pst = dict(zip(stat_names(p), stats, strict=True))
    st = read_stats(r, e, row)
    span = _slice_span(r, e)

    def both(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        ws = r.w.load(b, first, p.vec, extra) if r.w is not None else None
        _, xh, g = _stream_terms(r, b, first, extra, st, ws)
        out = [v for v in norm_sums(b, xh, g, [state[0], state[1] if layer else None], layer) if v is not None]
        _dx_and_columns(prev, b, first, extra, *_stream_terms(prev, b, first, extra, pst, ws), pst, parts)
        return out

    zero = e.const(0.0, f32)
    state = visit_vectors(e, p, span[0], span[1], [zero, zero] if layer else [zero], both)
    st.update(norm_row_stats(r, e, row, [state[0], state[1] if layer else None], st["rstd"]))
    return [st[k] for k in stat_names(p)]


CE_FAST: bool | None = None
"""None: where :data:`CE_FAST_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings, ``tools/probes/rows_backward.py --set ce``). On,
cross_entropy's backward (:func:`ce_backward`) computes each element as
``fma(p, s, c)``: ``p = ex2.approx.ftz((x - lse) log2(e))`` (rows_common.exp_shifted: FADD,
FMUL, one MUFU.EX2, without the accurate exp's range scaling: FSETP and two predicated
FMUL), ``s`` the row's scale (the loss's gradient; 0 on an ignored row, NaN where the
target is outside [0, N)) and ``c`` one of two per-row constants (``-s ls / N``; at the
target ``-s (ls / N + 1 - ls)``) chosen by a 32-bit compare of the element's place with
the target's (the default: a 64-bit compare, FADD, FMUL by the scale, a FMUL by 0 and a
select for the ignored rows): about 6 SASS instructions an element where the default
takes 14 (ptxas, sm_90a). Not the folded ``fma(x, log2(e), -lse log2(e))``: its rounding
of ``lse log2(e)`` puts up to ``|lse| 2^-24`` into every exponent (rows_common.FAST_EXP).
Bits change (one rounding fewer; an exp below 2^-126 flushed to 0), never with M; the
non-finite results are the default's (NaN rows where lse or the scale is NaN, an ignored
row's ``p * 0``)."""

CE_FAST_MEASURED: dict = half_as_bfloat16({
    # (tools/probes/rows_backward.py --set ce on an H200, 2026-11-29 seventh session, x copy)
    # bfloat16 1024 0.908 -> 0.919, 4096 0.904 -> 0.918, 16384 0.909 -> 0.941 (65536 and
    # 262144 equal); float32 65536 on rows_stream with CE_TARGET_APART 0.890 (rows_cluster)
    # -> 0.946 (1024, 4096, 16384 and 262144 within 1%)
    BF16.name: ((1024, 16384),),
    F32.name: ((65536, 65536),),
})
""":data:`CE_FAST` by element type name, or ``(kind, type name)``, and N (never M): the
ranges (N from, N to) where it is on."""

CE_TARGET_APART: bool | None = None
"""None: where :data:`CE_TARGET_APART_MEASURED` says; True or False: everywhere or nowhere.
With :data:`CE_FAST` on (alone it does nothing): every element takes the row's other
constant (``fma(p, s, c)``: FADD, FMUL, MUFU.EX2, FFMA, no compare or select an element),
and the thread that holds the target (found by arithmetic once a row: its vector ``t /
vec`` is one of the thread's ``sw + k G``) writes the target's element again after its
vectors, from ``x[t]`` read again (an L1 hit): the same formula, the same bits as
:data:`CE_FAST`'s (one thread, one address: the later store is the one left). Where the
group's threads are not a power of two, :data:`CE_FAST`'s compare."""

CE_TARGET_APART_MEASURED: dict = half_as_bfloat16({
    # (tools/probes/rows_backward.py --set ce on an H200, 2026-11-29 seventh session, x copy)
    # float32 65536 on rows_stream: with CE_FAST 0.946, rows_stream alone 0.936
    F32.name: ((65536, 65536),),
})
""":data:`CE_TARGET_APART` by element type name, or ``(kind, type name)``, and N (never M)."""


def _ce_setting(on: bool | None, table: dict, p: RowPlan) -> bool:
    """A setting of cross_entropy's backward (rows_common.setting_of)."""
    return setting_of(on, table, p.dtype.name, p.n, p.kind.value)


def ce_fast(p: RowPlan) -> bool:
    """Whether plan ``p``'s cross_entropy backward takes :data:`CE_FAST`'s form."""
    return _ce_setting(CE_FAST, CE_FAST_MEASURED, p)


def ce_target_apart(p: RowPlan) -> bool:
    """Whether plan ``p``'s cross_entropy backward writes the target's element apart
    (:data:`CE_TARGET_APART`, with :data:`CE_FAST`; the group a power of two)."""
    return (ce_fast(p) and p.group & (p.group - 1) == 0
            and _ce_setting(CE_TARGET_APART, CE_TARGET_APART_MEASURED, p))


def _ce_target_again(r: RowState, e: Emitter, t32: SSAValue, inside: SSAValue,
                     target_dx: Callable[[Emitter, SSAValue], SSAValue]) -> None:
    """:data:`CE_TARGET_APART`: the target's element of dx written again by the thread
    holding it (after its vectors), ``target_dx(x[t])``: the row's ``fma(p, s, c_target)``."""
    p = r.p
    assert r.sw is not None and r.y is not None
    sw32 = e.value(CvtOp(CvtType.U32, CvtType.U64, r.sw, i32))
    d = e.sub_i(e.shr_u32(t32, p.vec.bit_length() - 1), sw32)  # the target's vector from the thread's first
    span = p.items * p.group if p.items else 1 << 30  # (streamed: every vector sw + k G of the row)
    mine = e.and_pred(e.cmp("ult", d, span), e.cmp("eq", e.and_b32(d, p.group - 1), 0))
    mine = e.and_pred(mine, inside)  # (outside [0, N): every element NaN already, no address)

    def again(b: Emitter) -> list[SSAValue]:
        off = b.wide(b.sub_i(t32, b.mul_i(sw32, p.vec)))  # elements from the thread's first vector
        xt = load_vec(b, p.dtype, b.ptr_add(r.x.base, b.mul_i(off, p.dtype.bytes)), 0, 1)[0]
        v = target_dx(b, xt)
        store_vec(b, p.dtype, b.ptr_add(r.y.base, b.mul_i(off, p.dtype.bytes)), 0, [v])  # type: ignore[union-attr]
        return []

    e.if_(mine, again)


def ce_backward(r: RowState, e: Emitter, row: SSAValue) -> None:
    """cross_entropy's dx, elementwise from the stored lse (no reduction): ``(exp(x - lse)
    - s / N - (1 - s) [j == target]) * grad[row]``; 0 where the target is ignore_index,
    NaN where it is outside [0, N). :data:`CE_FAST` and :data:`CE_TARGET_APART`: its settings."""
    op, p = r.op, r.p
    assert op.lse is not None and op.target is not None and op.grad is not None and r.y is not None and r.sw is not None
    lse = _row_stat(e, op.lse, row)
    t = e.ld(ld_type(I64), e.ptr_add(e.ptr(op.target, StateSpace.GLOBAL), e.mul_i(row, 8)), i64)
    dl = _row_stat(e, op.grad, row)
    inside = e.cmp("ult", t, e.const(p.n, i64))
    scale = e.selp(SelpType.F32, dl, e.const(float("nan"), f32), inside)
    kept = e.cmp("ne", t, e.const(op.ignored, i64))
    ls = op.smoothing
    sw = r.sw
    plain = type(r.x) is RowBuf  # (not rows_lower.RAGGED's buffer: the default's loads)
    fast, apart = ce_fast(p), ce_target_apart(p) and plain
    if fast:  # the row's scale (0 on an ignored row) and its two constants: fma(p, s, c)
        s = e.selp(SelpType.F32, scale, e.const(0.0, f32), kept)
        c_other = f32_mul(e, s, e.const(-ls / p.n, f32))
        c_target = f32_mul(e, s, e.const(-(ls / p.n + 1.0 - ls), f32))
        t32 = e.value(CvtOp(CvtType.U32, CvtType.U64, t, i32))  # (outside [0, N): s NaN, every element NaN)

    def prob(b: Emitter, x: SSAValue) -> SSAValue:  # (CE_FAST: exp(x - lse), ex2.approx.ftz)
        return exp_shifted(b, x, lse, True)

    def dx(b: Emitter, first: SSAValue | int, extra: int) -> None:
        xs = r.x.load(b, first, p.vec, extra)
        if apart:  # (the target's element written again after the vectors: _ce_target_again)
            r.y.store(b, first, p.vec, [b.fma(AT, prob(b, x), s, c_other) for x in xs], extra)  # type: ignore[union-attr]
            return
        # the vector's index in the row: the thread's first, + first + extra (both in vectors)
        vector = b.add_i(sw, first + extra) if isinstance(first, int) else b.add_i(b.add_i(sw, first), extra)
        out = []
        if fast:
            v32 = b.value(CvtOp(CvtType.U32, CvtType.U64, vector, i32))
            tv32 = b.sub_i(t32, b.mul_i(v32, p.vec))  # the target's place in this vector
            for j, x in enumerate(xs):
                c = b.selp(SelpType.F32, c_target, c_other, b.cmp("eq", tv32, b.const(j, i32)))
                out.append(b.fma(AT, prob(b, x), s, c))
            r.y.store(b, first, p.vec, out, extra)  # type: ignore[union-attr]
            return
        tv = b.sub_i(t, b.mul_i(vector, p.vec))  # the target's place in this vector
        for j, x in enumerate(xs):
            prob_ = f32_exp(b, f32_sub(b, x, lse))
            v = f32_sub(b, prob_, b.const(ls / p.n, f32)) if ls else prob_
            v = b.selp(SelpType.F32, f32_sub(b, v, b.const(1.0 - ls, f32)), v, b.cmp("eq", tv, b.const(j, i64)))
            # an ignored row: torch's log_softmax backward of a zero gradient, 0 - p * 0: NaN
            # where the row's softmax is NaN (a NaN or +inf in it: lse NaN), else 0
            out.append(b.selp(SelpType.F32, f32_mul(b, v, scale), f32_mul(b, prob_, b.const(0.0, f32)), kept))
        r.y.store(b, first, p.vec, out, extra)  # type: ignore[union-attr]

    if p.items:
        for k, cond in enumerate(r.item_conds(e)):
            if cond is None:
                dx(e, k * p.group, 0)
            else:
                e.if_(cond, lambda b, k=k: dx(b, k * p.group, 0) or [])
    else:
        full, cond = r.partial(e)
        visit_vectors(e, p, full, cond, [], lambda b, first, st, extra: dx(b, first, extra) or st)
    if apart:  # CE_TARGET_APART: the target's element
        _ce_target_again(r, e, t32, inside, lambda c, xt: c.fma(AT, prob(c, xt), s, c_target))


def row_ticket(e: Emitter, counter: SSAValue, expected: SSAValue, tid: SSAValue, name: str) -> SSAValue:
    """After every thread's stores: true (in every thread of the CTA) in the CTA that
    draws the last of ``expected`` tickets (i32) at ``counter`` (a ``u32`` that CTA sets
    back to 0): variants/kernel.py's ticket, for a count known at the launch. Each thread
    makes its stores visible at gpu scope before the CTA barrier; thread 0 takes the
    ticket (``atom.add``); the last reads the others' stores after an acquiring fence."""
    e.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
    e.bar_sync()
    flag = e.shared([1], i32, name)

    def t0(b: Emitter) -> list[SSAValue]:
        t = b.value(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, b.const(1)))
        last = b.value(arith.SelectOp(b.cmp("eq", t, b.add_i(expected, -1)), b.const(1), b.const(0)))
        b.st(LdStType.B32, flag, last)
        return []

    e.if_(e.cmp("eq", tid, 0), t0)
    e.bar_sync()
    return e.cmp("ne", e.ld(LdStType.B32, flag, i32), 0)


SUM_LOADS = 16
"""Rows of the partials a tail sum's thread loads at a time (its loads in flight)."""

GROUP_UNITS = 16
"""Units, at least, whose partial rows the last of them to finish adds into one
second-level row (the column sums in two levels: the groups' sums in parallel, then the
last group's CTA adds the groups' rows; :attr:`ColumnSums.group`)."""

NORM_TAIL_SPREAD: int | None = None
"""None: where :data:`NORM_TAIL_SPREAD_MEASURED` says; else everywhere (the probe's and the
tests' setting; 0: off): about this many loads of partial rows in flight a thread, a piece.
On, the column sums' last level of a norm's backward (:func:`finish_columns` where its
caller asks for no ``ahead`` / ``spread`` of its own: rows_cta, rows_cluster, rows_warp,
rows_bulk_backward's cells without ``"tail_loads"``) is spread over the CTAs still there
when its last row arrives, as rows_bulk_backward's ``TAIL_SPREAD`` at 262144 (0.80 -> 0.90
of copy there): where the units fit one group, the units' partial rows (bfloat16 65536's
15 a rank, 960 KiB for layer_norm, which the default's last CTA of each rank reads alone,
its 8 column vectors a thread in turn, each row through a one-row loop); else, after each
group's sum (the default's first level, or :data:`NORM_TAIL_LEVELS` 2's), the groups' rows
(rms_norm 16384's 9 rows of 16384, 576 KiB, one CTA in the default), shared by the groups'
last CTAs. Pieces drawn from a counter,
each piece's rows loaded before the first add and added in row order: the default's
dweight / dbias bits; no counter beyond the default's (the arrivals and the leavings on
one, the pieces on group 0's: :func:`_spread_columns`' ``packed``), the workspace left
zeroed."""

NORM_TAIL_LEVELS: int | None = None
"""None: the levels :data:`NORM_TAIL_SPREAD_MEASURED` gives (1 where it has no entry); 1 or
2: everywhere (the probe's and the tests' setting). 2: with two levels the first spread
too (:func:`_spread_group`: each group's rows by the group's CTAs still there when its last
unit arrives, the pieces and the leavings packed on the group's counter), then the groups'
rows as with 1. 1: the first level the default's (each group's last CTA alone)."""

NORM_TAIL_POLLS = 64
""":data:`NORM_TAIL_SPREAD`'s polls of the arrivals a waiting CTA makes at most before it
leaves the tail to the others (none waits on a CTA not yet resident)."""

NORM_TAIL_SPREAD_MEASURED: dict = half_as_bfloat16({
    # (tools/probes/rows_ln_bf16.py's "tail spread" candidates on an H200, the seventh session of
    # 2026-11-29, x copy: the default -> 1 load a piece, the levels given; float16 as bfloat16:
    # layer_norm 0.832 -> 0.893, 0.826 -> 0.878, 0.752 -> 0.802, rms_norm 16384 0.875 -> 0.951, 65536
    # 0.870 -> 0.895; float32 rms_norm 4096 within 1%)
    ("layer_norm_backward", BF16.name): ((4096, 4096, 1, 2),  # 0.877 -> 0.938
                                         (16384, 16384, 1, 2),  # 0.867 -> 0.924
                                         (65536, 65536, 1, 1)),  # 0.841 -> 0.884
    ("rms_norm_backward", BF16.name): ((4096, 4096, 1, 1),  # 0.916 -> 0.926
                                       (16384, 16384, 1, 2),  # 0.901 -> 0.981
                                       (65536, 65536, 1, 1)),  # 0.874 -> 0.901
    ("layer_norm_backward", F32.name): ((4096, 4096, 1, 2),),  # 0.929 -> 0.960
})
""":data:`NORM_TAIL_SPREAD` by element type name, or ``(kind, type name)``: (N from, N to,
loads a piece, levels spread: :data:`NORM_TAIL_LEVELS`), the first range holding N (never
M); measured by tools/probes/rows_ln_bf16.py's "tail spread" candidates. Two levels poll
for their group (at most :data:`NORM_TAIL_POLLS` times): free where the grid is resident at
once (these cells' persistent grids on an H200), a wait where it runs in waves."""


def norm_tail_spread(p: RowPlan) -> tuple[int, int]:
    """(:data:`NORM_TAIL_SPREAD`'s loads a piece, :data:`NORM_TAIL_LEVELS`) for plan ``p``
    (a norm's backward); loads 0: off."""
    loads, levels = 0, 1
    table = NORM_TAIL_SPREAD_MEASURED
    ranges = table.get((p.kind.value, p.dtype.name))
    for lo, hi, k, lv in table.get(p.dtype.name, ()) if ranges is None else ranges:
        if lo <= p.n <= hi:
            loads, levels = k, lv
            break
    if NORM_TAIL_SPREAD is not None:
        loads = max(0, NORM_TAIL_SPREAD)
    return loads, levels if NORM_TAIL_LEVELS is None else NORM_TAIL_LEVELS



@dataclass(frozen=True)
class ColumnSums:
    """The workspace of a norm's backward's column sums: ``u32`` ticket counters (per
    rank of a cluster: the whole grid's, then one per group of :data:`GROUP_UNITS`
    units), then per output the float32 partial rows of the units, then per output the
    groups' rows. Zero at the launch and left zero (each counter reset, each row cleared
    as it is read). With a cluster, CTA rank r's columns (its slice of the row) have
    their own counters: the CTAs of rank r sum them, in parallel with the other ranks."""

    outs: int
    units: int  # the most units (a partial row each)
    n: int
    ranks: int = 1  # CTAs per unit (a cluster's)
    extra: int = 0  # counters of one rank after the groups' (finish_columns' ``spread``: 1)

    @property
    def group(self) -> int:
        """Units per group: a power of two, at least :data:`GROUP_UNITS` and about the
        square root of the units (each tail sum adds at most ``group + groups`` rows)."""
        g = GROUP_UNITS
        while g * g < self.units:
            g *= 2
        return g

    @property
    def groups(self) -> int:
        return -(-self.units // self.group)

    @property
    def counters(self) -> int:
        """Counters of one rank: the grid's, then the groups', then :attr:`extra`."""
        return 1 + self.groups + self.extra

    @property
    def header(self) -> int:
        return -(-4 * self.counters * self.ranks // 16) * 16

    def partials(self, k: int) -> int:
        return self.header + k * self.units * self.n * 4

    def group_rows(self, k: int) -> int:
        return self.header + self.outs * self.units * self.n * 4 + k * self.groups * self.n * 4

    @property
    def bytes(self) -> int:
        return self.group_rows(self.outs)


def column_partial_row(e: Emitter, ws: SSAValue, lay: ColumnSums, k: int, unit: SSAValue) -> SSAValue:
    """The address of unit ``unit``'s partial row of output ``k`` (i32 unit)."""
    return e.ptr_add(ws, e.add_i(e.mul_i(e.wide(unit), lay.n * 4), lay.partials(k)))


def _sum_rows(e: Emitter, rows: SSAValue, first: SSAValue, count: SSAValue, n: int, tid: SSAValue, block: int,
              write: Callable[[Emitter, SSAValue, list[SSAValue]], None], cols: tuple[SSAValue | int, SSAValue | int] | None = None,
              v: int | None = None) -> None:
    """For each column (thread t: columns c0 + t * v, c0 + (t + T) * v, ... below c1, ``v``
    at a time: 4 where N allows; ``cols``: (c0, c1), i64 or int, the whole row when None),
    the sum of the float32 rows ``first, first + 1, ... first + count - 1`` (i64) at
    ``rows`` (rows of N), added in row order, given to
    ``write(e, column, sums)`` (:data:`SUM_LOADS` loads in flight a step); each value read is set back to 0 (the workspace is left
    zeroed, docs/runtime.md)."""
    if v is None:
        v = 4 if n % 4 == 0 else 1
    c0, c1 = cols if cols is not None else (0, n)
    zeros = [e.const(0.0, f32)] * v

    def column(c: Emitter, col: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        at = c.ptr_add(c.ptr_add(rows, c.mul_i(col, 4)), c.mul_i(first, n * 4))
        steps = c.wide(c.and_b32(c.value(CvtOp(CvtType.U32, CvtType.U64, count, i32)), -SUM_LOADS))

        def several(d: Emitter, u: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            row = d.ptr_add(at, d.mul_i(u, n * 4))
            got = [load_vec(d, F32, row, j * n * 4, v, nc=False) for j in range(SUM_LOADS)]
            for j in range(SUM_LOADS):
                store_vec(d, F32, row, j * n * 4, zeros)
            for vals in got:
                acc = [f32_add(d, a, x) for a, x in zip(acc, vals, strict=True)]
            return acc

        def one(d: Emitter, u: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            row = d.ptr_add(at, d.mul_i(u, n * 4))
            vals = load_vec(d, F32, row, 0, v, nc=False)
            store_vec(d, F32, row, 0, zeros)
            return [f32_add(d, a, x) for a, x in zip(acc, vals, strict=True)]

        acc = c.for_(0, steps, SUM_LOADS, [c.const(0.0, f32)] * v, several)
        acc = c.for_(steps, count, 1, acc, one)
        write(c, col, acc)
        return []

    start = e.wide(e.mul_i(tid, v))
    if not isinstance(c0, int) or c0:
        start = e.add_i(start, c0 if not isinstance(c0, int) else c0)
    e.for_(start, c1, block * v, [], column)


def finish_columns(e: Emitter, p: RowPlan, op: NormalizeRowsOp, ws: SSAValue, lay: ColumnSums, tid: SSAValue,
                    ctas: SSAValue, unit: SSAValue, rank: SSAValue | None = None, ahead: int = 0,
                    spread: int = 0) -> None:
    """The column sums in two levels, each in a fixed order: the CTA that finishes last of
    its group of ``lay.group`` units adds the group's partial rows in unit order into
    the group's row; the CTA that finishes the last group adds the groups' rows in group
    order and writes dweight / dbias, rounded once. With a cluster (``rank``: the CTA's
    rank in it) each rank does so for its own columns (its slice of the row) with its own
    counters: the sums are spread over the cluster's ranks. Every counter is set back to 0.

    ``ahead`` > 0 (rows_bulk_backward's ``TAIL_LOADS``), where the units fit one group and
    each thread's columns are whole vectors (:func:`tail_ahead_fits`): one level, the last
    CTA (of its rank) adding the units' partial rows straight into dweight / dbias
    (:func:`_sum_ahead`: about ``ahead`` loads in flight a thread); the default's bits.
    ``spread`` > 0 as well (``lay.extra`` 1): the sums spread over the CTAs (of the rank)
    that wait for the last unit at most ``spread`` polls (:func:`_spread_columns`); the
    default's bits.

    Neither (the callers' default), :data:`NORM_TAIL_SPREAD` where on for ``p`` and the
    rank's columns are whole vectors of every thread (:func:`_tail_fits`): the last level
    spread over the CTAs still there, with the default's counters (``lay.extra`` 0): where
    the units fit one group, the units' rows by every unit's CTA; else the groups' rows
    (after the default's first level) by each group's last CTA; the default's bits."""
    outs = [o for o in (op.dweight, op.dbias) if o is not None]
    shift = lay.group.bit_length() - 1
    nunits = e.shr_u32(ctas, p.cluster.bit_length() - 1) if p.cluster > 1 else ctas
    group = e.shr_u32(unit, shift)
    first = e.mul_i(group, lay.group)
    size = e.min_s32(e.sub_i(nunits, first), lay.group)
    mine = ws
    cols: tuple[SSAValue | int, SSAValue | int] | None = None
    v = 4 if p.n % 4 == 0 else 1
    if rank is not None:  # the rank's counters and columns
        mine = e.ptr_add(ws, e.mul_i(e.wide(rank), 4 * lay.counters))
        width = p.slice * p.vec
        c0 = e.mul_i(e.wide(rank), width)
        end = e.add_i(c0, width)
        cols = (c0, end if p.exact else e.value(arith.SelectOp(e.cmp("slt", end, p.n), end, e.const(p.n, i64))))
        if width % 4:
            v = 1
    if ahead > 0 and spread > 0 and lay.extra and tail_ahead_fits(p, lay, v):
        _spread_columns(e, p, outs, ws, mine, lay, tid, cols[0] if cols is not None else 0, size, v, ahead, spread)
        return
    loads, levels = norm_tail_spread(p) if ahead == 0 and spread == 0 and _tail_fits(p, v) else (0, 1)
    if loads and lay.groups == 1:  # (NORM_TAIL_SPREAD)
        _spread_columns(e, p, outs, ws, mine, lay, tid, cols[0] if cols is not None else 0, size, v, loads,
                        NORM_TAIL_POLLS, packed=True)
        return
    if loads and levels > 1 and _group_spread_fits(p, lay, v, len(outs), loads):  # (NORM_TAIL_LEVELS 2)
        c0 = cols[0] if cols is not None else 0

        def groups_rows(b: Emitter) -> None:  # the group's last leaver: the groups' rows, spread
            groups = b.shr_u32(b.add_i(nunits, lay.group - 1), shift)
            _spread_columns(b, p, outs, ws, mine, lay, tid, c0, groups, v, loads, NORM_TAIL_POLLS, rows=lay.groups,
                            base=lay.group_rows, packed=True)

        _spread_group(e, p, outs, ws, mine, lay, tid, c0, group, first, size, v, loads, NORM_TAIL_POLLS, groups_rows)
        return
    counter = e.ptr_add(mine, e.add_i(e.mul_i(e.wide(group), 4), 4))
    done = row_ticket(e, counter, size, tid, "columns_group")
    if ahead > 0 and tail_ahead_fits(p, lay, v):

        def one_level(b: Emitter) -> list[SSAValue]:
            b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
            _sum_ahead(b, p, outs, ws, lay, tid, cols[0] if cols is not None else 0, size, v, ahead)
            b.if_(b.cmp("eq", tid, 0), lambda c: c.st(LdStType.U32, counter, c.const(0)) or [])
            return []

        e.if_(done, one_level)
        return

    def level1(b: Emitter) -> list[SSAValue]:
        b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
        for k in range(len(outs)):
            dst = b.ptr_add(b.ptr_add(ws, lay.group_rows(k)), b.mul_i(b.wide(group), p.n * 4))

            def keep(c: Emitter, col: SSAValue, sums: list[SSAValue], dst=dst) -> None:
                store_vec(c, F32, c.ptr_add(dst, c.mul_i(col, 4)), 0, sums)

            _sum_rows(b, b.ptr_add(ws, lay.partials(k)), b.wide(first), b.wide(size), p.n, tid, p.block, keep, cols, v)
        b.if_(b.cmp("eq", tid, 0), lambda c: c.st(LdStType.U32, counter, c.const(0)) or [])
        groups = b.shr_u32(b.add_i(nunits, lay.group - 1), shift)
        if loads:  # NORM_TAIL_SPREAD: the groups' rows shared by the groups' last CTAs
            _spread_columns(b, p, outs, ws, mine, lay, tid, cols[0] if cols is not None else 0, groups, v, loads,
                            NORM_TAIL_POLLS, rows=lay.groups, base=lay.group_rows, packed=True)
            return []
        last = row_ticket(b, mine, groups, tid, "columns_last")

        def level2(c: Emitter) -> list[SSAValue]:
            c.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
            for k, out in enumerate(outs):
                od = of_ir(out.type.element_type)  # type: ignore[union-attr]
                assert od is not None
                out0 = c.ptr(out, StateSpace.GLOBAL)

                def put(d: Emitter, col: SSAValue, sums: list[SSAValue], out0=out0, od=od) -> None:
                    store_vec(d, od, d.ptr_add(out0, d.mul_i(col, od.bytes)), 0, sums)

                _sum_rows(c, c.ptr_add(ws, lay.group_rows(k)), c.const(0, i64), c.wide(groups), p.n, tid, p.block, put,
                          cols, v)
            c.if_(c.cmp("eq", tid, 0), lambda d: d.st(LdStType.U32, mine, d.const(0)) or [])
            return []

        b.if_(last, level2)
        return []

    e.if_(done, level1)


def _tail_width(p: RowPlan) -> int:
    """The columns a tail sum covers: the CTA's slice with a cluster (one rank's), else the row."""
    return p.slice * p.vec if p.cluster > 1 else p.n


def _tail_fits(p: RowPlan, v: int) -> bool:
    """Whether each rank's columns of plan ``p`` are whole ``v``-vectors of every thread, a
    cluster's slices exact (:func:`_spread_columns`' pieces)."""
    return (p.cluster == 1 or p.exact) and _tail_width(p) % (p.block * v) == 0


def tail_ahead_fits(p: RowPlan, lay: ColumnSums, v: int) -> bool:
    """Whether :func:`finish_columns`'s one-level tail (``ahead``) takes plan ``p``: the
    units fit one group (the default's second level adds the one group's row to 0: the
    same bits), each rank's columns whole ``v``-vectors of every thread, a cluster's slices
    exact."""
    return lay.groups == 1 and _tail_fits(p, v)


def _add_units(e: Emitter, p: RowPlan, outs: list, ws: SSAValue, lay: ColumnSums, items: list[tuple[int, SSAValue]],
               keep: list[SSAValue], v: int, rows: int | None = None, base: Callable[[int], int] | None = None,
               write: Callable[[Emitter, int, SSAValue, list[SSAValue]], None] | None = None,
               guard: bool = False) -> None:
    """For each ``(k, column)`` of ``items`` (column: i64), the ``v`` columns' partial rows
    of all ``lay.units`` units loaded (every load before the first add), each set back to
    0, added from 0 in unit order (unit u where ``keep[u]``: those past the grid's are in
    the workspace, zero, and not added, a select keeping the sum), and written to output
    ``k`` rounded once: the default's bits (its second level adds the one group's row to
    0, and a sum from +0 is never -0). ``rows`` / ``base``: ``rows`` rows of N from byte
    ``base(k)`` of the workspace in place of the units' (:data:`NORM_TAIL_SPREAD`'s
    groups' rows: the default's second level, added from 0 in group order). ``write``:
    ``write(e, k, column, sums)`` in place of output ``k`` (a group's row, float32).
    ``guard``: rows 1 on read and cleared only where ``keep`` (the last group's rows past
    the units are another output's or past the workspace: :func:`_spread_group`)."""
    rows = lay.units if rows is None else rows
    base = lay.partials if base is None else base
    zeros = [e.const(0.0, f32)] * v
    ats = [e.ptr_add(ws, e.mul_i(col, 4)) for _, col in items]

    def load(at: SSAValue, off: int, u: int) -> list[SSAValue]:
        if not guard or u == 0:
            return load_vec(e, F32, at, off, v, nc=False)
        return e.if_(keep[u], lambda b: load_vec(b, F32, at, off, v, nc=False), lambda b: zeros, [f32] * v)

    got = [[load(at, base(k) + u * p.n * 4, u) for u in range(rows)] for (k, _), at in zip(items, ats, strict=True)]
    for (k, _), at in zip(items, ats, strict=True):
        for u in range(rows):
            if guard and u:
                e.if_(keep[u], lambda b, at=at, off=base(k) + u * p.n * 4: store_vec(b, F32, at, off, zeros) or [])
            else:
                store_vec(e, F32, at, base(k) + u * p.n * 4, zeros)
    for (k, col), rows_k in zip(items, got, strict=True):
        acc = [f32_add(e, z, x) for z, x in zip(zeros, rows_k[0], strict=True)]
        for u in range(1, rows):
            acc = [e.value(arith.SelectOp(keep[u], f32_add(e, a, x), a)) for a, x in zip(acc, rows_k[u], strict=True)]
        if write is not None:
            write(e, k, col, acc)
            continue
        od = of_ir(outs[k].type.element_type)
        assert od is not None
        store_vec(e, od, e.ptr_add(e.ptr(outs[k], StateSpace.GLOBAL), e.mul_i(col, od.bytes)), 0, acc)


def _sum_ahead(e: Emitter, p: RowPlan, outs: list, ws: SSAValue, lay: ColumnSums, tid: SSAValue,
               c0: SSAValue | int, count: SSAValue, v: int, ahead: int) -> None:
    """:func:`finish_columns`'s one-level tail: thread t's columns ``c0 + (t + jT) v`` of
    each output (``v`` at a time, unrolled), each the sum of the partial rows of units 0,
    1, ... ``count - 1`` (i32) in unit order (:func:`_add_units`), in batches of whole
    columns, about ``ahead`` loads a batch."""
    steps = _tail_width(p) // (p.block * v)
    start = e.add_i(e.wide(e.mul_i(tid, v)), c0) if not isinstance(c0, int) or c0 else e.wide(e.mul_i(tid, v))
    keep = [e.cmp("slt", e.const(u), count) for u in range(lay.units)]  # (unit 0 is always there: count >= 1)
    cols = [e.add_i(start, j * p.block * v) for j in range(steps)]
    work = [(k, cols[j]) for j in range(steps) for k in range(len(outs))]
    batch = max(1, ahead // lay.units)
    for b0 in range(0, len(work), batch):
        _add_units(e, p, outs, ws, lay, work[b0:b0 + batch], keep, v)


def _arrive_and_wait(e: Emitter, tid: SSAValue, counter: SSAValue, arrivals: Callable[[Emitter, SSAValue], SSAValue],
                     count: SSAValue, polls: int, name: str) -> tuple[SSAValue, SSAValue]:
    """The spread tails' ticket and wait (:func:`_spread_columns`, :func:`_spread_group`):
    after its partial rows (a GPU fence, a CTA barrier) thread 0 takes an arrival ticket on
    ``counter`` (``atom.add`` 1; ``arrivals`` reads the arrivals from its value); then, while
    fewer than ``count`` have arrived and fewer than ``polls`` tries were made, thread 0
    polls the counter (``atom.add`` 0) between two CTA barriers. Hands back the CTA's
    shared words of the arrivals it saw (``<name>_seen``) and of the pieces it draws
    (``<name>_piece``)."""
    seen = e.shared([1], i32, f"{name}_seen")
    tries = e.shared([1], i32, f"{name}_polls")
    drawn = e.shared([1], i32, f"{name}_piece")
    e.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))  # (each thread's partial rows, then the CTA's ticket)
    e.bar_sync()

    def arrive(b: Emitter) -> list[SSAValue]:
        t = b.value(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, b.const(1)))
        b.st(LdStType.B32, seen, b.add_i(arrivals(b, t), 1))
        b.st(LdStType.B32, tries, b.const(0))
        return []

    e.if_(e.cmp("eq", tid, 0), arrive)
    e.bar_sync()

    def waiting(c: Emitter) -> SSAValue:
        """Every thread: whether to wait on (fewer than ``count`` seen, fewer than ``polls``
        tries); thread 0 then polls once (between two CTA barriers: read, then written)."""
        n, k = c.ld(LdStType.B32, seen, i32), c.ld(LdStType.B32, tries, i32)
        go = c.and_pred(c.cmp("slt", n, count), c.cmp("slt", k, polls))
        c.bar_sync()

        def poll(d: Emitter) -> list[SSAValue]:
            d.st(LdStType.B32, seen, arrivals(d, d.value(AtomOp(AtomOpKind.ADD, AtomType.U32, counter, d.const(0)))))
            d.st(LdStType.B32, tries, d.add_i(k, 1))
            return []

        c.if_(c.and_pred(go, c.cmp("eq", tid, 0)), poll)
        c.bar_sync()
        return go

    e.while_(waiting)
    return seen, drawn


def _draw_pieces(b: Emitter, tid: SSAValue, drawn: SSAValue, take: Callable[[Emitter], list[SSAValue]], outs: int,
                 per_out: int, pieces: int, add_piece: Callable[[Emitter, int, SSAValue], list[SSAValue]]) -> None:
    """The spread tails' loop over the pieces a CTA draws: thread 0 draws the next (``take``
    stores its index in the shared word ``drawn``), every thread reads it between two CTA
    barriers (all have read it before thread 0 draws again) and adds piece ``i - k per_out``
    of output k (``add_piece``), until the index passes ``pieces``."""

    def draw(c: Emitter) -> SSAValue:
        c.if_(c.cmp("eq", tid, 0), take)
        c.bar_sync()
        i = c.ld(LdStType.B32, drawn, i32)
        c.bar_sync()  # (every thread has read it before thread 0 draws again)
        for k in range(outs):
            lo = k * per_out
            inside = c.and_pred(c.cmp("sge", i, lo), c.cmp("slt", i, lo + per_out))
            c.if_(inside, lambda d, k=k, lo=lo: add_piece(d, k, d.sub_i(i, d.const(lo))))
        return c.cmp("slt", i, pieces)

    b.while_(draw)


def _spread_columns(e: Emitter, p: RowPlan, outs: list, ws: SSAValue, mine: SSAValue, lay: ColumnSums,
                    tid: SSAValue, c0: SSAValue | int, count: SSAValue, v: int, ahead: int, polls: int,
                    rows: int | None = None, base: Callable[[int], int] | None = None, packed: bool = False) -> None:
    """:func:`finish_columns`' tail spread over the CTAs of a rank that are still there when
    its last unit arrives (the rank's three counters at ``mine``, arrived, next and left:
    the grid's, the one group's and the extra): after its partial rows each CTA takes an
    arrival ticket and, unless it is the last, polls the count (thread 0, ``atom.add`` of
    0, between CTA barriers) at most ``polls`` times for all ``count`` units; a CTA that
    sees them all (the last always does) draws pieces (``atom.add`` on next) until none is
    left: piece i of output k, columns ``c0 + i W ... + W - 1`` (W = T v J, J whole vectors
    a thread: about ``ahead`` loads of the units' rows), each the sum of the units' partial
    rows in unit order (:func:`_add_units`: the default's bits, whichever CTA adds the
    piece). A CTA that sees fewer leaves (none waits beyond its polls for one not yet
    resident: no deadlock where the grid does not fit at once). Each CTA then takes a
    leaving ticket; the last sets the three counters back to 0 (every CTA has touched them
    for the last time).

    ``rows`` / ``base``: the rows added (:func:`_add_units`'s; the units' by default).
    ``packed`` (:data:`NORM_TAIL_SPREAD`: no extra counter): the leavings counted on the
    arrivals' counter in its upper half (``1 << 16`` each; the arrivals, fewer than
    2^16, in its lower half, which the polls read), the pieces on group 0's counter (free
    by then: its group's units have all taken their tickets and its last CTA has set it
    back to 0 before arriving); the last leaver sets both back to 0."""
    rows = lay.units if rows is None else rows
    steps = _tail_width(p) // (p.block * v)
    j = 1
    while j * 2 <= max(1, ahead // rows) and steps % (j * 2) == 0:
        j *= 2
    per_out, width = steps // j, p.block * v * j
    pieces = per_out * len(outs)
    arrived, nxt = mine, e.ptr_add(mine, 4)  # (grid's, group 0's)
    left = arrived if packed else e.ptr_add(mine, 4 * (1 + lay.groups))  # (packed: the arrivals'; else the extra)
    low = (lambda c, x: c.and_b32(x, 0xFFFF)) if packed else (lambda c, x: x)  # (the arrivals of a packed count)
    seen, drawn = _arrive_and_wait(e, tid, arrived, low, count, polls, "columns")
    keep = [e.cmp("slt", e.const(u), count) for u in range(rows)]
    start = e.add_i(e.wide(e.mul_i(tid, v)), c0) if not isinstance(c0, int) or c0 else e.wide(e.mul_i(tid, v))

    def add_piece(b: Emitter, k: int, i: SSAValue) -> list[SSAValue]:
        """Piece ``i`` (i32) of output ``k``: the thread's J vectors of its columns."""
        first = b.add_i(start, b.wide(b.mul_i(i, width)))
        _add_units(b, p, outs, ws, lay, [(k, b.add_i(first, q * p.block * v)) for q in range(j)], keep, v, rows, base)
        return []

    def share(b: Emitter) -> list[SSAValue]:
        b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))  # (the units' partial rows, seen through the count)
        _draw_pieces(b, tid, drawn, lambda d: d.st(LdStType.B32, drawn, d.value(
            AtomOp(AtomOpKind.ADD, AtomType.U32, nxt, d.const(1)))) or [], len(outs), per_out, pieces, add_piece)
        return []

    e.if_(e.cmp("sge", e.ld(LdStType.B32, seen, i32), count), share)

    def leave(b: Emitter) -> list[SSAValue]:
        t = b.value(AtomOp(AtomOpKind.ADD, AtomType.U32, left, b.const(1 << 16 if packed else 1)))

        def reset(c: Emitter) -> list[SSAValue]:
            for ctr in (arrived, nxt) if packed else (arrived, nxt, left):
                c.st(LdStType.U32, ctr, c.const(0))
            return []

        last = b.add_i(b.mul_i(b.add_i(count, -1), 1 << 16), count) if packed else b.sub_i(count, b.const(1))
        b.if_(b.cmp("eq", t, last), reset)
        return []

    e.if_(e.cmp("eq", tid, 0), leave)


def _pieces(p: RowPlan, v: int, rows: int, ahead: int) -> tuple[int, int]:
    """(J, pieces of an output): a piece J whole ``v``-vectors of each thread's columns,
    about ``ahead`` loads of ``rows`` rows (:func:`_spread_columns`, :func:`_spread_group`)."""
    steps = _tail_width(p) // (p.block * v)
    j = 1
    while j * 2 <= max(1, ahead // rows) and steps % (j * 2) == 0:
        j *= 2
    return j, steps // j


GROUP_ARRIVED_BITS, GROUP_DRAWN_BITS = 10, 11
""":func:`_spread_group`'s group counter: the arrivals in its lowest 10 bits, the pieces
drawn in the next 11, the leavings in the top 11."""


def _group_spread_fits(p: RowPlan, lay: ColumnSums, v: int, outs: int, ahead: int) -> bool:
    """Whether :func:`_spread_group` takes plan ``p``: two levels, a group's units and its
    draws (the pieces and one past them a CTA) within their fields of the counter, a
    group's rows at most :data:`SUM_LOADS` (all of a piece's rows are in flight at once:
    rows_cta's groups of 32 at 4096 took ptxas from 124 to 149 registers, past the two
    CTAs a multiprocessor of the default's)."""
    _, per_out = _pieces(p, v, lay.group, ahead)
    return (lay.groups > 1 and lay.group <= SUM_LOADS and lay.group < 1 << GROUP_ARRIVED_BITS
            and per_out * outs + lay.group < 1 << GROUP_DRAWN_BITS)


def _spread_group(e: Emitter, p: RowPlan, outs: list, ws: SSAValue, mine: SSAValue, lay: ColumnSums, tid: SSAValue,
                  c0: SSAValue | int, group: SSAValue, first: SSAValue, size: SSAValue, v: int, ahead: int, polls: int,
                  then: Callable[[Emitter], None]) -> None:
    """:data:`NORM_TAIL_LEVELS` 2, the first level: every CTA, after its partial rows, takes
    an arrival ticket on its group's counter and polls it (at most ``polls`` times, as
    :func:`_spread_columns`) for the group's ``size`` units; a CTA that sees them all draws
    pieces (the counter's middle field) of the group's row: each piece the sum of the
    group's units' partial rows in unit order (:func:`_add_units`, written to the group's
    float32 row: the default's first level's bits). Each CTA then leaves (the top field);
    the last to leave (every piece added) sets the counter back to 0 and goes on to
    ``then`` (the groups' rows)."""
    rows = lay.group
    j, per_out = _pieces(p, v, rows, ahead)
    width, pieces = p.block * v * j, per_out * len(outs)
    a_bits, d_bits = GROUP_ARRIVED_BITS, GROUP_DRAWN_BITS
    ctr = e.ptr_add(mine, e.add_i(e.mul_i(e.wide(group), 4), 4))
    seen, drawn = _arrive_and_wait(e, tid, ctr, lambda c, x: c.and_b32(x, (1 << a_bits) - 1), size, polls,
                                   "columns_group")
    keep = [e.cmp("slt", e.const(u), size) for u in range(rows)]
    start = e.add_i(e.wide(e.mul_i(tid, v)), c0) if not isinstance(c0, int) or c0 else e.wide(e.mul_i(tid, v))
    src = e.ptr_add(ws, e.mul_i(e.wide(first), p.n * 4))  # (the group's first unit's rows: lay.partials(k) on)
    dst = e.ptr_add(ws, e.mul_i(e.wide(group), p.n * 4))  # (the group's row: lay.group_rows(k) on)

    def keep_row(b: Emitter, k: int, col: SSAValue, sums: list[SSAValue]) -> None:
        store_vec(b, F32, b.ptr_add(dst, b.mul_i(col, 4)), lay.group_rows(k), sums)

    def add_piece(b: Emitter, k: int, i: SSAValue) -> list[SSAValue]:
        at = b.add_i(start, b.wide(b.mul_i(i, width)))
        _add_units(b, p, outs, src, lay, [(k, b.add_i(at, q * p.block * v)) for q in range(j)], keep, v, rows,
                   write=keep_row, guard=True)
        return []

    def share(b: Emitter) -> list[SSAValue]:
        b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))  # (the units' partial rows, seen through the count)

        def take(d: Emitter) -> list[SSAValue]:
            old = d.value(AtomOp(AtomOpKind.ADD, AtomType.U32, ctr, d.const(1 << a_bits)))
            d.st(LdStType.B32, drawn, d.and_b32(d.shr_u32(old, a_bits), (1 << d_bits) - 1))
            return []

        _draw_pieces(b, tid, drawn, take, len(outs), per_out, pieces, add_piece)
        return []

    e.if_(e.cmp("sge", e.ld(LdStType.B32, seen, i32), size), share)
    e.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))  # (the CTA's pieces, then its leaving)
    e.bar_sync()

    def leave(b: Emitter) -> list[SSAValue]:
        old = b.value(AtomOp(AtomOpKind.ADD, AtomType.U32, ctr, b.const(1 << (a_bits + d_bits))))
        b.st(LdStType.B32, seen, b.value(arith.SelectOp(
            b.cmp("eq", b.shr_u32(old, a_bits + d_bits), b.add_i(size, -1)), b.const(1), b.const(0))))
        return []

    e.if_(e.cmp("eq", tid, 0), leave)
    e.bar_sync()

    def last(b: Emitter) -> list[SSAValue]:
        b.emit(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))  # (every piece of the group's row)
        b.if_(b.cmp("eq", tid, 0), lambda c: c.st(LdStType.U32, ctr, c.const(0)) or [])
        then(b)
        return []

    e.if_(e.cmp("ne", e.ld(LdStType.B32, seen, i32), 0), last)


@dataclass
class _SharedBuf(RowBuf):
    """A float32 buffer in shared memory (32-bit addresses), read and written by vectors
    as :class:`RowBuf` (``ld.shared`` / ``st.shared``)."""

    def at(self, e: Emitter, first: SSAValue | int, vec: int) -> tuple[SSAValue, int]:
        step = vec * self.dtype.bytes
        if isinstance(first, int):
            return self.base, first * step
        if first.type == i64:
            first = e.value(CvtOp(CvtType.U32, CvtType.U64, first, i32))
        return e.ptr_add(self.base, e.mul_i(first, step)), 0


SHARED_COLUMNS: bool | None = None
"""None: where :data:`MEASURED` says (float32 rows of 8193 to 65536, pipelined); True or
False: everywhere or nowhere. In shared memory, rows_cta and rows_cluster (one row per CTA, exact slices) keep each thread's
column sums of a norm's backward in shared memory (:func:`slice_accumulators`, at most
:data:`SHARED_COLUMNS_BYTES` a CTA) rather than registers (the registers then hold the
row only: 112 -> 75 for layer_norm_backward at 4096). Measured on an H200 slower in the
four cells tried (bfloat16, 4096 and 16384, rms_norm and layer_norm: 0.73 / 0.70 / 0.65 /
0.56 of copy against 0.74 / 0.75 / 0.67 / 0.63 in registers; docs/rows.md), and pipelined
(:data:`PIPELINE`) faster in float32 past 8192 only."""
SHARED_COLUMNS_BYTES = 64 * 1024


def _span(p: RowPlan) -> int:
    """The vectors of a row the CTA covers: its slice with a cluster, else the row."""
    return p.slice if p.cluster > 1 else p.vectors


def shared_columns(p: RowPlan, outs: int) -> bool:
    """Whether the registers variant of plan ``p`` keeps its column sums in shared memory."""
    on = measured(p)[1] if SHARED_COLUMNS is None else SHARED_COLUMNS
    return (on and p.items > 0 and p.groups == 1 and (p.cluster == 1 or p.exact)
            and _span(p) * p.vec * outs * 4 <= SHARED_COLUMNS_BYTES)


def slice_accumulators(e: Emitter, p: RowPlan, outs: int, g: SSAValue) -> list[RowBuf]:
    """The CTA's column sums of the vectors it covers (rows_slices and a cluster's CTA:
    its slice, ``p.slice`` vectors; rows_cta: the row), one float32 array per output in
    shared memory, each thread's vectors (``g, g + G, ...``) set to 0 here; only that
    thread adds to them (no barrier)."""
    width = _span(p) * p.vec
    sm = e.shared([outs * width], f32, "column_sums")
    zeros = [e.const(0.0, f32)] * p.vec
    bufs: list[RowBuf] = [_SharedBuf(F32, e.ptr_add(sm, e.add_i(e.mul_i(g, p.vec * 4), k * width * 4))) for k in range(outs)]
    full, rest = divmod(_span(p), p.group)

    def clear(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        for buf in bufs:
            buf.store(b, first, p.vec, zeros, extra)
        return state

    visit_vectors(e, p, full, e.cmp("ult", g, rest) if rest else None, [], clear)
    return bufs


def write_slice_partials(e: Emitter, p: RowPlan, accs: list[RowBuf], ws: SSAValue, lay: ColumnSums, unit: SSAValue,
                         sw: SSAValue, g: SSAValue) -> None:
    """Each thread's columns of the CTA's shared sums ``accs`` into its unit's partial
    rows (the CTA's slice of each, or the row)."""
    full, rest = divmod(_span(p), p.group)
    dsts = [RowBuf(F32, e.ptr_add(column_partial_row(e, ws, lay, k, unit), e.mul_i(sw, p.vec * 4))) for k in range(len(accs))]

    def copy(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        for acc, dst in zip(accs, dsts, strict=True):
            dst.store(b, first, p.vec, acc.load(b, first, p.vec, extra, nc=False), extra)
        return state

    visit_vectors(e, p, full, e.cmp("ult", g, rest) if rest else None, [], copy)


def write_column_partials(e: Emitter, r: RowState, acc: list[SSAValue], ws: SSAValue, lay: ColumnSums, unit: SSAValue,
                           ngroups: int, group: SSAValue | None) -> None:
    """Each thread's column sums ``acc`` into its unit's partial rows; with several groups
    per CTA (rows_warp) first through shared memory, added in group order."""
    p = r.p
    outs = [o for o in (r.op.dweight, r.op.dbias) if o is not None]
    per = len(acc) // p.items
    conds = r.item_conds(e)
    for k in range(len(outs)):
        vals = [acc[i * per + k * p.vec:i * per + (k + 1) * p.vec] for i in range(p.items)]
        if ngroups == 1:
            dst = RowBuf(F32, e.ptr_add(column_partial_row(e, ws, lay, k, unit), e.mul_i(r.sw, p.vec * 4)))  # type: ignore[arg-type]
        else:
            assert group is not None
            sm = e.shared([ngroups * p.n], f32, f"columns_{k}")
            dst = RowBuf(F32, e.ptr_add(e.ptr_add(sm, e.mul_i(group, p.n * 4)), e.mul_i(e.value(CvtOp(CvtType.U32, CvtType.U64, r.sw, i32)), p.vec * 4)))
        for i, cond in enumerate(conds):
            if cond is None:
                dst.store(e, i * p.group, p.vec, vals[i])
            else:
                e.if_(cond, lambda b, i=i, dst=dst: dst.store(b, i * p.group, p.vec, vals[i]) or [])
        if ngroups == 1:
            continue
        e.bar_sync()
        row = column_partial_row(e, ws, lay, k, unit)

        def column(c: Emitter, col: SSAValue, _: list[SSAValue], sm=sm, row=row) -> list[SSAValue]:
            col32 = c.value(CvtOp(CvtType.U32, CvtType.U64, col, i32))
            total = None
            for q in range(ngroups):
                v = c.ld(LdStType.F32, c.ptr_add(sm, c.mul_i(col32, 4)), f32, 4 * q * p.n)
                total = v if total is None else f32_add(c, total, v)
            c.st(ld_type(F32), c.ptr_add(row, c.mul_i(col, 4)), total)  # type: ignore[arg-type]
            return []

        e.for_(e.wide(r.tid), p.n, p.block, [], column)
        e.bar_sync()


# endregion
