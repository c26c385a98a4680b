"""The index ops of level 2 (docs/kernels.md) into special registers:
``gpu.thread_id/block_id/block_dim/grid_dim/lane_id`` and
``bulkred.cluster_rank/cluster_size`` -> ``ptx.mov.sreg`` (``%tid``, ``%ctaid``, ``%ntid``,
``%nctaid``, ``%laneid``, ``%cluster_ctarank``, ``%cluster_nctarank``) + ``cvt.u64.u32``;
block extents and a cluster size from ``bulkred.launch`` are constants."""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.ir import Operation

from bulkred_dialect.ops.ptx.control import CvtOp, CvtType
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.tile import ClusterRankOp, ClusterSizeOp, kernel_launch
from bulkred_dialect.passes.lower_to_ptx.state import INDEX_TYPE, LoweringState

# gpu index op -> the special register's stem (``tid`` for ``%tid.x``)
_GPU_SREG: dict[type, str] = {
    gpu.ThreadIdOp: "tid",
    gpu.BlockIdOp: "ctaid",
    gpu.BlockDimOp: "ntid",
    gpu.GridDimOp: "nctaid",
}


def _index_from_sreg(k: LoweringState, op: Operation, reg: SpecialRegister) -> None:
    """``ptx.mov.sreg`` (u32) widened to the index type."""
    v = k.insert(op, MovSregOp(reg)).results[0]
    wide = k.insert(op, CvtOp(CvtType.U64, CvtType.U32, v, INDEX_TYPE))
    k.replace(op, wide.results)


def _launch_dims(k: LoweringState, field: str) -> tuple[int, int, int] | None:
    launch = kernel_launch(k.kernel)
    if launch is None:
        return None
    return launch.block_dims if field == "block" else launch.cluster_dims


def gpu_index(k: LoweringState, op: Operation) -> None:
    reg_stem, axis = _GPU_SREG[type(op)], "xyz".index(str(op.dimension.data))  # type: ignore[attr-defined]
    block = _launch_dims(k, "block")
    # .reqntid holds every launch to the bulkred.launch block: its extents are constants
    if block is not None and isinstance(op, gpu.BlockDimOp):
        k.replace(op, [k.imm(op, block[axis])])
        return
    if block is not None and isinstance(op, gpu.ThreadIdOp) and block[axis] == 1:
        k.replace(op, [k.imm(op, 0)])
        return
    _index_from_sreg(k, op, SpecialRegister(f"{reg_stem}.{'xyz'[axis]}"))


def lane_id(k: LoweringState, op: gpu.LaneIdOp) -> None:
    _index_from_sreg(k, op, SpecialRegister.LANEID)


def cluster_rank(k: LoweringState, op: ClusterRankOp) -> None:
    _index_from_sreg(k, op, SpecialRegister.CLUSTER_CTARANK)


def cluster_size(k: LoweringState, op: ClusterSizeOp) -> None:
    cluster = _launch_dims(k, "cluster")
    # .reqnctapercluster (printed for clusters of 2 or more) holds every launch to it
    if cluster is not None and cluster[0] * cluster[1] * cluster[2] > 1:
        k.replace(op, [k.imm(op, cluster[0] * cluster[1] * cluster[2])])
        return
    _index_from_sreg(k, op, SpecialRegister.CLUSTER_NCTARANK)


INDEX_HANDLERS = {
    **{cls: gpu_index for cls in _GPU_SREG},
    gpu.LaneIdOp: lane_id,
    ClusterRankOp: cluster_rank,
    ClusterSizeOp: cluster_size,
}
