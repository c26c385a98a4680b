"""The GPU test kernels, built from our ptx-level IR (level 3: ptx ops inside
``func.func`` kernels) with the ops' Python constructors, printed by
``backend_ptx.printer`` and loaded by ``backend_ptx.runtime``.

Each ``*_kernel`` function returns a :class:`TestKernel`: the module, the kernel's
signature (shapes and dtypes of its arguments, launch shape) and a ``compile()``
that prints and assembles it. ``ALL_KERNELS()`` lists one of each kind, so that the
CPU tests can check that every GPU kernel assembles for sm_90a without a GPU.

Conventions of every kernel here: arguments are ``!ptx.ptr<global>`` buffers (and
``i32`` scalars); shared tiles are 128-byte aligned ``ptx.alloc`` arrays; data moves
between global and shared memory 4 bytes per thread and step (so any element type
works); completion is waited for with an mbarrier ``try_wait.parity`` loop or
``cp.async.bulk.wait_group 0``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from bulkred_dialect.backend_ptx import runtime
from bulkred_dialect.ops.ptx.arith import AddOp, AndOp, ArithType, MulLoOp, ShlOp, ShrOp, SubOp
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace, i1, i16, i32, i64
from bulkred_dialect.ops.ptx.bulk import (
    BulkRedOp,
    BulkRedType,
    CpAsyncBulkGlobalSharedCtaOp,
    CpAsyncBulkSharedClusterGlobalOp,
    CpAsyncBulkSharedClusterSharedCtaOp,
    CpAsyncBulkSharedCtaGlobalOp,
    CpReduceAsyncBulkGlobalSharedCtaOp,
    CpReduceAsyncBulkSharedClusterSharedCtaOp,
    Multicast,
)
from bulkred_dialect.ops.ptx.control import (
    BraOp,
    CmpOp,
    CondBraOp,
    CvtOp,
    CvtType,
    RetOp,
    SetpOp,
    SetpType,
)
from bulkred_dialect.ops.ptx.memory import AllocOp, AllocSpace, LdOp, LdStType, MovAddrOp, MovImmOp, MovOp, PtrAddOp, StOp
from bulkred_dialect.ops.ptx.red_async import RedAsyncOp, RedAsyncRelaxedClusterOp, RedAsyncType
from bulkred_dialect.ops.ptx.redux import ReduxOp, ReduxSyncOp, ReduxType
from bulkred_dialect.ops.ptx.sreg import MovSregOp, SpecialRegister
from bulkred_dialect.ops.ptx.sync import (
    BarrierClusterArriveOp,
    BarrierClusterWaitOp,
    BarSyncOp,
    ClusterArriveSem,
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkWaitGroupOp,
    FenceMbarrierInitOp,
    FenceProxyAsyncOp,
    MapaOp,
    MbarrierArriveExpectTxOp,
    MbarrierInitOp,
    MbarrierTryWaitParityOp,
)
from bulkred_dialect.ops.tile import LaunchAttr

from gpu.models import SIZE

GLOBAL = PtrType(StateSpace.GLOBAL)
SHARED = PtrType(StateSpace.SHARED_CTA)
CLUSTER = PtrType(StateSpace.SHARED_CLUSTER)

ARCH = "sm_90a"


# region A small builder over blocks


class KernelBuilder:
    """Appends ptx ops to the current block of one ``func.func`` kernel; structured
    helpers (``if_``, ``for_each``, ``wait``) create the blocks and branches."""

    def __init__(self, name: str, params: Sequence[tuple[str, object]], grid: int, block: int, cluster: int = 1):
        entry = Block(arg_types=[t for _, t in params])
        for arg, (pname, _) in zip(entry.args, params):
            arg.name_hint = pname
        self.region = Region(entry)
        self.func = func.FuncOp(name, FunctionType.from_lists([t for _, t in params], []), self.region)
        self.func.attributes["bulkred.launch"] = LaunchAttr([grid], [block], [cluster])
        self.block = entry
        self.args = {pname: arg for arg, (pname, _) in zip(entry.args, params)}
        self.grid, self.threads, self.cluster = grid, block, cluster
        # defined in the entry block, which dominates every use
        self.tid = self.sreg(SpecialRegister.TID_X)

    # plumbing

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def v(self, op: Operation) -> SSAValue:
        self.add(op)
        return op.results[0]

    def new_block(self, *arg_types) -> Block:
        b = Block(arg_types=list(arg_types))
        self.region.add_block(b)
        return b

    # values

    def imm(self, value: int, t=i32) -> SSAValue:
        return self.v(MovImmOp(value, t))

    def sreg(self, r: SpecialRegister) -> SSAValue:
        return self.v(MovSregOp(r))

    def rank(self) -> SSAValue:
        return self.sreg(SpecialRegister.CLUSTER_CTARANK)

    def add32(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(AddOp(ArithType.U32, a, b))

    def mul32(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.v(MulLoOp(ArithType.U32, a, b))

    def cmp(self, c: CmpOp, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if isinstance(b, int):
            b = self.imm(b)
        return self.v(SetpOp(c, SetpType.U32, a, b))

    def wide(self, x: SSAValue) -> SSAValue:
        """u32 -> u64."""
        return self.v(CvtOp(CvtType.U64, CvtType.U32, x))

    def gptr(self, base: SSAValue, byte_offset: SSAValue) -> SSAValue:
        """``base + byte_offset`` (an i32 offset) for a global address."""
        return self.v(PtrAddOp(base, self.wide(byte_offset)))

    def sptr(self, base: SSAValue, byte_offset: SSAValue) -> SSAValue:
        return self.v(PtrAddOp(base, byte_offset))

    def alloc_shared(self, sym: str, nbytes: int, align: int = 128) -> SSAValue:
        self.add(AllocOp(sym, AllocSpace.SHARED, nbytes, align))
        return self.v(MovAddrOp(sym, StateSpace.SHARED_CTA))

    def as_cluster(self, p: SSAValue) -> SSAValue:
        """The executing CTA's own shared::cta address as a shared::cluster address."""
        return self.v(MovOp(p, CLUSTER))

    # control flow

    def if_(self, cond: SSAValue, then: Callable[[], None]) -> None:
        """``if (cond) then()``; the code after continues in a join block."""
        then_b, join = self.new_block(), self.new_block()
        self.add(CondBraOp(cond, then_b, join))
        self.block = then_b
        then()
        self.add(BraOp(join))
        self.block = join

    def for_each(self, start: SSAValue, end: int, step: SSAValue, body: Callable[[SSAValue], None]) -> None:
        """``for (i = start; i < end; i += step) body(i)`` (u32)."""
        head, loop, done = self.new_block(i32), self.new_block(), self.new_block()
        self.add(BraOp(head, start))
        self.block = head
        i = head.args[0]
        self.add(CondBraOp(self.cmp(CmpOp.LO, i, end), loop, done))
        self.block = loop
        body(i)
        self.add(BraOp(head, self.add32(i, step)))
        self.block = done

    def wait(self, mbar: SSAValue, parity: int = 0) -> None:
        """Spin on ``mbarrier.try_wait.parity`` until the phase ``parity`` completed."""
        spin, done = self.new_block(), self.new_block()
        p = self.imm(parity)
        self.add(BraOp(spin))
        self.block = spin
        ok = self.v(MbarrierTryWaitParityOp(mbar, p))
        self.add(CondBraOp(ok, done, spin))
        self.block = done

    # common sequences

    def copy_words(self, nwords: int, load: Callable[[SSAValue], SSAValue], store: Callable[[SSAValue, SSAValue], None]) -> None:
        """Every thread of the CTA moves words tid, tid+ntid, ... (4 bytes each)."""
        ntid = self.sreg(SpecialRegister.NTID_X)

        def body(i: SSAValue) -> None:
            off = self.v(ShlOp(ArithType.B32, i, self.imm(2)))
            store(off, load(off))

        self.for_each(self.tid, nwords, ntid, body)

    def global_to_shared(self, src: SSAValue, tile: SSAValue, nbytes: int) -> None:
        self.copy_words(
            nbytes // 4,
            lambda off: self.v(LdOp(LdStType.B32, self.gptr(src, off), i32)),
            lambda off, w: self.add(StOp(LdStType.B32, self.sptr(tile, off), w)),
        )

    def shared_to_global(self, tile: SSAValue, dst: SSAValue, nbytes: int) -> None:
        self.copy_words(
            nbytes // 4,
            lambda off: self.v(LdOp(LdStType.B32, self.sptr(tile, off), i32)),
            lambda off, w: self.add(StOp(LdStType.B32, self.gptr(dst, off), w)),
        )

    def init_mbarrier(self, mbar: SSAValue, count: int = 1, *, cluster: bool) -> None:
        """Thread 0 initialises the mbarrier; the init is made visible (to the async proxy
        and, with ``cluster``, to the cluster) before the barrier that follows."""
        self.if_(self.cmp(CmpOp.EQ, self.tid, 0), lambda: self.add(MbarrierInitOp(mbar, self.imm(count))))
        self.add(FenceMbarrierInitOp())

    def cluster_sync(self) -> None:
        self.add(BarrierClusterArriveOp(ClusterArriveSem.RELEASE))
        self.add(BarrierClusterWaitOp(acquire=True))

    def finish(self) -> func.FuncOp:
        self.add(RetOp())
        check_dominance(self.func)
        return self.func


