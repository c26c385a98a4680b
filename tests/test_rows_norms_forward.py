"""The forward settings of issue 30, section 4 that are off by default (measured by
tools/probes/rows_forward_norms.py): rows_common.FAST_EXP (softmax, log_softmax and
cross_entropy's exps as ``ex2.approx.ftz(fma(x, log2e, -m log2e))``), LAYER_NORM_FAST
(the squared deviations by FFMA, y from the deviations already computed),
ADD_RMS_CLUSTER_N and ADD_RMS_CLUSTER_MIN_CTAS (add_rms_norm's rows in a cluster's registers), rows_cta.VALUES (fewer
values a thread, more threads a row), rows_cta / rows_warp.MIN_CTAS (``.minnctapersm``) and
rows_stream.CTAS_PER_SM. On the CPU interpreter,
with test_rows' narrowed CTAs (its autouse fixture): each against float64 (test_rows'
tolerances), each visible in the PTX (so that a setting that is not wired fails), the bits
of a row the same in a batch of 5 and of 2 (batch invariance), and the defaults' PTX
without them."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
import test_rows_ce_reduction
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.backend_ptx.signature import signature_of_func
from bulkred_dialect.compiler import compile_tile_module
from bulkred_dialect.errors import BulkredError
from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta, rows_lower, rows_stream, rows_warp
from bulkred_dialect.row_kernels import module

F32, BF16, F16 = rows_common.F32.name, rows_common.BF16.name, rows_common.F16.name


def _rows(m: int, n: int, seed: int, shift: float = 1.5) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, n)) * 3 + shift


def _ptx(kind: str, n: int, dtype: str, variant: str | None = None) -> str:
    """The kernel's PTX (any M) for sm_90a."""
    kw = {"weight": dtype, "bias": dtype, "eps": 1e-5} if kind == "layer_norm" else {}
    kw = {"ignore_index": -100} if kind == "cross_entropy" else kw
    return compile_tile_module(module(kind, None, n, dtype, variant=variant, **kw), "sm_90a", cache=False).ptx


# rows_warp 17 vectors over 32 lanes (a partial one), rows_cta 75 over 64 threads, rows_stream
# one loop step of two loads and a partial vector (test_rows.SHAPES)
@pytest.mark.parametrize("kind,variant,dtype", [("softmax", "rows_cta", F32), ("log_softmax", "rows_warp", F32),
                                                ("softmax", "rows_stream", BF16), ("log_softmax", "rows_cta", BF16),
                                                ("log_softmax", "rows_stream", F32)])
def test_fast_exp_against_float64(kind: str, variant: str, dtype: str, monkeypatch) -> None:
    """FAST_EXP on: y and the statistics of 3 rows against float64."""
    monkeypatch.setattr(rows_common, "FAST_EXP", True)
    y, stats, xv, w, b = test_rows.run(kind, _rows(3, test_rows.SHAPES[variant], 5), dtype, variant=variant)
    test_rows.check(kind, y, stats, xv, w, b, dtype)


@pytest.mark.parametrize("variant,n,smoothing", [("rows_warp", 68, 0.0), ("rows_stream", 4 * (2 * 32 + 11) + 1, 0.25)])
def test_fast_exp_cross_entropy(variant: str, n: int, smoothing: float, monkeypatch) -> None:
    """FAST_EXP on: cross_entropy's lse and losses against float64 (test_rows.run_cross_entropy:
    an ignored row's loss 0, a target outside [0, N) NaN)."""
    monkeypatch.setattr(rows_common, "FAST_EXP", True)
    test_rows.run_cross_entropy(n, smoothing, variant=variant)


