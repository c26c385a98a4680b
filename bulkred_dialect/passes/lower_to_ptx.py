"""``lower-to-ptx{target=sm_XX}``: level-2 IR into ptx ops inside ``func.func`` kernels
(docs/DEVELOPING.md, "Dialect levels", level 3).

What becomes what:

========================================  ==================================================
level 2                                   level 3
========================================  ==================================================
memref argument (scope global)            ``!ptx.ptr<global>`` argument (the printer loads
                                          it with ``ld.param.u64`` + ``cvta.to.global.u64``)
``memref.alloca`` (scope local, shared)   ``ptx.alloc`` (``.local`` / ``.shared`` array) and
                                          ``ptx.mov.addr``
``memref.load`` / ``memref.store``        address arithmetic + ``ptx.ld`` / ``ptx.st``
``arith.constant``                        ``ptx.mov.imm``
``arith.addi/subi/muli``                  ``ptx.add/sub/mul.lo`` (folded when both constant)
``arith.divui/divsi/remui/remsi/``        ``ptx.div/rem/min/max`` of the op's signedness
``minui/minsi/maxui/maxsi``               (folded when both constant)
``gpu.thread_id/block_id/block_dim/``     ``ptx.mov.sreg`` (``%tid``, ``%ctaid``, ``%ntid``,
``grid_dim/lane_id``,                     ``%nctaid``, ``%laneid``, ``%cluster_ctarank``,
``bulkred.cluster_rank/cluster_size``     ``%cluster_nctarank``) + ``cvt.u64.u32``; block
                                          extents and a cluster size from ``bulkred.launch``
                                          are constants
``memref.subview`` (static sizes and      the view's first element; its loads and stores
strides)                                  use the source's strides (docs/kernels.md)
``arith.index_cast/extsi/extui/trunci``   ``ptx.cvt`` (or nothing when the width is kept)
``arith.cmpi`` / ``arith.select``         ``ptx.setp`` / ``ptx.selp``
``arith.xori %p, true`` (``i1``)          nothing: the branches on ``%p``'s negation take
                                          ``%p`` with their successors swapped (only a
                                          branch condition may be negated)
``scf.for/if/yield``                      ``cf`` branches (xDSL's scf-to-cf), then ``ptx.bra``
                                          / ``ptx.bra.cond``
``scf.while/condition``                   ``cf`` branches (:class:`WhileLowering`), then as above
``func.return``                           ``ptx.ret``
``builtin.unrealized_conversion_cast``    the buffer's address (``shared`` to
memref -> ``!ptx.ptr<space>``             ``shared::cluster`` through ``ptx.mov``)
ptx ops                                   unchanged
========================================  ==================================================

**``index`` is lowered to ``i64``**: a global or local address is 64-bit, so index math
feeds address math without widening and cannot overflow for any buffer. Shared-memory
addresses are 32-bit: the byte offset is narrowed with ``cvt.u32.u64`` where it meets one.

Addresses: the byte offset of ``m[i, j]`` is ``(i * stride_0 + j) * elem_bytes`` (row-major,
static shapes only; for a view, its offset plus ``i * stride_0 + j * stride_1`` with the
source's strides). Indices are read as linear combinations through index adds,
subtractions and multiplications by constants: the constant part folds into the
``offset`` of ``ld``/``st`` (``A[i + 1]`` is ``[%rd+4]`` after ``4*i``), each remaining
value costs one ``mul.lo.s64`` (skipped when its factor is 1) and one ``add``.

Arrays: ``.local`` arrays are aligned to 16 bytes; ``.shared`` arrays to 16 bytes, or 128
bytes from 128 bytes up (bulk-copy tiles). The ``cluster_shared`` scope allocates in the
CTA's own shared memory like ``shared`` (peers reach it through ``mapa``).

Every created op carries the location of the op it replaces (a ptxas error or a later
verifier error then points at the source line). Anything else inside a kernel is a
located error naming the op, and so is any op of the module outside a ``func.func``, a
``bulkred.launch`` that is not a ``#bulkred.launch<...>``, and shared buffers that add
up to more static ``.shared`` memory than ptxas allows on the target
(:func:`~bulkred_dialect.ops.ptx.memory.max_static_shared`: 48 KiB, 227 KiB on
sm_90a/sm_100a). With a ``target`` option the module records it as
``bulkred.target``, so that ``-t ptx`` prints for that target.

Example::

    bulkred-opt kernel.mlir -p lower-to-ptx -t ptx
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    DYNAMIC_INDEX,
    NoneAttr,
    StringAttr,
    UnrealizedConversionCastOp,
    UnknownLoc,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.arith import AddOp, ArithType, DivOp, MaxOp, MinOp, MulLoOp, RemOp, SubOp
from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace, constant_int, i64
from bulkred_dialect.ops.ptx.control import (
    BraOp,
    CmpOp,
    CondBraOp,
    CvtOp,
    CvtType,
    RetOp,
    SelpOp,
    SelpType,
    SetpOp,
    SetpType,
)
from bulkred_dialect.ops.ptx.memory import (
    AllocOp,
    AllocSpace,
    LdOp,
    MovAddrOp,
    MovImmOp,
    MovOp,
    PtrAddOp,
    StOp,
    ldst_type_for,
    static_shared_error,
)
from bulkred_dialect.ops.target import DEFAULT_TARGET, Target
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.tile import ClusterRankOp, ClusterSizeOp, MemoryScope, kernel_launch, scope_of
from bulkred_dialect.passes.check_target import TARGET_ATTR, resolve_target

INDEX_TYPE = i64

_SCOPE_SPACE: dict[MemoryScope, AllocSpace] = {
    MemoryScope.LOCAL: AllocSpace.LOCAL,
    MemoryScope.SHARED: AllocSpace.SHARED,
    MemoryScope.CLUSTER_SHARED: AllocSpace.SHARED,
}

_SUPPORTED = (
    "func.return, memref.alloca/load/store/subview, arith.constant/addi/subi/muli/"
    "divui/divsi/remui/remsi/minui/minsi/maxui/maxsi/index_cast/"
    "extsi/extui/trunci/cmpi/select, arith.xori (negating a branch condition), "
    "gpu.thread_id/block_id/block_dim/grid_dim/lane_id, bulkred.cluster_rank/cluster_size, "
    "scf.for/if/while/condition/yield, cf.br/cond_br, ptx ops"
)

# arith.cmpi predicate -> (setp comparison, signed)
_CMPI: dict[str, tuple[CmpOp, bool]] = {
    "eq": (CmpOp.EQ, True),
    "ne": (CmpOp.NE, True),
    "slt": (CmpOp.LT, True),
    "sle": (CmpOp.LE, True),
    "sgt": (CmpOp.GT, True),
    "sge": (CmpOp.GE, True),
    "ult": (CmpOp.LO, False),
    "ule": (CmpOp.LS, False),
    "ugt": (CmpOp.HI, False),
    "uge": (CmpOp.HS, False),
}


def lowered_type(t: Attribute) -> Attribute:
    """The level-3 type of a scalar level-2 type: ``index`` becomes ``i64``."""
    return INDEX_TYPE if isinstance(t, IndexType) else t


def element_bytes(t: Attribute) -> int | None:
    """Bytes of one memref element, or None for a type PTX cannot load."""
    if isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64):
        return t.width.data // 8
    if isinstance(t, Float16Type | BFloat16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if t == VectorType(Float32Type(), [2]):
        return 8
    return None


def _width(t: Attribute) -> int:
    assert isinstance(t, IntegerType)
    return t.width.data


def _wrap(v: int, width: int) -> int:
    """``v`` as a signed two's-complement value of ``width`` bits."""
    v &= (1 << width) - 1
    return v - (1 << width) if v >= 1 << (width - 1) else v


