"""GPU test kernels for the ops of warp/CTA/grid reductions (ops/ptx/warp.py, atom.py,
memory.py's ld.vec and st.vec), built like tests/gpu/kernels.py: level-3 ptx IR through
:class:`gpu.kernels.KernelBuilder`, printed and loaded by the runtime.

``REDUCTION_OPS_KERNELS()`` lists one kernel of each kind, for the CPU test that they
all assemble (tests/test_reduction_ops_kernels.py).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.arith import AddOp, ArithType, ShlOp
from bulkred_dialect.ops.ptx.atom import (
    AtomOp,
    AtomOpKind,
    AtomType,
    FenceOp,
    FenceSem,
    MembarLevel,
    MembarOp,
    MemScope,
    RedOp,
    RedOpKind,
    RedSem,
    value_type,
)
from bulkred_dialect.ops.ptx.atom import HALF_TYPES, type_bytes
from bulkred_dialect.ops.ptx.base import f16, f32, f64, i16, i32, i64
from bulkred_dialect.ops.ptx.control import CmpOp
from bulkred_dialect.ops.ptx.memory import LdOp, LdStType, LdVecOp, StOp, StVecOp
from bulkred_dialect.ops.ptx.sreg import SpecialRegister
from bulkred_dialect.ops.ptx.sync import BarSyncOp
from bulkred_dialect.ops.ptx.warp import ShflMode, ShflSyncOp

from gpu.kernels import GLOBAL, KernelBuilder, TestKernel, _kernel, np_dtype_name

FULL_MASK = -1  # 0xffffffff as an i32 immediate


def _shl(kb: KernelBuilder, x: SSAValue, bits: int) -> SSAValue:
    return kb.v(ShlOp(ArithType.B32, x, kb.imm(bits)))


def _gid(kb: KernelBuilder) -> SSAValue:
    """ctaid.x * ntid.x + tid.x"""
    cta = kb.sreg(SpecialRegister.CTAID_X)
    ntid = kb.sreg(SpecialRegister.NTID_X)
    return kb.add32(kb.mul32(cta, ntid), kb.tid)


_LOG2 = {1 << k: k for k in range(6)}  # byte sizes 1..32


# region shfl.sync


def shfl_bfly_sum_kernel(warps: int = 2) -> TestKernel:
    """Each warp sums its 32 f32 values with a shfl.sync.bfly butterfly (offsets 16, 8, 4,
    2, 1); every lane stores the warp's sum. Arguments: out (32*warps,), inp (32*warps,)."""
    n = 32 * warps
    kb = KernelBuilder("shfl_bfly_sum_f32", [("out", GLOBAL), ("inp", GLOBAL)], grid=1, block=n)
    off = _shl(kb, kb.tid, 2)
    x = kb.v(LdOp(LdStType.F32, kb.gptr(kb.args["inp"], off), f32))
    clamp, mask = kb.imm(0x1F), kb.imm(FULL_MASK)
    for lane_mask in (16, 8, 4, 2, 1):
        y = kb.v(ShflSyncOp(ShflMode.BFLY, x, kb.imm(lane_mask), clamp, mask))
        x = kb.v(AddOp(ArithType.F32, x, y))
    kb.add(StOp(LdStType.F32, kb.gptr(kb.args["out"], off), x))
    return _kernel(kb, [("out", "f32", (n,)), ("inp", "f32", (n,))])


def shfl_kernel(mode: str) -> TestKernel:
    """``out[lane] = shfl.sync.<mode>.b32 inp[lane], b, c, 0xffffffff`` over one warp.
    Arguments: out (32,), inp (32,), b, c."""
    kb = KernelBuilder(
        f"shfl_{mode}_b32", [("out", GLOBAL), ("inp", GLOBAL), ("b", i32), ("c", i32)], grid=1, block=32
    )
    off = _shl(kb, kb.tid, 2)
    x = kb.v(LdOp(LdStType.B32, kb.gptr(kb.args["inp"], off), i32))
    d = kb.v(ShflSyncOp(ShflMode(mode), x, kb.args["b"], kb.args["c"], kb.imm(FULL_MASK)))
    kb.add(StOp(LdStType.B32, kb.gptr(kb.args["out"], off), d))
    return _kernel(kb, [("out", "u32", (32,)), ("inp", "u32", (32,)), ("b", "i32", None), ("c", "i32", None)])


# endregion

# region ld.vec

# (ld .type, register type, runtime dtype) of the ld.vec forms tested.
LD_VEC_FORMS: dict[str, tuple[LdStType, object, str]] = {
    "f32": (LdStType.F32, f32, "f32"),
    "b32": (LdStType.B32, i32, "u32"),
    "f64": (LdStType.F64, f64, "f64"),
    "b16": (LdStType.B16, f16, "f16"),
    "u16": (LdStType.U16, i16, "u16"),
    "b64": (LdStType.B64, i64, "u64"),
}