@pytest.mark.parametrize("variant", ["rows_warp", "rows_cta", "rows_cluster"])
def test_layer_norm_fast_against_float64(variant: str, monkeypatch) -> None:
    """LAYER_NORM_FAST on: y, the mean and rstd of 3 rows (weight and bias; a partial
    vector in each variant: its deviations zeroed) against float64."""
    monkeypatch.setattr(rows_common, "LAYER_NORM_FAST", True)
    dtype = BF16 if variant == "rows_warp" else F32
    y, stats, xv, w, b = test_rows.run("layer_norm", _rows(3, test_rows.SHAPES[variant], 7), dtype, variant=variant,
                                       affine=dtype)
    test_rows.check("layer_norm", y, stats, xv, w, b, dtype)


def test_layer_norm_fast_large_mean(monkeypatch) -> None:
    """LAYER_NORM_FAST: rows of mean 1000 and spread 1 (sums of x^2 would cancel): the mean
    and rstd within 2e-6 of float64 (test_rows.check's), y no further from float64 than the
    default's (both limited by the float32 mean's rounding, ulp(1000) = 6e-5)."""
    x = np.random.default_rng(17).standard_normal((2, 300)) + 1000.0
    errs = []
    for on in (False, True):
        monkeypatch.setattr(rows_common, "LAYER_NORM_FAST", on)
        y, stats, xv, w, b = test_rows.run("layer_norm", x, F32, variant="rows_cta", affine=F32)
        ref, ref_stats = test_rows.reference("layer_norm", xv, w, b, 1e-5)
        for name, got in stats.items():
            np.testing.assert_allclose(got.astype(np.float64), ref_stats[name], rtol=2e-6)
        errs.append(np.abs(y - ref).max())
    assert errs[1] <= 1.25 * errs[0], errs


WORDS_SWITCHES = ("AFFINE_HELD", "CTA_ONE_BARRIER", "EXP_MAX_FIRST", "RMS_FMA")
"""rows_common's settings of the short rows (tests/test_rows_forward_words.py), each a switch
and a ``_MEASURED`` table by element type."""


def _no_measured_settings(monkeypatch) -> None:
    """Every table of measured settings emptied: the kernels of before them."""
    for mod, name in ((rows_common, "FAST_EXP_MEASURED"), (rows_common, "LAYER_NORM_FAST_MEASURED"),
                      *((rows_common, f"{t}_MEASURED") for t in WORDS_SWITCHES),
                      (rows_common, "ADD_RMS_CLUSTER_N"), (rows_cta, "VALUES_MEASURED"),
                      (rows_cta, "MIN_CTAS_MEASURED"), (rows_warp, "MIN_CTAS_MEASURED")):
        monkeypatch.setattr(mod, name, {})
    monkeypatch.setattr(rows_common, "ADD_RMS_CLUSTER_MIN_CTAS", None)


def test_measured_settings_reach_their_cells_only() -> None:
    """The tables as measured on the H200 (docs/rows.md): keyed by element type names (and
    kinds), ranges of N; layer_norm float32 16384 takes 2 CTAs a multiprocessor, 4096 not; the
    module-wide switches stay None (the tables decide)."""
    assert rows_common.FAST_EXP is None and rows_common.LAYER_NORM_FAST is None
    assert rows_cta.VALUES is None and rows_cta.MIN_CTAS is None and rows_warp.MIN_CTAS is None
    assert all(getattr(rows_common, t) is None for t in WORDS_SWITCHES)
    for table in (rows_common.FAST_EXP_MEASURED, rows_common.LAYER_NORM_FAST_MEASURED,
                  *(getattr(rows_common, f"{t}_MEASURED") for t in WORDS_SWITCHES)):
        kinds = {"softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy"}
        assert all(k in (F32, BF16, F16) or (k[0] in kinds and k[1] in (F32, BF16, F16)) for k in table), table
        assert all(lo <= hi for r in table.values() for lo, hi in r)
        twin = {k: r for k, r in table.items() if F16 in (k if isinstance(k, tuple) else (k,))}
        assert twin == {(k[0], F16) if isinstance(k, tuple) else F16: r for k, r in table.items()
                        if BF16 in (k if isinstance(k, tuple) else (k,))}  # float16 as bfloat16 (rows_common.half_as_bfloat16)
    for table in (rows_cta.VALUES_MEASURED, rows_cta.MIN_CTAS_MEASURED, rows_warp.MIN_CTAS_MEASURED):
        assert all(d in (F32, BF16, F16) and lo <= hi for (_, d), r in table.items() for lo, hi, _k in r)
        assert {k: r for (k, d), r in table.items() if d == F16} == {k: r for (k, d), r in table.items() if d == BF16}
    assert ".minnctapersm 2" in _ptx("layer_norm", 16384, F32, "rows_cta")
    assert ".minnctapersm" not in _ptx("layer_norm", 4096, F32, "rows_cta")


