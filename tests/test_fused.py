"""Fused reductions (issue 17) through the lowering: every grid form (whole, inner,
outer, middle, general) of argmax/argmin, var, logsumexp and the prologue/epilogue
maps, run by the CPU interpreter (every thread) and compared with numpy in float64;
ties, NaN and infinities; the explain rows of the variants that decline; the sm_100a
absmax's ``redux.sync.max.abs`` in the SASS."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR
from bulkred_dialect.ops.tile import ReduceOp
from bulkred_dialect.ops.tile import kernel_launch
from bulkred_dialect.passes.dispatch import explain
from bulkred_dialect.passes.variants import REGISTRY, grid_full, grid_runs
from bulkred_dialect.ops.target import Target

NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32}


def kept_shape(shape, axes):
    return [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]


def fused_module(kind, shape, dtype, axes, *, out=None, aux=False, **options):
    kept = kept_shape(shape, axes)
    index = kind in ("argmax", "argmin")
    with T.kernel("k") as k:
        x = k.param("x", shape, dtype)
        y = k.param("y", kept, "int64" if index else (out or dtype))
        a = k.param("a", kept, dtype if index else (out or dtype)) if aux else None
        T.reduce(kind, y, x, axes=axes, aux=a, **options)
    return k.module()


# Each form's shape is about the smallest that takes its path, which lower() checks in
# every test that runs it: form id -> (shape, axes, variant, grid, threads per CTA,
# workspace, narrowed). ``narrowed``: the variant module whose BLOCK (512 threads for
# grid_full, 256 for grid_runs as built) the test sets to the threads per CTA, so that
# a grid of several CTAs takes a thousand elements instead of tens of thousands: the same
# kernel (the workspace, the ticket, the last CTA's in-order combine), which the
# interpreter runs thread by thread. tests/gpu runs the CTAs as built.
PATHS = {
    # one CTA of 2 warps (their partials through shared memory): 160 vectors of 4 over
    # 64 threads (32 read a 3rd), a tail of 3
    "whole": ([643], None, "grid_full", (1, 1, 1), 64, False, None),
    # 3 CTAs of a warp whose partials combine through the workspace and the ticket:
    # 325 vectors over 96 threads (37 read a 4th) and a tail of 1
    "whole_ctas": ([1301], None, "grid_full", (3, 1, 1), 32, True, grid_full),
    # a warp per row; rows of 45 (scalar loads; 13 lanes read a 2nd element)
    "inner": ([5, 45], [1], "grid_rows", (1, 1, 1), 256, False, None),
    # one CTA: 32 row groups of 3 columns, 8 groups read a 2nd row
    "outer": ([40, 3], [0], "grid_split_det", (1, 1, 1), 96, False, None),
    # O = 2 blocks x 2 row splits, combined by the last CTA of each block's tile (9
    # rows: one split reads a 5th)
    "middle": ([2, 9, 5], [1], "grid_middle", (1, 2, 2), 32, True, None),
    # a CTA of 2 warps per value, 5 runs of 7
    "general": ([5, 2, 7], [0, 2], "grid_runs", (2, 1, 1), 64, False, None),
    # the innermost axis kept: a warp per value, 8 values of 10
    "gather": ([2, 2, 5, 4], [0, 2], "grid_gather", (1, 1, 1), 256, False, None),
    # grid_runs' other paths (argmax and var only), CTAs of 2 warps: 2 row splits per
    # value (8 rows of 8 vectors side by side, passes of 16 rows: 20 is a pass and a
    # checked 4) combined by the last CTA; runs wider than the CTA (65 scalar loads: a
    # tail of one past 64)
    "general_split": ([20, 2, 32], [0, 2], "grid_runs", (2, 2, 1), 64, True, grid_runs),
    "general_wide": ([2, 2, 65], [0, 2], "grid_runs", (2, 2, 1), 64, True, grid_runs),
}
_PATH_OF = {(tuple(p[0]), None if p[1] is None else tuple(p[1])): p[2:] for p in PATHS.values()}


def lower(m, shape, axes, target="sm_90a"):
    """``lower-tile-reductions`` of ``m`` in place; for a shape of :data:`PATHS`, with its
    CTAs narrowed where it says so, checking the variant, the launch and the workspace."""
    path = _PATH_OF.get((tuple(shape), None if axes is None else tuple(axes)))
    if path is None:
        lower_tile_module(m, target, pipeline=f"lower-tile-reductions{{target={target}}}")
        return m
    variant, grid, block, workspace, narrowed = path
    op = next(o for o in m.walk() if isinstance(o, ReduceOp))
    chosen = REGISTRY.evaluate(op, Target.parse(target)).chosen
    assert chosen is not None and chosen.variant.name == variant, (shape, axes, chosen)
    with pytest.MonkeyPatch.context() as mp:
        if narrowed is not None:
            mp.setattr(narrowed, "BLOCK", block)
        lower_tile_module(m, target, pipeline=f"lower-tile-reductions{{target={target}}}")
    kernel = next(o for o in m.walk() if o.name == "func.func")
    launch = kernel_launch(kernel)
    got = (launch.grid_dims, launch.block_dims, WORKSPACE_ATTR in kernel.attributes)
    assert got == (grid, (block, 1, 1), workspace), (shape, axes, got)
    return m


# Lowered modules by what builds them: a test that runs one kernel on several inputs
# lowers it once (the interpreter does not change the module).
_LOWERED: dict[str, object] = {}


def lowered_module(kind, shape, dtype, axes, target, out, aux, options):
    key = repr((kind, list(shape), dtype, axes, target, out, aux, sorted(options.items())))
    if key not in _LOWERED:
        m = fused_module(kind, list(shape), dtype, axes, out=out, aux=aux, **options)
        _LOWERED[key] = lower(m, shape, axes, target)
    return _LOWERED[key]


def run_fused(kind, x, axes, *, target="sm_90a", out=None, aux=False, **options):
    """(dst, aux or None) of the fused reduction of numpy ``x`` on the interpreter."""
    dtype = str(x.dtype)
    m = lowered_module(kind, x.shape, dtype, axes, target, out, aux, options)
    kept = kept_shape(list(x.shape), axes)
    index = kind in ("argmax", "argmin")
    args = [x, np.zeros(kept, np.int64 if index else NP[out or dtype])]
    if aux:
        args.append(np.zeros(kept, x.dtype if index else NP[out or dtype]))
    kernel = next(o for o in m.walk() if o.name == "func.func")
    if WORKSPACE_ATTR in kernel.attributes:
        args.append(np.zeros(kernel.attributes[WORKSPACE_ATTR].value.data, np.int8))
    outs = run_grid(m, "k", *args)
    return outs[1], (outs[2] if aux else None)


def variant_of(kind, shape, dtype, axes, target="sm_90a", **options) -> str:
    m = fused_module(kind, shape, dtype, axes, **options)
    op = next(o for o in m.walk() if isinstance(o, ReduceOp))
    chosen = REGISTRY.evaluate(op, Target.parse(target)).chosen
    return chosen.variant.name if chosen is not None else "none"


def moved(x, axes):
    """``x`` with the reduced axes last, flattened into one (row-major over them)."""
    if axes is None:
        return x.reshape(1, -1)
    kept = [i for i in range(x.ndim) if i not in axes]
    y = np.transpose(x, kept + list(axes))
    return y.reshape(int(np.prod([x.shape[i] for i in kept])), -1)


def ref_arg(kind, x, axes):
    """torch's argmax/argmin: the first index of the largest (smallest); NaN wins."""
    rows = moved(x, axes).astype(np.float64)
    out = []
    for r in rows:
        nan = np.flatnonzero(np.isnan(r))
        out.append(nan[0] if nan.size else (np.argmax(r) if kind == "argmax" else np.argmin(r)))
    return np.array(out, np.int64)


