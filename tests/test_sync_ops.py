"""ptxas (through nvJitLink, no GPU needed) is the oracle for the red.async, sync and
special-register ops: every valid form's PTX line must assemble on the targets it claims,
and its requirement must be the lowest SM and PTX ISA version ptxas accepts. (Every
qualifier combination of ``differential_cases()`` in tests/ptx_cases/, valid or not, is
compared with ptxas by tests/differential_harness.py.)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

import pytest
from xdsl.ir import Attribute, Block, SSAValue

from bulkred_dialect.backend_ptx.assemble import parse_ptxas_log, ptxas_accepts
from bulkred_dialect.ops.ptx.base import (
    PtrType,
    PtxInstruction,
    StateSpace,
    i1,
    i32,
    i64,
    register_class,
)
from bulkred_dialect.ops.ptx.red_async import (
    RED_ASYNC_TABLE,
    RELEASE_SCOPES,
    RedAsyncRelaxedClusterOp,
    RedAsyncReleaseOp,
    RedAsyncReleaseType,
    RedAsyncScope,
)
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
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierTryWaitParityOp,
)
from bulkred_dialect.ops.target import Target, TargetError, check_target, format_ptx_version
from ptx_cases import DiffCase, red_async, sync

CTA = PtrType(StateSpace.SHARED_CTA)
CLUSTER = PtrType(StateSpace.SHARED_CLUSTER)
GLOBAL = PtrType(StateSpace.GLOBAL)
GENERIC = PtrType(StateSpace.GENERIC)

SM90A, SM100A = Target.parse("sm_90a"), Target.parse("sm_100a")

# PTX ISA versions in release order, to find the one just below a requirement.
PTX_VERSIONS = [
    *((6, v) for v in range(6)),
    *((7, v) for v in range(9)),
    *((8, v) for v in range(9)),
    (9, 0),
]
# SM numbers nvJitLink 13 assembles for, to find the one just below a requirement.
SMS = [75, 80, 86, 89, 90, 100]


# region Helpers


class Namer:
    """PTX register names by register class: %r1, %rd1, %p1 ..."""

    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, value: SSAValue) -> str:
        if value not in self.names:
            _, prefix = register_class(value.type)
            self.counts[prefix] = self.counts.get(prefix, 0) + 1
            self.names[value] = f"{prefix}{self.counts[prefix]}"
        return self.names[value]


def kernel(line: str, target: Target, version: tuple[int, int]) -> str:
    return (
        f".version {format_ptx_version(version)}\n.target {target}\n.address_size 64\n\n"
        ".visible .entry k()\n{\n"
        "  .reg .b32 %r<20>;\n  .reg .b64 %rd<20>;\n  .reg .pred %p<5>;\n"
        f"  {line}\n  ret;\n}}\n"
    )


Maker = Callable[[Sequence[SSAValue]], PtxInstruction]


def build(operand_types: Sequence[Attribute], make: Maker) -> PtxInstruction:
    """The op ``make`` builds on block arguments of ``operand_types``."""
    return make(Block(arg_types=operand_types).args)


def ptx_line(op: PtxInstruction) -> str:
    return op.ptx_line(Namer())


# endregion

# region The valid forms


@dataclass(frozen=True)
class Form:
    name: str
    operand_types: tuple[Attribute, ...]
    make: Maker
    expected_line: str

    def op(self) -> PtxInstruction:
        return build(self.operand_types, self.make)


def _b(type_name: str) -> Attribute:
    return i64 if type_name.endswith("64") else i32


def red_async_forms() -> list[Form]:
    forms = []
    for t, ops in RED_ASYNC_TABLE.items():
        for o, (ptr, ss) in product(ops, ((CLUSTER, ".shared::cluster"), (GENERIC, ""))):
            a, b, m = {  # names in operand order: a, b, mbar
                (CLUSTER, i32): ("%r1", "%r2", "%r3"),
                (CLUSTER, i64): ("%r1", "%rd1", "%r2"),
                (GENERIC, i32): ("%rd1", "%r1", "%rd2"),
                (GENERIC, i64): ("%rd1", "%rd2", "%rd3"),
            }[ptr, _b(t)]
            forms.append(
                Form(
                    f"relaxed{ss}.{o}.{t}",
                    (ptr, _b(t), ptr),
                    lambda v, o=o, t=t: RedAsyncRelaxedClusterOp(o, t, v[0], v[1], v[2]),
                    f"red.async.relaxed.cluster{ss}.mbarrier::complete_tx::bytes.{o}.{t} "
                    f"[{a}], {b}, [{m}];",
                )
            )
    for mmio, scope, (ptr, ss), t in product(
        (False, True), RELEASE_SCOPES, ((GLOBAL, ".global"), (GENERIC, "")), RedAsyncReleaseType
    ):
        if mmio and scope != RedAsyncScope.SYS:
            continue
        b = "%rd2" if _b(t) == i64 else "%r1"
        forms.append(
            Form(
                f"release{'.mmio' if mmio else ''}.{scope}{ss}.{t}",
                (ptr, _b(t)),
                lambda v, scope=scope, t=t, mmio=mmio: RedAsyncReleaseOp(
                    scope, t, v[0], v[1], mmio=mmio
                ),
                f"red.async{'.mmio' if mmio else ''}.release.{scope}{ss}.add.{t} [%rd1], {b};",
            )
        )
    return forms


def sync_forms() -> list[Form]:
    forms = [
        Form("mbarrier.init", (CTA, i32), lambda v: MbarrierInitOp(v[0], v[1]),
             "mbarrier.init.shared::cta.b64 [%r1], %r2;"),
        Form("mbarrier.arrive", (CTA,), lambda v: MbarrierArriveOp(v[0]),
             "mbarrier.arrive.shared::cta.b64 %rd1, [%r1];"),
        Form("expect_tx.cta", (CTA, i32), lambda v: MbarrierArriveExpectTxOp(v[0], v[1]),
             "mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r1], %r2;"),
        Form("expect_tx.cta.sink", (CTA, i32),
             lambda v: MbarrierArriveExpectTxOp(v[0], v[1], sink=True),
             "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r2;"),
        Form("expect_tx.cluster.sink", (CLUSTER, i32),
             lambda v: MbarrierArriveExpectTxOp(v[0], v[1], sink=True),
             "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%r1], %r2;"),
        Form("try_wait.parity", (CTA, i32), lambda v: MbarrierTryWaitParityOp(v[0], v[1]),
             "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;"),
        Form("fence.mbarrier_init", (), lambda v: FenceMbarrierInitOp(),
             "fence.mbarrier_init.release.cluster;"),
        Form("fence.proxy.async", (), lambda v: FenceProxyAsyncOp(), "fence.proxy.async;"),
        Form("commit_group", (), lambda v: CpAsyncBulkCommitGroupOp(),
             "cp.async.bulk.commit_group;"),
        Form("bar.sync.0", (), lambda v: BarSyncOp(0), "bar.sync 0;"),
        Form("bar.sync.15", (), lambda v: BarSyncOp(15), "bar.sync 15;"),
        Form("mapa", (CTA, i32), lambda v: MapaOp(v[0], v[1]),
             "mapa.shared::cluster.u32 %r1, %r2, %r3;"),
    ]  # fmt: skip
    for space in (StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER, StateSpace.GLOBAL):
        forms.append(
            Form(
                f"fence.proxy.async.{space}",
                (),
                lambda v, space=space: FenceProxyAsyncOp(space),
                f"fence.proxy.async.{space};",
            )
        )
    for read, n in product((False, True), (0, 5)):
        r = ".read" if read else ""
        forms.append(
            Form(
                f"wait_group{r}.{n}",
                (),
                lambda v, n=n, read=read: CpAsyncBulkWaitGroupOp(n, read=read),
                f"cp.async.bulk.wait_group{r} {n};",
            )
        )
    for sem, aligned in product((None, *ClusterArriveSem), (False, True)):
        q = (f".{sem}" if sem else "") + (".aligned" if aligned else "")
        forms.append(
            Form(
                f"cluster.arrive{q}",
                (),
                lambda v, sem=sem, aligned=aligned: BarrierClusterArriveOp(sem, aligned=aligned),
                f"barrier.cluster.arrive{q};",
            )
        )
    for acquire, aligned in product((False, True), (False, True)):
        q = (".acquire" if acquire else "") + (".aligned" if aligned else "")
        forms.append(
            Form(
                f"cluster.wait{q}",
                (),
                lambda v, acquire=acquire, aligned=aligned: BarrierClusterWaitOp(
                    acquire=acquire, aligned=aligned
                ),
                f"barrier.cluster.wait{q};",
            )
        )
    return forms


def sreg_forms() -> list[Form]:
    forms = []
    for r in SpecialRegister:
        mov = "mov.pred %p1" if r == SpecialRegister.IS_EXPLICIT_CLUSTER else "mov.u32 %r1"
        forms.append(Form(f"sreg.{r}", (), lambda v, r=r: MovSregOp(r), f"{mov}, %{r};"))
    return forms


ALL_FORMS = red_async_forms() + sync_forms() + sreg_forms()


# endregion


def _targets(op: PtxInstruction) -> list[Target]:
    return [SM100A] + ([SM90A] if op.requirement().satisfied_by(SM90A) else [])


@pytest.mark.parametrize("form", ALL_FORMS, ids=lambda f: f.name)
def test_valid_form_verifies_and_prints(form: Form):
    op = form.op()
    op.verify()
    assert ptx_line(op) == form.expected_line
    for target in _targets(op):
        check_target(op.ptx_mnemonic(), op.requirement(), target)


def test_valid_forms_assemble():
    """Each valid form assembles on sm_100a (and sm_90a where its requirement allows), at
    its PTX ISA version (8.7 at least): the forms of one (target, version) in one kernel,
    a line each, so that one ptxas run checks them all; a rejection names its form (by
    ptxas's line)."""
    groups: dict[tuple[Target, tuple[int, int]], list[Form]] = {}
    for form in ALL_FORMS:
        op = form.op()
        for target in _targets(op):
            groups.setdefault((target, max((8, 7), op.requirement().ptx)), []).append(form)
    assert sum(map(len, groups.values())) > len(ALL_FORMS)  # sm_90a's forms are there too
    rejected = []
    for (target, version), forms in groups.items():
        text = kernel("\n  ".join(ptx_line(f.op()) for f in forms), target, version)
        ok, log = ptxas_accepts(text, target.name)
        if not ok:
            first = text.splitlines().index("  " + ptx_line(forms[0].op())) + 1  # 1-based
            lines = {int(m) for m in re.findall(r"line (\d+)", log)}
            rejected += [f"{forms[i].name} on {target}" for i in range(len(forms)) if first + i in lines] or [f"{target}: {log}"]
    assert not rejected, "\n".join(rejected)


def _lower(values: list, v):
    i = values.index(v)
    return values[i - 1] if i > 0 else None


def _requirement_probes(op: PtxInstruction) -> list[tuple[Target, tuple[int, int], bool]]:
    """What :func:`test_requirement_is_the_lowest` asks ptxas about ``op``'s line: (target,
    PTX ISA version, whether ptxas must accept it there)."""
    req = op.requirement()
    if req.sm not in SMS:  # the any-target baseline: nvJitLink 13 cannot assemble below sm_75
        return [(Target.parse("sm_80"), max(req.ptx, Target.parse("sm_80").min_ptx), True)]
    target = Target(req.sm, "a" if req.arch_specific else "")
    probes = [(target, max(req.ptx, target.min_ptx), True)]
    lower_ptx = _lower(PTX_VERSIONS, req.ptx)
    if lower_ptx is not None and lower_ptx >= target.min_ptx:
        probes.append((target, lower_ptx, False))
    lower_sm = _lower(SMS, req.sm)
    if lower_sm is not None:
        below = Target(lower_sm)
        probes.append((below, max(req.ptx, below.min_ptx, (8, 7)), False))
    return probes


def _batched_verdicts(lines: list[str], target: Target, version: tuple[int, int]) -> dict[str, tuple[bool, str]]:
    """ptxas's verdict on each line as :func:`ptxas` gives it for a kernel of that line
    alone: the lines in one kernel, a line each, so that one ptxas run checks them all
    (tests/differential_harness.py's batching; test_differential cross-checks it against
    one kernel per line). A line ptxas's errors name is rejected, with its message; the
    others are assembled again without it, until a kernel passes. A failure that names
    no line falls back to one kernel per line."""
    out: dict[str, tuple[bool, str]] = {}
    pending = list(dict.fromkeys(lines))
    while pending:
        text = kernel("\n  ".join(pending), target, version)
        ok, log = ptxas_accepts(text, target.name)
        if ok:
            out.update((line, (True, "")) for line in pending)
            break
        first = text.splitlines().index("  " + pending[0]) + 1  # 1-based
        errors: dict[int, str] = {}
        for d in parse_ptxas_log(log):
            if d.severity == "error":
                errors.setdefault(d.line, d.message)
        rejected = [line for i, line in enumerate(pending) if first + i in errors]
        if not rejected:
            out.update((line, ptxas_accepts(kernel(line, target, version), target.name)) for line in pending)
            break
        out.update((line, (False, errors[first + pending.index(line)])) for line in rejected)
        pending = [line for line in pending if line not in rejected]
    return out


@functools.cache
def _requirement_verdicts() -> dict[tuple[str, str, tuple[int, int]], tuple[bool, str]]:
    """ptxas's verdict on every (line, target, version) of every form's
    :func:`_requirement_probes`, batched by (target, version)."""
    groups: dict[tuple[Target, tuple[int, int]], list[str]] = {}
    for form in ALL_FORMS:
        op = form.op()
        for target, version, _ in _requirement_probes(op):
            groups.setdefault((target, version), []).append(ptx_line(op))
    verdicts = {}
    for (target, version), lines in groups.items():
        for line, verdict in _batched_verdicts(lines, target, version).items():
            verdicts[(line, target.name, version)] = verdict
    return verdicts


@pytest.mark.parametrize("form", ALL_FORMS, ids=lambda f: f.name)
def test_requirement_is_the_lowest(form: Form):
    """ptxas accepts the form at its requirement and rejects it one SM or one PTX ISA below
    (the verdicts of all forms batched: :func:`_requirement_verdicts`)."""
    op = form.op()
    req = op.requirement()
    if req.sm not in SMS:
        assert req.sm < SMS[0]
    line = ptx_line(op)
    probes = _requirement_probes(op)
    assert probes[0][2] and all(not accept for _, _, accept in probes[1:])
    for target, version, accept in probes:
        ok, log = _requirement_verdicts()[(line, target.name, version)]
        if accept:
            assert ok, f"{line} needs more than {req.describe()} ({target}, PTX ISA {format_ptx_version(version)}):\n{log}"
        elif target.sm == req.sm:
            assert not ok, f"{line} assembles with PTX ISA {format_ptx_version(version)} too"
        else:
            assert not ok, f"{line} assembles on {target} too"
            with pytest.raises(TargetError):
                check_target(op.ptx_mnemonic(), req, target)


def test_batched_verdicts_name_each_rejected_line():
    """The batching above gives each line the verdict of a kernel of that line alone:
    rejected lines in one kernel are each found (with ptxas's message), the accepted ones
    accepted; a failure that names no line (a PTX ISA version too old for the target)
    falls back to one kernel per line."""
    sm90 = Target.parse("sm_90a")
    good, bad, bad2 = "mov.u32 %r1, %r2;", "mov.u32 %r1, %rd2;", "add.u32 %r3, %p1, %r1;"
    got = _batched_verdicts([bad, good, bad2, good], sm90, (8, 7))
    assert set(got) == {good, bad, bad2}
    assert got[good] == (True, "") and not got[bad][0] and not got[bad2][0] and got[bad][1] and got[bad2][1]
    for line, (ok, _) in got.items():
        assert ok == ptxas_accepts(kernel(line, sm90, (8, 7)), "sm_90a")[0], line
    old = _batched_verdicts([good], sm90, (7, 0))
    assert not old[good][0] and old[good] == ptxas_accepts(kernel(good, sm90, (7, 0)), "sm_90a")


def test_differential_cases_are_complete_and_unique():
    """The qualifier combinations; tests/differential_harness.py compares them with ptxas."""
    cases: list[DiffCase] = [*red_async.differential_cases(), *sync.differential_cases()]
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    relaxed = [n for n in names if n.startswith("red.async.relaxed.cluster.")]
    release = [n for n in names if n.startswith("red.async") and ".release." in n]
    assert len(relaxed) == 8 * 5 * 3  # .op x .type (the spec's four and s64) x .ss (none, shared::cluster, global)
    assert len(release) == 2 * 3 * 3 * 4  # .mmio x .scope x .ss x .type


def test_sreg_result_types():
    for r in SpecialRegister:
        assert r.ir_type == (i1 if r == SpecialRegister.IS_EXPLICIT_CLUSTER else i32)
    cluster = [r for r in SpecialRegister if MovSregOp(r).requirement().sm == 90]
    assert SpecialRegister.CLUSTER_CTARANK in cluster and SpecialRegister.TID_X not in cluster
