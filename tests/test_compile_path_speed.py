"""The compile path's shortcuts give the verdicts of what they stand in for.

``op_definition.op_verifier`` (what ``verify_located`` runs for each op) says True only
where ``op.verify(verify_nested_ops=False)`` passes, and it is taken for every op of
valid lowered kernels; ``verify_located`` reports the same located error with it as
with ``op.verify`` alone. A module verified and unchanged is not verified again; any
change after it (an op, operand, property, attribute, block argument) is, with the
error a module never verified gives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.ir import Block, Operation
from test_op_definition import verdict as _verdict  # (op.verify's message, or None)

from bulkred_dialect import api, diagnostics
from bulkred_dialect.compiler import context, lower_tile_module
from bulkred_dialect.ops.op_definition import op_verifier
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass


def _modules() -> Iterator[ModuleOp]:
    """Level-2 and level-3 modules of a few reductions (scf loops and ifs, branches,
    shared buffers, two targets)."""
    for kind, shape, dtype, axis, target in (
        ("sum", (4096,), "float32", None, "sm_90a"),
        ("max", (7, 33), "bfloat16", 1, "sm_100a"),
        ("sum", (64, 1000, 256), "float32", 1, "sm_90a"),
    ):
        level2 = api.reduction_module(kind, shape, dtype, axis, "k")
        LowerTileReductionsPass(target=target).apply(context(), level2)
        yield level2
        level3 = api.reduction_module(kind, shape, dtype, axis, "k")
        lower_tile_module(level3, target)
        yield level3


def _agrees(op: Operation) -> bool:
    """op_verifier's verdict on ``op`` (True only where op.verify passes)."""
    check = op_verifier(type(op))
    got = check is not None and check(op)
    want = _verdict(op)
    assert not (got and want is not None), f"{op.name}: op.verify says {want!r}"
    return got


def test_op_verifier_is_taken_on_every_op_of_valid_kernels():
    names = set()
    for module in _modules():
        assert diagnostics.walk_ops(module) == list(module.walk())  # (verify_located's walk: the same ops, in order)
        for op in module.walk():
            assert _agrees(op), op.name
            names.add(op.name)
    # terminators, region ops and the isolated ones are among them
    assert {"builtin.module", "func.func", "scf.for", "scf.yield", "ptx.bra", "ptx.ret", "arith.constant"} <= names


def _structural_mutants(module: ModuleOp) -> Iterator[tuple[str, Operation]]:
    """(what, an op to verify) after one structural change to a copy of ``module``."""
    m = module.clone()
    kernel = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    block = kernel.body.blocks.first
    last = block.last_op
    last.detach()
    yield "a block without its terminator", block.last_op
    m = module.clone()
    kernel = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    block = kernel.body.blocks.last
    const = arith.ConstantOp(IntegerAttr(1, i32))
    block.add_op(const)
    yield "an op after the terminator", const
    yield "the terminator not last", block.last_op.prev_op
    m = module.clone()
    kernel = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    branch = next((o for o in kernel.walk() if o.successors), None)
    if branch is not None:
        other = Block()
        holder = func.FuncOp("other", ([], []))
        holder.body.add_block(other)
        branch.successors = [other, *list(branch.successors)[1:]]
        yield "a branch into another region", branch
    m = module.clone()
    kernel = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    outside = arith.ConstantOp(IntegerAttr(2, i32))
    m.body.block.insert_op_before(outside, kernel)
    user = next(o for o in kernel.walk() if o.operands and o.operands[0].type == i32)
    user.operands = [outside.result, *list(user.operands)[1:]]
    yield "a kernel using a value defined outside it", kernel
    m = module.clone()
    kernel = next(o for o in m.walk() if isinstance(o, func.FuncOp))
    kernel.body.add_block(Block())
    yield "an empty block in the kernel", kernel
    yield "the kernel's first block's terminator, two blocks", kernel.body.blocks.first.last_op


def test_op_verifier_refuses_what_op_verify_refuses():
    refused = 0
    for module in _modules():
        for what, op in _structural_mutants(module):
            if not _agrees(op):
                refused += 1
            assert _verdict(op) is None or not _agrees(op), what
    assert refused >= 10, refused


