"""The variant registry: every lowering variant of ``bulkred.reduce``, one file each.

:data:`REGISTRY` is built from the table below; a variant module defines its lowering
and its :class:`~bulkred_dialect.passes.registry.Variant` (name, priority, predicates)
and imports nothing of this package but the shared steps (``kernel.py``,
``grid_common.py``) and the variants it builds on. Adding a variant is writing its file
and adding one row here (tests/test_dispatch.py checks the table against the registry).

By priority (highest tried first); every variant also takes only the element types
its ``dtype`` predicate names:

======  ==================  =======  ==================================================
  66    grid_runs           grid     a general or strided form of 2 reduced axes, the
                                     innermost contiguous (axes (0, 2) of [A, K, C]):
                                     rows of vectors, split over CTAs, deterministic
  65    grid_rows           grid     each row of M x N into one value, one warp per row
  64    grid_split_bulk     grid     column sum of float32 / int32, N a multiple of 4,
                                     at least 2 MiB, not ``deterministic``:
                                     cp.reduce.async.bulk into dst
  63    grid_middle         grid     the middle axis of [O, R, I], O <= 65535: the
                                     deterministic split per block of O
  62    grid_split_det      grid     any column reduction, the same bits on every run
  61    grid_full_cluster   grid     full int32 reduction, sm_90+: CTA pairs combine
                                     through distributed shared memory first
  60    grid_full           grid     any full reduction (every element into one)
  59    grid_gather         grid     any grid reduction (every canonical form), scalar
                                     loads at computed addresses: the fallback
  51    cluster_red_async   cluster  int32, a cluster of >= 2 CTAs: red.async into CTA 0
  50    cluster_dsmem       cluster  any collective type, a cluster of >= 2 CTAs: mapa +
                                     ld.shared::cluster in rank order
  40    cta_shared          cta      any collective type, whole warps: warp partials
                                     through shared memory
  33    warp_redux_f32      warp     float32 max / min on an sm_100a-class target:
                                     redux.sync .f32
  32    warp_redux          warp     int32: redux.sync
  30    warp_shuffle        warp     any collective type: a shfl.sync.bfly butterfly
  20    sm100_packed        thread   1-D float32 of length >= 8 into one value, sm_100+:
                                     add.f32x2 / max3 / min3
  10    local               thread   any element type: a scalar loop per row
======  ==================  =======  ==================================================

The collective variants (warp, cta, cluster, grid) reduce one local value per thread
(or, at grid scope, a whole global buffer) and take int32, float16, bfloat16 and float32
(``passes/elements.py``'s ``ELEMS``); the thread-scope ones reduce local buffers.
docs/lowering.md and docs/scopes.md give each variant's sequence.
"""

from __future__ import annotations

from bulkred_dialect.passes.registry import Registry
from bulkred_dialect.passes.variants import (
    cluster_dsmem,
    cluster_red_async,
    cta_shared,
    grid_full,
    grid_full_cluster,
    grid_gather,
    grid_list,
    grid_middle,
    grid_rows,
    grid_runs,
    grid_split_bulk,
    grid_split_det,
    local,
    rows_bulk,
    rows_bulk_backward,
    rows_cluster,
    rows_cta,
    rows_slices,
    rows_stream,
    rows_warp,
    sm100_packed,
    warp_redux,
    warp_shuffle,
)

REGISTRY = Registry.from_variants(
    [
        grid_runs.GRID_RUNS,
        grid_rows.GRID_ROWS,
        grid_split_bulk.GRID_SPLIT_BULK,
        grid_middle.GRID_MIDDLE,
        grid_split_det.GRID_SPLIT_DET,
        grid_full_cluster.GRID_FULL_CLUSTER,
        grid_full.GRID_FULL,
        grid_gather.GRID_GATHER,
        grid_list.GRID_LIST,
        grid_list.GRID_LIST_SCALE,
        rows_warp.ROWS_WARP, rows_cta.ROWS_CTA, rows_bulk_backward.ROWS_BULK_BACKWARD, rows_bulk.ROWS_BULK, rows_cluster.ROWS_CLUSTER,
        rows_slices.ROWS_SLICES, rows_stream.ROWS_STREAM,  # bulkred.normalize_rows (docs/rows.md)
        cluster_red_async.CLUSTER_RED_ASYNC,
        cluster_dsmem.CLUSTER_DSMEM,
        cta_shared.CTA_SHARED,
        warp_redux.WARP_REDUX_F32,
        warp_redux.WARP_REDUX,
        warp_shuffle.WARP_SHUFFLE,
        sm100_packed.SM100_PACKED,
        local.LOCAL,
    ]
)
"""The project's registry: every variant above (``passes/dispatch.py`` selects from it)."""
