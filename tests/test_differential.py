"""Differential test: our verifier + target check against ptxas (nvJitLink), for every
``differential_cases()`` of tests/ptx_cases/ (one module per ptx op module). See
docs/differential.md."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, f32, i32
from xdsl.irdl import (
    AnyAttr,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    var_operand_def,
)
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

import differential_harness as h
from bulkred_dialect.ops.ptx.base import PtxInstruction, RegisterNamer
from bulkred_dialect.ops.target import MAX_PTX_VERSION, Requirement
from bulkred_dialect.pipeline import gc_paused
from ptx_cases import DiffCase


@pytest.fixture(scope="module", autouse=True)
def _collector_paused():
    """The module runs with Python's cyclic garbage collector paused (``gc_paused``): the
    report holds some 100,000 probes and 50,000 outcomes, none of them in a cycle, and
    the collector's passes over them took most of a second; they are freed when the
    report goes, at the end of the module, before the collector is back."""
    with gc_paused():
        yield


@pytest.fixture(scope="module")
def report() -> h.Report:
    return h.run()


def test_ptxas_agrees_with_our_verdicts(report: h.Report, capsys):
    with capsys.disabled():
        print("\n" + report.summary())
    assert not report.collection.harness_errors, "harness errors:\n" + "\n".join(
        report.collection.harness_errors
    )
    assert report.outcomes, "no differential cases at all"
    unlisted, stale = h.compare(report, h.read_expected())
    problems = [f"unlisted [{o.kind}] {o.describe()}" for o in unlisted]
    problems += [
        f"stale row in {h.DOC.name}: `{e.pattern}` {', '.join(e.targets)} {e.kind} "
        "(no longer disagrees: remove the row)"
        for e in stale
    ]
    shown = problems[:60]
    if len(problems) > len(shown):
        shown.append(f"... and {len(problems) - len(shown)} more (python3 tests/differential_harness.py lists all)")
    assert not problems, (
        f"{len(unlisted)} disagreements not listed in {h.DOC.name}, {len(stale)} stale rows:\n"
        + "\n".join(shown)
    )


def test_every_target_checks_every_case(report: h.Report):
    keys = [(o.case.key, o.target) for o in report.outcomes]
    assert len(keys) == len(set(keys)) == len(report.collection.cases) * len(h.TARGETS)


def batching_sample(outcomes: Sequence[h.Outcome]) -> list[h.Outcome]:
    """Outcomes to re-assemble alone: for each module, one whose declared version ptxas
    rejected and one it accepted (the middle one of its target's), each side's target the
    one used least so far among those the module has (modules with the fewest first),
    so that every module and every target is sampled on both sides. A wrong line number,
    a line judged by its neighbours' errors or a register declaration the batch lacks
    shows on any line of a batch; each (target, version) batch holds lines of every
    module that has some."""
    sample = []
    for accepted in (False, True):
        by: dict[str, dict[str, list[h.Outcome]]] = {}
        for o in outcomes:
            if o.at_declared.accepted == accepted:
                by.setdefault(o.case.module, {}).setdefault(o.target, []).append(o)
        used = dict.fromkeys(h.TARGETS, 0)
        for module in sorted(by, key=lambda m: (len(by[m]), m)):
            target = min(by[module], key=lambda t: (used[t], h.TARGETS.index(t)))
            used[target] += 1
            sample.append(by[module][target][len(by[module][target]) // 2])
    return sample


def test_batching_sample_spans_every_module_and_target(report: h.Report):
    sample = batching_sample(report.outcomes)
    for accepted in (False, True):
        side = [o for o in sample if o.at_declared.accepted == accepted]
        assert {o.target for o in side} == set(h.TARGETS), accepted
    assert {o.case.module for o in sample if not o.at_declared.accepted} == set(report.collection.modules)
    assert {o.case.module for o in sample if o.at_declared.accepted} == set(report.collection.modules)


def test_batched_verdicts_match_one_kernel_per_case(report: h.Report):
    """Batching trusts ptxas's per-line errors; re-assemble a sample alone to confirm
    (:func:`batching_sample`: each module and target on both sides, about 22 outcomes,
    33 assemblies; the whole one-by-one run, ``BULKRED_DIFF_ONE_BY_ONE=1``, gives the
    same verdicts)."""
    sample = batching_sample(report.outcomes)
    assert any(o.at_declared.accepted for o in sample) and not all(o.at_declared.accepted for o in sample)
    mismatches = []
    for o in sample:
        for version, batched in ((o.declared, o.at_declared), (MAX_PTX_VERSION, o.at_max)):
            if batched is None:  # the highest version, not tried where the declared one passes
                continue
            alone = h.assemble_one(h.probe_for(o.case, o.target, version))
            if alone.accepted != batched.accepted:
                mismatches.append(f"{o.case.key} {o.target} {version}: batch {batched}, alone {alone}")
    assert not mismatches, "\n".join(mismatches)


def test_mmio_release_gpu_is_rejected_by_us_and_nvjitlink(report: h.Report):
    """The 8 forms red.async.mmio.release.gpu{.global}.add.{u32,s32,u64,s64}: ptxas 13.0
    accepts them (issue 9's audit); the spec, we and the bundled nvJitLink reject them.
    docs/differential.md records the disagreement with ptxas 13.0."""
    outcomes = [
        o
        for o in report.outcomes
        if o.case.key.startswith("red_async:red.async.mmio.release.gpu.")
        and ".shared::cluster." not in o.case.key
    ]
    forms = {o.case.line.split()[0] for o in outcomes}
    assert forms == {
        f"red.async.mmio.release.gpu{ss}.add.{t}" for ss in ("", ".global") for t in ("u32", "s32", "u64", "s64")
    }
    for o in outcomes:
        assert not o.ours and "'.mmio' requires '.scope' sys" in o.our_reason, o.describe()
        assert not o.at_declared.accepted and not o.at_max.accepted, o.describe()


def test_red_async_relaxed_add_s64_is_valid_and_assembles(report: h.Report):
    """add.s64 of the relaxed.cluster form: beyond the spec's table, accepted by ptxas on
    sm_90a and sm_100a, and so by us."""
    for target in ("sm_90a", "sm_100a"):
        (o,) = [
            o
            for o in report.outcomes
            if o.case.key == "red_async:red.async.relaxed.cluster.shared::cluster.add.s64" and o.target == target
        ]
        assert o.ours and o.at_declared.accepted and o.kind is None, o.describe()


def test_doc_names_the_bundled_nvjitlink():
    from cuda.bindings import nvjitlink

    major, minor = nvjitlink.version()
    assert f"`nvjitlink.version()` is {major}.{minor}" in h.DOC.read_text()


def test_expected_table_parses():
    rows = h.read_expected()
    for row in rows:
        assert row.reason, f"row `{row.pattern}` gives no reason"


# region The harness can fail: a fake instruction with a configurable requirement


@irdl_op_definition
class FakeInstruction(PtxInstruction):
    """A test-only op printing ``mnem`` with its operands; requirement from properties."""

    name = "test.fake_instruction"

    mnem = prop_def(StringAttr)
    sm = prop_def(IntegerAttr)
    ptx = prop_def(StringAttr)
    arch = opt_prop_def(UnitAttr)
    broken = opt_prop_def(StringAttr)  # "verify" or "line": where to raise a non-diagnostic
    invalid = opt_prop_def(UnitAttr)
    args = var_operand_def(AnyAttr())

    def __init__(self, mnem: str, args: Sequence[SSAValue], req: Requirement, *, broken: str = "", invalid: bool = False):
        props = {
            "mnem": StringAttr(mnem),
            "sm": IntegerAttr(req.sm, i32),
            "ptx": StringAttr(f"{req.ptx[0]}.{req.ptx[1]}"),
        }
        if req.arch_specific:
            props["arch"] = UnitAttr()
        if broken:
            props["broken"] = StringAttr(broken)
        if invalid:
            props["invalid"] = UnitAttr()
        super().__init__(operands=[list(args)], properties=props)

    def verify_(self) -> None:
        if self.broken is not None and self.broken.data == "verify":
            raise KeyError("oops")
        if self.invalid is not None:
            raise VerifyException("'.fake' is invalid")

    def requirement(self) -> Requirement:
        major, minor = self.ptx.data.split(".")
        return Requirement(self.sm.value.data, self.arch is not None, (int(major), int(minor)))

    def ptx_mnemonic(self) -> str:
        return self.mnem.data

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        if self.broken is not None and self.broken.data == "line":
            raise ValueError("no line")
        return [reg(a) for a in self.args]


def _fake(name: str, mnem: str, types, req: Requirement, **kw) -> DiffCase:
    return DiffCase(name, tuple(types), lambda args: FakeInstruction(mnem, args, req, **kw))


def _fake_report(*cases: DiffCase) -> h.Report:
    collection = h.Collection()
    h.add_cases(collection, "fake", cases)
    return h.check(collection)


def test_each_kind_of_disagreement_is_found():
    r = _fake_report(
        # max.f32 with three inputs needs PTX 8.8: declaring 8.6 is too low.
        _fake("max3_ptx86", "max.f32", [f32] * 4, Requirement(100, False, (8, 6))),
        # Declaring 9.0 where 8.8 is enough.
        _fake("max3_ptx90", "max.f32", [f32] * 4, Requirement(100, False, (9, 0))),
        # redux.sync f32 is sm_100a-only: claiming plain sm_100 is wrong.
        _fake("redux_f32_sm100", "redux.sync.min.f32", [f32, f32, i32], Requirement(100, False, (8, 6))),
        # add.u32 runs everywhere: claiming sm_100a is too strict.
        _fake("add_u32_sm100a", "add.u32", [i32] * 3, Requirement(100, True, (8, 6))),
        # A form our verifier rejects but ptxas takes.
        _fake("add_u32_invalid", "add.u32", [i32] * 3, Requirement(50, False, (6, 0)), invalid=True),
        # Agreement: both accept, both reject.
        _fake("add_u32", "add.u32", [i32] * 3, Requirement(50, False, (6, 0))),
        _fake("add_rn_u32", "add.rn.u32", [i32] * 3, Requirement(50, False, (6, 0)), invalid=True),
    )
    assert not r.collection.harness_errors
    kinds = {(o.case.name, o.target): o.kind for o in r.outcomes}
    assert kinds[("max3_ptx86", "sm_100a")] == "version"
    assert kinds[("max3_ptx86", "sm_90a")] is None  # both reject: sm_90a has no 3-input max
    assert kinds[("max3_ptx90", "sm_100")] == "version-high"
    assert kinds[("redux_f32_sm100", "sm_100")] == "rejected"
    assert kinds[("redux_f32_sm100", "sm_100a")] is None
    assert kinds[("add_u32_sm100a", "sm_90a")] == "accepted"
    assert kinds[("add_u32_sm100a", "sm_100")] == "accepted"
    assert kinds[("add_u32_sm100a", "sm_100a")] is None
    assert all(kinds[("add_u32_invalid", t)] == "accepted" for t in h.TARGETS)
    assert all(kinds[("add_u32", t)] is None for t in h.TARGETS)
    assert all(kinds[("add_rn_u32", t)] is None for t in h.TARGETS)

    listed = h.Expected("fake:max3_ptx86", ("sm_100", "sm_100a"), "version", "test")
    never = h.Expected("fake:add_u32", h.TARGETS, "accepted", "test")
    unlisted, stale = h.compare(r, [listed, never])
    assert {(o.case.name, o.target) for o in unlisted} == {
        (k, t) for (k, t), kind in kinds.items() if kind is not None
    } - {("max3_ptx86", "sm_100"), ("max3_ptx86", "sm_100a")}
    assert stale == [never]


def test_harness_errors_are_reported():
    ok = Requirement(50, False, (6, 0))
    collection = h.Collection()
    h.add_cases(
        collection,
        "fake",
        [
            _fake("verify_raises", "add.u32", [i32] * 3, ok, broken="verify"),
            _fake("line_raises", "add.u32", [i32] * 3, ok, broken="line"),
            DiffCase("build_raises", (i32,), lambda args: args[5]),
            DiffCase("not_an_op", (i32,), lambda args: None),
            _fake("no_register_class", "add.u32", [StringAttr("x")], ok),
            _fake("twice", "add.u32", [i32] * 3, ok),
            _fake("twice", "add.u32", [i32] * 3, ok),
        ],
    )
    errors = "\n".join(collection.harness_errors)
    for name in ("verify_raises", "line_raises", "build_raises", "not_an_op", "no_register_class"):
        assert f"fake:{name}:" in errors
    assert "fake:twice: duplicate case name" in errors
    assert [c.name for c in collection.cases] == ["twice"]


def test_bad_table_rows_are_rejected(tmp_path):
    doc = tmp_path / "d.md"
    good = "| `arith:add.*` | sm_90a, sm_100a | accepted | because |\n"
    doc.write_text(f"{h.TABLE_BEGIN}\n| case | targets | kind | reason |\n|---|---|---|---|\n{good}{h.TABLE_END}\n")
    (row,) = h.read_expected(doc)
    assert row == h.Expected("arith:add.*", ("sm_90a", "sm_100a"), "accepted", "because")
    doc.write_text(f"{h.TABLE_BEGIN}\n| `x` | * | wrong-kind | r |\n{h.TABLE_END}\n")
    with pytest.raises(ValueError, match="wrong-kind"):
        h.read_expected(doc)
    doc.write_text(f"{h.TABLE_BEGIN}\n| `x` | sm_75 | accepted | r |\n{h.TABLE_END}\n")
    with pytest.raises(ValueError, match="sm_75"):
        h.read_expected(doc)
    doc.write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        h.read_expected(doc)


# endregion