LD_VEC_THREADS = 64


def ld_vec_elements(t: str, count: int, offset: int) -> int:
    """The length of ``inp`` and ``out`` of :func:`ld_vec_kernel`."""
    size = int(LD_VEC_FORMS[t][0][1:]) // 8
    return LD_VEC_THREADS * count + offset // size


def ld_vec_kernel(t: str, count: int, *, nc: bool, offset: int = 0) -> TestKernel:
    """Thread i loads ``count`` elements with one ``ld.global{.nc}.v<count>.<t>`` at byte
    ``i*count*size + offset`` of ``inp`` and stores them one by one at the same place of
    ``out``. Arguments: out (n,), inp (n,), n = :func:`ld_vec_elements`."""
    ldt, reg, dt = LD_VEC_FORMS[t]
    size = int(ldt[1:]) // 8
    n = ld_vec_elements(t, count, offset)
    name = f"ld_vec{'_nc' if nc else ''}_v{count}_{t}" + (f"_off{offset}" if offset else "")
    kb = KernelBuilder(name, [("out", GLOBAL), ("inp", GLOBAL)], grid=1, block=LD_VEC_THREADS)
    base = _shl(kb, kb.tid, _LOG2[count * size])
    vals = kb.add(LdVecOp(ldt, kb.gptr(kb.args["inp"], base), reg, count, offset=offset, nc=nc)).results
    st_type = LdStType.B16 if size == 2 else ldt
    for i, v in enumerate(vals):
        kb.add(StOp(st_type, kb.gptr(kb.args["out"], base), v, offset + i * size))
    return _kernel(kb, [("out", dt, (n,)), ("inp", dt, (n,))])


def st_vec_kernel(t: str, count: int, *, offset: int = 0) -> TestKernel:
    """Thread i loads ``count`` elements one by one at byte ``i*count*size + offset`` of
    ``inp`` and stores them with one ``st.global.v<count>.<t>`` at the same place of
    ``out`` (the layout of :func:`ld_vec_kernel`). Arguments: out (n,), inp (n,),
    n = :func:`ld_vec_elements`."""
    ldt, reg, dt = LD_VEC_FORMS[t]
    size = int(ldt[1:]) // 8
    n = ld_vec_elements(t, count, offset)
    name = f"st_vec_v{count}_{t}" + (f"_off{offset}" if offset else "")
    kb = KernelBuilder(name, [("out", GLOBAL), ("inp", GLOBAL)], grid=1, block=LD_VEC_THREADS)
    base = _shl(kb, kb.tid, _LOG2[count * size])
    src = kb.gptr(kb.args["inp"], base)
    vals = [kb.v(LdOp(ldt, src, reg, offset + i * size)) for i in range(count)]
    kb.add(StVecOp(ldt, kb.gptr(kb.args["out"], base), vals, offset=offset))
    return _kernel(kb, [("out", dt, (n,)), ("inp", dt, (n,))])


# endregion

# region atom and red


def atom_ticket_kernel(ctas: int, threads: int = 128) -> TestKernel:
    """Every thread takes a ticket: ``out[gid] = atom.global.add.u32 [counter], 1``.
    Arguments: counter (1,), out (ctas*threads,)."""
    n = ctas * threads
    kb = KernelBuilder("atom_ticket", [("counter", GLOBAL), ("out", GLOBAL)], grid=ctas, block=threads)
    old = kb.v(AtomOp(AtomOpKind.ADD, AtomType.U32, kb.args["counter"], kb.imm(1)))
    kb.add(StOp(LdStType.U32, kb.gptr(kb.args["out"], _shl(kb, _gid(kb), 2)), old))
    return _kernel(kb, [("counter", "u32", (1,)), ("out", "u32", (n,))])


ATOM_FORMS = [
    ("add", "u32"), ("add", "s32"), ("add", "u64"), ("add", "f32"), ("add", "f64"),
    ("inc", "u32"), ("dec", "u32"),
    ("min", "u32"), ("min", "s32"), ("min", "u64"), ("min", "s64"),
    ("max", "u32"), ("max", "s32"), ("max", "u64"), ("max", "s64"),
    ("and", "b32"), ("or", "b64"), ("xor", "b32"), ("exch", "b32"), ("exch", "b64"),
    ("add", "f16"), ("add", "bf16"),
]

ATOM_CTAS, ATOM_THREADS = 4, 64


def _load_value(kb: KernelBuilder, t: str, src: SSAValue, gid: SSAValue) -> SSAValue:
    size = type_bytes(AtomType(t))
    vt = value_type(AtomType(t))
    ldt = LdStType.F32 if t == "f32" else LdStType.F64 if t == "f64" else LdStType(f"b{size * 8}")
    return kb.v(LdOp(ldt, kb.gptr(src, _shl(kb, gid, _LOG2[size])), vt))