def ref_lse(x, axes):
    rows = moved(x, axes).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.max(rows, axis=1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        return (np.log(np.sum(np.exp(rows - m), axis=1)) + m[:, 0])


FORM_IDS = ["whole", "whole_ctas", "inner", "outer", "middle", "general", "gather"]
FORMS = [tuple(PATHS[i][:2]) for i in FORM_IDS]
RUNS_IDS = ["general_split", "general_wide"]
RUNS_FORMS = [tuple(PATHS[i][:2]) for i in RUNS_IDS]


# argmax on every form; argmin, the same combine with the comparison reversed
# (passes/fused.py's Reducer), where states meet across warps and CTAs (whole_ctas:
# shuffles, shared memory and the workspace), across row groups (outer) and across
# row splits (middle).
ARG_CASES = [("argmax", i) for i in FORM_IDS + RUNS_IDS] + [("argmin", i) for i in ("whole_ctas", "outer", "middle")]


@pytest.mark.parametrize(
    "kind, shape, axes", [(k, *PATHS[i][:2]) for k, i in ARG_CASES], ids=[f"{k}-{i}" for k, i in ARG_CASES]
)
def test_argmax_argmin_every_form(kind, shape, axes):
    rng = np.random.default_rng(17)
    # few distinct values: many ties; the first index among them must win
    x = rng.integers(-10, 10, shape).astype(np.float32)
    rows = moved(x, axes)
    best = rows.max(axis=1) if kind == "argmax" else rows.min(axis=1)
    assert ((rows == best[:, None]).sum(axis=1) > 1).any(), "no output has a tie to break"
    got, values = run_fused(kind, x, axes, aux=True)
    want = ref_arg(kind, x, axes)
    np.testing.assert_array_equal(got.reshape(-1), want)
    np.testing.assert_array_equal(values.reshape(-1), rows[np.arange(rows.shape[0]), want])


# var and its mean in every form: test_float32_variance_of_a_large_mean_and_a_small_spread
# (correction 0). Here correction 1, applied where the result is stored: by the last
# CTA after the workspace (whole_ctas), by a warp per row (inner), after row splits
# (general_split).
@pytest.mark.parametrize("form", ["whole_ctas", "inner", "general_split"])
def test_var_mean_every_form(form):
    shape, axes = PATHS[form][:2]
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 3 + 100).astype(np.float32)  # a large mean: Welford's case
    var, mean = run_fused("var", x, axes, aux=True, correction=1)
    rows = moved(x, axes).astype(np.float64)
    np.testing.assert_allclose(var.reshape(-1), rows.var(axis=1, ddof=1), rtol=2e-5)
    np.testing.assert_allclose(mean.reshape(-1), rows.mean(axis=1), rtol=1e-6)


