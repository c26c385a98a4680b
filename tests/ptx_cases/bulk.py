"""The differential cases of ``bulkred_dialect.ops.ptx.bulk``: cp.async.bulk (4 directions and
the prefetch), cp.reduce.async.bulk (2 forms)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import product

from xdsl.ir import Attribute, Block, SSAValue

from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, i16, i32, i64
from bulkred_dialect.ops.ptx.bulk import (
    BulkInstruction,
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
from ptx_cases import DiffCase


_SCALAR_TYPES: dict[str, Attribute] = {
    "size": i32,
    "ctaMask": i16,
    "cachePolicy": i64,
    "byteMask": i16,
}


def _operand_type(op: type[BulkInstruction], operand: str) -> Attribute:
    """``dstMem`` and ``mbar`` are in the destination's state space, ``srcMem`` in the source's."""
    if operand in ("dstMem", "mbar"):
        return PtrType(op.DIRECTION[0])
    if operand == "srcMem":
        return PtrType(op.DIRECTION[-1])
    return _SCALAR_TYPES[operand]


def _case(
    op: type[BulkInstruction],
    operands: Sequence[str],
    make: Callable[[dict[str, SSAValue]], PtxInstruction],
) -> DiffCase:
    """A case whose operands are ``operands`` (PTX order), named by its PTX line with
    operand names as registers, e.g. ``cp.async.bulk.prefetch.L2.global [srcMem], size;``."""
    types = tuple(_operand_type(op, o) for o in operands)

    def build(values: Sequence[SSAValue]) -> PtxInstruction:
        return make(dict(zip(operands, values, strict=True)))

    block = Block(arg_types=types)
    sample = build(block.args)
    names = {v: o for v, o in zip(block.args, operands)}
    line = sample.ptx_line(lambda v: names[v])
    sample.drop_all_references()
    return DiffCase(line, types, build)


def _copy_cases() -> Iterator[DiffCase]:
    """Each cp.async.bulk direction and the prefetch, every optional qualifier and every
    optional operand on/off independently (a qualifier without its operand included)."""
    on_off = (False, True)
    hint = {True: CacheHint.L2, False: None}

    for q_hint, o_policy in product(on_off, on_off):
        ops = ["dstMem", "srcMem", "size", "mbar"] + ["cachePolicy"] * o_policy
        yield _case(
            CpAsyncBulkSharedCtaGlobalOp,
            ops,
            lambda v, q_hint=q_hint: CpAsyncBulkSharedCtaGlobalOp(
                v["dstMem"],
                v["srcMem"],
                v["size"],
                v["mbar"],
                cache_hint=hint[q_hint],
                cache_policy=v.get("cachePolicy"),
            ),
        )
    for q_mc, o_mask, q_hint, o_policy in product(on_off, on_off, on_off, on_off):
        ops = (
            ["dstMem", "srcMem", "size", "mbar"] + ["ctaMask"] * o_mask + ["cachePolicy"] * o_policy
        )
        yield _case(
            CpAsyncBulkSharedClusterGlobalOp,
            ops,
            lambda v, q_mc=q_mc, q_hint=q_hint: CpAsyncBulkSharedClusterGlobalOp(
                v["dstMem"],
                v["srcMem"],
                v["size"],
                v["mbar"],
                multicast=Multicast.CLUSTER if q_mc else None,
                cta_mask=v.get("ctaMask"),
                cache_hint=hint[q_hint],
                cache_policy=v.get("cachePolicy"),
            ),
        )
    yield _case(
        CpAsyncBulkSharedClusterSharedCtaOp,
        ["dstMem", "srcMem", "size", "mbar"],
        lambda v: CpAsyncBulkSharedClusterSharedCtaOp(
            v["dstMem"], v["srcMem"], v["size"], v["mbar"]
        ),
    )
    for q_hint, o_policy, q_mask, o_mask in product(on_off, on_off, on_off, on_off):
        ops = ["dstMem", "srcMem", "size"] + ["cachePolicy"] * o_policy + ["byteMask"] * o_mask
        yield _case(
            CpAsyncBulkGlobalSharedCtaOp,
            ops,
            lambda v, q_hint=q_hint, q_mask=q_mask: CpAsyncBulkGlobalSharedCtaOp(
                v["dstMem"],
                v["srcMem"],
                v["size"],
                cache_hint=hint[q_hint],
                cache_policy=v.get("cachePolicy"),
                cp_mask=q_mask,
                byte_mask=v.get("byteMask"),
            ),
        )
    for q_hint, o_policy in product(on_off, on_off):
        ops = ["srcMem", "size"] + ["cachePolicy"] * o_policy
        yield _case(
            CpAsyncBulkPrefetchL2GlobalOp,
            ops,
            lambda v, q_hint=q_hint: CpAsyncBulkPrefetchL2GlobalOp(
                v["srcMem"], v["size"], cache_hint=hint[q_hint], cache_policy=v.get("cachePolicy")
            ),
        )


def _reduce_cases() -> Iterator[DiffCase]:
    """All .redOp x all .type (union of both syntax blocks) x .noftz on/off for both forms,
    x .L2::cache_hint (with its operand) on/off for the global form; plus the qualifier
    and the operand each without the other once."""
    on_off = (False, True)
    cluster = CpReduceAsyncBulkSharedClusterSharedCtaOp
    glob = CpReduceAsyncBulkGlobalSharedCtaOp
    for red_op, type, noftz in product(BulkRedOp, BulkRedType, on_off):
        yield _case(
            cluster,
            ["dstMem", "srcMem", "size", "mbar"],
            lambda v, r=red_op, t=type, n=noftz: cluster(
                r, t, v["dstMem"], v["srcMem"], v["size"], v["mbar"], noftz=n
            ),
        )
    for red_op, type, noftz, hint in product(BulkRedOp, BulkRedType, on_off, on_off):
        yield _case(
            glob,
            ["dstMem", "srcMem", "size"] + ["cachePolicy"] * hint,
            lambda v, r=red_op, t=type, n=noftz, h=hint: glob(
                r,
                t,
                v["dstMem"],
                v["srcMem"],
                v["size"],
                noftz=n,
                cache_hint=CacheHint.L2 if h else None,
                cache_policy=v.get("cachePolicy"),
            ),
        )
    for hint, policy in ((True, False), (False, True)):
        yield _case(
            glob,
            ["dstMem", "srcMem", "size"] + ["cachePolicy"] * policy,
            lambda v, h=hint: glob(
                BulkRedOp.ADD,
                BulkRedType.F32,
                v["dstMem"],
                v["srcMem"],
                v["size"],
                cache_hint=CacheHint.L2 if h else None,
                cache_policy=v.get("cachePolicy"),
            ),
        )


def differential_cases() -> Iterator[DiffCase]:
    """Every qualifier combination of the syntax blocks of 9.7.9.25.4, valid or not."""
    yield from _copy_cases()
    yield from _reduce_cases()
