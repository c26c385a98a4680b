"""bulkred.normalize_rows -> rows_bulk_backward (priority 26, where :data:`CHOSEN` has the
row): the backward of long rows (softmax_backward, log_softmax_backward,
rms_norm_backward, layer_norm_backward) with each CTA's slices of the two rows it reads
(x, or softmax's y, and dy) copied into shared memory by ``cp.async.bulk``: one read of
each tensor from global memory, one write of dx.

A row of ``B`` bytes per tensor is split into ``C`` slices of at most :data:`SLICE_BYTES`
(``C`` a power of two, at most :data:`MAX_CLUSTER`: 16 needs the non-portable cluster
size, which the launch sets); CTA rank r of a cluster takes slice r of both tensors. The
grid is persistent: a cluster (a unit) takes rows ``u, u + U, ...`` (U units). Each CTA
holds a ring of Q slots of a slice (:data:`SLOTS`, fewer where they do not fit in
:data:`SHARED_PER_SM`), each with its mbarrier, taking the unit's slices in turn: slice
``2i`` is x's of the unit's row i, ``2i + 1`` dy's, in slot ``k mod Q`` (with
:data:`GRAD_REGISTERS`, slice ``i`` is x's of row i, and each thread loads its vectors of
dy into registers as the row starts). Per row i:

* every thread reaches a CTA barrier (the slots of the CTA's previous row are read);
  slices ``2i + Q - 2`` and ``2i + Q - 1`` (this row's with Q = 2; the next row's with
  Q = 4) go into their slots: thread 0 announces the slice's bytes to the slot's
  mbarrier (``arrive.expect_tx``) and lanes of warp 0 copy it in chunks of
  :data:`CHUNK` bytes (``cp.async.bulk.shared::cta.global``);
* every thread reads the row's stored statistics (the norms: rstd, and the mean), waits
  for its two slices (``mbarrier.try_wait.parity``: the parity of the slot's uses), and reads its ``P`` vectors ``t, t + T,
  ...`` of both from shared memory: the row's sums (softmax: ``sum(dy * y)``; log_softmax:
  ``sum(dy)``; the norms: ``sum(g * xhat)``, layer_norm's ``sum(g)`` too, ``g = dy * w``),
  combined in the CTA and across the cluster by pushes (``st.async`` into every peer's
  slot, mbarrier transaction counts: ``rows_common._cluster_push``), every CTA adding the
  slots in rank order;
* a second read of the thread's vectors from shared memory gives dx, written to global
  memory; a norm's thread adds its columns' ``dy * xhat`` (and ``dy``) to its float32
  column sums, held in registers over the unit's rows (each thread owns the same columns
  of every row: its ``P x V`` values per output, at most :data:`MAX_VALUES` in all).

After the last row each thread writes its column sums into its unit's partial rows,
summed in a fixed order by the CTAs that finish last (``rows_backward.finish_columns``:
each rank its own columns).

Settings of the long rows (issue 30's backward at 262144, each off until an H200
measures it: tools/probes/rows_backward.py ``--set long``), each keeping the default's
bits: :data:`STATS_AHEAD` (the next row's statistics loaded over this row). Measured
slower and removed (docs/rows.md): a row's first slices re-read from L2, the last column
sums in shared memory, smaller clusters, CTAs of 1024 threads, the second pass reversed.

Batch invariance: the configuration (cluster size, threads, vectors per thread, slots)
is a function of N and the element type only; a row's dx depends on its own values only
(each thread adds its vectors in order, the CTA's tree, the cluster's slots in rank
order); dweight / dbias depend on which rows each unit takes (the grid: a function of M
and the multiprocessors, as in the other variants), each unit adding its rows in order,
the units' rows added in a fixed order: the same bits run to run.

It takes rows whose slices are whole 16-byte chunks (N x the element size a multiple of
16 x C; x's and dy's row strides multiples of 16 bytes), on sm_90 or newer, where
:data:`CHOSEN` has the row: empty until measured on an H200
(tools/probes/rows_backward.py ``--set bulk``; docs/rows_bench_bwd_h200.md). Spec:
docs/rows.md; PTX ISA cp.async.bulk, mbarrier, st.async, mapa.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import SimpleNamespace

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, f32, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.dtypes import DType, of_ir
from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR, MIN_CTAS_ATTR
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.memory import LdStType
from bulkred_dialect.ops.ptx.bulk import CpAsyncBulkSharedCtaGlobalOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.sync import MbarrierArriveExpectTxOp, MbarrierInitOp
from bulkred_dialect.ops.target import CLUSTER_LAUNCH, Target
from bulkred_dialect.ops.tile import ReduceKind, enclosing_kernel
from bulkred_dialect.ops.tile.rows import NORM_BACKWARD_KINDS, SOFTMAX_BACKWARD_KINDS, NormalizeRowsOp, NormKind, row_stride
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import add_workspace, require_alignment, set_launch
from bulkred_dialect.passes.variants import rows_common
from bulkred_dialect.passes.variants.kernel import emitter_at
from bulkred_dialect.passes.variants.rows_backward import (
    backward_out,
    backward_sum,
    add_column_sums,
    ColumnSums,
    finish_columns,
    norm_dx,
    norm_row_stats,
    norm_sums,
    norm_terms,
    read_stats,
    write_column_partials,
)
from bulkred_dialect.passes.variants.rows_common import (
    AT,
    packed_bf16,
    widen_raw,
    f32_mul,
    f32_sub,
    half_as_bfloat16,
    BF16,
    F32,
    ClusterExchange,
    RowBuf,
    load_vec,
    RowState,
    dtype_of,
    plan,
    row_predicates,
    vector_of,
    wait_phase,
)
from bulkred_dialect.passes.variants.rows_bulk import copy_slice
from bulkred_dialect.passes.variants.rows_lower import rows_parameter

SLICE_BYTES = 32768
"""The most bytes of one tensor's row a CTA holds (x's, or dy's: twice that a buffer)."""
MAX_CLUSTER = 16
BLOCK = 512
"""Threads per CTA (fewer, down to :data:`MIN_BLOCK`, where the slice's vectors are not a multiple)."""
MIN_BLOCK = 128
CHUNK = 16384
"""Bytes per ``cp.async.bulk`` (each a lane of warp 0, one per tensor)."""
SLOTS = 4
"""Slices a CTA holds at most (fewer where they do not fit in :data:`SHARED_PER_SM`, at
least 2): a ring of slots taking the unit's slices in turn (x's and dy's of its first
row, then of its next, ...), each copied as soon as its slot is read: 2, each row's
copies after the previous row is read; 3, the next row's x copied while this row is
computed; 4, the next row's x and dy; 6, the next two rows'."""
MAX_VALUES = 64
"""The most column-sum values (float32 registers) a thread of a norm's backward holds:
its vectors' elements x the outputs (dweight, dbias)."""
MAX_VECTORS = 16
"""The most vectors per thread (each pass unrolled over them)."""
CLUSTERS: dict[int, int] = {4: 32, 8: 15, 16: 7}
"""The persistent grid's units at most (clusters, or CTAs) by the cluster's CTAs; where
absent, as many as the multiprocessors hold by shared memory (``rows_common.sm_count`` x
CTAs per multiprocessor / the cluster's CTAs). A cluster's CTAs must sit in one GPC: where
fewer clusters are resident than that count (an H200's 132 multiprocessors in GPCs of
16 to 18), the last units run in a second wave. A function of the cluster size (N and
the type) only. Measured on an H200 (tools/probes/rows_backward.py --set bulk, "a unit
fewer"): one unit fewer than 132 / C, the whole grid in one wave (bfloat16 rms_norm's
backward at 262144: 0.47 of copy with 8 clusters of 16, 0.88 with 7). A norm's backward
whose cell ``rows_common.NORM_BACKWARD_UNITS`` has takes that many units instead (empty:
these)."""
WEIGHT_SHARED = True
"""Whether a norm's backward copies the CTA's slice of the weight into shared memory once
(``cp.async.bulk``, before the first row) where it fits beside the slots, rather than
reading it from global memory (L1 or L2) in both passes of every row."""
GRAD_REGISTERS: bool | None = None
"""None: where :data:`SETTINGS` says (``"grad_registers"``; nowhere while it is empty);
True or False: everywhere or nowhere (the probe's and the tests' settings). Whether each thread loads its vectors of dy from global memory into registers
(``ld.global.nc``, once a row, issued before the wait for x's slice, held over both
passes) rather than the CTA copying dy's slice into shared memory: the ring of slots then
holds x's (or y's) slices only, one a row, so that as many slots reach twice as many rows
ahead (float32 at 262144: 3 slots of 64 KiB, the next two rows' x in flight while this
row is computed, where the default's 3 hold this row's x and dy and the next row's x
only) and the shared-memory reads of a row halve; the thread's ``P x V`` values of dy
take as many registers. The same sums in the same order: the bits of the default. Off:
not yet measured on an H200 (tools/probes/rows_backward.py ``--set fast``)."""
CTAS_PER_SM: int | None = None
"""The most CTAs a multiprocessor takes at once (the persistent grid's units, and the
kernel's ``.minnctapersm``); None: where :data:`SETTINGS` says (``"ctas_per_sm"``), else
as many as shared memory and 2048 threads allow, which at short rows (bfloat16 4096: 4
CTAs of 512 threads, 32 registers a thread) makes ptxas spill
(tools/probes/rows_backward.py ``--set fast --dry-run``)."""
STATS_AHEAD: bool | None = None
"""None: where :data:`SETTINGS` says (``"stats_ahead"``; nowhere yet); True or False:
everywhere or nowhere (the probe's and the tests' settings). Whether a norm's backward
loads the next row's stored statistics (rstd, and the mean) while this row is computed,
carried over the loop step (two registers), rather than at the row's start, where their
load from global memory (an L2 hit, or a miss every 32 rows) is waited for as soon as
the row's slices have landed (already, when the ring has copied them ahead). The same
values: the bits of the default. Off: not yet measured on an H200
(tools/probes/rows_backward.py ``--set long``)."""
LEAN_DX: bool | None = None
"""None: where :data:`SETTINGS` says (``"lean_dx"``; nowhere yet); True or False:
everywhere or nowhere (the probe's and the tests' settings). A norm's dx in fewer
floating-point instructions an element (tools/probes/rows_ln_long.py ``--dry-run``:
layer_norm 14 -> 11, rms_norm 9 -> 7): the first pass sums ``g (x - mean)`` (rms_norm:
``g x``) and ``g``, the row's ``mean(g xhat)`` is that sum's mean times rstd (one
multiply a row, not one an element); the second pass writes ``dx = fma(g, rstd, fma(xhat,
k1, k0))`` with the row's ``k1 = -rstd mean(g xhat)``, ``k0 = -rstd mean(g)`` (0 for
rms_norm), two FFMA where the default's ``rstd ((g - mean(g)) - xhat mean(g xhat))`` takes
four. xhat, dweight's and dbias's column sums are the default's (the same bits); dx's
last bits differ (one rounding fewer or more per term, no cancellation the default has
not: within float32's error of float64, tests/test_rows_ln_long.py); never with M. Off:
not yet measured on an H200 (``PROBE_ARGS="--budget-s 120" bash tools/gpu.sh
probe:rows_ln_long``)."""
WORDS: bool | None = None
"""None: where :data:`SETTINGS` says (``"words"``; nowhere yet); True or False: everywhere
or nowhere (the probe's and the tests' settings). A norm's backward reads its bfloat16
vectors of x, dy and the weight from shared memory as 32-bit words, each widened by a
shift or a mask (rows_common.widen_raw), where ``ld.shared.v4.b16`` and ``cvt`` take a
PRMT or SHF and more an element (bfloat16 layer_norm at 262144: 296 of the row loop's
1113 SASS instructions unpack bfloat16). The same float32 values: the bits of the
default. Off: not yet measured on an H200 (tools/probes/rows_ln_long.py)."""
HALVES: bool | None = None
"""None: where :data:`SETTINGS` says (``"halves"``; nowhere yet); True or False: everywhere
or nowhere (the probe's and the tests' settings). A norm's backward rings half slices, not
slices: each row four pieces (the first halves of x's and dy's slices, then their second
halves), in as many slots of half a slice as fit beside the weight's slice (else without
it; ``"slots"`` in SETTINGS sets them), each row's first pass waiting for its second
halves only before its second half of the vectors. float32 layer_norm at 262144, whose 3
slots of 64 KiB hold this row's x and dy and the next row's x, so that each row waits for
its dy copied only as it starts (the bfloat16 cell measured 0.53 of copy with 3 slots
against 0.74 with 4), holds 7 of 32 KiB with a 2 KiB spare (``"spare_shared"``): 1.75
rows, the next row's pieces but its dy's second half copied a row ahead, and that one
waited for after half the first pass. The same sums in the same order: the bits of the
default. Off: not yet measured on an H200 (tools/probes/rows_ln_long.py)."""
TAIL_LOADS: int | None = None
"""None: where :data:`SETTINGS` says (``"tail_loads"``; nowhere yet); else everywhere (the
probe's and the tests' settings; 0: the default's tail). A norm's column sums finished
in one level (``rows_backward.finish_columns``' ``ahead``: where the units fit one group,
as the persistent grid's 7 clusters of 16 at 262144): the last CTA of each rank adds the
units' partial rows straight into dweight / dbias, its loads issued in batches of about
this many a thread, all before the batch's first add, where the default's two levels
(a group row written, a second ticket and fence, that row read back) loop over the
columns with the partial rows of a column loaded 4, 2, then 1 at a time (ptxas's
unrolling of a loop of 7): 3 L2 round trips a column vector, 48 for layer_norm's 16
vectors a thread, then 16 more for the second level. The same sums in the same order:
the bits of the default. Off: not yet measured on an H200 (tools/probes/rows_ln_long.py)."""
TAIL_SPREAD: int | None = None
"""None: where :data:`SETTINGS` says (``"tail_spread"``; nowhere yet); else everywhere (the
probe's and the tests' settings; 0: off). With :data:`TAIL_LOADS`, the one-level tail
spread over the CTAs still there when the last unit arrives (``rows_backward.finish_columns``'
``spread``: each CTA, after its partial rows, polls the rank's arrival count at most this
many times; those that see every unit, the last always, draw pieces of the columns until
none is left): at 262144 the 7 CTAs of each rank, where the default's one CTA a rank adds
all 7 partial rows of its 16384 columns of each output alone. The same sums in the same
order: the bits of the default. Off: not yet measured on an H200 (tools/probes/rows_ln_long.py)."""
SETTINGS: list[tuple[str, tuple[str, ...] | None, int, int, dict[str, int | bool]]] = [
    # (element type, kinds (None: all), N from, N to, {"grad_registers": bool, "slots": int, "ctas_per_sm": int,
    #  "stats_ahead": bool, "lean_dx": bool, "spare_shared": int, "words": bool, "halves": bool,
    #  "tail_loads": int, "tail_spread": int)
    # (measured by tools/probes/rows_backward.py and rows_ln_long.py on an H200, x copy: default -> this setting)
    # (--set long, 2026-11-29 later: the statistics ahead, the same bits, rms_norm 262144 0.818 -> 0.853,
    # layer_norm 0.603 -> 0.622; x or dy re-read from L2, smaller clusters, 1024 threads and the column sums in
    # shared memory all slower, 0.38 to 0.74; without dweight and dbias layer_norm would reach 0.742 (f32) and
    # 0.889 (bf16): the column sums in registers, 128 of them a thread, are what is left)
    # (tools/probes/rows_ln_long.py, the seventh session: float32 layer_norm 262144 with LEAN_DX, half
    # slices of 5 slots and the weight's slice in shared memory 0.625 -> 0.756; bfloat16 layer_norm with
    # LEAN_DX and WORDS 0.738 -> 0.799; bfloat16 rms_norm with WORDS 0.901 -> 0.921; float32 rms_norm: none faster)
    # (the same probe, the seventh session's second run: the column tail spread over the waiting CTAs
    # (TAIL_LOADS, TAIL_SPREAD; dweight / dbias the default's bits): float32 layer_norm 262144 0.766 ->
    # 0.872, bfloat16 0.801 -> 0.896; rms_norm bfloat16 0.908 -> 0.966, float32 0.855 -> 0.870)
    (F32.name, ("layer_norm_backward",), 262144, 262144,
     {"stats_ahead": True, "lean_dx": True, "halves": True, "slots": 5, "spare_shared": 2048, "tail_loads": 8,
      "tail_spread": 64}),
    (BF16.name, ("layer_norm_backward",), 262144, 262144, {"lean_dx": True, "words": True, "tail_loads": 8,
                                                           "tail_spread": 64}),
    (BF16.name, ("rms_norm_backward",), 262144, 262144, {"words": True, "tail_loads": 16, "tail_spread": 64}),
    (F32.name, ("rms_norm_backward",), 262144, 262144,
     {"grad_registers": True, "slots": 2, "stats_ahead": True, "tail_loads": 8, "tail_spread": 64}),
    # (--set fast, the first run: float32 rms_norm 131073 to 262144, 0.71 -> 0.83; after 262144's own entry)
    (F32.name, ("rms_norm_backward",), 131073, 262144, {"grad_registers": True, "slots": 2, "stats_ahead": True}),  # 0.71 -> 0.83
    (F32.name, ("rms_norm_backward", "layer_norm_backward"), 16384, 16384, {"grad_registers": True}),  # 0.92 -> 0.95, 0.90 -> 0.92
    (F32.name, ("rms_norm_backward",), 4096, 4096, {"ctas_per_sm": 2, "slots": 12}),  # 0.91 -> 0.96
]
"""rows_bulk_backward's settings where an H200 measured them faster
(tools/probes/rows_backward.py ``--set fast``): the first entry holding the op's element
type, kind and N gives ``"grad_registers"`` (:data:`GRAD_REGISTERS`), ``"slots"`` (the
ring's slots, in place of :data:`SLOTS`) and ``"ctas_per_sm"`` (:data:`CTAS_PER_SM`);
the module's GRAD_REGISTERS and CTAS_PER_SM, where not None, win; ``"stats_ahead"``
(:data:`STATS_AHEAD`, the same way), ``"lean_dx"`` (:data:`LEAN_DX`), ``"words"`` (:data:`WORDS`),
``"halves"`` (:data:`HALVES`), ``"tail_loads"`` (:data:`TAIL_LOADS`), ``"tail_spread"`` (:data:`TAIL_SPREAD`) and ``"spare_shared"`` (in place of :data:`SPARE_SHARED`: 2048 lets
bfloat16 layer_norm at 262144 keep its 4 slots and the weight's slice, 225 KiB of 227). Empty: the settings of
before (the variant itself is taken where :data:`CHOSEN` says). A function of the kind, N
and the element type only."""
SETTINGS = half_as_bfloat16(SETTINGS)  # float16 as bfloat16 where unmeasured (no bfloat16 row yet)
SHARED_PER_SM = 227 * 1024
"""Shared memory a multiprocessor gives its CTAs (sm_90: 227 KiB)."""
SPARE_SHARED = 4096
"""Shared memory kept for the rest (the exchanges' slots, the CTA reduction's, the tickets)."""

