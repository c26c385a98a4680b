"""The xDSL plugin entry point: every bulkred dialect, pass and output target."""

from xdsl.universe import Universe

from bulkred_dialect.passes import ALL_PASSES


def _ptx():
    from bulkred_dialect.ops.ptx import PTX

    return PTX


def _bulkred():
    from bulkred_dialect.ops.tile import BULKRED

    return BULKRED


def _ptx_target():
    from bulkred_dialect.backend_ptx.printer import PtxTarget

    return PtxTarget


BULKRED_DIALECTS = {"ptx": _ptx, "bulkred": _bulkred}
BULKRED_TARGETS = {"ptx": _ptx_target}

BULKRED_UNIVERSE = Universe(
    all_dialects=BULKRED_DIALECTS,
    all_passes=ALL_PASSES,
    all_targets=BULKRED_TARGETS,
)
