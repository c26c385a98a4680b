"""bulkred: an xDSL dialect and lowering pipeline for GPU reductions.

``import bulkred_dialect as bulkred`` stays light (no xdsl or CUDA import); the
reduction API is loaded at its first use::

    bulkred.sum(x)            # x: a torch tensor, cupy array, DLPack object or numpy array
    bulkred.sum(x, axis=(0, 2), keepdims=True)
    bulkred.max(x, out=y)
    bulkred.var_mean(x, axis=-1)  # every function of the table (functions.py): mean, var, std,
                                  # argmax, vector_norm, logsumexp, ... (docs/from_torch.md)
    bulkred.rms_norm(h, (4096,), w)   # the row normalizations: softmax, log_softmax, rms_norm,
                                      # layer_norm, add_rms_norm, cross_entropy (docs/rows.md)
"""

from __future__ import annotations

from bulkred_dialect._version import __version__


def _api() -> tuple[str, ...]:
    """The public names: every row of the function table (functions.py: one tensor, and
    the lists'), ``reduce`` and ``ReductionError`` (read at the first use: ``import
    bulkred_dialect`` imports nothing)."""
    from bulkred_dialect.functions import FUNCTIONS

    return (*FUNCTIONS, "reduce", "ReductionError", *_lists(), *_norms())


def _lists() -> tuple[str, ...]:
    """The list functions' names (functions.py's list rows; foreach.py runs them)."""
    from bulkred_dialect.functions import LISTS

    return (*LISTS, "TensorList", "ListError")


def _norms() -> tuple[str, ...]:
    """The row normalizations' names (functions.py's row rows; row_functions.py runs them)."""
    from bulkred_dialect.functions import NORMS

    return tuple(NORMS)


def __getattr__(name: str):
    if not name.startswith("__") and name in _norms():
        from bulkred_dialect import row_functions

        value = row_functions.PUBLIC[name]
        globals()[name] = value
        return value
    if not name.startswith("__") and name in _lists():
        from bulkred_dialect import foreach

        value = getattr(foreach, name)
        globals()[name] = value
        return value
    if not name.startswith("__") and name in _api():
        from bulkred_dialect import api, reductions

        value = getattr(reductions if name != "ReductionError" else api, name)
        globals()[name] = value  # later reads skip this hook (~1.5 us a call)
        return value
    raise AttributeError(f"module 'bulkred_dialect' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *_api()})
