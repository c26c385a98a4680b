"""What the lowerings of ``bulkred.normalize_rows`` share (``rows_warp``, ``rows_cta``,
``rows_cluster``, ``rows_stream``; docs/rows.md): the plan of a kernel, its predicates,
and one lowering of a row that each variant configures.

A *group* of ``G`` threads (a warp, or a whole CTA) owns one row at a time; the CTA's
groups take rows ``g, g + groups, ...`` (a grid-stride loop). Thread ``t`` of a group
reads the vectors ``t, t + G, t + 2G, ...`` of the row (``V`` elements each:
``ld.global.nc.v4.f32``, 8-byte ``ld.v4.b16`` of bfloat16 and float16 (16-byte bfloat16
vectors with :data:`WIDE_BF16`); scalar loads when N or a row stride is not a multiple of
V). Each thread accumulates in
float32, then the group combines (``shfl.sync`` butterfly in a warp; warp partials
through shared memory in a CTA) and every thread of the group holds the row's
statistics. With a cluster (``rows_cluster``) CTA rank r holds its slice of the row
(vectors ``[r * S, (r + 1) * S)``) and the CTAs combine their partials through
distributed shared memory (:func:`reduce_state`). softmax's maximum and sum of
exponentials are one reduction of (m, s) pairs (:class:`_Exps`, Quack's packing): one
exchange per row.

* **registers** (``rows_warp``, ``rows_cta``, ``rows_cluster``): every thread keeps its
  ``K`` vectors in registers after the one read of ``x``; the statistics come from the
  registers (layer_norm's variance from a second pass over them, ``sum((x - mean)^2)``),
  then ``y`` is written: one read of ``x``, one write of ``y``.
* **stream** (``rows_stream``, rows of any length): a first pass accumulates the
  statistics (softmax online: the running maximum and the sum rescaled as it grows;
  layer_norm's sums shifted by the row's first element), a second pass reads ``x`` again
  and writes ``y``: two reads of ``x``.

The configuration (``G``, the CTA's threads, ``V``, ``K``) depends on N, the element
type and the row strides only, never on M: every row is computed by the same
instructions in the same order whatever the batch, so its bits do not depend on M or on
the row's position (batch invariance). The grid's size (how many CTAs share the rows)
does depend on M, which changes no row's arithmetic. With a dynamic M (``memref<?xN>``)
the kernel takes M as an ``i64`` parameter after its buffers (``rows_lower.rows_parameter``,
``bulkred.dims``) and the launch chooses the grid from it (``bulkred.grid_rows``): one
kernel for every M.

The backward kinds' rows are lowered in ``rows_backward``; ``rows_lower.lower_rows``
writes the kernel (the launch, the loop over rows) of a forward or a backward kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType, f32, i1, i16, i32, i64
from xdsl.ir import Operation, SSAValue

from bulkred_dialect.ops.dtypes import DTYPES, DType, of_ir
from bulkred_dialect.ops.kernel_attrs import MIN_CTAS_ATTR
from bulkred_dialect.ops.ptx.arith import AndOp, ArithType, Ex2Op, MulOp, OrOp, RoundingMode, ShlOp, SubOp
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType, SelpType
from bulkred_dialect.ops.ptx.memory import LdStType, MovOp
from bulkred_dialect.ops.ptx.st_async import StAsyncOp, StAsyncType
from bulkred_dialect.ops.ptx.warp import ShflMode, ShflSyncOp
from bulkred_dialect.ops.ptx.sync import (
    FenceMbarrierInitOp,
    MapaOp,
    MbarrierArriveExpectTxOp,
    MbarrierInitOp,
    MbarrierTryWaitParityOp,
)
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceKind, enclosing_kernel
from bulkred_dialect.ops.tile.rows import (
    GRAD_ROWS_KINDS,
    NORM_BACKWARD_KINDS,
    RMS_KINDS,
    NormalizeRowsOp,
    NormKind,
    row_stride,
)
from bulkred_dialect.passes.elements import ELEMS, ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import WARP, Predicate
from bulkred_dialect.passes.variants.grid_common import alone_in_kernel, require_alignment
from bulkred_dialect.passes.variants.kernel import cta_reduce_state, sm_count, warp_reduce_state

F32 = DTYPES["float32"]
BF16 = DTYPES["bfloat16"]
F16 = DTYPES["float16"]
I64 = DTYPES["int64"]


def half_as_bfloat16(table: Any) -> Any:
    """A settings table measured for bfloat16, with float16 taking bfloat16's entries
    where it has none of its own: both move 2 bytes an element, so a row of N costs the
    same bytes and the same float32 arithmetic (a float16 row converts with ``cvt`` where
    a bfloat16 row shifts: no more instructions a value). A dict keyed by the type's name
    or by a tuple holding it (``(kind, name)``) gets float16's keys beside bfloat16's; a
    list of rows led by the type's name (first match wins) gets each bfloat16 row's
    float16 twin right after it. Measured for float16 on an H200: docs/benchmarks.md."""
    def twin(k: Any) -> Any:
        if k == BF16.name:
            return F16.name
        if isinstance(k, tuple) and BF16.name in k:
            return tuple(F16.name if e == BF16.name else e for e in k)
        return None

    if isinstance(table, dict):
        out = dict(table)
        for k, v in table.items():
            t = twin(k)
            if t is not None:
                out.setdefault(t, v)
        return out
    rows = list(table)
    mine = {r[0] for r in rows}
    out = []
    for r in rows:
        out.append(r)
        if r[0] == BF16.name and F16.name not in mine:
            out.append((F16.name, *r[1:]))
    return out
EXP_KINDS = (NormKind.SOFTMAX, NormKind.LOG_SOFTMAX, NormKind.CROSS_ENTROPY)
"""The kinds whose statistics are the row's maximum and sum of exponentials."""
ELEM_F32 = ELEMS["float32"]
AT = ArithType.F32
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
FLT_MAX = 3.4028234663852886e38

COLUMN_SUM_CTAS = 2
"""CTAs per multiprocessor, at most, of a norm's backward with dweight or dbias: each
unit (a CTA, or a cluster) writes a float32 partial row of the column sums, which the
last CTA adds in unit order, so fewer units cost less there."""
COLUMN_SUM_FLOATS = 1 << 24
"""The most float32 partial values of the column sums (units x N x outputs: 64 MiB of
workspace): long rows get fewer units."""
SLICE_SUM_FLOATS = 1 << 21
"""rows_cta and rows_cluster of a norm's backward: the most float32 partial values per
rank (units x the rank's slice of N x outputs: 8 MiB), instead of :data:`COLUMN_SUM_CTAS`:
as many units as the multiprocessors hold for short rows, the tail's sums
(``rows_backward.finish_columns``) still short (twice as many were slower at 4096 and
16384 on an H200: docs/rows.md). rows_warp keeps COLUMN_SUM_CTAS (measured faster)."""
NORM_BACKWARD_UNITS: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = {
    ("rms_norm_backward", BF16.name): ((4096, 4096, 264), (16384, 16384, 132), (65536, 65536, 15)),
    ("layer_norm_backward", BF16.name): ((16384, 16384, 66), (65536, 65536, 15)),
}
"""A norm's backward's units (CTAs, or clusters), by (kind, element type name): (N from,
N to, units), the first range holding N (never M), in place of the caps above (at most
the variant's CTAs per multiprocessor): e.g. one wave of what the multiprocessors hold
at once, where the default's grid runs in waves with a short last one (rows_cluster's
bfloat16 65536: 66 clusters of 8 at one CTA a multiprocessor, 16 at once: 5 waves of
62 rows for 4.1 waves of work). Empty: the caps above (the default); tried by
tools/probes/rows_backward.py ``--set norms``. dweight's and dbias's bits follow the
units (the sum's order), still the same run to run. Measured on an H200
(tools/probes/rows_backward.py ``--set norms``, 2026-11-29, x copy, the default's -> these
units): bfloat16 rms_norm 4096 0.843 -> 0.927 (one wave of 2 a multiprocessor), 16384
0.873 -> 0.903, 65536 0.755 -> 0.875 (15 clusters of 8; 16 gave 0.568: a second wave);
layer_norm 16384 0.785 -> 0.854 (66 clusters of 2), 65536 0.649 -> 0.825. Not taken:
layer_norm 4096 (264 units 0.847 against the default's 0.878); 262144 (no setting gained)."""
NORM_BACKWARD_UNITS = half_as_bfloat16(NORM_BACKWARD_UNITS)  # float16 as bfloat16 where unmeasured

MAX_VALUES = 32
"""Float32 values a thread keeps in registers (``K * V``) in the registers variants."""

NORM_BACKWARD_VALUES = 16
"""The same for a norm's backward (rms_norm_backward, layer_norm_backward), whose thread
also keeps its columns' dweight and dbias partials in registers across its rows (and
dy, xhat and dy * w of its values until the row's sums are known): fewer values, more
threads (docs/rows.md)."""
NORM_BACKWARD_VALUES_MEASURED: dict[tuple[str, str], tuple[tuple[int, int, int], ...]] = half_as_bfloat16({})
"""By (kind, element type name): (N from, N to, values a thread at most), the first range holding N
(never M), in place of :data:`NORM_BACKWARD_VALUES` for a norm's backward on rows_cta and
rows_cluster (through :func:`max_values`): fewer values, more threads a row, fewer registers a
thread. Empty until measured on an H200 (tools/probes/rows_bwd_sweep.py, which patches
:data:`NORM_BACKWARD_VALUES` for a cell with no entry)."""


NORM_BACKWARD_SLICES_N = 16384
"""A norm's backward of 16-bit rows with at most one column sum (rms_norm's dweight)
longer than this goes to rows_slices, not rows_cluster: at 65536 bfloat16 on an H200,
0.68 of the copy kernel against 0.52 (layer_norm's two sums: rows_cluster 0.43, rows_slices
0.35; float32 rms_norm: rows_cluster 0.77; tools/probes/rows_backward.py, docs/rows.md).
bfloat16 rows go on to rows_cluster up to :data:`NORM_BACKWARD_SLICES_N_BF16`."""
NORM_BACKWARD_SLICES_N_BF16 = 65536
"""bfloat16's (and float16's, :func:`half_as_bfloat16`): its rows_cluster pipelined (rows_backward.MEASURED) measured faster than
rows_slices at 65536 (0.74 of copy against 0.67 for rms_norm's backward)."""


def cluster_takes_norm_backward(op: NormalizeRowsOp) -> bool:
    """Whether rows_cluster takes the norm's backward ``op`` (it holds its row): not past
    :data:`NORM_BACKWARD_SLICES_N` for 16-bit rows with at most one column sum."""
    sums = (op.dweight is not None) + (op.dbias is not None)
    d = dtype_of(op)
    limit = max(NORM_BACKWARD_SLICES_N, NORM_BACKWARD_SLICES_N_BF16) if d.bytes == 2 else NORM_BACKWARD_SLICES_N  # (float16 as bfloat16)
    return not (d.bytes == 2 and sums <= 1 and op.cols > limit)


NORM_BACKWARD_CTA_N = 8192
"""The longest row of a norm's backward that rows_cta takes (a CTA per row); longer rows
go to rows_cluster, whose ranks each sum their own columns of dweight and dbias."""


def cta_limit(limit: int) -> Callable[[NormalizeRowsOp], int]:
    """rows_cta's longest row: ``limit``, :data:`NORM_BACKWARD_CTA_N` for a norm's backward."""
    return lambda op: min(limit, NORM_BACKWARD_CTA_N) if op.norm_kind in NORM_BACKWARD_KINDS else limit


NORM_BACKWARD_WARP_N: dict[str, int] = {}
"""By element type name, the longest row of a norm's backward that rows_warp takes (the
rest to rows_cta: 128 threads a row at bfloat16 1024, 89 / 91 registers, 5 CTAs a
multiprocessor, where rows_warp's 256 threads take 168 / 199: one); absent (the default):
rows_warp's own limit. Tried by tools/probes/rows_backward.py ``--set norms`` ("rows_cta"
at 1024, forced there); with its units in :data:`NORM_BACKWARD_UNITS` (rows_cta's 2048
CTAs of 128 at 1024 run in 4 waves of 660)."""


def warp_limit(limit: int) -> Callable[[NormalizeRowsOp], int]:
    """rows_warp's longest row: ``limit``; for a norm's backward at most
    :data:`NORM_BACKWARD_WARP_N`'s of its element type, where it has one."""
    def longest(op: NormalizeRowsOp) -> int:
        if op.norm_kind in NORM_BACKWARD_KINDS:
            return min(limit, NORM_BACKWARD_WARP_N.get(dtype_of(op).name, limit))
        return limit

    return longest