KINDS = SOFTMAX_BACKWARD_KINDS + NORM_BACKWARD_KINDS

CHOSEN: list[tuple[str, tuple[str, ...] | None, int, int]] = [
    # (tools/probes/rows_backward.py --set bulk on an H200, x copy: default -> rows_bulk_backward with CLUSTERS)
    (F32.name, ("rms_norm_backward", "layer_norm_backward", "softmax_backward"), 65536, 262144),
    # 65536 (8 CTAs a row): rms 0.90 -> 0.95, layer 0.81 -> 0.96, softmax 0.98 -> 1.00;
    # 262144 (16): rms 0.51 -> 0.70, layer 0.37 -> 0.60, softmax 0.81 -> 0.93
    (BF16.name, ("rms_norm_backward", "layer_norm_backward", "softmax_backward", "log_softmax_backward"), 131073, 262144),
    # 262144 (16): rms 0.44 -> 0.88, layer 0.28 -> 0.75, softmax 0.85 -> 0.97; at 65536 (4 CTAs a row)
    # slower (rms 0.75 -> 0.53, layer 0.65 -> 0.44, softmax 0.90 -> 0.74): not taken there
    # (--set fast, 2026-11-29) log_softmax's backward at 262144: float32 0.90 -> 0.96, bfloat16 0.80 -> 0.97;
    # float32 rms_norm / layer_norm at 16384 (measured there only): 0.92 -> 0.95, 0.90 -> 0.92 (with
    # SETTINGS' dy in registers); float32 rms_norm at 4096: 0.91 -> 0.96 (at most 2 CTAs, 12 slots);
    # bfloat16 rms_norm at 16384: 0.82 -> 0.87
    (F32.name, ("log_softmax_backward",), 131073, 262144),
    (F32.name, ("rms_norm_backward", "layer_norm_backward"), 16384, 16384),
    (F32.name, ("rms_norm_backward",), 4096, 4096),
    (BF16.name, ("rms_norm_backward",), 16384, 16384),
]
"""Where rows_bulk_backward was measured faster than the other variants on an H200:
(element type, kinds (None: all), N from, N to); elsewhere the dispatch passes it by, a
forced ``variant="rows_bulk_backward"`` too (the probe patches this table). Measured at
65536 and 262144; the ranges between take the same cluster sizes (float32 8 to 16 CTAs,
bfloat16 16). log_softmax's backward and float16 were not measured. A function of the
kind, N and the element type only."""
CHOSEN = half_as_bfloat16(CHOSEN)  # float16 as bfloat16 where unmeasured


