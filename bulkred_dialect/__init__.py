"""bulkred: an xDSL dialect and lowering pipeline for GPU reductions.

``import bulkred_dialect as bulkred`` stays light (no xdsl or CUDA import); the
reduction API is loaded at its first use::

    bulkred.sum(x)            # x: a torch tensor, cupy array, DLPack object or numpy array
    bulkred.sum(x, axis=(0, 2), keepdims=True)
    bulkred.max(x, out=y)
    bulkred.var_mean(x, axis=-1)  # fused reductions: mean, var, std, var_mean, argmax, argmin,
                                  # vector_norm, logsumexp (docs/fused.md)
"""

from __future__ import annotations

__version__ = "0.1.0"

_API = (
    "sum", "prod", "max", "min", "any", "all", "and_", "or_", "xor", "reduce", "ReductionError",
    "mean", "var", "std", "var_mean", "argmax", "argmin", "vector_norm", "logsumexp",
)


def __getattr__(name: str):
    if name in _API:
        from bulkred_dialect import api

        value = globals()[name] = getattr(api, name)  # later reads skip this hook (~1.5 us a call)
        return value
    raise AttributeError(f"module 'bulkred_dialect' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
