"""``bulkred.cluster_rank`` and ``bulkred.cluster_size``: the executing CTA's place in
its cluster (upstream ``gpu`` has no such ops)."""

from __future__ import annotations

from abc import ABC

from xdsl.dialects.builtin import IndexType
from xdsl.irdl import IRDLOperation, result_def

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.tile.buffers import check_in_kernel


class _ClusterIndexOp(IRDLOperation, ABC):
    """An ``index`` read from a special register of the executing CTA."""

    result = result_def(IndexType)

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])

    def verify_(self) -> None:
        check_in_kernel(self)


@op_definition
class ClusterRankOp(_ClusterIndexOp):
    """The rank of the executing CTA in its cluster, from 0 to ``bulkred.cluster_size`` - 1
    (the rank a bulk op into ``cluster_shared`` names; upstream ``gpu`` has no such op).

    PTX: ``mov.u32 %r, %cluster_ctarank;`` widened to ``index``.

    Example: ``%rank = bulkred.cluster_rank``

    Spec: PTX ISA, Special Registers, %cluster_ctarank.
    """

    name = "bulkred.cluster_rank"


@op_definition
class ClusterSizeOp(_ClusterIndexOp):
    """The number of CTAs in the executing CTA's cluster (1 without a cluster).

    PTX: ``mov.u32 %r, %cluster_nctarank;`` widened to ``index``; a constant when the
    kernel's ``bulkred.launch`` has a cluster of 2 or more CTAs (``.reqnctapercluster``
    holds every launch to it).

    Example: ``%n = bulkred.cluster_size``

    Spec: PTX ISA, Special Registers, %cluster_nctarank.
    """

    name = "bulkred.cluster_size"
