"""The xDSL plugin entry point: every bulkred dialect, pass and output target; and
:func:`context`, the one xDSL context of the package (the library, ``bulkred-opt`` and
the tests parse and run passes with it)."""

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
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


def register_dialects(ctx: Context) -> Context:
    """Register on ``ctx`` xDSL's upstream dialects and bulkred's (``bulkred``, ``ptx``;
    ours take their names should an upstream one have them). Each dialect is loaded
    when a parse or a pass first asks for it."""
    for name, factory in {**get_all_dialects(), **BULKRED_DIALECTS}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def context() -> Context:
    """A new xDSL context with the upstream dialects and bulkred's registered
    (:func:`register_dialects`): to parse MLIR text or run passes next to built modules."""
    return register_dialects(Context())
