"""The differential cases of ``bulkred_dialect.ops.ptx.memory``: ld / st, ld.vec, st.vec, cvta,
add.ptr, mov of immediates and registers."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.ir import Attribute

from bulkred_dialect.ops.ptx.base import (
    PtrType,
    PtxInstruction,
    StateSpace,
    bf16,
    f16,
    f32,
    f32x2,
    f64,
    i1,
    i16,
    i32,
    i64,
)
from bulkred_dialect.ops.ptx.memory import (
    CvtaToGlobalOp,
    LDST_SPACES,
    LD_VEC_COUNTS,
    LD_VEC_MAX_BITS,
    LdOp,
    LdStType,
    LdVecOp,
    MovImmOp,
    MovOp,
    PtrAddOp,
    StOp,
    StVecOp,
    ldst_bits,
)
from ptx_cases import DiffCase


def _vector_forms(b16: tuple[Attribute, ...]) -> Iterator[tuple[int, LdStType, list[Attribute]]]:
    """(count, ``.type``, register types) of ld.vec and st.vec: every count x ``.type``,
    with the natural IR type of ``.type``'s register and a few register classes that
    cannot hold it (``b16``: those of ``.b16``). ``.v8`` only with 32- and 64-bit types,
    and the 256-bit forms only with registers as wide as ``.type``: ptxas (nvJitLink 13)
    crashes on ``ld.global.v8.b16``, and now and then on ``ld.global.v8.f32`` into 64-bit
    registers."""
    natural = {8: i16, 16: i16, 32: i32, 64: i64}
    for count in LD_VEC_COUNTS:
        for t in LdStType:
            bits = ldst_bits(t)
            if count == 8 and bits < 32:
                continue
            vts = [natural[bits]]
            if t == LdStType.F32:
                vts = [f32, i64, f16]
            elif t == LdStType.F64:
                vts = [f64]
            elif t == LdStType.B16:
                vts = list(b16)
            if count * bits > LD_VEC_MAX_BITS:
                vts = vts[:1]  # ptxas now and then crashes on wider registers there
            yield count, t, vts


def _ld_vec_cases() -> Iterator[DiffCase]:
    """ld.vec: every space x nc x :func:`_vector_forms`."""
    for space in LDST_SPACES:
        p = PtrType(space)
        for nc in (False, True):
            for count, t, vts in _vector_forms((i16, f16)):
                for vt in vts:
                    tag = f"ld.vec.{space}{'.nc' if nc else ''}.v{count}.{t}.{_type_tag(vt)}"

                    def build(args, t=t, vt=vt, count=count, nc=nc) -> PtxInstruction:
                        return LdVecOp(t, args[0], vt, count, nc=nc)

                    yield DiffCase(tag, (p,), build)
    yield DiffCase(
        "ld.vec.global.nc.v4.f32+16",
        (PtrType(StateSpace.GLOBAL),),
        lambda args: LdVecOp(LdStType.F32, args[0], f32, 4, offset=16, nc=True),
    )


def _st_vec_cases() -> Iterator[DiffCase]:
    """st.vec: every space x :func:`_vector_forms` (bf16 values too)."""
    for space in LDST_SPACES:
        p = PtrType(space)
        for count, t, vts in _vector_forms((i16, f16, bf16)):
            for vt in vts:

                def build(args, t=t) -> PtxInstruction:
                    return StVecOp(t, args[0], args[1:])

                yield DiffCase(f"st.vec.{space}.v{count}.{t}.{_type_tag(vt)}", (p, *[vt] * count), build)
    yield DiffCase(
        "st.vec.global.v4.f32+16",
        (PtrType(StateSpace.GLOBAL), f32, f32, f32, f32),
        lambda args: StVecOp(LdStType.F32, args[0], args[1:], offset=16),
    )


# Value types tried for every ld/st '.type': one IR type per register class.
_VALUE_TYPES: tuple[Attribute, ...] = (i16, i32, i64, f16, f32, f64, i1)


def _type_tag(t: Attribute) -> str:
    return str(t).replace("<", "").replace(">", "").replace(" ", "")


def differential_cases() -> Iterator[DiffCase]:
    """ld / st: every space x ``.type`` x value register class (with f32 also a negative
    offset); cvta.to.global; add.ptr for each space; mov.imm for each register class;
    mov between every pair of register classes.

    ``ld.param``, ``ptx.alloc`` and ``ptx.mov.addr`` name symbols that a one-op kernel
    cannot declare; the printer tests assemble them (tests/test_printer.py).
    """
    for space in LDST_SPACES:
        p = PtrType(space)
        for t in LdStType:
            for vt in _VALUE_TYPES:
                # The offset changes the address text only: tried with one type.
                for off in (0, -8) if t == LdStType.F32 else (0,):
                    tag = f"{t}.{_type_tag(vt)}" + (f"+{off}" if off else "")

                    def ld(args, t=t, vt=vt, off=off) -> PtxInstruction:
                        return LdOp(t, args[0], vt, off)

                    def st(args, t=t, off=off) -> PtxInstruction:
                        return StOp(t, args[0], args[1], off)

                    yield DiffCase(f"ld.{space}.{tag}", (p,), ld)
                    yield DiffCase(f"st.{space}.{tag}", (p, vt), st)
    yield DiffCase("cvta.to.global.u64", (i64,), lambda args: CvtaToGlobalOp(args[0]))
    yield DiffCase("cvta.to.global.u64.i32", (i32,), lambda args: CvtaToGlobalOp(args[0]))
    for space in (StateSpace.GLOBAL, StateSpace.LOCAL, StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER):
        p = PtrType(space)
        for it in (i32, i64):
            yield DiffCase(
                f"add.ptr.{space}.{it}", (p, it), lambda args: PtrAddOp(args[0], args[1])
            )
    imms: tuple[tuple[int | float, Attribute], ...] = (
        (1, i1), (42, i16), (-3, i16), (42, i32), (-7, i32), (2**40, i64), (-1, i64),
        (1.0, f16), (-2.5, bf16), (1.0, f32), (float("inf"), f32), (0.1, f64), (float("-inf"), f64),
    )
    for v, t in imms:

        def imm(args, v=v, t=t) -> PtxInstruction:
            return MovImmOp(v, t)

        yield DiffCase(f"mov.imm.{_type_tag(t)}.{v}", (), imm)
    regs: tuple[Attribute, ...] = (i1, i16, i32, i64, f16, f32, f64, f32x2, PtrType(StateSpace.SHARED_CTA))
    for a in regs:
        for d in regs:

            def mov(args, d=d) -> PtxInstruction:
                return MovOp(args[0], d)

            yield DiffCase(f"mov.{_type_tag(a)}.to.{_type_tag(d)}", (a,), mov)
    yield from _ld_vec_cases()
    yield from _st_vec_cases()