@pytest.mark.parametrize("change", ["no terminator", "outside value"])
def test_verify_located_reports_the_same_error_without_the_shortcut(monkeypatch, change):
    messages = []
    for verifier in (diagnostics.op_verifier, lambda cls: None):
        monkeypatch.setattr(diagnostics, "op_verifier", verifier)
        module = api.reduction_module("sum", (4096,), "float32", None, "k")
        lower_tile_module(module, "sm_90a")
        kernel = next(o for o in module.walk() if isinstance(o, func.FuncOp))
        if change == "no terminator":
            kernel.body.blocks.first.last_op.detach()
        else:
            outside = arith.ConstantOp(IntegerAttr(2, i32))
            module.body.block.insert_op_before(outside, kernel)
            user = next(o for o in kernel.walk() if o.operands and o.operands[0].type == i32)
            user.operands = [outside.result, *list(user.operands)[1:]]
        with pytest.raises(diagnostics.LocatedError) as e:
            diagnostics.verify_located(module)
        messages.append(str(e.value))
    assert messages[0] == messages[1], messages


def _lowered() -> ModuleOp:
    module = api.reduction_module("sum", (4096,), "float32", None, "k")
    lower_tile_module(module, "sm_90a")  # verified at the end
    return module


def _first(module: ModuleOp, name: str) -> Operation:
    return next(o for o in module.walk() if o.name == name)


def _break(module: ModuleOp, how: str) -> None:
    """One change to ``module`` after which it does not verify."""
    from xdsl.dialects.builtin import UnitAttr, f32

    from bulkred_dialect.ops.ptx.memory import MovImmOp

    kernel = next(o for o in module.walk() if isinstance(o, func.FuncOp))
    if how == "terminator detached":
        next(b for b in kernel.body.blocks if b.first_op is not b.last_op).last_op.detach()
    elif how == "property set in place":
        _first(module, "ptx.add").properties["type"] = UnitAttr()
    elif how == "property added in place":
        _first(module, "ptx.add").properties["bogus"] = UnitAttr()
    elif how == "operand replaced":
        add = _first(module, "ptx.add")
        other = MovImmOp(1.0, f32)
        add.parent.insert_op_before(other, add)
        if add.lhs.type == f32:
            other = MovImmOp(1, i32)
            add.parent.insert_op_before(other, add)
        add.operands = [other.result, *list(add.operands)[1:]]
    elif how == "op inserted":
        add = _first(module, "ptx.add")
        add.parent.insert_op_before(arith.ConstantOp(IntegerAttr(1, i32)), add)  # level 3 holds ptx ops only: verifies,
        kernel.body.blocks.first.add_op(arith.ConstantOp(IntegerAttr(2, i32)))  # but not after the terminator
    elif how == "block argument retyped":
        from xdsl.rewriter import Rewriter

        Rewriter.replace_value_with_new_type(kernel.body.blocks.first.args[0], f32)
    else:
        raise AssertionError(how)


MUTATIONS = ["terminator detached", "property set in place", "property added in place", "operand replaced",
             "op inserted", "block argument retyped"]


def test_a_verified_module_unchanged_is_not_verified_again(monkeypatch):
    module = _lowered()
    calls = []
    real = diagnostics.op_verifier
    monkeypatch.setattr(diagnostics, "op_verifier", lambda cls: calls.append(cls) or real(cls))
    diagnostics.verify_located(module)
    assert calls == []
    module.attributes["note"] = IntegerAttr(1, i32)  # any change (here an attribute): verified again, still valid
    diagnostics.verify_located(module)
    assert len(calls) > 100
    calls.clear()
    diagnostics.verify_located(module)
    assert calls == []


@pytest.mark.parametrize("how", MUTATIONS)
def test_a_verified_module_changed_is_verified_again(how):
    """Each change after a verification is seen: the error is the one a module never
    verified before gives."""
    messages = []
    for verified_before in (True, False):
        module = _lowered()
        if not verified_before:
            delattr(module, "_bulkred_verified_as")
        _break(module, how)
        with pytest.raises(diagnostics.LocatedError) as e:
            diagnostics.verify_located(module)
        messages.append(str(e.value))
    assert messages[0] == messages[1], messages