@pytest.mark.parametrize("shape, axes", FORMS + RUNS_FORMS, ids=FORM_IDS + RUNS_IDS)
def test_float32_variance_of_a_large_mean_and_a_small_spread(shape, axes):
    """var's state keeps a shift (its first element): the running means stay near 0, so
    a float32 mean near 1e4 (rounded to 2^-10 unshifted) or near 1 with a spread of 1e-5
    loses nothing in Chan's combinations. Unshifted, 1e4 + 0.01 * randn was off by 1e-2
    (relative) in every form; shifted, about 1e-7. torch's GPU cases (1e4 + randn(2^24),
    1 + 1e-3 * randn(2^22)) are tests/gpu/test_fused_gpu.py's."""
    rng = np.random.default_rng(8)
    regimes = ((1e4, 0.01), (1.0, 1e-5), (-3e5, 1.0))
    # Each output reduces its own elements: a form of k outputs takes k regimes in one
    # run (output r of run j the regime (j k + r) mod 3), so that every regime goes
    # through every form in ceil(3 / k) runs.
    where = moved(np.arange(int(np.prod(shape))).reshape(shape), axes)  # flat index of each output's elements
    k = where.shape[0]
    for run in range(-(-len(regimes) // k)):
        regime = [regimes[(run * k + r) % len(regimes)] for r in range(k)]
        x = np.empty(shape, np.float32)
        for r, (base, spread) in enumerate(regime):
            x.flat[where[r]] = (base + spread * rng.standard_normal(where.shape[1])).astype(np.float32)
        var, mean = run_fused("var", x, axes, aux=True)
        rows = moved(x, axes).astype(np.float64)  # the float32 inputs, exactly
        np.testing.assert_allclose(var.reshape(-1), rows.var(axis=1), rtol=2e-6, err_msg=f"{regime}")
        ulp = np.array([np.spacing(np.float32(abs(base))) for base, _ in regime])
        assert np.all(np.abs(mean.reshape(-1) - rows.mean(axis=1)) <= ulp), regime  # within an ulp


@pytest.mark.parametrize("shape, axes", FORMS, ids=FORM_IDS)
def test_logsumexp_every_form(shape, axes):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 20).astype(np.float32)
    got, _ = run_fused("logsumexp", x, axes)
    np.testing.assert_allclose(got.reshape(-1), ref_lse(x, axes), rtol=2e-6, atol=2e-6)


NORMS = {
    # name: (kind, prologue, epilogue, numpy of rows)
    "absmax": ("max", ["abs"], None, lambda r: np.abs(r).max(axis=1)),
    "absmin": ("min", ["abs"], None, lambda r: np.abs(r).min(axis=1)),
    "l1": ("sum", ["abs"], None, lambda r: np.abs(r).sum(axis=1)),
    "l2": ("sum", ["square"], ["sqrt"], lambda r: np.sqrt((r * r).sum(axis=1))),
    "l3": ("sum", [("pow", 3.0)], [("pow", 1 / 3)], lambda r: (np.abs(r) ** 3).sum(axis=1) ** (1 / 3)),
    "mean": ("sum", None, ["div_count"], lambda r: r.mean(axis=1)),
    "scaled": ("sum", ["cast", ("scale", 0.5)], [("scale", 4.0), "log"], lambda r: np.log(4 * (0.5 * r).sum(axis=1))),
}


# The maps are applied by one piece of code for every form (passes/fused.py's Reducer:
# the prologue as each element is absorbed, the epilogue as the result is stored); a
# form decides only where those run. So every form runs l2 (a prologue and an
# epilogue) and mean (div_count: the form's reduced count), and the other maps run on
# grid_full (vector loads, a map per lane) and grid_split_det (columns, whose combine
# must not apply the prologue again).
MAP_CASES = [(name, form) for form in FORM_IDS for name in ("l2", "mean")] + [
    (name, form) for name in NORMS if name not in ("l2", "mean") for form in ("whole", "outer")
]


@pytest.mark.parametrize("name, form", MAP_CASES, ids=[f"{n}-{f}" for n, f in MAP_CASES])
def test_prologue_epilogue_every_form(name, form):
    shape, axes = PATHS[form][:2]
    kind, pro, epi, ref = NORMS[name]
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(np.float32)
    if name == "scaled":
        x = np.abs(x) + 0.1  # log of a positive sum
    got, _ = run_fused(kind, x, axes, prologue=pro, epilogue=epi)
    want = ref(moved(x, axes).astype(np.float64))
    rtol = 2e-5 if name in ("l3", "scaled") else 2e-6
    np.testing.assert_allclose(got.reshape(-1), want, rtol=rtol, atol=1e-6)


def test_std_is_var_with_sqrt():
    x = np.random.default_rng(1).standard_normal([9, 33]).astype(np.float32)
    got, _ = run_fused("var", x, [1], epilogue=["sqrt"])
    np.testing.assert_allclose(got, x.astype(np.float64).std(axis=1), rtol=2e-6)


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
@pytest.mark.parametrize("shape, axes", [([1003], None), ([5, 67], [1]), ([40, 6], [0])], ids=["whole", "inner", "outer"])
def test_nan_wins_first_nan_index(kind, shape, axes):
    rng = np.random.default_rng(23)
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, size=max(2, flat.size // 50), replace=False)] = np.nan
    got, _ = run_fused(kind, x, axes)
    np.testing.assert_array_equal(got.reshape(-1), ref_arg(kind, x, axes))


def test_argmax_of_all_minus_inf_and_ints():
    x = np.full([300], -np.inf, np.float32)
    got, _ = run_fused("argmax", x, None)
    assert got[0] == 0
    xi = np.random.default_rng(2).integers(-3, 3, [6, 50]).astype(np.int32)
    for kind in ("argmax", "argmin"):
        got, vals = run_fused(kind, xi, [1], aux=True)
        np.testing.assert_array_equal(got, ref_arg(kind, xi, [1]))
        np.testing.assert_array_equal(vals, xi.max(axis=1) if kind == "argmax" else xi.min(axis=1))


def test_logsumexp_extremes():
    big = np.float32(3.0e38)
    cases = {
        "near the float32 maximum": np.array([big, big, 1.0, -big], np.float32),
        "all -inf": np.full([70], -np.inf, np.float32),
        "one +inf": np.array([1.0, np.inf, 2.0], np.float32),
        "a NaN": np.array([1.0, np.nan, 2.0], np.float32),
        "very negative": np.full([40], -1000.0, np.float32),
    }
    results = {}
    for what, x in cases.items():
        got, _ = results[what] = run_fused("logsumexp", x, None)
        want = ref_lse(x, None)
        if np.isnan(want).any():
            assert np.isnan(got).all(), what
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=what)
    assert np.isfinite(results["near the float32 maximum"][0]).all()


def test_var_correction_at_or_past_count():
    x = np.array([[1.0, 2.0], [3.0, 3.0]], np.float32)
    got, _ = run_fused("var", x, [1], correction=2)  # N - correction = 0: inf, or nan for equal values
    assert np.isinf(got[0]) and np.isnan(got[1])
    got, _ = run_fused("var", x[:, :1].copy(), [1], correction=1)  # torch.var of one element: nan
    assert np.isnan(got).all()


def test_float16_and_float64():
    rng = np.random.default_rng(8)
    x16 = rng.standard_normal([4, 130]).astype(np.float16)
    var, mean = run_fused("var", x16, [1], aux=True)
    np.testing.assert_allclose(var.astype(np.float64), x16.astype(np.float64).var(axis=1), rtol=2e-3)
    got, _ = run_fused("argmax", x16, [1])
    np.testing.assert_array_equal(got, ref_arg("argmax", x16, [1]))
    x64 = rng.standard_normal([3, 70])
    var, mean = run_fused("var", x64, [1], aux=True, correction=1)
    np.testing.assert_allclose(var, x64.var(axis=1, ddof=1), rtol=1e-12)
    got, _ = run_fused("sum", x64, [1], prologue=["square"], epilogue=["sqrt"])
    np.testing.assert_allclose(got, np.linalg.norm(x64, axis=1), rtol=1e-13)


def test_wider_dst_accumulates_in_it():
    x = np.random.default_rng(4).standard_normal([2, 300]).astype(np.float16)
    got, _ = run_fused("sum", x, [1], out="float32", prologue=["square"], epilogue=["sqrt"])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.linalg.norm(x.astype(np.float64), axis=1), rtol=1e-6)


