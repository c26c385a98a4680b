"""bulkred.reduce_list -> grid_list, bulkred.scale_list -> grid_list_scale: one launch over
a list of global buffers of mixed element types, read through the device-resident
descriptor table of ``ops/list_layout.py`` (docs/foreach.md).

``grid_list`` (the only variant of ``bulkred.reduce_list``): a grid of G CTAs (4 per
multiprocessor) of 256 threads. CTA c reads its row of the table (the tensors its chunk
of the list's byte stream overlaps, and the chunk's bytes) and reduces each piece, a
tensor's bytes inside the chunk:

1. the CTA's threads stream the piece: 16-byte vectors (``ld.global.nc.v4.f32``, or two
   ``ld.global.nc.v4.b16`` of float16 / bfloat16), thread j taking vectors j, j + 256,
   ..., 4 loads in flight per step, then the elements after the last whole vector one
   by one (every element one by one where the tensor's address is not a multiple of 16);
   every element is converted to float32 and joins one of 4 lane states through the
   prologue (with ``scale``: multiplied by the factor, written back rounded to its type,
   and the rounded value joins; with ``nonfinite``: ``x * 0`` of the element as read,
   before the factor (AMP's check of its inputs), is summed, NaN when x is inf or NaN);
2. the lane states, then the CTA's threads, combine (``cta_reduce``); thread 0 stores
   the piece's state: into ``dst[t]`` when the piece is the whole tensor, else into the
   workspace, slot ``tail[c]`` when the tensor starts in the chunk and goes on, slot
   ``head[c]`` when it started before;
3. after every piece, the last-CTA ticket. The last CTA combines, for each tensor t
   (thread t % 256), ``dst[t]`` or ``tail[c1] + head[c1 + 1] + ... + head[c2]`` (c1, c2
   the chunks of its first and last byte) in chunk order, stores the epilogue of that
   state into ``dst[t]``, and combines the tensors' states, each thread's in tensor
   order and then across the CTA, into ``total``.

The combination order depends only on the table and the launch, never on timing: the
same bits on every run.

``grid_list_scale``: the same grid and chunks; every element times the factor
(``clip_by``: ``min(max_norm / (total + 1e-6), 1)``), in place, nothing written when the
factor is 1 (or >= 1 for ``clip_by``).

Spec: PTX ISA ld (vector loads, ``.nc``), st, cvt, atom, fence (docs/scopes.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import f32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.ops.dtypes import DTYPES
from bulkred_dialect.ops.ptx.arith import (
    AndOp,
    ArithType,
    DivOp,
    MaxOp,
    MinOp,
    MulOp,
    RoundingMode,
)
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace
from bulkred_dialect.ops.ptx.control import CmpOp, SetpOp, SetpType
from bulkred_dialect.ops.ptx.memory import LdStType, MovOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.list_layout import (
    ALIGN,
    ALIGNED,
    CODE_BF16,
    CODE_F16,
    CODE_F32,
    CTA,
    HEADER,
    ROW_BYTES,
    TENSOR,
    offset,
)
from bulkred_dialect.ops.tile import (
    CLIP_EPS,
    MapFn,
    ReduceKind,
    ReduceListOp,
    ScaleListOp,
    enclosing_kernel,
)
from bulkred_dialect.passes.elements import Elem
from bulkred_dialect.passes.emitter import Emitter
from bulkred_dialect.passes.fused import Reducer
from bulkred_dialect.passes.predicates import Predicate
from bulkred_dialect.passes.registry import Variant
from bulkred_dialect.passes.variants.grid_common import (
    add_workspace,
    alone_in_kernel,
    global_ptr,
    set_launch,
)
from bulkred_dialect.passes.variants.kernel import (
    COUNTER_BYTES,
    acquire,
    cta_reduce,
    emitter_at,
    last_cta,
    reset_counter,
    sm_count,
)

CTAS_PER_SM = 4
BLOCK = 256
UNROLL = 4
LANES = 4
VECTOR_BYTES = ALIGN  # a 16-byte vector load: a tensor whose address is a multiple of ALIGN
F32 = DTYPES["float32"]
ELEM_OF_CODE: dict[int, Elem] = {
    CODE_F32: Elem.of(F32),
    CODE_F16: Elem.of(DTYPES["float16"], F32),
    CODE_BF16: Elem.of(DTYPES["bfloat16"], F32),
}


def list_grid(target: Target) -> int:
    """The CTAs of a list launch (the table's G): 4 per multiprocessor of ``target``."""
    return sm_count(target) * CTAS_PER_SM


def list_workspace_bytes(grid: int) -> int:
    """The workspace of ``grid_list``: the head and tail slots of every CTA, then the ticket."""
    return 2 * grid * F32.bytes + COUNTER_BYTES


# region Shared steps


def _ld64(e: Emitter, p: SSAValue, offset: int = 0) -> SSAValue:
    return e.ld(LdStType.B64, p, i64, offset)


def _row(e: Emitter, table: SSAValue, i: SSAValue) -> SSAValue:
    """The address of table row ``i`` (an ``i64``)."""
    return e.ptr_add(table, e.mul_i(i, ROW_BYTES))


def _max64(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(MaxOp(ArithType.S64, a, b))


def _min64(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.value(MinOp(ArithType.S64, a, b))


def _div64(e: Emitter, a: SSAValue, b: SSAValue | int) -> SSAValue:
    b = e.const(b, i64) if isinstance(b, int) else b
    return e.value(DivOp(ArithType.U64, a, b))


def _address(e: Emitter, a: SSAValue) -> SSAValue:
    """A global address held in an ``i64`` register (a descriptor's) as a ``!ptx.ptr``."""
    return e.value(MovOp(a, PtrType(StateSpace.GLOBAL)))


def _code_is(e: Emitter, code: SSAValue, dtype: int) -> SSAValue:
    return e.cmp("eq", e.value(AndOp(ArithType.B64, code, e.const(0xFF, i64))), dtype)


class _Piece:
    """What a thread knows of the piece it streams: the address of its first byte,
    its bytes, whether vectors may be loaded (the tensor's address is a multiple of 16)."""

    def __init__(self, e: Emitter, addr: SSAValue, code: SSAValue, start: SSAValue, plo: SSAValue, phi: SSAValue):
        self.base = e.ptr_add(_address(e, addr), e.sub_i(plo, start))
        self.nbytes = e.sub_i(phi, plo)
        self.aligned = e.cmp("ne", e.value(AndOp(ArithType.B64, code, e.const(ALIGNED, i64))), 0)


Visit = Callable[[Emitter, Elem, SSAValue, list[SSAValue], int, SSAValue], list[SSAValue]]
"""``visit(e, elem, x, carried, lane, raw)``: one element ``x`` (in float32) of vector lane
``lane``, ``raw`` the element as read (``x`` before the factor); returns the new carried
values."""


def _scaled(e: Emitter, elem: Elem, x: SSAValue, factor: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``x * factor`` rounded to the element type: (the register to store, its value in
    float32)."""
    y = e.value(MulOp(ArithType.F32, x, factor, rnd=RoundingMode.RN))
    if elem.dtype is F32:
        return y, y
    narrow = e.convert(y, F32, elem.dtype)
    return narrow, e.convert(narrow, elem.dtype, F32)


def _stream_piece(
    e: Emitter, elem: Elem, piece: _Piece, tid64: SSAValue, carried: list[SSAValue], visit: Visit, *, nc: bool,
    factor: SSAValue | None = None,
) -> list[SSAValue]:
    """Every element of ``piece`` that this thread takes (vectors j, j + BLOCK, ...; then
    the elements after the last whole vector), in that order, through ``visit``. The
    UNROLL vectors of a step are all loaded before any is used (ptxas keeps that order:
    UNROLL x 16 bytes in flight per thread). With ``factor``, each element is first
    multiplied by it and written back rounded to its type (a vector store per vector
    load), and the rounded value is what ``visit`` gets."""
    size = elem.dtype.bytes
    per_vec = VECTOR_BYTES // size
    (nvec,) = e.if_(
        piece.aligned, lambda b: [_div64(b, piece.nbytes, VECTOR_BYTES)], lambda b: [b.const(0, i64)], [i64]
    )

    def load(b: Emitter, v: SSAValue) -> tuple[SSAValue, list[SSAValue]]:
        p = b.ptr_add(piece.base, b.mul_i(v, VECTOR_BYTES))
        if size == 4:
            return p, b.ld_vec(elem.ld, p, elem.ir, 4, 0, nc=nc)
        # two ld.v4.b16: 8 halves
        return p, b.ld_vec(elem.ld, p, elem.ir, 4, 0, nc=nc) + b.ld_vec(elem.ld, p, elem.ir, 4, 8, nc=nc)

    def use(b: Emitter, p: SSAValue, raw: list[SSAValue], args: list[SSAValue]) -> list[SSAValue]:
        raw_xs = [b.to_acc(elem, x) for x in raw]
        if factor is not None:
            stored, xs = zip(*(_scaled(b, elem, x, factor) for x in raw_xs), strict=True)
            if size == 4:
                b.st_vec(LdStType.F32, p, list(stored))
            else:
                b.st_vec(elem.ld, p, list(stored[:4]))
                b.st_vec(elem.ld, p, list(stored[4:]), 8)
            return visit_all(b, elem, xs, raw_xs, args)
        return visit_all(b, elem, raw_xs, raw_xs, args)

    def visit_all(b: Emitter, elem: Elem, xs: Sequence[SSAValue], raws: list[SSAValue], args: list[SSAValue]) -> list[SSAValue]:
        for k, (x, raw) in enumerate(zip(xs, raws, strict=True)):
            args = visit(b, elem, x, args, k % LANES, raw)
        return args

    rounds = _div64(e, nvec, BLOCK * UNROLL)

    def unrolled(b: Emitter, k: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
        first = b.add_i(b.mul_i(k, BLOCK * UNROLL), tid64)
        loaded = [load(b, b.add_i(first, u * BLOCK) if u else first) for u in range(UNROLL)]
        for p, raw in loaded:
            args = use(b, p, raw, args)
        return args

    carried = e.for_(0, rounds, 1, carried, unrolled)
    rest = e.add_i(e.mul_i(rounds, BLOCK * UNROLL), tid64)
    carried = e.for_(rest, nvec, BLOCK, carried, lambda b, v, args: use(b, *load(b, v), args))
    count = _div64(e, piece.nbytes, size)
    first = e.add_i(e.mul_i(nvec, per_vec), tid64)

    def one(b: Emitter, i: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
        p = b.ptr_add(piece.base, b.mul_i(i, size))
        raw = x = b.to_acc(elem, b.ld(elem.ld, p, elem.ir))
        if factor is not None:
            stored, x = _scaled(b, elem, raw, factor)
            b.st(LdStType.F32 if size == 4 else elem.ld, p, stored)
        return visit(b, elem, x, args, 0, raw)

    return e.for_(first, count, BLOCK, carried, one)


def _by_dtype(
    e: Emitter, code: SSAValue, types: list, body: Callable[[Emitter, Elem], list[SSAValue]]
) -> list[SSAValue]:
    """``body`` for the element type of ``code`` (float32, float16, else bfloat16)."""
    return e.if_(
        _code_is(e, code, CODE_F32),
        lambda b: body(b, ELEM_OF_CODE[CODE_F32]),
        lambda b: b.if_(
            _code_is(b, code, CODE_F16),
            lambda c: body(c, ELEM_OF_CODE[CODE_F16]),
            lambda c: body(c, ELEM_OF_CODE[CODE_BF16]),
            types,
        ),
        types,
    )


def _size_of(e: Emitter, code: SSAValue) -> SSAValue:
    """The element bytes of a descriptor's ``code``: 4 for float32, else 2."""
    return e.value(arith.SelectOp(_code_is(e, code, CODE_F32), e.const(4, i64), e.const(2, i64)))


class _ListView:
    """The table rows a thread reads: the header, a tensor's descriptor, its CTA's chunk."""

    def __init__(self, e: Emitter, table_buffer: SSAValue):
        self.table = global_ptr(e, table_buffer)
        self.count = _ld64(e, self.table, offset(HEADER, "count"))
        self.chunk = _ld64(e, self.table, offset(HEADER, "chunk"))

    def tensor(self, e: Emitter, t: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue, SSAValue]:
        """(address, code, start, bytes, end) of tensor ``t``."""
        row = _row(e, self.table, e.add_i(t, 1))
        addr, numel, code, start = (_ld64(e, row, offset(TENSOR, c)) for c in ("address", "numel", "code", "start"))
        nbytes = e.mul_i(numel, _size_of(e, code))
        return addr, code, start, nbytes, e.add_i(start, nbytes)

    def cta(self, e: Emitter, c: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
        """(t_first, t_stop, lo, hi) of CTA ``c``."""
        row = _row(e, self.table, e.add_i(e.add_i(self.count, 1), c))
        return tuple(_ld64(e, row, offset(CTA, c)) for c in ("first", "stop", "lo", "hi"))  # type: ignore[return-value]


def _pieces(
    e: Emitter, view: _ListView, c64: SSAValue, carried: list[SSAValue],
    body: Callable[[Emitter, SSAValue, SSAValue, SSAValue, SSAValue, SSAValue, SSAValue, list[SSAValue]], list[SSAValue]],
) -> list[SSAValue]:
    """For each tensor t of CTA ``c64``'s chunk with bytes in it (in order):
    ``body(e, t, code, start, end, plo, phi, carried)``, ``[plo, phi)`` the piece's
    stream bytes (the same in every thread of the CTA)."""
    t_first, t_stop, lo, hi = view.cta(e, c64)
    types = [v.type for v in carried]

    def each(b: Emitter, t: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
        addr, code, start, _, end = view.tensor(b, t)
        plo, phi = _max64(b, lo, start), _min64(b, hi, end)
        return b.if_(
            b.cmp("slt", plo, phi),
            lambda d: body(d, t, addr, code, start, plo, phi, args),
            lambda d: list(args),
            types,
        )

    return e.for_(t_first, t_stop, 1, carried, each)


# endregion

# region grid_list


def lower_grid_list(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ReduceListOp)
    kernel = enclosing_kernel(op)
    assert kernel is not None
    grid = list_grid(target)
    set_launch(kernel, [grid], [BLOCK])
    ws = add_workspace(kernel, list_workspace_bytes(grid))
    e = emitter_at(op)
    f32_elem = ELEM_OF_CODE[CODE_F32]
    r = Reducer(op, f32_elem, 1)  # type: ignore[arg-type]
    kind = r.kind
    nonzero = [m.map_fn for m in op.maps("prologue")] == [MapFn.NONZERO]
    view = _ListView(e, op.table)
    tid = e.sreg(SpecialRegister.TID_X)
    tid64 = e.wide(tid)
    c64 = e.wide(e.sreg(SpecialRegister.CTAID_X))
    w = global_ptr(e, ws)
    heads, tails = w, e.ptr_add(w, grid * 4)
    counter = e.ptr_add(w, 2 * grid * 4)
    dst = global_ptr(e, op.dst)
    factor = None if op.scale is None else e.ld(LdStType.F32, global_ptr(e, op.scale), f32)
    flagged = op.flag is not None
    zero = e.const(0.0, f32)

    def neutral(b: Emitter) -> SSAValue:
        """The state of no element: the kind's identity, but 0 for the max of |x| (an
        empty tensor's amax and inf-norm are 0)."""
        return b.const(0.0, f32) if r.absmax and kind == ReduceKind.MAX else r.neutral(b)[0]

    def absorb(b: Emitter, s: SSAValue, x: SSAValue) -> SSAValue:
        if nonzero:
            x = b.nonzero(F32, F32, x)
        return r.absorb(b, [s], x)[0]

    def visit(b: Emitter, elem: Elem, x: SSAValue, args: list[SSAValue], lane: int, raw: SSAValue) -> list[SSAValue]:
        lanes, nf = args[:LANES], args[LANES:]
        if flagged:  # the element as read, before the factor: AMP's found_inf checks its inputs
            nf = [b.fma(ArithType.F32, raw, zero, nf[0])]
        lanes = list(lanes)
        lanes[lane] = absorb(b, lanes[lane], x)
        return lanes + nf

    def piece(
        b: Emitter, t: SSAValue, addr: SSAValue, code: SSAValue, start: SSAValue, plo: SSAValue, phi: SSAValue,
        args: list[SSAValue],
    ) -> list[SSAValue]:
        p = _Piece(b, addr, code, start, plo, phi)
        carried = [neutral(b) for _ in range(LANES)] + args
        types = [v.type for v in carried]
        out = _by_dtype(b, code, types, lambda d, elem: _stream_piece(
            d, elem, p, tid64, carried, visit, nc=factor is None, factor=factor))
        lanes, nf = out[:LANES], out[LANES:]
        state = r.fold(b, [[x] for x in lanes])[0]
        total = cta_reduce(b, kind, f32_elem, state, tid, BLOCK, broadcast=False, name="piece_partials")

        def store(d: Emitter) -> list:
            whole_start = d.cmp("eq", plo, start)
            _, _, _, _, tensor_end = view.tensor(d, t)
            whole_end = d.cmp("eq", phi, tensor_end)

            def slot(f: Emitter) -> list:
                f.if_(
                    whole_end,
                    lambda g: (g.st(LdStType.F32, g.ptr_add(dst, g.mul_i(t, 4)), total), [])[1],
                    lambda g: (g.st(LdStType.F32, g.ptr_add(tails, g.mul_i(c64, 4)), total), [])[1],
                )
                return []

            d.if_(whole_start, slot, lambda f: (f.st(LdStType.F32, f.ptr_add(heads, f.mul_i(c64, 4)), total), [])[1])
            return []

        b.if_(b.cmp("eq", tid, 0), store)
        b.bar_sync()  # the piece's shared partials are read before the next piece writes them
        return nf

    nf = _pieces(e, view, c64, [zero] if flagged else [], piece)
    if flagged:
        assert op.flag is not None
        flag = global_ptr(e, op.flag)
        bad = e.value(SetpOp(CmpOp.NAN, SetpType.F32, nf[0], nf[0]))
        e.if_(bad, lambda b: (b.st(LdStType.F32, flag, b.const(1.0, f32)), [])[1])
    last = last_cta(e, counter, grid, tid)

    def finish(b: Emitter) -> list:
        acquire(b)

        def tensor(d: Emitter, t: SSAValue, args: list[SSAValue]) -> list[SSAValue]:
            _, _, start, nbytes, end = view.tensor(d, t)

            def state_of(f: Emitter) -> list[SSAValue]:
                c1 = _div64(f, start, view.chunk)
                c2 = _div64(f, f.sub_i(end, f.const(1, i64)), view.chunk)

                def inside(g: Emitter) -> list[SSAValue]:
                    return [g.ld(LdStType.F32, g.ptr_add(dst, g.mul_i(t, 4)), f32)]

                def spans(g: Emitter) -> list[SSAValue]:
                    s0 = g.ld(LdStType.F32, g.ptr_add(tails, g.mul_i(c1, 4)), f32)

                    def step(h: Emitter, c: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                        x = h.ld(LdStType.F32, h.ptr_add(heads, h.mul_i(c, 4)), f32)
                        return [h.combine(kind, F32, acc[0], x)]

                    return g.for_(g.add_i(c1, 1), g.add_i(c2, 1), 1, [s0], step)

                return f.if_(f.cmp("eq", c1, c2), inside, spans, [f32])

            (s,) = d.if_(d.cmp("sgt", nbytes, 0), state_of, lambda f: [neutral(f)], [f32])
            value, _ = r.results(d, [s])
            d.st(LdStType.F32, d.ptr_add(dst, d.mul_i(t, 4)), value)
            return [d.combine(kind, F32, args[0], s)]

        (mine,) = b.for_(tid64, view.count, BLOCK, [neutral(b)], tensor)
        total = cta_reduce(b, kind, f32_elem, mine, tid, BLOCK, broadcast=False, name="total_partials")

        def t0(d: Emitter) -> list:
            value, _ = r.results(d, [total])
            d.st(LdStType.F32, global_ptr(d, op.total), value)
            reset_counter(d, counter)
            return []

        b.if_(b.cmp("eq", tid, 0), t0)
        return []

    e.if_(last, finish)
    rewriter.erase(op)


# endregion

# region grid_list_scale


def lower_grid_list_scale(op: Operation, rewriter: PatternRewriter, target: Target) -> None:
    assert isinstance(op, ScaleListOp)
    kernel = enclosing_kernel(op)
    assert kernel is not None
    set_launch(kernel, [list_grid(target)], [BLOCK])
    e = emitter_at(op)
    view = _ListView(e, op.table)
    tid64 = e.wide(e.sreg(SpecialRegister.TID_X))
    c64 = e.wide(e.sreg(SpecialRegister.CTAID_X))
    f = e.ld(LdStType.F32, global_ptr(e, op.factor), f32)
    one = e.const(1.0, f32)
    if op.total is not None:
        total = e.ld(LdStType.F32, global_ptr(e, op.total), f32)
        f = e.div(ArithType.F32, f, e.value(_add_f32(total, e.const(CLIP_EPS, f32))))
        skip = e.value(SetpOp(CmpOp.GE, SetpType.F32, f, one))
    else:
        skip = e.value(SetpOp(CmpOp.EQ, SetpType.F32, f, one))

    def visit(b: Emitter, elem: Elem, x: SSAValue, args: list[SSAValue], lane: int, raw: SSAValue) -> list[SSAValue]:
        return args

    def piece(
        b: Emitter, t: SSAValue, addr: SSAValue, code: SSAValue, start: SSAValue, plo: SSAValue, phi: SSAValue,
        args: list[SSAValue],
    ) -> list[SSAValue]:
        p = _Piece(b, addr, code, start, plo, phi)
        _by_dtype(b, code, [], lambda d, elem: _stream_piece(d, elem, p, tid64, [], visit, nc=False, factor=f))
        return []

    e.if_(e.not_pred(skip), lambda b: (_pieces(b, view, c64, [], piece), [])[1])
    rewriter.erase(op)


def _add_f32(a: SSAValue, b: SSAValue) -> Operation:
    from bulkred_dialect.ops.ptx.arith import AddOp

    return AddOp(ArithType.F32, a, b, rnd=RoundingMode.RN)


# endregion


LIST_PREDICATES = [Predicate("kernel", alone_in_kernel, expected="alone, on parameters")]

GRID_LIST = Variant("bulkred.reduce_list", "grid_list", priority=10, predicates=LIST_PREDICATES, lower=lower_grid_list)
GRID_LIST_SCALE = Variant(
    "bulkred.scale_list", "grid_list_scale", priority=10, predicates=LIST_PREDICATES, lower=lower_grid_list_scale
)
