"""``bulkred.reduce``: a reduction at thread, warp, CTA, cluster or grid scope; at grid
scope over any axes of a strided view, with the fused kinds and the prologue / epilogue
maps (docs/scopes.md, docs/fused.md); and the element-type rules of its ``dst``."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
    StridedLayoutAttr,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, opt_operand_def, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from bulkred_dialect.ops.dtypes import GRID_DTYPES, of_ir
from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.tile.attrs import (
    BITWISE_KINDS,
    BOOL_KINDS,
    EPILOGUE_MAPS,
    FLOAT_ONLY_KINDS,
    FUSED_KINDS,
    INDEX_KINDS,
    MINMAX_KINDS,
    PROLOGUE_MAPS,
    ExecScope,
    ExecScopeAttr,
    MapAttr,
    MapFn,
    MemoryScope,
    ReduceKind,
    ReduceKindAttr,
    check_maps,
)
from bulkred_dialect.ops.tile.buffers import (
    check_element_type,
    check_in_kernel,
    check_static_positive_shape,
    expect_buffer,
    scope_of,
)


def wider_dst_types(kind: str, src: Attribute) -> list[Attribute]:
    """The element types a grid-scope ``dst`` may have besides ``src``'s: the
    accumulator and output type of ``bulkred.sum(x, dtype=...)``. A float ``src`` into a
    wider f32 or f64 (any kind); an integer ``src`` into a wider integer of 32 or 64
    bits for ``sum`` and ``prod``, signless (signed) from any integer, unsigned only
    from an unsigned one."""
    s = of_ir(src)
    if s is None:
        return []
    if s.is_float:
        return [d.ir for d in GRID_DTYPES if d.is_float and d.bits >= 32 and d.bits > s.bits]
    if kind not in ("sum", "prod"):
        return []
    return [
        d.ir for d in GRID_DTYPES if not d.is_float and d.bits >= 32 and d.bits > s.bits and (d.signed or not s.signed)
    ]


def check_dst_element_type(kind: str, src: Attribute, dst: Attribute, *, grid: bool) -> None:
    """Raise unless ``dst``, an element type other than ``src``, is one of
    :func:`wider_dst_types` at grid scope."""
    if not grid:
        raise VerifyException(f"'dst' element type must equal 'src' element type {src} below grid scope, got {dst}")
    valid = wider_dst_types(kind, src)
    if dst in valid:
        return
    if valid:
        expected = f"src's {src} or a wider accumulator type ({', '.join(str(v) for v in valid)})"
    else:
        expected = f"src's {src} (kind {kind} of {src} has no wider accumulator type)"
    raise VerifyException(f"'dst' element type must be {expected}, got {dst}")


def check_cast_dst(kind: str, src: Attribute, dst: Attribute) -> None:
    """Raise unless ``dst`` is an element type that the prologue ``cast`` (each element
    converted to ``dst``'s type first, then reduced as ``dst``'s elements are: float16
    and bfloat16 in float32, 8- and 16-bit integers in 32 bits) reaches from ``src``: a
    float from an integer or bool (``logsumexp`` of int32 into f32) or from a wider float
    (``sum(float64, dtype=float32)``, ``sum(float32, dtype=float16)``); an integer from a
    wider integer (int64 into i32 or i8: the low bits, as a cast keeps them); or, as
    without the cast, one of :func:`wider_dst_types` (the conversion to the accumulator: a
    marker)."""
    if dst in wider_dst_types(kind, src):
        return
    s, d = of_ir(src), of_ir(dst)
    if s is None or d is None:
        raise VerifyException(f"'dst' element type {dst} is not an element type the prologue 'cast' converts {src} into")
    ok = not d.is_bool and (
        (d.is_float and (not s.is_float or s.bits > d.bits)) or (not d.is_float and not s.is_float and not s.is_bool and s.bits > d.bits)
    )
    if not ok:
        raise VerifyException(
            f"'dst' element type of a reduction with the prologue 'cast' must be a float from an integer, bool or wider "
            f"float 'src', or an integer narrower than an integer 'src', got {dst} from {src}"
        )


def check_bool_kind(kind: str, src: Attribute, dst: Attribute) -> None:
    """Raise unless ``any``/``all`` reduce an ``i1`` (bool) ``src``, and unless a ``sum``
    of ``i1`` has a wider integer ``dst`` (a count does not fit in a bool)."""
    if kind in BOOL_KINDS and src != IntegerType(1):
        # without a prologue: any/all of another type reduce x != 0 (numpy's and torch's
        # rule) through the prologue [nonzero], which skips this check (check_nonzero_dst)
        raise VerifyException(f"'kind' {kind} needs element type i1 (bool), got {src}")
    if kind == ReduceKind.SUM and src == IntegerType(1) and dst == src:
        valid = ", ".join(str(v) for v in wider_dst_types(kind, src))
        raise VerifyException(f"'dst' element type of a sum of i1 (bool) must be a wider integer ({valid}), got {dst}")


def check_nonzero_dst(kind: str, dst: Attribute) -> None:
    """Raise unless a reduction with the prologue ``[nonzero]`` (each element as 1 or 0)
    has a ``dst`` it can fill: ``any``/``all`` into ``i1`` (bool) or ``ui8`` (torch's
    ``any`` of a uint8 tensor: 0 or 1), ``sum`` (a count) into a 32- or 64-bit integer or
    a float (torch's ``vector_norm(x, 0)``: the count as a float)."""
    if kind in BOOL_KINDS:
        if dst not in (IntegerType(1), IntegerType(8, Signedness.UNSIGNED)):
            raise VerifyException(
                f"'dst' element type of {kind} with the prologue [nonzero] must be i1 (bool) or ui8, got {dst}"
            )
        return
    if kind != ReduceKind.SUM:
        raise VerifyException(f"'prologue' map 'nonzero' is only valid with kind any, all or sum (a count), got kind {kind}")
    d = of_ir(dst)
    if d is not None and d.is_float:
        return
    if not isinstance(dst, IntegerType) or dst.width.data not in (32, 64) or dst.signedness.data == Signedness.SIGNED:
        raise VerifyException(
            f"'dst' element type of a sum with the prologue [nonzero] (a count) must be i32, i64, ui32, ui64 or a "
            f"float, got {dst}"
        )


MAX_GRID_RANK = 8
"""The highest rank of a grid-scope ``bulkred.reduce``'s ``src``."""


def check_axes(axes: Sequence[int], rank: int) -> None:
    """Raise unless ``axes`` is a non-empty, ascending list of distinct axes of a
    ``src`` of rank ``rank`` (grid-scope ``bulkred.reduce``)."""
    if not axes:
        raise VerifyException("'axes' must name at least one axis, got []")
    bad = [a for a in axes if not 0 <= a < rank]
    if bad:
        raise VerifyException(
            f"'axes' must be in [0, {rank}) for 'src' of rank {rank}, got {', '.join(map(str, bad))} in {list(axes)}"
        )
    repeated = sorted({a for a in axes if list(axes).count(a) > 1})
    if repeated:
        raise VerifyException(
            f"'axes' must be distinct, got {', '.join(map(str, repeated))} more than once in {list(axes)}"
        )
    if list(axes) != sorted(axes):
        raise VerifyException(f"'axes' must be in ascending order, {sorted(axes)}, got {list(axes)}")


def check_grid_view(field: str, t: MemRefType) -> None:
    """Raise unless ``t``'s layout is the default or a view a grid-scope reduction reads
    in place: ``strided<[...]>`` with static element strides >= 0 and offset 0 (the
    kernel parameter is the view's first element)."""
    if isinstance(t.layout, NoneAttr):
        return
    if not isinstance(t.layout, StridedLayoutAttr):
        raise VerifyException(f"'{field}' of a grid-scope reduction must have a strided<[...]> layout or none, got {t.layout}")
    strides = t.get_strides() or []
    if any(s is None or s < 0 for s in strides):
        shown = ", ".join("?" if s is None else str(s) for s in strides)
        raise VerifyException(
            f"'{field}' of a grid-scope reduction must have static element strides >= 0, got strides [{shown}]"
        )
    if t.get_offset() != 0:
        off = t.get_offset()
        raise VerifyException(
            f"'{field}' of a grid-scope reduction must have offset 0 (the parameter points at the view's first "
            f"element), got offset {'?' if off is None else off}"
        )


PAIR_KINDS = (
    ReduceKind.SUM, ReduceKind.MAX, ReduceKind.MIN, ReduceKind.ANY, ReduceKind.ALL, ReduceKind.VAR, ReduceKind.PROD,
    ReduceKind.NANMEAN, ReduceKind.LOGSUMEXP,
)
"""The kinds a ``pairs`` reduction takes (complex numbers as (re, im) pairs)."""
PAIR_MAPS = (MapFn.ABS, MapFn.SQUARE, MapFn.POW, MapFn.NONZERO)
"""The prologue maps that make a pair one real value: ``|z|``, ``|z|**2``, ``|z|**p``, ``z != 0``."""


def check_pairs(op: ReduceOp, st: MemRefType, src_shape: Sequence[int]) -> None:
    """Raise unless a ``pairs`` reduction (``src``'s last axis holds complex numbers as
    (re, im) pairs of f16, f32 or f64; f16 accumulated in f32) is one the lowering takes:
    at grid scope, the last extent 2; the complex results keep the pair axis (``dst``
    ends in it): ``prod`` (the complex product), ``logsumexp`` (``log(sum(exp(z)))``,
    its running shift the real parts' maximum, as torch's), ``sum`` with the prologue ``nan_zero`` (torch's complex nansum: an
    element with a NaN part adds 0) and ``nanmean`` (the mean of the elements without a
    NaN part); the others reduce it: ``var`` (a real variance, ``aux`` the complex mean)
    and sum/max/min/any/all of the real value the prologue's first map makes of each
    pair (``abs``, ``square``, ``pow``, ``nonzero``)."""
    kind = op.kind.data
    if op.scope.data != ExecScope.GRID:
        raise VerifyException(f"'pairs' is only valid at grid scope, got scope {op.scope.data}")
    d = of_ir(st.element_type)
    if d is None or not d.is_float or d.name == "bfloat16":
        raise VerifyException(
            f"'pairs' needs an f16, f32 or f64 'src' (complex32, complex64 or complex128 as (re, im)), got {st.element_type}")
    if src_shape[-1] != 2:
        raise VerifyException(f"'pairs' needs 'src''s last axis of extent 2 (re, im), got extent {src_shape[-1]}")
    if kind not in PAIR_KINDS:
        raise VerifyException(f"'pairs' is not valid with kind {kind} (valid: {', '.join(PAIR_KINDS)})")
    if op.accum is not None:
        raise VerifyException("'accum' is not valid with 'pairs'")
    last = len(src_shape) - 1
    reduced = last in op.reduced_axes()
    maps = op.maps("prologue")
    fns = [m.map_fn for m in maps if m.map_fn != MapFn.CAST]
    if kind in (ReduceKind.PROD, ReduceKind.NANMEAN, ReduceKind.LOGSUMEXP) or (
        kind == ReduceKind.SUM and fns == [MapFn.NAN_ZERO]
    ):
        what = {ReduceKind.PROD: "a complex product", ReduceKind.NANMEAN: "a complex mean",
                ReduceKind.LOGSUMEXP: "a complex logsumexp"}.get(kind, "a complex nansum")
        if reduced:
            raise VerifyException(f"'pairs' with kind {kind} keeps the pair axis ({what}): 'axes' must not name axis {last}")
        if kind != ReduceKind.SUM and fns or op.epilogue is not None:
            raise VerifyException(f"'pairs' with kind {kind} takes no prologue (but 'cast') or epilogue")
        return
    if not reduced:
        raise VerifyException(
            f"'pairs' with kind {kind} makes each pair one real value: 'axes' must name the pair axis {last}"
        )
    if kind == ReduceKind.VAR:
        if maps:
            raise VerifyException(f"'pairs' with kind var takes no prologue, got {', '.join(m.map_fn for m in maps)}")
        return
    if not maps or maps[0].map_fn not in PAIR_MAPS:
        got = maps[0].map_fn if maps else "none"
        raise VerifyException(
            f"'pairs' with kind {kind} needs a prologue whose first map makes each pair real "
            f"({', '.join(PAIR_MAPS)}; or nan_zero alone: a complex nansum), got {got}"
        )


@op_definition
class ReduceOp(IRDLOperation):
    """Reduce ``src`` into ``dst`` at an execution scope.

    * ``thread``: one thread reduces its own buffer along the last axis: a 1-D ``src``
      of length N into ``dst`` of shape [1], a ``src`` of shape [M, N] into ``dst`` [M].
    * ``warp``, ``cta``, ``cluster``: every thread of the warp (CTA, cluster) reduces
      its own ``src`` as at thread scope, then the threads combine their results; every
      thread's ``dst`` receives the combined value. All threads of the scope must
      execute the op. ``src`` and ``dst`` are ``local`` buffers.
    * ``grid``: the whole kernel reduces a ``global`` ``src`` of rank 1 to 8 over
      ``axes`` (ascending and distinct; all axes when absent) into a ``global`` ``dst`` whose shape is ``src``'s without those axes
      ([1] when every axis is reduced). The lowering chooses the launch shape (tile
      sizes, split count, cluster) and writes it into the kernel's ``bulkred.launch``;
      the op must be the only tile op of its kernel.

    With ``accum`` the result is combined with ``dst``'s previous value.
    ``deterministic`` (grid scope) asks for a lowering that gives the same bits on every
    run (no floating-point atomics). Float ``max`` and ``min`` propagate NaN (a NaN
    anywhere gives NaN, as numpy and torch do); ``ignore_nan`` (max/min of a float type
    only) drops NaN inputs instead, as PTX's plain ``max``/``min`` do (all NaN: NaN).
    ``variant`` forces a lowering variant by name.
    The element type is one of :data:`ELEMENT_TYPES`; every dimension is static and >= 1.

    Fused reductions (grid scope only, docs/fused.md):

    * ``prologue``: maps applied in order to each element, in the accumulator type, as it
      is loaded (:data:`PROLOGUE_MAPS`: ``cast``, ``abs``, ``square``, ``pow p`` (``|x|**p``),
      ``scale s``, ``exp_sub``: ``exp(x - c)`` with ``c`` read from ``aux`` at the
      element's output, ``nonzero``, ``nan_zero``: NaN as 0, kind ``sum`` only: a
      nansum); ``epilogue``: maps applied in order to each result before it is stored
      (:data:`EPILOGUE_MAPS`: ``div_count``, ``sqrt``, ``log``, ``pow p``, ``scale s``), not
      with ``accum``. ``sum`` with ``[square]`` and ``[sqrt]`` is the L2 norm;
      ``max`` with ``[abs]`` the absmax; ``sum`` with ``[div_count]`` the mean.
    * ``argmax`` / ``argmin``: ``dst`` (``i64``) receives the index of the first largest
      (smallest) element, row-major over the reduced axes; NaN counts as the largest
      (and, for argmin, the smallest), as torch does. ``aux`` (optional, ``src``'s element
      type) receives the value.
    * ``var``: ``dst`` receives the variance, the sum of squared deviations divided by
      ``N - correction`` (``correction`` 0 when absent; an ``i64`` or a finite ``f64``,
      negative too, as torch's; ``N - correction <= 0`` gives
      inf, or NaN when the deviations are all 0, as torch does); ``aux`` (optional)
      receives the mean. The epilogue applies to the variance (``[sqrt]``: std).
    * ``logsumexp``: ``log(sum(exp(x)))`` with a running shift (one read; no overflow).
    * ``nanmean``: the mean of the elements that are not NaN (after the prologue): a sum
      and a count of them; all NaN gives NaN (0 / 0). The epilogue applies to the mean.
    * ``minmax``: ``dst`` receives the minimum and ``aux`` (required, ``dst``'s element
      type) the maximum, both NaN where a NaN was reduced (as torch.aminmax); no epilogue.

    Example::

        bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
        bulkred.reduce max warp accum %a, %b : ...
        bulkred.reduce max grid ignore_nan %x, %y : ...
        bulkred.reduce prod thread %a, %b : ...
        bulkred.reduce sum grid axes [0 : i64] %x, %y : memref<65536x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
        bulkred.reduce sum grid prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %x, %n : ...
        bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %x, %v aux %m : memref<64xf32, ...> : ...
        bulkred.reduce argmax grid %x, %i : memref<1024xf32, ...>, memref<1xi64, ...>
        bulkred.reduce minmax grid axes [1 : i64] %x, %lo aux %hi : memref<64xf32, ...> : ...

    Spec: the TIRx reduction card (docs/lowering.md) for thread scope; docs/scopes.md for
    the others.
    """

    name = "bulkred.reduce"

    kind = prop_def(ReduceKindAttr)
    scope = prop_def(ExecScopeAttr)
    accum = opt_prop_def(UnitAttr)
    deterministic = opt_prop_def(UnitAttr)
    ignore_nan = opt_prop_def(UnitAttr)
    axes = opt_prop_def(ArrayAttr[IntegerAttr])
    prologue = opt_prop_def(ArrayAttr[MapAttr])
    epilogue = opt_prop_def(ArrayAttr[MapAttr])
    correction = opt_prop_def(IntegerAttr | FloatAttr)
    variant = opt_prop_def(StringAttr)
    pairs = opt_prop_def(UnitAttr)
    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    aux = opt_operand_def(MemRefType)

    assembly_format = (
        "$kind $scope (`accum` $accum^)? (`deterministic` $deterministic^)? "
        "(`ignore_nan` $ignore_nan^)? (`axes` $axes^)? (`prologue` $prologue^)? "
        "(`epilogue` $epilogue^)? (`correction` $correction^)? "
        "(`variant` $variant^)? (`pairs` $pairs^)? $src `,` $dst (`aux` $aux^ `:` type($aux))? attr-dict `:` type($src) `,` type($dst)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        src: SSAValue,
        dst: SSAValue,
        *,
        scope: ExecScope = ExecScope.THREAD,
        accum: bool = False,
        deterministic: bool = False,
        ignore_nan: bool = False,
        axes: Sequence[int] | None = None,
        variant: str | None = None,
        prologue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        epilogue: Sequence[MapAttr | str | tuple[str, float]] | None = None,
        correction: int | float | None = None,
        aux: SSAValue | None = None,
        pairs: bool = False,
    ):
        props: dict[str, Attribute] = {"kind": ReduceKindAttr(kind), "scope": ExecScopeAttr(scope)}
        if pairs:
            props["pairs"] = UnitAttr()
        for name, maps in (("prologue", prologue), ("epilogue", epilogue)):
            if maps:
                props[name] = ArrayAttr(
                    m if isinstance(m, MapAttr) else MapAttr(m) if isinstance(m, str) else MapAttr(*m) for m in maps
                )
        if correction is not None:  # an int prints as `correction 1 : i64`, a float as `correction 1.3 : f64`
            props["correction"] = IntegerAttr(correction, i64) if isinstance(correction, int) else FloatAttr(correction, f64)
        if accum:
            props["accum"] = UnitAttr()
        if deterministic:
            props["deterministic"] = UnitAttr()
        if ignore_nan:
            props["ignore_nan"] = UnitAttr()
        if axes is not None:
            props["axes"] = ArrayAttr(IntegerAttr(a, i64) for a in axes)
        if variant is not None:
            props["variant"] = StringAttr(variant)
        super().__init__(operands=[src, dst, [aux] if aux is not None else []], properties=props)

    @staticmethod
    def expected_dst_shape(src_shape: Sequence[int], axes: Sequence[int] | None = None) -> list[int]:
        """``dst``'s shape: ``src``'s without the last axis (thread and collective
        scopes) or without ``axes`` (grid scope); [1] when nothing is left."""
        if axes is None:
            kept = list(src_shape[:-1])
        else:
            kept = [d for i, d in enumerate(src_shape) if i not in set(axes)]
        return kept or [1]

    def reduced_axes(self) -> list[int]:
        """The axes reduced: ``axes`` when given, else every axis (grid scope) or the
        last one (the other scopes)."""
        st = self.src.type
        assert isinstance(st, MemRefType)
        rank = len(st.get_shape())
        if self.axes is not None:
            return [a.value.data for a in self.axes.data]  # type: ignore[union-attr]
        return list(range(rank)) if self.scope.data == ExecScope.GRID else [rank - 1]

    def verify_(self) -> None:
        check_in_kernel(self)
        st = expect_buffer("src", self.src)
        dt = expect_buffer("dst", self.dst)
        grid_scope = self.scope.data == ExecScope.GRID
        check_element_type("src", st, grid=grid_scope)
        kind = self.kind.data
        fused = kind in FUSED_KINDS or self.prologue is not None or self.epilogue is not None
        if fused and not grid_scope:
            what = f"'kind' {kind}" if kind in FUSED_KINDS else "a prologue or epilogue"
            raise VerifyException(f"{what} is only valid at grid scope, got scope {self.scope.data}")
        nonzero = [m.map_fn for m in self.maps("prologue")] == [MapFn.NONZERO]
        if any(m.map_fn == MapFn.NONZERO for m in self.maps("prologue")) and not nonzero:
            raise VerifyException("'prologue' map 'nonzero' must be the only map, got " + ", ".join(
                str(m.map_fn) for m in self.maps("prologue")))
        if kind in INDEX_KINDS:
            if dt.element_type != i64:
                raise VerifyException(f"'dst' element type of kind {kind} must be i64 (the index), got {dt.element_type}")
        elif nonzero:
            check_nonzero_dst(kind, dt.element_type)
        elif st.element_type != dt.element_type and self.casts_first:
            check_cast_dst(kind, st.element_type, dt.element_type)
        elif st.element_type != dt.element_type:
            check_dst_element_type(kind, st.element_type, dt.element_type, grid=grid_scope)
        self._verify_fused(st, dt)
        src_shape = check_static_positive_shape("src", st)
        if self.pairs is not None:
            check_pairs(self, st, src_shape)
        dst_shape = check_static_positive_shape("dst", dt)
        if not src_shape:
            raise VerifyException("'src' must have at least one dimension")
        scope = self.scope.data
        grid = scope == ExecScope.GRID
        if grid and len(src_shape) > MAX_GRID_RANK:
            raise VerifyException(
                f"'src' of a grid-scope reduction must have rank 1 to {MAX_GRID_RANK}, got rank {len(src_shape)}"
            )
        axes: list[int] | None = None
        if self.axes is not None:
            if not grid:
                raise VerifyException(f"'axes' is only valid at grid scope, got scope {scope}")
            axes = self.reduced_axes()
            check_axes(axes, len(src_shape))
        elif grid:
            axes = list(range(len(src_shape)))
        if self.deterministic is not None and not grid:
            raise VerifyException(f"'deterministic' is only valid at grid scope, got scope {scope}")
        if grid:
            for field, t in (("src", st), ("dst", dt)):
                if scope_of(t) != MemoryScope.GLOBAL:
                    raise VerifyException(f"operand '{field}' must be in scope global at grid scope, got {scope_of(t)}")
            check_grid_view("src", st)
        want = self.expected_dst_shape(src_shape, axes)
        if dst_shape != want:
            what = f"over axes {axes}" if grid else "along its last axis"
            raise VerifyException(
                f"'dst' shape must be {want} to reduce 'src' {src_shape} {what}, got {dst_shape}"
            )
        if self.kind.data in BITWISE_KINDS and not isinstance(st.element_type, IntegerType):
            raise VerifyException(
                f"'kind' {self.kind.data} needs an integer element type, got {st.element_type}"
            )
        if [m.map_fn for m in self.maps("prologue")] != [MapFn.NONZERO]:
            check_bool_kind(self.kind.data, st.element_type, dt.element_type)
        if self.ignore_nan is not None:
            if self.kind.data not in MINMAX_KINDS:
                raise VerifyException(f"'ignore_nan' is only valid with kind max or min, got kind {self.kind.data}")
            if isinstance(st.element_type, IntegerType):
                raise VerifyException(
                    f"'ignore_nan' is only valid with a floating-point element type, got {st.element_type}"
                )

    @property
    def casts_first(self) -> bool:
        """The prologue starts with ``cast``: each element is converted to ``dst``'s
        element type first (:func:`check_cast_dst`)."""
        maps = self.maps("prologue")
        return bool(maps) and maps[0].map_fn == MapFn.CAST

    def maps(self, field: str) -> list[MapAttr]:
        """The ``prologue`` or ``epilogue`` maps, in order (none: [])."""
        a = self.prologue if field == "prologue" else self.epilogue
        return list(a.data) if a is not None else []  # type: ignore[union-attr]

    def _verify_fused(self, st: MemRefType, dt: MemRefType) -> None:
        kind = self.kind.data
        src, dst = st.element_type, dt.element_type
        if kind in FLOAT_ONLY_KINDS and isinstance(src, IntegerType) and not (self.casts_first and not isinstance(dst, IntegerType)):
            raise VerifyException(f"'kind' {kind} needs a floating-point element type, got {src}")
        # the accumulator: a wider dst's type, else src's accumulator (docs/scopes.md)
        s_dt = of_ir(src)
        acc = dst if kind not in INDEX_KINDS and dst != src else (s_dt.accumulator.ir if s_dt is not None else src)
        check_maps("prologue", self.maps("prologue"), PROLOGUE_MAPS, acc, kind)
        check_maps("epilogue", self.maps("epilogue"), EPILOGUE_MAPS, acc, kind)
        if self.epilogue is not None and self.accum is not None:
            raise VerifyException("'epilogue' is not valid with 'accum' (the epilogue applies to the final result)")
        if self.correction is not None:
            if kind != ReduceKind.VAR:
                raise VerifyException(f"'correction' is only valid with kind var, got kind {kind}")
            c = self.correction.value.data
            if isinstance(self.correction, FloatAttr) and self.correction.type != f64:
                raise VerifyException(f"'correction' must be an i64 or f64 attribute, got type {self.correction.type}")
            if isinstance(self.correction, IntegerAttr) and self.correction.type != i64:
                raise VerifyException(f"'correction' must be an i64 or f64 attribute, got type {self.correction.type}")
            if not math.isfinite(c):  # a negative one is taken, as torch takes it: N - correction > N
                raise VerifyException(f"'correction' must be finite, got {c}")
        if kind in FUSED_KINDS and self.accum is not None:
            raise VerifyException(f"'accum' is not valid with kind {kind}")
        if kind in FUSED_KINDS and self.ignore_nan is not None:
            raise VerifyException(f"'ignore_nan' is not valid with kind {kind}")
        exp_sub = any(m.map_fn == MapFn.EXP_SUB for m in self.maps("prologue"))
        if exp_sub and kind in FUSED_KINDS:
            why = "its 'aux' is an output" if kind in (*INDEX_KINDS, ReduceKind.VAR, ReduceKind.MINMAX) else "a plain kind's map"
            raise VerifyException(f"'prologue' map 'exp_sub' is not valid with kind {kind} ({why})")
        if exp_sub and self.aux is None:
            raise VerifyException("'prologue' map 'exp_sub' needs 'aux', the buffer of c (one per output), got none")
        if kind == ReduceKind.MINMAX and self.aux is None:
            raise VerifyException("'kind' minmax needs 'aux', the buffer of the maximum ('dst' receives the minimum), got none")
        if self.aux is not None:
            if kind not in INDEX_KINDS and kind not in (ReduceKind.VAR, ReduceKind.MINMAX) and not exp_sub:
                raise VerifyException(
                    "'aux' is only valid with kind argmax, argmin, var or minmax, or with the prologue map exp_sub, "
                    f"got kind {kind}"
                )
            at = expect_buffer("aux", self.aux)
            want = src if kind in INDEX_KINDS else dst
            if at.element_type != want:
                what = (
                    "the values (src's element type)" if kind in INDEX_KINDS
                    else "the mean (dst's element type)" if kind == ReduceKind.VAR
                    else "the maximum (dst's element type)" if kind == ReduceKind.MINMAX
                    else "exp_sub's c (dst's element type)"
                )
                raise VerifyException(f"'aux' element type must be {want}, {what}, got {at.element_type}")
            want_shape = list(dt.get_shape()) + ([2] if self.pairs is not None else [])  # a complex mean: (re, im)
            if list(at.get_shape()) != want_shape:
                what = "dst's shape and a pair axis" if self.pairs is not None else "dst's"
                raise VerifyException(f"'aux' shape must be {what} {want_shape}, got {list(at.get_shape())}")
            if scope_of(at) != MemoryScope.GLOBAL:
                raise VerifyException(f"operand 'aux' must be in scope global at grid scope, got {scope_of(at)}")
            if not isinstance(at.layout, NoneAttr):
                raise VerifyException(f"'aux' must be contiguous (no layout), got {at.layout}")

    @property
    def propagates_nan(self) -> bool:
        """Whether a NaN input makes the result NaN (float max/min without ``ignore_nan``;
        sum and prod propagate NaN by their arithmetic anyway)."""
        return self.ignore_nan is None