def _linear(v: SSAValue, depth: int = 8) -> tuple[list[tuple[SSAValue, int]], int]:
    """``v`` as ``sum(factor * value) + constant`` through i64 ``ptx.add/sub/mul.lo`` with
    constant operands, so that ``A[i + 1]`` loads from ``[A + 4*i + 4]``. Exact: address
    arithmetic is modulo 2^64 as the index arithmetic is."""
    c = constant_int(v)
    if c is not None:
        return [], c
    op = v.owner
    if depth > 0 and isinstance(op, AddOp | SubOp | MulLoOp) and op.type.data == ArithType.S64:
        (ta, ca), (tb, cb) = _linear(op.lhs, depth - 1), _linear(op.rhs, depth - 1)
        if isinstance(op, AddOp):
            return ta + tb, ca + cb
        if isinstance(op, SubOp):
            return ta + [(x, -f) for x, f in tb], ca - cb
        if not tb:
            return [(x, f * cb) for x, f in ta], ca * cb
        if not ta:
            return [(x, f * ca) for x, f in tb], ca * cb
    return [(v, 1)], 0


def _negation_of(op: arith.XOrIOp) -> SSAValue | None:
    """``p`` when ``op`` is ``arith.xori p, true`` (either order) on i1, else None."""
    if op.result.type != IntegerType(1):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        c = constant_int(b)
        if c is not None and c & 1:
            return a
    return None


# region scf -> cf with locations


@dataclass
class _CurrentOp:
    op: Operation | None = None