# region Dispatch and explain


@pytest.mark.parametrize(
    "kind, shape, axes, options, variant",
    [
        ("argmax", [4096], None, {}, "grid_full"),
        ("var", [64, 4096], [1], {}, "grid_rows"),
        ("logsumexp", [4096, 64], [0], {}, "grid_split_det"),
        ("sum", [4096, 64], [0], {"prologue": ["square"]}, "grid_split_det"),
        ("argmin", [8, 100, 16], [1], {}, "grid_middle"),
        ("max", [8, 10, 16], [0, 2], {"prologue": ["abs"]}, "grid_runs"),
        ("max", [8, 10, 16, 3], [0, 2], {"prologue": ["abs"]}, "grid_gather"),
        ("sum", [1 << 20], None, {"epilogue": ["div_count"]}, "grid_full"),
    ],
)
def test_each_form_has_a_fused_variant(kind, shape, axes, options, variant):
    assert variant_of(kind, shape, "float32", axes, **options) == variant


def test_bulk_and_cluster_variants_decline_with_a_reason():
    m = fused_module("sum", [4096, 64], "float32", [0], prologue=["square"])
    text = explain(next(o for o in m.walk() if isinstance(o, ReduceOp)), "sm_90a")
    row = next(line for line in text.splitlines() if line.strip().startswith("grid_split_bulk") and " fused " in line)
    assert "FAIL" in row and "cp.reduce.async.bulk applies no elementwise map" in row
    m = fused_module("argmax", [1 << 16], "int32", None)
    text = explain(next(o for o in m.walk() if isinstance(o, ReduceOp)), "sm_90a")
    assert "grid_full_cluster  priority 61: rejected: dtype, fused" in text.replace("   ", "  ") or any(
        line.strip().startswith("grid_full_cluster") and " fused " in line and "red.async has no argmax" in line
        for line in text.splitlines()
    )


