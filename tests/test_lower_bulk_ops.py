"""``lower-bulk-ops`` (bulkred_dialect/passes/lower_bulk_ops.py; docs/lowering.md, "Bulk
operations"): tile-level bulk ops built with the Python builder, lowered, printed and
assembled by ptxas (nvJitLink, no GPU); the sequence of ptx ops each direction becomes;
every cp.reduce form against the spec's table; locations; the cluster directions by
rank and the rejected multicast; ``mbarrier.inval`` against ptxas; and every kernel of
tests/gpu/test_tile_bulk_gpu.py compiled for sm_90a without a GPU."""

from __future__ import annotations

import re
from itertools import product

import pytest
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Block

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.assemble import assemble, ptxas_accepts
from bulkred_dialect.backend_ptx.printer import assemble_module, print_ptx
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace, f32, i32, i64
from bulkred_dialect.ops.ptx.bulk import CpAsyncBulkGlobalSharedCtaOp, CpAsyncBulkSharedClusterGlobalOp
from bulkred_dialect.ops.ptx.sync import MbarrierInvalOp
from bulkred_dialect.ops.target import format_ptx_version
from bulkred_dialect.ops.tile import BulkCopyOp, MemoryScope, buffer_type
from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass
from bulkred_dialect.passes.lower_bulk_ops import LowerBulkOpsPass

from assemble_batched import assemble_each
from gpu import test_tile_bulk_gpu as G

TARGETS = ("sm_90a", "sm_100a")


def _lower(module: ModuleOp) -> ModuleOp:
    LowerBulkOpsPass().apply(T.context(), module)
    module.verify()
    return module


def _to_ptx(module: ModuleOp, target: str) -> str:
    BulkredToPtxPass(target=target).apply(T.context(), module)
    return print_ptx(module, target)


def _names(module: ModuleOp) -> list[str]:
    """The ops of the kernel body in order, nested regions inline, without the casts
    and constants (operands, not steps)."""
    skip = (UnrealizedConversionCastOp, arith.ConstantOp, scf.YieldOp)
    k = next(op for op in module.walk() if op.name == "func.func")
    return [op.name for op in k.walk() if op is not k and not isinstance(op, skip)]


def _g2s_s2g(block=(128,)) -> ModuleOp:
    with T.kernel("g2s_s2g", grid=[1], block=list(block)) as k:
        A = k.param("A", [1024], "float32")
        B = k.param("B", [1024], "float32")
        tile = T.alloc_shared([1024], "float32", name="tile")
        mbar = T.alloc_mbarrier(name="mbar")
        T.bulk_copy(A, tile, mbar=mbar)
        T.bulk_copy(tile, B)
    return k.module()


# region The sequences

ELECT = ["ptx.mov.sreg", "arith.cmpi"]
G2S = [
    *ELECT,
    "scf.if", "ptx.mbarrier.init", "ptx.fence.mbarrier_init.release.cluster",
    "ptx.fence.proxy.async", "ptx.bar.sync",
    "scf.if", "ptx.mbarrier.arrive.expect_tx", "ptx.cp.async.bulk.shared_cluster.global",
    "scf.while", "ptx.mbarrier.try_wait.parity", "arith.xori", "scf.condition",
    "ptx.bar.sync",
    "scf.if", "ptx.mbarrier.inval",
]  # fmt: skip
TO_GLOBAL = [
    *ELECT,
    "ptx.fence.proxy.async", "ptx.bar.sync",
    "scf.if", "{issue}", "ptx.cp.async.bulk.commit_group", "ptx.cp.async.bulk.wait_group",
    "ptx.bar.sync",
]  # fmt: skip


def test_sequences():
    m = _lower(_g2s_s2g())
    s2g = [n.replace("{issue}", "ptx.cp.async.bulk.global.shared_cta") for n in TO_GLOBAL]
    assert _names(m) == ["memref.alloca", "memref.alloca", *G2S, *s2g, "func.return"]