class _Located(RewritePattern):
    """Runs ``inner`` on the ops of ``types`` (nothing else is tried: the walk passes
    every op of the kernel here) and remembers the op it rewrites, so that the ops it
    creates get that op's location (a ptxas error on a loop branch then points at the
    ``scf.for``)."""

    def __init__(self, inner: RewritePattern, current: _CurrentOp, types: tuple[type[Operation], ...]):
        self.inner = inner
        self.current = current
        self.types = types

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, self.types):
            self.current.op = op
            self.inner.match_and_rewrite(op, rewriter)


class WhileLowering(RewritePattern):
    """``scf.while`` into branches, as MLIR's SCFToControlFlow does: the entry branches to
    the "before" region with the loop's operands; its ``scf.condition`` becomes a
    conditional branch to the "after" region or out of the loop (passing its values to
    either: they are the loop's results); the "after" region's ``scf.yield`` branches
    back to the "before" region."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.WhileOp, rewriter: PatternRewriter) -> None:
        init_block = op.parent_block()
        assert init_block is not None
        # the code after the loop, taking the loop's results as block arguments
        continue_block = init_block.split_before(op)
        for i, t in enumerate(op.result_types):
            continue_block.insert_arg(t, i)
        before, after = op.before_region.block, op.after_region.block  # one block each
        condition, yield_ = before.last_op, after.last_op
        assert isinstance(condition, scf.ConditionOp) and isinstance(yield_, scf.YieldOp)
        values = list(condition.args)
        # each branch keeps the location of the terminator it replaces
        branch = cf.ConditionalBranchOp(condition.condition, after, values, continue_block, values)
        branch.location = condition.location
        rewriter.replace(condition, branch)
        back = cf.BranchOp(before, *yield_.operands)
        back.location = yield_.location
        rewriter.replace(yield_, back)
        rewriter.inline_region(op.before_region, BlockInsertPoint.before(continue_block))
        rewriter.inline_region(op.after_region, BlockInsertPoint.before(continue_block))
        rewriter.insert(cf.BranchOp(before, *op.arguments), InsertPoint.at_end(init_block))
        rewriter.replace(op, [], continue_block.args)


def convert_scf_to_cf(module: ModuleOp) -> None:
    """xDSL's ``convert-scf-to-cf`` plus :class:`WhileLowering`, keeping source locations
    on the created ops."""
    current = _CurrentOp()

    def locate(new: Operation) -> None:
        if isinstance(new.location, UnknownLoc) and current.op is not None:
            new.location = current.op.location

    lowerings = GreedyRewritePatternApplier(
        [SwitchLowering(), IfLowering(), ForLowering(), WhileLowering()],
        dce_enabled=False,  # keep every load and store the input asks for
    )
    # One walk: every scf op is on the worklist from the start (nested ones too, and
    # they stay on it when an outer op's region is inlined), and the ops the patterns
    # make are cf and arith ops, which no pattern here rewrites; so no second walk.
    PatternRewriteWalker(
        _Located(lowerings, current, (scf.IndexSwitchOp, scf.IfOp, scf.ForOp, scf.WhileOp)),
        apply_recursively=False,
        listener=PatternRewriterListener(operation_insertion_handler=[locate]),
    ).rewrite_module(module)


# endregion


@dataclass
class Buffer:
    """A memref value's base address and its level-2 type; for a ``memref.subview``, the
    address of the view's first element is ``base + byte_offset`` and element
    ``[i, j, ..]`` is ``strides`` (in elements) away from it."""

    base: SSAValue
    type: MemRefType
    byte_offset: int = 0
    strides: list[int] | None = None  # None: row-major from the shape

    def element_strides(self) -> list[int]:
        if self.strides is not None:
            return self.strides
        shape = self.type.get_shape()
        strides = [1] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            strides[k] = strides[k + 1] * shape[k + 1]
        return strides


@dataclass
class KernelLowering:
    """Lowers one ``func.func`` in place."""

    kernel: func.FuncOp
    target: Target = DEFAULT_TARGET
    buffers: dict[SSAValue, Buffer] = field(default_factory=dict)
    created: list[Operation] = field(default_factory=list)
    symbols: set[str] = field(default_factory=set)
    last_decl: AllocOp | None = None
    shared: list[AllocOp] = field(default_factory=list)
    # a negated predicate -> the predicate (arith.xori %p, true folded into branches)
    negated: dict[SSAValue, SSAValue] = field(default_factory=dict)

    # region Driver

    def run(self) -> None:
        k = self.kernel
        if not k.body.blocks:
            raise LocatedError(k, "must have a body to be a kernel")
        if k.function_type.outputs.data:
            raise LocatedError(k, "a kernel returns nothing, but this function has results")
        try:
            kernel_launch(k)
        except VerifyException as e:
            raise LocatedError(k, str(e)) from None
        self._convert_arguments()
        for block in self._block_order():
            for op in list(block.ops):
                self._lower(op)
        self._erase_dead()

    def _block_order(self) -> list[Block]:
        """Blocks with every definition before its uses (reverse post-order), then any
        unreachable ones."""
        entry = self.kernel.body.blocks.first
        assert entry is not None
        seen: set[Block] = set()
        post: list[Block] = []

        def visit(b: Block) -> None:
            stack: list[tuple[Block, int]] = [(b, 0)]
            seen.add(b)
            while stack:
                blk, i = stack.pop()
                succs = list(blk.last_op.successors) if blk.last_op is not None else []
                if i < len(succs):
                    stack.append((blk, i + 1))
                    s = succs[i]
                    if s not in seen:
                        seen.add(s)
                        stack.append((s, 0))
                else:
                    post.append(blk)

        visit(entry)
        order = post[::-1]
        return order + [b for b in self.kernel.body.blocks if b not in seen]

    def _convert_arguments(self) -> None:
        k = self.kernel
        entry = k.body.blocks.first
        assert entry is not None
        for arg in list(entry.args):
            t = arg.type
            if isinstance(t, MemRefType):
                scope = scope_of(t)
                if scope != MemoryScope.GLOBAL:
                    raise LocatedError(
                        k,
                        f"argument {arg.index} must be a memref in #bulkred.scope<global> "
                        f"to be a kernel parameter, got {t}",
                    )
                self._check_static(k, t)
                new = Rewriter.replace_value_with_new_type(arg, PtrType(StateSpace.GLOBAL))
                self.buffers[new] = Buffer(new, t)
            elif isinstance(t, IndexType):
                Rewriter.replace_value_with_new_type(arg, INDEX_TYPE)
        for block in list(k.body.blocks)[1:]:
            for arg in list(block.args):
                if isinstance(arg.type, MemRefType):
                    raise LocatedError(k, f"a memref block argument cannot be lowered: {arg.type}")
                if isinstance(arg.type, IndexType):
                    Rewriter.replace_value_with_new_type(arg, INDEX_TYPE)
        k.function_type = FunctionType.from_lists(list(entry.arg_types), [])

    def _erase_dead(self) -> None:
        """Erase the pure ops this pass created whose results nobody uses (constants that
        folded into ``ld``/``st`` offsets, mostly)."""
        for op in reversed(self.created):
            if op.parent is not None and op.results and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)

    # endregion

    # region Helpers

    def _insert(self, anchor: Operation, new: Operation, *, pure: bool = True) -> Operation:
        new.location = anchor.location
        Rewriter.insert_op(new, InsertPoint.before(anchor))
        if pure:
            self.created.append(new)
        return new

    def _replace(self, op: Operation, values: Sequence[SSAValue]) -> None:
        for old, new in zip(op.results, values, strict=True):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)

    def _imm(self, anchor: Operation, value: int, t: Attribute = INDEX_TYPE) -> SSAValue:
        return self._insert(anchor, MovImmOp(_wrap(value, _width(t)), t)).results[0]

    def _unsupported(self, op: Operation, why: str = "") -> LocatedError:
        return LocatedError(op, why or f"cannot be lowered to ptx (supported: {_SUPPORTED})")

    @staticmethod
    def _check_static(op: Operation, t: MemRefType) -> None:
        if any(d < 0 for d in t.get_shape()):
            raise LocatedError(op, f"needs a memref with a static shape, got {t}")
        if not isinstance(t.layout, NoneAttr):
            raise LocatedError(op, f"needs a memref with the default row-major layout, got {t}")
        if element_bytes(t.element_type) is None:
            raise LocatedError(op, f"element type {t.element_type} has no PTX load/store form")

    # endregion

    def _lower(self, op: Operation) -> None:
        if isinstance(op, PtxInstruction):
            return
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise self._unsupported(op)
        handler(self, op)

    # region arith

    def _constant(self, op: arith.ConstantOp) -> None:
        v = op.value
        t = lowered_type(op.result.type)
        if isinstance(v, IntegerAttr) and isinstance(t, IntegerType):
            new = self._insert(op, MovImmOp(_wrap(v.value.data, _width(t)), t))
        elif isinstance(v, FloatAttr) and element_bytes(t) in (2, 4, 8) and not isinstance(t, IntegerType):
            new = self._insert(op, MovImmOp(v.value.data, t))
        else:
            raise self._unsupported(op, f"constant {v} has no PTX immediate form")
        self._replace(op, new.results)

    def _binary(self, op: arith.AddiOp | arith.SubiOp | arith.MuliOp) -> None:
        t = lowered_type(op.result.type)
        w = _width(t)
        if w not in (16, 32, 64):
            raise self._unsupported(op, f"integer type {op.result.type} has no PTX arithmetic form")
        a, b = constant_int(op.lhs), constant_int(op.rhs)
        if a is not None and b is not None:
            folded = {arith.AddiOp: a + b, arith.SubiOp: a - b, arith.MuliOp: a * b}[type(op)]
            self._replace(op, [self._imm(op, folded, t)])
            return
        cls = {arith.AddiOp: AddOp, arith.SubiOp: SubOp, arith.MuliOp: MulLoOp}[type(op)]
        new = self._insert(op, cls(ArithType(f"s{w}"), op.lhs, op.rhs))
        self._replace(op, new.results)

    def _cast(self, op: Operation) -> None:
        src = op.operands[0]
        st, dt = lowered_type(op.operands[0].type), lowered_type(op.results[0].type)
        if not isinstance(st, IntegerType) or not isinstance(dt, IntegerType):
            raise self._unsupported(op, f"only integer casts are lowered, got {st} to {dt}")
        sw, dw = _width(st), _width(dt)
        if sw == dw:
            self._replace(op, [src])
            return
        unsigned = isinstance(op, arith.ExtUIOp | arith.TruncIOp) or dw < sw
        c = constant_int(src)
        if c is not None and sw > 1:
            c = c & ((1 << sw) - 1) if unsigned else _wrap(c, sw)
            self._replace(op, [self._imm(op, c, dt)])
            return
        if sw < 8 or dw < 8:
            raise self._unsupported(op, f"a cast between {st} and {dt} has no PTX form")
        kind = "u" if unsigned else "s"
        new = self._insert(op, CvtOp(CvtType(f"{kind}{dw}"), CvtType(f"{kind}{sw}"), src, dt))
        self._replace(op, new.results)

    def _cmpi(self, op: arith.CmpiOp) -> None:
        t = lowered_type(op.lhs.type)
        w = _width(t)
        if w not in (16, 32, 64):
            raise self._unsupported(op, f"comparison of {op.lhs.type} has no PTX form")
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        cmp, signed = _CMPI[pred]
        new = self._insert(op, SetpOp(cmp, SetpType(f"{'s' if signed else 'u'}{w}"), op.lhs, op.rhs))
        self._replace(op, new.results)

    def _select(self, op: arith.SelectOp) -> None:
        t = lowered_type(op.result.type)
        ldst = ldst_type_for(t)
        if ldst is None or t == IntegerType(8):
            raise self._unsupported(op, f"select of {op.result.type} has no PTX form")
        width = ldst.value[1:]
        new = self._insert(op, SelpOp(SelpType(f"b{width}"), op.lhs, op.rhs, op.cond))
        self._replace(op, new.results)

    def _xori(self, op: arith.XOrIOp) -> None:
        p = _negation_of(op)
        if p is None:
            raise self._unsupported(
                op, f"only the negation of an i1 (arith.xori with true) is lowered, got {op.result.type}"
            )
        for use in op.result.uses:
            user = use.operation
            is_branch = isinstance(user, cf.ConditionalBranchOp) and use.index == 0
            is_negation = isinstance(user, arith.XOrIOp) and _negation_of(user) is op.result
            if not (is_branch or is_negation):
                raise self._unsupported(
                    op, f"a negated i1 is lowered only as a branch condition, but '{user.name}' uses it"
                )
        self.negated[op.result] = p
        self.created.append(op)  # erased with the dead ops once the branches use p

    def _int_binary(self, op: Operation) -> None:
        """Index division, remainder, min and max: ``ptx.div/rem/min/max`` of the
        operation's signedness (folded when both operands are constants)."""
        cls, signed = _INT_BINARY[type(op)]
        t = lowered_type(op.results[0].type)
        w = _width(t)
        if w not in (16, 32, 64):
            raise self._unsupported(op, f"integer type {op.results[0].type} has no PTX arithmetic form")
        lhs, rhs = op.operands
        a, b = constant_int(lhs), constant_int(rhs)
        if a is not None and b is not None and (b % (1 << w) != 0 or cls in (MinOp, MaxOp)):
            self._replace(op, [self._imm(op, _fold_int(cls, signed, a, b, w), t)])
            return
        new = self._insert(op, cls(ArithType(f"{'s' if signed else 'u'}{w}"), lhs, rhs))
        self._replace(op, new.results)

    # endregion

    # region indices

    def _index_from_sreg(self, op: Operation, reg: SpecialRegister) -> None:
        """``ptx.mov.sreg`` (u32) widened to the index type."""
        v = self._insert(op, MovSregOp(reg)).results[0]
        wide = self._insert(op, CvtOp(CvtType.U64, CvtType.U32, v, INDEX_TYPE))
        self._replace(op, wide.results)

    def _launch_dims(self, field: str) -> tuple[int, int, int] | None:
        launch = kernel_launch(self.kernel)
        if launch is None:
            return None
        return launch.block_dims if field == "block" else launch.cluster_dims

    def _gpu_index(self, op: Operation) -> None:
        reg_stem, axis = _GPU_SREG[type(op)], "xyz".index(str(op.dimension.data))  # type: ignore[attr-defined]
        block = self._launch_dims("block")
        # .reqntid holds every launch to the bulkred.launch block: its extents are constants
        if block is not None and isinstance(op, gpu.BlockDimOp):
            self._replace(op, [self._imm(op, block[axis])])
            return
        if block is not None and isinstance(op, gpu.ThreadIdOp) and block[axis] == 1:
            self._replace(op, [self._imm(op, 0)])
            return
        self._index_from_sreg(op, SpecialRegister(f"{reg_stem}.{'xyz'[axis]}"))

    def _lane_id(self, op: gpu.LaneIdOp) -> None:
        self._index_from_sreg(op, SpecialRegister.LANEID)

    def _cluster_rank(self, op: ClusterRankOp) -> None:
        self._index_from_sreg(op, SpecialRegister.CLUSTER_CTARANK)

    def _cluster_size(self, op: ClusterSizeOp) -> None:
        cluster = self._launch_dims("cluster")
        # .reqnctapercluster (printed for clusters of 2 or more) holds every launch to it
        if cluster is not None and cluster[0] * cluster[1] * cluster[2] > 1:
            self._replace(op, [self._imm(op, cluster[0] * cluster[1] * cluster[2])])
            return
        self._index_from_sreg(op, SpecialRegister.CLUSTER_NCTARANK)

    # endregion

    # region memref

    def _alloca(self, op: memref.AllocaOp) -> None:
        t = op.memref.type
        assert isinstance(t, MemRefType)
        scope = scope_of(t)
        if scope not in _SCOPE_SPACE:
            raise LocatedError(
                op, f"can allocate only local, shared or cluster_shared buffers in a kernel, got {t}"
            )
        self._check_static(op, t)
        if op.dynamic_sizes or op.symbol_operands:
            raise LocatedError(op, "needs a static allocation without operands")
        space = _SCOPE_SPACE[scope]
        esize = element_bytes(t.element_type)
        assert esize is not None
        size = esize
        for d in t.get_shape():
            size *= d
        if size == 0:
            raise LocatedError(op, f"needs at least one element, got {t}")
        align = max(16, esize)
        if space == AllocSpace.SHARED and size >= 128:
            align = 128
        name = self._symbol(space, op.memref.name_hint)
        decl = AllocOp(name, space, size, align)
        decl.location = op.location
        # declarations first in the kernel, in source order
        if self.last_decl is not None:
            Rewriter.insert_op(decl, InsertPoint.after(self.last_decl))
        else:
            entry = self.kernel.body.blocks.first
            assert entry is not None
            Rewriter.insert_op(decl, InsertPoint.at_start(entry))
        self.last_decl = decl
        if space == AllocSpace.SHARED:
            self.shared.append(decl)
            error = static_shared_error(self.shared, self.target)
            if error is not None:
                raise LocatedError(op, error[1])
        addr = self._insert(op, MovAddrOp(name, space.state_space))
        self.buffers[addr.results[0]] = Buffer(addr.results[0], t)
        self._replace(op, addr.results)

    def _symbol(self, space: AllocSpace, hint: str | None) -> str:
        stem = f"__{space}{len(self.symbols)}"
        if hint and hint.replace("_", "a").isalnum() and hint.isascii():
            stem += f"_{hint}"
        self.symbols.add(stem)
        return stem

    def _buffer(self, op: Operation, value: SSAValue) -> Buffer:
        buf = self.buffers.get(value)
        if buf is None:
            raise LocatedError(
                op, "its memref must be a kernel argument or a memref.alloca of this kernel"
            )
        return buf

    def _address(
        self, op: Operation, buf: Buffer, indices: Sequence[SSAValue | int]
    ) -> tuple[SSAValue, int]:
        """(address, constant byte offset) of ``buf[indices]``: the view's offset plus each
        index times its stride, in bytes."""
        shape = buf.type.get_shape()
        esize = element_bytes(buf.type.element_type)
        assert esize is not None
        if len(indices) != len(shape):
            raise LocatedError(op, f"needs {len(shape)} indices for {buf.type}, got {len(indices)}")
        strides = [esize * s for s in buf.element_strides()]
        offset = buf.byte_offset
        factors: dict[SSAValue, int] = {}
        for idx, stride in zip(indices, strides):
            terms, c = ([], idx) if isinstance(idx, int) else _linear(idx)
            offset += c * stride
            for v, f in terms:
                factors[v] = factors.get(v, 0) + f * stride
        total: SSAValue | None = None
        for v, f in factors.items():
            if f == 0:
                continue
            term = v
            if f != 1:
                term = self._insert(op, MulLoOp(ArithType.S64, v, self._imm(op, f))).results[0]
            if total is not None:
                term = self._insert(op, AddOp(ArithType.S64, total, term)).results[0]
            total = term
        if not -(2**31) <= offset < 2**31:
            big = self._imm(op, offset)
            total = big if total is None else self._insert(op, AddOp(ArithType.S64, total, big)).results[0]
            offset = 0
        if total is None:
            return buf.base, offset
        assert isinstance(buf.base.type, PtrType)
        if buf.base.type.bits == 32:
            total = self._insert(op, CvtOp(CvtType.U32, CvtType.U64, total)).results[0]
        return self._insert(op, PtrAddOp(buf.base, total)).results[0], offset

    def _first_element(self, op: Operation, buf: Buffer) -> SSAValue:
        """The address of ``buf``'s first element (its base, moved by a view's offset)."""
        if buf.byte_offset == 0:
            return buf.base
        assert isinstance(buf.base.type, PtrType)
        offset = self._imm(op, buf.byte_offset, IntegerType(buf.base.type.bits))
        return self._insert(op, PtrAddOp(buf.base, offset)).results[0]

    def _subview(self, op: memref.SubviewOp) -> None:
        src = self._buffer(op, op.source)
        t = op.result.type
        assert isinstance(t, MemRefType)
        rank = len(src.type.get_shape())
        sizes = list(op.static_sizes.get_values())
        strides = list(op.static_strides.get_values())
        if op.sizes or op.strides or DYNAMIC_INDEX in sizes or DYNAMIC_INDEX in strides:
            raise LocatedError(op, "needs static sizes and strides (only the offsets may be values)")
        if len(t.get_shape()) != rank:
            raise LocatedError(
                op, f"needs a subview of the source's rank {rank} (no rank reduction), got {t}"
            )
        dynamic = iter(op.offsets)
        offsets: list[SSAValue | int] = [
            next(dynamic) if o == DYNAMIC_INDEX else o for o in op.static_offsets.get_values()
        ]
        want = memref.SubviewOp.infer_result_type(
            src.type, [o if isinstance(o, int) else 0 for o in offsets], sizes, strides
        )
        # the view's own offset is read from the IR; only the layout's strides must agree
        if (
            list(t.get_shape()) != sizes
            or t.element_type != src.type.element_type
            or t.memory_space != src.type.memory_space
            or list(t.get_strides() or []) != list(want.get_strides() or [])
        ):
            raise LocatedError(
                op,
                f"result type must have shape {sizes}, strides {list(want.get_strides() or [])}, "
                f"the element type and memory space of {src.type}, got {t}",
            )
        if element_bytes(t.element_type) is None:
            raise LocatedError(op, f"element type {t.element_type} has no PTX load/store form")
        base, offset = self._address(op, src, offsets)
        view_strides = [a * b for a, b in zip(src.element_strides(), strides)]
        self.buffers[op.result] = Buffer(base, t, offset, view_strides)
        self.created.append(op)  # erased with the dead ops once its users are lowered

    def _load(self, op: memref.LoadOp) -> None:
        buf = self._buffer(op, op.memref)
        address, offset = self._address(op, buf, op.indices)
        et = buf.type.element_type
        ldst = ldst_type_for(et)
        assert ldst is not None
        # ld.u8 fills a 16-bit register; the IR value keeps its own type (i8 -> %rs)
        new = self._insert(op, LdOp(ldst, address, et, offset), pure=False)
        self._replace(op, new.results)

    def _store(self, op: memref.StoreOp) -> None:
        buf = self._buffer(op, op.memref)
        address, offset = self._address(op, buf, op.indices)
        ldst = ldst_type_for(buf.type.element_type)
        assert ldst is not None
        self._insert(op, StOp(ldst, address, op.value, offset), pure=False)
        Rewriter.erase_op(op)

    def _cast_to_ptr(self, op: UnrealizedConversionCastOp) -> None:
        if len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.outputs[0].type, PtrType):
            raise self._unsupported(op, "only a cast of one memref to one !ptx.ptr<space> is lowered")
        buf = self._buffer(op, op.inputs[0])
        want = op.outputs[0].type
        have = buf.base.type
        assert isinstance(have, PtrType)
        if want == have:
            self._replace(op, [self._first_element(op, buf)])
        elif have.state_space == StateSpace.SHARED_CTA and want.state_space == StateSpace.SHARED_CLUSTER:
            self._replace(op, self._insert(op, MovOp(self._first_element(op, buf), want)).results)
        else:
            raise self._unsupported(op, f"a {buf.type} buffer has no {want} address")

    # endregion

    # region control flow

    def _br(self, op: cf.BranchOp) -> None:
        self._insert(op, BraOp(op.successor, *op.arguments), pure=False)
        Rewriter.erase_op(op)

    def _cond_br(self, op: cf.ConditionalBranchOp) -> None:
        then_block = self._edge(op, op.then_block, op.then_arguments)
        else_block = self._edge(op, op.else_block, op.else_arguments)
        cond = op.cond
        while cond in self.negated:  # branch on p with the successors swapped
            cond = self.negated[cond]
            then_block, else_block = else_block, then_block
        self._insert(op, CondBraOp(cond, then_block, else_block), pure=False)
        Rewriter.erase_op(op)

    def _edge(self, op: Operation, target: Block, args: Sequence[SSAValue]) -> Block:
        """``target`` itself, or a new block that jumps to it passing ``args``."""
        if not args:
            return target
        here = op.parent_block()
        region = self.kernel.body
        assert here is not None
        edge = Block()
        jump = BraOp(target, *args)
        jump.location = op.location
        edge.add_op(jump)
        region.insert_block_after(edge, here)
        return edge

    def _return(self, op: func.ReturnOp) -> None:
        if op.arguments:
            raise LocatedError(op, "a kernel returns nothing")
        self._insert(op, RetOp(), pure=False)
        Rewriter.erase_op(op)

    # endregion


