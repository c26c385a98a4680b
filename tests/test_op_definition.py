"""``op_definition``'s cheaper check of a fixed-form definition gives IRDL's verdict
(``OpDef.verify``) on every differential case of the ptx dialect, on every op of
lowered kernels, and on mutants of both (a property dropped, an unknown property
added, an operand of another type, an operand dropped or added, a result of another
type); where it refuses, the error is IRDL's own."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Iterator

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, f32, i1, i32, i64
from xdsl.ir import Block, Operation
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

import differential_harness as h
from bulkred_dialect.backend_ptx.runtime import context
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.ops.op_definition import is_fixed_form
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace
from bulkred_dialect.pipeline import apply_passes, available_passes, build_passes
from ptx_cases import DiffCase
from test_lowering_numerics import tile_module


def _our_op_classes() -> list[type[IRDLOperation]]:
    import bulkred_dialect.ops.ptx  # noqa: F401  (imports every op module)
    import bulkred_dialect.ops.tile  # noqa: F401

    out: dict[str, type[IRDLOperation]] = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("bulkred_dialect.ops"):
            continue
        for cls in vars(mod).values():
            if (
                inspect.isclass(cls)
                and issubclass(cls, IRDLOperation)
                and cls.__module__ == name
                and isinstance(getattr(cls, "name", None), str)  # an op, not an abstract base
            ):
                out[cls.name] = cls
    return list(out.values())


def _irdl_verdict(op: Operation) -> str | None:
    """None when IRDL's definition check passes, else its message."""
    try:
        type(op).get_irdl_definition().verify(op)
    except VerifyException as e:
        return str(e)
    return None


def _with_types() -> list:
    fn = func.FuncOp("k", ([i1, i64, f32, PtrType(StateSpace.SHARED_CTA)], []))
    return list(fn.body.block.args)


def _mutants(op: Operation) -> Iterator[tuple[str, Operation]]:
    """Copies of ``op`` (without regions), each with one thing changed."""
    values = _with_types()
    for name in list(op.properties):
        m = op.clone_without_regions()
        del m.properties[name]
        yield f"without property {name}", m
    m = op.clone_without_regions()
    m.properties["bogus"] = UnitAttr()
    yield "with an unknown property", m
    for i in range(len(op.operands)):
        for v in values:
            if v.type != op.operands[i].type:
                m = op.clone_without_regions()
                m.operands = [*op.operands[:i], v, *op.operands[i + 1 :]]
                yield f"operand {i} of type {v.type}", m
    if op.operands:
        m = op.clone_without_regions()
        m.operands = list(op.operands)[:-1]
        yield "an operand fewer", m
    m = op.clone_without_regions()
    m.operands = [*op.operands, values[0]]
    yield "an operand more", m
    for i, r in enumerate(op.results):
        for t in (i1, i32, f32):
            if t != r.type:
                m = op.clone_without_regions()
                new = type(m).create(
                    operands=m.operands,
                    result_types=[t if j == i else x.type for j, x in enumerate(op.results)],
                    properties=dict(m.properties),
                    attributes=dict(m.attributes),
                    successors=list(m.successors),
                )
                yield f"result {i} of type {t}", new
    if "value" in op.properties and isinstance(op.properties["value"], IntegerAttr):
        m = op.clone_without_regions()
        m.properties["value"] = IntegerAttr(1, i1)
        yield "another value type", m


def _lowered_ops() -> list[Operation]:
    ctx = context()
    ops: list[Operation] = []
    for kind, shape, target in (
        ("sum", (32,), "sm_90a"),
        ("max", (4, 40), "sm_100a"),
        ("sum", (256,), "sm_100a"),
    ):
        module = parse_module(ctx, tile_module(kind, shape, "f32", accum=True))
        apply_passes(ctx, module, build_passes(f"bulkred-to-ptx{{target={target}}}", available_passes()))
        ops.extend(o for o in module.walk() if hasattr(type(o), "_fixed_form_check"))
    # one op of each form: name, properties, operand and result types
    forms = {(o.name, str(o.properties), str(o.operand_types), str(o.result_types)): o for o in ops}
    return list(forms.values())


def _sampled_cases(per_group: int = 3) -> list[tuple[str, Operation]]:
    """A spread of the differential cases: up to about ``per_group`` of each group of
    cases whose names begin alike (``add.u16``, ``add.rn`` ...), so that every ptx op
    with cases is in (a few hundred of the ~6,000; building them all takes seconds)."""
    groups: dict[tuple[str, str], list[DiffCase]] = {}
    for module in h.ptx_op_modules():
        mod = importlib.import_module(f"ptx_cases.{module}")
        for dc in getattr(mod, "differential_cases", list)():
            groups.setdefault((module, ".".join(re.split(r"[. ]", dc.name)[:2])), []).append(dc)
    out = []
    for (module, _), dcs in groups.items():
        for dc in dcs[:: max(1, len(dcs) // per_group)]:
            case, err = h.build_case(module, dc)
            assert err is None, err
            if case.op is not None:
                out.append((case.key, case.op))
    return out


def _corpus() -> list[tuple[str, Operation]]:
    cases = _sampled_cases()
    cases += [(f"lowered {o.name} #{i}", o) for i, o in enumerate(_lowered_ops())]
    return cases
@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, Operation]]:
    return _corpus()


def test_the_sample_holds_every_ptx_op_with_differential_cases(corpus):
    sampled = {op.name for key, op in corpus if not key.startswith("lowered")}
    every = {c.op.name for c in h.collect(["sync", "warp", "sreg", "redux", "red_async"]).cases if c.op}
    assert every <= sampled
    assert len(sampled) >= 54