def test_operands():
    """The copy into shared uses the tile and the mbarrier as shared::cluster addresses
    of the own CTA, the expect_tx and the wait the shared::cta mbarrier; the sizes are
    the buffers' bytes; the wait is for parity 0; the group wait is for 0 groups."""
    m = _lower(_g2s_s2g())
    ops = list(m.walk())
    cp = next(op for op in ops if isinstance(op, CpAsyncBulkSharedClusterGlobalOp))
    casts = {op.results[0]: (op.inputs[0].name_hint, op.outputs[0].type) for op in ops if isinstance(op, UnrealizedConversionCastOp)}
    cluster = PtrType(StateSpace.SHARED_CLUSTER)
    assert casts[cp.dstMem] == ("tile", cluster)
    assert casts[cp.srcMem] == ("A", PtrType(StateSpace.GLOBAL))
    assert casts[cp.mbar] == ("mbar", cluster)
    assert cp.size.owner.value.value.data == 4096
    for name in ("ptx.mbarrier.init", "ptx.mbarrier.arrive.expect_tx", "ptx.mbarrier.try_wait.parity", "ptx.mbarrier.inval"):
        op = next(o for o in ops if o.name == name)
        assert casts[op.operands[0]] == ("mbar", PtrType(StateSpace.SHARED_CTA)), name
    init = next(o for o in ops if o.name == "ptx.mbarrier.init")
    assert init.count.owner.value.value.data == 1
    wait = next(o for o in ops if o.name == "ptx.mbarrier.try_wait.parity")
    assert wait.parity.owner.value.value.data == 0
    s2g = next(op for op in ops if isinstance(op, CpAsyncBulkGlobalSharedCtaOp))
    assert casts[s2g.dstMem] == ("B", PtrType(StateSpace.GLOBAL))
    assert casts[s2g.srcMem] == ("tile", PtrType(StateSpace.SHARED_CTA))
    assert next(o for o in ops if o.name == "ptx.cp.async.bulk.wait_group").n.value.data == 0


@pytest.mark.parametrize(
    "block,regs",
    [((128,), ["tid.x"]), ((1,), ["tid.x"]), ((32, 4), ["tid.x", "tid.y"]), ((1, 1, 8), ["tid.z"]), ((4, 2, 2), ["tid.x", "tid.y", "tid.z"])],
    ids=str,
)
def test_elected_thread_reads_the_block_dims_above_1(block, regs):
    m = _lower(_g2s_s2g(block))
    read = [str(op.reg.data) for op in m.walk() if op.name == "ptx.mov.sreg"]
    assert read == regs * 2  # one election per bulk op
    ors = [op for op in m.walk() if op.name == "ptx.or"]
    assert len(ors) == 2 * (len(regs) - 1)


def test_without_launch_every_dimension_is_read():
    m = _g2s_s2g()
    k = next(op for op in m.walk() if op.name == "func.func")
    del k.attributes["bulkred.launch"]
    _lower(m)
    regs = [str(op.reg.data) for op in m.walk() if op.name == "ptx.mov.sreg"]
    assert regs == ["tid.x", "tid.y", "tid.z"] * 2


# endregion

# region Every reduce form

# kind x element type -> the cp.reduce line's ".redOp[.noftz].type", written out from the
# spec's table (PTX ISA 9.7.9.25.4.2) and docs/lowering.md; None: the tile verifier rejects it.
REDUCE_EXPECTED = {
    ("sum", "int32"): "add.s32", ("max", "int32"): "max.s32", ("min", "int32"): "min.s32",
    ("and", "int32"): "and.b32", ("or", "int32"): "or.b32", ("xor", "int32"): "xor.b32",
    ("sum", "int64"): "add.u64", ("max", "int64"): "max.s64", ("min", "int64"): "min.s64",
    ("and", "int64"): "and.b64", ("or", "int64"): "or.b64", ("xor", "int64"): "xor.b64",
    ("sum", "float16"): "add.noftz.f16", ("max", "float16"): "max.f16", ("min", "float16"): "min.f16",
    ("sum", "bfloat16"): "add.noftz.bf16", ("max", "bfloat16"): "max.bf16", ("min", "bfloat16"): "min.bf16",
    ("sum", "float32"): "add.f32", ("max", "float32"): None, ("min", "float32"): None,
    ("sum", "float64"): "add.f64", ("max", "float64"): None, ("min", "float64"): None,
    **{(kind, "int16"): None for kind in ("sum", "max", "min", "and", "or", "xor")},
}  # fmt: skip