def _fold_int(cls: type, signed: bool, a: int, b: int, width: int) -> int:
    """``a op b`` as ``ptx.div/rem/min/max`` computes it on ``width``-bit operands."""
    a, b = (_wrap(a, width), _wrap(b, width)) if signed else (a % (1 << width), b % (1 << width))
    if cls is MinOp:
        return min(a, b)
    if cls is MaxOp:
        return max(a, b)
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # rounds toward zero
    return q if cls is DivOp else a - q * b


# arith op -> (ptx op, signed)
_INT_BINARY: dict[type, tuple[type, bool]] = {
    arith.DivUIOp: (DivOp, False),
    arith.DivSIOp: (DivOp, True),
    arith.RemUIOp: (RemOp, False),
    arith.RemSIOp: (RemOp, True),
    arith.MinUIOp: (MinOp, False),
    arith.MinSIOp: (MinOp, True),
    arith.MaxUIOp: (MaxOp, False),
    arith.MaxSIOp: (MaxOp, True),
}

# gpu index op -> the special register's stem (``tid`` for ``%tid.x``)
_GPU_SREG: dict[type, str] = {
    gpu.ThreadIdOp: "tid",
    gpu.BlockIdOp: "ctaid",
    gpu.BlockDimOp: "ntid",
    gpu.GridDimOp: "nctaid",
}

