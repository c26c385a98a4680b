"""``op_definition``: xDSL's ``irdl_op_definition`` with a cheaper verifier for the
common form.

Every op of the two dialects is declared with it. It is ``irdl_op_definition``, and
then, when the op's definition is of the fixed form -- no regions, no segment-size
options, and at most one variadic or optional definition among the operands, one
among the results and one among the successors, so that the counts alone say which
value is which -- the op's ``verify_`` checks the definition directly: the operand,
result and successor counts, each operand's and result's constraint, the properties
(required ones present, no unknown one, each constraint), the attributes, and the
traits, in IRDL's order and with one constraint context, as ``OpDef.verify`` does.
When any of these fails, IRDL's own ``OpDef.verify`` runs, so the error is IRDL's,
word for word. The op's own verifier runs after, as before.

IRDL's general check walks every kind of construct for variadic sizes and reads
each operand through a descriptor: about two thirds of the time to verify a ptx op,
and verification is done at least twice per compilation (docs/compile_speed.md).
``tests/test_op_definition.py`` checks that both accept and refuse the same ops.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from xdsl.ir import Attribute, ErasedSSAValue, Operation, OpTraits
from xdsl.irdl import (
    AnyAttr,
    AttrConstraint,
    BeforeVariadicSingleAccessor,
    EqIntConstraint,
    IRDLOperation,
    OpDef,
    OptAttributeDef,
    OptionalDef,
    OptPropertyDef,
    ParsePropInAttrDict,
    RangeConstraint,
    RangeLengthConstraint,
    RangeOf,
    VariadicDef,
    VarIRConstruct,
    VerificationContext,
    irdl_op_definition,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator, NoTerminator, OpTrait
from xdsl.utils.exceptions import VerifyException

OpT = TypeVar("OpT", bound=IRDLOperation)


def _variadic(defs: Sequence[tuple[str, Any]]) -> tuple[int, bool] | None:
    """(index, optional) of the one variadic definition of ``defs``, (-1, False) when
    there is none, None when there are two or more (IRDL's same-size rule then)."""
    found = [(i, isinstance(d, OptionalDef)) for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
    if len(found) > 1:
        return None
    return found[0] if found else (-1, False)


def is_fixed_form(op_def: OpDef) -> bool:
    """No regions and no options but ``ParsePropInAttrDict`` (how the assembly format
    reads properties; nothing IRDL's check reads); at most one variadic (or optional)
    operand, one result and one successor definition."""
    return (
        not op_def.regions
        and all(isinstance(o, ParsePropInAttrDict) for o in op_def.options)
        and all(_variadic(defs) is not None for defs in (op_def.operands, op_def.results, op_def.successors))
    )


def single_counts(op_def: OpDef) -> tuple[int, int] | None:
    """(operands, results) of a definition made only of single operands and results
    (no variadic or optional one, no regions, successors or options), else None:
    the form ``PtxInstruction``'s builder builds without IRDL's argument sorting."""
    if op_def.regions or op_def.successors or op_def.options:
        return None
    if _variadic(op_def.operands) != (-1, False) or _variadic(op_def.results) != (-1, False):
        return None
    return len(op_def.operands), len(op_def.results)


def _split(count: int, n_defs: int, variadic: tuple[int, bool]) -> int | None:
    """How many of ``count`` values the variadic definition takes (0 without one), or
    None when ``count`` does not fit the definitions."""
    index, optional = variadic
    if index < 0:
        return 0 if count == n_defs else None
    extra = count - n_defs + 1
    if extra < 0 or (optional and extra > 1):
        return None
    return extra


def _verify_range(
    constrs: tuple[RangeConstraint, ...], index: int, extra: int, types: Sequence[Attribute], context: VerificationContext
) -> None:
    """Each definition's constraint on its values' types, as IRDL passes them."""
    at = 0
    for i, constr in enumerate(constrs):
        if i == index:
            constr.verify(tuple(types[at : at + extra]), context)
            at += extra
        else:
            constr.verify((types[at],), context)
            at += 1


def _named_ok(
    given: Mapping[str, Attribute],
    defs: tuple[tuple[str, AttrConstraint, bool], ...],
    context: VerificationContext,
) -> bool:
    """Each defined property (or attribute) present unless optional, and verified
    (a failing constraint raises)."""
    for name, constr, optional in defs:
        a = given.get(name)
        if a is None:
            if optional and name not in given:
                continue
            return False
        constr.verify(a, context)
    return True


def _single_constraint(constr: RangeConstraint) -> AttrConstraint | None:
    """The constraint on the one value of a single definition's range
    (``RangeLengthConstraint(RangeOf(c), EqIntConstraint(1))``, as IRDL declares an
    ``operand_def``/``result_def``): ``c``, whose verdict on ``t`` is the range's on
    ``(t,)``; None for any other range constraint."""
    if (
        isinstance(constr, RangeLengthConstraint)
        and isinstance(constr.constraint, RangeOf)
        and isinstance(constr.length, EqIntConstraint)
        and constr.length.value == 1
    ):
        return constr.constraint.constr
    return None


def _checks_something(trait: Any) -> bool:
    """Whether ``trait.verify`` is more than ``OpTrait.verify``, which checks nothing."""
    return type(trait).verify is not OpTrait.verify


def fixed_form_check(op_def: OpDef) -> Callable[[Operation], bool]:
    """A function that says whether ``op_def.verify(op)`` would pass, for a definition
    of the fixed form (:func:`is_fixed_form`). True means it would; False means it
    may not (the caller then runs ``op_def.verify`` for its error)."""
    operands = tuple(d.constr for _, d in op_def.operands)
    results = tuple(d.constr for _, d in op_def.results)
    operand_var, result_var, successor_var = (
        _variadic(op_def.operands),
        _variadic(op_def.results),
        _variadic(op_def.successors),
    )
    assert operand_var is not None and result_var is not None and successor_var is not None
    props = tuple((name, d.constr, isinstance(d, OptPropertyDef)) for name, d in op_def.properties.items())
    prop_names = frozenset(op_def.properties)
    attrs = tuple((name, d.constr, isinstance(d, OptAttributeDef)) for name, d in op_def.attributes.items())
    traits = tuple(t for t in op_def.traits if _checks_something(t))
    n_operands, n_results, n_successors = len(operands), len(results), len(op_def.successors)
    simple = operand_var[0] < 0 and result_var[0] < 0
    # The simple form's checks, each single value's own constraint (IRDL's range of one
    # checks its length, then that constraint); AnyAttr (checks nothing) left out.
    singles = [_single_constraint(c) for c in operands + results]
    direct = simple and None not in singles
    operand_checks = tuple((i, c) for i, c in enumerate(singles[:n_operands]) if not isinstance(c, AnyAttr))
    result_checks = tuple((i, c) for i, c in enumerate(singles[n_operands:]) if not isinstance(c, AnyAttr))

    def check(op: Operation) -> bool:
        # the op's own operand and successor tuples (xDSL 0.74's; op.operands and
        # op.successors make a view per call), as structure_passes reads them
        values = op._operands  # noqa: SLF001
        if op.regions or _split(len(op._successors), n_successors, successor_var) is None:  # noqa: SLF001
            return False
        context = VerificationContext()
        try:
            if direct:
                res = op.results
                if len(values) != n_operands or len(res) != n_results:
                    return False
                for i, constr in operand_checks:
                    constr.verify(values[i].type, context)  # type: ignore[union-attr]
                for i, constr in result_checks:
                    constr.verify(res[i].type, context)  # type: ignore[union-attr]
            elif simple:
                types = op.result_types
                if len(values) != n_operands or len(types) != n_results:
                    return False
                for constr, value in zip(operands, values):
                    constr.verify((value.type,), context)
                for constr, t in zip(results, types):
                    constr.verify((t,), context)
            else:
                types = op.result_types
                extra_in = _split(len(values), n_operands, operand_var)
                extra_out = _split(len(types), n_results, result_var)
                if extra_in is None or extra_out is None:
                    return False
                _verify_range(operands, operand_var[0], extra_in, [v.type for v in values], context)
                _verify_range(results, result_var[0], extra_out, types, context)
            if not prop_names.issuperset(op.properties) or (props and not _named_ok(op.properties, props, context)):
                return False
            if attrs and not _named_ok(op.attributes, attrs, context):
                return False
            for trait in traits:
                trait.verify(op)
        except VerifyException:
            return False
        return True

    return check


_ITEM = tuple.__getitem__


@dataclasses.dataclass(frozen=True)
class SingleOperandAccessor(BeforeVariadicSingleAccessor):
    """IRDL's accessor of a single operand before any variadic one (``op.lhs``), read
    as one index of the op's operand tuple. IRDL's goes through the op's operand view
    and the definition's construct (about seven Python calls per read); the lowering,
    the verifiers and the PTX printer read operands this way for every op."""

    def __get__(self, obj: Operation, objtype: Any = None) -> Any:
        return _ITEM(obj._operands, self.idx)  # noqa: SLF001 (xDSL 0.74's operand tuple, as OpOperands reads it)


@dataclasses.dataclass(frozen=True)
class SingleResultAccessor(BeforeVariadicSingleAccessor):
    """IRDL's accessor of a single result before any variadic one (``op.result``), read
    as one index of ``op.results``."""

    def __get__(self, obj: Operation, objtype: Any = None) -> Any:
        return _ITEM(obj.results, self.idx)


_FAST_ACCESSORS = {VarIRConstruct.OPERAND: SingleOperandAccessor, VarIRConstruct.RESULT: SingleResultAccessor}


def _fast_accessors(cls: type[IRDLOperation]) -> None:
    """Replace ``cls``'s IRDL accessors of single operands and results before any
    variadic one by :class:`SingleOperandAccessor` / :class:`SingleResultAccessor`
    (the same construct and index; the declarative format's ``index`` unchanged)."""
    for name, accessor in list(cls.__dict__.items()):
        if type(accessor) is BeforeVariadicSingleAccessor and accessor.construct in _FAST_ACCESSORS:
            setattr(cls, name, _FAST_ACCESSORS[accessor.construct](accessor.construct, accessor.idx))


def op_definition(cls: type[OpT]) -> type[OpT]:
    """``irdl_op_definition``, with the cheaper check of the fixed form (module doc) and
    cheaper accessors of single operands and results (:func:`_fast_accessors`)."""
    custom = getattr(cls, "verify_")  # what irdl_op_definition runs after the definition
    cls = irdl_op_definition(cls)
    _fast_accessors(cls)
    op_def = cls.get_irdl_definition()
    if not is_fixed_form(op_def):
        return cls
    check = fixed_form_check(op_def)

    def verify_(self: IRDLOperation) -> None:
        if not check(self):
            op_def.verify(self)
        custom(self)

    cls.verify_ = verify_  # type: ignore[method-assign]
    cls._fixed_form_check = staticmethod(check)  # type: ignore[attr-defined]
    return cls


_IRDL_VERIFY = "get_accessors_from_op_def.<locals>.verify_"  # the verify_ irdl_op_definition gives a class


@functools.cache
def upstream_check(cls: type[Operation]) -> Callable[[Operation], bool] | None:
    """For an op class of xDSL's own dialects (``arith.constant``, ``memref.load`` ...)
    whose definition is of the fixed form, a function that says whether
    ``op.verify(verify_nested_ops=False)`` passes, with :func:`fixed_form_check` in
    place of IRDL's general check; None for any other class (ours already check so).

    It says True only where the op has no successors, no erased operand, is not the
    last op of its block (where ``Operation.verify`` checks terminators), passes the
    fixed-form check, and its class's own verifier (the one ``irdl_op_definition``
    wrapped, found in that wrapper's closure) returns: the cases where ``op.verify``
    does nothing else. Otherwise the caller runs ``op.verify`` itself, which raises its
    own error, word for word. Most of the ops of a lowered kernel are upstream
    constants, loads, stores and index arithmetic (docs/compile_speed.md)."""
    closure = None if hasattr(cls, "_fixed_form_check") else _irdl_closure(cls)
    if closure is None or not is_fixed_form(closure[0]):
        return None
    op_def, custom = closure
    check = fixed_form_check(op_def)

    def passes(op: Operation, last_allowed: bool = False, structure_checked: bool = False) -> bool:
        """``structure_checked``: the caller found :func:`structure_passes` true (no
        successors, no erased operand), which is not asked again."""
        if not structure_checked and (op.successors or any(isinstance(v, ErasedSSAValue) for v in op.operands)):
            return False
        block = op.parent
        if not last_allowed and block is not None and block.last_op is op:
            return False
        if not check(op):
            return False
        if custom is not None:
            try:
                custom(op)
            except Exception:
                return False
        return True

    return passes


def structure_passes(op: Operation) -> bool:
    """Whether the checks ``Operation.verify`` makes before the op's own ``verify_``
    pass (xDSL 0.74): no erased operand; an op with successors is its block's last and
    branches within its region; the last op of a block is a terminator, unless it is
    the only block of a region whose op has ``NoTerminator``. ``Operation.verify``
    counts the region's blocks for every block's last op (a walk of the region: the
    blocks squared for a kernel after ``convert-scf-to-cf``); here the one-block case
    is read from the block's neighbours. Run for every op verified, so it reads the
    op's and block's fields as xDSL's own properties do (``_operands``, ``_successors``,
    ``_last_op``, ``_prev_block``, ``_next_block``; pinned xDSL 0.74)."""
    if any(map(isinstance, op._operands, _ERASED)):  # noqa: SLF001
        return False
    successors = op._successors  # noqa: SLF001
    block = op.parent
    if block is None or block._last_op is not op:  # noqa: SLF001
        return not successors
    region = block.parent
    if region is None:
        return not successors
    if successors and any(s.parent is not region for s in successors):
        return False
    if block._prev_block is None and block._next_block is None:  # noqa: SLF001 (the region's one block)
        owner = region.parent
        return owner is None or owner.has_trait(NoTerminator) or op.has_trait(IsTerminator)
    return op.has_trait(IsTerminator)


_ERASED = itertools.repeat(ErasedSSAValue)  # map(isinstance, values, _ERASED): each value against it


def isolated_passes(op: Operation) -> bool:
    """Whether ``IsolatedFromAbove().verify(op)`` passes: every operand of an op in
    ``op``'s regions (not inside a nested isolated op, which checks itself) is a value
    defined inside ``op``. xDSL asks ``op.is_ancestor`` for each operand's owner (a
    walk up the parents, per operand); here a set of the values defined inside,
    built in one walk. A value defined inside a nested isolated op and used outside
    it is refused here and left to xDSL's check (which takes it). The blocks' ops are
    followed by their links and read from their own tuples (xDSL 0.74's ``_first_op``,
    ``_next_op``, ``_operands``, ``_args``: ``block.ops`` and ``op.operands`` make an
    iterator or view per call), as :func:`structure_passes` reads them."""
    defined: set[int] = set()
    used: list[Any] = []
    extend_used = used.extend
    define = defined.update
    regions = list(op.regions)
    while regions:
        for block in regions.pop().blocks:
            define(map(id, block._args))  # noqa: SLF001
            inner = block._first_op  # noqa: SLF001
            while inner is not None:
                define(map(id, inner.results))
                extend_used(inner._operands)  # noqa: SLF001
                if inner.regions and not inner.has_trait(IsolatedFromAbove):
                    regions.extend(inner.regions)
                inner = inner._next_op  # noqa: SLF001
    return defined.issuperset(map(id, used))


def _irdl_closure(cls: type[Operation]) -> tuple[OpDef, Callable[[Operation], None] | None] | None:
    """(the definition, the class's own verifier) that ``irdl_op_definition``'s
    ``verify_`` wrapper of ``cls`` runs (xDSL 0.74), or None when ``cls`` has no such wrapper."""
    if not (isinstance(cls, type) and issubclass(cls, IRDLOperation)):
        return None
    wrapper = cls.__dict__.get("verify_")
    if getattr(wrapper, "__qualname__", None) != _IRDL_VERIFY or wrapper.__closure__ is None:
        return None
    free = dict(zip(wrapper.__code__.co_freevars, (c.cell_contents for c in wrapper.__closure__)))
    op_def = cls.get_irdl_definition()
    if free.get("op_def") is not op_def:
        return None
    return op_def, free.get("custom_verify")


def _returns(check: Callable[[Operation], object], op: Operation, errors: type[BaseException]) -> bool:
    try:
        check(op)
    except errors:
        return False
    return True


@functools.cache
def op_verifier(cls: type[Operation]) -> Callable[[Operation], bool] | None:
    """A function that says whether ``op.verify(verify_nested_ops=False)`` passes for an
    op of class ``cls`` -- True only where it does; on False the caller runs
    ``op.verify`` for its error, word for word -- or None (the caller runs ``op.verify``).

    Each is :func:`structure_passes` (``Operation.verify``'s own checks) and then:

    * an op of our dialects: its ``verify_`` (the fixed-form check where
      :func:`op_definition` gave it one);
    * an op of xDSL's dialects of the fixed form: :func:`upstream_check`'s;
    * an op of xDSL's dialects with ``IsolatedFromAbove`` (``func.func``,
      ``builtin.module``): its definition's check with that trait's check done by
      :func:`isolated_passes`, then its class's own verifier;
    * any other op of xDSL's dialects: its ``verify_``.

    ``verify_located`` walks a module with it (docs/compile_speed.md)."""
    if not (isinstance(cls, type) and issubclass(cls, IRDLOperation)):
        return None
    if cls.__module__.startswith("bulkred_dialect."):
        own = cls.verify_

        def ours(op: Operation) -> bool:
            return structure_passes(op) and _returns(own, op, VerifyException)

        return ours
    passes = upstream_check(cls)
    if passes is not None:
        fixed = passes

        def upstream_fixed(op: Operation) -> bool:
            return structure_passes(op) and fixed(op, True, True)

        return upstream_fixed
    closure = _irdl_closure(cls)
    if closure is not None and any(isinstance(t, IsolatedFromAbove) for t in closure[0].traits):
        op_def, custom = closure
        rest = tuple(t for t in op_def.traits if not isinstance(t, IsolatedFromAbove))
        reduced = dataclasses.replace(op_def, traits=OpTraits(lambda: rest))

        def isolated(op: Operation) -> bool:
            return (
                structure_passes(op)
                and _returns(reduced.verify, op, Exception)
                and isolated_passes(op)
                and (custom is None or _returns(custom, op, Exception))
            )

        return isolated
    whole = cls.verify_

    def upstream(op: Operation) -> bool:
        return structure_passes(op) and _returns(whole, op, Exception)

    return upstream
