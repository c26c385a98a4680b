"""cp.async.bulk / cp.reduce.async.bulk / cp.async.bulk.prefetch ops: the PTX lines they
print (and that ptxas assembles them), the verifier against the spec's tables and the
alignment rules, the target requirements, and the differential cases."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from itertools import product

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble
from bulkred_dialect.ops.ptx.addresses import check_aligned, known_alignment, trace_address
from bulkred_dialect.ops.ptx.base import (
    PtrType,
    PtxInstruction,
    StateSpace,
    i16,
    i32,
    i64,
    register_class,
)
from bulkred_dialect.ops.ptx.bulk import (
    BULK_OPS,
    COMPLETE_TX,
    BulkRedOp,
    BulkRedType,
    CacheHint,
    CpAsyncBulkGlobalSharedCtaOp,
    CpAsyncBulkPrefetchL2GlobalOp,
    CpAsyncBulkSharedClusterGlobalOp,
    CpAsyncBulkSharedClusterSharedCtaOp,
    CpAsyncBulkSharedCtaGlobalOp,
    CpReduceAsyncBulkGlobalSharedCtaOp,
    CpReduceAsyncBulkSharedClusterSharedCtaOp,
    Multicast,
)
from bulkred_dialect.ops.ptx.memory import AllocOp, AllocSpace, CvtaToGlobalOp, MovAddrOp, MovImmOp, MovOp, PtrAddOp
from bulkred_dialect.ops.ptx.sync import MapaOp
from bulkred_dialect.ops.target import Requirement, Target
from ptx_cases.bulk import differential_cases

GLOBAL = PtrType(StateSpace.GLOBAL)
CTA = PtrType(StateSpace.SHARED_CTA)
CLUSTER = PtrType(StateSpace.SHARED_CLUSTER)


def values(*types: Attribute) -> tuple[SSAValue, ...]:
    return Block(arg_types=types).args


class Namer:
    """PTX register names by register class, numbered from 1 in order of first use."""

    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.counts: dict[str, int] = defaultdict(int)

    def __call__(self, v: SSAValue) -> str:
        if v not in self.names:
            prefix = register_class(v.type)[1]
            self.counts[prefix] += 1
            self.names[v] = f"{prefix}{self.counts[prefix]}"
        return self.names[v]


# region Printed PTX lines

# (builder over fresh operands of the given types, exact PTX line with registers numbered per class)
LINES: list[tuple[tuple[Attribute, ...], Callable[..., PtxInstruction], str]] = [
    (
        (GLOBAL, CTA, i32, i64),
        lambda d, s, n, p: CpReduceAsyncBulkGlobalSharedCtaOp(
            BulkRedOp.ADD,
            BulkRedType.F16,
            d,
            s,
            n,
            noftz=True,
            cache_hint=CacheHint.L2,
            cache_policy=p,
        ),
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.L2::cache_hint.add.noftz.f16 [%rd1], [%r1], %r2, %rd2;",
    ),
    (
        (GLOBAL, CTA, i32),
        lambda d, s, n: CpReduceAsyncBulkGlobalSharedCtaOp(BulkRedOp.ADD, BulkRedType.F32, d, s, n),
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd1], [%r1], %r2;",
    ),
    (
        (CLUSTER, CTA, i32, CLUSTER),
        lambda d, s, n, m: CpReduceAsyncBulkSharedClusterSharedCtaOp(
            BulkRedOp.MIN, BulkRedType.S32, d, s, n, m
        ),
        "cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.min.s32 [%r1], [%r2], %r3, [%r4];",
    ),
    (
        (CTA, GLOBAL, i32, CTA, i64),
        lambda d, s, n, m, p: CpAsyncBulkSharedCtaGlobalOp(
            d, s, n, m, cache_hint=CacheHint.L2, cache_policy=p
        ),
        "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r1], [%rd1], %r2, [%r3], %rd2;",
    ),
    (
        (CLUSTER, GLOBAL, i32, CLUSTER, i16, i64),
        lambda d, s, n, m, k, p: CpAsyncBulkSharedClusterGlobalOp(
            d,
            s,
            n,
            m,
            multicast=Multicast.CLUSTER,
            cta_mask=k,
            cache_hint=CacheHint.L2,
            cache_policy=p,
        ),
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
        " [%r1], [%rd1], %r2, [%r3], %rs1, %rd2;",
    ),
    (
        (CLUSTER, CTA, i32, CLUSTER),
        lambda d, s, n, m: CpAsyncBulkSharedClusterSharedCtaOp(d, s, n, m),
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r1], [%r2], %r3, [%r4];",
    ),
    (
        (GLOBAL, CTA, i32, i64, i16),
        lambda d, s, n, p, k: CpAsyncBulkGlobalSharedCtaOp(
            d, s, n, cache_hint=CacheHint.L2, cache_policy=p, cp_mask=True, byte_mask=k
        ),
        "cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint.cp_mask [%rd1], [%r1], %r2, %rd2, %rs1;",
    ),
    (
        (GLOBAL, CTA, i32, i16),
        lambda d, s, n, k: CpAsyncBulkGlobalSharedCtaOp(d, s, n, cp_mask=True, byte_mask=k),
        "cp.async.bulk.global.shared::cta.bulk_group.cp_mask [%rd1], [%r1], %r2, %rs1;",
    ),
    (
        (GLOBAL, i32, i64),
        lambda s, n, p: CpAsyncBulkPrefetchL2GlobalOp(
            s, n, cache_hint=CacheHint.L2, cache_policy=p
        ),
        "cp.async.bulk.prefetch.L2.global.L2::cache_hint [%rd1], %r1, %rd2;",
    ),
]


@pytest.mark.parametrize(
    "types,build,expected", LINES, ids=[line.split(" ")[0] for _, _, line in LINES]
)
def test_ptx_line(types, build, expected):
    op = build(*values(*types))
    op.verify()
    assert op.ptx_line(Namer()) == expected


def kernel(line: str, arch: str) -> str:
    return (
        f".version 8.6\n.target {arch}\n.address_size 64\n\n.visible .entry k()\n{{\n"
        "\t.reg .b32 %r<20>;\n\t.reg .b64 %rd<20>;\n\t.reg .b16 %rs<20>;\n"
        f"\t{line}\n\tret;\n}}\n"
    )


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize(
    "types,build,expected", LINES, ids=[line.split(" ")[0] for _, _, line in LINES]
)
def test_line_assembles(types, build, expected, arch):
    """Each printed line assembles on every target whose requirement it meets, and
    ptxas rejects it on a target that does not meet it."""
    op = build(*values(*types))
    line = op.ptx_line(Namer())
    if op.requirement().satisfied_by(Target.parse(arch)):
        assemble(kernel(line, arch), arch)
    else:
        with pytest.raises(PtxasError):
            assemble(kernel(line, arch), arch)


def test_cp_mask_is_the_form_sm_90a_lacks():
    runs_on_90a = [
        build(*values(*types)).requirement().satisfied_by(Target.parse("sm_90a"))
        for types, build, _ in LINES
    ]
    assert [line for (_, _, line), ok in zip(LINES, runs_on_90a) if not ok] == [
        LINES[6][2],
        LINES[7][2],
    ]


# endregion

# region The .redOp x .type table


# The spec's table, copied as text (9.7.9.25.4.2), so the verifier is checked against the page.
SPEC_TABLE = """
shared::cluster add u32 s32 u64
shared::cluster min u32 s32
shared::cluster max u32 s32
shared::cluster inc u32
shared::cluster dec u32
shared::cluster and b32
shared::cluster or b32
shared::cluster xor b32
global add u32 s32 u64 f32 f64 f16 bf16
global min u32 s32 u64 s64 f16 bf16
global max u32 s32 u64 s64 f16 bf16
global inc u32
global dec u32
global and b32 b64
global or b32 b64
global xor b32 b64
"""
VALID = {
    (dst, op, t)
    for dst, op, *types in (row.split() for row in SPEC_TABLE.strip().splitlines())
    for t in types
}


def reduce_op(dst: str, op: BulkRedOp, t: BulkRedType, noftz: bool) -> PtxInstruction:
    if dst == "global":
        d, s, n = values(GLOBAL, CTA, i32)
        return CpReduceAsyncBulkGlobalSharedCtaOp(op, t, d, s, n, noftz=noftz)
    d, s, n, m = values(CLUSTER, CTA, i32, CLUSTER)
    return CpReduceAsyncBulkSharedClusterSharedCtaOp(op, t, d, s, n, m, noftz=noftz)


def verify_message(op: PtxInstruction) -> str | None:
    """The verifier's message (without xDSL's printed context), or None when the op verifies."""
    try:
        op.verify()
    except VerifyException as e:
        return str(e).strip().splitlines()[0]
    return None


@pytest.mark.parametrize("dst", ["global", "shared::cluster"])
def test_verifier_accepts_exactly_the_table(dst):
    accepted = set()
    for op, t, noftz in product(BulkRedOp, BulkRedType, (False, True)):
        if verify_message(reduce_op(dst, op, t, noftz)) is None:
            accepted.add((dst, str(op), str(t), noftz))
    noftz_needed = {("global", "add", "f16"), ("global", "add", "bf16")}
    expected = {(d, o, t, (d, o, t) in noftz_needed) for d, o, t in VALID if d == dst}
    assert accepted == expected


@pytest.mark.parametrize(
    "dst,op,t,noftz,message",
    [
        (
            "global",
            BulkRedOp.MIN,
            BulkRedType.F32,
            False,
            "'.redOp' min is not valid with '.type' f32 for '.dst' global (valid: u32, s32, u64, s64, f16, bf16)",
        ),
        (
            "shared::cluster",
            BulkRedOp.ADD,
            BulkRedType.S64,
            False,
            "'.type' s64 is not valid for '.dst' shared::cluster (valid: b32, u32, s32, u64)",
        ),
        (
            "shared::cluster",
            BulkRedOp.ADD,
            BulkRedType.B64,
            False,
            "'.redOp' add is not valid with '.type' b64 for '.dst' shared::cluster (valid: u32, s32, u64)",
        ),
        (
            "global",
            BulkRedOp.XOR,
            BulkRedType.S32,
            False,
            "'.redOp' xor is not valid with '.type' s32 for '.dst' global (valid: b32, b64)",
        ),
        (
            "global",
            BulkRedOp.ADD,
            BulkRedType.BF16,
            False,
            "'.noftz' is required with '.redOp' add and '.type' bf16",
        ),
        (
            "global",
            BulkRedOp.MAX,
            BulkRedType.F16,
            True,
            "'.noftz' is only valid with '.redOp' add and '.type' f16 or bf16, got '.redOp' max and '.type' f16",
        ),
        (
            "shared::cluster",
            BulkRedOp.ADD,
            BulkRedType.U32,
            True,
            "'.noftz' is only valid with '.redOp' add and '.type' f16 or bf16, got '.redOp' add and '.type' u32",
        ),
    ],
)
def test_reduce_messages(dst, op, t, noftz, message):
    assert verify_message(reduce_op(dst, op, t, noftz)) == message


def test_type_message_offers_only_types_the_table_accepts():
    """A '.type' outside the shared::cluster syntax block is answered with the types some
    '.redOp' accepts there: b64 (in the syntax block, in no row of the table) is not offered."""
    accepted = {t for d, _, t in VALID if d == "shared::cluster"}
    for t in BulkRedType:
        if str(t) in ("b32", "u32", "s32", "b64", "u64"):
            continue
        message = verify_message(reduce_op("shared::cluster", BulkRedOp.ADD, t, False))
        assert message is not None and message.startswith(f"'.type' {t} is not valid"), message
        offered = message.split("(valid: ")[1].rstrip(")").split(", ")
        assert set(offered) == accepted, (t, offered)
        assert "b64" not in offered


# endregion

# region Qualifiers and their operands, size


def test_qualifier_and_operand_both_ways():
    d, s, n, p, k = values(GLOBAL, CTA, i32, i64, i16)
    cases = [
        (
            CpAsyncBulkGlobalSharedCtaOp(d, s, n, cache_hint=CacheHint.L2),
            "'.L2::cache_hint' needs operand 'cachePolicy', which is absent",
        ),
        (
            CpAsyncBulkGlobalSharedCtaOp(d, s, n, cache_policy=p),
            "operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent",
        ),
        (
            CpAsyncBulkGlobalSharedCtaOp(d, s, n, cp_mask=True),
            "'.cp_mask' needs operand 'byteMask', which is absent",
        ),
        (
            CpAsyncBulkGlobalSharedCtaOp(d, s, n, byte_mask=k),
            "operand 'byteMask' is only valid with '.cp_mask', which is absent",
        ),
        (
            CpReduceAsyncBulkGlobalSharedCtaOp(
                BulkRedOp.ADD, BulkRedType.F32, d, s, n, cache_policy=p
            ),
            "operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent",
        ),
        (
            CpAsyncBulkPrefetchL2GlobalOp(d, n, cache_hint=CacheHint.L2),
            "'.L2::cache_hint' needs operand 'cachePolicy', which is absent",
        ),
    ]
    c, g, m = values(CLUSTER, GLOBAL, CLUSTER)
    cases += [
        (
            CpAsyncBulkSharedClusterGlobalOp(c, g, n, m, multicast=Multicast.CLUSTER),
            "'.multicast::cluster' needs operand 'ctaMask', which is absent",
        ),
        (
            CpAsyncBulkSharedClusterGlobalOp(c, g, n, m, cta_mask=k),
            "operand 'ctaMask' is only valid with '.multicast::cluster', which is absent",
        ),
    ]
    for op, message in cases:
        assert verify_message(op) == message, op.ptx_mnemonic()


def constant_size(value: int) -> SSAValue:
    return arith.ConstantOp(IntegerAttr(value, i32)).result


@pytest.mark.parametrize(
    "size,ok",
    [(16, True), (4096, True), (8, False), (100, False), (-8, False), (-16, False), (0, True)],
)
def test_constant_size_non_negative_multiple_of_16(size, ok):
    # -16 is a multiple of 16, but ptxas reads the register as .u32: about 4 GiB
    d, s, m = values(CTA, GLOBAL, CTA)
    op = CpAsyncBulkSharedCtaGlobalOp(d, s, constant_size(size), m)
    expected = None if ok else f"'size' must be a non-negative multiple of 16, got {size}"
    assert verify_message(op) == expected


def test_wrong_state_space_is_rejected():
    d, s, n, m = values(CTA, GLOBAL, i32, CLUSTER)
    with pytest.raises(VerifyException) as e:
        CpAsyncBulkSharedCtaGlobalOp(d, s, n, m).verify()
    assert str(e.value).splitlines()[:2] == [
        "operand 'mbar' at position 3 does not verify:",
        "Expected attribute !ptx.ptr<shared::cta> but got !ptx.ptr<shared::cluster>",
    ]


# endregion

# region Alignment of addresses


def kernel_block(*arg_types: Attribute) -> Block:
    """The body of a fresh ``func.func`` (ptx.mov.addr looks its ptx.alloc up in the kernel)."""
    return func.FuncOp("k", (list(arg_types), [])).body.block


def add(block: Block, op: Operation) -> SSAValue:
    """Append ``op`` to ``block``; its result."""
    block.add_op(op)
    return op.results[0]


def shared_address(block: Block, align: int, offsets: tuple[SSAValue | int, ...] = ()) -> SSAValue:
    """The address of a new ``ptx.alloc shared ... align align``, plus each offset in turn."""
    sym = f"buf{len(block.ops)}"
    block.add_op(AllocOp(sym, AllocSpace.SHARED, 1024, align))
    a = add(block, MovAddrOp(sym, StateSpace.SHARED_CTA))
    for off in offsets:
        if isinstance(off, int):
            off = add(block, arith.ConstantOp(IntegerAttr(off, i32)))
        a = add(block, PtrAddOp(a, off))
    return a


@pytest.mark.parametrize(
    "align,offsets,expected",
    [
        (16, (), 16),
        (4, (), 4),
        (128, (16,), 16),
        (16, (8,), 8),
        (16, (8, 8), 16),
        (16, (24, 8), 16),
        (16, (-8,), 8),
        (16, (100,), 4),
        (128, (1024,), 128),
        (16, (0,), 16),
    ],
)
def test_known_alignment_of_alloc_plus_constant_offsets(align, offsets, expected):
    block = kernel_block()
    assert known_alignment(shared_address(block, align, offsets)) == expected


def test_known_alignment_follows_mov_mapa_cvta_and_constants():
    block = kernel_block(i32, GLOBAL, i64)
    rank, g, n64 = block.args
    a = shared_address(block, 16, (8,))
    assert known_alignment(add(block, MovOp(a, CLUSTER))) == 8
    assert known_alignment(add(block, MapaOp(a, rank))) == 8
    c = add(block, arith.ConstantOp(IntegerAttr(4096 + 32, i64)))
    assert known_alignment(add(block, CvtaToGlobalOp(c))) == 32
    imm = add(block, MovImmOp(4100, i64))
    assert known_alignment(add(block, CvtaToGlobalOp(imm))) == 4


def test_unknown_alignment():
    block = kernel_block(CTA, i32, GLOBAL)
    arg, off, g = block.args
    assert known_alignment(arg) is None
    assert known_alignment(g) is None
    # A non-constant offset, or a base whose alignment is unknown.
    assert known_alignment(shared_address(block, 16, (off,))) is None
    c16 = add(block, arith.ConstantOp(IntegerAttr(16, i32)))
    assert known_alignment(add(block, PtrAddOp(arg, c16))) is None
    # ptx.mov.addr of a symbol that no ptx.alloc declares (its own verifier reports it).
    assert known_alignment(add(block, MovAddrOp("nowhere", StateSpace.SHARED_CTA))) is None
    # Address 0 carries no alignment information.
    zero = add(block, arith.ConstantOp(IntegerAttr(0, i64)))
    assert known_alignment(add(block, CvtaToGlobalOp(zero))) is None


def test_check_aligned():
    block = kernel_block()
    check_aligned("mbar", shared_address(block, 8), 8)
    check_aligned("mbar", block.insert_arg(CTA, 0), 8)
    with pytest.raises(VerifyException, match=r"^'mbar' must be 8-byte aligned, known alignment 4$"):
        check_aligned("mbar", shared_address(block, 16, (4,)), 8)


# Each bulk op over a dict of its address operands (``size`` is a fresh argument).
ADDRESS_BUILDERS: dict[type[PtxInstruction], Callable[[dict[str, SSAValue], SSAValue], PtxInstruction]] = {
    CpAsyncBulkSharedCtaGlobalOp: lambda a, n: CpAsyncBulkSharedCtaGlobalOp(
        a["dstMem"], a["srcMem"], n, a["mbar"]
    ),
    CpAsyncBulkSharedClusterGlobalOp: lambda a, n: CpAsyncBulkSharedClusterGlobalOp(
        a["dstMem"], a["srcMem"], n, a["mbar"]
    ),
    CpAsyncBulkSharedClusterSharedCtaOp: lambda a, n: CpAsyncBulkSharedClusterSharedCtaOp(
        a["dstMem"], a["srcMem"], n, a["mbar"]
    ),
    CpAsyncBulkGlobalSharedCtaOp: lambda a, n: CpAsyncBulkGlobalSharedCtaOp(a["dstMem"], a["srcMem"], n),
    CpAsyncBulkPrefetchL2GlobalOp: lambda a, n: CpAsyncBulkPrefetchL2GlobalOp(a["srcMem"], n),
    CpReduceAsyncBulkSharedClusterSharedCtaOp: lambda a, n: CpReduceAsyncBulkSharedClusterSharedCtaOp(
        BulkRedOp.ADD, BulkRedType.U32, a["dstMem"], a["srcMem"], n, a["mbar"]
    ),
    CpReduceAsyncBulkGlobalSharedCtaOp: lambda a, n: CpReduceAsyncBulkGlobalSharedCtaOp(
        BulkRedOp.ADD, BulkRedType.F32, a["dstMem"], a["srcMem"], n
    ),
}

ADDRESS_FIELDS = {"dstMem": 16, "srcMem": 16, "mbar": 8}


def address_fields(cls: type[PtxInstruction]) -> dict[str, StateSpace]:
    """The address operands of ``cls`` and their state spaces: ``dstMem`` and ``mbar`` in
    the destination's, ``srcMem`` in the source's."""
    operands = dict(cls.get_irdl_definition().operands)
    spaces = {"dstMem": cls.DIRECTION[0], "mbar": cls.DIRECTION[0], "srcMem": cls.DIRECTION[-1]}
    return {name: spaces[name] for name in ADDRESS_FIELDS if name in operands}


def address(block: Block, space: StateSpace, align: int) -> SSAValue:
    """An address in ``space`` whose known alignment is exactly ``align``."""
    if space == StateSpace.GLOBAL:
        c = add(block, arith.ConstantOp(IntegerAttr(1 << 20 | align, i64)))
        return add(block, CvtaToGlobalOp(c))
    a = shared_address(block, align)
    return a if space == StateSpace.SHARED_CTA else add(block, MovOp(a, CLUSTER))


def test_every_bulk_op_has_its_address_fields():
    assert set(ADDRESS_BUILDERS) == set(BULK_OPS)
    for cls in BULK_OPS:
        fields = address_fields(cls)
        assert "srcMem" in fields, cls.name
        if cls is not CpAsyncBulkPrefetchL2GlobalOp:
            assert "dstMem" in fields, cls.name
        assert ("mbar" in fields) == (cls.COMPLETION == COMPLETE_TX), cls.name


@pytest.mark.parametrize(
    "cls,field",
    [(cls, f) for cls in ADDRESS_BUILDERS for f in ADDRESS_FIELDS if f in address_fields(cls)],
    ids=lambda x: x.name if isinstance(x, type) else x,
)
def test_each_address_alignment_is_checked(cls, field):
    """With every address 128-byte aligned the op verifies; with ``field`` one alignment step
    short of its requirement it is rejected naming that field."""
    n = ADDRESS_FIELDS[field]
    short = f"'{field}' must be {n}-byte aligned, known alignment {n // 2}"
    for align, expected in ((128, None), (n, None), (n // 2, short)):
        block = kernel_block(i32)
        spaces = address_fields(cls)
        addrs = {f: address(block, s, align if f == field else 128) for f, s in spaces.items()}
        op = ADDRESS_BUILDERS[cls](addrs, block.args[0])
        block.add_ops([op, func.ReturnOp()])
        assert verify_message(op) == expected, (align, op.ptx_mnemonic())



def test_trace_address_finds_the_array_and_the_offset():
    block = kernel_block(i32)
    (rank,) = block.args
    a = shared_address(block, 16, (8, 24, -16))
    root, offset = trace_address(add(block, MapaOp(add(block, MovOp(a, CLUSTER)), rank)))
    assert isinstance(root, AllocOp) and root.symbol == "buf0" and offset == 16
    assert trace_address(block.insert_arg(CTA, 0)) == (None, 0)
    c = add(block, arith.ConstantOp(IntegerAttr(4096, i64)))
    assert trace_address(add(block, CvtaToGlobalOp(c))) == (4096, 0)


def constant_i32(block: Block, value: int) -> SSAValue:
    return add(block, arith.ConstantOp(IntegerAttr(value, i32)))


# (byte offset of the address under test into its 1024-byte array, constant size): the
# message's byte range, or None when the bytes lie inside the array
EXTENT_CASES = [((0, 1024), None), ((512, 512), None), ((512, 528), "[512, 1040)"), ((-16, 16), "[-16, 0)")]
MBAR_CASES = [(1016, None), (1024, "[1024, 1032)"), (-8, "[-8, 0)")]


@pytest.mark.parametrize(
    "cls,field",
    [
        (cls, f)
        for cls in ADDRESS_BUILDERS
        for f, space in address_fields(cls).items()
        if space != StateSpace.GLOBAL
    ],
    ids=lambda x: x.name if isinstance(x, type) else x,
)
def test_each_address_extent_is_checked(cls, field):
    """A constant ``size`` from a known offset must stay inside the ``ptx.alloc`` array of
    ``dstMem`` / ``srcMem`` (PTX: the range must not overflow the memory), and an mbarrier
    object's 8 bytes inside its array; every other address is at the start of a 1024-byte
    array."""
    cases = (
        [((off, 16), rng and (off, rng)) for off, rng in MBAR_CASES]
        if field == "mbar"
        else [(c, rng and (c[0], rng)) for c, rng in EXTENT_CASES]
    )
    for (off, size), expected in cases:
        block = kernel_block()
        addrs = {
            f: address(block, s, 128) if s == StateSpace.GLOBAL or f != field else None
            for f, s in address_fields(cls).items()
        }
        a = shared_address(block, 128, (off,))
        addrs[field] = a if address_fields(cls)[field] == StateSpace.SHARED_CTA else add(block, MovOp(a, CLUSTER))
        op = ADDRESS_BUILDERS[cls](addrs, constant_i32(block, size))
        block.add_ops([op, func.ReturnOp()])
        what = "'mbar' (an 8-byte mbarrier object)" if field == "mbar" else f"'{field}' + 'size'"
        root, _ = trace_address(a)
        assert isinstance(root, AllocOp)
        sym = root.symbol
        message = expected and f"{what} must lie inside @{sym} (1024 bytes), got bytes {expected[1]}"
        assert verify_message(op) == message, (off, size, op.ptx_mnemonic())


def test_unknown_extents_are_accepted():
    """A size that is not a constant, an offset that is not, or an address that is no
    array's: nothing to check."""
    block = kernel_block(i32, i32, CTA)
    n, off, arg = block.args
    g = address(block, StateSpace.GLOBAL, 128)
    big = constant_i32(block, 1 << 20)
    ops = [
        CpAsyncBulkGlobalSharedCtaOp(g, src, size)
        for src, size in ((shared_address(block, 128), n), (shared_address(block, 128, (off,)), big), (arg, big))
    ]
    block.add_ops([*ops, func.ReturnOp()])
    for op in ops:
        assert verify_message(op) is None