def check_dominance(f: func.FuncOp) -> None:
    """Raise ValueError when a value is used in a block its definition does not
    dominate (PTX would read an unset register there)."""
    blocks = list(f.body.blocks)
    preds: dict[Block, list[Block]] = {b: [] for b in blocks}
    for b in blocks:
        term = b.last_op
        for succ in term.successors if term is not None else ():
            preds[succ].append(b)
    dom = {b: set(blocks) for b in blocks}
    dom[blocks[0]] = {blocks[0]}
    changed = True
    while changed:
        changed = False
        for b in blocks[1:]:
            ps = [dom[p] for p in preds[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    for b in blocks:
        seen = set(b.args)
        for op in b.ops:
            for v in op.operands:
                owner_block = v.owner if isinstance(v.owner, Block) else v.owner.parent_block()
                if owner_block is b:
                    if v not in seen:
                        raise ValueError(f"{f.sym_name.data}: {op.name} uses a value before its definition")
                elif owner_block not in dom[b]:
                    raise ValueError(f"{f.sym_name.data}: {op.name} uses a value whose definition does not dominate it")
            seen.update(op.results)


# endregion

# region Test kernels


@dataclass
class TestKernel:
    """A kernel module built from IR, with its signature for the runtime."""

    name: str
    module: ModuleOp
    signature: runtime.KernelSignature

    def ptx(self, arch: str = ARCH) -> str:
        from bulkred_dialect.backend_ptx.printer import print_ptx

        return print_ptx(self.module, arch)

    def compile(self, arch: str = ARCH) -> runtime.CompiledModule:
        return runtime.compile_module(self.module, arch, {self.signature.name: self.signature})

    def kernel(self, arch: str = ARCH) -> runtime.Kernel:
        return self.compile(arch).kernel(self.name)

    def run(self, *args, **launch):
        """Compile, launch once with the recorded launch shape, return every array after the run."""
        return self.kernel()(*args, **launch)


def _kernel(kb: KernelBuilder, params: Sequence[tuple[str, str | None, tuple | None]]) -> TestKernel:
    f = kb.finish()
    module = ModuleOp([f])
    launch = runtime.LaunchShape((kb.grid, 1, 1), (kb.threads, 1, 1), (kb.cluster, 1, 1))
    ps = tuple(
        runtime.Param(n, "array" if shape is not None else "scalar", dt, shape) for n, dt, shape in params
    )
    name = f.sym_name.data
    return TestKernel(name, module, runtime.KernelSignature(name, ps, launch))


def np_dtype_name(t: str) -> str:
    """The runtime's dtype spelling for a PTX ``.type`` (b32 -> u32, bf16 kept)."""
    return {"b32": "u32", "b64": "u64"}.get(t, t)


def cp_reduce_global_kernel(op: str, t: str, n: int, ctas: int = 1) -> TestKernel:
    """``cp.reduce.async.bulk.global.shared::cta.bulk_group.<op>[.noftz].<t>``: each of
    ``ctas`` CTAs stages ``src[cta]`` in a shared tile and reduces it into ``dst``
    (``n`` elements). Arguments: dst (n,), src (ctas, n)."""
    nbytes = n * SIZE[t]
    name = f"cp_reduce_global_{op}_{t}"
    kb = KernelBuilder(name, [("dst", GLOBAL), ("src", GLOBAL)], grid=ctas, block=128)
    tile = kb.alloc_shared("tile", nbytes)
    cta = kb.sreg(SpecialRegister.CTAID_X)
    src = kb.gptr(kb.args["src"], kb.mul32(cta, kb.imm(nbytes)))
    kb.global_to_shared(src, tile, nbytes)
    kb.add(FenceProxyAsyncOp(StateSpace.SHARED_CTA))  # the tile's generic writes before the async read
    kb.add(BarSyncOp(0))

    def issue() -> None:
        kb.add(
            CpReduceAsyncBulkGlobalSharedCtaOp(
                BulkRedOp(op), BulkRedType(t), kb.args["dst"], tile, kb.imm(nbytes),
                noftz=(op == "add" and t in ("f16", "bf16")),
            )
        )
        kb.add(CpAsyncBulkCommitGroupOp())
        kb.add(CpAsyncBulkWaitGroupOp(0))

    kb.if_(kb.cmp(CmpOp.EQ, kb.tid, 0), issue)
    dt = np_dtype_name(t)
    return _kernel(kb, [("dst", dt, (n,)), ("src", dt, (ctas, n))])


def cp_reduce_cluster_kernel(op: str, t: str, n: int, cluster: int = 2) -> TestKernel:
    """``cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``:
    in one cluster, CTA 0 holds ``d`` in a shared tile; every other CTA r stages
    ``s[r-1]`` and reduces it into CTA 0's tile, completing on CTA 0's mbarrier (which
    expects (cluster-1) * size bytes). CTA 0 then writes its tile to ``out``.
    Arguments: out (n,), d (n,), s (cluster-1, n)."""
    nbytes = n * SIZE[t]
    name = f"cp_reduce_cluster_{op}_{t}"
    kb = KernelBuilder(name, [("out", GLOBAL), ("d", GLOBAL), ("s", GLOBAL)], grid=cluster, block=64, cluster=cluster)
    tile = kb.alloc_shared("tile", nbytes)
    mbar = kb.alloc_shared("mbar", 8, 8)
    rank = kb.rank()
    is_root = kb.cmp(CmpOp.EQ, rank, 0)
    # CTA 0 loads d, CTA r > 0 loads s[r-1]
    peer_off = kb.mul32(kb.v(SubOp(ArithType.U32, rank, kb.imm(1))), kb.imm(nbytes))
    kb.if_(is_root, lambda: kb.global_to_shared(kb.args["d"], tile, nbytes))
    kb.if_(kb.cmp(CmpOp.NE, rank, 0), lambda: kb.global_to_shared(kb.gptr(kb.args["s"], peer_off), tile, nbytes))
    kb.init_mbarrier(mbar, cluster=True)
    kb.add(FenceProxyAsyncOp(StateSpace.SHARED_CTA))
    kb.cluster_sync()
    is_t0 = kb.cmp(CmpOp.EQ, kb.tid, 0)

    def root_expect() -> None:
        kb.if_(is_t0, lambda: kb.add(MbarrierArriveExpectTxOp(mbar, kb.imm((cluster - 1) * nbytes), sink=True)))

    kb.if_(is_root, root_expect)

    def peer_issue() -> None:
        zero = kb.imm(0)
        kb.add(
            CpReduceAsyncBulkSharedClusterSharedCtaOp(
                BulkRedOp(op), BulkRedType(t), kb.v(MapaOp(tile, zero)), tile, kb.imm(nbytes), kb.v(MapaOp(mbar, zero))
            )
        )

    kb.if_(kb.cmp(CmpOp.NE, rank, 0), lambda: kb.if_(is_t0, peer_issue))

    def root_finish() -> None:
        kb.wait(mbar)
        kb.shared_to_global(tile, kb.args["out"], nbytes)

    kb.if_(is_root, root_finish)
    kb.cluster_sync()  # the peers' tiles stay alive until the reduction completed
    dt = np_dtype_name(t)
    return _kernel(kb, [("out", dt, (n,)), ("d", dt, (n,)), ("s", dt, (cluster - 1, n))])


def bulk_g2s_cta_kernel(n: int) -> TestKernel:
    """``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes``: thread 0 copies
    ``inp`` (n u32) into a shared tile; every thread waits on the mbarrier, then the
    tile is written to ``out`` with plain loads and stores."""
    nbytes = 4 * n
    kb = KernelBuilder("bulk_g2s_cta", [("out", GLOBAL), ("inp", GLOBAL)], grid=1, block=128)
    tile = kb.alloc_shared("tile", nbytes)
    mbar = kb.alloc_shared("mbar", 8, 8)
    kb.init_mbarrier(mbar, cluster=False)
    kb.add(BarSyncOp(0))

    def issue() -> None:
        kb.add(MbarrierArriveExpectTxOp(mbar, kb.imm(nbytes), sink=True))
        kb.add(CpAsyncBulkSharedCtaGlobalOp(tile, kb.args["inp"], kb.imm(nbytes), mbar))

    kb.if_(kb.cmp(CmpOp.EQ, kb.tid, 0), issue)
    kb.wait(mbar)
    kb.shared_to_global(tile, kb.args["out"], nbytes)
    return _kernel(kb, [("out", "u32", (n,)), ("inp", "u32", (n,))])


def bulk_s2g_kernel(n: int) -> TestKernel:
    """``cp.async.bulk.global.shared::cta.bulk_group``: the CTA fills a shared tile from
    ``inp`` with plain stores; thread 0 bulk-copies it to ``out`` and waits for the
    bulk async-group."""
    nbytes = 4 * n
    kb = KernelBuilder("bulk_s2g", [("out", GLOBAL), ("inp", GLOBAL)], grid=1, block=128)
    tile = kb.alloc_shared("tile", nbytes)
    kb.global_to_shared(kb.args["inp"], tile, nbytes)
    kb.add(FenceProxyAsyncOp(StateSpace.SHARED_CTA))
    kb.add(BarSyncOp(0))

    def issue() -> None:
        kb.add(CpAsyncBulkGlobalSharedCtaOp(kb.args["out"], tile, kb.imm(nbytes)))
        kb.add(CpAsyncBulkCommitGroupOp())
        kb.add(CpAsyncBulkWaitGroupOp(0))

    kb.if_(kb.cmp(CmpOp.EQ, kb.tid, 0), issue)
    return _kernel(kb, [("out", "u32", (n,)), ("inp", "u32", (n,))])


def bulk_g2s_cluster_kernel(n: int, cluster: int, mask: int | None) -> TestKernel:
    """``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes``.

    Without ``mask``: every CTA of the cluster copies ``inp[rank]`` into its own tile
    (its shared::cta address used as a shared::cluster one) and writes it to
    ``out[rank]``. With ``mask`` (``.multicast::cluster``): CTA 0 copies ``inp[0]`` once
    into the tile of every CTA whose bit is set in ``mask``; those CTAs expect the bytes
    on their own mbarrier and write their tile to ``out[rank]``; the others write nothing.
    Arguments: out (cluster, n), inp (cluster, n) u32."""
    nbytes = 4 * n
    name = "bulk_g2s_cluster" + (f"_multicast_{mask:x}" if mask is not None else "")
    kb = KernelBuilder(name, [("out", GLOBAL), ("inp", GLOBAL)], grid=cluster, block=64, cluster=cluster)
    tile = kb.alloc_shared("tile", nbytes)
    mbar = kb.alloc_shared("mbar", 8, 8)
    rank = kb.rank()
    row = kb.mul32(rank, kb.imm(nbytes))
    kb.init_mbarrier(mbar, cluster=True)
    kb.cluster_sync()  # every mbarrier is initialised before any copy signals it
    is_t0 = kb.cmp(CmpOp.EQ, kb.tid, 0)
    if mask is None:
        receives = kb.v(MovImmOp(1, i1))  # every CTA

        def issue() -> None:
            kb.add(MbarrierArriveExpectTxOp(mbar, kb.imm(nbytes), sink=True))
            kb.add(
                CpAsyncBulkSharedClusterGlobalOp(
                    kb.as_cluster(tile), kb.gptr(kb.args["inp"], row), kb.imm(nbytes), kb.as_cluster(mbar)
                )
            )

        kb.if_(is_t0, issue)
    else:
        bit = kb.v(AndOp(ArithType.B32, kb.v(ShrOp(ArithType.B32, kb.imm(mask), rank)), kb.imm(1)))
        receives = kb.cmp(CmpOp.EQ, bit, 1)
        kb.if_(receives, lambda: kb.if_(is_t0, lambda: kb.add(MbarrierArriveExpectTxOp(mbar, kb.imm(nbytes), sink=True))))

        def issue_multicast() -> None:
            kb.add(
                CpAsyncBulkSharedClusterGlobalOp(
                    kb.as_cluster(tile), kb.args["inp"], kb.imm(nbytes), kb.as_cluster(mbar),
                    multicast=Multicast.CLUSTER, cta_mask=kb.imm(mask, i16),
                )
            )

        kb.if_(kb.cmp(CmpOp.EQ, rank, 0), lambda: kb.if_(is_t0, issue_multicast))

    def receive() -> None:
        kb.wait(mbar)
        kb.shared_to_global(tile, kb.gptr(kb.args["out"], row), nbytes)

    kb.if_(receives, receive)
    kb.cluster_sync()
    return _kernel(kb, [("out", "u32", (cluster, n)), ("inp", "u32", (cluster, n))])


def bulk_s2s_peer_kernel(n: int) -> TestKernel:
    """``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``: in a
    2-CTA cluster, CTA 1 stages ``inp`` in its tile and copies it into CTA 0's tile
    (``mapa``), completing on CTA 0's mbarrier; CTA 0 writes its tile to ``out``."""
    nbytes = 4 * n
    kb = KernelBuilder("bulk_s2s_peer", [("out", GLOBAL), ("inp", GLOBAL)], grid=2, block=64, cluster=2)
    tile = kb.alloc_shared("tile", nbytes)
    mbar = kb.alloc_shared("mbar", 8, 8)
    rank = kb.rank()
    is_root = kb.cmp(CmpOp.EQ, rank, 0)
    is_t0 = kb.cmp(CmpOp.EQ, kb.tid, 0)
    kb.if_(kb.cmp(CmpOp.EQ, rank, 1), lambda: kb.global_to_shared(kb.args["inp"], tile, nbytes))
    kb.init_mbarrier(mbar, cluster=True)
    kb.add(FenceProxyAsyncOp(StateSpace.SHARED_CTA))
    kb.cluster_sync()
    kb.if_(is_root, lambda: kb.if_(is_t0, lambda: kb.add(MbarrierArriveExpectTxOp(mbar, kb.imm(nbytes), sink=True))))

    def issue() -> None:
        zero = kb.imm(0)
        kb.add(CpAsyncBulkSharedClusterSharedCtaOp(kb.v(MapaOp(tile, zero)), tile, kb.imm(nbytes), kb.v(MapaOp(mbar, zero))))

    kb.if_(kb.cmp(CmpOp.EQ, rank, 1), lambda: kb.if_(is_t0, issue))

    def root_finish() -> None:
        kb.wait(mbar)
        kb.shared_to_global(tile, kb.args["out"], nbytes)

    kb.if_(is_root, root_finish)
    kb.cluster_sync()
    return _kernel(kb, [("out", "u32", (n,)), ("inp", "u32", (n,))])


def red_async_kernel(op: str, t: str, cluster: int = 2) -> TestKernel:
    """``red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.<op>.<t>``:
    CTA 0 of the cluster holds ``d`` (32 elements) in shared memory; in every other CTA
    r, lane i reduces ``s[r-1][i]`` into CTA 0's element i, completing on CTA 0's
    mbarrier (expecting (cluster-1) * 32 * size bytes). CTA 0 writes the result to
    ``out``. Arguments: out (32,), d (32,), s (cluster-1, 32)."""
    size = SIZE[t]
    nbytes = 32 * size
    vt = i64 if size == 8 else i32
    lt = LdStType.B64 if size == 8 else LdStType.B32
    name = f"red_async_{op}_{t}"
    kb = KernelBuilder(name, [("out", GLOBAL), ("d", GLOBAL), ("s", GLOBAL)], grid=cluster, block=32, cluster=cluster)
    acc = kb.alloc_shared("acc", nbytes)
    mbar = kb.alloc_shared("mbar", 8, 8)
    rank = kb.rank()
    is_root = kb.cmp(CmpOp.EQ, rank, 0)
    off = kb.mul32(kb.tid, kb.imm(size))

    def root_init() -> None:
        v = kb.v(LdOp(lt, kb.gptr(kb.args["d"], off), vt))
        kb.add(StOp(lt, kb.sptr(acc, off), v))

    kb.if_(is_root, root_init)
    kb.init_mbarrier(mbar, cluster=True)
    kb.cluster_sync()
    kb.if_(
        is_root,
        lambda: kb.if_(
            kb.cmp(CmpOp.EQ, kb.tid, 0),
            lambda: kb.add(MbarrierArriveExpectTxOp(mbar, kb.imm((cluster - 1) * nbytes), sink=True)),
        ),
    )

    def peer() -> None:
        row = kb.mul32(kb.v(SubOp(ArithType.U32, rank, kb.imm(1))), kb.imm(nbytes))
        b = kb.v(LdOp(lt, kb.gptr(kb.args["s"], kb.add32(row, off)), vt))
        zero = kb.imm(0)
        a = kb.v(MapaOp(kb.sptr(acc, off), zero))
        kb.add(RedAsyncRelaxedClusterOp(RedAsyncOp(op), RedAsyncType(t), a, b, kb.v(MapaOp(mbar, zero))))

    kb.if_(kb.cmp(CmpOp.NE, rank, 0), peer)

    def root_finish() -> None:
        kb.wait(mbar)
        v = kb.v(LdOp(lt, kb.sptr(acc, off), vt))
        kb.add(StOp(lt, kb.gptr(kb.args["out"], off), v))

    kb.if_(is_root, root_finish)
    kb.cluster_sync()
    dt = np_dtype_name(t)
    return _kernel(kb, [("out", dt, (32,)), ("d", dt, (32,)), ("s", dt, (cluster - 1, 32))])


def redux_kernel(op: str, t: str) -> TestKernel:
    """``redux.sync.<op>.<t>`` over one warp with the membermask ``mask`` (a kernel
    argument): lanes in the mask reduce ``inp[lane]`` and store the result to
    ``out[lane]``; lanes outside it store nothing. Arguments: out (32,), inp (32,), mask."""
    name = f"redux_{op}_{t}"
    kb = KernelBuilder(name, [("out", GLOBAL), ("inp", GLOBAL), ("mask", i32)], grid=1, block=32)
    mask = kb.args["mask"]
    lane = kb.sreg(SpecialRegister.LANEID)
    off = kb.v(ShlOp(ArithType.B32, lane, kb.imm(2)))
    bit = kb.v(AndOp(ArithType.B32, kb.v(ShrOp(ArithType.B32, mask, lane)), kb.imm(1)))

    def member() -> None:
        v = kb.v(LdOp(LdStType.B32, kb.gptr(kb.args["inp"], off), i32))
        r = kb.v(ReduxSyncOp(ReduxOp(op), ReduxType(t), v, mask))
        kb.add(StOp(LdStType.B32, kb.gptr(kb.args["out"], off), r))

    kb.if_(kb.cmp(CmpOp.EQ, bit, 1), member)
    dt = np_dtype_name(t)
    return _kernel(kb, [("out", dt, (32,)), ("inp", dt, (32,)), ("mask", "i32", None)])


# endregion

REDUX_FORMS = [(op, t) for t, ops in (("u32", ("add", "min", "max")), ("s32", ("add", "min", "max")), ("b32", ("and", "or", "xor"))) for op in ops]

RED_ASYNC_FORMS = [
    ("inc", "u32"), ("dec", "u32"),
    ("min", "u32"), ("min", "s32"), ("max", "u32"), ("max", "s32"),
    ("and", "b32"), ("or", "b32"), ("xor", "b32"),
    ("add", "u32"), ("add", "s32"), ("add", "u64"), ("add", "s64"),
]


def ALL_KERNELS() -> list[TestKernel]:
    """One kernel of every form the GPU tests launch (for the CPU assembly test)."""
    from gpu.models import cp_reduce_forms

    ks = [cp_reduce_global_kernel(op, t, 64) for op, t in cp_reduce_forms("global")]
    ks += [cp_reduce_cluster_kernel(op, t, 64) for op, t in cp_reduce_forms("shared::cluster")]
    ks += [
        bulk_g2s_cta_kernel(256),
        bulk_s2g_kernel(256),
        bulk_g2s_cluster_kernel(256, 2, None),
        bulk_g2s_cluster_kernel(256, 4, 0b1011),
        bulk_s2s_peer_kernel(256),
    ]
    ks += [red_async_kernel(op, t) for op, t in RED_ASYNC_FORMS]
    ks += [redux_kernel(op, t) for op, t in REDUX_FORMS]
    return ks
