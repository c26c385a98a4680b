"""Differential test harness: our verifier and target check against ptxas (via nvJitLink).

Each instruction module of ``bulkred_dialect.ops.ptx`` has a module of the same name in
``tests/ptx_cases/`` whose ``differential_cases()`` yields :class:`~ptx_cases.DiffCase`s.
For each case and each target in :data:`TARGETS` the harness builds the op inside a
``func.func`` whose block arguments have the case's operand types, and compares two verdicts:

* ours: ``op.verify()`` passes and ``check_target`` accepts ``op.requirement()`` for the target;
* ptxas's: the op's ``ptx_line`` inside a minimal kernel assembles for the target, with
  ``.version`` = the op's declared PTX ISA version (at least the target's own minimum, at most
  :data:`MAX_PTX_VERSION`) -- so the declared version is tested too -- and, where ptxas
  rejects it there, again with ``.version`` = :data:`MAX_PTX_VERSION`, which separates
  "wrong PTX version" from "wrong form" (where the declared version is accepted, the
  highest decides nothing: no kind below reads it). When we accept the op, ptxas accepts
  it at the declared version and that version is above the target's minimum, the version
  just below it is tried as well: ptxas accepting it means we declare more than needed.

Kinds of disagreement (see docs/differential.md):

* ``accepted`` -- we reject, ptxas accepts (at the declared or at the highest version);
* ``rejected`` -- we accept, ptxas rejects even at the highest version;
* ``version`` -- we accept, ptxas rejects at our declared version but accepts at the highest;
* ``version-high`` -- we accept, ptxas also accepts one version below the one we declare.

Speed: the probes go in two rounds (the declared versions; then the highest and the
version below where the first round's verdict calls for them: half the lines ptxas
compiles, the accepted ones, are not assembled a second time at the highest version).
In each round instructions of one (target, version) are assembled together, one per line
(in entries of :data:`BATCH_ENTRY_LINES` lines), and ptxas's per-line errors say which were rejected; the rest is assembled again until a
batch passes (with -O0: :data:`BATCH_OPTIONS`). A failure that names no instruction line
falls back to one kernel per case.
``BULKRED_DIFF_ONE_BY_ONE=1`` assembles one kernel per probe (slow; cross-checks batching).

Run ``python3 tests/differential_harness.py --write-doc`` to refresh the summary
section of docs/differential.md.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import os
import pkgutil
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, StringAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, VerifyException

import bulkred_dialect.ops.ptx as ptx_package
from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble
from bulkred_dialect.ops.ptx.base import PtxInstruction, register_class
from bulkred_dialect.ops.target import (
    MAX_PTX_VERSION,
    Requirement,
    Target,
    TargetError,
    check_target,
    format_ptx_version,
)
from bulkred_dialect.pipeline import gc_paused
import ptx_cases
from ptx_cases import DiffCase

TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a")
DOC = Path(__file__).resolve().parent.parent / "docs" / "differential.md"
# Lines per batch. ptxas's time on a batch it rejects grows faster than its lines (its
# log of thousands of errors): the whole check took 3.7 CPU-s in batches of 4000 lines,
# 3.2-3.4 in batches of 2000 (3.3 at 1000; 3.7 at 500 and 4.4 at 8000, where the
# runs' own cost or a batch's errors dominate).
BATCH_SIZE = 2000
# ptxas options of the batched runs. With -O0 a batch whose lines all pass (ptxas then
# compiles them, one after another) assembles in about 60% of the time, and the verdicts
# do not change: ptxas checks a line before it optimizes (the verdicts and ptxas's
# messages were the same with and without -O0 for all 50,421 (case, target) pairs).
# assemble_one (one kernel per probe) keeps ptxas's defaults, so that
# tests/test_differential.py's cross-check of batching compares with default runs too.
BATCH_OPTIONS = ("-O0",)
# Lines per ``.entry`` of a batch (each entry declares the batch's registers). ptxas's
# work on a function grows faster than its lines: a passing batch of 980 lines took
# 0.25 CPU-s as one entry, 0.185 as entries of 100 (0.18-0.20 from 20 to 200 per entry);
# a line's verdict and message do not depend on its entry (all 51,828 (case, target)
# outcomes were the same as with one entry).
BATCH_ENTRY_LINES = 100

# PTX ISA versions the bundled ptxas knows, oldest first (for "the version just below").
PTX_VERSIONS: tuple[tuple[int, int], ...] = (
    *((7, m) for m in range(0, 9)),
    *((8, m) for m in range(0, 9)),
    (9, 0),
)

# Modules of the ptx package that hold no instructions.
_NOT_OP_MODULES = {"base", "addresses"}


# region Collecting cases


@dataclass
class Case:
    """One DiffCase, built: its op, our verdict ingredients and its PTX line."""

    module: str
    name: str
    op: PtxInstruction | None = None
    verify_error: str | None = None  # None: op.verify() passed
    requirement: Requirement | None = None
    line: str = ""
    registers: dict[tuple[str, str], int] = field(default_factory=dict)  # (decl, prefix) -> count

    @property
    def key(self) -> str:
        return f"{self.module}:{self.name}"

    @cached_property
    def register_key(self) -> tuple[tuple[tuple[str, str], int], ...]:
        """``registers`` sorted, as a :class:`Probe` holds them (made once: a case gives
        up to 21 probes)."""
        return tuple(sorted(self.registers.items()))


@dataclass
class Collection:
    cases: list[Case] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "module: why"
    harness_errors: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)  # modules that gave cases


def ptx_op_modules() -> list[str]:
    """Names of the instruction modules of ``bulkred_dialect.ops.ptx``."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules(ptx_package.__path__)
        if not m.name.startswith("_") and m.name not in _NOT_OP_MODULES
    )