def _reduce_module(kind: str, dtype: str, name: str = "reduce") -> ModuleOp:
    with T.kernel(name, grid=[4], block=[64]) as k:
        out = k.param("out", [64], dtype)
        tile = T.alloc_shared([64], dtype, name="tile")
        T.bulk_reduce(kind, tile, out)
    return k.module()


REDUCE_FORMS = [k for k, v in REDUCE_EXPECTED.items() if v is not None]


@pytest.fixture(scope="module")
def reduce_form_ptx() -> dict[tuple[str, str, str], tuple[str, str | None]]:
    """(kind, dtype, target) -> the PTX of each form's kernel (named after the form) and
    ptxas's error on it (None: it assembles); the kernels of one target and header
    assembled in one nvJitLink run (tests/assemble_batched.py), a failing one alone."""
    ptx = {
        (kind, dtype, t): _to_ptx(_reduce_module(kind, dtype, f"reduce_{kind}_{dtype}"), t)
        for kind, dtype in REDUCE_FORMS
        for t in TARGETS
    }
    errors: dict[tuple[str, str, str], str | None] = {}
    for t in TARGETS:
        keys = [k for k in ptx if k[2] == t]
        verdicts = assemble_each([("/".join(k), ptx[k]) for k in keys], t)
        errors.update((k, verdicts["/".join(k)]) for k in keys)
    return {k: (ptx[k], errors[k]) for k in ptx}


@pytest.mark.parametrize("kind,dtype", REDUCE_FORMS, ids=str)
def test_reduce_form(kind, dtype, reduce_form_ptx):
    m = _lower(_reduce_module(kind, dtype))
    s2g = [n.replace("{issue}", "ptx.cp.reduce.async.bulk.global.shared_cta") for n in TO_GLOBAL]
    assert _names(m) == ["memref.alloca", *s2g, "func.return"]
    for target in TARGETS:
        ptx, error = reduce_form_ptx[kind, dtype, target]
        line = f"cp.reduce.async.bulk.global.shared::cta.bulk_group.{REDUCE_EXPECTED[kind, dtype]} "
        assert line in ptx, ptx
        assert error is None, f"{target}: {error}"


@pytest.mark.parametrize("kind,dtype", [k for k, v in REDUCE_EXPECTED.items() if v is None], ids=str)
def test_reduce_forms_without_ptx_are_rejected_by_the_verifier(kind, dtype):
    with pytest.raises(LocatedError, match="has no cp.reduce.async.bulk form into global"):
        _reduce_module(kind, dtype)


def test_every_tile_form_is_in_the_table():
    """REDUCE_EXPECTED covers every kind x dtype the builder offers for bulk_reduce."""
    kinds = ("sum", "max", "min", "and", "or", "xor")
    for kind, dtype in product(kinds, T.DTYPES):
        if kind in ("and", "or", "xor") and not dtype.startswith("int"):
            continue
        assert (kind, dtype) in REDUCE_EXPECTED


# endregion

# region Printing and assembling


@pytest.mark.parametrize("target", TARGETS)
def test_pipeline_prints_and_assembles(target):
    ptx = _to_ptx(_g2s_s2g(), target)
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.inval.shared::cta.b64" in ptx
    assert "cp.async.bulk.global.shared::cta.bulk_group" in ptx
    assert "cp.async.bulk.wait_group 0;" in ptx
    if target == "sm_90a":
        assert ".version 8.0\n" in ptx  # nothing in the sequences needs more
    assert len(assemble(ptx, target)) > 0


