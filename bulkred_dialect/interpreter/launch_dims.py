"""What the launcher derives for a kernel with a dynamic dimension, on the CPU
(``ops/kernel_attrs.py``): the ``i64`` size parameters of ``bulkred.dims`` read from the
arrays' shapes, the zero-filled workspace of ``bulkred.workspace`` when the caller passes
none, and the grid of ``bulkred.grid_rows``; so that :func:`~bulkred_dialect.interpreter.threads.run_grid`
and :func:`~bulkred_dialect.interpreter.clusters.run_cluster_grid` take the user
parameters only, as the GPU runtime's kernels do (docs/rows.md: one kernel for every M)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr

from bulkred_dialect.errors import SignatureValueError
from bulkred_dialect.ops.kernel_attrs import DIMS_ATTR, GRID_ROWS_ATTR, WORKSPACE_ATTR, grid_for_rows


def _ints(a: Any) -> list[Any]:
    return [_ints(x) if isinstance(x, ArrayAttr) else x.value.data for x in a.data]


def dynamic_launch(callee: func.FuncOp, arrays: Sequence[Any], cluster: int = 1) -> tuple[list[Any], int | None, int]:
    """``arrays`` (the user parameters, and the workspace or not) with the size parameters
    inserted after the user parameters and, where missing, a zero-filled workspace; and
    the grid's CTAs that ``bulkred.grid_rows`` gives (None: the kernel's own launch); and
    how many buffers it added at the end (the workspace: not returned to the caller).
    A kernel without ``bulkred.dims``, or a call that passes every argument, is returned
    as it is."""
    dims = callee.attributes.get(DIMS_ATTR)
    if not isinstance(dims, ArrayAttr):
        return list(arrays), None, 0
    entries = _ints(dims)
    n_args = len(callee.function_type.inputs.data)
    ws = WORKSPACE_ATTR in callee.attributes
    users = n_args - len(entries) - (1 if ws else 0)
    if len(arrays) not in (users, users + (1 if ws else 0)) or len(arrays) == n_args:
        return list(arrays), None, 0
    name = callee.sym_name.data
    sizes = []
    for pairs in entries:
        (p, axis), *others = pairs
        size = np.shape(arrays[p])[axis]
        for q, ax in others:
            if np.shape(arrays[q])[ax] != size:
                raise SignatureValueError(
                    f"'{name}' argument {q}: dimension {ax} is {np.shape(arrays[q])[ax]}, expected argument {p}'s "
                    f"dimension {axis}, {size} (one dynamic size)"
                )
        sizes.append(int(size))
    out = [*arrays[:users], *sizes, *arrays[users:]]
    added = 0
    if ws and len(arrays) == users:
        added = 1
        nbytes = callee.attributes[WORKSPACE_ATTR]
        assert isinstance(nbytes, IntegerAttr)
        out.append(np.zeros(nbytes.value.data, np.int8))
    rule = callee.attributes.get(GRID_ROWS_ATTR)
    grid = None
    if isinstance(rule, ArrayAttr) and sizes:
        per, cap = _ints(rule)[:2]  # (a third entry: whole_grid_cluster's, read by run_cluster_grid)
        grid = grid_for_rows(per, cap, cluster, sizes[0])
    return out, grid, added