class _Namer:
    """PTX register names by register class, numbered from 1 in order of first use."""

    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.counts: dict[tuple[str, str], int] = defaultdict(int)

    def __call__(self, value: SSAValue) -> str:
        if value not in self.names:
            cls = register_class(value.type)
            self.counts[cls] += 1
            self.names[value] = f"{cls[1]}{self.counts[cls]}"
        return self.names[value]


def _short_exc(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip().splitlines()[0] if str(e) else type(e).__name__


def case_generator(module: str, out: Collection) -> Callable[[], Iterable[DiffCase]] | None:
    """``differential_cases`` of ``tests/ptx_cases/<module>.py``; None (noted in ``out``)
    when there is no such module or it fails to import."""
    name = f"{ptx_cases.__name__}.{module}"
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            out.harness_errors.append(f"{module}: import failed: {_short_exc(e)}")
        else:
            out.skipped.append(f"{module}: no tests/ptx_cases/{module}.py yet")
        return None
    except Exception as e:
        out.harness_errors.append(f"{module}: import failed: {_short_exc(e)}")
        return None
    gen = getattr(mod, "differential_cases", None)
    if gen is None:
        out.skipped.append(f"{module}: no differential_cases() yet")
    return gen


def _verify(op: PtxInstruction) -> None:
    """``op.verify()``. For an op without regions or successors (every case so far) that
    is its ``verify_()``: the rest of ``verify`` checks nested regions and, for the last op
    of a block, terminators (the case's op is followed by func.return). Calling it
    directly raises the same exception without the note xDSL adds on failure, the whole
    function printed, which took nearly half the time of :func:`collect`."""
    if op.regions or op.successors:
        op.verify()
    else:
        op.verify_()


_KERNEL_NAME = StringAttr("k")


@functools.lru_cache(maxsize=None)
def _function_type(operand_types: tuple[Attribute, ...]) -> FunctionType:
    """The kernel's type for these block arguments (made once per distinct tuple: 7,404
    cases have a few hundred)."""
    return FunctionType.from_lists(operand_types, [])


def build_case(module: str, dc: DiffCase) -> tuple[Case, str | None]:
    """Build one case: its op in a ``func.func @k`` whose block arguments have the case's
    operand types, followed by ``func.return``; the second value is a harness error (or
    None). The function and the return are made as xDSL's parser makes them
    (``Operation.create`` with the properties and region), about a third of the cost of
    their builders, which sort arguments through IRDL for every case."""
    case = Case(module, dc.name)
    try:
        block = Block(arg_types=dc.operand_types)
        func.FuncOp.create(
            properties={"sym_name": _KERNEL_NAME, "function_type": _function_type(tuple(dc.operand_types))},
            regions=[Region(block)],
        )
        op = dc.build(block.args)
        if not isinstance(op, PtxInstruction):
            return case, f"{case.key}: build returned {type(op).__name__}, not a PtxInstruction"
        block.add_ops([op, func.ReturnOp.create()])
    except Exception as e:
        return case, f"{case.key}: build raised {_short_exc(e)}"
    case.op = op
    try:
        _verify(op)
    except (VerifyException, DiagnosticException) as e:
        case.verify_error = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    except Exception as e:
        return case, f"{case.key}: verify raised {_short_exc(e)} (a traceback, not a diagnostic)"
    try:
        case.requirement = op.requirement()
    except Exception as e:
        if case.verify_error is None:
            return case, f"{case.key}: requirement() raised {_short_exc(e)}"
    namer = _Namer()
    try:
        case.line = op.ptx_line(namer)
    except Exception as e:
        return case, f"{case.key}: ptx_line raised {_short_exc(e)}"
    if "\n" in case.line:
        return case, f"{case.key}: ptx_line spans several lines: {case.line!r}"
    case.registers = dict(namer.counts)
    return case, None


def collect(modules: Iterable[str] | None = None) -> Collection:
    """Build the differential cases of every ptx op module (``tests/ptx_cases/<module>.py``)."""
    out = Collection()
    for module in modules if modules is not None else ptx_op_modules():
        gen = case_generator(module, out)
        if gen is None:
            continue
        try:
            dcs = list(gen())
        except Exception as e:
            out.harness_errors.append(f"{module}: differential_cases() raised {_short_exc(e)}")
            continue
        add_cases(out, module, dcs)
    return out


def add_cases(out: Collection, module: str, dcs: Iterable[DiffCase]) -> None:
    """Build ``dcs`` as the cases of ``module``; failures become harness errors."""
    out.modules.append(module)
    seen = {c.key for c in out.cases}
    for dc in dcs:
        case, err = build_case(module, dc)
        if err is not None:
            out.harness_errors.append(err)
            continue
        if case.key in seen:
            out.harness_errors.append(f"{case.key}: duplicate case name")
            continue
        seen.add(case.key)
        out.cases.append(case)


# endregion

# region Assembling


@dataclass(frozen=True)
class Probe:
    """One PTX line to assemble for one target at one ``.version``."""

    line: str
    registers: tuple[tuple[tuple[str, str], int], ...]
    target: str
    version: tuple[int, int]


@dataclass(frozen=True)
class PtxasVerdict:
    accepted: bool
    message: str = ""  # ptxas's first error for this line


def kernel(
    lines: Sequence[str],
    registers: dict[tuple[str, str], int],
    target: str,
    version: tuple[int, int],
    per_entry: int | None = None,
) -> tuple[str, list[int]]:
    """The PTX module text and the 1-based line number of each of ``lines``: one
    ``.entry`` holding them all, or with ``per_entry`` one ``.entry`` per that many
    (each declaring ``registers``)."""
    out = [f".version {format_ptx_version(version)}", f".target {target}", ".address_size 64", ""]
    regs = [f"\t.reg {decl} {prefix}<{n + 1}>;" for (decl, prefix), n in sorted(registers.items())]
    numbers: list[int] = []
    step = per_entry or max(1, len(lines))
    for k, at in enumerate(range(0, max(1, len(lines)), step)):
        if k:
            out.append("")
        out += [f".visible .entry k{k or ''}()", "{", *regs]
        for line in lines[at : at + step]:
            out.append(f"\t{line}")
            numbers.append(len(out))
        out += ["\tret;", "}"]
    return "\n".join([*out, ""]), numbers


# ptxas's per-line messages; `fatal` (a parse error that stops ptxas) counts as an error.
_DIAG_RE = re.compile(r"ptxas[^,\n]*, line (\d+); (error|fatal)\s*:\s*(.*)")


def ptxas_errors(log: str) -> list[tuple[int, str]]:
    """(line, message) of each error and fatal error in ptxas's log."""
    return [(int(m.group(1)), m.group(3).strip()) for m in _DIAG_RE.finditer(log)]


def probe_for(case: Case, target: str, version: tuple[int, int]) -> Probe:
    return Probe(case.line, case.register_key, target, version)


def assemble_one(probe: Probe) -> PtxasVerdict:
    """ptxas's verdict on ``probe`` alone in its own kernel."""
    text, _ = kernel([probe.line], dict(probe.registers), probe.target, probe.version)
    try:
        assemble(text, probe.target)
        return PtxasVerdict(True)
    except PtxasError as e:
        errors = ptxas_errors(e.log)
        msg = errors[0][1] if errors else e.log.strip().splitlines()[0] if e.log.strip() else "rejected"
        return PtxasVerdict(False, msg)


def _assemble_batch(probes: list[Probe], stats: dict[str, int]) -> dict[Probe, PtxasVerdict]:
    """Verdicts for probes of one (target, version): batched, per-line errors, retried."""
    out: dict[Probe, PtxasVerdict] = {}
    pending = list(probes)
    while pending:
        registers: dict[tuple[str, str], int] = defaultdict(int)
        for p in pending:
            for cls, n in p.registers:
                registers[cls] = max(registers[cls], n)
        target, version = pending[0].target, pending[0].version
        text, numbers = kernel([p.line for p in pending], registers, target, version, BATCH_ENTRY_LINES)
        stats["assemblies"] += 1
        try:
            assemble(text, target, extra_options=BATCH_OPTIONS)
        except PtxasError as e:
            by_line: dict[int, str] = {}
            for line, message in ptxas_errors(e.log):
                by_line.setdefault(line, message)
            rejected = [i for i, n in enumerate(numbers) if n in by_line]
            if not rejected:
                # The failure names no instruction line: one kernel per probe.
                stats["fallbacks"] += 1
                for p in pending:
                    stats["assemblies"] += 1
                    out[p] = assemble_one(p)
                return out
            for i in rejected:
                out[pending[i]] = PtxasVerdict(False, by_line[numbers[i]])
            keep = set(rejected)
            pending = [p for i, p in enumerate(pending) if i not in keep]
            continue
        for p in pending:
            out[p] = PtxasVerdict(True)
        pending = []
    return out


def run_probes(probes: Iterable[Probe], stats: dict[str, int]) -> dict[Probe, PtxasVerdict]:
    groups: dict[tuple[str, tuple[int, int]], list[Probe]] = defaultdict(list)
    for p in dict.fromkeys(probes):
        groups[(p.target, p.version)].append(p)
    out: dict[Probe, PtxasVerdict] = {}
    one_by_one = os.environ.get("BULKRED_DIFF_ONE_BY_ONE") == "1"
    for _, group in sorted(groups.items()):
        if one_by_one:
            for p in group:
                stats["assemblies"] += 1
                out[p] = assemble_one(p)
            continue
        for i in range(0, len(group), BATCH_SIZE):
            out.update(_assemble_batch(group[i : i + BATCH_SIZE], stats))
    return out


# endregion

# region Comparing


def previous_version(v: tuple[int, int]) -> tuple[int, int] | None:
    older = [p for p in PTX_VERSIONS if p < v]
    return older[-1] if older else None


@dataclass
class Outcome:
    """Both verdicts for one (case, target)."""

    case: Case
    target: str
    ours: bool
    our_reason: str  # the verifier's or the target check's message when we reject
    declared: tuple[int, int]  # the .version of the first ptxas run
    at_declared: PtxasVerdict
    at_max: PtxasVerdict | None  # None: not tried, ptxas accepts the declared version
    below: tuple[int, int] | None = None  # the version just below the declared one, if tried
    at_below: PtxasVerdict | None = None

    @property
    def kind(self) -> str | None:
        """None when the verdicts agree, else the disagreement kind."""
        if self.at_declared.accepted:
            if not self.ours:
                return "accepted"
            return "version-high" if self.at_below is not None and self.at_below.accepted else None
        assert self.at_max is not None  # tried wherever the declared version is rejected
        if not self.ours:
            return "accepted" if self.at_max.accepted else None
        return "version" if self.at_max.accepted else "rejected"

    def describe(self) -> str:
        ours = "valid" if self.ours else f"invalid ({self.our_reason})"

        def v(verdict: PtxasVerdict) -> str:
            return "accepts" if verdict.accepted else f"rejects ({verdict.message})"

        text = (
            f"{self.case.key} on {self.target}: ours {ours}; ptxas at .version "
            f"{format_ptx_version(self.declared)} {v(self.at_declared)}"
        )
        if self.at_max is not None:
            text += f", at {format_ptx_version(MAX_PTX_VERSION)} {v(self.at_max)}"
        if self.below is not None and self.at_below is not None:
            text += f", at {format_ptx_version(self.below)} {v(self.at_below)}"
        return f"{text}; line `{self.case.line}`"


def our_verdict(case: Case, target: Target) -> tuple[bool, str]:
    if case.verify_error is not None:
        return False, case.verify_error
    assert case.op is not None and case.requirement is not None
    try:
        check_target(case.op.name, case.requirement, target)
    except TargetError as e:
        return False, str(e)
    return True, ""


def declared_version(case: Case, target: Target) -> tuple[int, int]:
    req = case.requirement.ptx if case.requirement is not None else (0, 0)
    return min(max(target.min_ptx, req), MAX_PTX_VERSION)


@dataclass
class Report:
    collection: Collection
    outcomes: list[Outcome]
    assemblies: int
    seconds: float
    fallbacks: int = 0  # batches that fell back to one kernel per probe

    @property
    def disagreements(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind is not None]

    def per_module(self) -> dict[str, dict[str, int]]:
        rows: dict[str, dict[str, int]] = {
            m: defaultdict(int) for m in self.collection.modules
        }
        for o in self.outcomes:
            r = rows[o.case.module]
            r["checked"] += 1
            if o.kind is not None:
                r["disagree"] += 1
            elif o.ours:
                r["both valid"] += 1
            else:
                r["both invalid"] += 1
        for c in self.collection.cases:
            rows[c.module]["cases"] += 1
        return rows

    def summary(self) -> str:
        lines = [
            f"differential test: {len(self.outcomes)} combinations checked "
            f"({len(self.collection.cases)} cases x {len(TARGETS)} targets: {', '.join(TARGETS)}), "
            f"{len(self.disagreements)} disagreements, {self.assemblies} ptxas runs "
            f"({self.fallbacks} batches fell back to one kernel per case), {self.seconds:.1f} s"
        ]
        for m, r in self.per_module().items():
            lines.append(
                f"  {m}: {r['cases']} cases, {r['checked']} checked, {r['both valid']} both valid, "
                f"{r['both invalid']} both invalid, {r['disagree']} disagreements"
            )
        for s in self.collection.skipped:
            lines.append(f"  skipped {s}")
        for e in self.collection.harness_errors:
            lines.append(f"  HARNESS ERROR {e}")
        return "\n".join(lines)


def run(modules: Iterable[str] | None = None) -> Report:
    """Collect the cases of ``modules`` (default: every ptx op module) and check them."""
    start = time.monotonic()
    with gc_paused():  # as in check
        return check(collect(modules), start)


def check(collection: Collection, start: float | None = None) -> Report:
    """Both verdicts for every case of ``collection`` on every target.

    Python's cyclic garbage collector is paused meanwhile (``gc_paused``, as the compiler
    does): the run makes some 100,000 probes and 50,000 outcomes, and with the collector on
    its full passes over them and the cases' IR took about a second."""
    with gc_paused():
        return _check(collection, start)


def _check(collection: Collection, start: float | None) -> Report:
    start = time.monotonic() if start is None else start
    targets = [Target.parse(t) for t in TARGETS]
    stats: dict[str, int] = defaultdict(int)
    # Round 1: every (case, target) at its declared version.
    plans = []
    for case in collection.cases:
        for t in targets:
            ours, why = our_verdict(case, t)
            v = declared_version(case, t)
            plans.append((case, t, ours, why, v, probe_for(case, t.name, v)))
    verdicts = run_probes([p[-1] for p in plans], stats)
    # Round 2: the highest version where the declared one is rejected (a wrong version,
    # or a wrong form), the version below where we accept and ptxas does at the declared
    # one (whether we declare more than needed); no other verdict reads either.
    rounds = []
    for case, t, ours, why, v, p_decl in plans:
        p_max = probe_for(case, t.name, MAX_PTX_VERSION) if not verdicts[p_decl].accepted else None
        below = previous_version(v) if ours and verdicts[p_decl].accepted else None
        if below is not None and below < t.min_ptx:
            below = None
        p_below = probe_for(case, t.name, below) if below is not None else None
        rounds.append((case, t, ours, why, v, p_decl, p_max, below, p_below))
    verdicts.update(
        run_probes([p for r in rounds for p in r[6:9:2] if p is not None and p not in verdicts], stats)
    )
    outcomes = [
        Outcome(
            case, t.name, ours, why, v, verdicts[p_decl], verdicts[p_max] if p_max is not None else None, below,
            verdicts[p_below] if p_below is not None else None,
        )
        for case, t, ours, why, v, p_decl, p_max, below, p_below in rounds
    ]
    return Report(
        collection, outcomes, stats["assemblies"], time.monotonic() - start, stats["fallbacks"]
    )


# endregion

# region The expected-disagreement table in docs/differential.md

TABLE_BEGIN = "<!-- expected-disagreements:begin -->"
TABLE_END = "<!-- expected-disagreements:end -->"
SUMMARY_BEGIN = "<!-- summary:begin -->"
SUMMARY_END = "<!-- summary:end -->"
KINDS = ("accepted", "rejected", "version", "version-high")


@dataclass(frozen=True)
class Expected:
    """One row of the table: a case pattern (fnmatch), targets, kind, and why."""

    pattern: str
    targets: tuple[str, ...]
    kind: str
    reason: str

    def matches(self, o: Outcome) -> bool:
        return (
            fnmatch.fnmatchcase(o.case.key, self.pattern)
            and o.target in self.targets
            and o.kind == self.kind
        )


def _between(text: str, begin: str, end: str) -> str:
    try:
        return text.split(begin, 1)[1].split(end, 1)[0]
    except IndexError:
        raise ValueError(f"{DOC.name}: markers {begin} ... {end} not found") from None


def _cell(text: str) -> str:
    return text.strip().strip("`").strip()


def read_expected(doc: Path = DOC) -> list[Expected]:
    """Parse the table ``| case | targets | kind | reason |`` between the markers."""
    rows = []
    for raw in _between(doc.read_text(), TABLE_BEGIN, TABLE_END).splitlines():
        raw = raw.strip()
        if not raw.startswith("|"):
            continue
        cells = [c for c in raw.strip("|").split("|")]
        if len(cells) < 4:
            raise ValueError(f"{doc.name}: table row needs 4 cells: {raw}")
        pattern, targets, kind = (_cell(c) for c in cells[:3])
        if pattern.lower() == "case" or set(pattern) <= set("-: "):
            continue  # header or separator
        if kind not in KINDS:
            raise ValueError(f"{doc.name}: kind '{kind}' is not one of {', '.join(KINDS)}: {raw}")
        ts = tuple(_cell(t) for t in targets.split(","))
        if ts == ("*",):
            ts = TARGETS
        for t in ts:
            if t not in TARGETS:
                raise ValueError(f"{doc.name}: target '{t}' is not one of {', '.join(TARGETS)}: {raw}")
        rows.append(Expected(pattern, ts, kind, "|".join(cells[3:]).strip()))
    return rows


def compare(report: Report, expected: list[Expected]) -> tuple[list[Outcome], list[Expected]]:
    """(disagreements no row lists, rows that match no disagreement)."""
    unlisted = [o for o in report.disagreements if not any(e.matches(o) for e in expected)]
    stale = [e for e in expected if not any(e.matches(o) for o in report.disagreements)]
    return unlisted, stale


def summary_markdown(report: Report, unlisted: int) -> str:
    lines = [
        "",
        f"Last run: **{len(report.outcomes)} combinations checked** "
        f"({len(report.collection.cases)} cases x {len(TARGETS)} targets: {', '.join(TARGETS)}), "
        f"{len(report.disagreements)} disagreements ({unlisted} not in the table), "
        f"{report.assemblies} ptxas runs.",
        "",
        "| module | cases | checked | both valid | both invalid | disagreements |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m, r in report.per_module().items():
        lines.append(
            f"| `{m}` | {r['cases']} | {r['checked']} | {r['both valid']} | "
            f"{r['both invalid']} | {r['disagree']} |"
        )
    if report.collection.skipped:
        lines += ["", "Skipped: " + "; ".join(report.collection.skipped) + "."]
    return "\n".join(lines) + "\n"


def write_doc_summary(report: Report, unlisted: int, doc: Path = DOC) -> None:
    text = doc.read_text()
    _between(text, SUMMARY_BEGIN, SUMMARY_END)
    head, rest = text.split(SUMMARY_BEGIN, 1)
    _, tail = rest.split(SUMMARY_END, 1)
    doc.write_text(head + SUMMARY_BEGIN + "\n" + summary_markdown(report, unlisted) + SUMMARY_END + tail)


# endregion


def main(argv: Sequence[str]) -> int:
    report = run()
    print(report.summary())
    try:
        unlisted, stale = compare(report, read_expected())
    except (OSError, ValueError) as e:
        print(f"cannot read the expected-disagreement table: {e}")
        unlisted, stale = report.disagreements, []
    for o in unlisted:
        print(f"UNLISTED [{o.kind}] {o.describe()}")
    for e in stale:
        print(f"STALE row: {e.pattern} {','.join(e.targets)} {e.kind}")
    if "--write-doc" in argv:
        write_doc_summary(report, len(unlisted))
        print(f"wrote the summary into {DOC}")
    return 1 if (unlisted or stale or report.collection.harness_errors) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
