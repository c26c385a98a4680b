"""``bulkred.normalize_rows``: reduce each row of a global M x N buffer, then write an
elementwise function of the row and its statistics (docs/rows.md).

One op says the whole row normalization: what is reduced (the row's statistics) and
what is written (``y``, and optionally the statistics the backward needs), so that a
lowering reads ``x`` once and writes ``y`` once, with the row on chip in between.

==============  ===========================================  ===========================
kind            y (every statistic in float32)                statistics it may store
==============  ===========================================  ===========================
``softmax``     ``exp(x - max) / sum``                        ``max``, ``sum`` (of
                                                              ``exp(x - max)``)
``log_softmax`` ``x - max - log(sum)``                        ``max``, ``sum``
``rms_norm``    ``x * rstd * weight``,                        ``rstd``
                ``rstd = 1 / sqrt(mean(x^2) + eps)``
``layer_norm``  ``(x - mean) * rstd * weight + bias``,        ``mean``, ``rstd``
                ``rstd = 1 / sqrt(var(x) + eps)`` (biased)
``add_rms_norm`` ``h = x + residual`` (rounded to x's type)     ``rstd``
                is written to ``residual_out``, then
                ``y = h * rstd * weight`` (rms_norm of h)
``cross_entropy`` no y: ``loss = lse - (1 - s) * x[target]``   ``lse`` (``max + log(sum)``)
                ``- s * mean(x)`` per row (s the label
                smoothing; 0 where target is ignore_index)
``softmax_backward``  x is softmax's output, ``grad`` its    (none)
                gradient: ``y = x * (grad - sum(grad * x))``
                (dx)
``log_softmax_backward``  x is log_softmax's output:          (none)
                ``y = grad - exp(x) * sum(grad)`` (dx)
``rms_norm_backward``  x is the forward's input (add_rms_norm:  reads ``rstd``
                h), ``grad`` = dy: ``xhat = x * rstd``,
                ``g = dy * weight``, ``y = rstd * (g - xhat
                * mean(g * xhat))`` (dx); ``dweight =
                sum over rows of dy * xhat``
``layer_norm_backward``  ``xhat = (x - mean) * rstd``,          reads ``mean``, ``rstd``
                ``y = rstd * (g - mean(g) - xhat *
                mean(g * xhat))``; ``dweight = sum dy *
                xhat``, ``dbias = sum dy`` (over rows)
``cross_entropy_backward``  x the logits, ``grad`` the loss's  reads ``lse``
                gradient per row: ``y = (exp(x - lse) - s /
                N - (1 - s) [j == target]) * grad[row]``
                (dx); 0 where target is ignore_index
==============  ===========================================  ===========================

Operands:

* ``x``: global, rank 2, shape ``[M, N]``, float32, bfloat16 or float16; either
  contiguous or a view ``strided<[S, 1]>`` with ``S >= N`` (padded rows; the last
  dimension contiguous, offset 0). M may be dynamic (``?``: one kernel for every M, M
  given at the launch; then every ``[M, N]`` and ``[M]`` operand has ``?`` rows); N is
  static.
* ``y``: global, the shape and element type of ``x``, contiguous or ``strided<[S', 1]>``
  with ``S' >= N``; required by every kind but cross_entropy, which takes none (its dx in
  the same pass is next).
* ``grad`` (the backward kinds, required): the gradient of the forward's output, x's
  shape and element type, contiguous or ``strided<[S, 1]>``; cross_entropy_backward's
  is the loss's, global contiguous float32 ``[M]`` (reduction ``mean``: 1 / count of
  the rows kept, per row).
* ``target`` (cross_entropy and cross_entropy_backward, required): global contiguous
  ``i64`` ``[M]``, a class index per row; a row whose target is ``ignore_index`` (default -100) has loss 0; another
  target outside ``[0, N)`` gives NaN. ``loss`` (cross_entropy, required): global
  contiguous float32 ``[M]``. ``label_smoothing`` (default 0): a float in [0, 1].
* ``reduced`` with ``reduction`` (cross_entropy, optional, both or neither): global
  contiguous ``[1]`` of x's element type or float32, the loss rows reduced in the same
  kernel: ``"sum"`` their sum, ``"mean"`` that sum divided by the count of rows whose
  target is not ignore_index (NaN when there is none, as torch), rounded once. The CTA
  that finishes last (a ticket in the kernel's workspace) adds the ``[M]`` losses in a
  fixed order (thread t: rows t, t + T, ...; then the CTA's fixed tree): the bits depend
  on the rows and on N and the dtype (the block), not on the grid, and not on the run.
* ``residual`` and ``residual_out`` (add_rms_norm, both required there): the shape and
  element type of ``x``, contiguous or ``strided<[S, 1]>`` as x; ``residual_out`` may not
  be ``x`` or ``residual`` (a separate buffer).
* ``weight`` (rms_norm, layer_norm, add_rms_norm) and ``bias`` (layer_norm): global ``[N]``,
  contiguous, of ``x``'s element type or float32. Without them: 1 and 0.
* ``eps`` (rms_norm and layer_norm only, required there): a float >= 0.
* ``max``, ``sum`` (softmax, log_softmax), ``mean`` (layer_norm), ``rstd`` (rms_norm,
  layer_norm, add_rms_norm), ``lse`` (cross_entropy): global contiguous float32 ``[M]``,
  one value per row; written by those kinds, read (required) by their backward kinds
  (``mean`` and ``rstd`` by layer_norm_backward, ``rstd`` by rms_norm_backward, ``lse``
  by cross_entropy_backward).
* ``weight`` also for rms_norm_backward and layer_norm_backward (the forward's; 1 when
  absent). ``dweight`` (the norms' backward, with ``weight``) and ``dbias``
  (layer_norm_backward): global contiguous ``[N]`` of x's element type or float32, the
  sums over the rows, accumulated as float32 partial rows, one per CTA (or cluster), which
  the last CTA to finish adds in CTA order: their bits do not change from run to run
  (they depend on the rows, and on the grid launched for M). The lowering takes a
  workspace for the partials (the runtime passes it).

Accumulation is in float32; ``y`` is rounded once to its element type. A NaN in a row
makes its softmax NaN; a row of -inf gives NaN (torch's results).

Example::

    bulkred.normalize_rows rms_norm %x, %y weight %w : memref<4096xbf16, #bulkred.scope<global>>
        eps 1.0e-06 : f32 rstd %r : memref<64xf32, #bulkred.scope<global>>
        : memref<64x4096xbf16, #bulkred.scope<global>>, memref<64x4096xbf16, #bulkred.scope<global>>

Room to grow (issue 30): cross-entropy's dx in the same pass as its loss, further
normalizations: each a kind with named operands, as these are.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IntegerAttr,
    i64,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    bf16,
    f16,
    f32,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_attr_definition, operand_def, opt_operand_def, opt_prop_def, prop_def
from xdsl.irdl.operations import AttrSizedOperandSegments
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from bulkred_dialect.ops.op_definition import op_definition
from bulkred_dialect.ops.tile.attrs import MemoryScope
from bulkred_dialect.ops.tile.buffers import check_in_kernel, expect_buffer


class NormKind(StrEnum):
    """What ``bulkred.normalize_rows`` writes (the module docstring's table)."""

    SOFTMAX = "softmax"
    LOG_SOFTMAX = "log_softmax"
    RMS_NORM = "rms_norm"
    LAYER_NORM = "layer_norm"
    ADD_RMS_NORM = "add_rms_norm"
    CROSS_ENTROPY = "cross_entropy"
    SOFTMAX_BACKWARD = "softmax_backward"
    LOG_SOFTMAX_BACKWARD = "log_softmax_backward"
    RMS_NORM_BACKWARD = "rms_norm_backward"
    LAYER_NORM_BACKWARD = "layer_norm_backward"
    CROSS_ENTROPY_BACKWARD = "cross_entropy_backward"


@irdl_attr_definition
class NormKindAttr(EnumAttribute[NormKind], SpacedOpaqueSyntaxAttribute):
    name = "bulkred.norm_kind"


ROW_ELEMENT_TYPES: tuple[Attribute, ...] = (f32, bf16, f16)
"""The element types of ``x`` and ``y``."""

SOFTMAX_KINDS = (NormKind.SOFTMAX, NormKind.LOG_SOFTMAX)
NORM_KINDS = (NormKind.RMS_NORM, NormKind.LAYER_NORM, NormKind.ADD_RMS_NORM)
RMS_KINDS = (NormKind.RMS_NORM, NormKind.ADD_RMS_NORM)

NORM_BACKWARD_KINDS = (NormKind.RMS_NORM_BACKWARD, NormKind.LAYER_NORM_BACKWARD)
"""The norms' backward: dx, and the per-column sums dweight (and dbias)."""
CE_KINDS = (NormKind.CROSS_ENTROPY, NormKind.CROSS_ENTROPY_BACKWARD)

STATS: dict[str, tuple[NormKind, ...]] = {
    "row_max": SOFTMAX_KINDS,
    "row_sum": SOFTMAX_KINDS,
    "mean": (NormKind.LAYER_NORM, NormKind.LAYER_NORM_BACKWARD),
    "rstd": NORM_KINDS + NORM_BACKWARD_KINDS,
    "lse": CE_KINDS,
}
"""Each statistic operand and the kinds that take it: the forward kinds store it, the
backward kinds read it (:data:`STATS_READ`)."""

STATS_READ: dict[NormKind, tuple[str, ...]] = {
    NormKind.RMS_NORM_BACKWARD: ("rstd",),
    NormKind.LAYER_NORM_BACKWARD: ("mean", "rstd"),
    NormKind.CROSS_ENTROPY_BACKWARD: ("lse",),
}
"""The statistics a backward kind reads (required there), as its forward stored them."""

SOFTMAX_BACKWARD_KINDS = (NormKind.SOFTMAX_BACKWARD, NormKind.LOG_SOFTMAX_BACKWARD)
GRAD_ROWS_KINDS = SOFTMAX_BACKWARD_KINDS + NORM_BACKWARD_KINDS
"""The kinds whose ``grad`` is a gradient row per row of x (x's shape and type)."""
BACKWARD_KINDS = GRAD_ROWS_KINDS + (NormKind.CROSS_ENTROPY_BACKWARD,)
"""Every kind that takes ``grad`` (cross_entropy_backward's: float32 ``[M]``, the loss's)."""

REDUCTIONS = ("mean", "sum")
"""cross_entropy's ``reduction`` into its ``reduced`` scalar (``'none'``: the ``loss`` rows)."""

RESIDUAL = ("residual", "residual_out")
"""add_rms_norm's second input and its output ``x + residual``."""

AFFINE: dict[str, tuple[NormKind, ...]] = {
    "weight": NORM_KINDS + NORM_BACKWARD_KINDS,
    "bias": (NormKind.LAYER_NORM,),
}
"""The optional affine operands and the kinds that take them."""

PARAM_GRADS: dict[str, tuple[NormKind, ...]] = {
    "dweight": NORM_BACKWARD_KINDS,
    "dbias": (NormKind.LAYER_NORM_BACKWARD,),
}
"""The optional outputs of the norms' backward: the column sums of ``dy * xhat`` and of ``dy``."""


def _kinds(kinds: tuple[NormKind, ...]) -> str:
    names = [str(k) for k in kinds]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def row_stride(t: MemRefType) -> int:
    """The element stride between rows of a rank-2 ``x`` or ``y`` (N when contiguous)."""
    if isinstance(t.layout, StridedLayoutAttr):
        s = t.get_strides()
        assert s is not None and s[0] is not None
        return int(s[0])
    return t.get_shape()[1]


def _shape(t: MemRefType) -> str:
    """A shape for a message: ``[?, 64]``."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in t.get_shape()) + "]"


def _check_rows(field: str, v: SSAValue) -> MemRefType:
    """``x`` / ``y``: a global [M, N] float buffer, contiguous or ``strided<[S, 1]>``,
    ``S >= N``, offset 0."""
    t = expect_buffer(field, v, [MemoryScope.GLOBAL])
    shape = list(t.get_shape())
    if len(shape) != 2:
        raise VerifyException(f"operand '{field}' must have rank 2 ([M, N] rows), got rank {len(shape)}")
    dims = ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape)
    if shape[1] == DYNAMIC_INDEX:
        raise VerifyException(
            f"operand '{field}' must have a static row length N (dimension 1; only M may be ?), got [{dims}]"
        )
    if any(d < 1 and d != DYNAMIC_INDEX for d in shape):
        raise VerifyException(f"operand '{field}' must have sizes >= 1 (M may be ?), got [{dims}]")
    if t.element_type not in ROW_ELEMENT_TYPES:
        valid = ", ".join(str(e) for e in ROW_ELEMENT_TYPES)
        raise VerifyException(f"operand '{field}' element type must be one of {valid}, got {t.element_type}")
    if isinstance(t.layout, NoneAttr):
        return t
    if not isinstance(t.layout, StridedLayoutAttr):
        raise VerifyException(f"operand '{field}' must have a strided<[S, 1]> layout or none, got {t.layout}")
    strides = t.get_strides() or []
    shown = ", ".join("?" if s is None else str(s) for s in strides)
    if None in strides or strides[1] != 1:
        raise VerifyException(
            f"operand '{field}' must have static strides [S, 1] (the last dimension contiguous), got [{shown}]"
        )
    if strides[0] < shape[1]:
        raise VerifyException(
            f"operand '{field}' row stride must be >= the row length {shape[1]} (rows may not overlap), got {strides[0]}"
        )
    if t.get_offset() != 0:
        off = t.get_offset()
        raise VerifyException(
            f"operand '{field}' must have offset 0 (the parameter points at the first row), "
            f"got offset {'?' if off is None else off}"
        )
    return t


def _check_vector(field: str, v: SSAValue, length: int, elements: tuple[Attribute, ...]) -> None:
    """A global contiguous [length] buffer of one of ``elements``."""
    t = expect_buffer(field, v, [MemoryScope.GLOBAL])
    if t.element_type not in elements:
        valid = " or ".join(str(e) for e in dict.fromkeys(elements))
        raise VerifyException(f"operand '{field}' element type must be {valid}, got {t.element_type}")
    shape = list(t.get_shape())
    if shape != [length]:
        dims = ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape)
        want = "?" if length == DYNAMIC_INDEX else str(length)
        rows = " (x's M is ?: one value per row)" if length == DYNAMIC_INDEX else ""
        raise VerifyException(f"operand '{field}' shape must be [{want}]{rows}, got [{dims}]")
    if not isinstance(t.layout, NoneAttr):
        raise VerifyException(f"operand '{field}' must be contiguous (no layout), got {t.layout}")


@op_definition
class NormalizeRowsOp(IRDLOperation):
    """Reduce each row of ``x`` and write ``y``, an elementwise function of the row and its
    statistics (the module docstring: kinds, operands, rules).

    ``variant`` forces a lowering variant by name (passes/variants/rows_*.py)."""

    name = "bulkred.normalize_rows"

    kind = prop_def(NormKindAttr)
    eps = opt_prop_def(FloatAttr)
    ignore_index = opt_prop_def(IntegerAttr)
    label_smoothing = opt_prop_def(FloatAttr)
    variant = opt_prop_def(StringAttr)
    reduction = opt_prop_def(StringAttr)
    x = operand_def(MemRefType)
    y = opt_operand_def(MemRefType)
    target = opt_operand_def(MemRefType)
    loss = opt_operand_def(MemRefType)
    grad = opt_operand_def(MemRefType)
    residual = opt_operand_def(MemRefType)
    residual_out = opt_operand_def(MemRefType)
    weight = opt_operand_def(MemRefType)
    bias = opt_operand_def(MemRefType)
    row_max = opt_operand_def(MemRefType)
    row_sum = opt_operand_def(MemRefType)
    mean = opt_operand_def(MemRefType)
    rstd = opt_operand_def(MemRefType)
    lse = opt_operand_def(MemRefType)
    dweight = opt_operand_def(MemRefType)
    dbias = opt_operand_def(MemRefType)
    reduced = opt_operand_def(MemRefType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kind (`variant` $variant^)? $x (`,` $y^)? (`target` $target^ `:` type($target))? "
        "(`loss` $loss^ `:` type($loss))? (`ignore_index` $ignore_index^)? (`label_smoothing` $label_smoothing^)? "
        "(`grad` $grad^ `:` type($grad))? "
        "(`residual` $residual^ `:` type($residual))? "
        "(`residual_out` $residual_out^ `:` type($residual_out))? (`weight` $weight^ `:` type($weight))? "
        "(`bias` $bias^ `:` type($bias))? (`eps` $eps^)? "
        "(`max` $row_max^ `:` type($row_max))? (`sum` $row_sum^ `:` type($row_sum))? "
        "(`mean` $mean^ `:` type($mean))? (`rstd` $rstd^ `:` type($rstd))? (`lse` $lse^ `:` type($lse))? "
        "(`dweight` $dweight^ `:` type($dweight))? (`dbias` $dbias^ `:` type($dbias))? "
        "(`reduction` $reduction^)? (`reduced` $reduced^ `:` type($reduced))? "
        "attr-dict `:` type($x) (`,` type($y)^)?"
    )

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "target", "loss", "grad", "residual", "residual_out", "weight", "bias", "row_max", "row_sum", "mean", "rstd", "lse",
        "dweight", "dbias", "reduced",
    )

    def __init__(
        self,
        kind: NormKind | str,
        x: SSAValue,
        y: SSAValue | None,
        *,
        eps: float | None = None,
        ignore_index: int | None = None,
        label_smoothing: float | None = None,
        variant: str | None = None,
        reduction: str | None = None,
        **optional: SSAValue | None,
    ):
        unknown = sorted(set(optional) - set(self.OPTIONAL))
        if unknown:
            raise TypeError(f"bulkred.normalize_rows takes no operand {', '.join(unknown)}")
        props: dict[str, Attribute] = {"kind": NormKindAttr(NormKind(kind))}
        if eps is not None:
            props["eps"] = FloatAttr(float(eps), f32)
        if ignore_index is not None:
            props["ignore_index"] = IntegerAttr(int(ignore_index), i64)
        if label_smoothing is not None:
            props["label_smoothing"] = FloatAttr(float(label_smoothing), f32)
        if variant is not None:
            props["variant"] = StringAttr(variant)
        if reduction is not None:
            props["reduction"] = StringAttr(reduction)
        opt = [[optional[k]] if optional.get(k) is not None else [] for k in self.OPTIONAL]
        super().__init__(operands=[x, [y] if y is not None else [], *opt], properties=props)

    @property
    def norm_kind(self) -> NormKind:
        return self.kind.data

    @property
    def rows(self) -> int | None:
        """M, None when it is dynamic (``memref<?xN>``: known at the launch)."""
        m = self.x.type.get_shape()[0]  # type: ignore[union-attr]
        return None if m == DYNAMIC_INDEX else m

    @property
    def cols(self) -> int:
        return self.x.type.get_shape()[1]  # type: ignore[union-attr]

    @property
    def ignored(self) -> int:
        """cross_entropy's ``ignore_index`` (torch's default, -100, when absent)."""
        return self.ignore_index.value.data if self.ignore_index is not None else -100

    @property
    def smoothing(self) -> float:
        """cross_entropy's ``label_smoothing`` (0 when absent)."""
        return self.label_smoothing.value.data if self.label_smoothing is not None else 0.0

    def verify_(self) -> None:
        check_in_kernel(self)
        kind = self.norm_kind
        xt = _check_rows("x", self.x)
        m, n = xt.get_shape()
        ce = kind == NormKind.CROSS_ENTROPY
        ce_kinds = kind in CE_KINDS
        if self.y is None and not ce:
            raise VerifyException(f"operand 'y' is required with kind {kind}, got none")
        if self.y is not None and ce:
            raise VerifyException(
                f"operand 'y' is not taken by kind {kind} (it writes 'loss'; dx in the same pass: not yet), got one"
            )
        if self.y is not None:
            yt = _check_rows("y", self.y)
            if list(yt.get_shape()) != [m, n]:
                raise VerifyException(f"operand 'y' shape must be x's {_shape(xt)}, got {_shape(yt)}")
            if yt.element_type != xt.element_type:
                raise VerifyException(f"operand 'y' element type must be x's {xt.element_type}, got {yt.element_type}")
        for field, element, kinds in (("target", i64, CE_KINDS), ("loss", f32, (NormKind.CROSS_ENTROPY,))):
            v = getattr(self, field)
            if v is None:
                if kind in kinds:
                    raise VerifyException(f"operand '{field}' is required with kind {kind}, got none")
                continue
            if kind not in kinds:
                raise VerifyException(f"operand '{field}' is only valid with kind {_kinds(kinds)}, got kind {kind}")
            _check_vector(field, v, m, (element,))
        self._verify_reduced(xt)
        for prop in ("ignore_index", "label_smoothing"):
            if getattr(self, prop) is not None and not ce_kinds:
                raise VerifyException(f"'{prop}' is only valid with kind {_kinds(CE_KINDS)}, got kind {kind}")
        if self.ignore_index is not None and self.ignore_index.type != i64:
            raise VerifyException(f"'ignore_index' must be an i64 attribute, got {self.ignore_index.type}")
        if self.label_smoothing is not None:
            ls = self.label_smoothing.value.data
            if self.label_smoothing.type != f32:
                raise VerifyException(f"'label_smoothing' must be an f32 attribute, got {self.label_smoothing.type}")
            if not 0.0 <= ls <= 1.0:
                raise VerifyException(f"'label_smoothing' must be in [0, 1], got {ls:g}")
        if self.grad is None and kind in BACKWARD_KINDS:
            raise VerifyException(f"operand 'grad' is required with kind {kind}, got none")
        if self.grad is not None and kind == NormKind.CROSS_ENTROPY_BACKWARD:  # the loss's gradient, per row
            _check_vector("grad", self.grad, m, (f32,))
        elif self.grad is not None:
            if kind not in BACKWARD_KINDS:
                raise VerifyException(f"operand 'grad' is only valid with kind {_kinds(BACKWARD_KINDS)}, got kind {kind}")
            gt = _check_rows("grad", self.grad)
            if list(gt.get_shape()) != [m, n] or gt.element_type != xt.element_type:
                raise VerifyException(
                    f"operand 'grad' must have x's shape {_shape(xt)} and element type {xt.element_type}, "
                    f"got {_shape(gt)} of {gt.element_type}"
                )
        for field in RESIDUAL:
            v = getattr(self, field)
            if v is None:
                if kind == NormKind.ADD_RMS_NORM:
                    raise VerifyException(f"operand '{field}' is required with kind {kind}, got none")
                continue
            if kind != NormKind.ADD_RMS_NORM:
                raise VerifyException(f"operand '{field}' is only valid with kind {NormKind.ADD_RMS_NORM}, got kind {kind}")
            t = _check_rows(field, v)
            if list(t.get_shape()) != [m, n] or t.element_type != xt.element_type:
                raise VerifyException(
                    f"operand '{field}' must have x's shape {_shape(xt)} and element type {xt.element_type}, "
                    f"got {_shape(t)} of {t.element_type}"
                )
        if self.residual_out is not None and self.residual_out in (self.x, self.residual, self.y):
            raise VerifyException("operand 'residual_out' must be a buffer of its own (not x, residual or y)")
        for field, kinds in AFFINE.items():
            v = getattr(self, field)
            if v is None:
                continue
            if kind not in kinds:
                raise VerifyException(f"operand '{field}' is only valid with kind {_kinds(kinds)}, got kind {kind}")
            _check_vector(field, v, n, (xt.element_type, f32))
        if self.weight is not None and self.bias is not None:
            wt, bt = self.weight.type.element_type, self.bias.type.element_type  # type: ignore[union-attr]
            if wt != bt:
                raise VerifyException(f"operand 'bias' element type must be weight's {wt}, got {bt}")
        for field, kinds in PARAM_GRADS.items():
            v = getattr(self, field)
            if v is None:
                continue
            if kind not in kinds:
                raise VerifyException(f"operand '{field}' is only valid with kind {_kinds(kinds)}, got kind {kind}")
            if field == "dweight" and self.weight is None:
                raise VerifyException("operand 'dweight' needs operand 'weight' (the gradient of a weight), got no weight")
            _check_vector(field, v, n, (xt.element_type, f32))
        for field, kinds in STATS.items():
            v = getattr(self, field)
            if v is None:
                if field in STATS_READ.get(kind, ()):
                    raise VerifyException(f"operand '{field}' is required with kind {kind} (the forward's), got none")
                continue
            if kind not in kinds:
                raise VerifyException(f"operand '{field}' is only valid with kind {_kinds(kinds)}, got kind {kind}")
            _check_vector(field, v, m, (f32,))
        if kind in NORM_KINDS:
            if self.eps is None:
                raise VerifyException(f"'eps' is required with kind {kind} (torch's default: 1e-5 or the dtype's eps), got none")
            e = self.eps.value.data
            if not (e >= 0.0 and e != float("inf")):
                raise VerifyException(f"'eps' must be a finite float >= 0, got {e:g}")
            if self.eps.type != f32:
                raise VerifyException(f"'eps' must be an f32 attribute, got {self.eps.type}")
        elif self.eps is not None:
            raise VerifyException(f"'eps' is only valid with kind {_kinds(NORM_KINDS)}, got kind {kind}")

    def _verify_reduced(self, xt: MemRefType) -> None:
        """cross_entropy's ``reduction`` and ``reduced``: both or neither, ``'mean'`` or
        ``'sum'``, a global contiguous ``[1]`` of x's element type or float32."""
        kind = self.norm_kind
        if self.reduced is None and self.reduction is None:
            return
        if kind != NormKind.CROSS_ENTROPY:
            field = "'reduction'" if self.reduction is not None else "operand 'reduced'"
            raise VerifyException(f"{field} is only valid with kind {NormKind.CROSS_ENTROPY}, got kind {kind}")
        if self.reduction is None:
            raise VerifyException("operand 'reduced' needs 'reduction' (\"mean\" or \"sum\"), got none")
        if self.reduction.data not in REDUCTIONS:
            raise VerifyException(f"'reduction' must be \"mean\" or \"sum\", got {self.reduction.data!r}")
        if self.reduced is None:
            raise VerifyException("'reduction' needs operand 'reduced' (the [1] result), got none")
        _check_vector("reduced", self.reduced, 1, (xt.element_type, f32))


ROW_OPS = [NormalizeRowsOp]
ROW_ATTRS = [NormKindAttr]
