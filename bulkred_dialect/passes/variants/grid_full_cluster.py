"""reduction -> grid_full_cluster: a full ``int32`` reduction whose CTAs combine in
clusters of 2 through distributed shared memory before the grid step (priority 61);
every kind but prod (red.async has no mul: ``grid_full`` takes it).

Each CTA reduces its share as ``grid_full`` does (``redux.sync`` per warp); the CTAs of
a cluster then combine with ``red.async`` into CTA rank 0's shared memory, completed on
an mbarrier (``cluster_red_async``); only the rank-0 CTAs write a partial into the
workspace and take a ticket, so the last step reduces half as many partials.
Integer results are exact: the same bits on every run.

Spec: PTX ISA 9.7.13.7 (red.async), mbarrier, redux.sync (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceOp, enclosing_kernel
from bulkred_dialect.passes.predicates import Predicate, dtype_in, kinds_but_prod, plain_reduction
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.cluster_red_async import ClusterAccumulator
from bulkred_dialect.passes.variants.grid_common import (
    add_workspace,
    form_of,
    global_ptr,
    grid_predicates,
    set_launch,
)
from bulkred_dialect.passes.variants.grid_full import (
    BLOCK,
    cta_partial,
    full_grid,
    grid_combine,
    workspace_bytes,
)
from bulkred_dialect.passes.variants.kernel import elem_of, emitter_at

CLUSTER = 2


def _sm90(op: Operation, target: Target) -> tuple[bool, object]:
    return target.sm >= 90, target.name


PREDICATES = [
    *grid_predicates("whole")[:3],
    Predicate("dtype", dtype_in("int32"), expected="int32"),
    Predicate("sm_version", _sm90, expected=">= 90 (clusters)"),
    kinds_but_prod("red.async"),
    plain_reduction("red.async"),
]


def lower_grid_full_cluster(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    kernel = enclosing_kernel(op)
    assert form is not None and kernel is not None
    elem = elem_of(op)
    ctas = -(-full_grid(form.n, elem.vector, target) // CLUSTER) * CLUSTER
    clusters = ctas // CLUSTER
    set_launch(kernel, [ctas], [BLOCK], [CLUSTER])
    ws = add_workspace(kernel, workspace_bytes(clusters, elem.slot_bytes))
    e = emitter_at(op)
    tid = e.sreg(SpecialRegister.TID_X)
    cta = e.sreg(SpecialRegister.CTAID_X)
    acc = ClusterAccumulator(e, tid, op.kind.data, CLUSTER)
    (r,) = cta_partial(e, op, tid, cta, ctas, BLOCK)
    acc.combine(e, r)
    total = e.ld(elem.ld, acc.slot, elem.acc)
    grid_combine(e, op, global_ptr(e, ws), [total], tid, e.shr_u32(cta, 1), clusters, BLOCK, acc.is_rank0(e))
    rewriter.erase(op)


GRID_FULL_CLUSTER = Variant(
    "bulkred.reduce", "grid_full_cluster", priority=61, predicates=PREDICATES, lower=lower_grid_full_cluster
)
