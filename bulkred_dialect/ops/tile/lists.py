"""The tile-level ops over a list of global buffers (docs/foreach.md): one launch reduces
any number of tensors of mixed element types, read through a device-resident descriptor
table, and scales them in place.

The descriptor table (``table``, ``i64``, ``[1 + T + G, COLUMNS]``: a header row, a row per
tensor, a row per CTA) has the layout of ``ops/list_layout.py``, its one definition, which
the host's table builder (``foreach_table.py``) and the lowering (``grid_list``) read too.

CTA c reduces the pieces of the tensors in its chunk; a tensor inside one chunk is
reduced by one CTA, a longer one by each CTA its bytes reach, whose partials the last
CTA (the ticket of docs/scopes.md) combines in chunk order: the results are the same
bits on every run.

Spec: the grid-scope reduction's maps and kinds (``ops/tile/reduce.py``, docs/fused.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, MemRefType, NoneAttr, f32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, opt_operand_def, opt_prop_def, prop_def
from xdsl.irdl.operations import AttrSizedOperandSegments
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.ops.list_layout import COLUMNS
from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.tile.attrs import MapAttr, MapFn, MemoryScope, ReduceKind, ReduceKindAttr, check_maps
from bulkred_dialect.ops.tile.buffers import check_in_kernel, expect_buffer


LIST_KINDS = (ReduceKind.SUM, ReduceKind.MAX, ReduceKind.MIN)
"""The kinds of ``bulkred.reduce_list``: those whose one-register state combines (norms of
every order, amax, sums)."""
LIST_PROLOGUE_MAPS = (MapFn.ABS, MapFn.SQUARE, MapFn.POW, MapFn.SCALE, MapFn.NONZERO)
LIST_EPILOGUE_MAPS = (MapFn.SQRT, MapFn.POW, MapFn.SCALE)
CLIP_EPS = 1e-6
"""``clip_by``: the factor is ``min(max_norm / (total + 1e-6), 1)``, as torch's clip_grad_norm_."""


def _check_global(field: str, v: SSAValue, element: Attribute, shape: Sequence[int | None]) -> MemRefType:
    """``v`` is a contiguous global memref of ``element`` and ``shape`` (None: any size,
    static or dynamic); raise naming ``field`` otherwise."""
    t = expect_buffer(field, v, [MemoryScope.GLOBAL])
    if t.element_type != element:
        raise VerifyException(f"operand '{field}' element type must be {element}, got {t.element_type}")
    got = list(t.get_shape())
    ok = len(got) == len(shape) and all(
        w is None and (g == DYNAMIC_INDEX or g >= 1) or g == w for g, w in zip(got, shape, strict=False)
    )
    if not ok:
        want = "x".join("?" if w is None else str(w) for w in shape)
        have = "x".join("?" if g == DYNAMIC_INDEX else str(g) for g in got)
        raise VerifyException(f"operand '{field}' shape must be [{want}], got [{have}]")
    if not isinstance(t.layout, NoneAttr):
        raise VerifyException(f"operand '{field}' must be contiguous (no layout), got {t.layout}")
    return t


def _check_table(op: IRDLOperation, table: SSAValue) -> None:
    _check_global("table", table, i64, [None, COLUMNS])