GPU_KERNELS = {
    "copy_1024": ("copy", G.copy_kernel((1024,), (G.THREADS,))),
    "copy_4x68_block_32x2x2": ("copy", G.copy_kernel((4, 68), (32, 2, 2))),
    "copy_4_block_1": ("copy", G.copy_kernel((4,), (1,))),
    "double_1020": ("double", G.double_kernel(1020)),
    "double_loop": ("double_loop", G.double_loop_kernel(1024, 3)),
    "copy_then_reduce": ("copy_then_reduce", G.copy_then_reduce_kernel(1024)),
    **{f"reduce_{kind}_{t}": ("reduce", G.reduce_kernel(kind, t, 1024)) for kind, t in G.REDUCE_FORMS},
}


@pytest.mark.parametrize("key", list(GPU_KERNELS))
def test_gpu_kernels_compile(key):
    """Every kernel of tests/gpu/test_tile_bulk_gpu.py compiles and assembles for sm_90a."""
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module, parse

    name, text = GPU_KERNELS[key]
    mod = compile_tile_module(parse(text, f"{name}.mlir"), "sm_90a")
    assert name in mod.signatures and len(mod.cubin) > 0


# endregion

# region Locations and errors


def test_every_created_op_has_the_tile_ops_location():
    m = _g2s_s2g()
    bulk = [op for op in m.walk() if isinstance(op, BulkCopyOp)]
    locs = [op.location for op in bulk]
    assert len(set(map(str, locs))) == 2  # two builder lines
    _lower(m)
    k = next(op for op in m.walk() if op.name == "func.func")
    created = [op for op in k.walk() if op is not k and op.name not in ("memref.alloca", "func.return")]
    # the first op's sequence ends with the scf.if holding mbarrier.inval (and its yield)
    split = [op.name for op in created].index("ptx.mbarrier.inval") + 2
    assert {str(op.location) for op in created[:split]} == {str(locs[0])}
    assert {str(op.location) for op in created[split:]} == {str(locs[1])}
    assert len(created) - split > len(TO_GLOBAL)


def _cluster_module(kind: str) -> tuple[ModuleOp, int]:
    import inspect

    with T.kernel("peer", grid=[2], block=[64], cluster=[2]) as k:
        g = k.param("g", [64], "int32")
        s = T.alloc_shared([64], "int32")
        c = T.alloc_buffer([64], "int32", scope="cluster_shared")
        mbar = T.alloc_mbarrier()
        T.bulk_copy(s, g)  # could be lowered, but comes before the failing op
        line = inspect.currentframe().f_lineno + 2
        if kind == "multicast":
            T.bulk_copy(g, c, mbar=mbar, multicast=0b11)
        elif kind == "global":
            T.bulk_copy(g, c, mbar=mbar, rank=0)
        elif kind == "shared":
            T.bulk_copy(s, c, mbar=mbar, rank=0)
        else:
            T.bulk_reduce("sum", s, c, mbar=mbar, rank=0)
    offset = {"multicast": 0, "global": 2, "shared": 4, "reduce": 6}[kind]
    return k.module(), line + offset