def test_settings_change_the_ptx(monkeypatch) -> None:
    """Each setting shows in its kernel's PTX (ex2.approx.ftz; one sub.rn.f32 of x - mean
    per element instead of two; .minnctapersm; the grid) and not in the kernel without it."""
    _no_measured_settings(monkeypatch)
    base = _ptx("softmax", 256, F32, "rows_warp")
    monkeypatch.setattr(rows_warp, "MIN_CTAS", 3)
    assert ".minnctapersm" not in base and ".minnctapersm 3" in _ptx("softmax", 256, F32, "rows_warp")
    monkeypatch.setattr(rows_warp, "MIN_CTAS", None)
    monkeypatch.setattr(rows_cta, "MIN_CTAS_MEASURED", {("softmax", F32): ((512, 1024, 2),)})
    assert ".minnctapersm 2" in _ptx("softmax", 512, F32, "rows_cta")
    monkeypatch.setattr(rows_common, "FAST_EXP", True)
    fast = _ptx("softmax", 256, F32, "rows_warp")
    assert "ex2.approx.ftz.f32" not in base and "ex2.approx.ftz.f32" in fast
    ln = _ptx("layer_norm", 256, F32, "rows_warp")
    monkeypatch.setattr(rows_common, "LAYER_NORM_FAST", True)
    ln_fast = _ptx("layer_norm", 256, F32, "rows_warp")
    assert ln.count("sub.rn.f32") - ln_fast.count("sub.rn.f32") == 8  # (a lane's 8 values of 256: 2 vectors of 4)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 132)
    shape = compile_tile_module(module("softmax", 1 << 20, 2048, F32, variant="rows_stream"), "sm_90a", cache=False)
    monkeypatch.setattr(rows_stream, "CTAS_PER_SM", 1)
    one = compile_tile_module(module("softmax", 1 << 20, 2048, F32, variant="rows_stream"), "sm_90a", cache=False)
    assert (shape.kernel("rows").signature.launch.grid[0], one.kernel("rows").signature.launch.grid[0]) == (132 * (2048 // rows_stream.BLOCK), 132)


def test_cta_values(monkeypatch) -> None:
    """rows_cta.VALUES = 4: a float32 row of 300 (75 vectors) on 128 threads, one vector
    each (the default: 64 threads of two), against float64."""
    op = next(o for o in module("rms_norm", None, 300, F32, eps=1e-5).walk() if o.name == "bulkred.normalize_rows")
    assert rows_cta.block_for(op) == 64
    monkeypatch.setattr(rows_cta, "VALUES", 4)
    assert rows_cta.block_for(op) == 128
    y, stats, xv, w, b = test_rows.run("rms_norm", _rows(3, 300, 9), F32, variant="rows_cta", affine=F32)
    test_rows.check("rms_norm", y, stats, xv, w, b, F32)
    monkeypatch.setattr(rows_cta, "VALUES", None)
    monkeypatch.setattr(rows_cta, "VALUES_MEASURED", {("rms_norm", F32): ((256, 512, 4),)})
    assert rows_cta.block_for(op) == 128


def test_add_rms_norm_in_a_cluster(monkeypatch) -> None:
    """ADD_RMS_CLUSTER_N: bfloat16 add_rms_norm (rows_cluster.MEASURED has no bfloat16)
    refused by rows_cluster without it; with it the dispatch's choice past rows_cta's rows
    (forced here: small rows), h and y of 3 rows against float64 (test_rows.run checks h)."""
    _no_measured_settings(monkeypatch)
    with pytest.raises(BulkredError):
        _ptx_add = compile_tile_module(module("add_rms_norm", None, 264, BF16, variant="rows_cluster", eps=1e-5),
                                       "sm_90a", cache=False)
        del _ptx_add
    monkeypatch.setattr(rows_common, "ADD_RMS_CLUSTER_N", {BF16: 264})
    y, stats, xv, w, b = test_rows.run("add_rms_norm", _rows(3, 264, 3), BF16, variant="rows_cluster", affine=BF16)
    test_rows.check("add_rms_norm", y, stats, xv, w, b, BF16)
    built = module("add_rms_norm", None, 264, BF16, variant="rows_cluster", eps=1e-5)
    assert ".minnctapersm" not in compile_tile_module(built, "sm_90a", cache=False).ptx
    monkeypatch.setattr(rows_common, "ADD_RMS_CLUSTER_MIN_CTAS", 2)  # (rows_lower sets it)
    built = module("add_rms_norm", None, 264, BF16, variant="rows_cluster", eps=1e-5)
    assert ".minnctapersm 2" in compile_tile_module(built, "sm_90a", cache=False).ptx


@pytest.mark.parametrize("kind,variant,setting", [("softmax", "rows_warp", "FAST_EXP"),
                                                  ("layer_norm", "rows_cta", "LAYER_NORM_FAST")])
def test_batch_invariance(kind: str, variant: str, setting: str, monkeypatch) -> None:
    """A setting's kernel of any M: the first 2 of 5 rows have the bits of the same 2 rows
    alone."""
    monkeypatch.setattr(rows_common, setting, True)
    n = test_rows.SHAPES[variant]
    x = test_rows.to_bits(_rows(5, n, 21), F32)
    kw = {"weight": F32, "bias": F32, "eps": 1e-5} if kind == "layer_norm" else {}
    rng = np.random.default_rng(2)
    extra = [test_rows.to_bits(rng.standard_normal(n), F32) for _ in range(2)] if kind == "layer_norm" else []
    built = test_rows.lowered(module(kind, None, n, F32, variant=variant, **kw))  # (one kernel for both M)
    five = test_rows.interpret(built, x, np.zeros_like(x), *extra)[1]
    two = test_rows.interpret(built, x[:2].copy(), np.zeros_like(x[:2]), *extra)[1]
    assert five[:2].tobytes() == two.tobytes()


def _non_finite_rows(n: int) -> np.ndarray:
    """5 rows: finite, all -inf, +inf last, a NaN in the middle, -inf second."""
    x = _rows(5, n, 3)
    x[1] = -np.inf
    x[2, n - 1] = np.inf
    x[3, n // 2] = np.nan
    x[4, 1] = -np.inf
    return x


def _outputs(kind: str, variant: str, dtype: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """y and the statistics (cross_entropy: loss and lse, smoothing 0.1, targets in the row)."""
    if kind != "cross_entropy":
        y, stats, *_ = test_rows.run(kind, x, dtype, variant=variant)
        return {"y": y, **stats}
    m, n = x.shape
    built = module("cross_entropy", m, n, dtype, stats=("lse",), variant=variant, ignore_index=-7, label_smoothing=0.1)
    out = test_rows.interpret(test_rows.lowered(built), test_rows.to_bits(x, dtype), np.array([0, 3, 5, n - 1, 1], np.int64),
                              np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32))
    return {"loss": out[2], "lse": out[3]}


# each kind once, each register variant's combination (butterfly, shared memory, cluster) and the stream's
@pytest.mark.parametrize("kind,variant,dtype", [("softmax", "rows_stream", BF16), ("log_softmax", "rows_warp", F32),
                                                ("cross_entropy", "rows_cta", BF16), ("softmax", "rows_cluster", F32),
                                                ("log_softmax", "rows_stream", F32), ("cross_entropy", "rows_stream", F32)])
def test_fast_exp_non_finite_rows_as_the_default(kind: str, variant: str, dtype: str, monkeypatch) -> None:
    """FAST_EXP on and off give the same non-finite values (torch's, test_rows'
    test_inf_rows_as_torch_cuda): an all -inf row and a row with NaN or +inf NaN
    everywhere (+inf: inf - inf is NaN in both forms of the exp, rows_common.exp_shifted),
    the lse NaN where its row has NaN or +inf, -inf for an all -inf row; a -inf element 0
    (log_softmax -inf) in an otherwise finite row; the statistics alike."""
    n = test_rows.SHAPES[variant]
    x = _non_finite_rows(n)
    got = []
    for on in (False, True):
        monkeypatch.setattr(rows_common, "FAST_EXP", on)
        got.append(_outputs(kind, variant, dtype, x if variant != "rows_cluster" else x[[0, 2]]))
    for name, base in got[0].items():
        a, b = np.asarray(base, np.float64), np.asarray(got[1][name], np.float64)
        odd = ~np.isfinite(a) | ~np.isfinite(b)
        assert odd.any(), name
        np.testing.assert_array_equal(a[odd], b[odd], err_msg=name)  # (NaN equal to NaN; infinities by sign)


@pytest.mark.parametrize("variant", ["rows_warp", "rows_cta", "rows_stream"])
def test_fast_exp_large_logits(variant: str, monkeypatch) -> None:
    """FAST_EXP on, bfloat16 rows of mean 1000 and rows of logits scaled by 1e10 (the shifted
    form fma(x, log2(e), -m log2(e)) put |m| 2^-24 into each exponent: sums 2e-5 off at
    1000, inf exps and NaN at 1e10): softmax, log_softmax and the row sums within
    test_rows.check's float64 bounds, as the default's."""
    monkeypatch.setattr(rows_common, "FAST_EXP", True)
    for x in (_rows(3, test_rows.SHAPES[variant], 11) + 1000, _rows(3, test_rows.SHAPES[variant], 12) * 1e10):
        for kind in ("softmax", "log_softmax"):
            y, stats, xv, w, b = test_rows.run(kind, x, BF16, variant=variant)
            assert np.isfinite(y).all(), kind
            test_rows.check(kind, y, stats, xv, w, b, BF16)


# rows_warp: groups of a CTA (G = 2); rows_cluster: a cluster's rank 0; rows_bulk: its own rows loop (rows_cta's and
# rows_stream's rows, a CTA's, are rows_bulk's formula with G = 1)
PARTIALS = [v for v in test_rows_ce_reduction.VARIANTS if v[0] in ("rows_warp", "rows_cluster", "rows_bulk")]


@pytest.mark.parametrize("variant,n,dtype", PARTIALS, ids=[v[0] for v in PARTIALS])
def test_loss_partials(variant: str, n: int, dtype: str, monkeypatch) -> None:
    """rows_lower.LOSS_PARTIALS (on by default; off: the last CTA reads every row): cross_entropy's
    sum and mean from each CTA's pair of its own rows, then the last CTA's sum of the
    pairs: the mean on one unit (sm_count 0: rows_warp's threads take up to 2 rows of 70),
    the sum on several (sm_count 1), rows ignored, against float64 from the loss rows the
    kernel wrote; the same bits on a second launch and the workspace left zeroed
    (run_reduced)."""
    chosen = [(d, None, 1, 1 << 30, None) for d in (F32, BF16, "float16")]  # (test_rows_ce_reduction's bulk_small)
    for name, v in (("SLICE_BYTES", 512), ("CHUNK", 128), ("BLOCK", 32), ("MIN_BLOCK", 32), ("CHOSEN", chosen),
                    ("PERSISTENT", None), ("BUFFERS", 2)):
        monkeypatch.setattr(rows_bulk, name, v)
    assert rows_lower.LOSS_PARTIALS is True
    monkeypatch.setattr(rows_lower, "LOSS_PARTIALS", False)

    def workspace() -> tuple[int, int]:  # (the workspace's bytes, the grid's CTAs at most)
        built = test_rows.lowered(module("cross_entropy", None, n, dtype, ignore_index=-7, reduction="mean", variant=variant))
        sig = signature_of_func(next(o for o in built.walk() if o.name == "func.func"))  # (the runtime's, at level 2)
        return sig.workspace, sig.launch.grid[0]

    assert workspace()[0] == 16  # (the ticket's counter alone)
    monkeypatch.setattr(rows_lower, "LOSS_PARTIALS", True)
    ws, ctas = workspace()
    assert ws == -(-(16 + 8 * ctas) // 16) * 16  # (and a pair of float32 a CTA, rounded up to 16 bytes)
    rng = np.random.default_rng(n)
    m = 70 if variant == "rows_warp" else 9  # (rows_warp: more rows than a unit's threads, 64)
    target = rng.integers(0, n, m)
    target[rng.random(m) < 0.25] = test_rows_ce_reduction.IGNORE
    for sms, reduction in ((0, "mean"), (1, "sum")):
        monkeypatch.setattr(rows_common, "sm_count", lambda t, sms=sms: sms)
        got, loss, _, units = test_rows_ce_reduction.run_reduced(variant, n, target, reduction, dtype, seed=sms,
                                                                 again=sms == 1)  # (a second launch: the same bits)
        assert (units > 1) == (sms == 1), units
        w = test_rows_ce_reduction.want(loss, target, reduction)
        assert abs(got - w) <= test_rows_ce_reduction.rounding(dtype) * abs(w) + 1e-6 * np.abs(loss).sum(), (got, w)


def test_float16_takes_bfloat16s_entries_where_it_has_none() -> None:
    """half_as_bfloat16: a dict keyed by the type's name or a (kind, name) tuple gets
    float16's twins of bfloat16's keys, its own float16 entries kept; a list of rows led by
    the name gets each bfloat16 row's twin right after it (first match wins), unless the
    list has float16 rows of its own; float32's entries are untouched."""
    twin = rows_common.half_as_bfloat16
    assert twin({BF16: 1, F32: 2}) == {BF16: 1, F32: 2, F16: 1}
    assert twin({BF16: 1, F16: 3}) == {BF16: 1, F16: 3}
    assert twin({("softmax", BF16): 1, ("softmax", F32): 2}) == {("softmax", BF16): 1, ("softmax", F32): 2, ("softmax", F16): 1}
    rows = [(F32, "a"), (BF16, "b"), (BF16, "c"), (F32, "d")]
    assert twin(rows) == [(F32, "a"), (BF16, "b"), (F16, "b"), (BF16, "c"), (F16, "c"), (F32, "d")]
    assert twin([(BF16, "b"), (F16, "e")]) == [(BF16, "b"), (F16, "e")]


def test_a_kind_and_type_entry_before_the_types() -> None:
    """rows_common's switches read a (kind, type name) entry of their table before the type
    name's: EXP_MAX_FIRST is on for bfloat16 cross_entropy at 4096 (measured faster) and
    off for softmax there (measured slower), float16 as bfloat16."""
    from types import SimpleNamespace

    from bulkred_dialect.ops.dtypes import DTYPES
    from bulkred_dialect.ops.tile.rows import NormKind

    def on(kind, dtype, n):
        p = SimpleNamespace(kind=kind, dtype=DTYPES[dtype], n=n, items=8, cluster=1)
        return rows_common.max_first(p)  # type: ignore[arg-type]

    assert on(NormKind.CROSS_ENTROPY, BF16, 4096) and on(NormKind.CROSS_ENTROPY, F16, 4096)
    assert not on(NormKind.SOFTMAX, BF16, 4096) and not on(NormKind.CROSS_ENTROPY, BF16, 8192)
    assert not on(NormKind.CROSS_ENTROPY, F32, 4096)
