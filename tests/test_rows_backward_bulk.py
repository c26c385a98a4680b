"""rows_bulk_backward (the backward of long rows with each CTA's slices of x, or y, and of
dy copied into shared memory by ``cp.async.bulk``, the row sums pushed over the cluster,
the norms' column sums in registers over a persistent unit's rows) on the interpreter's
clusters against numpy in float64.

Small settings keep the interpreter fast: slices of 512 bytes in chunks of 128, CTAs of
one warp, one unit (cluster or CTA) for all the rows unless a test asks for more (the
rows loop runs 5 times: both buffers, both phases of each buffer's mbarrier and of the
exchange's)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import to_bits, values

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.ops.target import Target
from bulkred_dialect.passes.lower_tile_reductions import explanations
from bulkred_dialect.passes.variants import rows_backward, rows_bulk_backward, rows_common
from bulkred_dialect.row_kernels import module

VARIANT = "rows_bulk_backward"


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """Slices of 512 bytes in chunks of 128, CTAs of one warp, chosen for every N; one
    unit for all the rows; the kernels on the interpreter's clusters (a cluster of one
    CTA included: its mbarriers and bulk copies)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", 2)
    monkeypatch.setattr(rows_bulk_backward, "SLICE_BYTES", 512)
    monkeypatch.setattr(rows_bulk_backward, "CHUNK", 128)
    monkeypatch.setattr(rows_bulk_backward, "BLOCK", 32)
    monkeypatch.setattr(rows_bulk_backward, "MIN_BLOCK", 32)
    monkeypatch.setattr(rows_bulk_backward, "SLOTS", 4)
    monkeypatch.setattr(rows_bulk_backward, "CHOSEN", [(d, None, 1, 1 << 30) for d in ("float32", "bfloat16", "float16")])
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


def _config(kind: str, n: int, dtype: str, **kw) -> rows_bulk_backward.BulkPlan:
    built = module(kind, None, n, dtype, **kw)
    return rows_bulk_backward.bulk_for(next(o for o in built.walk() if o.name == "bulkred.normalize_rows"))


def norm_kernel(kind: str, n: int, dtype: str, affine: str | None, db: bool):
    """A norm's backward kernel of rows of n (the dispatch checked to choose VARIANT), lowered
    with the settings in force: one for all the batches a test runs on it (M is dynamic)."""
    return test_rows.lowered(module(kind, None, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                                    variant=VARIANT), VARIANT)


def run_norm(kind: str, xbits: np.ndarray, dybits: np.ndarray, wbits: np.ndarray | None, dtype: str,
             affine: str | None, db: bool, units: int | None = None, built=None) -> list[np.ndarray]:
    """(dx, dweight and / or dbias as stored) of a norm's backward of the rows ``xbits``
    (stored bits) with gradient ``dybits``, the statistics computed here in float64 and
    rounded to float32 (as the forward stores them), on ``built`` (else :func:`norm_kernel`'s);
    the workspace checked left zeroed."""
    m, n = xbits.shape
    layer = kind == "layer_norm_backward"
    x = values(xbits, dtype)
    mean = x.mean(1).astype(np.float32) if layer else None
    xc = x - mean.astype(np.float64)[:, None] if layer else x
    rstd = (1 / np.sqrt((xc * xc).mean(1) + 1e-5)).astype(np.float32)
    outs = (["dweight"] if affine else []) + (["dbias"] if db else [])
    args = [xbits, to_bits(np.full((m, n), 7.0), dtype), dybits] + ([wbits] if affine else [])
    args += ([mean] if layer else []) + [rstd] + [to_bits(np.full(n, 7.0), affine or dtype) for _ in outs]
    if built is None:
        built = norm_kernel(kind, n, dtype, affine, db)
    kernel = next(o for o in built.walk() if o.name == "func.func")
    if units is not None:  # the persistent grid's units at most (bulkred.grid_rows = [rows per unit, units])
        assert kernel.attributes["bulkred.grid_rows"].data[1].value.data == units
    if not outs:  # no column sums: no workspace
        assert "bulkred.workspace" not in kernel.attributes
        return [test_rows.interpret(built, *args)[1]]
    ws = np.full(kernel.attributes["bulkred.workspace"].value.data, 0, np.int8)
    got = test_rows.interpret(built, *args, ws)[:-1]
    assert not ws.any(), "the workspace is not left zeroed"
    return [got[1], *got[len(got) - len(outs):]]


