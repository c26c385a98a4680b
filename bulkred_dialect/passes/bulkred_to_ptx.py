"""``bulkred-to-ptx{target=sm_XX}``: the whole pipeline from the tile level to ptx ops.

Stages, all with one resolved target (option, else the module's ``bulkred.target``,
else sm_90a):

1. ``lower-tile-reductions`` -- variants chosen by the registry (``explain=true`` prints why);
2. ``legalize-for-target``   -- sm_100 packed instructions into scalar ones before sm_100;
3. ``lower-bulk-ops``        -- bulk_copy / bulk_reduce into cp.async.bulk / cp.reduce.async.bulk
                                with their mbarrier, fences and barriers (docs/lowering.md);
4. ``lower-to-ptx``          -- memref / scf / arith into ptx ops (docs/DEVELOPING.md, level 3);
5. ``check-target``          -- every remaining ptx op must run on the target.

Example: ``bulkred-opt examples/seed_sum32.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t ptx``
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from bulkred_dialect.passes.check_target import CheckTargetPass
from bulkred_dialect.passes.legalize_for_target import LegalizeForTargetPass
from bulkred_dialect.passes.lower_bulk_ops import LowerBulkOpsPass
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass
from bulkred_dialect.passes.lower_to_ptx import LowerToPtxPass
from bulkred_dialect.passes.targeting import TargetedPass


@dataclass(frozen=True)
class BulkredToPtxPass(TargetedPass):
    name = "bulkred-to-ptx"

    explain: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target_for(op)  # a Target: no stage parses a name again
        stages: list[ModulePass] = [
            LowerTileReductionsPass(target=target, explain=self.explain),
            LegalizeForTargetPass(target=target),
            LowerBulkOpsPass(),
            LowerToPtxPass(target=target),
            CheckTargetPass(target=target),
        ]
        for stage in stages:
            stage.apply(ctx, op)
