"""Passes, one per file. ``ALL_PASSES`` maps each pass name to a factory that imports it."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        return getattr(import_module(f"bulkred_dialect.passes.{module}"), cls)

    return factory


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "check-target": _lazy("check_target", "CheckTargetPass"),
    "lower-tile-reductions": _lazy("lower_tile_reductions", "LowerTileReductionsPass"),
    "legalize-for-target": _lazy("legalize_for_target", "LegalizeForTargetPass"),
    "lower-bulk-ops": _lazy("lower_bulk_ops", "LowerBulkOpsPass"),
    "lower-to-ptx": _lazy("lower_to_ptx", "LowerToPtxPass"),
    "bulkred-to-ptx": _lazy("bulkred_to_ptx", "BulkredToPtxPass"),
}