def test_float64_logsumexp_takes_the_fma_routines_in_the_math_row():
    """float64 has no ex2/lg2: the math row says the FMA exp/log routines are used
    (passes/f64_math.py; their accuracy is tests/test_f64_math.py's), and the form's
    variant is chosen as for float32."""
    m = fused_module("logsumexp", [4096], "float64", None)
    text = explain(next(o for o in m.walk() if isinstance(o, ReduceOp)), "sm_90a")
    assert "float64 math: logsumexp with FMA exp/log" in text
    assert variant_of("logsumexp", [4096], "float64", None) == variant_of("logsumexp", [4096], "float32", None) == "grid_full"


# endregion


def _absmax_kernels():
    """max(|x|) of a whole array and of rows, kernels ``whole`` and ``rows`` of one
    module (one assembly and one nvdisasm run for both)."""
    kernels = []
    for name, shape, axes in (("whole", [1 << 20], None), ("rows", [1024, 4096], [1])):
        with T.kernel(name) as k:
            x = k.param("x", shape, "float32")
            y = k.param("y", kept_shape(shape, axes), "float32")
            T.reduce("max", y, x, axes=axes, prologue=["abs"])
        kernels.append(k)
    return T.module(*kernels)


def test_sm100a_absmax_uses_redux_max_abs_in_sass():
    import re

    from bulkred_dialect.backend_ptx.assemble import assemble
    from bulkred_dialect.backend_ptx.printer import print_ptx
    from bulkred_dialect.backend_ptx.sass import disassemble

    ptx = print_ptx(lower_tile_module(_absmax_kernels(), "sm_100a"), "sm_100a")
    entries = re.split(r"(?m)^\.visible \.entry ", ptx)[1:]
    assert len(entries) == 2 and all("redux.sync.max.abs.NaN.f32" in e for e in entries)
    sass = disassemble(assemble(ptx, "sm_100a"))
    parts = re.split(r"(?m)^//-+ (\S+)\s+-+$", sass)  # a section per kernel: `//------ .text.<kernel> ------`
    texts = {name.removeprefix(".text."): body for name, body in zip(parts[1::2], parts[2::2]) if name.startswith(".text.")}
    assert sorted(texts) == ["rows", "whole"]
    for name, body in texts.items():
        assert "CREDUX.MAXABS.F32.NAN" in body, name
    assert "redux.sync" not in print_ptx(lower_tile_module(_absmax_kernels(), "sm_90a"), "sm_90a")