def test_alloc_names_are_unique_per_kernel():
    block = kernel_block()
    first = AllocOp("tile", AllocSpace.SHARED, 64)
    other = AllocOp("other", AllocSpace.LOCAL, 16)
    second = AllocOp("tile", AllocSpace.LOCAL, 16)
    block.add_ops([first, other, second, func.ReturnOp()])
    assert verify_message(first) is None and verify_message(other) is None
    assert verify_message(second) == "'sym_name' @tile is already declared in this kernel"
    # the same name in another kernel is another array
    elsewhere = kernel_block()
    again = AllocOp("tile", AllocSpace.SHARED, 64)
    elsewhere.add_ops([again, func.ReturnOp()])
    assert verify_message(again) is None


# endregion

# region Requirements


@pytest.mark.parametrize(
    "types,build,expected",
    [
        ((CTA, GLOBAL, i32, CTA), CpAsyncBulkSharedCtaGlobalOp, Requirement(sm=90, ptx=(8, 6))),
        (
            (CLUSTER, GLOBAL, i32, CLUSTER),
            CpAsyncBulkSharedClusterGlobalOp,
            Requirement(sm=90, ptx=(8, 0)),
        ),
        (
            (CLUSTER, CTA, i32, CLUSTER),
            CpAsyncBulkSharedClusterSharedCtaOp,
            Requirement(sm=90, ptx=(8, 0)),
        ),
        ((GLOBAL, CTA, i32), CpAsyncBulkGlobalSharedCtaOp, Requirement(sm=90, ptx=(8, 0))),
        (
            (GLOBAL, CTA, i32, i16),
            lambda d, s, n, k: CpAsyncBulkGlobalSharedCtaOp(d, s, n, cp_mask=True, byte_mask=k),
            Requirement(sm=100, ptx=(8, 6)),
        ),
        ((GLOBAL, i32), CpAsyncBulkPrefetchL2GlobalOp, Requirement(sm=90, ptx=(8, 0))),
        (
            (GLOBAL, CTA, i32),
            lambda d, s, n: CpReduceAsyncBulkGlobalSharedCtaOp(
                BulkRedOp.ADD, BulkRedType.F64, d, s, n
            ),
            Requirement(sm=90, ptx=(8, 0)),
        ),
        (
            (CLUSTER, CTA, i32, CLUSTER),
            lambda d, s, n, m: CpReduceAsyncBulkSharedClusterSharedCtaOp(
                BulkRedOp.INC, BulkRedType.U32, d, s, n, m
            ),
            Requirement(sm=90, ptx=(8, 0)),
        ),
    ],
)
def test_requirement(types, build, expected):
    assert build(*values(*types)).requirement() == expected