def max_values(op: NormalizeRowsOp) -> int:
    """Float32 values a thread of ``op``'s kernel keeps in registers at most
    (:data:`MAX_VALUES`, :data:`NORM_BACKWARD_VALUES`): a function of the kind only."""
    if op.norm_kind in NORM_BACKWARD_KINDS:
        return cell_setting(None, NORM_BACKWARD_VALUES_MEASURED, op, NORM_BACKWARD_VALUES)  # type: ignore[return-value]
    return MAX_VALUES

WIDE_BF16 = False
"""With True, bfloat16 rows move in 16-byte vectors of 8 elements (``ld.v4.b32``, each word
split into two float32 by shifts; stores packed back into words) instead of 8-byte
``ld.v4.b16``: measured on an H200 (docs/rows.md), no faster (0 to 4.6% slower in 8 cells),
so off."""

WIDE_BF16_MEASURED: dict = {
    # (the eighth session's --set quack16 on an H200: rms_norm bfloat16 4096 / 16384 with rows_cta's CTA a row,
    # rows_cta.CTAS_PER_SM_MEASURED)
    ("rms_norm", BF16.name): ((4096, 4096), (16384, 16384)),
}
""":data:`WIDE_BF16` by ``(kind, "bfloat16")``: the ranges (N from, N to) where its rows move in
16-byte vectors (Quack's copies; tools/probes/rows_forward.py ``--set quack16``; a function of
the kind, N and the type, never M; bfloat16 only)."""


@dataclass(frozen=True)
class RowPlan:
    """How one kernel normalizes its rows: ``group`` threads per row, ``block`` threads
    per CTA (``block // group`` rows at a time), ``vec`` elements per load, ``items``
    vectors per thread held in registers (0: stream the row twice), ``unroll`` loads in
    flight per step of a streaming loop, ``ctas`` CTAs."""

    kind: NormKind
    dtype: DType
    m: int | None  # None: dynamic (the kernel's i64 parameter after its buffers; the grid chosen at the launch)
    n: int
    sx: int
    sy: int
    vec: int
    group: int
    block: int
    items: int
    unroll: int
    ctas: int
    cluster: int = 1
    slice: int = 0  # with a cluster: the vectors of the row each CTA holds (items * block)
    together: int = 1  # rows a group works on in one step of the loop over rows (rows_warp.ROWS_AT_ONCE)
    one_barrier: bool = False  # a CTA's reductions with one barrier each, a row count carried (CTA_ONE_BARRIER)

    @property
    def vectors(self) -> int:
        """Vectors in a row (N / V)."""
        return self.n // self.vec

    @property
    def groups(self) -> int:
        """Rows a CTA works on at a time."""
        return self.block // self.group

    @property
    def exact(self) -> bool:
        """A cluster's slices cover the row exactly (no vector of any CTA is past N)."""
        return self.cluster * self.slice == self.vectors


def dtype_of(op: NormalizeRowsOp) -> DType:
    d = of_ir(op.x.type.element_type)  # type: ignore[union-attr]
    assert d is not None
    return d


def vector_of(op: NormalizeRowsOp) -> int:
    """Elements per load: 4 (16 bytes of float32, 8 of a 16-bit type; 8 bfloat16 with
    :data:`WIDE_BF16`, or where :data:`WIDE_BF16_MEASURED` says and they are multiples of 8),
    where N and every row stride are multiples of it; else 1."""
    d = dtype_of(op)
    v = 8 if WIDE_BF16 and d.name == "bfloat16" else ELEMS[d.name].vector
    grad = op.grad if op.norm_kind in GRAD_ROWS_KINDS else None  # (cross_entropy_backward's is [M])
    rows = [b.type for b in (op.x, op.y, grad, op.residual, op.residual_out) if b is not None]

    def fits(v: int) -> bool:
        return op.cols % v == 0 and all(row_stride(t) % v == 0 for t in rows)  # type: ignore[arg-type]

    if d.name == "bfloat16" and setting_of(None, WIDE_BF16_MEASURED, d.name, op.cols, op.norm_kind.value) and fits(8):
        return 8  # (WIDE_BF16_MEASURED's cell; else its 4-vector as before)
    return v if fits(v) else 1