@op_definition
class ReduceListOp(IRDLOperation):
    """Reduce every tensor of a list (``table``, the descriptor table above) into
    ``dst[t]``, and all of them into ``total[0]``, in one launch.

    * ``kind`` (sum, max or min) and the ``prologue`` / ``epilogue`` maps are those of a
      grid-scope ``bulkred.reduce`` into float32 (the L2 norm: ``sum prologue [square]
      epilogue [sqrt]``; the p-norm: ``pow p`` and ``pow 1/p``; the inf-norm / amax:
      ``max prologue [abs]``; ord 0: ``sum prologue [nonzero]``). Every element is
      converted to float32 first. ``total`` is the epilogue of every element's state
      combined: of the per-tensor states in tensor order, not of their results (the
      2-norm of the list, not the sum of the norms).
    * ``scale %s`` (float32 [1]): each element is first multiplied by ``s[0]`` and
      written back in place in its own type, and that rounded value is what is reduced
      (AMP's unscale; ``s[0] == 1`` leaves the values as they are).
    * ``nonfinite %flag`` (float32 [1]): set to 1.0 when any element read (before
      ``scale``) is inf or NaN; never cleared (torch's ``found_inf``).

    An empty tensor gives the kind's identity before the epilogue (0 for the norms and
    sums). The results are the same bits on every run.

    Example::

        bulkred.reduce_list sum prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>]
            %table, %norms, %total : memref<?x4xi64, #bulkred.scope<global>>,
            memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
    """

    name = "bulkred.reduce_list"

    kind = prop_def(ReduceKindAttr)
    prologue = opt_prop_def(ArrayAttr[MapAttr])
    epilogue = opt_prop_def(ArrayAttr[MapAttr])
    table = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    total = operand_def(MemRefType)
    scale = opt_operand_def(MemRefType)
    flag = opt_operand_def(MemRefType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kind (`prologue` $prologue^)? (`epilogue` $epilogue^)? $table `,` $dst `,` $total "
        "(`scale` $scale^ `:` type($scale))? (`nonfinite` $flag^ `:` type($flag))? "
        "attr-dict `:` type($table) `,` type($dst) `,` type($total)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        table: SSAValue,
        dst: SSAValue,
        total: SSAValue,
        *,
        prologue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        epilogue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        scale: SSAValue | None = None,
        flag: SSAValue | None = None,
    ):
        props: dict[str, Attribute] = {"kind": ReduceKindAttr(kind)}
        for name, maps in (("prologue", prologue), ("epilogue", epilogue)):
            if maps:
                props[name] = ArrayAttr(
                    m if isinstance(m, MapAttr) else MapAttr(m) if isinstance(m, str) else MapAttr(*m) for m in maps
                )
        super().__init__(
            operands=[table, dst, total, [scale] if scale is not None else [], [flag] if flag is not None else []],
            properties=props,
        )

    def maps(self, field: str) -> list[MapAttr]:
        a = self.prologue if field == "prologue" else self.epilogue
        return list(a.data) if a is not None else []  # type: ignore[union-attr]

    def verify_(self) -> None:
        check_in_kernel(self)
        kind = self.kind.data
        if kind not in LIST_KINDS:
            raise VerifyException(f"'kind' of bulkred.reduce_list must be one of {', '.join(LIST_KINDS)}, got {kind}")
        _check_table(self, self.table)
        _check_global("dst", self.dst, f32, [None])
        _check_global("total", self.total, f32, [1])
        if self.scale is not None:
            _check_global("scale", self.scale, f32, [1])
        if self.flag is not None:
            _check_global("flag", self.flag, f32, [1])
        check_maps("prologue", self.maps("prologue"), LIST_PROLOGUE_MAPS, f32, kind)
        check_maps("epilogue", self.maps("epilogue"), LIST_EPILOGUE_MAPS, f32, kind)
        fns = [m.map_fn for m in self.maps("prologue")]
        if MapFn.NONZERO in fns and fns != [MapFn.NONZERO]:
            raise VerifyException("'prologue' map 'nonzero' must be the only map, got " + ", ".join(fns))


@op_definition
class ScaleListOp(IRDLOperation):
    """Multiply every element of every tensor of a list (``table``) in place by a factor
    read from device memory: ``factor[0]``, or with ``clip_by %total``
    ``min(factor[0] / (total[0] + 1e-6), 1)`` (``factor`` holds max_norm: torch's
    ``clip_grad_norm_`` coefficient). Each product is computed in float32 and rounded to
    the tensor's type. A factor of exactly 1 (and, for ``clip_by``, any factor >= 1)
    writes nothing; a NaN factor is applied (NaN everywhere, as torch).

    Example::

        bulkred.scale_list %table, %max_norm clip_by %total : memref<1xf32, ...>
            : memref<?x4xi64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
    """

    name = "bulkred.scale_list"

    table = operand_def(MemRefType)
    factor = operand_def(MemRefType)
    total = opt_operand_def(MemRefType)

    assembly_format = (
        "$table `,` $factor (`clip_by` $total^ `:` type($total))? attr-dict `:` type($table) `,` type($factor)"
    )

    def __init__(self, table: SSAValue, factor: SSAValue, total: SSAValue | None = None):
        super().__init__(operands=[table, factor, [total] if total is not None else []])

    def verify_(self) -> None:
        check_in_kernel(self)
        _check_table(self, self.table)
        _check_global("factor", self.factor, f32, [1])
        if self.total is not None:
            _check_global("total", self.total, f32, [1])


LIST_OPS = [ReduceListOp, ScaleListOp]