def _store_value(kb: KernelBuilder, t: str, dst: SSAValue, gid: SSAValue, v: SSAValue) -> None:
    size = type_bytes(AtomType(t))
    kb.add(StOp(LdStType(f"b{size * 8}"), kb.gptr(dst, _shl(kb, gid, _LOG2[size])), v))


def atom_kernel(op: str, t: str) -> TestKernel:
    """Every thread: ``old[gid] = atom.global.<op>.<t> [mem], vals[gid]``.
    Arguments: mem (1,), vals (n,), old (n,), n = ATOM_CTAS * ATOM_THREADS."""
    n = ATOM_CTAS * ATOM_THREADS
    kb = KernelBuilder(
        f"atom_{op}_{t}", [("mem", GLOBAL), ("vals", GLOBAL), ("old", GLOBAL)], grid=ATOM_CTAS, block=ATOM_THREADS
    )
    gid = _gid(kb)
    v = _load_value(kb, t, kb.args["vals"], gid)
    old = kb.v(AtomOp(AtomOpKind(op), AtomType(t), kb.args["mem"], v, noftz=AtomType(t) in HALF_TYPES))
    _store_value(kb, t, kb.args["old"], gid, old)
    dt = np_dtype_name(t)
    return _kernel(kb, [("mem", dt, (1,)), ("vals", dt, (n,)), ("old", dt, (n,))])


RED_FORMS = [
    ("add", "u32"), ("add", "s32"), ("add", "u64"), ("add", "f32"), ("add", "f64"),
    ("inc", "u32"), ("dec", "u32"),
    ("min", "s32"), ("max", "u64"), ("min", "s64"),
    ("and", "b64"), ("or", "b32"), ("xor", "b64"),
    ("add", "f16"), ("add", "bf16"),
]


def red_kernel(op: str, t: str, *, sem: RedSem | None = None, scope: MemScope | None = None) -> TestKernel:
    """Every thread: ``red{.sem}{.scope}.global.<op>.<t> [mem], vals[gid]``.
    Arguments: mem (1,), vals (n,), n = ATOM_CTAS * ATOM_THREADS."""
    n = ATOM_CTAS * ATOM_THREADS
    suffix = "".join(f"_{q}" for q in (sem, scope) if q is not None)
    kb = KernelBuilder(f"red_{op}_{t}{suffix}", [("mem", GLOBAL), ("vals", GLOBAL)], grid=ATOM_CTAS, block=ATOM_THREADS)
    v = _load_value(kb, t, kb.args["vals"], _gid(kb))
    kb.add(RedOp(RedOpKind(op), AtomType(t), kb.args["mem"], [v], sem=sem, scope=scope, noftz=AtomType(t) in HALF_TYPES))
    dt = np_dtype_name(t)
    return _kernel(kb, [("mem", dt, (1,)), ("vals", dt, (n,))])


def red_vec_kernel(count: int, t: str = "f32", op: str = "add", ctas: int = 8, threads: int = 128) -> TestKernel:
    """Every thread combines its ``count`` values ``vals[gid, :]`` into ``out[:]`` with one
    ``red.global.<op>{.noftz}.v<count>.<t>`` (t: f32, f16 or bf16).
    Arguments: out (count,), vals (n*count,)."""
    n = ctas * threads
    at = AtomType(t)
    size = type_bytes(at)
    kb = KernelBuilder(f"red_{op}_v{count}_{t}", [("out", GLOBAL), ("vals", GLOBAL)], grid=ctas, block=threads)
    base = kb.gptr(kb.args["vals"], _shl(kb, _gid(kb), _LOG2[size * count]))
    ldt = LdStType.F32 if t == "f32" else LdStType.B16
    chunk = min(count, 4)  # ld.v8 takes only 32-bit types: two .v4.b16 loads for a .v8
    xs = [
        x
        for i in range(0, count, chunk)
        for x in kb.add(LdVecOp(ldt, base, value_type(at), chunk, offset=i * size)).results
    ]
    kb.add(RedOp(RedOpKind(op), at, kb.args["out"], xs, noftz=at in HALF_TYPES))
    return _kernel(kb, [("out", t, (count,)), ("vals", t, (n * count,))])


RED_VEC_FORMS = [
    (2, "f32", "add"), (4, "f32", "add"),
    (8, "f16", "add"), (2, "f16", "min"), (4, "bf16", "max"), (8, "bf16", "add"), (8, "bf16", "min"),
]