@pytest.mark.parametrize("shape, axes", FORMS, ids=FORM_IDS)
def test_exp_sub_prologue_reads_c_per_output(shape, axes):
    """sum with the prologue exp_sub: sum(exp(x - c)) with c per output read from aux
    (here each output's max: the softmax denominator)."""
    rng = np.random.default_rng(29)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    rows = moved(x, axes).astype(np.float64)
    c = rows.max(axis=1).astype(np.float32)
    kept = kept_shape(list(x.shape), axes)
    m = lower(fused_module("sum", list(x.shape), "float32", axes, aux=True, prologue=["exp_sub"]), x.shape, axes)
    args = [x, np.zeros(kept, np.float32), c.reshape(kept)]
    kernel = next(o for o in m.walk() if o.name == "func.func")
    if WORKSPACE_ATTR in kernel.attributes:
        args.append(np.zeros(kernel.attributes[WORKSPACE_ATTR].value.data, np.int8))
    got = run_grid(m, "k", *args)[1]
    want = np.exp(rows - c.astype(np.float64)[:, None]).sum(axis=1)
    np.testing.assert_allclose(got.reshape(-1), want, rtol=2e-6)


def test_exp_sub_needs_aux_and_a_plain_kind():
    from bulkred_dialect.errors import BulkredError
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises((VerifyException, BulkredError), match="'prologue' map 'exp_sub' needs 'aux'"):
        fused_module("sum", [64], "float32", None, prologue=["exp_sub"]).verify()
    with pytest.raises((VerifyException, BulkredError), match="exp_sub' is not valid with kind var"):
        fused_module("var", [64], "float32", None, aux=True, prologue=["exp_sub"]).verify()
    assert variant_of("sum", [64, 64], "float64", [1], aux=True, prologue=["exp_sub"]) == "grid_rows"  # f64 exp: FMA routine
