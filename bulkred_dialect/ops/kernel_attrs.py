"""Names of the attributes a lowering puts on a kernel ``func.func`` for the launcher
(no xDSL import, so that the runtime can read them cheaply).

* ``bulkred.workspace = <bytes> : i64``: the kernel takes one extra last parameter, a
  zero-filled global buffer of that many bytes, which it leaves zeroed again;
* ``bulkred.zero_init = [i, ...]``: the launcher zero-fills those user parameters before
  each launch (the kernel accumulates into them);
* ``bulkred.align = [a, ...]``: one entry per user parameter, the alignment in bytes its
  address needs (the width of the widest vector access of it: 16 for ``ld.v4.f32``, 8
  for ``ld.v4.b16``; 1 for none beyond the element's own); the launcher refuses an array
  whose address is not a multiple (a view at a storage offset) instead of launching a
  kernel that would fault;
* ``bulkred.dims = [[[p, axis], ...], ...]``: the kernel takes, after its user
  parameters (and before the workspace), one ``i64`` scalar per entry: the size of
  dimension ``axis`` of user parameter ``p`` (the first pair), a dynamic dimension (``?``)
  that the other pairs' dimensions must equal; the launcher passes it (the row
  normalizations' M: one kernel for every M of an N, docs/rows.md);
* ``bulkred.grid_rows = [per, cap]``: the grid is chosen at the launch from the first
  ``bulkred.dims`` value d: :func:`grid_for_rows` (``#bulkred.launch``'s grid is the
  largest, ``cap`` units of a cluster each); ``[per, cap, whole]`` (a launch without a
  cluster): a grid of 2 to ``whole`` CTAs is launched as one cluster (:func:`whole_grid_cluster`;
  the kernel reads ``%cluster_nctarank``: rows_lower.LOSS_TAIL_CLUSTER);
* ``bulkred.min_ctas_per_sm = <n> : i64``: the PTX printer writes ``.minnctapersm n``
  (ptxas keeps the registers per thread low enough for n CTAs of ``.reqntid`` threads on
  a multiprocessor).

See docs/runtime.md.
"""

WORKSPACE_ATTR = "bulkred.workspace"
ZERO_INIT_ATTR = "bulkred.zero_init"
ALIGN_ATTR = "bulkred.align"
DIMS_ATTR = "bulkred.dims"
GRID_ROWS_ATTR = "bulkred.grid_rows"
MIN_CTAS_ATTR = "bulkred.min_ctas_per_sm"


def grid_for_rows(per: int, cap: int, cluster: int, rows: int) -> int:
    """The CTAs of a launch of ``rows`` rows (``bulkred.grid_rows = [per, cap]``): a unit
    (a cluster of ``cluster`` CTAs) per ``per`` rows, at most ``cap`` units, at least one
    (no rows: one unit, which does nothing)."""
    return cluster * max(1, min(cap, -(-rows // per)))


def whole_grid_cluster(rule: tuple[int, ...] | list[int], ctas: int) -> int:
    """The cluster size of a grid of ``ctas`` CTAs launched without one by the rule
    ``bulkred.grid_rows`` ``rule``: the whole grid where the rule has a third entry
    ``whole`` and ``2 <= ctas <= whole``, else 1."""
    return ctas if len(rule) > 2 and 2 <= ctas <= rule[2] else 1
