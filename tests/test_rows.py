"""bulkred.normalize_rows on the CPU interpreter (docs/rows.md): each lowering variant
(rows_warp, rows_cta, rows_stream) and each kind against a float64 numpy reference
(within a tolerance: the kernels use ex2/lg2.approx and float32 sums), with the CTA
narrowed to two warps so that the shared-memory combination, partial last vectors and
the streaming loop all occur on small rows; then the rules a variant must keep: non-finite
rows as torch, each row's bits independent of M and of its position, a configuration
that depends on N and the element type only."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.interpreter.launch_dims import dynamic_launch
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import NormalizeRowsOp, kernel_launch
from bulkred_dialect.passes.dispatch import choose
from bulkred_dialect.passes.lower_tile_reductions import explanations
from bulkred_dialect.passes.variants import rows_backward, rows_cluster, rows_common, rows_cta, rows_stream, rows_warp
from bulkred_dialect.reference import f64_to_bf16
from bulkred_dialect.row_kernels import module

SM90 = Target.parse("sm_90a")


@pytest.fixture(autouse=True)
def small_ctas(monkeypatch):
    """Two warps per CTA in rows_warp and rows_cta (the shared-memory step runs), one in
    rows_stream (two loads in flight) and rows_cluster; one CTA or cluster (it loops over
    the rows)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    monkeypatch.setattr(rows_warp, "BLOCK", 64)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK", 64)
    monkeypatch.setattr(rows_stream, "BLOCK", 32)
    monkeypatch.setattr(rows_stream, "UNROLL", 2)
    monkeypatch.setattr(rows_cluster, "SLICE", 128)  # clusters of 2 CTAs of one warp
    monkeypatch.setattr(rows_cluster, "MIN_BLOCK", 32)


def lowered(m, chosen: str | None = None):
    """``m`` (a module of ``rows.module``, built by the builder) lowered in place; with
    ``chosen``, first check that the dispatch's explanation (explain=true's table) names
    that variant."""
    if chosen is not None:
        (table,) = explanations(m, SM90)
        assert f"chosen: {chosen}" in table.splitlines(), table
    lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    return m


class ModuleText:
    """A lowered module's text, printed on first use (``in``, ``count``, ``str``): the
    helpers that run a kernel hand it back, and most callers never read it."""

    def __init__(self, module):
        self.module, self._text = module, None

    def __str__(self) -> str:
        if self._text is None:
            self._text = str(self.module)
        return self._text

    def __contains__(self, part: str) -> bool:
        return part in str(self)

    def count(self, part: str) -> int:
        return str(self).count(part)