# endregion

# region Differential cases


def test_differential_cases_build_and_cover_every_combination():
    cases = list(differential_cases())
    names = [c.name for c in cases]
    assert len(set(names)) == len(names)
    seen: set[str] = set()
    for c in cases:
        fn = func.FuncOp("k", (list(c.operand_types), []))
        op = c.build(fn.body.block.args)
        fn.body.block.add_op(op)
        try:
            op.verify()
        except VerifyException:
            pass
        assert op.ptx_line(Namer()).startswith(op.ptx_mnemonic())
        seen.add(op.ptx_mnemonic())
    # Copies: 2^(optional qualifiers + optional operands) per form; reduce: 8 x 10 x noftz
    # (x cache hint for the global form), plus the hint and its operand each alone.
    assert len(cases) == 4 + 16 + 1 + 16 + 4 + 8 * 10 * 2 + 8 * 10 * 2 * 2 + 2
    for op, t, noftz, hint in product(
        BulkRedOp, BulkRedType, ("", ".noftz"), ("", ".L2::cache_hint")
    ):
        assert f"cp.reduce.async.bulk.global.shared::cta.bulk_group{hint}.{op}{noftz}.{t}" in seen
    for mc, hint in product(("", ".multicast::cluster"), ("", ".L2::cache_hint")):
        assert (
            f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{mc}{hint}" in seen
        )


def test_differential_cases_include_a_qualifier_without_its_operand():
    names = {c.name for c in differential_cases()}
    assert "cp.async.bulk.global.shared::cta.bulk_group.cp_mask [dstMem], [srcMem], size;" in names
    assert (
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dstMem], [srcMem], size, [mbar], ctaMask;"
        in names
    )


# endregion