# (kind, N, dtype, weight, dbias, CTAs per cluster, vectors per thread): float32 512 x 4
# bytes over slices of 512: 4 CTAs, one vector each; bfloat16 512 x 2: 2 CTAs, two 8-byte
# vectors per thread; float32 128: one CTA (no cluster exchange); float16 dbias alone
NORMS = [
    ("rms_norm_backward", 512, "float32", "float32", False, 4, 1),
    ("layer_norm_backward", 512, "bfloat16", "bfloat16", True, 2, 2),
    ("layer_norm_backward", 128, "float32", "float32", True, 1, 1),
    ("rms_norm_backward", 256, "bfloat16", None, False, 1, 2),  # no weight, no column sums
    ("layer_norm_backward", 512, "float16", None, True, 2, 2),  # dbias alone
]



def assert_the_defaults_column_sums(kind: str, x, dy, w, dtype: str, db: bool, units: int, default_k, built) -> None:
    """``built`` (a column tail of its own) against ``default_k`` on M = 1 and 7 rows (1: one
    unit of the grid's, the others' rows not added): the same bits of every output; and
    dweight / dbias of the 7 rows within float32's (or the 16-bit output's) rounding of
    float64 (no unit's rows missed)."""
    for m in (1, 7):
        want = run_norm(kind, x[:m], dy[:m], w, dtype, dtype, db, units, built=default_k)
        got = run_norm(kind, x[:m], dy[:m], w, dtype, dtype, db, units, built=built)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    _, dwr, dbr = norm_backward_reference(kind, x, dy, w, dtype, dtype)
    for buf, ref in zip(got[1:], (dwr, dbr)[:len(got) - 1], strict=True):
        tol = (1e-6 if dtype == "float32" else 8e-3) * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(values(buf, dtype), ref, rtol=0, atol=tol)

def norm_backward_reference(kind: str, xbits: np.ndarray, dybits: np.ndarray, wbits: np.ndarray | None, dtype: str,
                            affine: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dweight, dbias) of rms_norm's or layer_norm's backward in float64 from the
    values the kernel reads (the statistics rounded to float32 as the forward stores
    them); tests/test_rows_backward_fast.py's too."""
    layer = kind == "layer_norm_backward"
    x, dy = values(xbits, dtype), values(dybits, dtype)
    mean = x.mean(1).astype(np.float32).astype(np.float64) if layer else None
    xc = x - mean[:, None] if layer else x
    rstd = (1 / np.sqrt((xc * xc).mean(1) + 1e-5)).astype(np.float32).astype(np.float64)
    xh = xc * rstd[:, None]
    g = dy * (values(wbits, affine) if affine else 1.0)
    dx = rstd[:, None] * (g - (g.mean(1, keepdims=True) if layer else 0) - xh * (g * xh).mean(1, keepdims=True))
    return dx, (dy * xh).sum(0), dy.sum(0)