def test_multicast_lowers_issued_by_rank_0():
    m, line = _cluster_module("multicast")
    LowerBulkOpsPass().apply(T.context(), m)
    tail = [op for op in m.walk() if op.name.startswith("ptx.") and f":{line}:" in str(op.location)]
    assert [op.name for op in tail] == [
        "ptx.mov.sreg", "ptx.mov.sreg", "ptx.shr", "ptx.and",
        "ptx.mbarrier.init", "ptx.fence.mbarrier_init.release.cluster", "ptx.mbarrier.arrive.expect_tx",
        "ptx.fence.proxy.async", "ptx.barrier.cluster.arrive", "ptx.barrier.cluster.wait",
        "ptx.cp.async.bulk.shared_cluster.global",
        "ptx.mbarrier.try_wait.parity",
        "ptx.barrier.cluster.arrive", "ptx.barrier.cluster.wait",
        "ptx.mbarrier.inval",
    ]  # fmt: skip
    cp = next(op for op in tail if op.name == "ptx.cp.async.bulk.shared_cluster.global")
    assert cp.multicast is not None and cp.ctaMask is not None
    assert assemble_module(lower_tile_module(_cluster_module("multicast")[0], "sm_90a"), "sm_90a")


def test_cluster_direction_without_a_cluster_launch_is_rejected_at_the_op():
    with T.kernel("no_cluster", grid=[2], block=[32], cluster=[2]) as k:
        s = T.alloc_shared([64], "int32")
        c = T.alloc_buffer([64], "int32", scope="cluster_shared")
        T.bulk_reduce("sum", s, c, mbar=T.alloc_mbarrier(), rank=0)
    m = k.module()
    # without a launch the verifier cannot know the cluster; the lowering needs it
    del m.body.block.first_op.attributes["bulkred.launch"]
    before = str(m)
    with pytest.raises(LocatedError, match=r"test_lower_bulk_ops.py:\d+:9: error: 'bulkred.bulk_reduce' a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a cluster of 2 or more CTAs$"):
        LowerBulkOpsPass().apply(T.context(), m)
    assert str(m) == before


# the ptx ops of a bulk op into a peer CTA, in order (docs/lowering.md, "Bulk operations
# into a peer CTA"); the issuing instruction of each direction
PEER = [
    "ptx.mov.sreg", "ptx.mov.sreg",  # tid.x (elected), cluster_ctarank
    "ptx.mbarrier.init", "ptx.fence.mbarrier_init.release.cluster", "ptx.mbarrier.arrive.expect_tx",
    "ptx.fence.proxy.async", "ptx.barrier.cluster.arrive", "ptx.barrier.cluster.wait",
    "ptx.mapa", "ptx.mapa", "ISSUE",
    "ptx.mbarrier.try_wait.parity",
    "ptx.barrier.cluster.arrive", "ptx.barrier.cluster.wait",
    "ptx.mbarrier.inval",
]  # fmt: skip
ISSUE = {
    "global": "ptx.cp.async.bulk.shared_cluster.global",
    "shared": "ptx.cp.async.bulk.shared_cluster.shared_cta",
    "reduce": "ptx.cp.reduce.async.bulk.shared_cluster.shared_cta",
}


@pytest.mark.parametrize("kind", ["global", "shared", "reduce"])
def test_cluster_directions_lower_by_rank(kind):
    m, line = _cluster_module(kind)
    LowerBulkOpsPass().apply(T.context(), m)
    ops = [op for op in m.walk() if op.name.startswith("ptx.")]
    tail = [op for op in ops if f":{line}:" in str(op.location)]
    want = [ISSUE[kind] if n == "ISSUE" else n for n in PEER]
    assert [op.name for op in tail] == want
    issue = next(op for op in tail if op.name == ISSUE[kind])
    mapas = [op for op in tail if op.name == "ptx.mapa"]
    # the destination and the mbarrier are the receiver's (mapa), the source the own CTA's
    assert issue.operands[0] is mapas[0].results[0] and issue.operands[3] is mapas[1].results[0]
    compiled = lower_tile_module(_cluster_module(kind)[0], "sm_90a")
    assert assemble_module(compiled, "sm_90a")