def last_block_sum_kernel(ctas: int, threads: int = 128) -> TestKernel:
    """The "last block" grid reduction: each CTA sums its u32 values into a shared
    counter with ``red.shared::cta.add.u32``; thread 0 publishes the CTA's sum to
    ``partial[cta]``, ``fence.acq_rel.gpu``, then takes a ticket with ``atom.add.u32``;
    the CTA that gets the last ticket (after a second fence) adds every partial and
    writes ``total``. Arguments: total (1,), partial (ctas,), counter (1,), vals (n,)."""
    n = ctas * threads
    kb = KernelBuilder(
        "last_block_sum",
        [("total", GLOBAL), ("partial", GLOBAL), ("counter", GLOBAL), ("vals", GLOBAL)],
        grid=ctas,
        block=threads,
    )
    acc = kb.alloc_shared("acc", 4, 4)
    zero = kb.imm(0)
    kb.if_(kb.cmp(CmpOp.EQ, kb.tid, 0), lambda: kb.add(StOp(LdStType.U32, acc, zero)))
    kb.add(BarSyncOp(0))
    v = kb.v(LdOp(LdStType.U32, kb.gptr(kb.args["vals"], _shl(kb, _gid(kb), 2)), i32))
    kb.add(RedOp(RedOpKind.ADD, AtomType.U32, acc, [v], sem=RedSem.RELAXED, scope=MemScope.CTA))
    kb.add(BarSyncOp(0))
    cta = kb.sreg(SpecialRegister.CTAID_X)

    def publish() -> None:
        s = kb.v(LdOp(LdStType.U32, acc, i32))
        kb.add(StOp(LdStType.U32, kb.gptr(kb.args["partial"], _shl(kb, cta, 2)), s))
        kb.add(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
        ticket = kb.v(AtomOp(AtomOpKind.ADD, AtomType.U32, kb.args["counter"], kb.imm(1)))

        def last() -> None:
            kb.add(FenceOp(FenceSem.ACQ_REL, MemScope.GPU))
            kb.add(MembarOp(MembarLevel.GL))
            total = kb.imm(0)
            for c in range(ctas):
                p = kb.v(LdOp(LdStType.U32, kb.gptr(kb.args["partial"], kb.imm(4 * c)), i32))
                total = kb.add32(total, p)
            kb.add(StOp(LdStType.U32, kb.args["total"], total))

        kb.if_(kb.cmp(CmpOp.EQ, ticket, ctas - 1), last)

    kb.if_(kb.cmp(CmpOp.EQ, kb.tid, 0), publish)
    return _kernel(
        kb,
        [("total", "u32", (1,)), ("partial", "u32", (ctas,)), ("counter", "u32", (1,)), ("vals", "u32", (n,))],
    )


# endregion


def REDUCTION_OPS_KERNELS() -> list[TestKernel]:
    """One kernel of every form the GPU tests of this file launch on any target (the
    256-bit ld.vec and st.vec forms need sm_100: :func:`WIDE_LD_VEC_KERNELS`,
    :func:`WIDE_ST_VEC_KERNELS`)."""
    ks = [shfl_bfly_sum_kernel()] + [shfl_kernel(m) for m in ("up", "down", "bfly", "idx")]
    ks += [ld_vec_kernel(t, c, nc=nc) for t, c, nc in LD_VEC_CASES]
    ks += [ld_vec_kernel("f32", 4, nc=True, offset=16)]
    ks += [st_vec_kernel(t, c) for t, c in ST_VEC_CASES]
    ks += [st_vec_kernel("f32", 4, offset=16)]
    ks += [atom_ticket_kernel(8), last_block_sum_kernel(16)]
    ks += [atom_kernel(op, t) for op, t in ATOM_FORMS]
    ks += [red_kernel(op, t) for op, t in RED_FORMS]
    ks += [red_kernel("add", "f32", sem=RedSem.RELEASE, scope=MemScope.GPU)]
    ks += [red_vec_kernel(c, t, op) for c, t, op in RED_VEC_FORMS]
    return ks


LD_VEC_CASES = [
    ("f32", 4, True), ("f32", 2, False), ("b32", 4, False), ("f64", 2, True),
    ("b16", 4, True), ("u16", 2, False), ("b64", 2, True),
]
WIDE_LD_VEC_CASES = [("f32", 8, True), ("b32", 8, False), ("f64", 4, True), ("b64", 4, False)]


def WIDE_LD_VEC_KERNELS() -> list[TestKernel]:
    return [ld_vec_kernel(t, c, nc=nc) for t, c, nc in WIDE_LD_VEC_CASES]


ST_VEC_CASES = [("f32", 4), ("f32", 2), ("b32", 4), ("f64", 2), ("b16", 4), ("u16", 2), ("b64", 2)]
WIDE_ST_VEC_CASES = [("f32", 8), ("b32", 8), ("f64", 4), ("b64", 4)]


def WIDE_ST_VEC_KERNELS() -> list[TestKernel]:
    return [st_vec_kernel(t, c) for t, c in WIDE_ST_VEC_CASES]