def plan(op: NormalizeRowsOp, target: Target, *, group: int, block: int, items: int, unroll: int = 4,
         ctas_per_sm: int = 8, cluster: int = 1) -> RowPlan:
    """The plan of ``op`` with these settings (the variant chooses them from N and the
    element type); the grid covers the rows, at most ``ctas_per_sm`` CTAs per
    multiprocessor; with ``cluster`` > 1 a cluster of that many CTAs per row, each
    holding ``items * block`` vectors of it (``group`` is then ``block``). With a dynamic
    M the grid is that largest one, and the launch takes :func:`grid_for_rows`'s share of it."""
    xt = op.x.type
    assert isinstance(xt, MemRefType)
    sy = row_stride(op.y.type) if op.y is not None else 0  # type: ignore[arg-type]
    groups = block // group
    cap = max(1, sm_count(target) * ctas_per_sm // cluster)
    sums = (op.dweight is not None) + (op.dbias is not None)
    if sums and items and group == block:  # a partial row per unit (each rank its slice), summed at the end
        cap = max(1, min(cap, SLICE_SUM_FLOATS * cluster // (op.cols * sums)))
    elif sums:  # rows_stream: a partial row per unit, summed by the last CTA: fewer units (docs: COLUMN_SUM_CTAS)
        cap = max(1, min(cap, sm_count(target) * COLUMN_SUM_CTAS // cluster, COLUMN_SUM_FLOATS // (op.cols * sums)))
    wave = cell_setting(None, NORM_BACKWARD_UNITS, op) if sums else None
    if wave:  # (NORM_BACKWARD_UNITS: the cell's units in place of the caps above)
        cap = max(1, min(sm_count(target) * ctas_per_sm // cluster, wave))
    units = cap if op.rows is None else min(cap, -(-op.rows // groups))
    return RowPlan(
        op.norm_kind, dtype_of(op), op.rows, op.cols, row_stride(xt), sy, vector_of(op),
        group, block, items, unroll, units * cluster, cluster, items * block if cluster > 1 else 0,
    )


def cell_setting(on: int | None, table: dict[tuple[str, str], tuple[tuple[int, int, int], ...]], op: NormalizeRowsOp,
                 default: int | None = None) -> int | None:
    """A variant's setting of ``op``'s cell: ``on`` where not None, else ``table``'s value
    (by (kind, element type name): (N from, N to, value), the first range holding N, never
    M), else ``default`` (rows_cta.VALUES / MIN_CTAS, rows_warp.MIN_CTAS)."""
    if on is not None:
        return on
    key = (op.norm_kind.value, dtype_of(op).name)
    return next((v for lo, hi, v in table.get(key, ()) if lo <= op.cols <= hi), default)


def set_min_ctas(op: NormalizeRowsOp, ctas: int | None) -> None:
    """With ``ctas``, the ``.minnctapersm`` of ``op``'s kernel (``bulkred.min_ctas_per_sm``:
    rows_cta.MIN_CTAS, rows_warp.MIN_CTAS); None: none (the default)."""
    if ctas is None:
        return
    kernel = enclosing_kernel(op)
    assert kernel is not None
    kernel.attributes[MIN_CTAS_ATTR] = IntegerAttr(ctas, i64)


def items_for(op: NormalizeRowsOp, group: int) -> int:
    """Vectors per thread to hold a whole row in a group of ``group`` threads."""
    vectors = op.cols // vector_of(op)
    return -(-vectors // group)


# region Predicates


def _row_length(limit: Callable[[NormalizeRowsOp], int], what: str):
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, NormalizeRowsOp)
        lim = limit(op)
        return op.cols <= lim, f"N = {op.cols} ({dtype_of(op).name}, limit {lim}{what})"

    return check


def row_predicates(limit: Callable[[NormalizeRowsOp], int] | None, expected: str, what: str = "") -> list[Predicate]:
    """``kernel`` (the op alone in its kernel, on its parameters) and, with ``limit``,
    ``row_length`` (N at most ``limit(op)``)."""
    preds = [Predicate("kernel", alone_in_kernel, expected="alone, on parameters")]
    if limit is not None:
        preds.append(Predicate("row_length", _row_length(limit, what), expected=expected))
    return preds


# endregion

# region Float32 arithmetic


def f32_sub(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(SubOp(AT, a, b, rnd=RoundingMode.RN))


def f32_mul(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(MulOp(AT, a, b, rnd=RoundingMode.RN))


def f32_add(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.combine(ReduceKind.SUM, F32, a, b)


def f32_exp(e: Emitter, x: SSAValue) -> SSAValue:
    """``exp(x)`` as ``ex2.approx(x * log2(e))``."""
    return e.ex2(f32_mul(e, x, e.const(LOG2E, f32)))


def _log(e: Emitter, x: SSAValue) -> SSAValue:
    return f32_mul(e, e.lg2(x), e.const(LN2, f32))


def _rsqrt(e: Emitter, x: SSAValue) -> SSAValue:
    """``1 / sqrt(x)``, each step rounded to nearest (once per row)."""
    return e.rcp(AT, e.sqrt(AT, x))


def _kahan(e: Emitter, s: SSAValue, c: SSAValue, v: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Kahan's compensated ``s + v`` (``c``: the running compensation, the low-order part
    lost so far, subtracted at the next step): ``(s', c')``. The row's total is ``s - c``
    at the end. Its error does not grow with the number of terms (a plain running sum's
    does: a thread streaming a long row adds hundreds of them); an infinity makes it NaN
    (``inf - inf`` in the compensation), as torch's Welford sums give it."""
    y = f32_sub(e, v, c)
    t = f32_add(e, s, y)
    return t, f32_sub(e, f32_sub(e, t, s), y)


# endregion

# region Loads and stores


def load_vec(e: Emitter, d: DType, p: SSAValue, offset: int, vec: int, *, nc: bool = True) -> list[SSAValue]:
    """``vec`` elements of ``d`` at ``p + offset`` bytes, as float32 (``nc``: through the
    non-coherent cache, for data the kernel does not write): one vector load of at most
    16 bytes each; 8 bfloat16 as 4 words (:func:`_bf16_halves`)."""
    if offset >= 2**31:
        p, offset = e.ptr_add(p, offset), 0
    if vec * d.bytes > 16:
        half = vec // 2
        return load_vec(e, d, p, offset, half, nc=nc) + load_vec(e, d, p, offset + half * d.bytes, half, nc=nc)
    t = ld_type(d)
    if vec == 1:
        vals = [e.ld(t, p, d.ir, offset)]
    elif vec == 8 and d.name == "bfloat16":
        require_alignment(p, 16)
        words = e.ld_vec(LdStType.B32, p, i32, 4, offset, nc=nc)
        return [h for w in words for h in _bf16_halves(e, w)]
    else:
        require_alignment(p, vec * d.bytes)
        vals = e.ld_vec(t, p, d.ir, vec, offset, nc=nc)
    return [e.convert(v, d, F32) for v in vals]


def _bf16_halves(e: Emitter, w: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The two bfloat16 of a 32-bit word (the first element in the low half) as float32:
    a bfloat16's bits are the high half of its float32's."""
    lo = e.value(ShlOp(ArithType.B32, w, e.const(16)))
    hi = e.value(AndOp(ArithType.B32, w, e.const(-65536)))  # 0xffff0000
    return e.value(MovOp(lo, f32)), e.value(MovOp(hi, f32))


def _bf16_word(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """Two float32 rounded to bfloat16 (``cvt.rn``) and packed in a 32-bit word, ``a`` in
    the low half."""
    lo, hi = (
        e.value(CvtOp(CvtType.U32, CvtType.U16, e.value(MovOp(e.convert(v, F32, BF16), i16)), i32)) for v in (a, b)
    )
    return e.value(OrOp(ArithType.B32, lo, e.value(ShlOp(ArithType.B32, hi, e.const(16)))))


def packed_bf16(d, vec: int) -> bool:
    """Whether :func:`raw_load` loads a vector of ``vec`` elements of ``d`` as 32-bit
    words of two elements (bfloat16, an even number of them: half the registers)."""
    return d.name == "bfloat16" and vec % 2 == 0 and vec * d.bytes <= 16


def raw_count(d, vec: int) -> int:
    """Registers of one vector of ``vec`` elements of ``d`` as loaded (:func:`raw_load`)."""
    if vec * d.bytes > 16:
        return 2 * raw_count(d, vec // 2)
    return vec // 2 if packed_bf16(d, vec) else vec


def raw_load(e: Emitter, d, p: SSAValue, offset: int, vec: int) -> list[SSAValue]:
    """``load_vec``'s loads without the conversion to float32 (:func:`widen_raw`):
    the registers as loaded, to carry over a loop step while the loads are in flight."""
    if offset >= 2**31:
        p, offset = e.ptr_add(p, offset), 0
    if vec * d.bytes > 16:
        half = vec // 2
        return raw_load(e, d, p, offset, half) + raw_load(e, d, p, offset + half * d.bytes, half)
    if vec == 1:
        return [e.ld(ld_type(d), p, d.ir, offset)]
    if packed_bf16(d, vec):  # bfloat16 in words (2 or 4 of them)
        require_alignment(p, vec * d.bytes)
        return e.ld_vec(LdStType.B32, p, i32, vec // 2, offset) if vec > 2 else [e.ld(LdStType.B32, p, i32, offset)]
    require_alignment(p, vec * d.bytes)
    return e.ld_vec(ld_type(d), p, d.ir, vec, offset)


def widen_raw(e: Emitter, d, raw: list[SSAValue], vec: int) -> list[SSAValue]:
    """The float32 values of one vector loaded by :func:`raw_load`."""
    if packed_bf16(d, vec):
        return [h for w in raw for h in _bf16_halves(e, w)]
    if vec * d.bytes > 16:
        half = raw_count(d, vec // 2)
        return widen_raw(e, d, raw[:half], vec // 2) + widen_raw(e, d, raw[half:], vec // 2)
    return [e.convert(v, d, F32) for v in raw]


def store_vec(e: Emitter, d: DType, p: SSAValue, offset: int, vals: Sequence[SSAValue]) -> None:
    if offset >= 2**31:
        p, offset = e.ptr_add(p, offset), 0
    t = ld_type(d)
    if len(vals) == 8 and d.name == "bfloat16":
        require_alignment(p, 16)
        e.st_vec(LdStType.B32, p, [_bf16_word(e, vals[i], vals[i + 1]) for i in range(0, 8, 2)], offset)
        return
    if len(vals) * d.bytes > 16:
        half = len(vals) // 2
        store_vec(e, d, p, offset, vals[:half])
        store_vec(e, d, p, offset + half * d.bytes, vals[half:])
        return
    out = [e.convert(v, F32, d) for v in vals]
    if len(out) == 1:
        e.st(t, p, out[0], offset)
    else:
        require_alignment(p, len(out) * d.bytes)
        e.st_vec(t, p, out, offset)


@dataclass
class RowBuf:
    """A buffer read or written by vectors: its element type and the thread's first
    vector's address in the current row."""

    dtype: DType
    base: SSAValue

    def at(self, e: Emitter, first: SSAValue | int, vec: int) -> tuple[SSAValue, int]:
        """The address and static byte offset of the vector ``first`` vectors after the
        thread's first (an ``i64`` value or an int)."""
        step = vec * self.dtype.bytes
        if isinstance(first, int):
            return self.base, first * step
        return e.ptr_add(self.base, e.mul_i(first, step)), 0

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        p, off = self.at(e, first, vec)
        return load_vec(e, self.dtype, p, off + extra * vec * self.dtype.bytes, vec, nc=nc)

    def store(self, e: Emitter, first: SSAValue | int, vec: int, vals: Sequence[SSAValue], extra: int = 0) -> None:
        p, off = self.at(e, first, vec)
        store_vec(e, self.dtype, p, off + extra * vec * self.dtype.bytes, vals)


# endregion


@dataclass
class RowState:
    """One row being lowered: the plan, the thread's place in its group, its buffers."""

    p: RowPlan
    op: NormalizeRowsOp
    g: SSAValue  # the thread's index in its group (i32)
    tid: SSAValue  # the thread's index in the CTA (i32)
    x: RowBuf
    y: RowBuf | None  # None: cross_entropy (no y)
    w: RowBuf | None
    b: RowBuf | None
    row_x: SSAValue  # the row's first element in x
    first: SSAValue | None = None  # with a cluster: the thread's first vector in the row (i32)
    rank: SSAValue | None = None  # with a cluster: the CTA's rank in it (i32)
    res: RowBuf | None = None  # add_rms_norm: residual
    hout: RowBuf | None = None  # add_rms_norm: residual_out (x + residual)
    parity: SSAValue | None = None  # with a cluster: the CTA's count of rows so far (i32; its parity picks the exchange slots)
    grad: RowBuf | None = None  # the backward kinds: the forward output's gradient
    sw: SSAValue | None = None  # the thread's first vector in the row (i64)
    exchange: ClusterExchange | None = None  # with a cluster: the mbarriers of the push exchange
    target: tuple[SSAValue, SSAValue] | None = None  # cross_entropy: the row's target and x[target] (target_inputs)

    # region Visiting a thread's vectors

    def load_item(self, e: Emitter, first: SSAValue | int, extra: int = 0) -> list[SSAValue]:
        """The row's values of one vector as float32: x's; with add_rms_norm
        ``h = x + residual`` rounded to x's type, which is written to residual_out here."""
        vec = self.p.vec
        xs = self.x.load(e, first, vec, extra)
        if self.res is None:
            return xs
        return self.add_residual(e, first, xs, self.res.load(e, first, vec, extra), extra)

    def add_residual(self, e: Emitter, first: SSAValue | int, xs: list[SSAValue], rs: list[SSAValue],
                     extra: int = 0) -> list[SSAValue]:
        """add_rms_norm's ``h = x + residual`` of one vector (``xs``, ``rs``: float32),
        rounded to x's type and written to residual_out (:meth:`load_item`)."""
        vec = self.p.vec
        assert self.hout is not None
        hs = [f32_add(e, a, c) for a, c in zip(xs, rs, strict=True)]
        if self.p.dtype != F32:  # torch rounds x + residual to its type, then normalizes that
            hs = [e.convert(e.convert(h, F32, self.p.dtype), self.p.dtype, F32) for h in hs]
        self.hout.store(e, first, vec, hs, extra)
        return hs

    def reload_item(self, e: Emitter, first: SSAValue | int, extra: int = 0) -> list[SSAValue]:
        """The row's values of one vector again (the second pass of rows_stream): x's, or
        add_rms_norm's h read back from residual_out (written by this kernel: no ``.nc``)."""
        if self.hout is None:
            return self.x.load(e, first, self.p.vec, extra)
        return self.hout.load(e, first, self.p.vec, extra, nc=False)

    def partial(self, e: Emitter) -> tuple[int, SSAValue | None]:
        """(vectors every thread has, the condition of the one more some threads have)."""
        full, rest = divmod(self.p.vectors, self.p.group)
        return full, (e.cmp("ult", self.g, rest) if rest else None)

    def item_conds(self, e: Emitter) -> list[SSAValue | None]:
        """For each vector the thread may hold (in registers), None where every thread
        has it, else the condition that this thread has it."""
        p = self.p
        if p.cluster == 1:
            full, cond = self.partial(e)
            return [None] * full + ([cond] if cond is not None else [])
        if p.exact:
            return [None] * p.items
        assert self.first is not None
        return [e.cmp("ult", e.add_i(self.first, k * p.group) if k else self.first, p.vectors) for k in range(p.items)]

    def neutral(self, e: Emitter) -> SSAValue:
        """A value that leaves the statistics unchanged: -inf for softmax's maximum (its
        exp adds 0), 0 for the sums."""
        if self.p.kind in EXP_KINDS:
            return e.const(float("-inf"), f32)
        return e.const(0.0, f32)

    # endregion

    # region Group reductions

    def reduce(self, e: Emitter, kind: ReduceKind, v: SSAValue, name: str) -> SSAValue:
        """``v`` combined over the group (with a cluster: over its CTAs too); every thread
        of the group gets the result."""
        return self._state(e, _Scalar(kind), [v], name)[0]

    def reduce_exps(self, e: Emitter, m: SSAValue, s: SSAValue, fast: bool | None = None) -> tuple[SSAValue, SSAValue]:
        """softmax's (max, sum of exponentials) over the group, from each thread's (m, s)
        (:class:`_Exps`): the row's maximum (clamped to at least -FLT_MAX) and its sum;
        ``fast``: the combination's exps in :data:`FAST_EXP`'s form or not (None: as
        :func:`fast_exp` says; rows_bulk.Setting.fast_exp)."""
        big, total = self._state(e, _Exps(fast_exp(self.p) if fast is None else fast), [m, s], "row_exps")
        return big, total

    def _state(self, e: Emitter, st, v: list[SSAValue], name: str) -> list[SSAValue]:
        p = self.p
        if p.one_barrier and self.parity is not None:  # (CTA_ONE_BARRIER: the parity is the row count)
            return cta_all_reduce(e, st, v, self.tid, p.block, self.parity, name)
        return reduce_state(e, st, v, self.tid, p.block, p.group, p.cluster, self.parity, name, self.exchange, self.rank)

    # endregion

    # region Outputs

    def out(self, e: Emitter, v: SSAValue, j: int, s: dict[str, SSAValue], w: list[SSAValue] | None,
            b: list[SSAValue] | None) -> SSAValue:
        """y of one element ``v`` (float32) from the row's statistics ``s``; ``w`` and
        ``b`` the item's weight and bias values (or None)."""
        kind = self.p.kind
        if kind == NormKind.SOFTMAX:
            return f32_mul(e, exp_shifted(e, v, s["max"], fast_exp(self.p)), s["inv_sum"])
        if kind == NormKind.LOG_SOFTMAX:
            if "lse" in s:  # (LOG_SOFTMAX_LSE: one subtraction an element)
                return f32_sub(e, v, s["lse"])
            return f32_sub(e, f32_sub(e, v, s["max"]), s["log_sum"])
        if kind in RMS_KINDS:
            r = f32_mul(e, v, s["rstd"])
            return f32_mul(e, r, w[j]) if w is not None else r
        r = f32_mul(e, v if "centered" in s else f32_sub(e, v, s["mean"]), s["rstd"])  # ("centered": v is x - mean)
        if w is not None and b is not None:
            return e.fma(AT, r, w[j], b[j])
        if w is not None:
            return f32_mul(e, r, w[j])
        return f32_add(e, r, b[j]) if b is not None else r

    def write_item(self, e: Emitter, first: SSAValue | int, vals: list[SSAValue], s: dict[str, SSAValue],
                   extra: int = 0) -> None:
        vec = self.p.vec
        w = self.w.load(e, first, vec, extra) if self.w is not None else None
        b = self.b.load(e, first, vec, extra) if self.b is not None else None
        assert self.y is not None
        self.y.store(e, first, vec, [self.out(e, v, j, s, w, b) for j, v in enumerate(vals)], extra)

    def store_stats(self, e: Emitter, row: SSAValue, s: dict[str, SSAValue]) -> None:
        """Thread 0 of the group writes the statistics the op asks for."""
        op = self.op
        wanted = [(buf, s[key]) for buf, key in ((op.row_max, "max"), (op.row_sum, "sum"), (op.mean, "mean"),
                                                 (op.rstd, "rstd"), (op.lse, "lse")) if buf is not None]
        ce = op.norm_kind == NormKind.CROSS_ENTROPY
        if not wanted and not ce:
            return

        def write(c: Emitter) -> list[SSAValue]:
            off = c.mul_i(row, 4)
            for buf, v in wanted:
                c.st(ld_type(F32), c.ptr_add(c.ptr(buf, StateSpace.GLOBAL), off), v)
            if ce:
                assert op.loss is not None
                c.st(ld_type(F32), c.ptr_add(c.ptr(op.loss, StateSpace.GLOBAL), off), self.loss(c, row, s))
            return []

        first = e.cmp("eq", self.g, 0)
        if self.rank is not None:  # and.pred (arith.andi does not lower to ptx)
            first = e.and_pred(first, e.cmp("eq", self.rank, 0))
        e.if_(first, write)

    # endregion

    def target_inputs(self, e: Emitter, row: SSAValue) -> tuple[SSAValue, SSAValue]:
        """cross_entropy's target t of the row and ``x[t]`` (NaN where t is outside [0,
        N)), read by every thread (one address: one transaction a warp) as the row starts,
        so that their two dependent loads overlap the row's instead of following its
        reduction."""
        return self.target_value(e, target_of(e, self.op, row))

    def target_value(self, e: Emitter, t: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(t, ``x[t]`` of the row: NaN where t is outside [0, N)) for the row's target t
        (:meth:`target_inputs`; a pipelined row's t read during the step before)."""
        p = self.p
        inside = e.cmp("ult", t, e.const(p.n, i64))
        xt = e.if_(inside, lambda b: load_vec(b, p.dtype, b.ptr_add(self.row_x, b.mul_i(t, p.dtype.bytes)), 0, 1),
                   lambda b: [b.const(float("nan"), f32)], [f32])[0]
        return t, xt

    def loss(self, e: Emitter, row: SSAValue, s: dict[str, SSAValue]) -> SSAValue:
        """cross_entropy's loss of the row: ``lse - (1 - ls) * x[t] - ls * mean(x)`` for its
        target t (``x[t]`` read again, one element: :meth:`target_inputs`, read at the row's
        start or here), 0 where t is ``ignore_index``, NaN where t is outside [0, N)."""
        op = self.op
        t, xt = self.target if self.target is not None else self.target_inputs(e, row)
        ls = op.smoothing
        loss = f32_sub(e, s["lse"], f32_mul(e, xt, e.const(1.0 - ls, f32)) if ls else xt)
        if ls:
            loss = f32_sub(e, loss, f32_mul(e, s["mean_x"], e.const(ls, f32)))
        kept = e.cmp("ne", t, e.const(op.ignored, i64))
        return e.selp(SelpType.F32, loss, e.const(0.0, f32), kept)

    # endregion

    # region Statistics

    def finish(self, e: Emitter, sums: dict[str, SSAValue]) -> dict[str, SSAValue]:
        """The statistics of the row from the group's combined sums."""
        kind, n = self.p.kind, float(self.p.n)
        eps = e.const(self.op.eps.value.data, f32) if self.op.eps is not None else None
        if kind in EXP_KINDS:
            out = {"max": sums["max"], "sum": sums["sum"]}
            if kind == NormKind.SOFTMAX:
                out["inv_sum"] = e.rcp(AT, sums["sum"])
            else:
                out["log_sum"] = _log(e, sums["sum"])
            if kind == NormKind.CROSS_ENTROPY or (kind == NormKind.LOG_SOFTMAX and log_softmax_lse(self.p)):
                out["lse"] = f32_add(e, sums["max"], out["log_sum"])
                if "sum_x" in sums:
                    out["mean_x"] = e.div(AT, sums["sum_x"], e.const(n, f32))
            return out
        if kind in RMS_KINDS:
            ms = e.div(AT, sums["sq"], e.const(n, f32))
            return {"rstd": _rsqrt(e, f32_add(e, ms, eps))}
        return {"mean": sums["mean"], "rstd": _rsqrt(e, f32_add(e, sums["var"], eps))}

    # endregion


@dataclass(frozen=True)
class _Scalar:
    """One float32 combined by ``kind`` (the duck type of passes/fused.py's Reducer that
    variants/kernel.py's warp and CTA steps read)."""

    kind: ReduceKind
    width: int = 1
    elem = ELEM_F32
    absmax = False
    types = (f32,)
    dtypes = (F32,)

    def neutral(self, e: Emitter) -> list[SSAValue]:
        return [e.identity(self.kind, F32)]

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        return [e.combine(self.kind, F32, a[0], b[0])]


@dataclass(frozen=True)
class F32State:
    """``width`` float32 values reduced at once, starting from zeros: the duck type of
    :class:`_Scalar` of that width (that variants/kernel.py's warp and CTA steps and the
    cluster exchange read); a subclass gives ``combine``."""

    width: int = 2
    kind = ReduceKind.SUM  # unused (width > 1)
    elem = ELEM_F32
    absmax = False

    @property
    def types(self) -> tuple:
        return (f32,) * self.width

    @property
    def dtypes(self) -> tuple:
        return (F32,) * self.width

    def neutral(self, e: Emitter) -> list[SSAValue]:
        return [e.const(0.0, f32)] * self.width


@dataclass(frozen=True)
class PairSums(F32State):
    """Two float32 sums combined at once by addition: layer_norm_backward's
    ``sum(g * xhat)`` and ``sum(g)`` (one exchange of a cluster), cross_entropy's
    reduction (the losses' sum, the count of the rows kept)."""

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        return [f32_add(e, a[0], b[0]), f32_add(e, a[1], b[1])]


def wait_phase(e: Emitter, mbar: SSAValue, parity: SSAValue) -> None:
    """Spin until the phase of parity ``parity`` of the mbarrier ``mbar`` completed
    (``mbarrier.try_wait.parity`` in a loop)."""

    def pending(b: Emitter) -> SSAValue:
        done = b.value(MbarrierTryWaitParityOp(mbar, parity))
        return b.value(arith.XOrIOp(done, b.const(1, i1)))

    e.while_(pending)


@dataclass(frozen=True)
class _Exps:
    """softmax's (m, s): ``s`` the sum of ``exp(x - m)`` over some elements, ``m`` their
    maximum clamped to at least -FLT_MAX (an all -inf part adds 0 and raises no
    ``-inf - -inf``). Two combine as ``M = max(m, m')``, ``s exp(m - M) + s' exp(m' - M)``:
    the maximum and the sum in one reduction (one exchange of a cluster)."""

    fast: bool = False  # (FAST_EXP: the exps as exp_shifted's)
    width: int = 2
    kind = ReduceKind.SUM  # unused (width 2)
    elem = ELEM_F32
    absmax = False
    types = (f32, f32)
    dtypes = (F32, F32)

    def neutral(self, e: Emitter) -> list[SSAValue]:
        return [e.const(-FLT_MAX, f32), e.const(0.0, f32)]

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        m = e.minmax(ReduceKind.MAX, AT, a[0], b[0])
        if self.fast:  # (symmetric in its operands bit for bit, as a butterfly's lanes need: two products, one sum)
            return [m, f32_add(e, f32_mul(e, a[1], _ftz_exp(e, f32_sub(e, a[0], m))), f32_mul(e, b[1], _ftz_exp(e, f32_sub(e, b[0], m))))]
        return [m, e.fma(AT, b[1], f32_exp(e, f32_sub(e, b[0], m)), f32_mul(e, a[1], f32_exp(e, f32_sub(e, a[0], m))))]


def pooled_mean(e: Emitter, na: SSAValue, ma: SSAValue, nb: SSAValue, mb: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Two parts' ``(n, 1 / max(n, 1), (na ma + nb mb) / n)``: their count, its reciprocal
    (no elements: 0, not 0 / 0) and the count-weighted mean of their means (or centres);
    symmetric in the parts bit for bit (:class:`_Moments`, rows_bulk.Moments)."""
    n = f32_add(e, na, nb)
    inv = e.rcp(AT, e.minmax(ReduceKind.MAX, AT, n, e.const(1.0, f32)))
    return n, inv, f32_mul(e, f32_add(e, f32_mul(e, na, ma), f32_mul(e, nb, mb)), inv)


@dataclass(frozen=True)
class _Moments(F32State):
    """layer_norm's streamed statistics of some elements: ``(sum, n, mean, m2)``, their
    sum of x, their count, mean and sum of squared deviations from that mean. Two combine
    as the sums and Chan's parallel variance: ``n = na + nb``, ``mean = (na ma + nb mb) /
    n``, ``m2 = ma2 + mb2 + (mb - ma)^2 na nb / n`` (no cancellation whatever the spread of
    the parts' means). Symmetric in its operands, bit for bit, as a butterfly needs."""

    width: int = 4

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        n, inv, mean = pooled_mean(e, a[1], a[2], b[1], b[2])
        d = f32_sub(e, b[2], a[2])
        m2 = f32_add(e, f32_add(e, a[3], b[3]), f32_mul(e, f32_mul(e, d, d), f32_mul(e, f32_mul(e, a[1], b[1]), inv)))
        return [f32_add(e, a[0], b[0]), n, mean, m2]


MAX_EXCHANGES = 4
"""Cluster exchanges per row at most (one per statistic: layer_norm's mean and variance,
cross-entropy's (max, sum) and smoothing's sum of x are two)."""


class ClusterExchange:
    """The mbarriers of a cluster's push exchange: two per statistic (by the parity of the
    row's count), each of expected count 1 (the CTA's thread 0, which announces the bytes
    its peers will store), initialized by thread 0 before the rows loop and made visible
    to the cluster (``fence.mbarrier_init``, a cluster barrier) before any peer stores."""

    def __init__(self, e: Emitter, tid: SSAValue):
        self.mbars = e.shared([2 * MAX_EXCHANGES], i64, "cluster_mbar")
        self.names: list[str] = []

        def init(b: Emitter) -> list[SSAValue]:
            for k in range(2 * MAX_EXCHANGES):
                b.emit(MbarrierInitOp(b.ptr_add(self.mbars, 8 * k), b.const(1)))
            return []

        e.if_(e.cmp("eq", tid, 0), init)
        e.emit(FenceMbarrierInitOp())
        e.cluster_sync()

    def index(self, name: str) -> int:
        """The statistic's pair of mbarriers (0, 1, ... in the order the row uses them)."""
        if name not in self.names:
            assert len(self.names) < MAX_EXCHANGES, f"more than {MAX_EXCHANGES} cluster exchanges per row"
            self.names.append(name)
        return self.names.index(name)


def reduce_state(e: Emitter, st, v: list[SSAValue], tid: SSAValue, block: int, group: int, cluster: int,
                 count: SSAValue | None, name: str, exchange: ClusterExchange | None = None,
                 rank: SSAValue | None = None) -> list[SSAValue]:
    """The state ``v`` (:class:`_Scalar`, :class:`_Exps`) combined over the group, every
    thread of it getting the result: a warp butterfly; in a CTA, warp partials through
    shared memory, combined by warp 0 and broadcast; in a cluster, then, pushed through
    distributed shared memory (:func:`_cluster_push`)."""
    if group == WARP and cluster == 1:
        return warp_reduce_state(e, st, v)
    part = cta_reduce_state(e, st, v, tid, block, name=name) if block > WARP else warp_reduce_state(e, st, v)
    if cluster == 1:
        slot = e.shared([st.width], f32, f"{name}_all")

        def publish(b: Emitter) -> list[SSAValue]:
            for k, x in enumerate(part):
                b.st(ld_type(F32), slot, x, 4 * k)
            return []

        e.if_(e.cmp("eq", tid, 0), publish)
        e.bar_sync()
        return [e.ld(ld_type(F32), slot, f32, 4 * k) for k in range(st.width)]
    assert count is not None and exchange is not None and rank is not None
    return _cluster_push(e, st, part, tid, cluster, count, name, exchange, rank)


def _cluster_push(e: Emitter, st, part: list[SSAValue], tid: SSAValue, cluster: int, count: SSAValue, name: str,
                  exchange: ClusterExchange, rank: SSAValue) -> list[SSAValue]:
    """The CTAs' states (``part``, valid in every lane of warp 0) combined over the
    cluster, every thread of every CTA getting the same bits.

    Each CTA has ``2 x cluster`` slots of the state (two sets, by the parity of the row's
    count) and a pair of mbarriers. Thread 0 announces the bytes of the row's set
    (``mbarrier.arrive.expect_tx``: ``cluster`` slots); lane k < cluster of warp 0 stores
    the CTA's state into slot ``rank`` of CTA k (``st.async`` through ``mapa``, completing
    its bytes on CTA k's mbarrier); every thread waits for its CTA's phase
    (``mbarrier.try_wait.parity``: the row count's second bit) and combines the slots of
    its own shared memory in rank order. No cluster barrier: a CTA waits only for the
    stores it receives.

    A set is written again two rows later: a peer stores row ``i + 2`` only after its wait
    of row ``i + 1``, which needed this CTA's store of row ``i + 1``, which warp 0 makes
    after a CTA barrier (:func:`cta_reduce_state`'s) that every thread reaches after
    reading the set of row ``i`` (a CTA of one warp, as the interpreter's tests use:
    the warp's own order). Likewise the mbarrier of a parity enters its next phase
    only after every thread of the CTA waited for the last."""
    w = st.width
    slot_bytes = 4 * w
    slots = e.shared([2 * cluster * w], f32, f"cluster_{name}")
    j = exchange.index(name)
    parity = e.and_b32(count, 1)
    phase = e.and_b32(e.shr_u32(count, 1), 1)
    mbar = e.ptr_add(exchange.mbars, e.mul_i(e.add_i(parity, 2 * j), 8))
    base = e.ptr_add(slots, e.mul_i(parity, cluster * slot_bytes))

    def announce(b: Emitter) -> list[SSAValue]:
        b.emit(MbarrierArriveExpectTxOp(mbar, b.const(cluster * slot_bytes), sink=True))
        return []

    e.if_(e.cmp("eq", tid, 0), announce)
    mine = e.ptr_add(base, e.mul_i(rank, slot_bytes))

    def send(b: Emitter) -> list[SSAValue]:
        b.emit(StAsyncOp(StAsyncType.F32, b.value(MapaOp(mine, tid)), part, b.value(MapaOp(mbar, tid))))
        return []

    e.if_(e.cmp("ult", tid, cluster), send)

    wait_phase(e, mbar, phase)
    acc = None
    for k in range(cluster):
        got = [e.ld(ld_type(F32), base, f32, k * slot_bytes + 4 * i) for i in range(w)]
        acc = got if acc is None else st.combine(e, acc, got)
    assert acc is not None
    return acc


FORWARD_PIPELINE: bool | None = None
"""None: where :data:`FORWARD_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings). Pipelined, a forward kind on rows_warp or rows_cta
(the row in registers, every thread holding all its vectors: :func:`forward_pipelined`)
issues the loads of the group's next row (x; add_rms_norm's residual; cross_entropy's
target) after the thread's own sums of the current row and before the group's
reduction (the warp's butterfly, the CTA's shared memory and barriers), carried as
loaded into the next step of the loop over rows (:func:`prefetch_row`): the reduction
and the stores of y overlap the next row's reads. The last row of a group reads itself
again (from L2) instead of a row past M. The rows a group takes and every operation on
them are the same (bits identical to the default). The same as rows_backward.PIPELINE
for the norms' backward."""

FORWARD_MEASURED: dict[str | tuple[str, str], tuple[tuple[int, int, bool], ...]] = {
    # (the eighth session's --set quack16, rows_cta.CTAS_PER_SM_MEASURED's cells: a CTA a row, a grid of M,
    # unpipelined: the registers pipelining holds cost the rows in flight a multiprocessor)
    ("softmax", BF16.name): ((1024, 1024, False), (4096, 4096, False), (16384, 16384, False)),
    ("rms_norm", BF16.name): ((1024, 1024, False), (4096, 4096, False), (16384, 16384, False)),
    ("layer_norm", BF16.name): ((1024, 1024, False), (16384, 16384, False)),
    # (--set quack32, the same family: rows_cta.CTAS_PER_SM_MEASURED's cells; float32 past 1024 is unpipelined)
    ("log_softmax", BF16.name): ((1024, 1024, False), (4096, 4096, False), (16384, 16384, False)),
    ("add_rms_norm", BF16.name): ((4096, 4096, False), (16384, 16384, False)),
    # (--set quack32 at 1024: rows_warp's grid of M / 8 or M / 4 (rows_warp.CTAS_PER_SM_MEASURED) and float32's
    # rows_cta a CTA a row (rows_warp.YIELD_MEASURED), unpipelined)
    ("softmax", F32.name): ((1024, 1024, False),),
    ("log_softmax", F32.name): ((1024, 1024, False),),
    ("rms_norm", F32.name): ((1024, 1024, False),),
    ("add_rms_norm", F32.name): ((1024, 1024, False),),
    ("layer_norm", F32.name): ((1024, 1024, False),),
    BF16.name: ((1, 16384, True),),  # rows_warp and rows_cta: x copy, e.g. softmax 1024 0.923 -> 0.955, layer_norm 16384 0.610 -> 0.947
    F32.name: ((1, 1024, True),),  # rows_warp (every kind +0.5 to 1%); rows_cta not: add_rms_norm 16384 0.942 -> 0.851
}
"""The forward kinds' :data:`FORWARD_PIPELINE` by element type (or ``(kind, type)``, whose
ranges come first: tools/probes/rows_forward.py --set quack16) and N (never M): (N from, N
to, pipelined), the first range holding N; where the H200 measured it faster
(tools/probes/rows_forward.py --set pipeline, docs/rows_forward_h200.md): bfloat16 rows to
16384, float32 rows to 1024 (rows_warp); float16 not measured."""
FORWARD_MEASURED = half_as_bfloat16(FORWARD_MEASURED)  # float16 as bfloat16 where unmeasured

FORWARD_PIPELINE_PARTIAL: bool | None = None
"""None: where :data:`FORWARD_PIPELINE_PARTIAL_MEASURED` says; True or False: everywhere or
nowhere (the probe's and the tests' settings, tools/probes/rows_ce.py ``--set odd16``). On,
cross_entropy's rows whose last vector only some threads hold (N not a multiple of the
group's vectors: odd N, 4097, read an element a load) are pipelined too where
:data:`FORWARD_PIPELINE` is on (by default only rows every thread holds whole are: at 4097
each row's loads wait for the previous row's reductions): the partial vector's load of the
next row is under the thread's condition (its index in the group below the row's vectors
modulo the group; else zeros, no read past the row), its values -inf where the thread has
none after widening, as the default's neutral. The same values and operations: the
default's bits (tests/test_rows_ce_odd16.py)."""

FORWARD_PIPELINE_PARTIAL_MEASURED: dict = half_as_bfloat16({})
""":data:`FORWARD_PIPELINE_PARTIAL` by element type name (or ``(kind, type)``): the ranges
(N from, N to) where it is on; none measured yet (float16 as bfloat16)."""


def pipelined_partial(p: RowPlan) -> bool:
    """Whether plan ``p`` pipelines its rows with a partial last vector
    (:data:`FORWARD_PIPELINE_PARTIAL`): cross_entropy, no cluster, the thread's items the
    vectors it may hold, the last one partial."""
    full, rest = divmod(p.vectors, p.group)
    return (p.kind == NormKind.CROSS_ENTROPY and p.cluster == 1 and rest > 0 and p.items == full + 1
            and setting_of(FORWARD_PIPELINE_PARTIAL, FORWARD_PIPELINE_PARTIAL_MEASURED, p.dtype.name, p.n, p.kind.value))


def _partial_cond(e: Emitter, p: RowPlan) -> SSAValue | None:
    """Under :func:`pipelined_partial`, whether this thread holds the row's partial last
    vector (its index in the group below the row's vectors modulo the group, as
    :meth:`RowState.partial`); else None."""
    if p.vectors == p.items * p.group:
        return None
    from bulkred_dialect.ops.ptx.sreg import SpecialRegister

    tid = e.sreg(SpecialRegister.TID_X)
    g = tid if p.group == p.block else e.and_b32(tid, p.group - 1)
    return e.cmp("ult", g, p.vectors % p.group)


def _raw_item(e: Emitter, p: RowPlan, buf: RowBuf, k: int, cond: SSAValue | None) -> list[SSAValue]:
    """:func:`raw_load` of the thread's vector ``k`` of ``buf``; the partial last one under
    ``cond`` (else zeros: :func:`_widen_row` makes them -inf)."""
    off = k * p.group * p.vec * buf.dtype.bytes
    if cond is None or k < p.items - 1:
        return raw_load(e, buf.dtype, buf.base, off, p.vec)
    t = i32 if packed_bf16(buf.dtype, p.vec) else buf.dtype.ir
    n = raw_count(buf.dtype, p.vec)
    return e.if_(cond, lambda c: raw_load(c, buf.dtype, buf.base, off, p.vec), lambda c: [c.const(0, t)] * n, [t] * n)


FORWARD_AHEAD: int | None = None
"""Pipelined (:data:`FORWARD_PIPELINE`), the thread's vectors of the next row loaded
ahead: the first this many of them (None: all); the others are loaded as the row starts,
as unpipelined. Fewer registers carried over the step (a float32 row of 32 values a
thread carries 32 more, add_rms_norm's 64), fewer bytes in flight over the reduction.
No bit changes (the values and the arithmetic are the same). The probe's setting."""


FAST_EXP: bool | None = None
"""None: where :data:`FAST_EXP_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings, tools/probes/rows_forward_norms.py). On, the forward exp
kinds (softmax, log_softmax, cross_entropy) in rows_warp, rows_cta, rows_cluster and
rows_stream compute each element's ``exp(x - m)`` as ``ex2.approx.ftz((x - m) log2(e))``
(:func:`exp_shifted`): FADD, FMUL and one MUFU.EX2, without the non-``.ftz`` ex2's range
scaling (FSETP, two FMUL; ptxas, sm_90a). (Quack's ``fma(x, log2(e), -m log2(e))``, one
instruction fewer, rounds ``m log2(e)``: up to ``|m| 2^-24`` in every exponent, inf exps
and NaN on rows of logits of 1e10.) The (m, s) pairs' combination
(:class:`_Exps`) takes its factors as ``ex2.approx.ftz((m - M) log2(e))`` (:func:`_ftz_exp`),
its sum as two products and one addition (symmetric: both lanes of a butterfly step get the
same bits). Bits change (an exp below 2^-126 flushed to 0), never with M; the non-finite
results are the default's (:func:`exp_shifted`)."""

FAST_EXP_MEASURED: dict[str, tuple[tuple[int, int], ...]] = {
    # tools/probes/rows_forward_norms.py on an H200, 2026-11-29, x copy (default -> fast_exp): bfloat16
    # cross_entropy 1024 0.885 -> 0.965, 4096 0.807 -> 0.900, 65536 0.892 -> 0.962; softmax 4096 0.897 ->
    # 0.902, 16384 0.920 -> 0.922; log_softmax 4096 0.886 -> 0.901; the error against float64 the same.
    # float32 not taken: no faster (softmax 16384 0.928 -> 0.929, cross_entropy 1024 1.058 -> 1.060) and
    # twice the error (softmax 16384 1.0e-7 -> 2.0e-7)
    # (tools/probes/rows_ce.py --set vocab, 2026-11-29, sixth session: cross_entropy bfloat16 128256 on
    # rows_stream 0.899 -> 0.969 of copy, with rows_lower.STEP_EXPS and 4 CTAs 0.995; float16 0.959 -> 0.993.
    # Past 65536 the other exp kinds are rows_bulk's, its own FAST_EXP, to 262144; rows_stream's beyond)
    BF16.name: ((1, 1 << 31),),
}
""":data:`FAST_EXP` by element type and N (never M): the ranges (N from, N to) where it is
on (tools/probes/rows_forward_norms.py, measured with the shifted form ``fma(x, log2(e),
-m log2(e))``; the difference's form since, one FADD more per element). Its non-finite
results are the default's (:func:`exp_shifted`)."""
FAST_EXP_MEASURED = half_as_bfloat16(FAST_EXP_MEASURED)  # float16 as bfloat16 where unmeasured

LAYER_NORM_FAST: bool | None = None
"""None: where :data:`LAYER_NORM_FAST_MEASURED` says; True or False: everywhere or nowhere
(the probe's and the tests' settings). On, layer_norm's row in registers (rows_warp,
rows_cta, rows_cluster) sums the squared deviations by FFMA (a chain per element of a
vector, then the chains' tree) instead of FMUL and a tree of FADD, and writes y from the
deviations ``x - mean`` already computed for the variance (ptxas does not merge the two
``sub.rn.f32``): two instructions fewer per element (SASS, sm_90a). y's bits are the
same for a given variance; the variance's are not (the order of its sum); never with M.
(One exchange of Chan's ``(sum, n, mean, m2)`` instead of two scalar ones, tried here,
cost more instructions a row than it saved: 928 -> 1376 SASS instructions at bfloat16
4096.)"""

LAYER_NORM_FAST_MEASURED: dict[str, tuple[tuple[int, int], ...]] = {
    # (probe as FAST_EXP_MEASURED's) bfloat16 1024 0.937 -> 0.941, 4096 0.881 -> 0.887, 16384 0.890 -> 0.899;
    # float32 16384 0.868 -> 0.880 (0.926 with rows_cta.MIN_CTAS_MEASURED's 2 CTAs)
    BF16.name: ((1, 16384),),
    F32.name: ((1, 16384),),
}
""":data:`LAYER_NORM_FAST` by element type and N: the ranges where it is on; none
measured yet (tools/probes/rows_forward_norms.py)."""
LAYER_NORM_FAST_MEASURED = half_as_bfloat16(LAYER_NORM_FAST_MEASURED)  # float16 as bfloat16 where unmeasured


AFFINE_HELD: bool | None = None
"""None: where :data:`AFFINE_HELD_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings, tools/probes/rows_forward_norms.py ``--set words``). On,
rms_norm's, add_rms_norm's and layer_norm's weight and bias in rows_warp and rows_cta (the
row in registers, no cluster) are loaded once, before the loop over rows, into registers as
loaded (bfloat16 two to a 32-bit word: :func:`raw_load`), and each row widens them
(:class:`HeldRow`), instead of loading them from L2 every row: no LDG and no address
arithmetic of theirs in the row (SASS, sm_90a: bfloat16 layer_norm 4096, 16 of its 24
LDG a row); more registers carried over the loop (a thread's 32 values: 16 words of
bfloat16 weight, 32 registers of float32). The same values, the same arithmetic: the
bits of the default."""

AFFINE_HELD_MEASURED: dict = half_as_bfloat16({
    # tools/probes/rows_forward_norms.py --set words on an H200, 2026-11-29 (sixth session), x copy, dispatch -> this:
    # layer_norm bfloat16 4096 0.893 -> 0.926 (with CTA_ONE_BARRIER), rms_norm 4096 0.909 -> 0.919 (with RMS_FMA),
    # 1024 0.933 -> 0.952, add_rms_norm 4096 0.914 -> 0.930 (with both); keyed by (kind, type): the others no faster
    ("layer_norm", BF16.name): ((4096, 4096),),
    ("rms_norm", BF16.name): ((1024, 1024), (4096, 4096)),
    ("add_rms_norm", BF16.name): ((4096, 4096),),
})
""":data:`AFFINE_HELD` by element type name: the ranges (N from, N to) where it is on;
none measured yet (float16 as bfloat16)."""


@dataclass
class HeldRow:
    """A row-independent ``[N]`` buffer's vectors of the thread (the weight's, the bias's)
    held in registers as loaded (:data:`AFFINE_HELD`), read as :class:`RowBuf` reads its
    vector ``first + extra`` (static: the registers variants' items)."""

    dtype: DType
    raw: list[list[SSAValue]]  # per vector of the thread, its registers as loaded (zeros where it has none)
    group: int
    vec: int

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        assert isinstance(first, int) and vec == self.vec, "HeldRow: a static vector of the thread"
        return widen_raw(e, self.dtype, self.raw[first // self.group + extra], vec)


def affine_held(p: RowPlan) -> bool:
    """Whether plan ``p`` holds its weight and bias in registers (:data:`AFFINE_HELD`): a
    norm's forward in registers, no cluster."""
    norm = p.kind in RMS_KINDS or p.kind == NormKind.LAYER_NORM
    return norm and bool(p.items) and p.cluster == 1 and _setting(AFFINE_HELD, AFFINE_HELD_MEASURED, p)


def hold_row(e: Emitter, p: RowPlan, base: SSAValue, dt: DType, g: SSAValue, sw: SSAValue) -> HeldRow:
    """:data:`AFFINE_HELD`'s registers of the ``[N]`` buffer at ``base`` (element type ``dt``)
    for the thread ``g`` of its group (its first vector ``sw``), loaded before the rows
    loop: its vectors ``sw, sw + G, ...``; the partial last one under its condition (zeros
    where the thread has none)."""
    first = e.ptr_add(base, e.mul_i(sw, p.vec * dt.bytes))
    full, rest = divmod(p.vectors, p.group)
    step = p.group * p.vec * dt.bytes
    raw = [raw_load(e, dt, first, k * step, p.vec) for k in range(full)]
    if rest:
        types = [i32 if packed_bf16(dt, p.vec) else dt.ir] * raw_count(dt, p.vec)
        raw.append(e.if_(e.cmp("ult", g, rest), lambda b: raw_load(b, dt, first, full * step, p.vec),
                         lambda b: [b.const(0, t) if t == i32 else b.const(0.0, t) for t in types], types))
    return HeldRow(dt, raw, p.group, p.vec)


RMS_FMA: bool | None = None
"""None: where :data:`RMS_FMA_MEASURED` says; True or False: everywhere or nowhere (the
probe's and the tests' settings, tools/probes/rows_forward_norms.py ``--set words``). On,
rms_norm's and add_rms_norm's row in registers (rows_warp, rows_cta, rows_cluster) sums
its squares by FFMA, a chain per element of a vector, then the chains' tree, as
:data:`LAYER_NORM_FAST` sums layer_norm's squared deviations, instead of an FMUL and a tree
of FADD: one instruction fewer an element (SASS, sm_90a: bfloat16 rms_norm 4096 11.6 ->
10.6 an element). Bits change (the order of the sum of squares: rstd's last bit), never
with M."""

RMS_FMA_MEASURED: dict = half_as_bfloat16({
    # (AFFINE_HELD_MEASURED's run: with the weight held)
    ("rms_norm", BF16.name): ((4096, 4096),),
    ("add_rms_norm", BF16.name): ((4096, 4096),),
})
""":data:`RMS_FMA` by element type name: the ranges (N from, N to) where it is on; none
measured yet (float16 as bfloat16)."""


def rms_fma(p: RowPlan) -> bool:
    """Whether plan ``p`` (rms_norm, add_rms_norm) sums its squares by FFMA chains (:data:`RMS_FMA`)."""
    return p.kind in RMS_KINDS and _setting(RMS_FMA, RMS_FMA_MEASURED, p)


EXP_MAX_FIRST: bool | None = None
"""None: where :data:`EXP_MAX_FIRST_MEASURED` says; True or False: everywhere or nowhere
(the probe's and the tests' settings, tools/probes/rows_forward_norms.py ``--set words``).
On, softmax, log_softmax and cross_entropy in rows_warp and rows_cta (the row in
registers, no cluster) reduce the row's maximum first (a scalar butterfly: SHFL and FMNMX
a step), then each element's ``exp(x - max)`` against it and their sum (a second scalar
reduction), instead of one reduction of (m, s) pairs (:class:`_Exps`: two SHFL, FMNMX,
two exps and their range arithmetic a step, 5 steps a warp, twice in a CTA) and y's
rescale ``exp(m - M)``. The exps wait for the maximum's reduction (the next row's loads
are in flight over it when pipelined). Bits change (the exps against the row's maximum,
not the thread's: no ``exp(m - M)`` factor, one rounding fewer), never with M; the
stored maximum is the same; the non-finite rows as the default's (a NaN or +inf: NaN; a
row of -inf: a sum of 0, NaN for softmax, as torch)."""

EXP_MAX_FIRST_MEASURED: dict = half_as_bfloat16({
    # tools/probes/rows_forward_norms.py --set words on an H200, 2026-11-29 (sixth session), x copy, dispatch -> this: cross_entropy
    # bfloat16 1024 0.961 -> 0.991, 4096 0.940 -> 1.001, 16384 0.899 -> 0.967 (at 64 values a thread,
    # rows_cta.VALUES_MEASURED); softmax and log_softmax slower (4096 0.901 -> 0.879, 16384 0.916 -> 0.802)
    ("cross_entropy", BF16.name): ((1024, 1024), (4096, 4096), (16384, 16384),
                                   # (rows_ce.py --set odd16, eighth session: rows_cta.CTAS_PER_SM_MEASURED's row)
                                   (4097, 4097)),
})
""":data:`EXP_MAX_FIRST` by element type name: the ranges (N from, N to) where it is on;
none measured yet (float16 as bfloat16)."""


def max_first(p: RowPlan) -> bool:
    """Whether plan ``p`` (an exp kind in registers, no cluster) reduces its maximum first
    (:data:`EXP_MAX_FIRST`)."""
    return p.kind in EXP_KINDS and bool(p.items) and p.cluster == 1 and _setting(EXP_MAX_FIRST, EXP_MAX_FIRST_MEASURED, p)


CTA_ONE_BARRIER: bool | None = None
"""None: where :data:`CTA_ONE_BARRIER_MEASURED` says; True or False: everywhere or nowhere
(the probe's and the tests' settings, tools/probes/rows_forward_norms.py ``--set words``).
On, each reduction of a forward row of rows_cta (a CTA a row, in registers) is one CTA
barrier instead of two (:func:`cta_all_reduce`): each warp's lane 0 writes the warp's
butterfly result into a set of slots chosen by the parity of the CTA's count of rows (the
loop carries it), a barrier, then every warp reads the slots and does warp 0's butterfly
over them itself (no butterfly of warp 0 alone while the other warps wait at a second
barrier, no broadcast through shared memory; the (m, s) pairs' fma form, whose lanes may
differ, take lane 0's by ``shfl.sync.idx``). A set is written again two rows later,
after the next row's barrier, which every thread reaches only once it has read this
row's set. The same operations in the same order as the default's warp 0: the bits of
the default."""

CTA_ONE_BARRIER_MEASURED: dict = half_as_bfloat16({
    # (AFFINE_HELD_MEASURED's run: with the weight held)
    ("layer_norm", BF16.name): ((4096, 4096),),
    ("add_rms_norm", BF16.name): ((4096, 4096), (16384, 16384)),  # (16384: --set quack32)
    # (the eighth session's --set quack16, with rows_cta.CTAS_PER_SM_MEASURED's a CTA a row)
    ("softmax", BF16.name): ((4096, 4096), (16384, 16384)),
    ("rms_norm", BF16.name): ((4096, 4096), (16384, 16384)),
    # (--set quack32, the same family: rows_cta.CTAS_PER_SM_MEASURED's cells)
    ("log_softmax", BF16.name): ((4096, 4096), (16384, 16384)),
    ("softmax", F32.name): ((1024, 1024), (16384, 16384)),
    ("log_softmax", F32.name): ((1024, 1024), (16384, 16384)),
    ("rms_norm", F32.name): ((1024, 1024), (16384, 16384)),
    ("layer_norm", F32.name): ((1024, 1024), (16384, 16384)),
    ("add_rms_norm", F32.name): ((1024, 1024), (4096, 4096), (16384, 16384)),
})
""":data:`CTA_ONE_BARRIER` by element type name: the ranges (N from, N to) where it is on;
none measured yet (float16 as bfloat16)."""


def cta_one_barrier(p: RowPlan) -> bool:
    """Whether plan ``p`` reduces with :data:`CTA_ONE_BARRIER`'s one barrier: a forward kind
    in registers, a CTA a row (more than a warp), no cluster."""
    forward = p.kind in EXP_KINDS or p.kind in RMS_KINDS or p.kind == NormKind.LAYER_NORM
    return (forward and bool(p.items) and p.cluster == 1 and p.group == p.block > WARP
            and _setting(CTA_ONE_BARRIER, CTA_ONE_BARRIER_MEASURED, p))


def cta_all_reduce(e: Emitter, st, v: list[SSAValue], tid: SSAValue, block: int, count: SSAValue,
                   name: str) -> list[SSAValue]:
    """The state ``v`` combined over the CTA of ``block`` threads, every thread getting the
    result, with one barrier (:data:`CTA_ONE_BARRIER`; ``count``: the CTA's rows so far,
    whose parity picks the set of slots): each warp's butterfly, its lane 0's state into
    slot ``warp`` of the set, ``bar.sync``, then every warp does what warp 0 alone does in
    the default (:func:`reduce_state`): lane l takes slot l (the neutral state past the
    warps), a butterfly, and (a combination not symmetric in its operands: the (m, s)
    pairs' fma form) lane 0's state to every lane (``shfl.sync.idx``): the default's bits."""
    s = warp_reduce_state(e, st, v)
    nwarps, w = block // WARP, st.width
    slots = e.shared([2 * nwarps * w], f32, f"{name}_warps")
    base = e.ptr_add(slots, e.mul_i(e.and_b32(count, 1), nwarps * w * 4))
    lane = e.and_b32(tid, WARP - 1)

    def write(b: Emitter) -> list[SSAValue]:
        at = b.ptr_add(base, b.mul_i(b.shr_u32(tid, 5), w * 4))
        for k, x in enumerate(s):
            b.st(ld_type(F32), at, x, 4 * k)
        return []

    e.if_(e.cmp("eq", lane, 0), write)
    e.bar_sync()

    def load(b: Emitter) -> list[SSAValue]:
        at = b.ptr_add(base, b.mul_i(lane, w * 4))
        return [b.ld(ld_type(F32), at, f32, 4 * k) for k in range(w)]

    got = e.if_(e.cmp("ult", lane, nwarps), load, lambda b: st.neutral(b), list(st.types))
    out = warp_reduce_state(e, st, got)
    if isinstance(st, _Exps) and not st.fast:  # (lanes may differ in the last bits: lane 0's, as the default's)
        out = [e.value(ShflSyncOp(ShflMode.IDX, x, e.const(0), e.const(WARP - 1), e.const(-1))) for x in out]
    return out


ADD_RMS_CLUSTER_N: dict[str, int] = {
    # (probe as FAST_EXP_MEASURED's) x copy, rows_stream -> rows_cluster (with ADD_RMS_CLUSTER_MIN_CTAS):
    # bfloat16 65536 0.739 -> 0.914 (without the bound), 262144 0.702 -> 0.874; float32 262144 0.756 -> 0.882
    BF16.name: 262144,
    F32.name: 262144,
}
"""Per element type, the longest add_rms_norm row that rows_cluster takes besides its own
``MEASURED`` (read by rows_cluster's ``measured`` predicate): a cluster's registers hold
the row's ``h = x + residual``, where rows_stream reads h back from residual_out (five
row transfers instead of four: 0.71 to 0.76 of the copy kernel past 16384 on an H200,
docs/rows_bench_h200_run3.md). Empty: none moved (not measured yet;
tools/probes/rows_forward_norms.py)."""
ADD_RMS_CLUSTER_N = half_as_bfloat16(ADD_RMS_CLUSTER_N)  # float16 as bfloat16 where unmeasured


ADD_RMS_CLUSTER_MIN_CTAS: int | None = 2  # bfloat16 262144: 0.797 without, 0.874 with; float32 0.892 / 0.882
"""add_rms_norm on rows_cluster: its kernel's ``.minnctapersm`` (None: none, the default):
at 512 threads a CTA of float32 262144 uses 87 registers and bfloat16's 67, one CTA a
multiprocessor (no row's loads in flight while the CTA reduces); 2 asks ptxas for 64.
The probe's setting (tools/probes/rows_forward_norms.py); rows_lower sets it."""


def _setting(on: bool | None, table: dict, p: RowPlan) -> bool:
    """:func:`setting_of` for plan ``p``'s kind, element type and N."""
    return setting_of(on, table, p.dtype.name, p.n, p.kind.value)


def setting_of(on: bool | None, table: dict, dtype: str, n: int, kind: str | None = None) -> bool:
    """A measured setting of the row kernels: ``on`` where not None (the probes' and the
    tests' switch), else whether ``table``'s ranges ``(N from, N to)`` hold ``n``: its
    ``(kind, dtype)`` entry where it has one, else its ``dtype`` entry (type names; a
    function of N, the kind and the type, never of M)."""
    if on is not None:
        return on
    ranges = table.get((kind, dtype)) if kind is not None else None
    return any(lo <= n <= hi for lo, hi in (table.get(dtype, ()) if ranges is None else ranges))


LOG_SOFTMAX_LSE: bool | None = None
"""None: where :data:`LOG_SOFTMAX_LSE_MEASURED` says; True or False: everywhere or nowhere
(the probe's and the tests' settings, tools/probes/rows_forward.py ``--set logsoftmax``).
On, log_softmax's y is ``x - lse``, ``lse = max + log(sum)`` added once a row (as
cross_entropy's), instead of ``(x - max) - log(sum)``: one FADD an element instead of two,
in every variant (:meth:`RowState.out`; THCUNN's LogSoftMaxForwardEpilogue's form). Bits
change (``lse``'s rounding: at most half a float32 ulp of ``|lse|`` in every y), never with
M; the non-finite rows are the default's (a row of -inf: ``-inf - -inf``, NaN; a NaN or
+inf: NaN; a -inf element: -inf)."""

LOG_SOFTMAX_LSE_MEASURED: dict = half_as_bfloat16({
    # tools/probes/rows_forward.py --set logsoftmax on an H200, the eighth session of 2026-11-29
    # (docs/rows_probes_h200_run8.log), x copy, median of 5 rounds: log_softmax bfloat16 65536 with
    # rows_bulk.CHOSEN's row (softmax's setting, online) 0.882 -> 0.942 (the lse form alone 0.879, softmax's
    # setting without it 0.931); 1024 to 16384 and 262144 within 1% of the dispatch (kept)
    ("log_softmax", BF16.name): ((65536, 65536),),
})
""":data:`LOG_SOFTMAX_LSE` by element type name (or ``(kind, type)``): the ranges (N from,
N to) where it is on (float16 as bfloat16)."""


def log_softmax_lse(p: RowPlan) -> bool:
    """Whether plan ``p`` (log_softmax) writes y as ``x - lse`` (:data:`LOG_SOFTMAX_LSE`)."""
    return p.kind == NormKind.LOG_SOFTMAX and _setting(LOG_SOFTMAX_LSE, LOG_SOFTMAX_LSE_MEASURED, p)


def fast_exp(p: RowPlan) -> bool:
    """Whether plan ``p``'s exps take :data:`FAST_EXP`'s form (an exp kind's forward)."""
    return p.kind in EXP_KINDS and _setting(FAST_EXP, FAST_EXP_MEASURED, p)


def layer_norm_fast(p: RowPlan) -> bool:
    """Whether plan ``p`` (layer_norm) takes :data:`LAYER_NORM_FAST`'s form."""
    return p.kind == NormKind.LAYER_NORM and _setting(LAYER_NORM_FAST, LAYER_NORM_FAST_MEASURED, p)


def exp_shifted(e: Emitter, v: SSAValue, m: SSAValue, fast: bool) -> SSAValue:
    """``exp(v - m)``: :func:`f32_exp` of ``v - m`` (the default); ``fast``
    (:data:`FAST_EXP`), ``ex2.approx.ftz((v - m) log2(e))`` (:func:`_ftz_exp`): the
    difference first, as the default's, not Quack's ``fma(v, log2(e), -m log2(e))``, whose
    rounding of ``m log2(e)`` puts up to ``|m| 2^-24`` into every exponent (rows of logits
    of 1e10 gave inf exps and NaN on an H200, seed 311132 of tools/gpu_rows_random.py). The
    non-finite results are the default's: ``inf - inf`` is NaN in both."""
    return _ftz_exp(e, f32_sub(e, v, m)) if fast else f32_exp(e, f32_sub(e, v, m))


def _ftz_exp(e: Emitter, d: SSAValue) -> SSAValue:
    """``exp(d)`` as ``ex2.approx.ftz(d log2(e))``: :class:`_Exps`' factors under
    :data:`FAST_EXP`, of ``d = m' - M`` (exact where ``m' = M``: the factor 1, as the
    default's; not the shifted form's ``fma(m', log2(e), -M log2(e))``, whose rounding of
    ``M log2(e)`` would scale the sum by up to ``|M| 2^-24`` at every step of the
    combination). A factor below 2^-126 flushed to 0 (a sum of at least 1 times it)."""
    return e.value(Ex2Op(AT, f32_mul(e, d, e.const(LOG2E, f32)), approx=True, ftz=True))


def ahead_items(p: RowPlan) -> int:
    """The thread's vectors of a pipelined row loaded during the step before (:data:`FORWARD_AHEAD`)."""
    return p.items if FORWARD_AHEAD is None else max(1, min(p.items, FORWARD_AHEAD))


def forward_pipelined(p: RowPlan) -> bool:
    """Whether plan ``p`` pipelines its rows (:data:`FORWARD_PIPELINE`): a forward kind
    in registers without a cluster, every thread holding ``p.items`` whole vectors of
    the row (no partial vector to guard), or cross_entropy's rows of a partial last vector
    under :data:`FORWARD_PIPELINE_PARTIAL` (:func:`pipelined_partial`)."""
    on = FORWARD_PIPELINE
    if on is None:
        ranges = FORWARD_MEASURED.get((p.kind.value, p.dtype.name), ()) + FORWARD_MEASURED.get(p.dtype.name, ())
        on = next((pipe for lo, hi, pipe in ranges if lo <= p.n <= hi), False)  # ((kind, type)'s ranges first)
    forward = p.kind in EXP_KINDS or p.kind in RMS_KINDS or p.kind == NormKind.LAYER_NORM
    return bool(on and forward and p.items and p.cluster == 1 and (p.vectors == p.items * p.group or pipelined_partial(p)))


def target_of(e: Emitter, op: NormalizeRowsOp, row: SSAValue) -> SSAValue:
    """cross_entropy's target of ``row`` (an ``i64``)."""
    assert op.target is not None
    return e.ld(ld_type(I64), e.ptr_add(e.ptr(op.target, StateSpace.GLOBAL), e.mul_i(row, 8)), i64)


def prefetch_row(e: Emitter, p: RowPlan, op: NormalizeRowsOp, x: RowBuf, res: RowBuf | None, row: SSAValue) -> list[SSAValue]:
    """The loads of a row of a pipelined forward kind (:data:`FORWARD_PIPELINE`): per
    vector the thread holds, x's registers as loaded (bfloat16 in words of two:
    raw_load) and add_rms_norm's residual's; then cross_entropy's target.
    ``x``, ``res``: the row's buffers at the thread's first vector."""

    out: list[SSAValue] = []
    cond = _partial_cond(e, p)  # (FORWARD_PIPELINE_PARTIAL: the partial last vector's load under it)
    for k in range(ahead_items(p)):
        for buf in (x, res) if res is not None else (x,):
            out += _raw_item(e, p, buf, k, cond)
    if p.kind == NormKind.CROSS_ENTROPY:
        out.append(target_of(e, op, row))
    return out


def prefetch_row_types(p: RowPlan, op: NormalizeRowsOp) -> list:
    """The types of the registers :func:`prefetch_row` gives."""

    t = i32 if packed_bf16(p.dtype, p.vec) else p.dtype.ir
    per = raw_count(p.dtype, p.vec) * (2 if op.residual is not None else 1)
    return [t] * (per * ahead_items(p)) + ([i64] if p.kind == NormKind.CROSS_ENTROPY else [])


def _widen_row(r: RowState, e: Emitter, raw: list[SSAValue]) -> list[list[SSAValue]]:
    """Per vector the thread holds, the row's float32 values from :func:`prefetch_row`'s
    registers (add_rms_norm: h, written to residual_out here, as :meth:`RowState.load_item`
    does), then those not loaded ahead (:data:`FORWARD_AHEAD`) loaded now; cross_entropy:
    ``r.target`` set (x[t] read now, from the row just read)."""

    p = r.p
    n = raw_count(p.dtype, p.vec)
    ahead = ahead_items(p)
    t = raw[-1] if p.kind == NormKind.CROSS_ENTROPY else None
    raw = raw[:len(raw) - 1] if t is not None else list(raw)
    cond = _partial_cond(e, p)  # (FORWARD_PIPELINE_PARTIAL)
    for k in range(ahead, p.items):  # the rest of the row, its loads issued together before any is used
        for buf in (r.x, r.res) if r.res is not None else (r.x,):
            raw += _raw_item(e, p, buf, k, cond)
    i, vals = 0, []
    for k in range(p.items):
        xs = widen_raw(e, p.dtype, raw[i:i + n], p.vec)
        if cond is not None and k == p.items - 1:  # (the default's neutral where the thread has no vector)
            xs = [e.selp(SelpType.F32, v, r.neutral(e), cond) for v in xs]
        i += n
        if r.res is not None:
            xs = r.add_residual(e, k * p.group, xs, widen_raw(e, p.dtype, raw[i:i + n], p.vec))
            i += n
        vals.append(xs)
    if t is not None:
        r.target = r.target_value(e, t)
    return vals


Ahead = tuple[list[SSAValue], Callable[[Emitter], list[SSAValue]]]


def together(p: RowPlan) -> bool:
    """Whether plan ``p``'s groups take two rows a loop step (:attr:`RowPlan.together`,
    rows_warp.ROWS_AT_ONCE): a forward kind in registers, no cluster, not pipelined."""
    forward = p.kind in EXP_KINDS or p.kind in RMS_KINDS or p.kind == NormKind.LAYER_NORM
    return p.together == 2 and forward and bool(p.items) and p.cluster == 1 and not forward_pipelined(p)


def registers_row(r: RowState, e: Emitter, row: SSAValue, ahead: Ahead | None = None) -> list[SSAValue]:
    """The row held in registers: one read of x, the statistics, one write of y. With
    ``ahead`` (:data:`FORWARD_PIPELINE`): (this row's registers as loaded during the
    previous step: :func:`prefetch_row`; a function that issues the loads of the next
    row) the row's values come from the first, and the second is called after the
    thread's sums, before the group's first reduction: its results are returned."""
    return registers_rows_together(e, [(r, row, ahead)])[0]


def registers_rows_together(e: Emitter, rows: list[tuple[RowState, SSAValue, Ahead | None]]) -> list[list[SSAValue]]:
    """:func:`registers_row` of several rows (:func:`together`): the loads of every row, then
    each row's statistics and y in turn (each row's operations and their order as alone)."""
    steps = [_register_steps(r, e, row, ahead) for r, row, ahead in rows]
    for s in steps:
        next(s)  # the row's loads
    out = []
    for s in steps:
        try:
            next(s)
        except StopIteration as done:
            out.append(done.value)
        else:
            raise AssertionError("_register_steps pauses once")
    return out


def _register_steps(r: RowState, e: Emitter, row: SSAValue, ahead: Ahead | None = None):
    """:func:`registers_row` as a generator that pauses once, after the row's loads."""
    p = r.p
    conds = r.item_conds(e)
    vals: list[list[SSAValue]] = []
    following: list[SSAValue] = []

    def next_row() -> None:  # the next row's loads, in flight over the reduction
        following.extend(ahead[1](e) if ahead is not None else [])

    if ahead is not None:  # (forward_pipelined: every thread holds all its vectors, or FORWARD_PIPELINE_PARTIAL)
        assert all(c is None for c in conds) or pipelined_partial(p)
        vals = _widen_row(r, e, ahead[0])
    for k, cond in enumerate(conds if ahead is None else []):
        if cond is None:
            vals.append(r.load_item(e, k * p.group))
        else:
            vals.append(e.if_(cond, lambda b, k=k: r.load_item(b, k * p.group),
                              lambda b: [r.neutral(b)] * p.vec, [f32] * p.vec))
    flat = [v for item in vals for v in item]
    kind = p.kind
    yield  # (registers_rows_together: the other rows' loads issued here)
    if kind == NormKind.CROSS_ENTROPY and ahead is None:  # the target and x[target] read while the row's loads are in flight
        r.target = r.target_inputs(e, row)
    if kind in EXP_KINDS:
        # the thread's (m, s), then the row's in one reduction; exp(x - M) = exp(x - m) * exp(m - M)
        fast = fast_exp(p)
        rescale: SSAValue | None = None
        if max_first(p):  # (EXP_MAX_FIRST: the row's maximum, the exps against it, their sum: two scalar reductions)
            m = e.fold(ReduceKind.MAX, F32, flat)
            next_row()
            big = clamp_max(e, r.reduce(e, ReduceKind.MAX, m, "row_max"))
            exps = [exp_shifted(e, v, big, fast) for v in flat]
            s = r.reduce(e, ReduceKind.SUM, e.fold(ReduceKind.SUM, F32, exps), "row_sum_exp")
        else:
            m = clamp_max(e, e.fold(ReduceKind.MAX, F32, flat))
            exps = [exp_shifted(e, v, m, fast) for v in flat]
            part = e.fold(ReduceKind.SUM, F32, exps)
            next_row()
            big, s = r.reduce_exps(e, m, part)
            rescale = f32_exp(e, f32_sub(e, m, big))
        sums = {"max": big, "sum": s}
        if kind == NormKind.CROSS_ENTROPY:
            if r.op.smoothing:  # the sum of x (a missing vector's values are 0, not -inf)
                zero = e.const(0.0, f32)
                xs = list(flat)
                for k, cond in enumerate(conds):
                    if cond is not None:
                        xs[k * p.vec:(k + 1) * p.vec] = [e.selp(SelpType.F32, v, zero, cond) for v in xs[k * p.vec:(k + 1) * p.vec]]
                sums["sum_x"] = r.reduce(e, ReduceKind.SUM, e.fold(ReduceKind.SUM, F32, xs), "row_sum_x")
            r.store_stats(e, row, r.finish(e, sums))  # no y: one read of x
            return following
        stats = r.finish(e, sums)
        if kind == NormKind.SOFTMAX:  # y = exp(x - max) / sum, from the exps already computed
            factor = f32_mul(e, rescale, stats["inv_sum"]) if rescale is not None else stats["inv_sum"]
            _write_values(r, e, [f32_mul(e, x, factor) for x in exps], conds, stats, raw=True)
        else:
            _write_values(r, e, flat, conds, stats)
        r.store_stats(e, row, stats)
        return following
    if kind in RMS_KINDS and rms_fma(p):  # (RMS_FMA: the squares summed by FFMA, a chain per element of a vector)
        chains = [e.const(0.0, f32)] * p.vec
        for k, v in enumerate(flat):
            chains[k % p.vec] = e.fma(AT, v, v, chains[k % p.vec])
        part = e.fold(ReduceKind.SUM, F32, chains)
        next_row()
        ss = r.reduce(e, ReduceKind.SUM, part, "row_sq")
        stats = r.finish(e, {"sq": ss})
    elif kind in RMS_KINDS:
        sq = [e.value(MulOp(AT, v, v, rnd=RoundingMode.RN)) for v in flat]
        part = e.fold(ReduceKind.SUM, F32, sq)
        next_row()
        ss = r.reduce(e, ReduceKind.SUM, part, "row_sq")
        stats = r.finish(e, {"sq": ss})
    else:
        part = e.fold(ReduceKind.SUM, F32, flat)
        next_row()
        total = r.reduce(e, ReduceKind.SUM, part, "row_sum")
        mean = e.div(AT, total, e.const(float(p.n), f32))
        devs = [f32_sub(e, v, mean) for v in flat]
        zero = e.const(0.0, f32)
        for k, cond in enumerate(conds):  # a missing vector's values are 0, not 0 - mean
            if cond is not None:
                devs[k * p.vec:(k + 1) * p.vec] = [e.selp(SelpType.F32, d, zero, cond) for d in devs[k * p.vec:(k + 1) * p.vec]]
        if layer_norm_fast(p):  # (LAYER_NORM_FAST) the squares summed by FFMA, a chain per element of a vector
            chains = [e.const(0.0, f32)] * p.vec
            for k, d in enumerate(devs):
                chains[k % p.vec] = e.fma(AT, d, d, chains[k % p.vec])
            part = e.fold(ReduceKind.SUM, F32, chains)
        else:
            d2 = [e.value(MulOp(AT, d, d, rnd=RoundingMode.RN)) for d in devs]
            part = e.fold(ReduceKind.SUM, F32, d2)
        var = e.div(AT, r.reduce(e, ReduceKind.SUM, part, "row_var"), e.const(float(p.n), f32))
        stats = r.finish(e, {"mean": mean, "var": var})
        if layer_norm_fast(p):  # y from the deviations already computed (the same bits as x - mean again)
            stats["centered"] = mean
            flat = devs
    _write_values(r, e, flat, conds, stats)
    r.store_stats(e, row, stats)
    return following


def _write_values(r: RowState, e: Emitter, flat: list[SSAValue], conds: list[SSAValue | None],
                  stats: dict[str, SSAValue], *, raw: bool = False) -> None:
    """Write y of the thread's vectors; ``raw``: ``flat`` are y's values already."""
    p = r.p

    def one(b: Emitter, k: int) -> None:
        vals = flat[k * p.vec:(k + 1) * p.vec]
        if raw:
            r.y.store(b, k * p.group, p.vec, vals)
        else:
            r.write_item(b, k * p.group, vals, stats)

    for k, cond in enumerate(conds):
        if cond is None:
            one(e, k)
            continue

        def guarded(b: Emitter, k: int = k) -> list[SSAValue]:
            one(b, k)
            return []

        e.if_(cond, guarded)


def stream_row(r: RowState, e: Emitter, row: SSAValue) -> None:
    """The row read twice: the statistics, then y.

    layer_norm: the mean from each thread's Kahan-compensated sum of x (:func:`_kahan`; a
    thread of a long row adds hundreds of values, and a plain running sum's error grows
    with their number), summed over the group; the variance from each thread's sum of
    ``(x - s)^2``, ``s`` the thread's first value (shifted: no cancellation for a mean
    large against the spread), less ``n (mean_t - s)^2`` (``mean_t`` the thread's), the
    threads' parts combined by Chan's formula (:class:`_Moments`): an outlying ``s``
    costs its own thread's share only. (A sum shifted by the row's first element, as
    before, is ``N (mean - x[row, 0])``: its float32 rounding is ``|mean - x[row, 0]|``
    ulps of the mean's, large where the mean is near 0 and ``x[row, 0]`` is not.)"""
    p = r.p
    full, cond = r.partial(e)
    kind = p.kind
    softmax = kind in EXP_KINDS
    smooth = kind == NormKind.CROSS_ENTROPY and bool(r.op.smoothing)
    shift = None
    if kind == NormKind.LAYER_NORM:  # the variance's sums of x - (the thread's first x)
        if full:
            shift = r.x.load(e, 0, 1)[0]
        else:  # (a thread with no element: any value; its count is 0)
            assert cond is not None
            shift = e.if_(cond, lambda b: r.x.load(b, 0, 1), lambda b: [b.const(0.0, f32)], [f32])[0]

    def absorb(b: Emitter, state: list[SSAValue], vals: list[SSAValue]) -> list[SSAValue]:
        if softmax:
            t, s = state[:2]
            t1 = b.fold(ReduceKind.MAX, F32, [t, *vals])
            m0, m1 = clamp_max(b, t), clamp_max(b, t1)
            s = f32_mul(b, s, f32_exp(b, f32_sub(b, m0, m1)))
            fast = fast_exp(p)
            for v in vals:
                s = f32_add(b, s, exp_shifted(b, v, m1, fast))
            if smooth:
                return [t1, s, b.fold(ReduceKind.SUM, F32, [state[2], *vals])]
            return [t1, s]
        if kind in RMS_KINDS:
            (s,) = state
            for v in vals:
                s = b.fma(AT, v, v, s)
            return [s]
        s1, c1, s2 = state
        for v in vals:  # the mean: the compensated sum of x itself (not shifted: stream_row's docstring)
            s1, c1 = _kahan(b, s1, c1, v)
            d = f32_sub(b, v, shift)
            s2 = b.fma(AT, d, d, s2)
        return [s1, c1, s2]

    if softmax:
        init = [e.const(float("-inf"), f32), e.const(0.0, f32)] + ([e.const(0.0, f32)] if smooth else [])
    elif kind in RMS_KINDS:
        init = [e.const(0.0, f32)]
    else:
        init = [e.const(0.0, f32)] * 3

    def read(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        return absorb(b, state, r.load_item(b, first, extra))

    state = visit_vectors(e, p, full, cond, init, read)
    if softmax:
        t, s = state[:2]
        big, total = r.reduce_exps(e, clamp_max(e, t), s)
        sums = {"max": big, "sum": total}
        if smooth:
            sums["sum_x"] = r.reduce(e, ReduceKind.SUM, state[2], "row_sum_x")
        stats = r.finish(e, sums)
        if kind == NormKind.CROSS_ENTROPY:  # no y: one read of x
            r.store_stats(e, row, stats)
            return
    elif kind in RMS_KINDS:
        stats = r.finish(e, {"sq": r.reduce(e, ReduceKind.SUM, state[0], "row_sq")})
    else:  # the thread's (sum, n, mean, m2), then the row's (_Moments)
        total = f32_sub(e, state[0], state[1])
        nt = e.const(float(full * p.vec), f32)
        if cond is not None:
            nt = e.selp(SelpType.F32, e.const(float((full + 1) * p.vec), f32), nt, cond)
        mt = e.div(AT, total, e.minmax(ReduceKind.MAX, AT, nt, e.const(1.0, f32)))
        d = f32_sub(e, mt, shift)  # m2 = sum((x - shift)^2) - n (mean - shift)^2 (max.NaN: a NaN stays)
        m2 = e.minmax(ReduceKind.MAX, AT, e.fma(AT, f32_mul(e, nt, d), f32_sub(e, e.const(0.0, f32), d), state[2]),
                      e.const(0.0, f32))
        st = r._state(e, _Moments(), [total, nt, mt, m2], "row_moments")
        nf = e.const(float(p.n), f32)
        stats = r.finish(e, {"mean": e.div(AT, st[0], nf), "var": e.div(AT, st[3], nf)})

    def write(b: Emitter, first: SSAValue | int, state: list[SSAValue], extra: int) -> list[SSAValue]:
        r.write_item(b, first, r.reload_item(b, first, extra), stats, extra)
        return state

    visit_vectors(e, p, full, cond, [], write)
    r.store_stats(e, row, stats)


def clamp_max(e: Emitter, t: SSAValue) -> SSAValue:
    """``t`` raised to at least -FLT_MAX (NaN and +inf stay): the shift of a sum of
    exponentials, so that an all -inf part adds 0 (no ``-inf - -inf``). +inf is kept, as
    torch's maximum: a row with +inf gets ``inf - inf``, NaN, everywhere."""
    return e.minmax(ReduceKind.MAX, AT, t, e.const(-FLT_MAX, f32))


Visit = Callable[[Emitter, "SSAValue | int", list[SSAValue], int], list[SSAValue]]


def visit_vectors(e: Emitter, p: RowPlan, full: int, cond: SSAValue | None, state: list[SSAValue], fn: Visit) -> list[SSAValue]:
    """``fn(e, first, state, extra)`` over the thread's vectors in order, ``unroll`` per
    loop step: the vector ``first + extra * G`` (``first`` in vectors from the thread's
    first); then the partial last one where ``cond`` holds."""
    u, g = p.unroll, p.group
    rounds, rest = divmod(full, u)
    if rounds:

        def body(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            st = list(args)
            for k in range(u):
                st = fn(b, iv, st, k * g)
            return st

        state = e.for_(0, rounds * u * g, u * g, state, body)
        done = rounds * u
    else:
        done = 0
    for k in range(done, full):
        state = fn(e, k * g, state, 0)
    if cond is not None:
        types = [v.type for v in state]
        state = e.if_(cond, lambda b: fn(b, full * g, list(state), 0), lambda b: list(state), types)
    return state
