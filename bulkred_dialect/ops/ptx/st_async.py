"""st.async (PTX ISA, Data Movement and Conversion Instructions: st.async): an
asynchronous store into the shared memory of a CTA of the cluster, completing on an
mbarrier of that CTA.

``ptx.st.async`` is the form ``st.async{.weak}.shared::cluster.mbarrier::complete_tx::bytes
{.v2, .v4}.type [a], b, [mbar];``: once the store is done, a complete-tx of its byte count
on the mbarrier ``[mbar]`` (the receiving CTA's). The store is weak (``.weak``, the only
``.sem``, is the default and not printed). The ``.release``/``.mmio`` form into global
memory is another instruction, not this op.

The rows' cluster exchange (docs/rows.md, rows_cluster) pushes each CTA's partial into a
slot of every peer with it: the peers' mbarriers count the bytes, no cluster barrier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import f32, f64
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import irdl_attr_definition, operand_def, prop_def, var_operand_def
from xdsl.dialects.utils import EnumAttribute
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.ptx.addresses import check_aligned, check_mbarrier_address
from bulkred_dialect.ops.ptx.base import (
    PtxInstruction,
    RegisterNamer,
    StateSpace,
    addr,
    expect_ptr,
    i32,
    i64,
    mnemonic,
)
from bulkred_dialect.ops.target import Requirement


class StAsyncType(StrEnum):
    """``.type`` of st.async: ``.b32, .b64, .u32, .u64, .s32, .s64, .f32, .f64``."""

    B32 = "b32"
    B64 = "b64"
    U32 = "u32"
    U64 = "u64"
    S32 = "s32"
    S64 = "s64"
    F32 = "f32"
    F64 = "f64"


@irdl_attr_definition
class StAsyncTypeAttr(EnumAttribute[StAsyncType], SpacedOpaqueSyntaxAttribute):
    name = "ptx.st_async_type"


def st_async_register(t: StAsyncType) -> Attribute:
    """The register type of a value of ``.type`` ``t``: f32 / f64 for the float types,
    i32 / i64 for the others."""
    if t == StAsyncType.F32:
        return f32
    if t == StAsyncType.F64:
        return f64
    return i64 if str(t).endswith("64") else i32


@op_definition
class StAsyncOp(PtxInstruction):
    """Store ``b`` (one value, or a ``.v2`` / ``.v4`` vector of values) at ``[a]`` in the
    shared memory of a CTA of the cluster; when done, a complete-tx of the stored bytes on
    the mbarrier ``[mbar]`` of that same CTA.

    PTX: ``st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2, .v4}.type [a], b, [mbar];``

    ``a`` and ``mbar`` are ``!ptx.ptr<shared::cluster>`` (``mapa``'s result); ``b`` is 1, 2
    or 4 values of the register type of ``.type`` (f32, f64, else i32 / i64); ``.v4`` only
    of a 32-bit ``.type``; a known ``a`` aligned to the whole vector's size, ``mbar`` to 8.

    Example::

        ptx.st.async f32 %a, %x, %y mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32

    is ``st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%r1], {%f1, %f2}, [%r2];``.
    Needs sm_90 and PTX ISA 8.1. Spec: PTX ISA, st.async.
    """

    name = "ptx.st.async"
    SPEC_SECTION: ClassVar = "st.async"
    REQUIREMENT: ClassVar = Requirement(sm=90, ptx=(8, 1))

    type = prop_def(StAsyncTypeAttr)
    a = operand_def(Attribute)
    b = var_operand_def()
    mbar = operand_def(Attribute)

    assembly_format = "$type $a `,` $b `mbar` $mbar attr-dict `:` type($a) `,` type($mbar) `,` type($b)"

    def __init__(self, type: StAsyncType, a: SSAValue, values: Sequence[SSAValue], mbar: SSAValue):
        super().__init__(operands=[a, list(values), mbar], properties={"type": StAsyncTypeAttr(type)})

    @property
    def count(self) -> int:
        return len(self.b)

    def verify_(self) -> None:
        t = self.type.data
        expect_ptr("a", self.a, StateSpace.SHARED_CLUSTER)
        expect_ptr("mbar", self.mbar, StateSpace.SHARED_CLUSTER)
        n = self.count
        if n not in (1, 2, 4):
            raise VerifyException(f"operand 'b' must be 1 value or a '.v2' / '.v4' vector, got {n} values")
        bits = 64 if str(t).endswith("64") else 32
        if n == 4 and bits == 64:
            raise VerifyException(f"'.v4' needs a 32-bit '.type' (b32, u32, s32, f32), got {t}")
        want = st_async_register(t)
        for i, v in enumerate(self.b):
            if v.type != want:
                raise VerifyException(f"operand 'b{i}' must be {want} for '.type' {t}, got {v.type}")
        check_aligned("a", self.a, n * bits // 8)
        check_mbarrier_address("mbar", self.mbar)

    def ptx_mnemonic(self) -> str:
        return mnemonic(
            "st.async", StateSpace.SHARED_CLUSTER, "mbarrier::complete_tx::bytes",
            f"v{self.count}" if self.count > 1 else None, self.type.data,
        )

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        b = reg(self.b[0]) if self.count == 1 else "{" + ", ".join(reg(v) for v in self.b) + "}"
        return [addr(reg(self.a)), b, addr(reg(self.mbar))]


ST_ASYNC_OPS = [StAsyncOp]
ST_ASYNC_ATTRS = [StAsyncTypeAttr]
