"""How a grid-scope ``bulkred.reduce`` accumulates: :class:`Reducer`, the state of one
partial result (one or more registers), how an element joins it (after the prologue),
how two states combine, how a state moves through shuffles, shared memory and the
workspace, and how the final state becomes the stored result (the epilogue).

* a plain kind (sum, prod, max, min, and, or, xor, any, all): one register of the
  accumulator type; the element is the loaded value after the prologue maps;
* ``argmax`` / ``argmin``: the value and its index (``i32`` when the reduced count is
  below 2^31, else ``i64``; stored as ``int64``). ``b`` replaces ``a`` when
  it is larger (smaller) or NaN while ``a`` is not, or when both are equal (or both NaN)
  and ``b``'s index is lower: the first index among ties, NaN largest (as torch). The
  neutral state is (-inf or the lowest value, the index type's maximum), which any
  element replaces;
* ``var``: (count, mean, M2, shift), Welford's update per element (one ``rcp.approx`` of
  the count) of ``x - shift`` with ``shift`` the state's first element, and Chan's
  combination of two states (one ``div.rn``); the variance is ``M2 / (N - correction)``
  with N the static count of the reduced elements (``correction`` an int or a float), the
  mean ``shift + mean``. The shift keeps the running means small: unshifted, a float32
  mean near 1e4 is rounded to 2^-10 at every step, and those errors enter the squared
  differences of Chan's combination;
* ``logsumexp``: (shift, sum) with ``sum * exp(shift)`` the partial sum of ``exp(x)``;
  the shift is the running maximum clamped to the finite range [-FLT_MAX, FLT_MAX]
  ([-DBL_MAX, DBL_MAX] in float64; so that no ``inf - inf`` arises: -inf inputs add 0,
  +inf ones make the sum inf), and an element adds ``exp(x - shift')`` after rescaling
  the sum by ``exp(shift - shift')`` (two exps per element, one read of the data). The
  result is ``shift + log(sum)``;
* ``nanmean``: (sum, count) of the elements that are not NaN: an element adds itself
  (NaN as 0, as the map ``nan_zero``) to the sum and 1 (0 for a NaN) to the count, an
  integer register (``i32`` while the reduced count is below 2^31, else ``i64``: exact);
  two states add both. The result is ``sum / count`` (0 / 0: NaN where every element
  was NaN), then the epilogue;
* ``minmax``: (min, max), each the plain kind's register and instruction (float ``min``
  / ``max`` propagate NaN: ``.NaN``); the minimum is ``dst``'s result, the maximum
  ``aux``'s.

``pairs`` (complex numbers as (re, im), :meth:`Reducer.absorb_pair`): a pair becomes
one real value by the prologue's first map (``abs``: ``sqrt(re*re + im*im)``,
``square``: ``re*re + im*im``, ``pow p``: that ``** (p / 2)``, ``nonzero``: re or im
nonzero (NaN counts), as 1 or 0) and joins a plain kind's state; ``prod`` keeps (re, im)
and multiplies as complex numbers; ``var`` keeps (count, mean re, mean im, M2, shift re,
shift im): Welford's and Chan's steps on both parts with one M2 (``|z - mean|**2`` adds
both parts' squares), torch's variance of a complex tensor, and the complex mean.

The maps (``ops/tile/attrs.py``'s :class:`MapFn`) are applied in the accumulator type. exp and
log (logsumexp, ``pow``, ``log``, ``exp_sub``) are ``ex2.approx`` / ``lg2.approx`` of a
float32 accumulator and, of a float64 one, the routines of ``passes/f64_math.py``
(:meth:`Emitter.exp_f64` / :meth:`Emitter.log_f64`, within 1 ulp: PTX has no float64
``ex2``/``lg2``).

docs/fused.md ("Lowering") says why named maps and Welford, and what they cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import f32, f64, i64
from xdsl.ir import Attribute, SSAValue

from bulkred_dialect.ops.dtypes import DTYPES, DType
from bulkred_dialect.ops.ptx.arith import ArithType, MulOp, RcpOp, RoundingMode
from bulkred_dialect.ops.ptx.control import CmpOp, SelpOp, SetpOp, SetpType
from bulkred_dialect.ops.tile import INDEX_KINDS, MapAttr, MapFn, ReduceKind, ReduceOp
from bulkred_dialect.passes import trig_math
from bulkred_dialect.passes.elements import Elem, arith_types, ld_type, selp_type

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
FLT_MAX = 3.4028234663852886e38
DBL_MAX = 1.7976931348623157e308
INT64_MAX = 2**63 - 1

State = list[SSAValue]


@dataclass
class Reducer:
    """The accumulation of ``op`` (a grid-scope ``bulkred.reduce``) with ``elem``."""

    op: ReduceOp
    elem: Elem
    count: int = 1  # the elements reduced into each result (div_count, var)
    shifts: list[SSAValue] = field(default_factory=list)  # exp_sub's c of each vector lane's output
    kind: ReduceKind = field(init=False)
    prologue: list[MapAttr] = field(init=False)
    epilogue: list[MapAttr] = field(init=False)

    def __post_init__(self) -> None:
        self.kind = self.op.kind.data
        self.prologue = [m for m in self.op.maps("prologue") if m.map_fn != MapFn.CAST]
        self.epilogue = self.op.maps("epilogue")
        self.pairs = getattr(self.op, "pairs", None) is not None  # bulkred.reduce_list has no pairs

    @property
    def keeps_pair(self) -> bool:
        """``pairs`` with a complex result (``dst`` ends in the pair axis): ``prod``, a
        nansum (``sum`` with ``nan_zero``) and ``nanmean``."""
        nansum = self.kind == ReduceKind.SUM and any(m.map_fn == MapFn.NAN_ZERO for m in self.prologue)
        return self.pairs and (self.kind in (ReduceKind.PROD, ReduceKind.NANMEAN, ReduceKind.LOGSUMEXP) or nansum)

    @property
    def complex_state(self) -> bool:
        """``pairs`` with a complex state: (re, im) (:attr:`keeps_pair`; nanmean's with
        its count) or ``var``'s (a complex mean)."""
        return self.pairs and (self.kind == ReduceKind.VAR or self.keeps_pair)

    # region What the state is

    @property
    def plain(self) -> bool:
        """One register, no maps: the lowerings' own single-value code applies unchanged."""
        return self.width == 1 and not self.prologue and not self.epilogue

    @property
    def absmax(self) -> bool:
        """max or min of |x|: the prologue ends with ``abs`` (redux.sync's ``.abs``)."""
        return self.kind in (ReduceKind.MAX, ReduceKind.MIN) and bool(self.prologue) and self.prologue[-1].map_fn == MapFn.ABS

    @property
    def needs_index(self) -> bool:
        return self.kind in INDEX_KINDS

    @property
    def acc(self) -> DType:
        return self.elem.accumulator

    @property
    def dtypes(self) -> list[DType]:
        """The registers of a state, as table rows."""
        a = self.acc
        if self.kind in INDEX_KINDS:
            return [a, self.index_dtype]
        if self.complex_state and self.kind == ReduceKind.NANMEAN:
            return [a, a, self.count_dtype]  # sum re, sum im, the count of elements without a NaN part
        if self.complex_state and self.kind == ReduceKind.LOGSUMEXP:
            return [a, a, a]  # the shift (real), the sum's re and im
        if self.complex_state:
            return [a] * (6 if self.kind == ReduceKind.VAR else 2)  # var: count, mean re, im, M2, shift re, im
        if self.kind == ReduceKind.VAR:
            return [a, a, a, a]  # count, mean (of x - shift), M2, shift
        if self.kind in (ReduceKind.LOGSUMEXP, ReduceKind.MINMAX):
            return [a, a]
        if self.kind == ReduceKind.NANMEAN:
            return [a, self.count_dtype]
        return [a]

    @property
    def index_dtype(self) -> DType:
        """argmax/argmin's index register: int32 when every index and the neutral
        ``INT32_MAX`` fit (half the work of 64-bit adds and selects), else int64."""
        return DTYPES["int32"] if self.count < 2**30 else DTYPES["int64"]

    @property
    def count_dtype(self) -> DType:
        """nanmean's count register: int32 when every count fits, else int64."""
        return DTYPES["int32"] if self.count < 2**31 else DTYPES["int64"]

    @property
    def index_max(self) -> int:
        return 2**31 - 1 if self.index_dtype.bits == 32 else INT64_MAX

    def as_index(self, e, v: SSAValue) -> SSAValue:
        """An integer register (``i32`` or ``i64``) as the index type."""
        src = DTYPES["int64"] if v.type == i64 else DTYPES["int32"]
        return e.convert(v, src, self.index_dtype)

    @property
    def width(self) -> int:
        return len(self.dtypes)

    @property
    def types(self) -> list[Attribute]:
        from bulkred_dialect.passes.elements import register_type

        return [register_type(d) for d in self.dtypes]

    @property
    def offsets(self) -> list[int]:
        """Each register's byte offset in a slot (8-byte registers first)."""
        order = sorted(range(self.width), key=lambda k: -self.dtypes[k].bytes)
        offs = [0] * self.width
        at = 0
        for k in order:
            offs[k] = at
            at += self.dtypes[k].bytes
        return offs

    @property
    def slot_bytes(self) -> int:
        """The bytes of one stored state (a multiple of its widest register)."""
        widest = max(d.bytes for d in self.dtypes)
        total = sum(d.bytes for d in self.dtypes)
        return -(-total // widest) * widest

    # endregion

    # region States

    def neutral(self, e) -> State:
        a = self.acc
        ir = self.types[0]
        if self.kind in INDEX_KINDS:
            if a.is_float:
                v = -math.inf if self.kind == ReduceKind.ARGMAX else math.inf
            else:
                v = a.identity("max" if self.kind == ReduceKind.ARGMAX else "min")
            return [e.const(v, ir), e.const(self.index_max, self.types[1])]
        if self.complex_state and self.kind == ReduceKind.LOGSUMEXP:
            return [e.const(-self._finite_max, ir), e.const(0.0, ir), e.const(0.0, ir)]
        if self.complex_state:
            return [e.const((1.0 if self.kind == ReduceKind.PROD and k == 0 else 0.0) if d.is_float else 0, t)
                    for k, (d, t) in enumerate(zip(self.dtypes, self.types, strict=True))]
        if self.kind == ReduceKind.VAR:
            return [e.const(0.0, ir), e.const(0.0, ir), e.const(0.0, ir), e.const(0.0, ir)]
        if self.kind == ReduceKind.LOGSUMEXP:
            return [e.const(-self._finite_max, ir), e.const(0.0, ir)]
        if self.kind == ReduceKind.NANMEAN:
            return [e.const(0.0, ir), e.const(0, self.types[1])]
        if self.kind == ReduceKind.MINMAX:
            return [e.identity(ReduceKind.MIN, a), e.identity(ReduceKind.MAX, a)]
        return [e.identity(self.kind, a)]

    def neutrals(self, e, n: int) -> list[SSAValue]:
        """``n`` neutral states, flat."""
        return [v for _ in range(n) for v in self.neutral(e)]

    def split(self, flat: Sequence[SSAValue]) -> list[State]:
        w = self.width
        return [list(flat[i : i + w]) for i in range(0, len(flat), w)]

    @staticmethod
    def flat(states: Sequence[State]) -> list[SSAValue]:
        return [v for s in states for v in s]

    # endregion

    # region Elements

    @property
    def exp_sub(self) -> bool:
        """The prologue has ``exp_sub``: the variant loads each output's c from ``aux``
        (:meth:`load_shifts`) into :attr:`shifts` before it streams."""
        return any(m.map_fn == MapFn.EXP_SUB for m in self.prologue)

    def load_shifts(self, e, aux: SSAValue, index: SSAValue | int, lanes: int = 1) -> None:
        """:attr:`shifts` = c at ``aux[index + j]`` for the ``lanes`` vector lanes (``aux``
        the global address of the buffer, ``index`` an ``i64`` or int), in the
        accumulator type; nothing without ``exp_sub``."""
        if not self.exp_sub:
            return
        out = self.elem.out
        self.shifts = []
        for j in range(lanes):
            i = e.add_i(index, j) if isinstance(index, SSAValue) and j else index
            off = e.mul_i(i, out.bytes) if isinstance(i, SSAValue) else e.const(i * out.bytes, i64)
            c = e.ld(ld_type(out), e.ptr_add(aux, off), self.elem.out_ir)
            self.shifts.append(e.convert(c, out, self.acc))

    def map_value(self, e, maps: Sequence[MapAttr], v: SSAValue, t: DType, lane: int = 0) -> SSAValue:
        """``v`` (a register of ``t``, of vector lane ``lane``) through ``maps`` in order."""
        at, _ = arith_types(t)
        for m in maps:
            fn, arg = m.map_fn, m.value
            if fn in (MapFn.CAST, MapFn.NONZERO):  # nonzero: applied as the element is loaded (Elem.nonzero)
                continue
            if fn == MapFn.ABS:
                v = e.abs_(at, v) if (t.is_float or t.signed) else v
            elif fn == MapFn.SQUARE:
                v = e.combine(ReduceKind.PROD, t, v, v)
            elif fn == MapFn.SCALE:
                v = e.value(MulOp(at, v, e.const(arg, self.types[0]), rnd=RoundingMode.RN))
            elif fn == MapFn.POW:
                v = self._pow(e, at, v, arg, m in self.prologue)
            elif fn == MapFn.EXP_SUB:
                assert self.shifts, "the variant loads exp_sub's c (load_shifts) before it streams"
                v = self._exp(e, v, self.shifts[lane % len(self.shifts)])
            elif fn == MapFn.SQRT:
                v = e.sqrt(at, v)
            elif fn == MapFn.LOG:
                v = self._log(e, v)
            elif fn == MapFn.DIV_COUNT:
                v = e.div(at, v, e.const(float(self.count), self.types[0]))
            elif fn == MapFn.NAN_ZERO:
                v = self._nan_zero(e, at, v, self._is_number(e, at, v))
        return v

    @staticmethod
    def _is_number(e, at: ArithType, v: SSAValue) -> SSAValue:
        """``setp.num``: whether the float register ``v`` is not NaN."""
        return e.value(SetpOp(CmpOp.NUM, SetpType(at.value), v, v))

    @staticmethod
    def _nan_zero(e, at: ArithType, v: SSAValue, number: SSAValue) -> SSAValue:
        """``v``, or 0 where it is NaN (``number`` is :meth:`_is_number` of it)."""
        return _selp(e, v.type, v, e.const(0.0, v.type), number)

    def _pow(self, e, at: ArithType, v: SSAValue, p: float, of_abs: bool) -> SSAValue:
        """``|v| ** p`` (prologue) or ``v ** p`` (epilogue, v >= 0): exact forms for p = 1
        and 2, else ``ex2(p * lg2(|v|))`` in float32, ``exp(p * log(|v|))`` in float64
        (:meth:`Emitter.pow_f64`, log and product in two parts); ``log(0) = -inf`` gives 0
        for p > 0."""
        if of_abs:
            v = e.abs_(at, v)
        if p == 1.0:
            return v
        if p == 2.0:
            return e.combine(ReduceKind.PROD, self.acc, v, v)
        if p == 0.5:
            return e.sqrt(at, v)
        if at == ArithType.F64:
            return e.pow_f64(v, p)
        lg = e.lg2(v)
        return e.ex2(e.value(MulOp(at, lg, e.const(p, f32), rnd=RoundingMode.RN)))

    def element(self, e, v: SSAValue, lane: int = 0) -> SSAValue:
        """A loaded element (of vector lane ``lane``) in the accumulator type after the prologue."""
        return self.map_value(e, self.prologue, v, self.acc, lane) if self.prologue else v

    def absorb(self, e, s: State, v: SSAValue, index: SSAValue | None = None, lane: int = 0) -> State:
        """State ``s`` with one more element ``v`` (accumulator type, before the prologue)
        at ``index`` (of the index type, :meth:`as_index`; argmax/argmin only), of vector
        lane ``lane``."""
        v = self.element(e, v, lane)
        if self.width == 1:
            return [e.combine(self.kind, self.acc, s[0], v)]
        at, _ = arith_types(self.acc)
        if self.kind in INDEX_KINDS:
            # a lane's elements come in increasing index order: a tie keeps the earlier,
            # and any element replaces the neutral state (the index type's maximum)
            assert index is not None
            neutral = e.value(SetpOp(CmpOp.EQ, self._index_setp, s[1], e.const(self.index_max, self.types[1])))
            take = e.or_pred(self._better(e, at, s, [v, index]), neutral)
            return [_selp(e, self.types[0], v, s[0], take), _selp(e, self.types[1], index, s[1], take)]
        if self.kind == ReduceKind.VAR:
            n1 = self._count_up(e, s[0])
            return self._welford(e, at, s, v, n1, self._reciprocal(e, at, n1), self._is_empty(e, at, s[0]))
        if self.kind == ReduceKind.NANMEAN:
            # sum += (v NaN ? 0 : v); count += (v NaN ? 0 : 1)
            number = self._is_number(e, at, v)
            ct = self.types[1]
            one = _selp(e, ct, e.const(1, ct), e.const(0, ct), number)
            total = e.combine(ReduceKind.SUM, self.acc, s[0], self._nan_zero(e, at, v, number))
            return [total, e.combine(ReduceKind.SUM, self.count_dtype, s[1], one)]
        if self.kind == ReduceKind.MINMAX:
            return [e.combine(ReduceKind.MIN, self.acc, s[0], v), e.combine(ReduceKind.MAX, self.acc, s[1], v)]
        # logsumexp: shift' = clamp(max(shift, v)); sum' = sum * exp(shift - shift') + exp(v - shift')
        shift, total = s
        m = self._clamp(e, e.minmax(ReduceKind.MAX, at, shift, v))
        scaled = e.value(MulOp(at, total, self._exp(e, shift, m), rnd=RoundingMode.RN))
        return [m, e.combine(ReduceKind.SUM, self.acc, scaled, self._exp(e, v, m))]

    def absorb_pair(self, e, s: State, re: SSAValue, im: SSAValue, src: DType) -> State:
        """State ``s`` with one more complex element (``re``, ``im``: registers of
        ``src``, the source's float accumulator), of a ``pairs`` reduction."""
        at, _ = arith_types(self.acc)
        if self.acc.is_float and src != self.acc:  # a wider result (dtype=float64 of complex64): each part converted
            re, im = e.convert(re, src, self.acc), e.convert(im, src, self.acc)
            src = self.acc
        if self.kind == ReduceKind.PROD:  # (a + bi)(c + di) = (ac - bd) + (ad + bc)i
            return self._cmul(e, at, s, [re, im])
        if self.kind == ReduceKind.LOGSUMEXP:  # shift' = clamp(max(shift, re)); sum' = sum e^(shift - shift') + e^(z - shift')
            shift, sr, si = s
            m = self._clamp(e, e.minmax(ReduceKind.MAX, at, shift, re))
            scale, mag = self._exp(e, shift, m), self._exp(e, re, m)
            sin_, cos_ = self._sincos(e, im)
            return [m, e.fma(at, sr, scale, e.value(MulOp(at, mag, cos_, rnd=RoundingMode.RN))),
                    e.fma(at, si, scale, e.value(MulOp(at, mag, sin_, rnd=RoundingMode.RN)))]
        if self.keeps_pair:  # a nansum or nanmean: an element with a NaN part adds 0 (torch's _isnan of a complex)
            number = e.and_pred(self._is_number(e, at, re), self._is_number(e, at, im))
            t = self.types[0]
            out = [e.combine(ReduceKind.SUM, self.acc, s[0], self._nan_zero(e, at, re, number)),
                   e.combine(ReduceKind.SUM, self.acc, s[1], self._nan_zero(e, at, im, number))]
            if self.kind == ReduceKind.NANMEAN:
                ct = self.types[2]
                out.append(e.combine(ReduceKind.SUM, self.count_dtype, s[2], _selp(e, ct, e.const(1, ct), e.const(0, ct), number)))
            return out
        if self.kind == ReduceKind.VAR:
            return self._welford_pair(e, at, s, re, im)
        first, rest = self.prologue[0], self.prologue[1:]
        sat, _ = arith_types(src)
        if first.map_fn == MapFn.NONZERO:
            zero = e.const(0.0, re.type)
            st = SetpType(sat.value)
            pred = e.or_pred(e.value(SetpOp(CmpOp.NEU, st, re, zero)), e.value(SetpOp(CmpOp.NEU, st, im, zero)))
            t = self.types[0]
            one, none = (1.0, 0.0) if self.acc.is_float else (1, 0)
            v = _selp(e, t, e.const(one, t), e.const(none, t), pred)
        else:
            sq = e.fma(sat, re, re, e.value(MulOp(sat, im, im, rnd=RoundingMode.RN)))  # |z|^2
            if first.map_fn == MapFn.SQUARE:
                v = sq
            elif first.map_fn == MapFn.ABS or first.value == 1.0:
                v = e.sqrt(sat, sq)
            else:
                v = self._pow(e, sat, sq, 0.5 * first.value, False)  # |z|^p = (|z|^2)^(p/2)
        v = self.map_value(e, rest, v, self.acc) if rest else v
        return [e.combine(self.kind, self.acc, s[0], v)]

    @staticmethod
    def _cmul(e, at: ArithType, a: State, b: State) -> State:
        """The complex product of ``a`` and ``b`` (each (re, im))."""
        def mul(x: SSAValue, y: SSAValue) -> SSAValue:
            return e.value(MulOp(at, x, y, rnd=RoundingMode.RN))

        return [e.value(_sub(at, mul(a[0], b[0]), mul(a[1], b[1]))), e.fma(at, a[0], b[1], mul(a[1], b[0]))]

    def _welford_pair(self, e, at: ArithType, s: State, vr: SSAValue, vi: SSAValue) -> State:
        """Welford's step of a complex var state (:attr:`dtypes`) by ``vr + vi i``: each
        part's mean as :meth:`_welford`, one M2 of both parts' squared deviations."""
        n, mr, mi, q, kr, ki = s
        t = self.types[0]
        n1 = self._count_up(e, n)
        inv = self._reciprocal(e, at, n1)
        first = self._is_empty(e, at, n)
        kr, ki = _selp(e, t, vr, kr, first), _selp(e, t, vi, ki, first)
        yr, yi = e.value(_sub(at, vr, kr)), e.value(_sub(at, vi, ki))
        dr, di = e.value(_sub(at, yr, mr)), e.value(_sub(at, yi, mi))
        mr1, mi1 = e.fma(at, dr, inv, mr), e.fma(at, di, inv, mi)
        q1 = e.fma(at, dr, e.value(_sub(at, yr, mr1)), e.fma(at, di, e.value(_sub(at, yi, mi1)), q))
        return [n1, mr1, mi1, q1, kr, ki]

    def _chan_pair(self, e, at: ArithType, a: State, b: State) -> State:
        """Chan's combination of two complex var states (:meth:`_chan` on both parts,
        one M2): ``cross = |d|^2 * na * nb / n``."""
        na, mar, mai, qa, kar, kai = a
        nb, mbr, mbi, qb, kbr, kbi = b
        t = self.types[0]
        n = e.combine(ReduceKind.SUM, self.acc, na, nb)
        r = e.div(at, nb, e.minmax(ReduceKind.MAX, at, n, e.const(1.0, t)))
        out_means, cross = [], None
        for ma, mb, ka, kb in ((mar, mbr, kar, kbr), (mai, mbi, kai, kbi)):
            d = e.value(_sub(at, e.combine(ReduceKind.SUM, self.acc, e.value(_sub(at, kb, ka)), mb), ma))
            out_means.append(e.fma(at, d, r, ma))
            term = e.value(MulOp(at, e.value(MulOp(at, d, na, rnd=RoundingMode.RN)), e.value(MulOp(at, d, r, rnd=RoundingMode.RN)), rnd=RoundingMode.RN))
            cross = term if cross is None else e.combine(ReduceKind.SUM, self.acc, cross, term)
        q = e.combine(ReduceKind.SUM, self.acc, e.combine(ReduceKind.SUM, self.acc, qa, qb), cross)
        a_empty, b_empty = self._is_empty(e, at, na), self._is_empty(e, at, nb)
        out = [n]
        for mine, theirs, ours in ((mar, mbr, out_means[0]), (mai, mbi, out_means[1]), (qa, qb, q), (kar, kbr, kar), (kai, kbi, kai)):
            out.append(_selp(e, t, theirs, _selp(e, t, mine, ours, b_empty), a_empty))
        return out

    def absorb_item(self, e, states: list[State], vals: list[SSAValue], indices: list[SSAValue | None]) -> list[State]:
        """Each lane state with its element of one loaded item. The lanes of an item
        have absorbed the same number of elements, so var's count and its reciprocal
        are computed once for all of them."""
        if self.kind != ReduceKind.VAR or len(states) == 1:
            return [self.absorb(e, s, v, i, j) for j, (s, v, i) in enumerate(zip(states, vals, indices, strict=True))]
        at, _ = arith_types(self.acc)
        n1 = self._count_up(e, states[0][0])
        inv = self._reciprocal(e, at, n1)
        first = self._is_empty(e, at, states[0][0])
        out = []
        for j, (s, v) in enumerate(zip(states, vals, strict=True)):
            v = self.element(e, v, j)
            out.append(self._welford(e, at, s, v, n1, inv, first))
        return out

    def _count_up(self, e, n: SSAValue) -> SSAValue:
        """var: the count after one more element."""
        return e.combine(ReduceKind.SUM, self.acc, n, e.const(1.0, self.types[0]))

    @staticmethod
    def _reciprocal(e, at: ArithType, n: SSAValue) -> SSAValue:
        """``1 / n``: ``rcp.approx`` in f32, ``rcp.rn`` in f64."""
        return e.value(RcpOp(at, n, approx=True)) if at == ArithType.F32 else e.rcp(at, n)

    def _is_empty(self, e, at: ArithType, n: SSAValue) -> SSAValue:
        """var: whether the count ``n`` is 0 (a predicate)."""
        return e.value(SetpOp(CmpOp.EQ, SetpType(at.value), n, e.const(0.0, self.types[0])))

    def _welford(self, e, at: ArithType, s: State, v: SSAValue, n1: SSAValue, inv: SSAValue, first: SSAValue) -> State:
        """Welford's step of var's state ``s`` by the element ``v`` (after the prologue),
        ``n1`` the count after it, ``inv`` its reciprocal, ``first`` whether ``s`` is
        empty (then ``v`` becomes the state's shift): with ``y = v - shift`` and
        ``d = y - mean``, ``mean += d / n; M2 += d * (y - mean)``."""
        _, mean, m2, shift = s
        shift = _selp(e, self.types[0], v, shift, first)
        y = e.value(_sub(at, v, shift))  # exact where v and the shift are within a factor 2 (Sterbenz)
        d = e.value(_sub(at, y, mean))
        mean1 = e.fma(at, d, inv, mean)
        return [n1, mean1, e.fma(at, d, e.value(_sub(at, y, mean1)), m2), shift]

    # endregion

    # region Combining states

    def combine(self, e, a: State, b: State) -> State:
        if self.width == 1:
            return [e.combine(self.kind, self.acc, a[0], b[0])]
        at, _ = arith_types(self.acc)
        if self.complex_state and self.kind in (ReduceKind.SUM, ReduceKind.NANMEAN):
            dts = [self.acc, self.acc, self.count_dtype][: self.width]
            return [e.combine(ReduceKind.SUM, d, x, y) for d, x, y in zip(dts, a, b, strict=True)]
        if self.complex_state and self.kind == ReduceKind.LOGSUMEXP:
            m = e.minmax(ReduceKind.MAX, at, a[0], b[0])  # both finite (or NaN): no clamp needed
            xa, xb = self._exp(e, a[0], m), self._exp(e, b[0], m)
            return [m, *(e.fma(at, pb, xb, e.value(MulOp(at, pa, xa, rnd=RoundingMode.RN))) for pa, pb in zip(a[1:], b[1:], strict=True))]
        if self.complex_state:
            return self._chan_pair(e, at, a, b) if self.kind == ReduceKind.VAR else self._cmul(e, at, a, b)
        if self.kind in INDEX_KINDS:
            take = self._takes(e, at, a, b)
            return [_selp(e, self.types[0], b[0], a[0], take), _selp(e, self.types[1], b[1], a[1], take)]
        if self.kind == ReduceKind.VAR:
            return self._chan(e, at, a, b)
        if self.kind == ReduceKind.NANMEAN:
            return [e.combine(ReduceKind.SUM, self.acc, a[0], b[0]), e.combine(ReduceKind.SUM, self.count_dtype, a[1], b[1])]
        if self.kind == ReduceKind.MINMAX:
            return [e.combine(ReduceKind.MIN, self.acc, a[0], b[0]), e.combine(ReduceKind.MAX, self.acc, a[1], b[1])]
        sa, ta = a
        sb, tb = b
        m = e.minmax(ReduceKind.MAX, at, sa, sb)  # both finite (or NaN): no clamp needed
        x = e.value(MulOp(at, ta, self._exp(e, sa, m), rnd=RoundingMode.RN))
        return [m, e.fma(at, tb, self._exp(e, sb, m), x)]

    def _chan(self, e, at: ArithType, a: State, b: State) -> State:
        """Chan's combination of var's states ``a`` and ``b``, in ``a``'s shift: ``b``'s
        mean is ``(shift_b - shift_a) + mean_b`` there. An empty state (count 0) gives
        the other unchanged (its shift is no element's)."""
        na, ma, qa, ka = a
        nb, mb, qb, kb = b
        t = self.types[0]
        n = e.combine(ReduceKind.SUM, self.acc, na, nb)
        one = e.const(1.0, t)
        r = e.div(at, nb, e.minmax(ReduceKind.MAX, at, n, one))  # nb / n
        mb_a = e.combine(ReduceKind.SUM, self.acc, e.value(_sub(at, kb, ka)), mb)
        d = e.value(_sub(at, mb_a, ma))
        mean = e.fma(at, d, r, ma)
        # M2 = qa + qb + d^2 * na * nb / n = qa + qb + (d * na) * (d * r)
        cross = e.value(MulOp(at, e.value(MulOp(at, d, na, rnd=RoundingMode.RN)), e.value(MulOp(at, d, r, rnd=RoundingMode.RN)), rnd=RoundingMode.RN))
        q = e.combine(ReduceKind.SUM, self.acc, e.combine(ReduceKind.SUM, self.acc, qa, qb), cross)
        a_empty, b_empty = self._is_empty(e, at, na), self._is_empty(e, at, nb)
        out = [n]
        for mine, theirs, ours in ((ma, mb, mean), (qa, qb, q), (ka, kb, ka)):
            out.append(_selp(e, t, theirs, _selp(e, t, mine, ours, b_empty), a_empty))
        return out

    @property
    def _index_setp(self) -> SetpType:
        return SetpType.S32 if self.index_dtype.bits == 32 else SetpType.S64

    def _better(self, e, at: ArithType, a: State, b: State) -> SSAValue:
        """Whether ``b``'s value beats ``a``'s (argmax: larger; argmin: smaller; a NaN
        beats a number)."""
        st = SetpType(at.value)
        if not self.acc.is_float:
            return e.value(SetpOp(CmpOp.GT if self.kind == ReduceKind.ARGMAX else CmpOp.LT, st, b[0], a[0]))
        # b > a or (b NaN and a not): gtu(b, a) and num(a, a)
        gtu = e.value(SetpOp(CmpOp.GTU if self.kind == ReduceKind.ARGMAX else CmpOp.LTU, st, b[0], a[0]))
        return e.and_pred(gtu, e.value(SetpOp(CmpOp.NUM, st, a[0], a[0])))

    def _takes(self, e, at: ArithType, a: State, b: State) -> SSAValue:
        """Whether ``b`` replaces ``a`` (argmax/argmin): better, or tied and earlier."""
        st = SetpType(at.value)
        earlier = e.value(SetpOp(CmpOp.LT, self._index_setp, b[1], a[1]))
        better = self._better(e, at, a, b)
        if not self.acc.is_float:
            tie = e.value(SetpOp(CmpOp.EQ, st, b[0], a[0]))
            return e.or_pred(better, e.and_pred(tie, earlier))
        a_num = e.value(SetpOp(CmpOp.NUM, st, a[0], a[0]))
        # tied: equal numbers, or both NaN
        eq = e.value(SetpOp(CmpOp.EQ, st, b[0], a[0]))
        b_nan = e.value(SetpOp(CmpOp.NAN, st, b[0], b[0]))
        tie = e.or_pred(eq, e.and_pred(e.not_pred(a_num), b_nan))
        return e.or_pred(better, e.and_pred(tie, earlier))

    def fold(self, e, states: Sequence[State]) -> State:
        """Pairwise tree over ``states`` in a fixed order (deterministic)."""
        vals = [list(s) for s in states]
        while len(vals) > 1:
            nxt = [self.combine(e, vals[i], vals[i + 1]) for i in range(0, len(vals) - 1, 2)]
            if len(vals) % 2:
                nxt.append(vals[-1])
            vals = nxt
        return vals[0]

    @property
    def _f64(self) -> bool:
        """A float64 accumulator: exp and log are :meth:`Emitter.exp_f64` / :meth:`Emitter.log_f64`."""
        return self.types[0] == f64

    @property
    def _finite_max(self) -> float:
        """The largest finite value of the accumulator (logsumexp's shift stays within it)."""
        return DBL_MAX if self._f64 else FLT_MAX

    def _exp(self, e, x: SSAValue, shift: SSAValue) -> SSAValue:
        """``exp(x - shift)``: ``ex2.approx((x - shift) * log2(e))`` in float32,
        :meth:`Emitter.exp_f64` in float64."""
        if self._f64:
            return e.exp_f64(e.value(_sub(ArithType.F64, x, shift)))
        at = ArithType.F32
        d = e.value(_sub(at, x, shift))
        return e.ex2(e.value(MulOp(at, d, e.const(LOG2E, f32), rnd=RoundingMode.RN)))

    def _log(self, e, v: SSAValue) -> SSAValue:
        """``log(v)``: ``lg2.approx(v) * ln(2)`` in float32, :meth:`Emitter.log_f64` in float64."""
        if self._f64:
            return e.log_f64(v)
        return e.value(MulOp(ArithType.F32, e.lg2(v), e.const(LN2, f32), rnd=RoundingMode.RN))

    def _sincos(self, e, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(sin v, cos v)`` in the accumulator type: ``passes/trig_math.py``'s float64
        :func:`~bulkred_dialect.passes.trig_math.sincos` (a float32 ``v`` converted, the
        results rounded once; no ``sin.approx``)."""
        f64d = DTYPES["float64"]
        x = v if self._f64 else e.convert(v, self.acc, f64d)
        sin_, cos_ = trig_math.sincos(e, x)
        return (sin_, cos_) if self._f64 else (e.convert(sin_, f64d, self.acc), e.convert(cos_, f64d, self.acc))

    def _clog(self, e, s: State) -> tuple[SSAValue, SSAValue]:
        """A complex logsumexp state's result ``shift + log(sum)``, ``log(sum) =
        log|sum| + i atan2(im, re)``, as (re, im) in the accumulator type: computed in
        float64 (``0.5 log(re^2 + im^2)`` by :meth:`Emitter.log_f64`, ``trig_math.atan2``),
        the float32 results rounded once."""
        f64d = DTYPES["float64"]
        shift, sr, si = s if self._f64 else [e.convert(v, self.acc, f64d) for v in s]
        at = ArithType.F64
        sq = e.fma(at, sr, sr, e.value(MulOp(at, si, si, rnd=RoundingMode.RN)))
        re = e.fma(at, e.log_f64(sq), e.const(0.5, f64), shift)
        im = trig_math.atan2(e, si, sr)
        return (re, im) if self._f64 else (e.convert(re, f64d, self.acc), e.convert(im, f64d, self.acc))

    def _clamp(self, e, m: SSAValue) -> SSAValue:
        """``m`` clamped to [-FLT_MAX, FLT_MAX] ([-DBL_MAX, DBL_MAX] in float64; NaN stays NaN)."""
        at, t = (ArithType.F64, f64) if self._f64 else (ArithType.F32, f32)
        m = e.minmax(ReduceKind.MIN, at, m, e.const(self._finite_max, t))
        return m

    # endregion

    # region Storing

    def store(self, e, p: SSAValue, s: State, offset: int = 0) -> None:
        for d, v, off in zip(self.dtypes, s, self.offsets, strict=True):
            e.st(ld_type(d), p, v, offset + off)

    def load(self, e, p: SSAValue, offset: int = 0) -> State:
        return [e.ld(ld_type(d), p, t, offset + off) for d, t, off in zip(self.dtypes, self.types, self.offsets, strict=True)]

    def results(self, e, s: State) -> tuple[SSAValue, SSAValue | None]:
        """The final state as (``dst``'s value, ``aux``'s value or None), before the
        conversion to the output type: the index (``i64``) and value of argmax/argmin,
        the variance (after the epilogue) and mean of var, ``shift + log(sum)`` of
        logsumexp, ``sum / count`` of nanmean (after the epilogue), the minimum and the
        maximum of minmax, the accumulator after the epilogue otherwise."""
        at, _ = arith_types(self.acc)
        if self.kind in INDEX_KINDS:
            return e.convert(s[1], self.index_dtype, DTYPES["int64"]), s[0]
        if self.complex_state and self.kind == ReduceKind.NANMEAN:  # 0 / 0: NaN where every element had a NaN part
            count = e.convert(s[2], self.count_dtype, self.acc)
            return e.div(at, s[0], count), e.div(at, s[1], count)
        if self.complex_state and self.kind == ReduceKind.LOGSUMEXP:
            return self._clog(e, s)
        if self.keeps_pair:
            return s[0], s[1]  # re (dst[2 i]), im (dst[2 i + 1]): the caller stores both
        if self.complex_state:
            c = self.op.correction.value.data if self.op.correction is not None else 0
            var = e.div(at, s[3], e.const(float(max(0, self.count - c)), self.types[0]))
            means = [e.combine(ReduceKind.SUM, self.acc, s[4], s[1]), e.combine(ReduceKind.SUM, self.acc, s[5], s[2])]
            return self.map_value(e, self.epilogue, var, self.acc), means
        if self.kind == ReduceKind.VAR:
            c = self.op.correction.value.data if self.op.correction is not None else 0  # an int or a float
            dof = float(max(0, self.count - c))
            var = e.div(at, s[2], e.const(dof, self.types[0]))
            mean = e.combine(ReduceKind.SUM, self.acc, s[3], s[1])  # shift + mean of x - shift
            return self.map_value(e, self.epilogue, var, self.acc), mean
        if self.kind == ReduceKind.LOGSUMEXP:
            r = e.combine(ReduceKind.SUM, self.acc, s[0], self._log(e, s[1]))
            return self.map_value(e, self.epilogue, r, self.acc), None
        if self.kind == ReduceKind.NANMEAN:
            mean = e.div(at, s[0], e.convert(s[1], self.count_dtype, self.acc))  # 0 / 0: NaN
            return self.map_value(e, self.epilogue, mean, self.acc), None
        if self.kind == ReduceKind.MINMAX:
            return s[0], s[1]
        return self.map_value(e, self.epilogue, s[0], self.acc), None

    # endregion


def _sub(at: ArithType, a: SSAValue, b: SSAValue):
    from bulkred_dialect.ops.ptx.arith import SubOp

    return SubOp(at, a, b, rnd=RoundingMode.RN)


def _selp(e, t: Attribute, a: SSAValue, b: SSAValue, pred: SSAValue) -> SSAValue:
    """``pred ? a : b`` of registers of type ``t``."""
    return e.value(SelpOp(selp_type(t), a, b, pred))


def reducer_of(op: ReduceOp, elem: Elem, count: int = 1) -> Reducer:
    return Reducer(op, elem, count)
