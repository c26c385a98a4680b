"""The tile-level dialect ``bulkred``: what is reduced, at which scope, and the bulk
operations between memories.

Buffers are upstream ``memref`` values whose memory space is a
``#bulkred.scope<...>`` attribute (local, shared, global, cluster_shared); they are
allocated with ``memref.alloca``. Kernels are ``func.func`` ops carrying a
``bulkred.launch = #bulkred.launch<grid = [..], block = [..], cluster = [..]>``
attribute (:func:`kernel_launch` rejects one of another kind); every tile op must be
inside one.

Example (the TIRx card's demonstration program, ``examples/seed_sum32.mlir``)::

    func.func @test_func(%A: memref<32xf32, #bulkred.scope<global>>,
                         %B: memref<1xf32, #bulkred.scope<global>>)
        attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {
      %A_local = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
      %B_local = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
      bulkred.copy %A, %A_local : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>
      bulkred.reduce sum thread %A_local, %B_local : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
      bulkred.copy %B_local, %B : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
      func.return
    }

The package, by concern:

* ``attrs.py``: the attributes (scopes, kinds, maps, launch) and :func:`kernel_launch`;
* ``buffers.py``: a buffer's scope and type, the element types, the operand checks;
* ``reduce.py``: ``bulkred.reduce``;
* ``bulk.py``: ``bulkred.copy``, ``bulkred.bulk_copy``, ``bulkred.bulk_reduce``;
* ``indices.py``: ``bulkred.cluster_rank``, ``bulkred.cluster_size``;
* ``lists.py``: ``bulkred.reduce_list``, ``bulkred.scale_list`` (docs/foreach.md);
* ``rows.py``: ``bulkred.normalize_rows`` (docs/rows.md).

This module defines the dialect and names the public names of all of them.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from bulkred_dialect.ops.tile.attrs import (
    MemoryScope,
    ExecScope,
    ReduceKind,
    BOOL_KINDS,
    INDEX_KINDS,
    FUSED_KINDS,
    FLOAT_ONLY_KINDS,
    MapFn,
    PROLOGUE_MAPS,
    EPILOGUE_MAPS,
    MAPS_WITH_ARG,
    INTEGER_MAPS,
    BITWISE_KINDS,
    MINMAX_KINDS,
    MemoryScopeAttr,
    ExecScopeAttr,
    ReduceKindAttr,
    MapAttr,
    check_maps,
    LaunchAttr,
    LAUNCH_ATTR,
    kernel_launch,
)
from bulkred_dialect.ops.tile.buffers import (
    enclosing_kernel,
    check_in_kernel,
    scope_of,
    buffer_type,
    expect_buffer,
    ELEMENT_TYPES,
    GRID_ELEMENT_TYPES,
    check_element_type,
    check_static_positive_shape,
    shape_str,
)
from bulkred_dialect.ops.tile.reduce import (
    wider_dst_types,
    check_dst_element_type,
    check_bool_kind,
    check_nonzero_dst,
    MAX_GRID_RANK,
    check_axes,
    check_grid_view,
    ReduceOp,
)
from bulkred_dialect.ops.tile.bulk import (
    CopyOp,
    BulkCopyOp,
    MAX_SHARED_BYTES,
    MAX_TX_BYTES,
    ptx_reduce_type,
    bulk_bytes,
    check_bulk_bytes,
    check_contiguous,
    BulkReduceOp,
)
from bulkred_dialect.ops.tile.indices import (
    ClusterRankOp,
    ClusterSizeOp,
)
from bulkred_dialect.ops.tile.lists import (
    LIST_KINDS,
    LIST_PROLOGUE_MAPS,
    LIST_EPILOGUE_MAPS,
    CLIP_EPS,
    ReduceListOp,
    ScaleListOp,
    LIST_OPS,
)
from bulkred_dialect.ops.tile.rows import NormKind, NormKindAttr, NormalizeRowsOp, ROW_OPS, ROW_ATTRS

BULKRED = Dialect(
    "bulkred",
    [ReduceOp, CopyOp, BulkCopyOp, BulkReduceOp, ClusterRankOp, ClusterSizeOp, *LIST_OPS, *ROW_OPS],
    [MemoryScopeAttr, ExecScopeAttr, ReduceKindAttr, LaunchAttr, MapAttr, *ROW_ATTRS],
)

__all__ = [
    "BULKRED",
    "MemoryScope",
    "ExecScope",
    "ReduceKind",
    "BOOL_KINDS",
    "INDEX_KINDS",
    "FUSED_KINDS",
    "FLOAT_ONLY_KINDS",
    "MapFn",
    "PROLOGUE_MAPS",
    "EPILOGUE_MAPS",
    "MAPS_WITH_ARG",
    "INTEGER_MAPS",
    "BITWISE_KINDS",
    "MINMAX_KINDS",
    "MemoryScopeAttr",
    "ExecScopeAttr",
    "ReduceKindAttr",
    "MapAttr",
    "check_maps",
    "LaunchAttr",
    "LAUNCH_ATTR",
    "kernel_launch",
    "enclosing_kernel",
    "check_in_kernel",
    "scope_of",
    "buffer_type",
    "expect_buffer",
    "ELEMENT_TYPES",
    "GRID_ELEMENT_TYPES",
    "check_element_type",
    "check_static_positive_shape",
    "shape_str",
    "wider_dst_types",
    "check_dst_element_type",
    "check_bool_kind",
    "check_nonzero_dst",
    "MAX_GRID_RANK",
    "check_axes",
    "check_grid_view",
    "ReduceOp",
    "CopyOp",
    "BulkCopyOp",
    "MAX_SHARED_BYTES",
    "MAX_TX_BYTES",
    "ptx_reduce_type",
    "bulk_bytes",
    "check_bulk_bytes",
    "check_contiguous",
    "BulkReduceOp",
    "ClusterRankOp",
    "ClusterSizeOp",
    "LIST_KINDS",
    "LIST_PROLOGUE_MAPS",
    "LIST_EPILOGUE_MAPS",
    "CLIP_EPS",
    "ReduceListOp",
    "ScaleListOp",
    "LIST_OPS",
    "NormKind",
    "NormKindAttr",
    "NormalizeRowsOp",
    "ROW_OPS",
    "ROW_ATTRS",
]