@pytest.mark.parametrize("kind,n,dtype,affine,db,c,per", NORMS, ids=[f"{k[0]}-{k[1]}-{k[2]}" for k in NORMS])
def test_norm_backward(kind: str, n: int, dtype: str, affine: str | None, db: bool, c: int, per: int) -> None:
    """dx = ``rstd * (g - mean(g) - xhat * mean(g * xhat))`` (rms_norm: no ``mean(g)``),
    dweight = sum of ``dy * xhat``, dbias = sum of ``dy`` over 5 rows of one unit, against
    float64 from the values the kernel read."""
    kw = {"weight": affine, "dweight": affine, "dbias": dtype if db else None}
    bp = _config(kind, n, dtype, **kw)
    assert (bp.cluster, bp.per, bp.slots) == (c, per, 4)
    m = 5
    rng = np.random.default_rng(n)
    xbits = to_bits(rng.standard_normal((m, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((m, n)), dtype)
    wbits = to_bits(rng.standard_normal(n), affine) if affine else None
    got = run_norm(kind, xbits, dybits, wbits, dtype, affine, db)
    want, dw, dbias = norm_backward_reference(kind, xbits, dybits, wbits, dtype, affine)
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype] * max(1.0, np.abs(want).max())
    np.testing.assert_allclose(values(got[0], dtype), want, rtol=0, atol=tol)
    sums = ([("dweight", dw, affine)] if affine else []) + ([("dbias", dbias, dtype)] if db else [])
    assert len(got) == 1 + len(sums)
    for (_, ref, kept), buf in zip(sums, got[1:], strict=True):
        rounding = {"float32": 4e-7, "float16": 1e-3, "bfloat16": 8e-3}[kept] * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(values(buf, kept), ref, rtol=0, atol=rounding + 1e-6 * np.abs(ref).max())


_FOUR: list[list[np.ndarray]] = []


@pytest.mark.parametrize("slots", [2, 3, 6])
def test_slots(slots: int, monkeypatch) -> None:
    """Rings of 2 slots (each row's copies after the previous row is read), 3 (the next
    row's x ahead: a slice's slot and phase move by 2 mod 3), 6 (two rows ahead) against
    the default 4: the same sums in the same order, the same bits; 7 rows, so that each
    slot's mbarrier goes through both phases."""
    rng = np.random.default_rng(3)
    xbits = to_bits(rng.standard_normal((7, 512)), "float32")
    dybits = to_bits(rng.standard_normal((7, 512)), "float32")
    wbits = to_bits(rng.standard_normal(512), "float32")
    assert rows_bulk_backward.SLOTS == 4
    if not _FOUR:  # the default's bits: computed once for the three rings
        _FOUR.append(run_norm("layer_norm_backward", xbits, dybits, wbits, "float32", "float32", True))
    four = _FOUR[0]
    monkeypatch.setattr(rows_bulk_backward, "SLOTS", slots)
    assert _config("layer_norm_backward", 512, "float32", weight="float32", dweight="float32", dbias="float32").slots == slots
    got = run_norm("layer_norm_backward", xbits, dybits, wbits, "float32", "float32", True)
    for a, b in zip(got, four, strict=True):
        np.testing.assert_array_equal(a, b)


LONG = [  # rows_bulk_backward.SETTINGS entries of issue 30's long rows (tools/probes/rows_backward.py --set long)
    {"stats_ahead": True},
    {"grad_registers": True, "slots": 2, "stats_ahead": True},  # dy in registers, a ring of 2
]


@pytest.mark.parametrize("setting", LONG, ids=["-".join(f"{k}={v}" for k, v in c.items()) for c in LONG])
def test_long_row_settings(setting: dict, monkeypatch) -> None:
    """STATS_AHEAD (the next row's rstd and mean loaded over this row), alone and with dy in
    registers and a ring of 2, from a SETTINGS entry of the cell, against the default ring
    of 4: the same values in the same order, the same bits of dx, dweight and dbias (a row
    that read another row's statistics would not); 7 rows of one cluster."""
    rng = np.random.default_rng(3)
    xbits = to_bits(rng.standard_normal((7, 512)), "float32")
    dybits = to_bits(rng.standard_normal((7, 512)), "float32")
    wbits = to_bits(rng.standard_normal(512), "float32")
    if not _FOUR:
        _FOUR.append(run_norm("layer_norm_backward", xbits, dybits, wbits, "float32", "float32", True))
    monkeypatch.setattr(rows_bulk_backward, "SETTINGS", [("float32", ("layer_norm_backward",), 512, 512, setting)])
    bp = _config("layer_norm_backward", 512, "float32", weight="float32", dweight="float32", dbias="float32")
    assert (bp.stats_ahead, bp.slots, bp.tensors) == (
        setting.get("stats_ahead", False), setting.get("slots", 4), 1 if setting.get("grad_registers") else 2)
    got = run_norm("layer_norm_backward", xbits, dybits, wbits, "float32", "float32", True)
    for a, b in zip(got, _FOUR[0], strict=True):
        np.testing.assert_array_equal(a, b)


def test_long_row_settings_independent_of_m(monkeypatch) -> None:
    """STATS_AHEAD with 2 units (rows u, u + 2, ...): a unit's statistics read ahead past
    its last row (clamped to row M - 1, unused) and its copies past M (none) change no bits: the first 3 of 7 rows (the last 4 with dy = 0) give the 3 rows' own dx,
    dweight and dbias bits; rms_norm's backward in bfloat16 (clusters of 2), no mean."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 64)
    monkeypatch.setattr(rows_bulk_backward, "CLUSTERS", {2: 2})
    monkeypatch.setattr(rows_bulk_backward, "STATS_AHEAD", True)
    n, dtype = 512, "bfloat16"
    x, dy, w, few = _three_rows_then_seven("rms_norm_backward", n, dtype, 2, seed=12)
    want, dw, _ = norm_backward_reference("rms_norm_backward", x[:3], dy[:3], w, dtype, dtype)
    np.testing.assert_allclose(values(few[0], dtype), want, rtol=0, atol=1.6e-2 * max(1.0, np.abs(want).max()))
    np.testing.assert_allclose(values(few[1], dtype), dw, rtol=0, atol=8e-3 * max(1.0, np.abs(dw).max()))


@pytest.mark.parametrize("kind,dtype", [("layer_norm_backward", "bfloat16"), ("rms_norm_backward", "float32")])
def test_weight_from_global(kind: str, dtype: str, monkeypatch) -> None:
    """The weight read from global memory in each pass (WEIGHT_SHARED off) against its
    slice copied into shared memory once: the same values, the same bits."""
    rng = np.random.default_rng(5)
    xbits = to_bits(rng.standard_normal((5, 512)), dtype)
    dybits = to_bits(rng.standard_normal((5, 512)), dtype)
    wbits = to_bits(rng.standard_normal(512), dtype)
    db = kind == "layer_norm_backward"
    kw = {"weight": dtype, "dweight": dtype, "dbias": dtype if db else None}
    assert _config(kind, 512, dtype, **kw).weight_bytes > 0
    shared = run_norm(kind, xbits, dybits, wbits, dtype, dtype, db)
    monkeypatch.setattr(rows_bulk_backward, "WEIGHT_SHARED", False)
    assert _config(kind, 512, dtype, **kw).weight_bytes == 0
    got = run_norm(kind, xbits, dybits, wbits, dtype, dtype, db)
    for a, b in zip(got, shared, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("units", [1, 2])
def test_bits_independent_of_m(units: int, monkeypatch) -> None:
    """Each row's dx bits do not depend on M; dweight's and dbias's bits depend only on
    which rows each unit takes: 3 rows, then the same 3 rows followed by 4 whose dy is 0
    (each adds +0 to every column sum, in the same unit order: ``units`` units, rows u,
    u + U, ...), give the same bits."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 64)
    monkeypatch.setattr(rows_bulk_backward, "CLUSTERS", {2: units})  # (bfloat16 512: clusters of 2)
    _three_rows_then_seven("layer_norm_backward", 512, "bfloat16", units, seed=11)


def _three_rows_then_seven(kind: str, n: int, dtype: str, units: int, seed: int):
    """3 rows, then the same 3 followed by 4 whose dy is 0, through one kernel with
    ``units`` units: dx of the 3 rows, dweight (and layer_norm's dbias) bit for bit the
    same in both batches. Returns x, dy, w and the 3 rows' results."""
    rng = np.random.default_rng(seed)
    x = to_bits(rng.standard_normal((7, n)) * 2 + 0.5, dtype)
    dy = to_bits(rng.standard_normal((7, n)), dtype)
    dy[3:] = 0
    w = to_bits(rng.standard_normal(n), dtype)
    db = kind == "layer_norm_backward"
    built = norm_kernel(kind, n, dtype, dtype, db)
    few = run_norm(kind, x[:3], dy[:3], w, dtype, dtype, db, units, built=built)
    many = run_norm(kind, x, dy, w, dtype, dtype, db, units, built=built)
    np.testing.assert_array_equal(many[0][:3], few[0])
    for a, b in zip(many[1:], few[1:], strict=True):
        np.testing.assert_array_equal(a, b)
    return x, dy, w, few


@pytest.mark.parametrize("kind", ["softmax_backward", "log_softmax_backward"])
@pytest.mark.parametrize("n,dtype", [(512, "float32"), (128, "float32"), (512, "float16")])
def test_softmax_backward(kind: str, n: int, dtype: str) -> None:
    """softmax's ``y * (dy - sum(dy * y))`` and log_softmax's ``dy - exp(y) * sum(dy)``
    from y and dy in shared memory, 5 rows of one unit, against float64."""
    m = 5
    rng = np.random.default_rng(n + len(kind))
    x = rng.standard_normal((m, n)) * 2
    e = np.exp(x - x.max(1, keepdims=True))
    fwd = (e / e.sum(1, keepdims=True) if kind == "softmax_backward" else np.log(e / e.sum(1, keepdims=True))).astype(dtype)
    dy = rng.standard_normal((m, n)).astype(dtype)
    built = module(kind, m, n, dtype, variant=VARIANT)
    _, dx, _ = test_rows.interpret(test_rows.lowered(built, VARIANT), fwd, np.full_like(fwd, 7.0), dy)
    f, g = fwd.astype(np.float64), dy.astype(np.float64)
    want = f * (g - (g * f).sum(1, keepdims=True)) if kind == "softmax_backward" else g - np.exp(f) * g.sum(1, keepdims=True)
    tol = {"float32": 4e-6, "float16": 2e-3}[dtype]
    np.testing.assert_allclose(dx.astype(np.float64), want, rtol=0, atol=tol * max(1.0, np.abs(want).max()))


def test_where_measured_and_its_explain_rows(monkeypatch) -> None:
    """With the real settings (CHOSEN as the H200 measured it: float32 65536 to 262144,
    bfloat16 131073 to 262144, the norms', softmax's and log_softmax's backward; a few
    cells at 4096 and 16384) the dispatch takes rows_bulk_backward there and passes it by
    elsewhere (its "measured" row fails: bfloat16 65536); a row of odd bytes per CTA fails its "slices" row."""
    monkeypatch.undo()
    target = Target.parse("sm_90a")

    def table(kind: str, n: int, dtype: str = "bfloat16") -> list[str]:
        kw = {} if kind.startswith(("softmax", "log_softmax")) else {"weight": dtype, "dweight": dtype}
        if kind == "layer_norm_backward":
            kw["dbias"] = dtype
        (t,) = explanations(module(kind, None, n, dtype, **kw), target)
        return t.splitlines()

    for kind in ("rms_norm_backward", "layer_norm_backward", "softmax_backward"):
        for n, dtype in ((262144, "bfloat16"), (65536, "float32"), (262144, "float32")):
            assert f"chosen: {VARIANT}" in table(kind, n, dtype), (kind, n, dtype)
        rows = table(kind, 65536)
        assert any(r.strip().startswith(VARIANT) and "measured" in r and "FAIL" in r for r in rows), rows
        assert f"chosen: {VARIANT}" not in rows
    assert f"chosen: {VARIANT}" in table("log_softmax_backward", 262144)  # (measured 2026-11-29)
    assert f"chosen: {VARIANT}" not in table("log_softmax_backward", 65536)
    assert f"chosen: {VARIANT}" in table("rms_norm_backward", 16384)  # (measured there only)
    assert f"chosen: {VARIANT}" not in table("layer_norm_backward", 16384)
    assert f"chosen: {VARIANT}" not in table("rms_norm_backward", 16383)
    assert rows_bulk_backward.CLUSTERS == {4: 32, 8: 15, 16: 7}
    monkeypatch.setattr(rows_bulk_backward, "CHOSEN", [])
    assert f"chosen: {VARIANT}" not in table("layer_norm_backward", 262144)
    monkeypatch.setattr(rows_bulk_backward, "CHOSEN", [("bfloat16", None, 65536, 262144)])
    assert "chosen: rows_bulk_backward" in table("layer_norm_backward", 262144)
    # bfloat16 262144: 16 CTAs of 512 threads, 8 vectors of 4 each (64 column sums), 4 slots of 32 KiB,
    # the weight's slice (32 KiB) beside them; SETTINGS' measured lean dx, shared memory read as words, the
    # column tail spread over the waiting CTAs
    assert _config("layer_norm_backward", 262144, "bfloat16", weight="bfloat16", dweight="bfloat16",
                   dbias="bfloat16") == rows_bulk_backward.BulkPlan(16, 512, 8, 32768, 4, 32768, lean_dx=True,
                                                                    words=True, tail_loads=8, tail_spread=64)
    # float32 262144: 16 CTAs of 64 KiB slices; SETTINGS' measured half slices: 5 slots of 32 KiB and the
    # weight's slice (64 KiB) in 225 KiB, 2 KiB spare (by default 3 whole slots and the weight from global memory)
    assert _config("layer_norm_backward", 262144, "float32", weight="float32", dweight="float32",
                   dbias="float32") == rows_bulk_backward.BulkPlan(16, 512, 8, 65536, 5, 65536, stats_ahead=True,
                                                                   lean_dx=True, halves=True, spare=2048,
                                                                   tail_loads=8, tail_spread=64)
    rows = table("softmax_backward", 65540)
    assert any(r.strip().startswith(VARIANT) and "slices" in r and "FAIL" in r for r in rows), rows


def test_padded_rows() -> None:
    """softmax_backward of y rows at a stride of 520 floats (2080 bytes: whole 16-byte
    chunks) and dx at 516: each CTA copies its slice from the padded row (the padding NaN:
    a read of it shows) and writes dx in place, the padding of dx left as it was."""
    m, n = 5, 512
    rng = np.random.default_rng(2)
    x = rng.standard_normal((m, n))
    e = np.exp(x - x.max(1, keepdims=True))
    y = (e / e.sum(1, keepdims=True)).astype(np.float32)
    ybuf = np.pad(y, ((0, 0), (0, 8)), constant_values=np.nan)
    dxbuf = np.full((m, 516), 7.0, np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    built = module("softmax_backward", m, n, "float32", x_stride=520, y_stride=516, variant=VARIANT)
    test_rows.interpret(test_rows.lowered(built, VARIANT), ybuf[:, :n], dxbuf[:, :n], dy)
    f, g = y.astype(np.float64), dy.astype(np.float64)
    want = f * (g - (g * f).sum(1, keepdims=True))
    np.testing.assert_allclose(dxbuf[:, :n].astype(np.float64), want, rtol=0, atol=4e-6 * max(1.0, np.abs(want).max()))
    assert (dxbuf[:, n:] == 7.0).all()