def f64_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """``reference.f64_to_bf16`` on arrays (checked against it element by element in
    ``test_f64_to_bf16_bits_is_the_reference``): round to float32 by rounding to odd
    (an overflow to the largest float32), then to bfloat16 to nearest even; a NaN
    the canonical 0x7FFF."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = x.astype(np.float32)
    r = np.where(np.isinf(r) & ~np.isinf(x), np.copysign(np.finfo(np.float32).max, x).astype(np.float32), r)
    inexact = r.astype(np.float64) != x
    bits = r.view(np.uint32)
    bits = np.where(inexact & (np.abs(r.astype(np.float64)) > np.abs(x)), bits - np.uint32(1), bits)  # toward 0
    bits = np.where(inexact, bits | np.uint32(1), bits).astype(np.uint64)
    out = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), out)


def to_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return f64_to_bf16_bits(x)
    return x.astype(dtype)


def values(buf: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (buf.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return buf.astype(np.float64)


def reference(kind: str, x: np.ndarray, w=None, b=None, eps=None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """y and the statistics in float64."""
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind in ("softmax", "log_softmax"):
            mx = x.max(1, keepdims=True)
            e = np.exp(x - mx)
            s = e.sum(1, keepdims=True)
            y = e / s if kind == "softmax" else x - mx - np.log(s)
            return y, {"row_max": mx[:, 0], "row_sum": s[:, 0]}
        if kind in ("rms_norm", "add_rms_norm"):  # add_rms_norm: x is h = x + residual here
            rstd = 1 / np.sqrt((x * x).mean(1, keepdims=True) + eps)
            y = x * rstd
            return (y * w if w is not None else y), {"rstd": rstd[:, 0]}
        mu = x.mean(1, keepdims=True)
        rstd = 1 / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + eps)
        y = (x - mu) * rstd * (w if w is not None else 1) + (b if b is not None else 0)
        return y, {"mean": mu[:, 0], "rstd": rstd[:, 0]}


STATS = {"softmax": ("row_max", "row_sum"), "log_softmax": ("row_max", "row_sum"), "rms_norm": ("rstd",),
         "layer_norm": ("mean", "rstd"), "add_rms_norm": ("rstd",)}


def run(kind: str, x: np.ndarray, dtype: str = "float32", *, variant: str | None = None, affine: str | None = None,
        x_stride: int | None = None, y_stride: int | None = None, stats: bool = True, seed: int = 0,
        chosen: str | None = None):
    """Run the kernel on rows ``x`` (float64 values, rounded to ``dtype``); returns
    (y, the statistics, the inputs' values as the kernel saw them, weight, bias); for
    add_rms_norm the inputs' values are ``h = x + residual`` as the kernel wrote them, after
    checking them against x + residual rounded to ``dtype``. ``chosen``: the variant the
    dispatch must choose (see :func:`lowered`)."""
    m, n = x.shape
    rng = np.random.default_rng(seed)
    norm = kind in ("rms_norm", "layer_norm", "add_rms_norm")
    eps = 1e-5 if norm else None
    w = b = None
    args = []
    sx, sy = x_stride or n, y_stride or n
    xbits = to_bits(np.pad(x.astype(np.float64), ((0, 0), (0, sx - n))), dtype)
    ybuf = to_bits(np.full((m, sy), 7.0), dtype)
    args += [xbits[:, :n] if x_stride else xbits, ybuf[:, :n] if y_stride else ybuf]  # views: read in place
    if kind == "add_rms_norm":
        rbits = to_bits(rng.standard_normal((m, n)) * 2, dtype)
        args += [rbits, to_bits(np.full((m, n), 7.0), dtype)]
    if norm and affine:
        w = rng.standard_normal(n)
        args.append(to_bits(w, affine))
        w = values(args[-1], affine)
        if kind == "layer_norm":
            b = rng.standard_normal(n)
            args.append(to_bits(b, affine))
            b = values(args[-1], affine)
    names = STATS[kind] if stats else ()
    args += [np.full(m, 7.0, np.float32) for _ in names]
    built = module(kind, m, n, dtype, x_stride=x_stride, y_stride=y_stride, weight=affine if norm else None,
                   bias=affine if kind == "layer_norm" else None, eps=eps, stats=names, variant=variant)
    out = interpret(lowered(built, chosen), *args)
    if kind == "add_rms_norm":  # h = x + residual, rounded once to dtype
        h = values(out[3], dtype)
        want = values(to_bits(values(xbits[:, :n], dtype) + values(rbits, dtype), dtype), dtype)
        np.testing.assert_array_equal(h, want)
    if y_stride:  # written in place; the padding between rows is left as it was
        yall = values(ybuf, dtype)
        assert (yall[:, n:] == 7.0).all()
        y = yall[:, :n]
    else:
        y = values(out[1], dtype).reshape(m, n)
    got_stats = dict(zip(names, out[len(out) - len(names):], strict=True))
    xv = values(xbits, dtype)[:, :n] if kind != "add_rms_norm" else h
    return y, got_stats, xv, w, b


def interpret(lowered_module, *args):
    """The kernel ``@rows`` on the interpreter (clusters when its launch has them)."""
    kernel = next(o for o in lowered_module.walk() if o.name == "func.func")
    clustered = kernel_launch(kernel).cluster_dims != (1, 1, 1)
    return (run_cluster_grid if clustered else run_grid)(lowered_module, "rows", *args)


def check(kind: str, y, stats, xv, w, b, dtype: str) -> None:
    ref, ref_stats = reference(kind, xv, w, b, 1e-5)
    scale = np.nanmax(np.abs(ref))
    tol = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype] * max(1.0, scale)
    if kind == "log_softmax" and dtype == "float32":
        tol = 4e-6 * max(1.0, scale)
    np.testing.assert_allclose(y, ref, rtol=0, atol=tol, equal_nan=True)
    for name, got in stats.items():
        np.testing.assert_allclose(got.astype(np.float64), ref_stats[name], rtol=2e-6, atol=1e-30)


KINDS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm")

# (variant, N): rows_warp 17 vectors over 32 lanes (a partial round); rows_cta 75 over 64
# threads (one full, one partial); rows_stream 2 * 32 + 11 vectors (one loop step of two
# loads, a partial one); rows_cluster 33 vectors over 2 CTAs of 32 threads (17 and 16: both
# CTAs partial)
SHAPES = {"rows_warp": 68, "rows_cta": 300, "rows_stream": 4 * (2 * 32 + 11), "rows_cluster": 132}


# Every kind on rows_cta and on rows_stream, one kind on each other variant. The kind's
# arithmetic is written twice in rows_common.py: once for the row held in registers
# (registers_row: rows_warp, rows_cta and rows_cluster share it, each kind a branch) and once
# for the streaming passes (stream_row: rows_stream only, each kind its own accumulation).
# What else differs between the register variants is the group's combination
# (reduce_state: a warp's butterfly, a CTA's shared memory, a cluster's DSMEM), which every
# kind reaches with one of two states (softmax's (max, sum) pair, or plain sums). So: every
# kind on rows_cta (the register branch of each kind, through the shared-memory step) and
# on rows_stream (each kind's stream code); rows_warp's butterfly with rms_norm (its pair
# state: softmax in test_16_bit_types and test_non_finite_rows_as_torch, layer_norm in
# test_16_bit_types) and rows_cluster's partial last CTA with layer_norm (the deviations of
# the missing vectors zeroed; test_cluster_slices_covering_the_row_exactly has no partial
# CTA, and softmax's pair state is in test_non_finite_rows_as_torch).
# layer_norm on rows_cta and rows_cluster (with the weight and both statistics) is
# test_one_kernel_for_every_m's.
VARIANT_KIND = [*(("rows_cta", k) for k in KINDS if k != "layer_norm"), *(("rows_stream", k) for k in KINDS),
                ("rows_warp", "rms_norm")]


def test_f64_to_bf16_bits_is_the_reference() -> None:
    """The array conversion the tests' inputs go through gives reference.f64_to_bf16's
    bits: specials, float32's and bfloat16's edges, ties, and random float64 bits."""
    f32 = np.finfo(np.float32)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, f32.max, -f32.max, float(f32.max) * (1 + 2**-30),
             3.4e38, 3.5e38, 1e300, -1e300, f32.tiny, f32.smallest_subnormal, float(f32.smallest_subnormal) / 3,
             float(f32.smallest_subnormal) * 0.5, 1e-300, 1.0 + 2**-8, 1.0 + 2**-8 + 2**-40, 1.0 + 2**-8 - 2**-40,
             1.0 + 3 * 2**-8, -(1.0 + 2**-8), 1.0 + 2**-24, 1.0 + 2**-8 + 2**-24, 3.0e-39, -3.0e-39]
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 2**64, 3000, dtype=np.uint64).view(np.float64)
    scaled = rng.standard_normal(3000) * np.exp2(rng.integers(-140, 130, 3000))
    x = np.concatenate([np.array(edges), raw, scaled])
    want = np.array([f64_to_bf16(np.float64(v)) for v in x], dtype=np.uint16)
    got = f64_to_bf16_bits(x)
    assert got.dtype == np.uint16 and got.shape == x.shape
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(x[i], hex(got[i]), hex(want[i])) for i in bad[:5]]
    assert (f64_to_bf16_bits(x[:6000].reshape(2, -1)) == want[:6000].reshape(2, -1)).all()


@pytest.mark.parametrize("variant,kind", VARIANT_KIND)
def test_each_variant_and_kind_against_numpy(kind: str, variant: str) -> None:
    rng = np.random.default_rng(hash((kind, variant)) % 2**32)
    n = SHAPES[variant]
    x = rng.standard_normal((3 if variant == "rows_warp" else 2, n)) * 3 + 1.5  # rows_warp: warp 0 takes rows 0 and 2
    y, stats, xv, w, b = run(kind, x, variant=variant, affine="float32")
    check(kind, y, stats, xv, w, b, "float32")


@pytest.mark.parametrize(
    "kind,dtype,variant,n,affine",
    [
        ("softmax", "bfloat16", "rows_warp", 37, None),  # odd N: scalar loads
        ("rms_norm", "bfloat16", "rows_cta", 136, "bfloat16"),
        ("layer_norm", "bfloat16", "rows_cta", 176, "float32"),
        ("layer_norm", "float16", "rows_warp", 40, "float32"),
        ("add_rms_norm", "bfloat16", "rows_stream", 4 * 20 + 1, "bfloat16"),  # h rounded to bf16, read back
        ("log_softmax", "float16", "rows_stream", 4 * 30 + 2, None),  # scalar loads, one loop step
    ],
)
def test_16_bit_types(kind: str, dtype: str, variant: str, n: int, affine: str | None) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n)) * 2
    y, stats, xv, w, b = run(kind, x, dtype, variant=variant, affine=affine)
    check(kind, y, stats, xv, w, b, dtype)


@pytest.mark.parametrize("variant", ["rows_warp"])
def test_padded_rows(variant: str) -> None:
    """x and y with row strides larger than N (vector loads: strides multiples of 4;
    scalar ones: an odd stride), on rows_warp: the row addressing is lower_rows', which
    every variant shares."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 64))
    y, stats, xv, w, b = run("layer_norm", x, variant=variant, affine="float32", x_stride=72, y_stride=68)
    check("layer_norm", y, stats, xv, w, b, "float32")
    y, stats, xv, w, b = run("softmax", x, variant=variant, x_stride=67)
    check("softmax", y, stats, xv, w, b, "float32")


@pytest.mark.parametrize("variant", list(SHAPES))
def test_non_finite_rows_as_torch(variant: str) -> None:
    """An all -inf row, a row with a NaN and a row with +inf give NaN rows (torch: max is
    -inf or +inf, so x - max is NaN); a row with a -inf element gives it 0. (rows_cluster:
    the first two, a cluster being the interpreter's slowest; its NaN and +inf go through
    the same max as the others'.)"""
    n = {"rows_warp": 68, "rows_cta": 136, "rows_stream": 300, "rows_cluster": 132}[variant]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, n))
    x[1] = -np.inf
    x[2, n // 2] = np.nan
    x[3, n - 2] = np.inf
    x[0, 3] = -np.inf
    m = 2 if variant == "rows_cluster" else 4
    y, stats, xv, _, _ = run("softmax", x[:m], variant=variant)
    assert np.isnan(y[1:]).all()
    assert y[0, 3] == 0.0 and np.isfinite(y[0]).all()
    check("softmax", y[[0]], {}, xv[[0]], None, None, "float32")


# (kind, variant, dtype): every kind on rows_cta and rows_stream in float32 (each kind's
# register branch and its stream code), each kind once more in a 16-bit type on another
# variant (rows_warp's butterfly, rows_cluster's exchange).
INF_ROWS = [*((k, v, "float32") for v in ("rows_cta", "rows_stream") for k in KINDS),
            ("rms_norm", "rows_warp", "bfloat16"), ("add_rms_norm", "rows_cta", "bfloat16"),
            ("layer_norm", "rows_warp", "float16"), ("softmax", "rows_stream", "bfloat16"),
            ("log_softmax", "rows_warp", "float16"), ("rms_norm", "rows_cluster", "float32"),
            ("layer_norm", "rows_stream", "bfloat16")]


@pytest.mark.parametrize("kind,variant,dtype", INF_ROWS, ids=[f"{k}-{v}-{d}" for k, v, d in INF_ROWS])
def test_inf_rows_as_torch_cuda(kind: str, variant: str, dtype: str) -> None:
    """A row holding -inf (row 0) or +inf (row 1) among finite values, as torch's CUDA
    kernels in x's dtype give it (float32, bfloat16; measured on the H200,
    tests/gpu/test_rows_gpu.py): layer_norm's statistics are NaN (the mean inf, the
    deviations ``inf - inf``), so every element of the row is NaN; rms_norm's and
    add_rms_norm's sum of squares is inf, rstd 0: the infinity's element is NaN (``inf *
    0``), the others 0 (torch's float64 rms_norm, a kernel of its own, gives NaN
    everywhere; bulkred has no float64 rows); softmax and log_softmax of a row with +inf
    are NaN everywhere (``inf - inf``), a -inf element gives 0 (log_softmax: -inf) and
    the rest of its row is finite. Row 2 (finite) is computed as usual. The infinities at
    a vector's first and last element, in different threads' shares."""
    n = SHAPES[variant]
    rng = np.random.default_rng(17)
    x = rng.standard_normal((3, n)) * 2
    x[0, 4] = -np.inf
    x[1, n - 1] = np.inf
    y, stats, xv, w, b = run(kind, x, dtype, variant=variant, affine="float32")
    inf = np.isinf(xv)
    assert inf[0].sum() == 1 and inf[1].sum() == 1  # (add_rms_norm: h = x + residual keeps them)
    if kind in ("softmax", "log_softmax"):
        assert np.isnan(y[1]).all(), y[1]
        assert y[0, 4] == (0.0 if kind == "softmax" else -np.inf)
        assert np.isfinite(np.delete(y[0], 4)).all()
        check(kind, y[[2]], {}, xv[[2]], w, b, dtype)
        ref, _ = reference(kind, xv[[0]])
        tol = {"float32": 4e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype] * max(1.0, np.abs(np.delete(ref[0], 4)).max())
        np.testing.assert_allclose(np.delete(y[0], 4), np.delete(ref[0], 4), rtol=0, atol=tol)
        return
    if kind == "layer_norm":
        assert np.isnan(y[:2]).all(), y[:2]
        assert np.isnan(stats["rstd"][:2]).all(), stats["rstd"]
    else:
        assert (np.isnan(y[:2]) == inf[:2]).all(), y[:2]
        assert (y[:2][~inf[:2]] == 0).all() and (stats["rstd"][:2] == 0).all(), (y[:2], stats["rstd"])
    check(kind, y[[2]], {k: v[[2]] for k, v in stats.items()}, xv[[2]], w, b, dtype)


@pytest.mark.parametrize("variant,n,per,ms", [("rows_warp", 68, 2, (1, 3, 7)), ("rows_cta", 136, 1, (1, 3)),
                                              ("rows_cluster", 132, 1, (1, 3))])
def test_one_kernel_for_every_m(variant: str, n: int, per: int, ms: tuple[int, ...], monkeypatch) -> None:
    """``module(kind, None, ...)``: x, y and the statistics of a dynamic M (``memref<?xN>``),
    ONE lowered kernel run for M = 1, 3 and 7 (rows_cta and rows_cluster: 1 and 3, the
    interpreter being slow). The launch derives M from x's shape (the
    ``m`` parameter of ``bulkred.dims``) and the grid from M (``bulkred.grid_rows``: a
    unit of ``per`` rows, at most 32 here); every row against float64, and the same row
    (the last of each batch) gives the same bits whatever M and its position (batch
    invariance)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)  # 32 units of 2 warps at most
    built = lowered(module("layer_norm", None, n, "float32", weight="float32", eps=1e-5, stats=("mean", "rstd"),
                           variant=variant))
    kernel = next(o for o in built.walk() if o.name == "func.func")
    assert [a.name_hint for a in kernel.body.block.args] == ["x", "y", "weight", "mean", "rstd", "m"]
    rng = np.random.default_rng(3)
    rows = (rng.standard_normal((7, n)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    cluster = 2 if variant == "rows_cluster" else 1
    bits = set()
    for m in ms:
        x = np.concatenate([rows[1:m], rows[:1]])  # rows[0] last
        args = (x, np.full_like(x, 7.0), w, np.zeros(m, np.float32), np.zeros(m, np.float32))
        assert dynamic_launch(kernel, args, cluster)[1] == cluster * -(-m // per)  # CTAs: a unit per `per` rows
        _, y, _, mean, rstd = interpret(built, *args)
        check("layer_norm", y, {"mean": mean, "rstd": rstd}, x.astype(np.float64), w.astype(np.float64), None, "float32")
        bits.add(y[-1].tobytes() + mean[-1].tobytes() + rstd[-1].tobytes())
    assert len(bits) == 1, "a row's bits depend on M or on its position"


@pytest.mark.parametrize("kind", ["softmax", "layer_norm"])
def test_cluster_slices_covering_the_row_exactly(kind: str, monkeypatch) -> None:
    """Two CTAs of 32 threads, each one vector of the 64 (no vector past N: no checks)."""
    x = np.random.default_rng(11).standard_normal((1, 256)) * 2
    y, stats, xv, w, b = run(kind, x, variant="rows_cluster", affine="float32")
    check(kind, y, stats, xv, w, b, "float32")


def _op(m: int, n: int, dtype: str = "float32", kind: str = "softmax") -> NormalizeRowsOp:
    return next(o for o in module(kind, m, n, dtype).walk() if isinstance(o, NormalizeRowsOp))


def test_the_configuration_depends_on_n_and_dtype_only(monkeypatch) -> None:
    """The variant, the CTA's threads and the instructions of a row are the same for M = 1
    and 4096 (only the grid and the loop's bound change; a dynamic M has one kernel for
    all: test_one_kernel_for_every_m)."""
    monkeypatch.undo()  # the real settings
    # (bfloat16 4096 and 16384 on rows_cta, a CTA a row in a grid of M: the eighth session's
    # measured cells; the grid follows M, the row's instructions not)
    # (float32 1024 on rows_cta a CTA a row, rows_warp.YIELD_MEASURED; bfloat16 1024 rows_warp's grid of M / 8)
    for n, dtype, name, block in [(1024, "float32", "rows_cta", 128), (1024, "bfloat16", "rows_warp", 256),
                                  (512, "float32", "rows_warp", 256), (4096, "bfloat16", "rows_cta", 128),
                                  (16384, "bfloat16", "rows_cta", 512), (8192, "bfloat16", "rows_cta", 256),
                                  (16384, "float32", "rows_cta", 512), (65536, "float32", "rows_cluster", 256),
                                  (65536, "bfloat16", "rows_bulk", 256), (4096, "float32", "rows_bulk", 256),
                                  (262144, "float32", "rows_bulk", 256)]:
        seen = set()
        for m in (1, 4096):
            assert choose(_op(m, n, dtype), SM90).name == name
            kernel = next(o for o in lowered(module("softmax", m, n, dtype)).walk() if o.name == "func.func")
            assert kernel_launch(kernel).block_dims == (block, 1, 1)
            seen.add(tuple(o.name for o in kernel.walk()))
        assert len(seen) == 1, f"N = {n} {dtype}: the row's instructions depend on M"


def test_docs_example_runs() -> None:
    """docs/rows.md's interpreter example (its python block that runs the interpreter) runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "rows.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "run_grid" in b)
    assert "run_grid" in block and "torch" not in block
    exec(compile(block, "docs/rows.md", "exec"), {})


def run_cross_entropy(n: int, smoothing: float, *, variant: str | None = None, x_stride: int | None = None,
                      chosen: str | None = None, m: int = 4) -> None:
    """cross_entropy of ``m`` float32 rows of ``n`` (row stride ``x_stride``) against
    float64: the targets 3, n - 1, ignore_index (-7) and n + 5 (outside [0, N): NaN)."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((m, n)) * 3).astype(np.float32)
    xbuf = np.pad(x, ((0, 0), (0, (x_stride or n) - n)), constant_values=np.nan)
    target = np.array([3, n - 1, -7, n + 5][:m], np.int64)
    built = module("cross_entropy", m, n, "float32", x_stride=x_stride, stats=("lse",), variant=variant, ignore_index=-7,
                   label_smoothing=smoothing or None)
    args = (xbuf[:, :n] if x_stride else xbuf, target, np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32))
    _, _, loss, lse = interpret(lowered(built, chosen), *args)
    xd = x.astype(np.float64)
    mx = xd.max(1)
    ref_lse = mx + np.log(np.exp(xd - mx[:, None]).sum(1))
    np.testing.assert_allclose(lse, ref_lse, rtol=2e-6)
    for i in range(min(m, 2)):
        want = ref_lse[i] - (1 - smoothing) * xd[i, target[i]] - smoothing * xd[i].mean()
        assert abs(loss[i] - want) <= 4e-6 * max(1.0, abs(want)), (i, loss[i], want)
    if m == 4:
        assert loss[2] == 0.0
        assert np.isnan(loss[3])


@pytest.mark.parametrize("variant,n,smoothing", [("rows_warp", 68, 0.0), ("rows_cta", 300, 0.1), ("rows_cluster", 132, 0.0),
                                                  ("rows_stream", 4 * (2 * 32 + 11) + 1, 0.25)])
def test_cross_entropy(variant: str, n: int, smoothing: float) -> None:
    """cross_entropy writes no y: per row ``loss = lse - (1 - s) x[t] - s mean(x)`` and the
    lse; a row of ignore_index (-7 here) gets loss 0, a target outside [0, N) NaN (rows_cluster:
    the two rows with a target, in either CTA's slice; the others' loss is rank 0's thread 0's
    step, as every variant's)."""
    run_cross_entropy(n, smoothing, variant=variant, m=2 if variant == "rows_cluster" else 4)


def run_backward(kind: str, n: int, *, m: int = 2, dtype: str = "float32", variant: str | None = None,
                 chosen: str | None = None) -> None:
    """dx of ``m`` rows of ``n`` (float32 or float16) against float64 from the values the
    kernel read (within the dtype's rounding of dx)."""
    rng = np.random.default_rng(n + len(kind))
    x = rng.standard_normal((m, n)) * 2
    e = np.exp(x - x.max(1, keepdims=True))
    fwd = e / e.sum(1, keepdims=True) if kind == "softmax_backward" else np.log(e / e.sum(1, keepdims=True))
    fwd = fwd.astype(dtype)
    dy = rng.standard_normal((m, n)).astype(dtype)
    built = module(kind, m, n, dtype, variant=variant)
    _, dx, _ = interpret(lowered(built, chosen), fwd, np.full_like(fwd, 7.0), dy)
    f, g = fwd.astype(np.float64), dy.astype(np.float64)
    if kind == "softmax_backward":
        want = f * (g - (g * f).sum(1, keepdims=True))
    else:
        want = g - np.exp(f) * g.sum(1, keepdims=True)
    tol = {"float32": 4e-6, "float16": 2e-3}[dtype]
    np.testing.assert_allclose(dx.astype(np.float64), want, rtol=0, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("kind,variant,n", [
    *((k, v, n) for k in ("softmax_backward", "log_softmax_backward") for v, n in (("rows_cta", 300), ("rows_stream", 4 * (2 * 32 + 11)))),
    ("softmax_backward", "rows_warp", 68), ("log_softmax_backward", "rows_cluster", 132),  # the group's combine: one sum each
])
def test_backward_kinds(kind: str, variant: str, n: int) -> None:
    """dx from the forward's output and its gradient: softmax ``y * (dy - sum(dy * y))``,
    log_softmax ``dy - exp(y) * sum(dy)``, against float64."""
    run_backward(kind, n, variant=variant)


# (kind, M, N, dtype, x_stride, y_stride, the variant the dispatch chooses): every kind,
# each in another form (row length, element type, padded rows), none forced. The chosen
# variants are those the MLIR-text module of the same settings was dispatched to before
# rows.py built its module with the builder (the CTAs narrowed as above: rows_warp up to
# N = 1024 float32, then rows_cta).
BUILT_FORMS = [
    ("softmax", 3, 68, "float32", None, None, "rows_warp"),
    ("log_softmax", 2, 37, "bfloat16", None, None, "rows_warp"),  # odd N: scalar loads
    ("rms_norm", 2, 136, "float16", None, None, "rows_warp"),
    ("layer_norm", 2, 64, "float32", 72, 68, "rows_warp"),  # padded x and y
    ("add_rms_norm", 2, 40, "bfloat16", None, None, "rows_warp"),
    ("cross_entropy", 4, 33, "float32", 36, None, "rows_warp"),  # padded x
    ("softmax_backward", 1, 2000, "float32", None, None, "rows_cta"),
    ("log_softmax_backward", 3, 24, "float16", None, None, "rows_warp"),
]


@pytest.mark.parametrize("kind,m,n,dtype,x_stride,y_stride,chosen", BUILT_FORMS, ids=[f[0] for f in BUILT_FORMS])
def test_built_module_dispatches_and_runs(kind, m, n, dtype, x_stride, y_stride, chosen) -> None:
    """rows.module's module (the builder's T.normalize_rows, no MLIR text) of every kind
    verifies, lowers through the variant its explanation names, and runs on the
    interpreter against numpy."""
    if kind == "cross_entropy":
        run_cross_entropy(n, 0.0, x_stride=x_stride, chosen=chosen)
    elif kind.endswith("_backward"):
        run_backward(kind, n, m=m, dtype=dtype, chosen=chosen)
    else:
        x = np.random.default_rng(n).standard_normal((m, n)) * 2
        affine = None if kind in ("softmax", "log_softmax") else dtype
        y, stats, xv, w, b = run(kind, x, dtype, affine=affine, x_stride=x_stride, y_stride=y_stride, chosen=chosen)
        check(kind, y, stats, xv, w, b, dtype)


def test_built_module_is_the_ops_text() -> None:
    """The builder writes the parameters in rows.module's order and the op with its
    operands and attributes, as the op's MLIR syntax reads."""
    text = str(module("layer_norm", 4, 64, "bfloat16", x_stride=72, weight="float32", bias="float32", eps=1e-5,
                      stats=("rstd", "mean"), variant="rows_cta"))
    assert "func.func @rows(%x: memref<4x64xbf16, strided<[72, 1]>, #bulkred.scope<global>>, " \
           "%y: memref<4x64xbf16, #bulkred.scope<global>>, %weight: memref<64xf32, #bulkred.scope<global>>, " \
           "%bias: memref<64xf32, #bulkred.scope<global>>, %mean: memref<4xf32, #bulkred.scope<global>>, " \
           "%rstd: memref<4xf32, #bulkred.scope<global>>)" in text
    assert 'bulkred.normalize_rows layer_norm variant "rows_cta" %x, %y weight %weight' in text
    assert "eps 1.000000e-05 : f32 mean %mean" in text


@pytest.mark.parametrize("kind", ["rms_norm"])
def test_wide_bfloat16_vectors(kind: str, monkeypatch) -> None:
    """The 16-byte bfloat16 path (rows_common.WIDE_BF16, off by default): 8 elements from
    4 words and back, float32 weights in two loads."""
    monkeypatch.setattr(rows_common, "WIDE_BF16", True)
    x = np.random.default_rng(4).standard_normal((2, 136)) * 2
    y, stats, xv, w, b = run(kind, x, "bfloat16", variant="rows_cta", affine="float32")
    check(kind, y, stats, xv, w, b, "bfloat16")


def test_module_refusals_are_one_line() -> None:
    from bulkred_dialect.errors import BulkredError

    for kwargs, match in [
        ({"kind": "softmax2"}, "kind must be one of softmax, log_softmax"),
        ({"dtype": "float64"}, "dtype must be one of float32, bfloat16, float16, got 'float64'"),
        ({"stats": ("rstd2",)}, "stats must name row_max, row_sum, mean, rstd, lse, got 'rstd2'"),
    ]:
        args = {"kind": "softmax", "m": 2, "n": 8, "dtype": "float32", **kwargs}
        with pytest.raises(BulkredError, match=match) as info:
            module(**args)
        assert "\n" not in str(info.value)


def test_the_launch_passes_m_and_chooses_the_grid(monkeypatch) -> None:
    """The runtime's kernel of a dynamic-M module (assembled for sm_90a, no GPU needed; the
    GPU faked): each call passes M (an int64 after the buffers, read from x's shape; x a
    padded view, read in place) and launches ``min(cap, ceil(M / per))`` CTAs (rows_warp:
    8 rows per CTA, at most 132 x 8 CTAs); a buffer with another M is refused before any
    launch; the signature's size and grid rule survive the compile cache's JSON."""
    from types import SimpleNamespace

    from bulkred_dialect.backend_ptx import launch, runtime
    from bulkred_dialect.backend_ptx.signature import signature_from_json, signature_to_json
    from bulkred_dialect.errors import BulkredError

    monkeypatch.undo()  # the real settings
    built = module("rms_norm", None, 256, "float32", x_stride=260, weight="float32", eps=1e-5, stats=("rstd",))
    k = runtime.compile_tile_module(built, "sm_90a").kernel("rows")
    sig = k.signature
    assert (sig.dims, sig.grid_rows, sig.launch.grid) == ((((0, 0), (1, 0), (3, 0)),), (8, 1056), (1056, 1, 1))
    assert [p.name for p in sig.params] == ["x", "y", "weight", "rstd"] and sig.params[0].strides == (260, 1)
    assert signature_from_json(signature_to_json(sig)) == sig
    launches = []
    g = SimpleNamespace(
        device=SimpleNamespace(device_id=0), stream=SimpleNamespace(handle=5), broken=None, ensure_usable=lambda: None,
        stream_for=lambda h: g.stream, to_device=lambda a: SimpleNamespace(handle=a.size, close=lambda s: None),
        to_host=lambda b, a: a, sync=lambda *a, **kw: None,
    )
    monkeypatch.setattr(launch, "gpu", lambda: g)
    monkeypatch.setattr(runtime.CompiledModule, "load_kernel", lambda self, g, name: "kern")
    monkeypatch.setattr(launch, "_launch_config", lambda shape, shmem: shape.grid)
    monkeypatch.setattr(launch, "_cuda_launch", lambda: lambda stream, config, kern, *args: launches.append((config, args)))
    w = np.ones(256, np.float32)
    for m in (1, 9, 5000):
        x = np.zeros((m, 260), np.float32)[:, :256]
        k(x, np.zeros((m, 256), np.float32), w, np.zeros(m, np.float32))
        grid, args = launches[-1]
        assert grid == (min(1056, -(-m // 8)), 1, 1) and len(args) == 5
        assert type(args[-1]) is np.int64 and args[-1] == m
        assert args[0].handle == (m - 1) * 260 + 256  # x's span, from its own shape
    with pytest.raises(BulkredError, match=r"param 'rstd': expected dimension 0 of 4 \(param 'x''s dimension 0\), got shape \(5,\)"):
        k(np.zeros((4, 256), np.float32), np.zeros((4, 256), np.float32), w, np.zeros(5, np.float32))
    assert len(launches) == 3


# The backward kinds of the norms and of cross-entropy, each kernel built for a dynamic M
# (the module of every M): with sm_count 2 and groups of 2 units, layer_norm_backward on
# rows_cta and rows_stream launches 3 CTAs for 3 rows, on rows_cluster 3 clusters of 2
# CTAs (groups {0, 1} and {2}: both levels of the column sums; in a cluster each rank
# sums its own columns), the others run 2 rows: rows_cta 2 CTAs (one group), rows_cluster 2
# clusters of 2 CTAs (one group), rows_warp one CTA (its two warps first combined through
# shared memory).
NORM_BACKWARD = [
    ("rms_norm_backward", "rows_cluster", 132, "float32", "float32", False),  # a cluster's slices of the partial row
    ("layer_norm_backward", "rows_cluster", 132, "float32", "float32", True),  # each rank's columns, both levels; rank 1's slice short
    ("rms_norm_backward", "rows_cta", 136, "bfloat16", "bfloat16", False),  # dweight rounded once to bfloat16
    ("layer_norm_backward", "rows_cta", 300, "float32", "float32", True),
    ("layer_norm_backward", "rows_stream", 4 * (2 * 32 + 11), "float32", "float32", True),  # partial rows added in place
    ("layer_norm_backward", "rows_warp", 40, "float16", None, True),  # the warps' shared-memory combine; dbias alone
]


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", NORM_BACKWARD, ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in NORM_BACKWARD])
def test_norm_backward(kind: str, variant: str, n: int, dtype: str, affine: str | None, db: bool, monkeypatch) -> None:
    """dx = ``rstd * (g - mean(g) - xhat * mean(g * xhat))`` (rms_norm: no ``mean(g)``),
    ``g = dy * weight``, from the stored statistics; dweight = sum of ``dy * xhat`` and
    dbias = sum of dy over the rows; against float64 from the values the kernel read. The
    workspace (ticket counters, partial and group rows) is all 0 again after the launch
    (the runtime's contract: the next launch starts from it)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 2)
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", 2)
    m = 3 if kind == "layer_norm_backward" and variant in ("rows_stream", "rows_cta", "rows_cluster") or variant == "rows_slices" else 2
    rng = np.random.default_rng(n)
    xbits = to_bits(rng.standard_normal((m, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((m, n)), dtype)
    x, dy = values(xbits, dtype), values(dybits, dtype)
    layer = kind == "layer_norm_backward"
    mean = x.mean(1).astype(np.float32) if layer else None
    xc = x - mean.astype(np.float64)[:, None] if layer else x
    rstd = (1 / np.sqrt((xc * xc).mean(1) + 1e-5)).astype(np.float32)
    args = [xbits, to_bits(np.full((m, n), 7.0), dtype), dybits]
    w = None
    if affine:
        args.append(to_bits(rng.standard_normal(n), affine))
        w = values(args[-1], affine)
    args += ([mean] if layer else []) + [rstd]
    outs = (["dweight"] if affine else []) + (["dbias"] if db else [])
    args += [to_bits(np.full(n, 7.0), affine or dtype) for _ in outs]
    built = lowered(module(kind, None, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                           variant=variant), variant)
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ws = np.full(kernel.attributes["bulkred.workspace"].value.data, 0, np.int8)
    got = interpret(built, *args, ws)[:-1]  # (the workspace, passed: returned last)
    assert not ws.any(), "the workspace is not left zeroed"
    xh = xc * rstd.astype(np.float64)[:, None]
    g = dy * (w if w is not None else 1.0)
    want = rstd.astype(np.float64)[:, None] * (g - (g.mean(1, keepdims=True) if layer else 0)
                                               - xh * (g * xh).mean(1, keepdims=True))
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype] * max(1.0, np.abs(want).max())
    np.testing.assert_allclose(values(got[1], dtype), want, rtol=0, atol=tol)
    sums = {"dweight": (dy * xh).sum(0), "dbias": dy.sum(0)}
    for name, buf in zip(outs, got[len(got) - len(outs):], strict=True):
        kept = affine if name == "dweight" else dtype
        ref = sums[name]
        rounding = {"float32": 4e-7, "float16": 1e-3, "bfloat16": 8e-3}[kept] * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(values(buf, kept), ref, rtol=0, atol=rounding + 1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("variant,n,smoothing", [("rows_cta", 300, 0.1), ("rows_cluster", 132, 0.0),
                                                  ("rows_stream", 4 * (2 * 32 + 11) + 1, 0.25)])
def test_cross_entropy_backward(variant: str, n: int, smoothing: float) -> None:
    """dx = ``(exp(x - lse) - s / N - (1 - s) [j == target]) * grad[row]`` from the stored
    lse; a row of ignore_index (-7 here) gets 0, a target outside [0, N) NaN. Row 0's
    target, 101, is the second load of rows_stream's second loop step (its vector's index
    from the loop's and the unrolled load's offsets)."""
    m = 4
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((m, n)) * 3).astype(np.float32)
    xd = x.astype(np.float64)
    mx = xd.max(1)
    lse = (mx + np.log(np.exp(xd - mx[:, None]).sum(1))).astype(np.float32)
    target = np.array([101, -7, n - 1, n + 5], np.int64)
    dl = rng.standard_normal(m).astype(np.float32)
    built = module("cross_entropy_backward", None, n, "float32", variant=variant, ignore_index=-7,
                   label_smoothing=smoothing or None)
    _, dx, _, _, _ = interpret(lowered(built, variant), x, np.full_like(x, 7.0), target, dl, lse)
    want = np.exp(xd - lse.astype(np.float64)[:, None]) - smoothing / n
    for i in (0, 2):
        want[i, target[i]] -= 1 - smoothing
    want *= dl.astype(np.float64)[:, None]
    np.testing.assert_allclose(dx[[0, 2]], want[[0, 2]], rtol=0, atol=2e-6 * max(1.0, np.abs(want).max()))
    assert (dx[1] == 0).all() and np.isnan(dx[3]).all()


@pytest.mark.parametrize("variant", ["rows_warp", "rows_stream"])
def test_cross_entropy_backward_ignored_rows_as_torch(variant: str) -> None:
    """An ignored row's dx is torch's log_softmax backward of a zero gradient, ``0 - p * 0``:
    NaN where the row's softmax is NaN (row 0: a +inf logit, its lse NaN; row 1: a NaN),
    0 where it is not (row 2, with a -inf logit; row 3 finite). A kept row with +inf (row
    4) is NaN, as its softmax."""
    n = {"rows_warp": 68, "rows_stream": 4 * (2 * 32 + 11)}[variant]
    m = 5
    rng = np.random.default_rng(23)
    x = (rng.standard_normal((m, n)) * 3).astype(np.float32)
    x[0, 5], x[1, n - 1], x[2, 0], x[4, 9] = np.inf, np.nan, -np.inf, np.inf
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        mx = xd.max(1)
        lse = (mx + np.log(np.exp(xd - mx[:, None]).sum(1))).astype(np.float32)
    assert np.isnan(lse[[0, 1, 4]]).all() and np.isfinite(lse[[2, 3]]).all()
    target = np.array([-7, -7, -7, -7, 3], np.int64)
    dl = rng.standard_normal(m).astype(np.float32)
    built = module("cross_entropy_backward", None, n, "float32", variant=variant, ignore_index=-7, label_smoothing=0.1)
    _, dx, _, _, _ = interpret(lowered(built, variant), x, np.full_like(x, 7.0), target, dl, lse)
    assert np.isnan(dx[[0, 1, 4]]).all()
    assert (dx[[2, 3]] == 0).all() and not np.signbit(dx[[2, 3]]).any()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_stream_layer_norm_statistics_of_long_rows(dtype: str) -> None:
    """rows_stream's layer_norm statistics of rows of 8192 (each thread adds 256 values
    here, hundreds on the GPU) against float64: the mean within a unit of float32
    at the row's mean |x| (a plain running sum shifted by the row's first element was 1
    to 15 units off here: GPU draw 60's error), rstd within 40 units (an outlying first
    element cost it 100 to 500: the shifted sum of squares cancelled). Row 0: mean near 0,
    x[0] = 40; row 1: x[0] = 9 (3 sigma), the row times 3 plus 1."""
    rng = np.random.default_rng(29)
    x = rng.standard_normal((2, 8192)) * 3
    x[1] += 1
    x[0, 0], x[1, 0] = 40.0, 9.0
    y, stats, xv, w, b = run("layer_norm", x, dtype, variant="rows_stream")
    mu = xv.mean(1)
    rstd = 1 / np.sqrt(((xv - mu[:, None]) ** 2).mean(1) + 1e-5)
    u = 2.0**-24
    assert (np.abs(stats["mean"] - mu) <= u * np.abs(xv).mean(1)).all(), (stats["mean"] - mu) / (u * np.abs(xv).mean(1))
    assert (np.abs(stats["rstd"] / rstd - 1) <= 40 * u).all(), (stats["rstd"] / rstd - 1) / u
    check("layer_norm", y, {}, xv, w, b, dtype)


def test_stream_layer_norm_threads_without_elements() -> None:
    """rows_stream's layer_norm of rows of fewer vectors than threads (10 over 32): the
    threads with none count 0 in the combination (:class:`rows_common._Moments`)."""
    x = np.random.default_rng(31).standard_normal((2, 40)) * 2 + 5
    y, stats, xv, w, b = run("layer_norm", x, variant="rows_stream", affine="float32")
    check("layer_norm", y, stats, xv, w, b, "float32")
