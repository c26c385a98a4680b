"""reduction -> grid_middle: the ``middle`` form [O, R, I], the R axis of O blocks of
R x I reduced (``x.sum(dim=1)`` of a 3-D tensor), with the same bits on every run, for
every kind and every type the collective lowerings take (priority 63).

Each block is a column reduction of R x I, lowered as ``grid_split_det`` lowers one:
the grid is column tiles (x) times row splits (y) times the O blocks (z); each CTA sums
its rows of one column tile of its block, writes the partial row into the workspace
and takes its tile's ticket; the last CTA of a tile adds the partial rows in split order
and writes ``dst[o, i]``. CTAs are narrowed to I's width (at least one warp), and the
splits shared among the blocks (about 1024 threads per multiprocessor in all).

Needs O <= 65535 (the grid's z limit); a larger O goes to ``grid_gather``.

Spec: PTX ISA, ld, atom, fence (docs/scopes.md).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import ReduceOp
from bulkred_dialect.passes.canonical import MIDDLE
from bulkred_dialect.passes.predicates import WARP, Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import MAX_GRID_Y, form_of, grid_predicates
from bulkred_dialect.passes.variants.grid_split_det import CTAS_PER_SM, split_det
from bulkred_dialect.passes.variants.kernel import elem_of, sm_count

BLOCK = 256


def _blocks_fit(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, ReduceOp)
    o = form_of(op).batch
    return o <= MAX_GRID_Y, f"O = {o}"


PREDICATES = [
    *grid_predicates(MIDDLE),
    Predicate("blocks", _blocks_fit, expected=f"O <= {MAX_GRID_Y}"),
]


def lower_grid_middle(op: Operation, rewriter: PatternRewriter, target: Target, max_vec: int = 16) -> None:
    """``max_vec``: 1 for scalar loads (``grid_gather`` of a view off the vector alignment)."""
    assert isinstance(op, ReduceOp)
    form = form_of(op)
    elem = elem_of(op)
    vec = min(elem.vector, max_vec) if form.n % elem.vector == 0 else 1
    threads = -(-form.n // vec)
    block = min(BLOCK, -(-threads // WARP) * WARP)
    # narrower CTAs, more of them: the same threads in flight as grid_split_det's
    split_det(op, rewriter, target, form, block, sm_count(target) * CTAS_PER_SM * (BLOCK // block), max_vec=max_vec)


GRID_MIDDLE = Variant(
    "bulkred.reduce", "grid_middle", priority=63, predicates=PREDICATES, lower=lower_grid_middle
)
