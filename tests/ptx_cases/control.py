"""The differential cases of ``bulkred_dialect.ops.ptx.control``: setp, selp, cvt."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.ir import Attribute

from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i16,
    i32,
    i64,
    mnemonic,
)
from bulkred_dialect.ops.ptx.control import (
    CVT_IR_TYPE,
    CmpOp,
    CvtOp,
    CvtRounding,
    CvtType,
    SelpOp,
    SelpType,
    SetpOp,
    SetpType,
)
from ptx_cases import DiffCase


# One IR type per register class, for the operand-type axis of the cases.
_REG_TYPES: tuple[Attribute, ...] = (i16, i32, i64, f16, f32, f64)


def _tag(t: Attribute) -> str:
    return str(t)


def differential_cases() -> Iterator[DiffCase]:
    """setp: every ``.CmpOp`` x ``.type`` (operands of the type's own register class) and
    every ``.type`` x register class (with ``eq``); selp: every ``.type`` x register class;
    cvt: every ``.dtype`` x ``.atype`` x rounding (none and each modifier), operands of the
    types' registers. ``ret`` and the branches are terminators (a one-op kernel ends in
    ``func.return``) and need labels; the printer tests assemble them."""
    own: dict[str, Attribute] = {
        "b16": i16, "b32": i32, "b64": i64, "u16": i16, "u32": i32, "u64": i64,
        "s16": i16, "s32": i32, "s64": i64, "f16": f16, "bf16": bf16, "f32": f32, "f64": f64,
    }
    for c in CmpOp:
        for t in SetpType:

            def setp(args, c=c, t=t) -> PtxInstruction:
                return SetpOp(c, t, args[0], args[1])

            yield DiffCase(mnemonic("setp", c, t), (own[str(t)],) * 2, setp)
    for t in SetpType:
        for rt in _REG_TYPES:
            if rt == own[str(t)]:
                continue

            def setp_reg(args, t=t) -> PtxInstruction:
                return SetpOp(CmpOp.EQ, t, args[0], args[1])

            yield DiffCase(f"setp.eq.{t}.{_tag(rt)}", (rt, rt), setp_reg)
    for t in SelpType:
        for rt in _REG_TYPES:

            def selp(args, t=t) -> PtxInstruction:
                return SelpOp(t, args[0], args[1], args[2])

            yield DiffCase(f"selp.{t}.{_tag(rt)}", (rt, rt, i1), selp)
    for d in CvtType:
        for a in CvtType:
            for r in (None, *CvtRounding):

                def cvt(args, d=d, a=a, r=r) -> PtxInstruction:
                    return CvtOp(d, a, args[0], CVT_IR_TYPE[d][-1], rnd=r)

                yield DiffCase(mnemonic("cvt", r, d, a), (CVT_IR_TYPE[a][-1],), cvt)
