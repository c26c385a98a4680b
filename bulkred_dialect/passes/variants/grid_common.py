"""What the grid-scope variants share: the form of the reduction (full, rows or
columns), their predicates, the kernel-level changes a whole-kernel lowering makes
(launch shape, workspace parameter, outputs to zero before the launch), and the
streaming loop that accumulates a thread's share of a global buffer with vector loads.

A grid-scope ``bulkred.reduce`` is lowered from its canonical form
(``passes/canonical.py``): ``whole`` [N], ``inner`` [M, N] (rows), ``outer`` [M, N]
(columns), ``middle`` [O, R, I], or ``general`` (anything else after merging).

Runtime contract (docs/runtime.md): ``bulkred.workspace = <bytes>`` on the kernel adds
a last parameter, a zero-filled global buffer of that size which the kernel leaves
zeroed; ``bulkred.zero_init = [i]`` asks the launcher to zero parameter i before each
launch (the kernel accumulates into it).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    i8,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.dtypes import DTYPES
from bulkred_dialect.ops.kernel_attrs import ALIGN_ATTR, WORKSPACE_ATTR, ZERO_INIT_ATTR
from bulkred_dialect.ops.ptx.arith import ArithType, DivOp, RemOp
from bulkred_dialect.ops.ptx.base import StateSpace
from bulkred_dialect.ops.ptx.memory import PtrAddOp
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import (
    INDEX_KINDS,
    LAUNCH_ATTR,
    ExecScope,
    LaunchAttr,
    MemoryScope,
    ReduceOp,
    buffer_type,
    enclosing_kernel,
    kernel_launch,
)
from bulkred_dialect.passes.canonical import Canonical, canonical, pairs_form
from bulkred_dialect.passes.elements import Elem, ld_type
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.fused import Reducer
from bulkred_dialect.passes.predicates import (
    ANY_GRID_DTYPE,
    FUSED_MATH,
    Predicate,
    exec_scope_in,
)
from bulkred_dialect.passes.variants.kernel import elem_of

MAX_GRID_Y = 65535


Form = Canonical
"""The shape of a grid reduction (``passes/canonical.py``): ``form`` its name,
``m`` / ``n`` its rows and row length, ``batch`` the O of ``middle``."""


def form_of(op: ReduceOp) -> Canonical:
    """``op``'s canonical form; a view's axes in stride order where the rules of
    passes/canonical.py allow (argmax and argmin keep their reduced axes' order: their
    index counts them in the op's order)."""
    st = op.src.type
    assert isinstance(st, MemRefType)
    strides = None
    if isinstance(st.layout, StridedLayoutAttr):  # a view (the verifier: static, >= 0, offset 0)
        strides = [int(s) for s in st.get_strides()]  # type: ignore[arg-type,union-attr]
    if op.pairs is not None:  # complex numbers as (re, im): grid_gather's alone
        return pairs_form(st.get_shape(), op.reduced_axes(), strides)
    return canonical(st.get_shape(), op.reduced_axes(), strides, keep_reduced_order=op.kind.data in INDEX_KINDS)


def form_is(*kinds: str):
    def check(op: Operation, target: Target) -> tuple[bool, object]:
        assert isinstance(op, ReduceOp)
        for field, v in (("src", op.src), ("dst", op.dst)):
            t = v.type
            if not isinstance(t, MemRefType) or isinstance(t.layout, NoneAttr):
                continue
            if field == "dst" or not isinstance(t.layout, StridedLayoutAttr):
                return False, f"{field} layout {t.layout} (strided {field}: not yet)"
        f = form_of(op)
        return f.form in kinds, f

    return check


def alone_in_kernel(op: Operation, target: Target) -> tuple[bool, object]:
    """The op is its kernel's only op besides ``func.return``, and its buffers are
    the kernel's parameters (``src`` and ``dst`` of a ``bulkred.reduce``, every operand
    of a list op): the lowering owns the whole kernel and its launch."""
    kernel = enclosing_kernel(op)
    if kernel is None:
        return False, "not in a kernel"
    others = [o.name for o in kernel.body.walk() if o is not op and not isinstance(o, func.ReturnOp | func.FuncOp)]
    if others:
        return False, f"kernel also holds {', '.join(sorted(set(others)))}"
    args = set(kernel.body.block.args)
    if isinstance(op, ReduceOp):
        if op.src not in args or op.dst not in args:
            return False, "src or dst is not a kernel parameter"
    elif any(v not in args for v in op.operands):
        return False, "an operand is not a kernel parameter"
    return True, "alone, on parameters"


def not_deterministic(op: Operation, target: Target) -> tuple[bool, object]:
    assert isinstance(op, ReduceOp)
    asked = op.deterministic is not None
    return not asked, "requested" if asked else "not requested"


def grid_predicates(*forms: str, expected: str | None = None) -> list[Predicate]:
    """The predicates every grid variant of ``forms`` starts with."""
    return [
        Predicate("exec_scope", exec_scope_in(ExecScope.GRID), expected="grid"),
        Predicate("form", form_is(*forms), expected=expected or ", ".join(forms)),
        Predicate("kernel", alone_in_kernel, expected="alone, on parameters"),
        ANY_GRID_DTYPE,
        FUSED_MATH,
    ]


# region Kernel-level changes


LOWERING: ContextVar[str] = ContextVar("bulkred_lowering_variant", default="the lowering")
"""The name of the variant lowering the op now (set by ``lower_tile_reductions``), for
the launch's refusal."""


def asked_launch(kernel: func.FuncOp) -> LaunchAttr | None:
    """The ``bulkred.launch`` written on a grid-scope or list op's kernel before its
    lowering (the user's), or None when the kernel has none (``builder.kernel`` without
    a launch: the variant chooses); a malformed one is the verifier's to report. Any
    launch written, one thread included, is honoured or refused (:func:`set_launch`)."""
    try:
        return kernel_launch(kernel)
    except VerifyException:
        return None


def grid_ctas(kernel: func.FuncOp, chosen: int, block: int) -> int:
    """The CTAs of a variant whose CTAs share the work in a grid-stride loop (any count
    gives the same result): ``chosen``, or the grid of the kernel's own ``bulkred.launch``
    where it asks a 1-D grid with the variant's ``block`` and no cluster (honoured);
    another launch is refused by :func:`set_launch`."""
    asked = asked_launch(kernel)
    if asked is None:
        return chosen
    (n, gy, gz), b, c = asked.grid_dims, asked.block_dims, asked.cluster_dims
    if gy == gz == 1 and b == (block, 1, 1) and c == (1, 1, 1) and 1 <= n <= MAX_CTAS:
        return n
    return chosen


def one_cta_block(kernel: func.FuncOp, chosen: int, limit: int) -> int:
    """The block of a variant's one-CTA launch (any multiple of 32 up to ``limit`` gives
    the same result): ``chosen``, or the block the kernel's own ``bulkred.launch`` asks
    with grid [1] and no cluster, where it is such a block (honoured)."""
    asked = asked_launch(kernel)
    if asked is None or asked.grid_dims != (1, 1, 1) or asked.cluster_dims != (1, 1, 1):
        return chosen
    b, by, bz = asked.block_dims
    return b if by == bz == 1 and b % 32 == 0 and 32 <= b <= limit else chosen


def asks_one_cta(kernel: func.FuncOp) -> bool:
    """The kernel's own ``bulkred.launch`` asks one CTA (grid [1])."""
    asked = asked_launch(kernel)
    return asked is not None and asked.grid_dims == (1, 1, 1)


MAX_CTAS = 2**31 - 1
"""The largest 1-D grid (``gridDim.x``)."""


def set_launch(kernel: func.FuncOp, grid: Sequence[int], block: Sequence[int], cluster: Sequence[int] = (1,)) -> None:
    """The kernel's launch, as the lowering chooses it. A ``bulkred.launch`` written on
    the kernel before (the user's) is kept where it is this one (a variant that takes
    the grid asked for: :func:`grid_ctas`), else refused at the op's location: a
    grid-scope or list lowering chooses its block and cluster."""
    new = LaunchAttr(grid, block, cluster)
    asked = asked_launch(kernel)
    if asked is not None and (asked.grid_dims, asked.block_dims, asked.cluster_dims) != (
        new.grid_dims, new.block_dims, new.cluster_dims
    ):
        op = next(o for o in kernel.body.walk() if o.name.startswith("bulkred."))  # the op lowered (alone in its kernel)
        raise LocatedError(
            op,
            f"the kernel's bulkred.launch asks {_dims_text(asked)}; {LOWERING.get()} launches {_dims_text(new)} "
            f"(a grid-scope lowering chooses its block and cluster, and takes the grid asked for where its CTAs "
            f"share the work in a loop): write bulkred.launch = #bulkred.launch<{_dims_text(new)}> or none",
        )
    kernel.attributes[LAUNCH_ATTR] = new


def _dims_text(a: LaunchAttr) -> str:
    def dims(d: tuple[int, int, int]) -> str:
        while len(d) > 1 and d[-1] == 1:
            d = d[:-1]
        return "[" + ", ".join(map(str, d)) + "]"

    return f"grid = {dims(a.grid_dims)}, block = {dims(a.block_dims)}, cluster = {dims(a.cluster_dims)}"


def add_workspace(kernel: func.FuncOp, nbytes: int) -> BlockArgument:
    """Append the zero-filled workspace parameter of ``nbytes`` (rounded up to 16)."""
    nbytes = max(16, -(-nbytes // 16) * 16)
    block = kernel.body.block
    arg = block.insert_arg(buffer_type([nbytes], i8, MemoryScope.GLOBAL), len(block.args))
    arg.name_hint = "workspace"
    kernel.function_type = FunctionType.from_lists([a.type for a in block.args], [])
    kernel.attributes[WORKSPACE_ATTR] = IntegerAttr(nbytes, i64)
    return arg


def zero_before_launch(kernel: func.FuncOp, buffer: SSAValue) -> None:
    idx = list(kernel.body.block.args).index(buffer)
    kernel.attributes[ZERO_INIT_ATTR] = ArrayAttr([IntegerAttr(idx, i64)])


def align16(n: int) -> int:
    return -(-n // 16) * 16


def require_alignment(p: SSAValue, nbytes: int) -> None:
    """Record in ``bulkred.align`` that the kernel parameter the global address ``p``
    derives from (through ``ptx.add.ptr`` and the cast of ``global_ptr``) is accessed
    ``nbytes`` at a time (a vector load): its address must be a multiple of ``nbytes``
    (the offsets the lowering adds are). The launcher refuses a misaligned array
    (docs/runtime.md). The workspace parameter (the runtime's own buffer) is skipped."""
    v = p
    while isinstance(v.owner, Operation):
        o = v.owner
        if isinstance(o, PtrAddOp):
            v = o.base
        elif o.name == "builtin.unrealized_conversion_cast" and len(o.operands) == 1:
            v = o.operands[0]
        else:
            return
    if not isinstance(v, BlockArgument):
        return
    kernel = v.block.parent_op()
    if not isinstance(kernel, func.FuncOp) or v.block is not kernel.body.block:
        return
    users = len(kernel.body.block.args) - (1 if WORKSPACE_ATTR in kernel.attributes else 0)
    if v.index >= users:
        return
    old = kernel.attributes.get(ALIGN_ATTR)
    align = [a.value.data for a in old.data] if isinstance(old, ArrayAttr) else []
    align += [1] * (users - len(align))
    if align[v.index] >= nbytes:
        return
    align[v.index] = nbytes
    kernel.attributes[ALIGN_ATTR] = ArrayAttr([IntegerAttr(a, i64) for a in align])


# endregion

# region Streaming a thread's share


def load_item(e: Emitter, elem: Elem, p: SSAValue, offset: int, vec: int, *, nc: bool = True) -> list[SSAValue]:
    """``vec`` elements at ``p + offset`` (one vector load, or one scalar load)."""
    if offset >= 2**31:
        p, offset = e.ptr_add(p, offset), 0
    if vec == 1:
        vals = [e.ld(elem.ld, p, elem.ir, offset)]
    else:
        require_alignment(p, vec * elem.bytes)
        vals = e.ld_vec(elem.ld, p, elem.ir, vec, offset, nc=nc)
    return [e.to_acc(elem, v) for v in vals]


def reducer(op: ReduceOp) -> Reducer:
    """How ``op`` accumulates (passes/fused.py): its kind's state, prologue and epilogue."""
    return Reducer(op, elem_of(op), form_of(op).reduced_count)


Index = tuple[SSAValue, int, int]
"""Where the elements of a thread's items sit along the reduced axes (argmax/argmin):
(the first item's index, an ``i64``; the index step from one item to the next; the
step from one vector lane to the next: 1 along a row, 0 across columns)."""


def accumulate(
    e: Emitter, r: Reducer, accs: list[SSAValue], vals: list[SSAValue], index: SSAValue | None = None, lane_step: int = 1
) -> list[SSAValue]:
    """The lane states ``accs`` (flat) each with its lane's element of ``vals``; lane j's
    element is at ``index + j * lane_step`` (argmax/argmin)."""
    states = r.split(accs)
    indices: list[SSAValue | None] = []
    for j in range(len(states)):
        i = None
        if r.needs_index:
            assert index is not None
            i = e.add_i(index, j * lane_step) if j * lane_step else index
        indices.append(i)
    return r.flat(r.absorb_item(e, states, vals, indices))


def stream(
    e: Emitter,
    r: Reducer,
    p: SSAValue,
    accs: list[SSAValue],
    count: int,
    stride: int,
    vec: int,
    unroll: int = 4,
    index: Index | None = None,
) -> tuple[list[SSAValue], SSAValue, SSAValue | None]:
    """Combine the ``count`` items at ``p``, ``p + stride``, ... into ``accs`` (one state
    per vector lane, flat), ``unroll`` loads in flight per loop step. Returns the
    states, the address of the item after the last, and its index (argmax/argmin)."""
    elem = r.elem
    rounds, rest = divmod(count, unroll)
    idx, step, lane_step = index if index is not None and r.needs_index else (None, 0, 1)
    if idx is not None:
        idx = r.as_index(e, idx)
    if rounds > 0:

        def body(b: Emitter, iv: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            q = b.ptr_add(p, iv)
            vals = [load_item(b, elem, q, u * stride, vec) for u in range(unroll)]
            out = list(args[: len(accs)])
            at = args[len(accs)] if idx is not None else None
            for u, v in enumerate(vals):
                i = None if at is None else (b.add_i(at, u * step) if u else at)
                out = accumulate(b, r, out, v, i, lane_step)
            if at is not None:
                out.append(b.add_i(at, unroll * step))
            return out

        carried = e.for_(0, rounds * unroll * stride, unroll * stride, [*accs, *([idx] if idx is not None else [])], body)
        accs = carried[: len(accs)]
        if idx is not None:
            idx = carried[len(accs)]
    q = e.ptr_add(p, rounds * unroll * stride) if rounds else p
    for u in range(rest):
        i = None if idx is None else (e.add_i(idx, u * step) if u else idx)
        accs = accumulate(e, r, accs, load_item(e, elem, q, u * stride, vec), i, lane_step)
    if idx is not None and rest:
        idx = e.add_i(idx, rest * step)
    end = e.ptr_add(p, count * stride) if count else p
    return accs, end, idx


def checked(
    e: Emitter, r: Reducer, cond: SSAValue, p: SSAValue, accs: list[SSAValue], vec: int,
    index: SSAValue | None = None, lane_step: int = 1,
) -> list[SSAValue]:
    """``accs`` combined with the item at ``p`` (at ``index``) where ``cond`` holds."""
    return e.if_(
        cond,
        lambda b: accumulate(b, r, accs, load_item(b, r.elem, p, 0, vec), index, lane_step),
        lambda b: list(accs),
        [a.type for a in accs],
    )


def neutral(e: Emitter, r: Reducer, n: int) -> list[SSAValue]:
    """``n`` neutral states (flat): for a plain kind, copies of its identity in the
    accumulator type (NaN for a NaN-ignoring max/min: ``Emitter.identity``)."""
    return r.neutrals(e, n)


def store_out(e: Emitter, r: Reducer, dst: SSAValue, state: list[SSAValue], index: SSAValue | int) -> None:
    """``dst[index] = `` the result of ``state`` in the output type (combined with the old
    value under accum; the epilogue applied), and ``aux[index]`` (argmax's value, var's
    mean). ``dst`` is the global address of the output buffer; ``index`` an ``i64`` or int."""
    op, elem = r.op, r.elem
    value, aux = r.results(e, state)
    if r.needs_index:
        size, t = 8, ld_type(DTYPES["int64"])
    else:
        size, t = elem.out.bytes, elem.out_ld
    off = e.mul_i(index, size) if isinstance(index, SSAValue) else e.const(index * size, i64)
    q = e.ptr_add(dst, off)
    if op.accum is not None:
        old = e.convert(e.ld(elem.out_ld, q, elem.out_ir), elem.out, elem.accumulator)
        value = e.combine(op.kind.data, elem.accumulator, old, value)
    e.st(t, q, value if r.needs_index else e.from_acc(elem, value))
    if aux is not None and op.aux is not None:
        out = elem.dtype if r.needs_index else elem.out
        size = out.bytes
        off = e.mul_i(index, size) if isinstance(index, SSAValue) else e.const(index * size, i64)
        e.st(ld_type(out), e.ptr_add(global_ptr(e, op.aux), off), e.convert(aux, elem.accumulator, out))


def offset_of(e: Emitter, linear: SSAValue, dims: list[tuple[int, int]]) -> SSAValue:
    """The element offset (``i64``) of the row-major index ``linear`` (``i64``) over
    ``dims``, (extent, element stride in ``src``) pairs outermost first."""
    off = None
    rest = linear
    for k in range(len(dims) - 1, -1, -1):
        extent, stride = dims[k]
        if k == 0:
            digit = rest  # below the outermost extent already
        else:
            ext = e.const(extent, i64)
            digit = e.value(RemOp(ArithType.U64, rest, ext))
            rest = e.value(DivOp(ArithType.U64, rest, ext))
        term = e.mul_i(digit, stride) if stride != 1 else digit
        off = term if off is None else e.add_i(off, term)
    return off if off is not None else e.const(0, i64)


def store_lanes(e: Emitter, r: Reducer, dst: SSAValue, states: Sequence[list[SSAValue]], first: SSAValue) -> None:
    """:func:`store_out` of each vector lane's state: lane j at ``dst[first + j]``."""
    for j, state in enumerate(states):
        store_out(e, r, dst, state, e.add_i(first, j))


def global_ptr(e: Emitter, buffer: SSAValue) -> SSAValue:
    return e.ptr(buffer, StateSpace.GLOBAL)


# endregion


# region Column reductions


@dataclass(frozen=True)
class ColumnPlan:
    """A column reduction of M x N: CTAs of ``block`` threads, each thread ``vec``
    adjacent columns, ``tiles`` column tiles of ``block * vec`` columns (grid x) times
    ``split`` row splits (grid y); split s takes rows s, s + split, ..."""

    m: int
    n: int
    block: int
    vec: int
    split: int

    @property
    def width(self) -> int:
        return self.block * self.vec

    @property
    def tiles(self) -> int:
        return -(-self.n // self.width)


MIN_ROWS_PER_SPLIT = 8
"""A row split below this many rows costs more in its CTA's start and its partial tile
than its loads save (short matrices get fewer splits)."""


def column_plan(form: Form, elem: Elem, ctas_wanted: int, block: int = 256, max_vec: int = 4) -> ColumnPlan:
    """``max_vec``: at most this many columns per thread (1 for a fused state of several
    registers: more column tiles, fewer row splits for the last CTA to combine)."""
    # the partials (in the accumulator type) are read back as vectors of as many lanes
    vec = min(elem.vector, elem.partials.vector, max_vec)
    vec = vec if form.n % vec == 0 else 1
    tiles = -(-form.n // (block * vec))
    split = max(1, min(ctas_wanted // tiles, -(-form.m // MIN_ROWS_PER_SPLIT), MAX_GRID_Y))
    return ColumnPlan(form.m, form.n, block, vec, split)


def column_partial(
    e: Emitter,
    op: ReduceOp,
    plan: ColumnPlan,
    tid: SSAValue,
    tile: SSAValue,
    s: SSAValue,
    unroll: int = 4,
    *,
    base: SSAValue | None = None,
    out_base: SSAValue | None = None,
) -> tuple[SSAValue, list[SSAValue]]:
    """The thread's first column (``i32``) and its accumulators over the rows of split
    ``s`` (identity where the column is past N); the M x N matrix starts ``base`` bytes
    (an ``i64``) into ``src`` (a block of ``middle``), whose outputs start at index
    ``out_base`` (an ``i64``; exp_sub's c)."""
    r = reducer(op)
    elem = r.elem
    col = e.add_i(e.mul_i(tile, plan.width), e.mul_i(tid, plan.vec))
    row_bytes = plan.n * elem.bytes
    x = global_ptr(e, op.src)
    if base is not None:
        x = e.ptr_add(x, base)
    full = plan.m // plan.split

    def rows(b: Emitter) -> list[SSAValue]:
        if r.exp_sub:  # exp_sub's c of each lane's column (the block's outputs start at out_base)
            first = b.wide(col) if out_base is None else b.add_i(b.wide(col), out_base)
            r.load_shifts(b, global_ptr(b, op.aux), first, plan.vec)
        start = b.ptr_add(x, b.add_i(b.mul_i(b.wide(s), row_bytes), b.mul_i(b.wide(col), elem.bytes)))
        index = (s, plan.split, 0) if r.needs_index else None
        accs, nxt, at = stream(
            b, r, start, neutral(b, r, plan.vec), full, plan.split * row_bytes, plan.vec, unroll, index
        )
        if plan.m % plan.split:
            accs = checked(b, r, b.cmp("ult", s, plan.m - full * plan.split), nxt, accs, plan.vec, at, 0)
        return accs

    accs = e.if_(e.cmp("slt", col, plan.n), rows, lambda b: neutral(b, r, plan.vec), r.types * plan.vec)
    return col, accs


# endregion