@dataclass(frozen=True)
class BulkPlan:
    """``cluster`` CTAs of ``block`` threads per row, each thread holding ``per`` vectors
    of each tensor's row (``slice_bytes`` a CTA), ``slots`` slices a CTA."""

    cluster: int
    block: int
    per: int
    slice_bytes: int
    slots: int
    weight_bytes: int = 0  # the CTA's slice of the weight in shared memory (0: read from global memory)
    tensors: int = 2  # slices a row in the ring: x's and dy's, or x's alone (dy in registers: GRAD_REGISTERS)
    ctas_per_sm: int | None = None  # the most CTAs a multiprocessor takes (None: by shared memory and threads)
    stats_ahead: bool = False  # the next row's statistics loaded over this row (STATS_AHEAD)
    lean_dx: bool = False  # dx by two FFMA from the row's constants (LEAN_DX)
    words: bool = False  # bfloat16 read from shared memory as 32-bit words (WORDS)
    halves: bool = False  # the ring's pieces half slices (HALVES)
    spare: int = SPARE_SHARED  # the shared memory kept for the rest (SETTINGS' "spare_shared")
    tail_loads: int = 0  # the column sums' one-level tail, its loads in flight a thread (TAIL_LOADS; 0: the default's)
    tail_spread: int = 0  # that tail spread over the CTAs waiting at most this many polls (TAIL_SPREAD; 0: the last's)

    @property
    def piece_bytes(self) -> int:
        """The bytes of a slot of the ring: a slice, or half of one (HALVES)."""
        return self.slice_bytes // 2 if self.halves else self.slice_bytes

    @property
    def pieces(self) -> int:
        """The ring's pieces of a row: its tensors' slices (x's and dy's, or x's alone), or their halves."""
        return self.tensors * (2 if self.halves else 1)

    @property
    def cta_bytes(self) -> int:
        """The shared memory of the CTA's slices (and of its weight)."""
        return self.slots * self.piece_bytes + self.weight_bytes


