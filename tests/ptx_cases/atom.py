"""The differential cases of ``bulkred_dialect.ops.ptx.atom``: atom, red (scalar and vector
forms), fence, membar."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product

from xdsl.ir import SSAValue

from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace, mnemonic
from bulkred_dialect.ops.ptx.atom import (
    AtomOp,
    AtomOpKind,
    AtomType,
    FenceOp,
    FenceSem,
    HALF_TYPES,
    MemScope,
    MemSem,
    MembarLevel,
    MembarOp,
    RED_VEC_COUNTS,
    RED_VEC_TABLE,
    RedOp,
    RedOpKind,
    RedSem,
    value_type,
)
from ptx_cases import DiffCase


_SPACE_CHOICES = (StateSpace.GENERIC, StateSpace.GLOBAL, StateSpace.SHARED_CTA, StateSpace.SHARED_CLUSTER)


def differential_cases() -> Iterator[DiffCase]:
    """atom and red: every ``.op`` x ``.type`` on a global address (``.noftz`` where the
    type needs it, and add.f16/add.f32 with it flipped); every ``.sem`` x ``.scope``
    (with none) x ``.space`` for add.u32, add.f32 and exch.b64 (atom); red's vector
    forms for every count x op x type x space (the integer and f64 types with three
    ops), and with each ``.sem``/``.scope``; fence: every sem x scope; membar: every
    level."""
    g = PtrType(StateSpace.GLOBAL)
    for op, t in product(AtomOpKind, AtomType):

        def build_atom(v: Sequence[SSAValue], op=op, t=t) -> PtxInstruction:
            return AtomOp(op, t, v[0], v[1], noftz=t in HALF_TYPES)

        yield DiffCase(f"atom.global.{op}.{t}", (g, value_type(t)), build_atom)
    for op, t in product(RedOpKind, AtomType):

        def build_red(v: Sequence[SSAValue], op=op, t=t) -> PtxInstruction:
            return RedOp(op, t, v[0], [v[1]], noftz=t in HALF_TYPES)

        yield DiffCase(f"red.global.{op}.{t}", (g, value_type(t)), build_red)
    for t in (AtomType.F16, AtomType.BF16, AtomType.F32):
        flipped = t not in HALF_TYPES

        def build_atom_flip(v: Sequence[SSAValue], t=t, flipped=flipped) -> PtxInstruction:
            return AtomOp(AtomOpKind.ADD, t, v[0], v[1], noftz=flipped)

        def build_red_flip(v: Sequence[SSAValue], t=t, flipped=flipped) -> PtxInstruction:
            return RedOp(RedOpKind.ADD, t, v[0], [v[1]], noftz=flipped)

        tag = "noftz" if flipped else "ftz"
        yield DiffCase(f"atom.global.add.{tag}.{t}", (g, value_type(t)), build_atom_flip)
        yield DiffCase(f"red.global.add.{tag}.{t}", (g, value_type(t)), build_red_flip)
    for (op, t), sem, scope, space in product(
        ((AtomOpKind.ADD, AtomType.U32), (AtomOpKind.ADD, AtomType.F32), (AtomOpKind.EXCH, AtomType.B64)),
        (None, *MemSem),
        (None, *MemScope),
        _SPACE_CHOICES,
    ):

        def build_atom_q(v: Sequence[SSAValue], op=op, t=t, sem=sem, scope=scope) -> PtxInstruction:
            return AtomOp(op, t, v[0], v[1], sem=sem, scope=scope)

        name = mnemonic("atom", sem, scope, space, op, t)
        yield DiffCase(f"{name}.q", (PtrType(space), value_type(t)), build_atom_q)
    for (op, t), sem, scope, space in product(
        ((RedOpKind.ADD, AtomType.U32), (RedOpKind.ADD, AtomType.F32)),
        (None, *RedSem),
        (None, *MemScope),
        _SPACE_CHOICES,
    ):

        def build_red_q(v: Sequence[SSAValue], op=op, t=t, sem=sem, scope=scope) -> PtxInstruction:
            return RedOp(op, t, v[0], [v[1]], sem=sem, scope=scope)

        name = mnemonic("red", sem, scope, space, op, t)
        yield DiffCase(f"{name}.q", (PtrType(space), value_type(t)), build_red_q)
    vec_types = (AtomType.F32, AtomType.F16, AtomType.BF16, AtomType.F64, AtomType.U32, AtomType.B32)
    for n, op, t, space in product(RED_VEC_COUNTS, RedOpKind, vec_types, _SPACE_CHOICES):
        if t not in RED_VEC_TABLE and op not in (RedOpKind.ADD, RedOpKind.MIN, RedOpKind.AND):
            continue  # the other ops are rejected the same way
        if space == StateSpace.SHARED_CTA and t not in RED_VEC_TABLE:
            continue

        def build_vec(v: Sequence[SSAValue], op=op, t=t) -> PtxInstruction:
            return RedOp(op, t, v[0], v[1:], noftz=t in HALF_TYPES)

        yield DiffCase(
            f"red.{space}.{op}.v{n}.{t}", (PtrType(space), *[value_type(t)] * n), build_vec
        )
    for (n, t), sem, scope in product(
        ((2, AtomType.F32), (4, AtomType.F32), (8, AtomType.BF16)), (None, *RedSem), (None, *MemScope)
    ):

        def build_vec_q(v: Sequence[SSAValue], t=t, sem=sem, scope=scope) -> PtxInstruction:
            return RedOp(RedOpKind.ADD, t, v[0], v[1:], sem=sem, scope=scope, noftz=t in HALF_TYPES)

        name = mnemonic("red", sem, scope, "global", "add", f"v{n}", t)
        yield DiffCase(f"{name}.q", (g, *[value_type(t)] * n), build_vec_q)
    for n, t in ((3, AtomType.F32), (16, AtomType.F16)):
        yield DiffCase(
            f"red.global.add.v{n}.{t}",
            (g, *[value_type(t)] * n),
            lambda v, t=t: RedOp(RedOpKind.ADD, t, v[0], v[1:], noftz=t in HALF_TYPES),
        )
    for t in (AtomType.F16, AtomType.F32):
        # .noftz flipped on a vector form
        yield DiffCase(
            f"red.global.add.flipnoftz.v4.{t}",
            (g, *[value_type(t)] * 4),
            lambda v, t=t: RedOp(RedOpKind.ADD, t, v[0], v[1:], noftz=t not in HALF_TYPES),
        )
    for sem, scope in product(FenceSem, MemScope):
        yield DiffCase(f"fence.{sem}.{scope}", (), lambda v, sem=sem, scope=scope: FenceOp(sem, scope))
    for level in MembarLevel:
        yield DiffCase(f"membar.{level}", (), lambda v, level=level: MembarOp(level))