@pytest.mark.parametrize(
    "n,dst,message",
    [
        (2**30, "global", "bulk size must be <= 232448 bytes (the largest shared memory of a CTA, which holds 'src'), got 4294967296"),
        (2**16, "shared", "bulk size must be <= 232448 bytes (the largest shared memory of a CTA, which holds 'dst'; the mbarrier tx-count allows 1048575), got 262144"),
    ],
)
def test_oversized_bulk_op_built_without_verifying_is_a_located_error(n, dst, message):
    """IR that skipped the verifier still gets the tile verifier's message on the op,
    before any rewrite (the i32 size constant of 2^32 bytes would not even build)."""
    shared = buffer_type([n], f32, MemoryScope.SHARED)
    glob = buffer_type([n], f32, MemoryScope.GLOBAL)
    mbar = buffer_type([1], i64, MemoryScope.SHARED)
    k = func.FuncOp("k", ([glob, shared, mbar], []))
    g, sh, mb = k.body.block.args
    op = BulkCopyOp.create(
        operands=[sh, g] if dst == "global" else [g, sh, mb],
        properties={"operandSegmentSizes": DenseArrayBase.from_list(i32, [1, 1, 0 if dst == "global" else 1, 0])},
    )
    op.location = FileLineColLoc(StringAttr("big.mlir"), IntAttr(3), IntAttr(5))
    k.body.block.add_ops([op, func.ReturnOp()])
    m = ModuleOp([k])
    with pytest.raises(LocatedError) as e:
        LowerBulkOpsPass().apply(T.context(), m)
    assert str(e.value) == f"big.mlir:3:5: error: 'bulkred.bulk_copy' {message}"
    assert op.parent is not None, "the pass rewrote ops before failing"


@pytest.mark.parametrize("value", [IntegerAttr(5, i64), StringAttr("block = [128]")], ids=str)
def test_launch_attribute_of_another_kind_is_a_located_error(value):
    m = _g2s_s2g()
    k = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    k.attributes["bulkred.launch"] = value
    with pytest.raises(LocatedError, match=rf"error: 'func.func' 'bulkred.launch' must be a #bulkred.launch<grid = \[..\], block = \[..\], cluster = \[..\]> attribute, got {re.escape(str(value))}$"):
        LowerBulkOpsPass().apply(T.context(), m)


# endregion

# region mbarrier.inval against ptxas


def _inval_kernel(target: str, version: tuple[int, int]) -> str:
    op = MbarrierInvalOp(Block(arg_types=[PtrType(StateSpace.SHARED_CTA)]).args[0])
    line = op.ptx_line(lambda v: "%r1")
    return (
        f".version {format_ptx_version(version)}\n.target {target}\n.address_size 64\n\n"
        f".visible .entry k()\n{{\n  .reg .b32 %r<2>;\n  {line}\n  ret;\n}}\n"
    )


def test_mbarrier_inval_line_and_requirement():
    op = MbarrierInvalOp(Block(arg_types=[PtrType(StateSpace.SHARED_CTA)]).args[0])
    op.verify()
    assert op.ptx_line(lambda v: "%r1") == "mbarrier.inval.shared::cta.b64 [%r1];"
    req = op.requirement()
    assert (req.sm, req.arch_specific, req.ptx) == (80, False, (7, 8))
    assert ptxas_accepts(_inval_kernel("sm_80", (7, 8)), "sm_80")[0]
    assert not ptxas_accepts(_inval_kernel("sm_80", (7, 7)), "sm_80")[0], "the requirement's PTX ISA is too high"
    assert not ptxas_accepts(_inval_kernel("sm_75", (7, 8)), "sm_75")[0], "the requirement's SM is too high"


def test_mbarrier_inval_takes_a_shared_cta_address():
    for space in (StateSpace.SHARED_CLUSTER, StateSpace.GLOBAL):
        op = MbarrierInvalOp(Block(arg_types=[PtrType(space)]).args[0])
        with pytest.raises(Exception, match=r"operand 'addr' must be !ptx.ptr<shared::cta>"):
            op.verify()
    op = MbarrierInvalOp(Block(arg_types=[i32]).args[0])
    with pytest.raises(Exception, match="operand 'addr'"):
        op.verify()


# endregion

