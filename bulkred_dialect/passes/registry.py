"""The variant registry's machinery: :class:`Variant` (one lowering of an op, its priority
and its predicates), :class:`Registry` (variants per op, highest priority first) and
the decision table. Which variants exist is the table in ``passes/variants/__init__.py``;
this module knows none of them.

Modelled on TVM TIRx's tile-primitive dispatcher. Selection evaluates every predicate
of every candidate (all reasons are collected), then takes the highest-priority
variant whose predicates all hold. Two variants of one op may not share a priority, so
the choice never depends on the order of the table. An op with a ``variant`` string
property (``bulkred.reduce ... variant "local"``) forces that variant: unknown names
and failing predicates are located errors that carry the table.

Example::

    LOCAL = Variant(
        "bulkred.reduce", "local", priority=10,
        predicates=(Predicate("exec_scope", exec_scope_in(ExecScope.THREAD), expected="thread"), ...),
        lower=lower_local,
    )
    registry = Registry.from_variants([LOCAL, ...])
    registry.select(op, target).table()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter

from bulkred_dialect.diagnostics import LocatedError, format_location
from bulkred_dialect.ops.target import Target
from bulkred_dialect.passes.predicates import Predicate, Verdict

LowerFn = Callable[[Operation, PatternRewriter, Target], None]
"""A lowering: replaces ``op`` (through the rewriter) by its lowered form for the target."""


class DispatchError(Exception):
    """A registration mistake (raised when a registry is built, never for user input)."""


@dataclass(frozen=True)
class Variant:
    """One lowering of ``op_name``: it applies where all its predicates hold, and the
    highest priority among those that apply is chosen."""

    op_name: str
    name: str
    priority: int
    predicates: tuple[Predicate, ...]
    lower: LowerFn

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicates", tuple(self.predicates))

    def evaluate(self, op: Operation, target: Target) -> tuple[Verdict, ...]:
        return tuple(p.evaluate(op, target) for p in self.predicates)


@dataclass(frozen=True)
class Candidate:
    """A variant with the verdicts of all its predicates."""

    variant: Variant
    verdicts: tuple[Verdict, ...]

    @property
    def applies(self) -> bool:
        return all(v.ok for v in self.verdicts)

    @property
    def applies_forced(self) -> bool:
        """Whether it applies when forced by ``variant``: its preferences not asked."""
        return all(v.ok for v, p in zip(self.verdicts, self.variant.predicates) if not p.preference)

    @property
    def failed(self) -> list[str]:
        return [v.predicate for v in self.verdicts if not v.ok]


@dataclass(frozen=True)
class Selection:
    """The outcome of dispatching one op: every candidate, and the one chosen (or None)."""

    op: Operation
    target: Target
    candidates: tuple[Candidate, ...]
    chosen: Candidate | None
    forced: str | None = None

    def table(self) -> str:
        return format_table(self)


def _outcome(sel: Selection, c: Candidate) -> str:
    if sel.chosen is c:
        return "chosen (forced by 'variant')" if sel.forced else "chosen"
    if not c.applies:
        return f"rejected: {', '.join(c.failed)}"
    if sel.forced:
        return "applies, not forced"
    return "applies, lower priority"


SCOPE_PREDICATE = "exec_scope"
"""The predicate that says which execution scope a variant lowers: the table shows the
variants of other scopes on one line, not predicate by predicate."""


def _other_scope(c: Candidate) -> bool:
    return any(d.predicate == SCOPE_PREDICATE and not d.ok for d in c.verdicts)


def format_table(sel: Selection) -> str:
    """The decision table: a header naming op, location and target; one row per
    predicate of each candidate of the op's scope (highest priority first); one outcome
    line per such candidate; the names of the variants that lower other scopes; and the chosen
    variant."""
    header = ("variant", "priority", "predicate", "verdict", "expected", "actual")
    shown = [c for c in sel.candidates if not _other_scope(c) or c is sel.chosen]
    others = [c for c in sel.candidates if c not in shown]
    rows: list[tuple[str, ...]] = []
    for c in shown:
        v = c.variant
        if not c.verdicts:
            rows.append((v.name, str(v.priority), "-", "ok", "-", "-"))
        for d in c.verdicts:
            rows.append((v.name, str(v.priority), d.predicate, "ok" if d.ok else "FAIL", d.expected, d.actual))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

    def line(r: tuple[str, ...]) -> str:
        cells = [r[i].ljust(widths[i]) for i in range(len(widths))] + [r[-1]]
        return "  " + "  ".join(cells)

    name_w = max(len(c.variant.name) for c in shown) if shown else 0
    out = [f"dispatch of '{sel.op.name}' at {format_location(sel.op)} on {sel.target.name}"]
    out.append(line(header))
    out.extend(line(r) for r in rows)
    for c in shown:
        out.append(f"  {c.variant.name.ljust(name_w)}  priority {c.variant.priority}: {_outcome(sel, c)}")
    if sel.forced is not None:
        known = any(c.variant.name == sel.forced for c in sel.candidates)
        out.append(f"forced by 'variant': {sel.forced}{'' if known else ' (not a known variant)'}")
    if others:
        scope = next((d.actual for d in others[0].verdicts if d.predicate == SCOPE_PREDICATE), "?")
        names = ", ".join(f"{c.variant.name} ({c.variant.priority})" for c in others)
        out.append(f"  not for scope {scope}: {names}")
    out.append(f"chosen: {sel.chosen.variant.name if sel.chosen else 'none'}")
    return "\n".join(out)


@dataclass
class Registry:
    """Variants per op name, kept sorted by descending priority."""

    variants: dict[str, list[Variant]] = field(default_factory=dict)

    @staticmethod
    def from_variants(variants: Iterable[Variant]) -> Registry:
        """A registry of ``variants`` (a :class:`DispatchError` for two of one op that
        share a name or a priority)."""
        registry = Registry()
        for v in variants:
            registry.add(v)
        return registry

    def add(self, variant: Variant) -> Variant:
        """Add ``variant``; a :class:`DispatchError` when its op already has a variant of
        that name or priority, or when it repeats a predicate name."""
        op_name, name, priority = variant.op_name, variant.name, variant.priority
        existing = self.variants.setdefault(op_name, [])
        for v in existing:
            if v.name == name:
                raise DispatchError(f"variant '{name}' of '{op_name}' is already registered")
            if v.priority == priority:
                raise DispatchError(
                    f"variant '{name}' of '{op_name}' has priority {priority}, already taken by "
                    f"variant '{v.name}' (priorities of one op must differ)"
                )
        names = [p.name for p in variant.predicates]
        if len(set(names)) != len(names):
            raise DispatchError(f"variant '{name}' of '{op_name}' repeats a predicate name: {names}")
        existing.append(variant)
        existing.sort(key=lambda v: -v.priority)
        return variant

    def register(
        self,
        op_name: str,
        name: str,
        priority: int,
        predicates: Sequence[Predicate],
        lower: LowerFn,
    ) -> Variant:
        """Add the variant made of these fields (:meth:`add`)."""
        return self.add(Variant(op_name, name, priority, tuple(predicates), lower))

    def of(self, op_name: str) -> list[Variant]:
        return list(self.variants.get(op_name, []))

    def evaluate(self, op: Operation, target: Target) -> Selection:
        """Evaluate every predicate of every variant of ``op``; choose, but never raise."""
        candidates = tuple(Candidate(v, v.evaluate(op, target)) for v in self.of(op.name))
        forced = _forced_name(op)
        if forced is not None:
            chosen = next((c for c in candidates if c.variant.name == forced and c.applies_forced), None)
        else:
            chosen = next((c for c in candidates if c.applies), None)
        return Selection(op, target, candidates, chosen, forced)

    def choose(self, op: Operation, target: Target) -> Variant:
        """The variant :meth:`select` chooses, found without the table: variants in
        priority order (only the forced one when ``variant`` is set), each predicate
        until one fails. When none applies, :meth:`select` raises its located error
        with the whole table."""
        forced = _forced_name(op)
        for v in self.variants.get(op.name, ()):
            if forced is not None and v.name != forced:
                continue
            if all(p.fn(op, target)[0] for p in v.predicates if forced is None or not p.preference):
                return v
        sel = self.select(op, target)
        assert sel.chosen is not None  # select raises when nothing applies
        return sel.chosen.variant

    def select(self, op: Operation, target: Target) -> Selection:
        """The selection for ``op``; a :class:`LocatedError` when no variant (or not
        the forced one) applies."""
        sel = self.evaluate(op, target)
        if sel.chosen is not None:
            return sel
        known = [c.variant.name for c in sel.candidates]
        if not known:
            raise LocatedError(op, "has no registered lowering variant")
        if sel.forced is not None:
            if sel.forced not in known:
                raise LocatedError(
                    op, f"'variant' '{sel.forced}' is not a known variant (known: {', '.join(known)})"
                )
            c = next(c for c in sel.candidates if c.variant.name == sel.forced)
            reasons = "; ".join(
                f"{d.predicate} (expected {d.expected}, got {d.actual})"
                for d, p in zip(c.verdicts, c.variant.predicates) if not (d.ok or p.preference)
            )
            raise LocatedError(
                op, f"forced 'variant' '{sel.forced}' does not apply: {reasons}\n{sel.table()}"
            )
        raise LocatedError(op, f"no lowering variant applies on {target.name}\n{sel.table()}")

    def register_variant(
        self,
        op_name: str,
        name: str,
        priority: int,
        predicates: Sequence[Predicate] = (),
        lower: LowerFn | None = None,
    ) -> Callable[[LowerFn], LowerFn] | Variant:
        """Register directly (``lower=`` given) or as a decorator of the lowering."""
        if lower is not None:
            return self.register(op_name, name, priority, predicates, lower)

        def decorate(fn: LowerFn) -> LowerFn:
            self.register(op_name, name, priority, predicates, fn)
            return fn

        return decorate


def _forced_name(op: Operation) -> str | None:
    v = op.properties.get("variant")
    return v.data if isinstance(v, StringAttr) else None