def settings(op: NormalizeRowsOp) -> dict[str, int | bool]:
    """The first :data:`SETTINGS` entry's settings for ``op``'s element type, kind and N ({} where none)."""
    d, kind = dtype_of(op).name, op.norm_kind.value
    for dtype, kinds, lo, hi, chosen_settings in SETTINGS:
        if dtype == d and lo <= op.cols <= hi and (kinds is None or kind in kinds):
            return chosen_settings
    return {}


def bulk_for(op: NormalizeRowsOp) -> BulkPlan:
    """The configuration of ``op`` from its kind, N and element type."""
    d = dtype_of(op)
    cell = settings(op)
    grad = bool(cell.get("grad_registers", False)) if GRAD_REGISTERS is None else GRAD_REGISTERS
    ctas = cell.get("ctas_per_sm") if CTAS_PER_SM is None else CTAS_PER_SM
    row = op.cols * d.bytes
    c = 1
    while c < MAX_CLUSTER and row > c * SLICE_BYTES:
        c *= 2
    slice_bytes = row // c
    vectors = slice_bytes // (vector_of(op) * d.bytes)
    block = BLOCK
    while block > MIN_BLOCK and vectors % block:
        block //= 2
    spare = int(cell.get("spare_shared", SPARE_SHARED))
    budget = SHARED_PER_SM - spare
    wd = of_ir(op.weight.type.element_type) if op.weight is not None else None  # type: ignore[union-attr]
    weight = slice_bytes // d.bytes * wd.bytes if wd is not None and op.norm_kind in NORM_BACKWARD_KINDS else 0
    tn = 1 if grad else 2
    per = max(1, vectors // block)
    halves = (bool(cell.get("halves", False)) if HALVES is None else HALVES) and op.norm_kind in NORM_BACKWARD_KINDS \
        and tn == 2 and per % 2 == 0 and slice_bytes % 32 == 0
    piece = slice_bytes // 2 if halves else slice_bytes
    if halves:  # as many half slices as fit beside the weight's slice (else without it), at least a row's 4
        fit = (budget - weight) // piece if WEIGHT_SHARED and weight % 16 == 0 else 0
        slots = max(4, min(int(cell.get("slots", fit if fit > 4 else budget // piece)), budget // piece))
    else:
        slots = max(2, min(int(cell.get("slots", SLOTS)), budget // max(1, slice_bytes)))
    if not (WEIGHT_SHARED and weight % 16 == 0 and slots * piece + weight <= budget):
        weight = 0  # (where it would take a slot: the slots first)
    ahead = bool(cell.get("stats_ahead", False)) if STATS_AHEAD is None else STATS_AHEAD
    lean = bool(cell.get("lean_dx", False)) if LEAN_DX is None else LEAN_DX
    words = bool(cell.get("words", False)) if WORDS is None else WORDS
    tail = int(cell.get("tail_loads", 0)) if TAIL_LOADS is None else TAIL_LOADS
    spread = int(cell.get("tail_spread", 0)) if TAIL_SPREAD is None else TAIL_SPREAD
    norm = op.norm_kind in NORM_BACKWARD_KINDS
    return BulkPlan(c, block, per, slice_bytes, slots, weight, tn, int(ctas) if ctas else None,
                    stats_ahead=ahead and norm, lean_dx=lean and norm, spare=spare,
                    words=words and norm and packed_bf16(d, vector_of(op)),
                    halves=halves, tail_loads=max(0, tail) if norm else 0,
                    tail_spread=max(0, spread) if norm and tail > 0 else 0)


def _outputs(op: NormalizeRowsOp) -> int:
    return (op.dweight is not None) + (op.dbias is not None)


def _fits(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    d, bp, vec = dtype_of(op), bulk_for(op), vector_of(op)
    vec_bytes = vec * d.bytes
    strides = [row_stride(op.x.type) * d.bytes]  # type: ignore[arg-type]
    if op.grad is not None and op.grad.type.get_shape()[1:]:  # type: ignore[union-attr]  (cross_entropy's grad: [M])
        strides.append(row_stride(op.grad.type) * d.bytes)  # type: ignore[arg-type]
    ok = (vec > 1 and op.cols * d.bytes == bp.cluster * bp.slice_bytes and bp.slice_bytes % 16 == 0
          and bp.slice_bytes == bp.block * bp.per * vec_bytes and all(s % 16 == 0 for s in strides)
          and bp.cta_bytes <= SHARED_PER_SM - bp.spare and bp.per <= MAX_VECTORS
          and bp.per * vec * _outputs(op) <= MAX_VALUES)
    ring = f"{bp.slots} {'half slices' if bp.halves else 'slices'} of {bp.piece_bytes} bytes"
    return ok, (f"N = {op.cols} ({d.name}): {bp.cluster} CTAs of {bp.block} threads, {bp.per} vectors each, {ring}"
                + (f", the weight's {bp.weight_bytes}" if bp.weight_bytes else ""))


def _kind(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    return op.norm_kind in KINDS, op.norm_kind.value


def chosen(op: NormalizeRowsOp) -> bool:
    """Whether :data:`CHOSEN` has ``op``'s element type, kind and N."""
    d, kind = dtype_of(op).name, op.norm_kind.value
    return any(dtype == d and lo <= op.cols <= hi and (kinds is None or kind in kinds) for dtype, kinds, lo, hi in CHOSEN)


def _chosen(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    return chosen(op), f"{op.norm_kind.value}, {dtype_of(op).name}, N = {op.cols}"


@dataclass(frozen=True)
class Halves:
    """A tensor's row in two pieces of the ring (:data:`HALVES`): the thread's first vector's
    address in each, ``pieces[tensor]`` (the first half) and ``pieces[tensors + tensor]``
    (the second; appended once waited for, before the first pass's second half)."""

    pieces: list[SSAValue]
    tensor: int
    tensors: int


Source = SSAValue | list[list[SSAValue]] | Halves
"""Where a thread's vectors of a row's tensor are: its first vector's address in shared
memory (the next ones ``T`` vectors apart), its vectors in registers, or in two pieces
of the ring (:class:`Halves`)."""


def _vec(r: RowState, e: Emitter, src: Source, k: int, words: bool = False) -> list[SSAValue]:
    """The thread's vector ``k`` of a row's tensor from ``src`` (:data:`Source`); with
    ``words`` (:data:`WORDS`) a bfloat16 vector in shared memory read as 32-bit words."""
    p = r.p
    if isinstance(src, list):
        return src[k]
    if isinstance(src, Halves):  # the first half's vectors from its first piece, the others from its second
        half = p.items // 2
        src, k = (src.pieces[src.tensor], k) if k < half else (src.pieces[src.tensors + src.tensor], k - half)
    offset = k * p.block * p.vec * p.dtype.bytes
    if words and packed_bf16(p.dtype, p.vec):
        return shared_words(e, p.dtype, src, offset, p.vec)
    return load_vec(e, p.dtype, src, offset, p.vec, nc=False)


def shared_words(e: Emitter, d: DType, at: SSAValue, offset: int, vec: int) -> list[SSAValue]:
    """``vec`` bfloat16 at ``at + offset`` bytes of shared memory as float32, loaded as
    ``vec / 2`` 32-bit words (one vector load) and widened by a shift and a mask each
    (:data:`WORDS`): the same values as ``load_vec``'s."""
    if vec == 2:
        return widen_raw(e, d, [e.ld(LdStType.B32, at, i32, offset)], vec)
    raw = e.ld_vec(LdStType.B32, at, i32, vec // 2, offset, nc=False)
    return widen_raw(e, d, raw, vec)


def _softmax_row(r: RowState, e: Emitter, srcs: tuple[Source, Source], per: int) -> None:
    """softmax's or log_softmax's dx of one row from the thread's ``per`` vectors of y and
    dy (``srcs``: :data:`Source`)."""
    xs, gs = srcs
    part = None
    for k in range(per):
        part = backward_sum(r, e, _vec(r, e, xs, k), _vec(r, e, gs, k), part)
    assert part is not None
    s = r.reduce(e, ReduceKind.SUM, part, "row_dot")
    for k in range(per):
        vals = backward_out(r, e, _vec(r, e, xs, k), _vec(r, e, gs, k), s)
        r.y.store(e, k * r.p.group, r.p.vec, vals)  # type: ignore[union-attr]


def _norm_row(r: RowState, e: Emitter, row: SSAValue, st: dict[str, SSAValue], srcs: tuple[Source, Source], per: int,
              acc: list[SSAValue], shared_weight: bool, lean: bool = False, words: bool = False,
              mid: Callable[[Emitter], None] | None = None) -> list[SSAValue]:
    """A norm's dx of one row from the thread's ``per`` vectors of x and dy (``srcs``:
    :data:`Source`) and the row's stored statistics ``st`` (the weight ``r.w`` in shared
    memory with ``shared_weight``); its column sums ``acc`` (per vector: V of dweight, then
    V of dbias) after the row. ``lean`` (:data:`LEAN_DX`): the first pass sums ``g (x -
    mean)``, the second writes dx by two FFMA from the row's constants; ``words``
    (:data:`WORDS`): bfloat16 read from shared memory as 32-bit words; ``mid(e)`` (HALVES) emitted before the first pass's second half of
    the vectors (the wait for the second halves' pieces)."""
    p = r.p
    layer = p.kind == NormKind.LAYER_NORM_BACKWARD

    Vals = list[SSAValue]

    def terms(k: int, xs: Source, gs: Source, centred: bool = False) -> tuple[Vals, Vals, Vals]:
        """(dy, xhat, g) of vector ``k``; with ``centred``, ``x - mean`` (rms_norm: x) in place of xhat."""
        dys = _vec(r, e, gs, k, words)
        if r.w is not None and shared_weight and words and packed_bf16(r.w.dtype, p.vec):
            ws: list[SSAValue] | None = shared_words(e, r.w.dtype, *r.w.at(e, k * p.group, p.vec), p.vec)
        else:
            ws = r.w.load(e, k * p.group, p.vec, nc=not shared_weight) if r.w is not None else None
        if centred:
            xc = [f32_sub(e, x, st["mean"]) if "mean" in st else x for x in _vec(r, e, xs, k, words)]
            g = [f32_mul(e, dy, w) for dy, w in zip(dys, ws, strict=True)] if ws is not None else list(dys)
            return dys, xc, g
        return (dys, *norm_terms(r, e, _vec(r, e, xs, k, words), dys, ws, st))

    sums: list[SSAValue | None] = [None, None]
    for k in range(per):
        if mid is not None and k == per // 2:
            mid(e)
        _, xh, g = terms(k, *srcs, centred=lean)
        sums = norm_sums(e, xh, g, sums, layer)
    st = {**st, **norm_row_stats(r, e, row, sums)}
    if lean:  # mean(g xhat) = mean(g (x - mean)) rstd; dx = fma(g, rstd, fma(xhat, k1, k0))
        zero = e.const(0.0, f32)
        k1 = f32_sub(e, zero, f32_mul(e, st["rstd"], f32_mul(e, st["mean_gx"], st["rstd"])))
        k0 = f32_sub(e, zero, f32_mul(e, st["rstd"], st["mean_g"])) if "mean_g" in st else None

        def dx_of(xh: list[SSAValue], g: list[SSAValue]) -> list[SSAValue]:
            inner = [e.fma(AT, h, k1, k0) if k0 is not None else f32_mul(e, h, k1) for h in xh]
            return [e.fma(AT, gv, st["rstd"], t) for gv, t in zip(g, inner, strict=True)]
    else:

        def dx_of(xh: list[SSAValue], g: list[SSAValue]) -> list[SSAValue]:
            return norm_dx(r, e, xh, g, st)
    each = len(acc) // per
    out: list[SSAValue] = list(acc)
    for k in range(per):
        dys, xh, g = terms(k, *srcs)
        r.y.store(e, k * p.group, p.vec, dx_of(xh, g))  # type: ignore[union-attr]
        if each:
            out[k * each:(k + 1) * each] = add_column_sums(e, r.op, dys, xh, acc[k * each:(k + 1) * each])
    return out


def lower_rows_bulk_backward(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    bp = bulk_for(op)
    c, block, per, slice_bytes, q, tn = bp.cluster, bp.block, bp.per, bp.slice_bytes, bp.slots, bp.tensors
    pn, piece = bp.pieces, bp.piece_bytes  # the ring's pieces a row and slot size (HALVES: half slices)
    per_sm = max(1, min(2048 // block, (SHARED_PER_SM - bp.spare) // bp.cta_bytes, bp.ctas_per_sm or 2048))
    p = plan(op, target, group=block, block=block, items=per, ctas_per_sm=per_sm, cluster=c)
    units = p.ctas // c
    if c in CLUSTERS and not (_outputs(op) and rows_common.cell_setting(None, rows_common.NORM_BACKWARD_UNITS, op)):
        units = max(1, min(units, CLUSTERS[c]))
    p = replace(p, ctas=units * c)
    kernel = enclosing_kernel(op)
    assert kernel is not None
    set_launch(kernel, [p.ctas], [p.block], [p.cluster])
    if per_sm > 1:  # (the registers per thread within what that many CTAs leave)
        kernel.attributes[MIN_CTAS_ATTR] = IntegerAttr(per_sm, i64)
    m_arg = rows_parameter(kernel) if p.m is None else None
    e = emitter_at(op)
    d, vec = p.dtype, p.vec
    tid = e.sreg(SpecialRegister.TID_X)
    buf = e.shared([bp.cta_bytes // 4], f32, "row_slices")  # Q slots of a slice
    loaded = e.shared([q + 1], i64, "rows_loaded")  # an mbarrier per slot, then the weight's

    def init(b: Emitter) -> list[SSAValue]:
        for k in range(q + 1):
            b.emit(MbarrierInitOp(b.ptr_add(loaded, 8 * k), b.const(1)))
        return []

    e.if_(e.cmp("eq", tid, 0), init)
    rank = exchange = None
    if c > 1:
        rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)
        slot0 = e.shr_u32(e.sreg(SpecialRegister.CTAID_X), c.bit_length() - 1)  # the unit
        first = e.add_i(e.mul_i(rank, p.slice), tid)
        exchange = ClusterExchange(e, tid)  # (its cluster barrier also publishes `loaded`'s init)
    else:
        slot0 = e.sreg(SpecialRegister.CTAID_X)
        first = tid
        e.bar_sync()
    sw = e.wide(first)  # the thread's first vector in the row
    assert op.grad is not None and op.y is not None
    x0, g0 = e.ptr(op.x, StateSpace.GLOBAL), e.ptr(op.grad, StateSpace.GLOBAL)
    require_alignment(x0, 16)
    require_alignment(g0, 16)
    sg = row_stride(op.grad.type)  # type: ignore[arg-type]
    y0 = e.ptr(op.y, StateSpace.GLOBAL)
    w0 = e.ptr(op.weight, StateSpace.GLOBAL) if op.weight is not None else None
    wd = of_ir(op.weight.type.element_type) if op.weight is not None else None  # type: ignore[union-attr]
    mine = e.ptr_add(buf, e.mul_i(tid, vec * d.bytes))  # the thread's first vector in slot 0
    lane_chunk = e.mul_i(tid, CHUNK)
    stride = rows = None  # (set below, before the loop's body is emitted)

    def issue(b: Emitter, row: SSAValue, j: int, slot: SSAValue | int) -> None:
        """The copy of the CTA's piece ``j`` of ``row`` into slot ``slot``: its slice of x
        (``j`` 0) or dy (1); with HALVES the first halves of x's and dy's slices, then
        their second halves (``j`` 0 to 3)."""
        base, rs = ((x0, p.sx), (g0, sg))[j % tn]
        if not bp.halves:
            copy_slice(b, tid, lane_chunk, rank, base, row, rs * d.bytes, buf, loaded, slot, slice_bytes)
            return
        at = b.add_i(b.mul_i(rank, slice_bytes), (j // tn) * piece) if rank is not None else (j // tn) * piece
        at = b.ptr_add(base, b.wide(at) if not isinstance(at, int) else at)
        copy_slice(b, tid, lane_chunk, None, at, row, rs * d.bytes, buf, loaded, slot, piece)

    def ahead(b: Emitter, row: SSAValue, k: int, slot: SSAValue | int) -> None:
        """Piece ``k`` of the unit's pieces from row ``row``'s first (x's, dy's, then the
        next row's; x's alone with dy in registers; HALVES: their halves), if its row is
        below M, into ``slot``."""
        at = b.add_i(row, b.mul_i(stride, k // pn)) if k >= pn else row
        b.if_(b.cmp("slt", at, rows), lambda c1: issue(c1, at, k % pn, slot) or [])

    norms = op.norm_kind in NORM_BACKWARD_KINDS
    outs = [o for o in (op.dweight, op.dbias) if o is not None]

    def wrap(b: Emitter, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(``v`` mod Q, 1 where ``v`` >= Q) for ``v`` < 2Q."""
        over = b.cmp("sge", v, q)
        return b.value(arith.SelectOp(over, b.sub_i(v, b.const(q)), v)), b.value(arith.SelectOp(over, b.const(1), b.const(0)))

    ahead_stats = bp.stats_ahead and norms
    nstats = (1 + (op.mean is not None)) if ahead_stats else 0

    def stats_of(b: Emitter, row: SSAValue) -> list[SSAValue]:
        """The stored statistics of ``row`` (clamped to the rows 0 to M - 1: a unit's row
        past its last reads row M - 1's, unused), rstd then the mean."""
        last = b.sub_i(rows, b.const(1, i64))
        row = b.value(arith.SelectOp(b.cmp("slt", row, last), row, last))
        row = b.value(arith.SelectOp(b.cmp("slt", row, b.const(0, i64)), b.const(0, i64), row))
        st = read_stats(SimpleNamespace(op=op), b, row)  # type: ignore[arg-type]
        return [st["rstd"]] + ([st["mean"]] if "mean" in st else [])

    def row_body(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        # the CTA's row count, the slot of its slice 2 x count (x's) and that slice's lap's parity
        count, base, lap, acc = carried[0], carried[1], carried[2], carried[3 + nstats:]
        b.bar_sync()  # every thread has read the slots of the CTA's previous row
        for j in range(pn):  # pieces P count + Q - P to + Q - 1 (P: 2, or HALVES' 4): this row's or the next
            # rows' (all but this row's are free)
            ahead(b, row, q - pn + j, wrap(b, b.add_i(base, q - pn + j))[0])
        grads: list[list[SSAValue]] | None = None

        def row_of(base0: SSAValue, rs: int) -> RowBuf:
            """The thread's first vector of this row of a global tensor (rows ``rs`` elements apart)."""
            return RowBuf(d, b.ptr_add(b.ptr_add(base0, b.mul_i(row, rs * d.bytes)), b.mul_i(sw, vec * d.bytes)))

        if tn == 1:  # the thread's vectors of dy into registers (in flight over the wait for x's slice)
            gbuf = row_of(g0, sg)
            grads = [gbuf.load(b, k * p.group, vec) for k in range(per)]
        y = RowBuf(d, b.ptr_add(b.ptr_add(y0, b.mul_i(row, p.sy * d.bytes)), b.mul_i(sw, vec * d.bytes)))
        w = None
        if bp.weight_bytes and wd:  # the thread's first vector of the CTA's weight slice
            w = RowBuf(wd, b.ptr_add(b.ptr_add(buf, q * piece), b.mul_i(tid, vec * wd.bytes)))
        elif w0 is not None and wd:
            w = RowBuf(wd, b.ptr_add(w0, b.mul_i(sw, vec * wd.bytes)))  # (from L1 or L2: the same every row)
        r = RowState(p, op, tid, tid, None, y, w, None, None, first if c > 1 else None, rank, parity=count,  # type: ignore[arg-type]
                 sw=sw, exchange=exchange)
        if ahead_stats:  # this row's, loaded over the previous row; the next row's loaded now, over this one
            have = carried[3:3 + nstats]
            st = {"rstd": have[0], **({"mean": have[1]} if nstats > 1 else {})}
            soon = stats_of(b, b.add_i(row, stride))
        else:
            st = read_stats(r, b, row) if norms else {}  # (in flight over the wait)
            soon = []
        here = []

        def wait(c1: Emitter, t: int) -> None:
            """Piece 2 count + t (HALVES: 4 count + t): its slot and its phase (the parity of its uses before)."""
            slot, wrapped = wrap(c1, c1.add_i(base, t)) if t else (base, None)
            phase = c1.and_b32(c1.add_i(lap, wrapped), 1) if wrapped is not None else lap
            wait_phase(c1, c1.ptr_add(loaded, c1.mul_i(slot, 8)), phase)
            here.append(c1.ptr_add(mine, c1.mul_i(slot, piece)))

        for t in range(tn):
            wait(b, t)
        def wait_second_halves(c1: Emitter) -> None:
            for t in range(tn, pn):
                wait(c1, t)

        # (half slices: the second halves' pieces waited for before the first pass's second half)
        mid = wait_second_halves if bp.halves else None
        srcs: tuple[Source, Source] = (Halves(here, 0, tn) if bp.halves else here[0],
                                       (Halves(here, 1, tn) if bp.halves else here[1]) if grads is None else grads)
        if norms:
            acc = _norm_row(r, b, row, st, srcs, per, acc, bp.weight_bytes > 0, bp.lean_dx, bp.words, mid)
        else:
            _softmax_row(r, b, srcs, per)
        nxt, wrapped = wrap(b, b.add_i(base, pn))
        return [b.add_i(count, 1), nxt, b.and_b32(b.add_i(lap, wrapped), 1)] + soon + acc

    ctas = e.sreg(SpecialRegister.NCTAID_X)
    if p.m is None:
        assert m_arg is not None
        stride, rows = e.wide(e.shr_u32(ctas, c.bit_length() - 1) if c > 1 else ctas), m_arg
        kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(1, i64), IntegerAttr(units, i64)])
    else:
        stride, rows = e.const(units, i64), e.const(p.m, i64)
    start = e.wide(slot0)
    if bp.weight_bytes:  # the CTA's slice of the weight, once, after slot Q - 1 (its mbarrier: Q)
        assert w0 is not None and wd is not None
        require_alignment(w0, 16)
        wbar, wdst = e.ptr_add(loaded, 8 * q), e.ptr_add(buf, q * piece)
        wchunks = -(-bp.weight_bytes // CHUNK)

        def copy_weight(b: Emitter) -> list[SSAValue]:
            b.if_(b.cmp("eq", tid, 0),
                  lambda c1: c1.emit(MbarrierArriveExpectTxOp(wbar, c1.const(bp.weight_bytes), sink=True)) and [])
            off = b.wide(b.add_i(b.mul_i(rank, bp.weight_bytes), lane_chunk) if rank is not None else lane_chunk)
            size = b.const(CHUNK)
            if bp.weight_bytes % CHUNK:
                size = b.value(arith.SelectOp(b.cmp("eq", tid, wchunks - 1), b.const(bp.weight_bytes % CHUNK), size))
            b.emit(CpAsyncBulkSharedCtaGlobalOp(b.ptr_add(wdst, lane_chunk), b.ptr_add(w0, off), size, wbar))
            return []

        e.if_(e.cmp("ult", tid, wchunks), copy_weight)
    for k in range(q - pn):  # the unit's first Q - 2 slices (Q - 1 with dy in registers) into slots 0, 1, ...
        ahead(e, start, k, k)
    if bp.weight_bytes:
        wait_phase(e, e.ptr_add(loaded, 8 * q), e.const(0))
    acc0 = [e.const(0.0, f32)] * (per * vec * len(outs))
    stats0 = stats_of(e, start) if ahead_stats else []
    done = e.for_(start, rows, stride, [e.const(0), e.const(0), e.const(0)] + stats0 + acc0, row_body)
    if c > 1:  # no CTA leaves while a peer may still store into its shared memory
        e.cluster_sync()
    if outs:
        lay = ColumnSums(len(outs), units, p.n, c, extra=1 if bp.tail_spread else 0)
        ws = e.ptr(add_workspace(kernel, lay.bytes), StateSpace.GLOBAL)
        r = RowState(p, op, tid, tid, None, None, None, None, None, first if c > 1 else None, rank, sw=sw)  # type: ignore[arg-type]
        write_column_partials(e, r, done[3 + nstats:], ws, lay, slot0, 1, None)
        finish_columns(e, p, op, ws, lay, tid, ctas, slot0, rank, ahead=bp.tail_loads, spread=bp.tail_spread)
    rewriter.erase(op)


ROWS_BULK_BACKWARD = Variant(
    "bulkred.normalize_rows", "rows_bulk_backward", priority=26,
    predicates=[
        *row_predicates(None, ""),
        Predicate("target", lambda op, t: (CLUSTER_LAUNCH.satisfied_by(t), t.name), expected="sm_90 or newer (bulk copies, clusters)"),
        Predicate("kind", _kind, expected="softmax_backward, log_softmax_backward, rms_norm_backward, layer_norm_backward"),
        Predicate("slices", _fits, expected=f"whole 16-byte chunks per CTA, 16-byte row strides, <= {MAX_VALUES} column sums a thread"),
        Predicate("measured", _chosen, expected="the rows measured faster (rows_bulk_backward.CHOSEN)"),
    ],
    lower=lower_rows_bulk_backward,
)