def test_most_op_definitions_take_the_cheaper_check():
    classes = _our_op_classes()
    fixed = [c for c in classes if is_fixed_form(c.get_irdl_definition())]
    assert len(classes) >= 60
    assert all(hasattr(c, "_fixed_form_check") for c in fixed)
    # only the ops with operand segment sizes (or two variadics) keep IRDL's general check
    others = sorted(c.name for c in classes if c not in fixed)
    assert len(others) <= 6, others
    for c in classes:
        if c not in fixed:
            assert c.get_irdl_definition().options or not hasattr(c, "_fixed_form_check"), c.name


def test_the_cheaper_check_agrees_with_irdl_on_ops_and_their_mutants(corpus):
    compared = refused = 0
    for key, op in corpus:
        check = getattr(type(op), "_fixed_form_check", None)
        if check is None:
            continue
        for what, m in [("as built", op), *_mutants(op)]:
            want = _irdl_verdict(m)
            assert check(m) == (want is None), f"{key} {what}: IRDL says {want!r}"
            compared += 1
            refused += want is not None
    # the corpus holds thousands of ops and mutants, most of them refused
    assert compared > 2000 and refused > compared // 2, (compared, refused)


def test_a_refused_op_gets_irdls_message(corpus):
    seen = 0
    for key, op in corpus:
        if not hasattr(type(op), "_fixed_form_check"):
            continue
        for what, m in _mutants(op):
            want = _irdl_verdict(m)
            if want is None:
                continue
            with pytest.raises(VerifyException) as got:
                m.verify_()
            assert str(got.value) == want, f"{key} {what}"
            seen += 1
            break
    assert seen > 100


def test_a_successor_count_is_checked():
    from bulkred_dialect.ops.ptx.control import BraOp

    fn = func.FuncOp("k", ([], []))
    a, b = Block(), Block()
    fn.body.add_block(a)
    fn.body.add_block(b)
    bra = BraOp(b)
    a.add_op(bra)
    assert BraOp._fixed_form_check(bra)
    bad = BraOp.create(successors=[])
    assert not BraOp._fixed_form_check(bad)
    assert _irdl_verdict(bad) is not None


def _upstream_ops() -> list[Operation]:
    """One op of each form (name, properties, operand and result types) of xDSL's own
    dialects in lowered kernels (constants, loads, stores, index arithmetic)."""
    ctx = context()
    forms: dict[tuple[str, ...], Operation] = {}
    for kind, shape, elt, target in (("sum", (32,), "f32", "sm_90a"), ("max", (4, 40), "i32", "sm_100a"), ("sum", (100,), "f32", "sm_100a")):
        module = parse_module(ctx, tile_module(kind, shape, elt, accum=True))
        apply_passes(ctx, module, build_passes(f"lower-tile-reductions{{target={target}}}", available_passes()))
        for o in module.walk():
            if not o.name.startswith(("ptx.", "bulkred.")):
                forms.setdefault((o.name, str(o.properties), str(o.operand_types), str(o.result_types)), o)
    return list(forms.values())


def verdict(op: Operation) -> str | None:
    """None when ``op.verify`` (not its nested ops) passes, else its message."""
    try:
        op.verify(verify_nested_ops=False)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def test_upstream_ops_take_the_cheaper_check_where_op_verify_passes():
    """``upstream_check`` (used by ``verify_located``) says True only where ``op.verify``
    passes, on xDSL's ops of lowered kernels and their mutants; it is found for the
    common ones (an xDSL whose ``irdl_op_definition`` no longer wraps the class's
    verifier as 0.74 does fails here, not silently slower)."""
    from xdsl.dialects import arith, memref

    from bulkred_dialect.ops.op_definition import upstream_check

    for cls in (arith.ConstantOp, arith.AddiOp, memref.LoadOp, memref.StoreOp):
        assert upstream_check(cls) is not None, cls.name
    for cls in (memref.AllocaOp, func.FuncOp):  # segment sizes, regions: op.verify as before
        assert upstream_check(cls) is None, cls.name
    compared = taken = refused = 0
    for op in _upstream_ops():
        passes = upstream_check(type(op))
        if passes is None:
            continue
        for what, m in [("in its block", op), ("as built", op.clone_without_regions()), *_mutants(op)]:
            want = verdict(m)
            got = passes(m)
            assert not (got and want is not None), f"{op.name} {what}: op.verify says {want!r}"
            compared += 1
            taken += got
            refused += want is not None
    assert compared > 100 and taken > 10 and refused > compared // 3, (compared, taken, refused)


def test_verify_located_reports_an_upstream_ops_error_as_before(monkeypatch):
    """An upstream op refused (a memref.load from an i32 value, a memref.store of a
    value of another type): ``verify_located`` gives the same located message with the
    cheaper check as with ``op.verify`` alone."""
    from xdsl.dialects import arith, memref

    from bulkred_dialect import diagnostics

    for cls, index in ((memref.LoadOp, 0), (memref.StoreOp, 0)):
        module = parse_module(context(), tile_module("sum", (32,), "f32", accum=True))
        apply_passes(context(), module, build_passes("lower-tile-reductions{target=sm_90a}", available_passes()))
        op = next(o for o in module.walk() if isinstance(o, cls))
        const = arith.ConstantOp(IntegerAttr(3, i32))
        op.parent.insert_op_before(const, op)
        op.operands = [*op.operands[:index], const.result, *op.operands[index + 1 :]]
        messages = []
        for check in (diagnostics.op_verifier, lambda cls: None):  # (the cheaper check; op.verify alone)
            monkeypatch.setattr(diagnostics, "op_verifier", check)
            with pytest.raises(diagnostics.LocatedError) as e:
                diagnostics.verify_located(module)
            messages.append(str(e.value))
        assert messages[0] == messages[1] and cls.name in messages[0], messages
