"""bulkred.normalize_rows -> rows_bulk (priority 25, where :data:`CHOSEN` has the row): a row held in shared memory, copied
there by ``cp.async.bulk``, one CTA or a cluster of 2 to 16 CTAs per row.

A row of ``B`` bytes is split into ``C`` slices of at most :data:`SLICE_BYTES` (``C`` a
power of two, at most :data:`MAX_CLUSTER`: 16 needs the non-portable cluster size, which
the launch sets); CTA rank r of the row's cluster takes slice r. Per row:

* every thread reaches a CTA barrier (the slice of the CTA's previous row is read);
  thread 0 announces the slice's bytes to the CTA's mbarrier (``arrive.expect_tx``) and
  lanes 0, 1, ... of warp 0 copy it from global memory in chunks of :data:`CHUNK` bytes
  (``cp.async.bulk.shared::cta.global``, completing on that mbarrier): no register
  holds a load in flight, so the CTA needs few registers and several CTAs share a
  multiprocessor, one's copy overlapping another's arithmetic;
* every thread waits for the slice (``mbarrier.try_wait.parity``) and reads its vectors
  ``t, t + T, ...`` from shared memory once per pass: the statistics (softmax: the
  thread's maximum, then its sum of ``exp(x - m)``; rms_norm: the sum of squares;
  layer_norm: the sum, then the sum of squared deviations from the mean), combined in the
  CTA and then across the cluster by pushes (``st.async`` into every peer's slot,
  mbarrier transaction counts: ``rows_common._cluster_push``), then ``y`` from a last
  pass, written to global memory.

One read of x from global memory, one write of y. The configuration (cluster size,
threads, vectors per thread) is a function of N and the element type only; every CTA of
a cluster combines the same slots in rank order: batch-invariant bits.

It takes the forward kinds (softmax, log_softmax, rms_norm, layer_norm, cross_entropy;
add_rms_norm with x's and the residual's slices both copied, where :data:`CHOSEN` names
it, none yet: ``_add_body``), rows whose slices are whole 16-byte chunks (N x the element size a
multiple of 16 x C, the row strides of x multiples of 16 bytes), on sm_90 or newer, where
measured faster than the other variants (:data:`CHOSEN`). Spec: docs/rows.md; PTX ISA
cp.async.bulk, mbarrier, st.async, mapa.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, f32, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.dtypes import of_ir
from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR, MIN_CTAS_ATTR
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.bulk import CpAsyncBulkSharedCtaGlobalOp
from bulkred_dialect.ops.ptx.arith import Ex2Op
from bulkred_dialect.ops.ptx.control import CvtOp, CvtType
from bulkred_dialect.ops.ptx.memory import LdStType
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.sync import FenceMbarrierInitOp, FenceProxyAsyncOp, MbarrierArriveExpectTxOp, MbarrierInitOp
from bulkred_dialect.ops.target import CLUSTER_LAUNCH, Target
from bulkred_dialect.ops.tile import ReduceKind, enclosing_kernel
from bulkred_dialect.ops.tile.rows import NormalizeRowsOp, NormKind, row_stride
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.predicates import Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import require_alignment, set_launch
from bulkred_dialect.passes.variants.kernel import emitter_at
from bulkred_dialect.passes.variants import rows_common
from bulkred_dialect.passes.variants.rows_common import (
    setting_of,
    half_as_bfloat16,
    wait_phase,
    BF16,
    AT,
    EXP_KINDS,
    F32,
    ClusterExchange,
    PairSums,
    RowBuf,
    clamp_max,
    exp_shifted,
    load_vec,
    packed_bf16,
    raw_load,
    widen_raw,
    RowState,
    f32_add,
    f32_mul,
    f32_sub,
    dtype_of,
    plan,
    reduce_state,
    registers_row,
    row_predicates,
    vector_of,
)
from bulkred_dialect.passes.variants.rows_lower import reduce_loss, rows_parameter

SLICE_BYTES = 32768
"""The most bytes of a row one CTA holds (the row's bytes over the cluster's CTAs)."""
MAX_CLUSTER = 16
BLOCK = 512
"""Threads per CTA (fewer, down to 128, where the slice's vectors are not a multiple)."""
MIN_BLOCK = 128
UNROLL = 4
"""Vectors a thread reads from shared memory per step of a pass (a loop where it has more)."""
CHUNK = 16384
"""Bytes per ``cp.async.bulk`` (each a lane of warp 0)."""
BUFFERS = 2
"""Slices a CTA holds in a persistent grid: 2, the next row's copied while this one is
computed; 1, the copy after the previous row is done."""
PERSISTENT: bool | None = None
"""True: a grid of the units the multiprocessors hold, each looping over its rows (a CTA
prefetching its next row); False: a unit (CTA or cluster) per row, scheduled by the
hardware as units finish (no unit waits for a whole later wave); None: persistent for a
CTA per row, one row per cluster."""
MIN_CTAS: int | None = 2
"""CTAs a multiprocessor must hold (``.minnctapersm``: ptxas keeps the registers per thread
within 65536 / (that x T)), so that one CTA's copy or exchange overlaps another's
arithmetic; None: ptxas's choice."""
SHARED_PER_SM = 227 * 1024
"""Shared memory a multiprocessor gives its CTAs (sm_90: 227 KiB)."""
REGISTERS = False
"""The default of :attr:`Setting.registers` (rows of :data:`CHOSEN` whose setting is None,
the probe's forced settings): False, the passes over shared memory."""
EARLY_AFFINE = False
"""The default of :attr:`Setting.early_affine`."""
EARLY_COPY = False
"""The default of :attr:`Setting.early_copy`."""
EARLY_COPY_CTA: bool | None = None
"""A unit a row of one CTA, one slice buffer of one :data:`CHUNK` (float32 rows of 4096):
thread 0 issues the CTA's first row's copy right after it sets up the slice's mbarrier,
before the CTA barrier that publishes that mbarrier to the other threads (the default
issues it after two CTA barriers: that one and the rows loop's), so the copy's latency
overlaps the kernel's prologue (issue 30, section 4, small batches: float32 softmax,
rms_norm and layer_norm at M = 1 to 64 are 0.3 to 0.5 us over the best anchor's). The same
row arithmetic: the same bits. None: :data:`EARLY_COPY_CTA_MEASURED` decides; True / False:
everywhere or nowhere (the probe, the tests). Measured by ``PROBE_ARGS="--budget-s 120" bash
tools/gpu.sh probe:rows_small``."""
EARLY_COPY_CTA_MEASURED: dict[str | tuple[str, str], tuple[tuple[int, int], ...]] = half_as_bfloat16({
    # (tools/probes/rows_small.py on an H200, 2026-11-29 seventh session: GPU time x the
    # default's at M = 1 / 8 / 64 / 8192, the same bits: softmax 0.941 / 0.950 / 0.955 /
    # 0.995, rms_norm 0.939 / 0.948 / 0.934 / 0.996, layer_norm 0.953 / 0.956 / 0.949 / 0.989)
    ("softmax", F32.name): ((4096, 4096),),
    ("rms_norm", F32.name): ((4096, 4096),),
    ("layer_norm", F32.name): ((4096, 4096),),
})
"""Where :data:`EARLY_COPY_CTA` is on: ``(kind, element type's name)``, else the type's name ->
ranges of N (never M)."""


def _early_copy_cta(op: NormalizeRowsOp) -> bool:
    """:data:`EARLY_COPY_CTA` where not None, else whether :data:`EARLY_COPY_CTA_MEASURED` has ``op``'s N."""
    return setting_of(EARLY_COPY_CTA, EARLY_COPY_CTA_MEASURED, dtype_of(op).name, op.cols, op.norm_kind.value)
ONE_PASS: str | None = None
"""The default of :attr:`Setting.one_pass`: None, layer_norm's mean, then its variance
(two passes over shared memory, two exchanges)."""
ONLINE = False
"""The default of :attr:`Setting.online`."""
WEIGHT_SHARED = False
"""The default of :attr:`Setting.weight_shared`."""
MAX_UNITS: int | None = None
"""The default of :attr:`Setting.max_units`."""
FAST_EXP = False
"""The default of :attr:`Setting.fast_exp`. SASS (ptxas, sm_90a) of softmax bfloat16
262144's row, 64 values a thread, instructions a row / an element (the exchanges'
included): today's unit a row (the accurate exps, three passes) 1817 / 28.4; with
fast_exp 1276 / 19.9; with fold_sum too 1128 / 17.6; and words 1085 / 17.0 (at
``.minnctapersm`` 2, 44 to 68 bytes spilled: ptxas unrolls the passes); online, fold_sum
and words 1047 / 16.4 (no spill); the slice in registers with fast_exp and words, one exp
an element, 837 / 13.1 (108 registers). log_softmax bfloat16 262144's setting (0.917 of
copy) 1371 / 21.4, with fast_exp and words 981 / 15.3."""
FOLD_SUM = False
"""The default of :attr:`Setting.fold_sum`."""
AFFINE_REGISTERS = False
"""The default of :attr:`Setting.affine_registers`. SASS of layer_norm bfloat16 262144's
row (instructions a row / an element): today's (a unit a row, 64 values a thread, the
weight and bias read from L2, 32 LDG a row) 1253 / 19.6; with words 1157 / 18.1, and
one_pass "local" 1106 / 17.3; a persistent grid of 32 KiB slices, 256 threads (64
values), the weight and bias in registers, words: 1084 / 16.9 (no LDG in the row; 114
registers), with one_pass "local" 1029 / 16.1. float32 262144 today 528 / 16.5 (its
weight and bias 16 LDG.128 a row); in registers 508 / 15.9 (128 registers, no spill)."""
WORDS = False
"""The default of :attr:`Setting.words`."""
MAX_REGISTER_VALUES = 64
"""With :attr:`Setting.registers`, the most float32 values a thread holds (its share of
the slice: vectors per thread x V)."""

KINDS = (NormKind.SOFTMAX, NormKind.LOG_SOFTMAX, NormKind.RMS_NORM, NormKind.LAYER_NORM, NormKind.CROSS_ENTROPY,
         NormKind.ADD_RMS_NORM)
"""(add_rms_norm: x's and the residual's slices both copied, where :data:`CHOSEN` names it;
none does until an H200 measures it: tools/probes/rows_forward.py --set passes.)"""



@dataclass(frozen=True)
class Setting:
    """One configuration: slices of at most ``slice_bytes``, CTAs of ``block`` threads,
    ``.minnctapersm`` ``min_ctas``, a persistent grid or a unit per row (``persistent``,
    :data:`PERSISTENT`'s values) and ``buffers`` slice buffers in a persistent grid;
    ``registers``: each thread reads its share of the slice from shared memory once, into
    registers, and the statistics and y come from there (``rows_common.registers_row``,
    rows_warp's arithmetic: softmax's exponentials computed once, layer_norm's deviations
    from registers), instead of a pass over shared memory per statistic and one for y;
    layer_norm's mean and variance then in one exchange (:func:`registers_slice`);
    ``early_affine`` (with ``registers``): the thread's weight and bias values loaded from
    global memory with the slice's, before the statistics' exchange (their latency hidden
    behind it; more registers), instead of with each vector's y; ``early_copy`` (a cluster,
    one buffer): the CTA's first row's copy issued before the cluster barrier that
    publishes the exchange's mbarriers (after a CTA barrier that publishes the slice's),
    instead of after it: with a unit a row, the copy's latency overlaps that barrier.

    Settings of the passes over shared memory (issue 30, section 4; off until an H200
    measures them: ``tools/probes/rows_forward.py --set passes``): ``one_pass``
    (layer_norm): the mean and the variance from one pass and one exchange, the sums of
    ``d = x - c`` and ``d^2`` about a shift ``c``: ``"row"``, the row's first element,
    read from global memory by every thread while the slice is copied (two plain sums,
    :class:`rows_common.PairSums`; ``var = (S2 - S1^2 / n) / n`` loses up to ``n (x0 -
    mean)^2 / var`` ulps where the first element is far out: rstd 2e-3 off at N = 65536
    for a first element 1000 spreads out, a massive first channel); ``"thread"``, each
    thread's own shift, the mean of its first step of :data:`UNROLL` vectors, its
    ``(n, c, sum d^2, sum d)`` combined as :class:`Moments` (Chan's formula about the
    parts' joint centre, ``sum d`` carried: exact algebra) in one exchange: the
    cancellation bounded by the thread's own values (rstd within 1e-7 of float64 on those
    rows, as the default's); ``"local"`` (issue 30, section 4, ``--set affine``): the
    thread's shift as ``"thread"``'s, its own ``m2 = S2 - S1^2 / n_t`` (the cancellation
    bounded by its own values: its shift is the mean of some of them), then two scalar
    exchanges as the default's, the row's sum (``n_t c + S1`` a thread) and, after it, the
    threads' ``m2 + n_t (c + S1 / n_t - mean)^2`` (a sum of positive terms about the row's
    mean): one pass over shared memory fewer than the default, no 4-wide Chan exchange;
    ``online`` (softmax, log_softmax, cross_entropy): the maximum and
    the sum of ``exp(x - m)`` in one pass, ``m`` raised once per step of :data:`UNROLL`
    vectors and the sum rescaled by ``exp(m_old - m)`` (one exp more per step), instead of
    a pass for the maximum and one for the sum; ``weight_shared`` (rms_norm, add_rms_norm, layer_norm):
    the CTA's slices of the weight and bias copied into shared memory once, before the
    rows loop (``cp.async.bulk`` on an mbarrier of their own), and y's pass reading them
    there instead of from global memory (L2) per row: a persistent grid reads them once
    per CTA, a unit a row with its row's copy (their latency hidden behind it); taken
    where the slices are whole 16-byte chunks and fit in shared memory beside the row's
    (the weight and bias must then start at 16-byte addresses: the launch refuses others);
    ``max_units`` (a persistent grid): at most that many units (clusters) in the grid, so
    that all of them are resident at once (a cluster of 16 sits in one GPC: an H200 holds
    7, not 132 / 16, rows_bulk_backward.CLUSTERS; the 8th unit's rows ran in a second
    wave).

    Settings of the per-element arithmetic (issue 30, section 4; off until an H200 measures
    them: ``tools/probes/rows_forward.py --set fastexp`` / ``--set affine``; SASS per element
    in the docstring of :data:`FAST_EXP`): ``fast_exp`` (softmax, log_softmax,
    cross_entropy): every ``exp(x - m)`` of the row (the statistics' passes, softmax's y,
    the (m, s) exchange's factors) as ``ex2.approx.ftz((x - m) log2(e))``
    (``rows_common.exp_shifted``, :data:`rows_common.FAST_EXP`'s form: FADD, FMUL,
    MUFU.EX2 an element instead of the non-``.ftz`` ex2's FADD, FMUL, FSETP, two predicated
    FMUL and MUFU.EX2); off, the statistics' passes take the accurate form and y's pass and
    the exchange what ``rows_common.FAST_EXP_MEASURED`` says (bfloat16 to 65536: fast).
    ``fold_sum`` (softmax, the passes over shared memory; not with ``registers``, whose y
    is the exps kept times one factor): y as ``ex2.approx.ftz(fma(x - m, log2(e),
    -log2(sum)))``, the division by the sum folded into the exponent (FADD, FFMA, MUFU.EX2
    an element instead of FADD, FMUL, MUFU.EX2, FMUL; the argument's rounding up to
    ``|arg| 2^-24``: about 1e-6 of y, far below a bfloat16 ulp, ten float32 ulps).
    ``affine_registers`` (layer_norm, rms_norm; a persistent grid, without
    ``weight_shared``): each thread's weight and bias values loaded from global memory into
    registers once, before the rows loop (bfloat16 two to a 32-bit register), and y's pass
    unrolled (with ``registers``: as it is) to read them there, instead of from L2 per row (as many bytes again as x's for each)
    or from shared memory (whose room then holds the slice buffers). ``words`` (bfloat16
    vectors of 2 or 4): each vector read from shared memory (the slice's, with
    ``registers`` too, and ``weight_shared``'s) as 32-bit words, each widened to two
    float32 by a shift and a mask (``rows_common.widen_raw``: one instruction an element)
    instead of ``cvt.f32.bf16`` an element (ptxas: PRMT and SHF for the high half); the
    same values, the same bits."""

    slice_bytes: int
    block: int
    min_ctas: int | None
    persistent: bool | None
    buffers: int
    registers: bool = False
    early_affine: bool = False
    early_copy: bool = False
    one_pass: str | None = None
    online: bool = False
    weight_shared: bool = False
    max_units: int | None = None
    fast_exp: bool = False
    fold_sum: bool = False
    affine_registers: bool = False
    words: bool = False


_ROW = Setting(65536, 512, 2, False, 1)  # a unit per row of 64 KiB slices (the long rows)
_NOT_CE = ("softmax", "log_softmax", "rms_norm", "layer_norm")  # (cross_entropy reads its row once in rows_stream)

CHOSEN: list[tuple[str, tuple[str, ...] | None, int, int, Setting | None]] = [
    # (tools/probes/rows_forward.py --set quack16 on an H200, the eighth session of 2026-11-29, x copy, median of 5
    # rounds: the dispatch's rows_cta -> a CTA a row, the row in shared memory, passes over it) layer_norm
    # bfloat16 4096 0.925 -> 0.973 (128 threads, .minnctapersm 10, the statistics in one pass about each
    # thread's shift). (softmax bfloat16 4096's 0.981 here is rows_cta's a CTA a row instead, 0.971: the same
    # target, and its small batches' GPU time stays rows_cta's (M = 1: 1.9 us against this row's 2.2, run8))
    (BF16.name, ("layer_norm",), 4096, 4096, Setting(8192, 128, 10, False, 1, one_pass="local", words=True)),
    # (--set quack32, the same session: add_rms_norm bfloat16 1024, which rows_warp leaves to rows_bulk,
    # rows_warp.YIELD_MEASURED) a CTA of 128 a row, the row and the residual in shared memory: 0.942 -> 0.999
    (BF16.name, ("add_rms_norm",), 1024, 1024, Setting(2048, 128, None, False, 1, words=True)),
    # (tools/probes/rows_sweep.py on an H200, the seventh session of 2026-11-29, x copy: the dispatch's ->
    # this row) cross_entropy bfloat16 16384 (rows_cta) 0.902 -> 0.960; add_rms_norm float32 65536
    # (rows_cluster) 0.907 -> 0.943
    (BF16.name, ("cross_entropy",), 16384, 16384,
     Setting(32768, 256, 2, True, 2, registers=True, max_units=264, fast_exp=True, words=True)),
    (F32.name, ("add_rms_norm",), 65536, 65536, Setting(32768, 512, None, True, 2, weight_shared=True, max_units=15)),
    # (tools/probes/rows_forward.py --set fastexp and --set affine on an H200, 2026-11-29 later, x copy: the
    # dispatch's -> this row; fast exp, y's exp with the sum folded in, the weight and bias in registers, the
    # 16-bit vectors read as words, layer_norm's one pass about each thread's own shift)
    # softmax bfloat16 262144 0.790 -> 0.917, 65536 0.885 -> 0.942
    (BF16.name, ("softmax",), 262144, 262144,
     Setting(65536, 512, None, True, 2, registers=True, max_units=15, fast_exp=True, words=True)),
    (BF16.name, ("softmax",), 65536, 65536,
     Setting(65536, 256, 2, False, 1, early_copy=True, fast_exp=True, fold_sum=True, words=True)),
    # layer_norm bfloat16 262144 0.749 -> 0.921, float32 0.783 -> 0.911; 65536 bfloat16 0.812 -> 0.889,
    # float32 0.815 -> 0.918; rms_norm bfloat16 262144 0.922 -> 0.932 (65536: the dispatch's kept)
    (BF16.name, ("layer_norm",), 262144, 262144,
     Setting(65536, 512, None, True, 2, one_pass="local", max_units=15, affine_registers=True, words=True)),
    (F32.name, ("layer_norm",), 262144, 262144, Setting(65536, 512, None, True, 2, max_units=7, affine_registers=True)),
    (BF16.name, ("layer_norm",), 65536, 65536,
     Setting(65536, 512, None, True, 2, one_pass="local", affine_registers=True, words=True)),
    (F32.name, ("layer_norm",), 65536, 65536,
     Setting(32768, 256, 2, True, 2, one_pass="local", max_units=30, affine_registers=True)),
    (BF16.name, ("rms_norm",), 262144, 262144,
     Setting(32768, 256, 2, True, 2, max_units=14, affine_registers=True, words=True)),
    # (tools/probes/rows_forward.py --set logsoftmax on an H200, the eighth session of 2026-11-29, x copy:
    # the dispatch's -> this row, with rows_common.LOG_SOFTMAX_LSE) log_softmax bfloat16 65536 0.882 -> 0.942
    (BF16.name, ("log_softmax",), 65536, 65536,
     Setting(65536, 256, 2, False, 1, early_copy=True, online=True, fast_exp=True, words=True)),
    # (tools/probes/rows_forward.py --set passes on an H200, 2026-11-29, x copy: the dispatch's ->
    # this row; a persistent grid capped at the clusters the GPU holds at once, rows_bulk_backward.CLUSTERS)
    # log_softmax float32 262144 0.823 -> 0.910, bfloat16 0.676 -> 0.917
    (F32.name, ("log_softmax",), 196609, 262144,
     Setting(65536, 512, None, True, 2, online=True, max_units=7)),
    (BF16.name, ("log_softmax",), 196609, 262144,
     Setting(65536, 512, None, True, 2, online=True, max_units=15)),
    # softmax float32 262144 0.886 -> 0.923 (bfloat16: the dispatch's, 0.794, kept)
    (F32.name, ("softmax",), 196609, 262144, Setting(65536, 256, None, True, 2, early_copy=True, max_units=7)),
    # rms_norm float32 262144 0.759 -> 0.930, bfloat16 0.738 -> 0.922
    (F32.name, ("rms_norm",), 196609, 262144,
     Setting(65536, 512, None, True, 2, registers=True, weight_shared=True, max_units=7)),
    (BF16.name, ("rms_norm",), 196609, 262144, Setting(65536, 512, None, True, 2, weight_shared=True, max_units=15)),
    # add_rms_norm bfloat16 262144 (rows_cluster) 0.885 -> 0.931 (float32: rows_cluster's 0.881 kept)
    (BF16.name, ("add_rms_norm",), 196609, 262144, Setting(32768, 512, None, True, 2, weight_shared=True, max_units=7)),
    # layer_norm float32 262144 0.696 -> 0.808, bfloat16 0.659 -> 0.751; 65536 (float32 on rows_cluster)
    # 0.802 -> 0.819, bfloat16 0.748 -> 0.820
    (F32.name, ("layer_norm",), 196609, 262144, Setting(65536, 512, None, True, 2, max_units=7)),
    (BF16.name, ("layer_norm",), 196609, 262144, Setting(65536, 512, 3, False, 1)),
    (F32.name, ("layer_norm",), 65536, 65536, Setting(65536, 512, 3, False, 1)),
    (BF16.name, ("layer_norm",), 32769, 65536, Setting(65536, 512, 3, False, 1)),
    # log_softmax float32 65536 (rows_cluster) 0.864 -> 0.926
    (F32.name, ("log_softmax",), 65536, 65536, Setting(65536, 512, 3, False, 1, online=True)),
    (F32.name, _NOT_CE, 4096, 4096, Setting(16384, 256, 2, False, 1)),
    (F32.name, _NOT_CE, 65537, 196608, _ROW),
    # (float32 softmax 262144, tools/probes/rows_forward.py --set long on an H200, 2026-11-29: the
    # first row's copy before the cluster barrier 0.881 of copy against 0.832)
    (F32.name, ("softmax",), 196609, 262144, Setting(65536, 256, 2, False, 1, early_copy=True)),
    (F32.name, _NOT_CE, 196609, 262144, Setting(65536, 512, 3, False, 1)),
    # (bfloat16 16384 layer_norm and log_softmax: rows_cta pipelined measured faster, 0.947 / 0.916 of copy against 0.867 / 0.878)
    # (bfloat16 cross_entropy 16384: rows_cta with FAST_EXP and 2 CTAs a multiprocessor measured faster, 0.858
    # of copy against 0.716: rows_cta.MIN_CTAS_MEASURED)
    # (bfloat16 rows of two slices, measured at 65536 (--set long, same run): the slice in
    # registers, a persistent grid of two slice buffers: softmax 0.900 / 0.894 of copy,
    # log_softmax 0.885 / 0.780, rms_norm 0.915 / 0.819; layer_norm slower, 0.714 / 0.750)
    (BF16.name, ("softmax", "log_softmax", "rms_norm"), 32769, 65536, Setting(65536, 512, 1, True, 2, registers=True)),
    (BF16.name, _NOT_CE, 16385, 262144, _ROW),
]
"""Where rows_bulk was measured faster than the other variants on an H200 (docs/rows.md,
tools/probes/rows_forward.py), and with which setting: (element type, kinds (None: all),
N from, N to, the setting (None: the module's defaults :data:`SLICE_BYTES`, :data:`BLOCK`,
:data:`MIN_CTAS`, :data:`PERSISTENT`, :data:`BUFFERS`)). Elsewhere the dispatch passes it
by (a forced ``variant="rows_bulk"`` too). A function of the kind, N and the element
type only."""
CHOSEN = half_as_bfloat16(CHOSEN)  # float16 as bfloat16 where unmeasured


def setting_for(op: NormalizeRowsOp) -> Setting | None:
    """``op``'s row of :data:`CHOSEN` (its setting, or the defaults), None where none has it."""
    d, kind = dtype_of(op).name, op.norm_kind.value
    for dtype, kinds, lo, hi, setting in CHOSEN:
        if dtype == d and lo <= op.cols <= hi and (kinds is None or kind in kinds):
            return setting or _defaults()
    return None


def _defaults() -> Setting:
    return Setting(SLICE_BYTES, BLOCK, MIN_CTAS, PERSISTENT, BUFFERS, REGISTERS, EARLY_AFFINE, EARLY_COPY, ONE_PASS,
                   ONLINE, WEIGHT_SHARED, MAX_UNITS, FAST_EXP, FOLD_SUM, AFFINE_REGISTERS, WORDS)


def _setting(op: NormalizeRowsOp) -> Setting:
    return setting_for(op) or _defaults()


def bulk_for(op: NormalizeRowsOp) -> tuple[int, int, int, int]:
    """(CTAs per cluster, threads per CTA, vectors per thread, a slice's bytes) for
    ``op``'s kind, N and element type."""
    st = _setting(op)
    d = dtype_of(op)
    row = op.cols * d.bytes
    c = 1
    while c < MAX_CLUSTER and row > c * st.slice_bytes:
        c *= 2
    slice_bytes = row // c
    vectors = slice_bytes // (vector_of(op) * d.bytes)
    block = st.block
    while block > MIN_BLOCK and vectors % block:
        block //= 2
    return c, block, max(1, vectors // block), slice_bytes


def _fits(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    d = dtype_of(op)
    c, block, per, slice_bytes = bulk_for(op)
    vec_bytes = vector_of(op) * d.bytes
    copied = [op.x, op.residual] if op.norm_kind == NormKind.ADD_RMS_NORM else [op.x]  # (the tensors copied by slices)
    ok = (vector_of(op) > 1 and op.cols * d.bytes == c * slice_bytes and slice_bytes % 16 == 0
          and slice_bytes == block * per * vec_bytes
          and all(t is not None and row_stride(t.type) * d.bytes % 16 == 0 for t in copied)  # type: ignore[arg-type]
          and len(copied) * slice_bytes <= SHARED_PER_SM)
    st = _setting(op)
    if len(copied) > 1 or st.weight_shared:  # (their buffers, each slice buffer's copies and the staged weight, must fit)
        persistent = st.persistent if st.persistent is not None else c == 1
        ok = ok and len(copied) * (st.buffers if persistent else 1) * slice_bytes + affine_staged(op, st) <= SHARED_PER_SM
    held = per * vector_of(op)
    if _setting(op).registers and op.norm_kind != NormKind.ADD_RMS_NORM:  # the thread's share of the slice in registers
        ok = ok and held <= MAX_REGISTER_VALUES
        return ok, (f"N = {op.cols} ({d.name}): {c} CTAs of {block} threads, {slice_bytes} bytes each, "
                    f"{held} values a thread in registers (at most {MAX_REGISTER_VALUES})")
    return ok, f"N = {op.cols} ({d.name}): {c} CTAs of {block} threads, {slice_bytes} bytes each"


def _kind(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    return op.norm_kind in KINDS, op.norm_kind.value


def _chosen(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, NormalizeRowsOp)
    return setting_for(op) is not None, f"{op.norm_kind.value}, {dtype_of(op).name}, N = {op.cols}"


def copy_slice(b: Emitter, tid: SSAValue, lane_chunk: SSAValue, rank: SSAValue | None, base: SSAValue, row: SSAValue,
               row_bytes: int, buf: SSAValue, mbars: SSAValue, slot: SSAValue | int, slice_bytes: int) -> None:
    """The copy of the CTA's slice of ``row`` of the global tensor at ``base`` (rows
    ``row_bytes`` apart; a cluster's CTA ``rank`` its ``rank``-th slice) into slot ``slot``
    of the shared buffer ``buf`` (slots ``slice_bytes`` apart): lanes of warp 0 copy a
    chunk of :data:`CHUNK` bytes each (``lane_chunk``: the thread's ``tid * CHUNK``;
    ``cp.async.bulk.shared::cta.global``), completing
    on the slot's mbarrier (``mbars``, 8 bytes apart), to which thread 0 first announces
    the slice's bytes (after a proxy fence: the slot's earlier reads before the copy's
    writes). rows_bulk's buffers and rows_bulk_backward's ring of slots."""
    chunks = -(-slice_bytes // CHUNK)
    mbar = b.ptr_add(mbars, slot * 8 if isinstance(slot, int) else b.mul_i(slot, 8))
    dst = b.ptr_add(buf, slot * slice_bytes if isinstance(slot, int) else b.mul_i(slot, slice_bytes))

    def copy(c0: Emitter) -> list[SSAValue]:
        def announce(c1: Emitter) -> list[SSAValue]:
            c1.emit(FenceProxyAsyncOp(StateSpace.SHARED_CTA))
            c1.emit(MbarrierArriveExpectTxOp(mbar, c1.const(slice_bytes), sink=True))
            return []

        c0.if_(c0.cmp("eq", tid, 0), announce)
        row_x = c0.ptr_add(base, c0.mul_i(row, row_bytes))
        src = c0.ptr_add(row_x, c0.wide(c0.add_i(c0.mul_i(rank, slice_bytes), lane_chunk) if rank is not None else lane_chunk))
        size = c0.const(CHUNK)
        if slice_bytes % CHUNK:  # the last chunk's bytes
            size = c0.value(arith.SelectOp(c0.cmp("eq", tid, chunks - 1), c0.const(slice_bytes % CHUNK), size))
        c0.emit(CpAsyncBulkSharedCtaGlobalOp(c0.ptr_add(dst, lane_chunk), src, size, mbar))
        return []

    b.if_(b.cmp("ult", tid, chunks), copy)


def _body(r: RowState, e: Emitter, row: SSAValue, xs: SSAValue, per: int, st: Setting | None = None,
          shift: SSAValue | None = None, rs: SSAValue | None = None) -> None:
    """One row's statistics and y from the thread's ``per`` vectors in shared memory
    (``xs``: its first; the next ones ``T`` vectors apart), one pass per statistic and a
    last one for y; each pass a loop of :data:`UNROLL` vectors a step (so that ptxas
    keeps a few vectors in registers, not the thread's whole share). ``st``'s
    ``one_pass`` and ``online`` make the statistics one pass (:class:`Setting`;
    ``shift``: one_pass ``"row"``'s shift, the row's first element). add_rms_norm
    (``rs``: the thread's first vector of the residual's slice): ``h = x + residual``
    rounded to x's type, written to residual_out in the pass of the sum of squares, and
    made again from both slices in y's pass."""
    p = r.p
    if rs is not None:
        _add_body(r, e, row, xs, rs, per)
        return
    step = p.block * p.vec * p.dtype.bytes
    u = UNROLL if per > UNROLL and per % UNROLL == 0 else per

    words = st is not None and st.words and packed_bf16(p.dtype, p.vec) and k_step_fits(per, step)

    def vals(b: Emitter, base: SSAValue, k: int) -> list[SSAValue]:
        if words:  # (Setting.words: the vector's 32-bit words, each widened by a shift and a mask)
            raw = (b.ld_vec(LdStType.B32, base, i32, p.vec // 2, k * step, nc=False) if p.vec > 2
                   else [b.ld(LdStType.B32, base, i32, k * step)])
            return widen_raw(b, p.dtype, raw, p.vec)
        return load_vec(b, p.dtype, base, k * step, p.vec, nc=False)

    def pass_(fold, init: float) -> SSAValue:
        """``fold(b, acc, values)`` over the thread's vectors in order, from ``init``."""
        if u == per:
            acc = e.const(init, f32)
            for k in range(per):
                acc = fold(e, acc, vals(e, xs, k))
            return acc

        def body(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            base = b.ptr_add(xs, b.mul_i(b.value(CvtOp(CvtType.U32, CvtType.U64, iv, i32)), step))
            acc = args[0]
            for k in range(u):
                acc = fold(b, acc, vals(b, base, k))
            return [acc]

        return e.for_(0, per, u, [e.const(init, f32)], body)[0]

    def steps(fold, init: list[SSAValue]) -> list[SSAValue]:
        """``fold(b, accs, vectors)`` over the thread's vectors, a step of ``u`` at a
        time (all ``per`` at once where ``u`` is ``per``), from ``init``."""
        if u == per:
            return fold(e, init, [vals(e, xs, k) for k in range(per)])

        def body(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            base = b.ptr_add(xs, b.mul_i(b.value(CvtOp(CvtType.U32, CvtType.U64, iv, i32)), step))
            return fold(b, list(args), [vals(b, base, k) for k in range(u)])

        return e.for_(0, per, u, init, body)

    def total(b: Emitter, a: SSAValue, v: list[SSAValue]) -> SSAValue:
        return b.fold(ReduceKind.SUM, F32, [a, *v])

    kind = p.kind

    def exp_stats(big: SSAValue, sum_e: SSAValue) -> dict[str, SSAValue]:
        """The row's maximum and sum of exponentials (and cross_entropy's sum of x, with
        label smoothing), finished."""
        sums = {"max": big, "sum": sum_e}
        if kind == NormKind.CROSS_ENTROPY and r.op.smoothing:
            sums["sum_x"] = r.reduce(e, ReduceKind.SUM, pass_(total, 0.0), "row_sum_x")
        return r.finish(e, sums)

    one_pass = st.one_pass if st is not None and kind == NormKind.LAYER_NORM else None
    fast = st is not None and st.fast_exp  # (off: exp_shifted's default form, f32_exp of the difference)
    if kind in EXP_KINDS and st is not None and st.online:
        def online(b: Emitter, acc: list[SSAValue], vs: list[list[SSAValue]]) -> list[SSAValue]:
            flat = [x for v in vs for x in v]
            big = b.minmax(ReduceKind.MAX, AT, acc[0], b.fold(ReduceKind.MAX, F32, flat))  # (NaN propagates)
            scaled = f32_mul(b, acc[1], exp_shifted(b, acc[0], big, fast))
            return [big, b.fold(ReduceKind.SUM, F32, [scaled, *[exp_shifted(b, x, big, fast) for x in flat]])]

        m, s = steps(online, [e.const(-rows_common.FLT_MAX, f32), e.const(0.0, f32)])  # (m >= -FLT_MAX: no -inf - -inf)
        stats = exp_stats(*r.reduce_exps(e, m, s, True if fast else None))
        if kind == NormKind.CROSS_ENTROPY:  # no y
            r.store_stats(e, row, stats)
            return
    elif one_pass is not None:
        if one_pass == "row":  # (every thread's shift the same, the row's first element: plain sums)
            c = shift
        else:  # "thread", "local": the mean of the thread's first step of values (its first u vectors)
            first = [x for k in range(u) for x in vals(e, xs, k)]
            c = f32_mul(e, e.fold(ReduceKind.SUM, F32, first), e.const(1.0 / len(first), f32))
        assert c is not None

        def shifted(b: Emitter, acc: list[SSAValue], vs: list[list[SSAValue]]) -> list[SSAValue]:
            s1, s2 = acc
            for v in vs:
                for x in v:
                    d = f32_sub(b, x, c)
                    s1, s2 = f32_add(b, s1, d), b.fma(AT, d, d, s2)
            return [s1, s2]

        s1, s2 = steps(shifted, [e.const(0.0, f32), e.const(0.0, f32)])
        args = (r.tid, p.block, p.group, p.cluster, r.parity)
        if one_pass == "local":  # (two scalar exchanges: the row's sum, then the threads' M2 about the row's mean)
            nt = float(per * p.vec)
            nf = e.const(float(p.n), f32)
            mean = e.div(AT, r.reduce(e, ReduceKind.SUM, e.fma(AT, e.const(nt, f32), c, s1), "row_sum"), nf)
            dm = f32_mul(e, s1, e.const(1.0 / nt, f32))  # the thread's mean less c
            m2 = e.minmax(ReduceKind.MAX, AT, f32_sub(e, s2, f32_mul(e, s1, dm)), e.const(0.0, f32))  # about its mean
            dev = f32_add(e, f32_sub(e, c, mean), dm)  # the thread's mean less the row's
            m2 = e.fma(AT, f32_mul(e, e.const(nt, f32), dev), dev, m2)  # about the row's mean: no cancellation
            stats = r.finish(e, {"mean": mean, "var": e.div(AT, r.reduce(e, ReduceKind.SUM, m2, "row_var"), nf)})
        elif one_pass == "row":
            centre, (s1, s2) = c, reduce_state(e, PairSums(), [s1, s2], *args, "row_shifted", r.exchange, r.rank)
        else:  # (each thread's own shift: combined as Moments, Chan's formula about the joint centre, s1 carried)
            _, centre, s2, s1 = reduce_state(e, Moments(), [e.const(float(per * p.vec), f32), c, s2, s1], *args,
                                             "row_moments", r.exchange, r.rank)
        if one_pass != "local":
            nf = e.const(float(p.n), f32)
            dm = e.div(AT, s1, nf)  # the mean less the shift
            var = e.div(AT, f32_sub(e, s2, f32_mul(e, s1, dm)), nf)
            stats = r.finish(e, {"mean": f32_add(e, centre, dm), "var": e.minmax(ReduceKind.MAX, AT, var, e.const(0.0, f32))})
    elif kind in EXP_KINDS:
        m = clamp_max(e, pass_(lambda b, a, v: b.fold(ReduceKind.MAX, F32, [a, *v]), float("-inf")))

        def exps(b: Emitter, a: SSAValue, v: list[SSAValue]) -> SSAValue:
            return b.fold(ReduceKind.SUM, F32, [a, *[exp_shifted(b, x, m, fast) for x in v]])

        stats = exp_stats(*r.reduce_exps(e, m, pass_(exps, 0.0), True if fast else None))
        if kind == NormKind.CROSS_ENTROPY:  # no y
            r.store_stats(e, row, stats)
            return
    elif kind == NormKind.RMS_NORM:
        def squares(b: Emitter, a: SSAValue, v: list[SSAValue]) -> SSAValue:
            for x in v:
                a = b.fma(AT, x, x, a)
            return a

        stats = r.finish(e, {"sq": r.reduce(e, ReduceKind.SUM, pass_(squares, 0.0), "row_sq")})
    else:
        nf = e.const(float(p.n), f32)
        mean = e.div(AT, r.reduce(e, ReduceKind.SUM, pass_(total, 0.0), "row_sum"), nf)

        def deviations(b: Emitter, a: SSAValue, v: list[SSAValue]) -> SSAValue:
            for x in v:
                d = f32_sub(b, x, mean)
                a = b.fma(AT, d, d, a)
            return a

        var = e.div(AT, r.reduce(e, ReduceKind.SUM, pass_(deviations, 0.0), "row_var"), nf)
        stats = r.finish(e, {"mean": mean, "var": var})
    fold = kind == NormKind.SOFTMAX and st is not None and st.fold_sum
    if fold:  # y = 2^(fma(x - m, log2(e), -log2(sum))): the sum's reciprocal in the exponent
        stats["neg_lg2_sum"] = f32_sub(e, e.const(0.0, f32), e.lg2(stats["sum"]))

    def write_item(b: Emitter, first: SSAValue | int, values: list[SSAValue], extra: int = 0) -> None:
        if kind == NormKind.SOFTMAX and (fast or fold):  # (else rows_common's y, its exp as FAST_EXP_MEASURED says)
            assert r.y is not None
            r.y.store(b, first, p.vec, [softmax_y(b, v, stats, fold) for v in values], extra)
        else:
            r.write_item(b, first, values, stats, extra)

    if u == per or isinstance(r.w, HeldBuf) or isinstance(r.b, HeldBuf):  # (the weight's or bias's registers: each vector's its own, unrolled)
        for k in range(per):
            write_item(e, k * p.group, vals(e, xs, k))
    else:
        def write(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            base = b.ptr_add(xs, b.mul_i(b.value(CvtOp(CvtType.U32, CvtType.U64, iv, i32)), step))
            for k in range(u):
                write_item(b, b.mul_i(iv, p.group), vals(b, base, k), k * p.group)
            return []

        e.for_(0, per, u, [], write)
    r.store_stats(e, row, stats)


def k_step_fits(per: int, step: int) -> bool:
    """Whether a thread's vectors in a slice (``per`` of them, ``step`` bytes apart) lie
    within a static 31-bit offset of its first (load_vec's own check, for :attr:`Setting.words`)."""
    return per * step < 2**31


def softmax_y(e: Emitter, v: SSAValue, stats: dict[str, SSAValue], fold: bool) -> SSAValue:
    """softmax's y of one element ``v`` with every exp in :data:`rows_common.FAST_EXP`'s
    form (:attr:`Setting.fast_exp`): ``exp(v - max) / sum`` as the exp times the sum's
    reciprocal; ``fold`` (:attr:`Setting.fold_sum`), ``ex2.approx.ftz(fma(v - max,
    log2(e), -log2(sum)))`` (``stats["neg_lg2_sum"]``). The non-finite rows as the
    default's: an all -inf row's ``-inf + inf`` (its sum 0) and a row with +inf or NaN give
    NaN, a -inf element 0."""
    if not fold:
        return f32_mul(e, exp_shifted(e, v, stats["max"], True), stats["inv_sum"])
    t = e.fma(AT, f32_sub(e, v, stats["max"]), e.const(rows_common.LOG2E, f32), stats["neg_lg2_sum"])
    return e.value(Ex2Op(AT, t, approx=True, ftz=True))


@dataclass
class HeldBuf:
    """A row-independent buffer's vectors of the thread (the weight's, the bias's) loaded
    once into registers as loaded (``rows_common.raw_load``: bfloat16 two to a word), before
    the rows loop (:attr:`Setting.affine_registers`); read as :class:`RowBuf` reads the
    vector ``first + extra`` (both static multiples of the group: y's pass unrolled)."""

    dtype: object
    raw: list[list[SSAValue]]  # per vector of the thread, its registers
    group: int
    vec: int

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        assert isinstance(first, int) and vec == self.vec, "HeldBuf: y's pass must be unrolled"
        return widen_raw(e, self.dtype, self.raw[(first + extra) // self.group], vec)


def held_affine(e: Emitter, base: SSAValue, dt, sw: SSAValue, vec: int, group: int, per: int) -> HeldBuf:
    """The thread's ``per`` vectors (``group`` vectors apart, its first ``sw``) of the
    ``[N]`` tensor at ``base`` of type ``dt``, loaded into registers (:class:`HeldBuf`)."""
    first = e.ptr_add(base, e.mul_i(sw, vec * dt.bytes))
    return HeldBuf(dt, [raw_load(e, dt, first, k * group * vec * dt.bytes, vec) for k in range(per)], group, vec)


def _add_body(r: RowState, e: Emitter, row: SSAValue, xs: SSAValue, rs: SSAValue, per: int) -> None:
    """add_rms_norm's row from x's and the residual's slices in shared memory (``xs``,
    ``rs``: the thread's first vectors): a pass of ``h = x + residual`` (rounded to x's
    type, as torch's ``x + residual``), written to residual_out, and of the sum of its
    squares; then y's pass, h made again from the slices (the same bits)."""
    p = r.p
    d = p.dtype
    step = p.block * p.vec * d.bytes
    u = UNROLL if per > UNROLL and per % UNROLL == 0 else per

    def h_of(b: Emitter, bx: SSAValue, br: SSAValue, k: int) -> list[SSAValue]:
        xv = load_vec(b, d, bx, k * step, p.vec, nc=False)
        rv = load_vec(b, d, br, k * step, p.vec, nc=False)
        hs = [f32_add(b, a, c) for a, c in zip(xv, rv, strict=True)]
        if d != F32:  # (rounded to x's type, then normalized: torch's order)
            hs = [b.convert(b.convert(h, F32, d), d, F32) for h in hs]
        return hs

    def visit(fn, init: list[SSAValue]) -> list[SSAValue]:
        """``fn(b, first, extra, h, acc)`` over the thread's vectors (``first`` + ``extra``:
        the vector's index among the thread's, in units of T), from ``init``."""
        if u == per:
            acc = init
            for k in range(per):
                acc = fn(e, k * p.group, 0, h_of(e, xs, rs, k), acc)
            return acc

        def body(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            off = b.mul_i(b.value(CvtOp(CvtType.U32, CvtType.U64, iv, i32)), step)
            bx, br = b.ptr_add(xs, off), b.ptr_add(rs, off)
            acc = list(args)
            for k in range(u):
                acc = fn(b, b.mul_i(iv, p.group), k * p.group, h_of(b, bx, br, k), acc)
            return acc

        return e.for_(0, per, u, init, body)

    def squares(b: Emitter, first, extra: int, hs: list[SSAValue], acc: list[SSAValue]) -> list[SSAValue]:
        assert r.hout is not None
        r.hout.store(b, first, p.vec, hs, extra)
        a = acc[0]
        for h in hs:
            a = b.fma(AT, h, h, a)
        return [a]

    (sq,) = visit(squares, [e.const(0.0, f32)])
    stats = r.finish(e, {"sq": r.reduce(e, ReduceKind.SUM, sq, "row_sq")})

    def write(b: Emitter, first, extra: int, hs: list[SSAValue], acc: list[SSAValue]) -> list[SSAValue]:
        r.write_item(b, first, hs, stats, extra)
        return acc

    visit(write, [])
    r.store_stats(e, row, stats)


@dataclass(frozen=True)
class Moments(rows_common.F32State):
    """layer_norm's statistics of some elements as ``(n, c, m2, s1)``: their count, a
    centre ``c`` (near their mean), ``m2 = sum((x - c)^2)`` and ``s1 = sum(x - c)`` (their
    mean is ``c + s1 / n``; ``s1`` keeps what rounding ``c`` to float32 lost). Two combine
    about the new centre ``C = (na ca + nb cb) / n`` by the exact shift of each part's sums,
    ``d = c - C``: ``m2 + d (2 s1 + n d)`` and ``s1 + n d`` (Chan's parallel variance,
    its parts' rounded means' error carried in ``s1`` instead of lost); symmetric in its
    operands bit for bit (a butterfly's lanes agree). The duck type of a reduction state
    that ``rows_common.reduce_state`` reads."""

    width: int = 4

    def combine(self, e: Emitter, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        n, _, centre = rows_common.pooled_mean(e, a[0], a[1], b[0], b[1])

        def shifted(s: list[SSAValue]) -> tuple[SSAValue, SSAValue]:
            d = f32_sub(e, s[1], centre)
            two_s1 = f32_add(e, s[3], s[3])
            return (f32_add(e, s[2], f32_mul(e, d, f32_add(e, two_s1, f32_mul(e, s[0], d)))),
                    f32_add(e, s[3], f32_mul(e, s[0], d)))

        (m2a, s1a), (m2b, s1b) = shifted(a), shifted(b)
        return [n, centre, f32_add(e, m2a, m2b), f32_add(e, s1a, s1b)]


def registers_slice(r: RowState, e: Emitter, row: SSAValue, early_affine: bool, fast: bool = False) -> None:
    """One row from the thread's share of the slice read once into registers
    (:attr:`Setting.registers`; ``r.x`` the slice in shared memory): softmax's and
    log_softmax's (m, s) from the registers, one exchange, y from the exponentials
    already computed (softmax); rms_norm's sum of squares; layer_norm's thread mean and
    sum of squared deviations from it (over its registers), combined by Chan's formula
    (:class:`Moments`) in one exchange, not two. ``early_affine``: the weight's and
    bias's values of the thread's vectors loaded before the exchange. cross_entropy:
    ``rows_common.registers_row``."""
    p = r.p
    kind = p.kind
    if kind not in (NormKind.SOFTMAX, NormKind.LOG_SOFTMAX, NormKind.RMS_NORM, NormKind.LAYER_NORM):
        registers_row(r, e, row)
        return
    vals = [r.load_item(e, k * p.group) for k in range(p.items)]
    flat = [v for item in vals for v in item]
    ws: list[list[SSAValue] | None] = [None] * p.items
    bs: list[list[SSAValue] | None] = [None] * p.items

    def affine(b: Emitter) -> None:
        for k in range(p.items):
            ws[k] = r.w.load(b, k * p.group, p.vec) if r.w is not None else None
            bs[k] = r.b.load(b, k * p.group, p.vec) if r.b is not None else None

    if early_affine:
        affine(e)
    outs: list[SSAValue] | None = None
    if kind in EXP_KINDS:
        m = clamp_max(e, e.fold(ReduceKind.MAX, F32, flat))
        exps = [exp_shifted(e, v, m, fast) for v in flat]  # (fast: Setting.fast_exp)
        big, total = r.reduce_exps(e, m, e.fold(ReduceKind.SUM, F32, exps), True if fast else None)
        stats = r.finish(e, {"max": big, "sum": total})
        if kind == NormKind.SOFTMAX:  # y = exp(x - m) exp(m - max) / sum
            factor = f32_mul(e, exp_shifted(e, m, big, fast), stats["inv_sum"])
            outs = [f32_mul(e, x, factor) for x in exps]
    elif kind == NormKind.RMS_NORM:
        sq = e.fold(ReduceKind.SUM, F32, [f32_mul(e, v, v) for v in flat])
        stats = r.finish(e, {"sq": r.reduce(e, ReduceKind.SUM, sq, "row_sq")})
    else:
        count = float(len(flat))  # (every thread holds whole vectors: the slices are exact)
        centre = e.div(AT, e.fold(ReduceKind.SUM, F32, flat), e.const(count, f32))
        m2 = s1 = e.const(0.0, f32)
        for v in flat:  # (each deviation used at once: not all of them live with the values)
            d = f32_sub(e, v, centre)
            m2, s1 = e.fma(AT, d, d, m2), f32_add(e, s1, d)
        st = reduce_state(e, Moments(), [e.const(count, f32), centre, m2, s1], r.tid,
                          p.block, p.group, p.cluster, r.parity, "row_moments", r.exchange, r.rank)
        nf = e.const(float(p.n), f32)
        shift = e.div(AT, st[3], nf)  # the row's mean less the centre: mean = C + s1 / n, var = (m2 - s1^2 / n) / n
        var = e.div(AT, f32_sub(e, st[2], f32_mul(e, st[3], shift)), nf)
        stats = r.finish(e, {"mean": f32_add(e, st[1], shift), "var": e.minmax(ReduceKind.MAX, AT, var, e.const(0.0, f32))})
    if not early_affine:
        affine(e)
    assert r.y is not None
    for k in range(p.items):
        xs = flat[k * p.vec:(k + 1) * p.vec]
        ys = outs[k * p.vec:(k + 1) * p.vec] if outs is not None else [r.out(e, v, j, stats, ws[k], bs[k])
                                                                         for j, v in enumerate(xs)]
        r.y.store(e, k * p.group, p.vec, ys)
    r.store_stats(e, row, stats)


@dataclass
class SharedBuf(RowBuf):
    """A row's slice in shared memory, read as :class:`RowBuf` reads global memory but
    never through the non-coherent cache (``ld.shared``): :attr:`Setting.registers`'s
    loads of the slice into registers; ``words`` (:attr:`Setting.words`): bfloat16 vectors
    as 32-bit words, each widened by a shift and a mask."""

    words: bool = False

    def load(self, e: Emitter, first: SSAValue | int, vec: int, extra: int = 0, *, nc: bool = True) -> list[SSAValue]:
        if self.words and packed_bf16(self.dtype, vec):
            p, off = self.at(e, first, vec)
            off += extra * vec * self.dtype.bytes
            if off < 2**31:
                raw = e.ld_vec(LdStType.B32, p, i32, vec // 2, off, nc=False) if vec > 2 else [e.ld(LdStType.B32, p, i32, off)]
                return widen_raw(e, self.dtype, raw, vec)
        return super().load(e, first, vec, extra, nc=False)

    def at(self, e: Emitter, first: SSAValue | int, vec: int) -> tuple[SSAValue, int]:
        if not isinstance(first, int) and first.type != i32:  # (a loop's index: shared addresses are 32-bit)
            first = e.value(CvtOp(CvtType.U32, CvtType.U64, first, i32))
        return super().at(e, first, vec)


def affine_staged(op: NormalizeRowsOp, st: Setting) -> int:
    """With ``st.weight_shared``, the bytes of shared memory the CTA's slices of the
    weight and bias take (rms_norm, add_rms_norm, layer_norm with either; each slice
    whole 16-byte chunks, beside the row's slice buffers within :data:`SHARED_PER_SM`);
    else 0 (read from global memory)."""
    if not st.weight_shared or op.norm_kind not in (NormKind.RMS_NORM, NormKind.LAYER_NORM, NormKind.ADD_RMS_NORM):
        return 0
    c, _, _, slice_bytes = bulk_for(op)
    elems = slice_bytes // dtype_of(op).bytes
    sizes = [elems * of_ir(t.type.element_type).bytes for t in (op.weight, op.bias) if t is not None]  # type: ignore[union-attr]
    persistent = st.persistent if st.persistent is not None else c == 1
    nbuf = st.buffers if persistent else 1
    nbuf *= 2 if op.norm_kind == NormKind.ADD_RMS_NORM else 1  # (x's and the residual's slices)
    if not sizes or any(n % 16 for n in sizes) or nbuf * slice_bytes + sum(sizes) > SHARED_PER_SM:
        return 0
    return sum(sizes)


def copy_affine(e: Emitter, tid: SSAValue, rank: SSAValue | None, parts: list[tuple[SSAValue, object]], elems: int,
                buf: SSAValue, mbar: SSAValue) -> None:
    """The copy of the CTA's slice (``elems`` elements; a cluster's CTA ``rank`` its
    ``rank``-th) of each of ``parts`` (the global weight, bias: (first element, element
    type)) into ``buf``, one after the other: thread 0 announces their bytes to ``mbar``,
    lanes of warp 0 copy a chunk of :data:`CHUNK` bytes each (``cp.async.bulk``)."""
    sizes = [elems * dt.bytes for _, dt in parts]  # type: ignore[attr-defined]
    chunks = [(k, off) for k, n in enumerate(sizes) for off in range(0, n, CHUNK)]
    assert len(chunks) <= 32, "the weight's and bias's slices in more than 32 chunks"

    def announce(b: Emitter) -> list[SSAValue]:
        b.emit(MbarrierArriveExpectTxOp(mbar, b.const(sum(sizes)), sink=True))
        return []

    e.if_(e.cmp("eq", tid, 0), announce)
    for src, _ in parts:
        require_alignment(src, 16)
    for lane, (k, off) in enumerate(chunks):
        src, _ = parts[k]
        at = sum(sizes[:k]) + off

        def copy(b: Emitter, src: SSAValue = src, k: int = k, off: int = off, at: int = at) -> list[SSAValue]:
            first = b.ptr_add(src, b.wide(b.add_i(b.mul_i(rank, sizes[k]), off)) if rank is not None else off)
            size = b.const(min(CHUNK, sizes[k] - off))
            b.emit(CpAsyncBulkSharedCtaGlobalOp(b.ptr_add(buf, at), first, size, mbar))
            return []

        e.if_(e.cmp("eq", tid, lane), copy)


def lower_rows_bulk(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, NormalizeRowsOp)
    c, block, per, slice_bytes = bulk_for(op)
    st = _setting(op)
    persistent = st.persistent if st.persistent is not None else c == 1
    nbuf = st.buffers if persistent else 1
    assert nbuf in (1, 2), f"rows_bulk: {nbuf} slice buffers (1 or 2)"
    staged = affine_staged(op, st)  # (the weight's and bias's slices in shared memory: their bytes, else 0)
    add = op.norm_kind == NormKind.ADD_RMS_NORM  # (x's and the residual's slices copied, h written from them)
    if persistent:
        ctas_per_sm = max(1, min(2048 // block, SHARED_PER_SM // ((1 + add) * nbuf * slice_bytes + staged)))
    else:  # a unit per row (the grid's CTAs at most 2^30)
        ctas_per_sm = (1 << 30) // max(1, rows_common.sm_count(target))
    p = plan(op, target, group=block, block=block, items=per, ctas_per_sm=ctas_per_sm, cluster=c)
    if persistent and st.max_units is not None:  # (every unit resident at once)
        p = replace(p, ctas=max(1, min(p.ctas // c, st.max_units)) * c)
    kernel = enclosing_kernel(op)
    assert kernel is not None
    set_launch(kernel, [p.ctas], [p.block], [p.cluster])
    if st.min_ctas is not None:
        kernel.attributes[MIN_CTAS_ATTR] = IntegerAttr(st.min_ctas, i64)
    m_arg = rows_parameter(kernel) if p.m is None else None
    e = emitter_at(op)
    d = p.dtype
    tid = e.sreg(SpecialRegister.TID_X)
    buf = e.shared([nbuf * slice_bytes // 4], f32, "row_slice")
    rbuf = e.shared([nbuf * slice_bytes // 4], f32, "row_residual") if add else None
    loaded = e.shared([nbuf], i64, "row_loaded")
    affine_buf = e.shared([staged // 4], f32, "row_affine") if staged else None
    affine_loaded = e.shared([1], i64, "affine_loaded") if staged else None

    def init(b: Emitter) -> list[SSAValue]:
        for k in range(nbuf):  # (add_rms_norm: two arrivals, x's copy's and the residual's)
            b.emit(MbarrierInitOp(b.ptr_add(loaded, 8 * k), b.const(2 if add else 1)))
        if affine_loaded is not None:
            b.emit(MbarrierInitOp(affine_loaded, b.const(1)))
        return []

    e.if_(e.cmp("eq", tid, 0), init)
    rank = exchange = None
    early = st.early_copy and c > 1 and nbuf == 1
    x0 = lane_chunk = None

    def issue(b: Emitter, row: SSAValue, which: SSAValue | int) -> None:
        """The copy of the CTA's slice of ``row`` into slice buffer ``which`` (add_rms_norm: the residual's too)."""
        copy_slice(b, tid, lane_chunk, rank, x0, row, p.sx * d.bytes, buf, loaded, which, slice_bytes)
        if rbuf is not None and r0 is not None:
            copy_slice(b, tid, lane_chunk, rank, r0, row, row_stride(op.residual.type) * d.bytes, rbuf, loaded, which,  # type: ignore[arg-type, union-attr]
                       slice_bytes)

    r0 = None
    if add:  # the residual's first element (its slices' copies' source)
        r0 = e.ptr(op.residual, StateSpace.GLOBAL)
        require_alignment(r0, 16)
    h0 = e.ptr(op.residual_out, StateSpace.GLOBAL) if add else None

    def source() -> SSAValue:
        """x's first element (the copies' source)."""
        x = e.ptr(op.x, StateSpace.GLOBAL)
        require_alignment(x, 16)
        return x

    def grid_rows() -> tuple[SSAValue, SSAValue, SSAValue]:
        """(the units' stride over the rows, M, the unit's first row)."""
        units = p.ctas // p.cluster
        if p.m is None:
            ctas = e.sreg(SpecialRegister.NCTAID_X)
            units_now = e.shr_u32(ctas, c.bit_length() - 1) if c > 1 else ctas
            kernel.attributes[GRID_ROWS_ATTR] = ArrayAttr([IntegerAttr(1, i64), IntegerAttr(units, i64)])
            return e.wide(units_now), m_arg, e.wide(slot)
        return e.const(units, i64), e.const(p.m, i64), e.wide(slot)

    if c > 1:
        rank = e.sreg(SpecialRegister.CLUSTER_CTARANK)
        slot = e.shr_u32(e.sreg(SpecialRegister.CTAID_X), c.bit_length() - 1)
        first = e.add_i(e.mul_i(rank, slice_bytes // (p.vec * d.bytes)), tid)
        if early:  # the first row's copy before the cluster barrier (`loaded`'s init published to the CTA first)
            x0, lane_chunk = source(), e.mul_i(tid, CHUNK)
            stride, rows, start = grid_rows()
            e.emit(FenceMbarrierInitOp())
            e.bar_sync()
            e.if_(e.cmp("slt", start, rows), lambda b: issue(b, start, 0) or [])
        exchange = ClusterExchange(e, tid)  # (its cluster barrier also publishes `loaded`'s init)
    else:
        slot = e.sreg(SpecialRegister.CTAID_X)
        first = tid
        if not persistent and nbuf == 1 and slice_bytes <= CHUNK and _early_copy_cta(op):  # thread 0: init, then its copy
            early = True
            x0, lane_chunk = source(), e.mul_i(tid, CHUNK)
            stride, rows, start = grid_rows()
            e.if_(e.cmp("slt", start, rows), lambda b: issue(b, start, 0) or [])
        e.bar_sync()
    sw = e.wide(first)  # the thread's first vector in the row
    vec = p.vec
    if x0 is None:
        x0 = source()
    y0 = e.ptr(op.y, StateSpace.GLOBAL) if op.y is not None else None
    w0 = e.ptr(op.weight, StateSpace.GLOBAL) if op.weight is not None else None
    b0 = e.ptr(op.bias, StateSpace.GLOBAL) if op.bias is not None else None
    wd = of_ir(op.weight.type.element_type) if op.weight is not None else None  # type: ignore[union-attr]
    bd = of_ir(op.bias.type.element_type) if op.bias is not None else None  # type: ignore[union-attr]
    xs = e.ptr_add(buf, e.mul_i(tid, vec * d.bytes))  # the thread's first vector in the slice
    if lane_chunk is None:
        lane_chunk = e.mul_i(tid, CHUNK)
    ws = bs = None  # (weight_shared: the thread's first vector of the weight's and bias's slices in shared memory)
    if affine_buf is not None and affine_loaded is not None:
        parts = [(w0, wd), (b0, bd)]
        copy_affine(e, tid, rank, [(src, dt) for src, dt in parts if src is not None and dt is not None],
                    slice_bytes // d.bytes, affine_buf, affine_loaded)
        at = 0
        for k, (src, dt) in enumerate(parts):
            if src is not None and dt is not None:
                here_ = e.ptr_add(affine_buf, e.add_i(e.mul_i(tid, vec * dt.bytes), at))
                at += slice_bytes // d.bytes * dt.bytes
                if k == 0:
                    ws = SharedBuf(dt, here_, st.words)
                else:
                    bs = SharedBuf(dt, here_, st.words)

    held: tuple[HeldBuf | None, HeldBuf | None] | None = None  # (affine_registers: the weight's and bias's registers)
    if (st.affine_registers and persistent and affine_buf is None
            and op.norm_kind in (NormKind.RMS_NORM, NormKind.LAYER_NORM) and (w0 is not None or b0 is not None)):
        held = (held_affine(e, w0, wd, sw, vec, p.group, per) if w0 is not None else None,
                held_affine(e, b0, bd, sw, vec, p.group, per) if b0 is not None else None)

    def row_body(b: Emitter, row: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
        (count,) = carried
        row_x = b.ptr_add(x0, b.mul_i(row, p.sx * d.bytes))
        b.bar_sync()  # every thread has read the buffer of the CTA's previous row
        which = b.and_b32(count, 1) if nbuf == 2 else 0
        if nbuf == 2:  # the CTA's next row into the other buffer, while this one is computed
            after = b.add_i(row, stride)
            b.if_(b.cmp("slt", after, rows), lambda c1: issue(c1, after, b.and_b32(b.add_i(count, 1), 1)) or [])
        elif early:  # (the CTA's first row: copied before the loop)
            b.if_(b.cmp("ne", count, 0), lambda c1: issue(c1, row, 0) or [])
        else:
            issue(b, row, 0)
        r = RowState(p, op, tid, tid, RowBuf(d, xs), None, None, None, row_x, first if c > 1 else None, rank, parity=count,
                 sw=sw, exchange=exchange)
        if op.norm_kind == NormKind.CROSS_ENTROPY:  # while the slice is copied
            r.target = r.target_inputs(b, row)
        shift = None
        if st.one_pass == "row" and op.norm_kind == NormKind.LAYER_NORM:  # the row's first element, while the slice is copied
            shift = load_vec(b, d, row_x, 0, 1)[0]
        # buffer `which`'s mbarrier completes once per use: its uses' count's parity
        phase = b.and_b32(b.shr_u32(count, 1), 1) if nbuf == 2 else b.and_b32(count, 1)
        wait_phase(b, b.ptr_add(loaded, b.mul_i(which, 8)) if nbuf == 2 else loaded, phase)
        here = b.ptr_add(xs, b.mul_i(which, slice_bytes)) if nbuf == 2 else xs
        y = RowBuf(d, b.ptr_add(b.ptr_add(y0, b.mul_i(row, p.sy * d.bytes)), b.mul_i(sw, vec * d.bytes))) if y0 is not None else None
        w = RowBuf(wd, b.ptr_add(w0, b.mul_i(sw, vec * wd.bytes))) if w0 is not None and wd else None
        bb = RowBuf(bd, b.ptr_add(b0, b.mul_i(sw, vec * bd.bytes))) if b0 is not None and bd else None
        if affine_loaded is not None:  # (its one phase: complete from the first row on)
            wait_phase(b, affine_loaded, b.const(0))
            w, bb = ws, bs
        r.y, r.w, r.b = y, w, bb
        if held is not None:
            r.w, r.b = held  # type: ignore[assignment]
        rs = None
        if rbuf is not None and h0 is not None:  # add_rms_norm: the residual's slice, h's row in residual_out
            rs = b.ptr_add(b.ptr_add(rbuf, b.mul_i(tid, vec * d.bytes)), b.mul_i(which, slice_bytes)) if nbuf == 2 else \
                b.ptr_add(rbuf, b.mul_i(tid, vec * d.bytes))
            hrow = b.ptr_add(h0, b.mul_i(row, row_stride(op.residual_out.type) * d.bytes))  # type: ignore[arg-type, union-attr]
            r.hout = RowBuf(d, b.ptr_add(hrow, b.mul_i(sw, vec * d.bytes)))
        if st.registers and not add:  # the slice read from shared memory once, into registers
            r.x = SharedBuf(d, here, st.words)
            registers_slice(r, b, row, st.early_affine, st.fast_exp)
        else:
            _body(r, b, row, here, per, st, shift, rs)
        return [b.add_i(count, 1)]

    if not early:
        stride, rows, start = grid_rows()
    if nbuf == 2:  # the CTA's first row into buffer 0
        e.if_(e.cmp("slt", start, rows), lambda b: issue(b, start, 0) or [])
    e.for_(start, rows, stride, [e.const(0)], row_body)
    if c > 1:  # no CTA leaves while a peer may still store into its shared memory
        e.cluster_sync()
    reduce_loss(e, p, op, tid, rows)  # cross_entropy's reduced (none: nothing)
    rewriter.erase(op)


ROWS_BULK = Variant(
    "bulkred.normalize_rows", "rows_bulk", priority=25,
    predicates=[
        *row_predicates(None, ""),
        Predicate("target", lambda op, t: (CLUSTER_LAUNCH.satisfied_by(t), t.name), expected="sm_90 or newer (bulk copies, clusters)"),
        Predicate("kind", _kind, expected="softmax, log_softmax, rms_norm, layer_norm, cross_entropy, add_rms_norm"),
        Predicate("slices", _fits, expected="whole 16-byte chunks per CTA, 16-byte row strides"),
        Predicate("measured", _chosen, expected="the rows measured faster (rows_bulk.CHOSEN)"),
    ],
    lower=lower_rows_bulk,
)