_HANDLERS = {
    **{cls: KernelLowering._int_binary for cls in _INT_BINARY},
    **{cls: KernelLowering._gpu_index for cls in _GPU_SREG},
    gpu.LaneIdOp: KernelLowering._lane_id,
    ClusterRankOp: KernelLowering._cluster_rank,
    ClusterSizeOp: KernelLowering._cluster_size,
    memref.SubviewOp: KernelLowering._subview,
    arith.ConstantOp: KernelLowering._constant,
    arith.AddiOp: KernelLowering._binary,
    arith.SubiOp: KernelLowering._binary,
    arith.MuliOp: KernelLowering._binary,
    arith.IndexCastOp: KernelLowering._cast,
    arith.ExtSIOp: KernelLowering._cast,
    arith.ExtUIOp: KernelLowering._cast,
    arith.TruncIOp: KernelLowering._cast,
    arith.CmpiOp: KernelLowering._cmpi,
    arith.SelectOp: KernelLowering._select,
    arith.XOrIOp: KernelLowering._xori,
    memref.AllocaOp: KernelLowering._alloca,
    memref.LoadOp: KernelLowering._load,
    memref.StoreOp: KernelLowering._store,
    UnrealizedConversionCastOp: KernelLowering._cast_to_ptr,
    cf.BranchOp: KernelLowering._br,
    cf.ConditionalBranchOp: KernelLowering._cond_br,
    func.ReturnOp: KernelLowering._return,
}


@dataclass(frozen=True)
class LowerToPtxPass(ModulePass):
    """Level-2 IR into ptx ops, kernel by kernel (see the module docstring)."""

    name = "lower-to-ptx"

    target: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target)  # a bad name fails here, before any rewrite
        if self.target:
            # level-3 IR is for one target: `-t ptx` prints for the one it was lowered for
            op.attributes[TARGET_ATTR] = StringAttr(target.name)
        for o in [o for block in op.body.blocks for o in block.ops]:
            if not isinstance(o, func.FuncOp):
                # scf-to-cf would split the module's block around it
                raise LocatedError(o, "must be inside a func.func kernel (lower-to-ptx lowers kernels only)")
        convert_scf_to_cf(op)
        for kernel in [o for block in op.body.blocks for o in block.ops if isinstance(o, func.FuncOp)]:
            KernelLowering(kernel, target).run()
