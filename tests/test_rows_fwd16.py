"""The bfloat16 forward at N = 4096 and 16384 toward Quack's structure (issue 30, section 4:
softmax, rms_norm and layer_norm at 0.91 to 0.93 of copy where Quack reaches 0.96), the
candidates of ``tools/probes/rows_forward.py --set quack16``, all off by default, on the
interpreter: rows_cta's grid of a CTA a row (``rows_cta.CTAS_PER_SM`` past any M: M CTAs,
each one row, then done) with and without the pipelined loads
(``rows_common.FORWARD_PIPELINE``, per ``(kind, type)`` and N in ``FORWARD_MEASURED``),
fewer threads a row each holding more values (``rows_cta.MIN_BLOCK`` / ``VALUES``) under a
``.minnctapersm`` (``rows_cta.MIN_CTAS``), and rows_bulk's CTA a row with the row in shared
memory (its thread's share in registers, or passes over shared memory; words, fast exp).
Each against float64 (from the values the kernel read) for M = 1 and M = 3 of ONE kernel (a
dynamic M), the same row's bits at either M and position (batch invariance); the tables
hold no entry for the measured cells (the dispatch's kernels unchanged), and an entry takes
only its cell.

test_rows.py's small CTAs (``MIN_BLOCK`` 64): N = 256 bfloat16 (64 vectors of 4) is one
vector a thread of a CTA of 64 (the shared-memory step runs); the fewer threads are one
warp of two vectors each (the probe's 64 threads of 16 vectors at 4096); Quack's 128 values a
thread (the probe's 16384) are a warp's rows of 4096."""

from __future__ import annotations

import numpy as np
import pytest
from test_rows import check, lowered, small_ctas, to_bits, values  # noqa: F401 (small_ctas: autouse)

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.interpreter.launch_dims import dynamic_launch
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.tile import NormalizeRowsOp
from bulkred_dialect.passes.dispatch import choose
from bulkred_dialect.passes.variants import rows_bulk, rows_common, rows_cta
from bulkred_dialect.passes.variants.rows_common import BF16, F16
from bulkred_dialect.row_kernels import module

N = 256
KINDS = ("softmax", "rms_norm", "layer_norm")
GRID_M = 1 << 20  # (the probe's CTAS_PER_SM: a CTA a row for any M)


def build(kind: str, variant: str, n: int = N):
    """``kind``'s bfloat16 kernel of rows of ``n`` (M dynamic; a norm's bfloat16 weight, and
    layer_norm's bias), lowered with the settings in force."""
    norm = kind != "softmax"
    return lowered(module(kind, None, n, "bfloat16", weight="bfloat16" if norm else None,
                          bias="bfloat16" if kind == "layer_norm" else None, eps=1e-5 if norm else None,
                          variant=variant))


def run_rows(built, kind: str, x: np.ndarray, w: np.ndarray, b: np.ndarray, clusters: bool) -> tuple[np.ndarray, int]:
    """y of the rows ``x`` (bfloat16 bits) and the launch's CTAs (``bulkred.grid_rows``)."""
    m, n = x.shape
    args = [x, to_bits(np.full((m, n), 7.0), "bfloat16")]
    args += [w] if kind == "rms_norm" else [w, b] if kind == "layer_norm" else []
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ctas = dynamic_launch(kernel, args)[1]
    out = (run_cluster_grid if clusters else run_grid)(built, "rows", *args)
    return values(out[1], "bfloat16").reshape(m, n), ctas


def set_candidate(monkeypatch, name: str, kind: str) -> str:
    """The probe's candidate ``name`` in force (small); returns the variant it lowers with."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    if name.startswith("grid"):
        monkeypatch.setattr(rows_cta, "CTAS_PER_SM", GRID_M)
        monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", name == "grid, pipelined")
        if name == "grid, unpipelined, one barrier":
            monkeypatch.setattr(rows_common, "CTA_ONE_BARRIER", True)
        if name == "grid, unpipelined, 16-byte vectors":  # (through the table: its cell's kind)
            monkeypatch.setattr(rows_common, "WIDE_BF16_MEASURED", {(kind, BF16.name): ((N, N),)})
        if name == "grid, fewer threads, min ctas":
            monkeypatch.setattr(rows_cta, "MIN_BLOCK", 32)
            monkeypatch.setattr(rows_cta, "VALUES", 8)
            monkeypatch.setattr(rows_cta, "MIN_CTAS", 8)
        return "rows_cta"
    soft = kind == "softmax"
    if name == "bulk, registers":
        st = rows_bulk.Setting(2 * N, 32, None, False, 1, registers=True, fast_exp=soft, words=True)
    else:
        st = rows_bulk.Setting(2 * N, 32, 10, False, 1, fast_exp=soft, fold_sum=soft, words=True,
                               one_pass="local" if kind == "layer_norm" else None)
    monkeypatch.setattr(rows_bulk, "CHUNK", 128)
    monkeypatch.setattr(rows_bulk, "MIN_BLOCK", 32)
    monkeypatch.setattr(rows_bulk, "CHOSEN", [("bfloat16", (kind,), N, N, st)])
    return "rows_bulk"


CANDIDATES = ("grid, unpipelined", "grid, unpipelined, one barrier", "grid, unpipelined, 16-byte vectors",
              "grid, pipelined", "grid, fewer threads, min ctas", "bulk, registers", "bulk, passes")


@pytest.mark.parametrize("name", CANDIDATES)
@pytest.mark.parametrize("kind", KINDS)
def test_candidate_against_float64_and_batch_invariant(kind: str, name: str, monkeypatch) -> None:
    """3 rows of several magnitudes against float64; the middle row alone (M = 1) gives its
    bits at M = 3; the grid of a CTA a row (rows_cta's candidates, rows_bulk's unit a row)
    has M CTAs."""
    variant = set_candidate(monkeypatch, name, kind)
    rng = np.random.default_rng(KINDS.index(kind) * 8 + CANDIDATES.index(name))
    xs = rng.standard_normal((3, N)) * np.array([[0.5], [4.0], [9.0]]) + np.array([[0.0], [1.5], [-3.0]])
    x = to_bits(xs, "bfloat16")
    w, b = to_bits(rng.standard_normal(N), "bfloat16"), to_bits(rng.standard_normal(N), "bfloat16")
    built = build(kind, variant)
    kernel = next(o for o in built.walk() if o.name == "func.func")
    if name == "grid, fewer threads, min ctas":
        assert kernel_block(built) == 32 and "bulkred.min_ctas_per_sm" in str(kernel.attributes)
    elif variant == "rows_cta":
        assert kernel_block(built) == 64
    clusters = variant == "rows_bulk"
    y, ctas = run_rows(built, kind, x, w, b, clusters)
    assert ctas == 3, "a CTA a row"
    wv = values(w, "bfloat16") if kind != "softmax" else None
    bv = values(b, "bfloat16") if kind == "layer_norm" else None
    check(kind, y, {}, values(x, "bfloat16"), wv, bv, "bfloat16")
    alone, ctas = run_rows(built, kind, x[1:2], w, b, clusters)
    assert ctas == 1
    assert to_bits(alone, "bfloat16").tobytes() == to_bits(y[1:2], "bfloat16").tobytes(), "a row's bits depend on M"


@pytest.mark.parametrize("kind", KINDS)
def test_quacks_values_a_thread(kind: str, monkeypatch) -> None:
    """Quack's 16384 (128 threads of 128 values, 3 CTAs a multiprocessor) in small: a warp
    of 128 values a thread (rows_cta.VALUES 128) of rows of 4096, a CTA a row unpipelined
    under .minnctapersm 3, against float64 and batch-invariant."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    monkeypatch.setattr(rows_cta, "CTAS_PER_SM", GRID_M)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK", 32)
    monkeypatch.setattr(rows_cta, "VALUES", 128)
    monkeypatch.setattr(rows_cta, "MIN_CTAS", 3)
    n = 4096
    rng = np.random.default_rng(KINDS.index(kind) + 40)
    x = to_bits(rng.standard_normal((2, n)) * np.array([[2.0], [7.0]]) + 1.0, "bfloat16")
    w, b = to_bits(rng.standard_normal(n), "bfloat16"), to_bits(rng.standard_normal(n), "bfloat16")
    built = build(kind, "rows_cta", n)
    assert kernel_block(built) == 32
    y, ctas = run_rows(built, kind, x, w, b, False)
    assert ctas == 2
    check(kind, y, {}, values(x, "bfloat16"), values(w, "bfloat16") if kind != "softmax" else None,
          values(b, "bfloat16") if kind == "layer_norm" else None, "bfloat16")
    alone, _ = run_rows(built, kind, x[1:], w, b, False)
    assert to_bits(alone, "bfloat16").tobytes() == to_bits(y[1:], "bfloat16").tobytes(), "a row's bits depend on M"


def kernel_block(built) -> int:
    from bulkred_dialect.ops.tile import kernel_launch

    return kernel_launch(next(o for o in built.walk() if o.name == "func.func")).block_dims[0]


def test_the_grid_of_a_cta_a_row_without_pipelining_is_a_kernel_of_its_own(monkeypatch) -> None:
    """The grid of a CTA a row pipelined loads the row ahead (another kernel than
    unpipelined, whose loop carries no loads); both give the dispatch's grid's bits (the rows'
    arithmetic does not depend on the grid)."""
    rng = np.random.default_rng(5)
    x = to_bits(rng.standard_normal((3, N)) * 3, "bfloat16")
    w = to_bits(rng.standard_normal(N), "bfloat16")
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    default, ctas = run_rows(build("rms_norm", "rows_cta"), "rms_norm", x, w, w, False)
    assert ctas == 1  # (test_rows.small_ctas: one CTA loops over the rows)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 1)
    monkeypatch.setattr(rows_cta, "CTAS_PER_SM", GRID_M)
    piped = build("rms_norm", "rows_cta")
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    unpiped = build("rms_norm", "rows_cta")
    assert str(piped) != str(unpiped)
    for built in (piped, unpiped):
        y, ctas = run_rows(built, "rms_norm", x, w, w, False)
        assert ctas == 3
        assert y.tobytes() == default.tobytes()


def _op(kind: str, n: int, dtype: str) -> NormalizeRowsOp:
    norm = kind != "softmax"
    m = module(kind, None, n, dtype, weight=dtype if norm else None, bias=dtype if kind == "layer_norm" else None,
               eps=1e-5 if norm else None)
    return next(o for o in m.walk() if isinstance(o, NormalizeRowsOp))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_measured_cells(dtype: str, monkeypatch) -> None:
    """The cells the eighth session's probe measured on an H200 (--set quack16; float16 as
    bfloat16) take its verdicts: layer_norm 4096 on rows_bulk, a CTA a row (rows_bulk.CHOSEN);
    softmax and rms_norm 4096 and the three kinds at 16384 on rows_cta, a CTA a row
    in a grid of M (CTAS_PER_SM_MEASURED), unpipelined, layer_norm 16384 at Quack's 128
    threads with .minnctapersm 3; their neighbours (8192, 4000) keep the dispatch's kernel
    (rows_cta pipelined, no grid entry)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 132)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK", 128)  # (test_rows.small_ctas' 64 undone: the real CTAs)
    from bulkred_dialect.ops.target import Target

    target = Target.parse("sm_90a")

    def pipelined(kind: str, n: int) -> bool:
        ranges = rows_common.FORWARD_MEASURED.get((kind, dtype), ()) + rows_common.FORWARD_MEASURED[dtype]
        return next(p for lo, hi, p in ranges if lo <= n <= hi)

    op = _op("layer_norm", 4096, dtype)
    assert choose(op, target).name == "rows_bulk"
    setting = rows_bulk.setting_for(op)
    assert setting is not None and not setting.persistent and setting.slice_bytes == 8192 and setting.block == 128
    cells = {("rms_norm", 4096): (128, None), ("softmax", 4096): (128, None), ("softmax", 16384): (512, None),
             ("rms_norm", 16384): (512, None), ("layer_norm", 16384): (128, 3)}
    for (kind, n), (block, min_ctas) in cells.items():
        op = _op(kind, n, dtype)
        assert choose(op, target).name == "rows_cta", (kind, n)
        assert rows_bulk.setting_for(op) is None
        assert rows_common.cell_setting(None, rows_cta.CTAS_PER_SM_MEASURED, op) == GRID_M
        assert rows_cta.min_ctas_for(op) == min_ctas, (kind, n)
        assert rows_cta.block_for(op) == block, (kind, n)
        assert not pipelined(kind, n)
    for kind, n in (("softmax", 8192), ("rms_norm", 8192), ("layer_norm", 4000)):
        op = _op(kind, n, dtype)
        assert choose(op, target).name == "rows_cta", (kind, n)
        assert rows_common.cell_setting(None, rows_cta.CTAS_PER_SM_MEASURED, op) is None
        assert pipelined(kind, n)


def _float16s(key) -> bool:
    """Whether a settings table's key is float16's (its twin of bfloat16's, half_as_bfloat16)."""
    return key == F16.name or (isinstance(key, tuple) and F16.name in key)


def test_forward_measured_by_kind_takes_only_its_cell(monkeypatch) -> None:
    """A ``(kind, type)`` entry of FORWARD_MEASURED comes before the type's (softmax bfloat16
    4096 unpipelined), and only for its kind, type and N; float16 follows bfloat16's."""
    from bulkred_dialect.ops.tile.rows import NormKind
    from bulkred_dialect.passes.variants.rows_common import RowPlan, forward_pipelined

    def plan(kind: NormKind, n: int, dtype=BF16) -> RowPlan:
        return RowPlan(kind=kind, dtype=dtype, m=None, n=n, sx=n, sy=n, vec=4, group=128, block=128,
                       items=n // 512, unroll=1, ctas=1)

    cells = [(NormKind.SOFTMAX, 4096, BF16), (NormKind.SOFTMAX, 8192, BF16), (NormKind.RMS_NORM, 4096, BF16),
             (NormKind.SOFTMAX, 4096, F16)]
    assert [forward_pipelined(plan(*c)) for c in cells] == [False, True, False, False]  # (4096: measured)
    table = {k: v for k, v in rows_common.FORWARD_MEASURED.items() if not _float16s(k)}
    table[("softmax", BF16.name)] = ((1, 100000, True),)  # (softmax's own entry back to pipelined)
    monkeypatch.setattr(rows_common, "FORWARD_MEASURED", rows_common.half_as_bfloat16(table))
    assert [forward_pipelined(plan(*c)) for c in cells] == [True, True, False, True]
    table = {k: v for k, v in rows_common.FORWARD_MEASURED.items() if not _float16s(k)}  # (float16's twins remade)
    table[("softmax", BF16.name)] = ((4096, 4096, False),)
    monkeypatch.setattr(rows_common, "FORWARD_MEASURED", rows_common.half_as_bfloat16(table))
    assert [forward_pipelined(plan(*c)) for c in cells] == [False, True, False, False]


def test_the_grid_table_takes_only_its_cell(monkeypatch) -> None:
    """rows_cta.CTAS_PER_SM_MEASURED's entry of a cell (the probe's flip: a CTA a row) sets
    that cell's grid only: softmax bfloat16 4096's units past any M, its neighbours' and
    rms_norm's the default's 2048 threads' worth a multiprocessor (16 CTAs of 128)."""
    from bulkred_dialect.ops.kernel_attrs import GRID_ROWS_ATTR

    monkeypatch.setattr(rows_common, "sm_count", lambda target: 132)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK", 128)
    measured = {k: v for k, v in rows_cta.CTAS_PER_SM_MEASURED.items() if not _float16s(k)}  # (float16's twins remade)
    monkeypatch.setattr(rows_cta, "CTAS_PER_SM_MEASURED", rows_common.half_as_bfloat16(
        {**measured, ("softmax", BF16.name): ((4096, 4096, GRID_M),)}))

    def units(kind: str, n: int, dtype: str = "bfloat16") -> int:
        norm = kind != "softmax"
        m = lowered(module(kind, None, n, dtype, weight=dtype if norm else None, eps=1e-5 if norm else None,
                           variant="rows_cta"))
        kernel = next(o for o in m.walk() if o.name == "func.func")
        return kernel.attributes[GRID_ROWS_ATTR].data[1].value.data

    assert units("softmax", 4096) == units("softmax", 4096, "float16") == 132 * GRID_M
    assert units("softmax", 4000) == units("layer_norm", 4096) == 132 * 16


def test_the_wide_table_takes_only_its_cell(monkeypatch) -> None:
    """rows_common.WIDE_BF16_MEASURED's entry (the probe's 16-byte vectors) makes its cell's
    bfloat16 rows 8 elements a vector: not another N, kind or type (float16 has no 16-byte
    form)."""
    assert rows_common.WIDE_BF16_MEASURED == {("rms_norm", BF16.name): ((4096, 4096), (16384, 16384))}  # (measured)
    cells = [("softmax", 4096, "bfloat16"), ("softmax", 4104, "bfloat16"), ("rms_norm", 4096, "bfloat16"),
             ("softmax", 4096, "float16"), ("softmax", 4100, "bfloat16"), ("rms_norm", 4096, "float16")]
    before = [rows_common.vector_of(_op(*c)) for c in cells]
    assert before[:4] + before[5:] == [4, 4, 8, 4, 4]
    monkeypatch.setattr(rows_common, "WIDE_BF16_MEASURED", {("softmax", BF16.name): ((4096, 4104),)})
    assert [rows_common.vector_of(_op(*c)) for c in cells] == [8, 8, 4, 4, before[4], 4]  # (4100: not of 8, as before)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_the_1024_cells(dtype: str, monkeypatch) -> None:
    """The eighth session's --set quack32 cells at N = 1024: bfloat16 (float16 as bfloat16)
    on rows_warp in a grid of M / 8 (softmax, rms_norm) or M / 4 with 128-thread CTAs
    (log_softmax, layer_norm), add_rms_norm on rows_bulk a CTA a row, cross_entropy the dispatch's
    (its in-kernel mean's tail: a partial a CTA); float32's
    softmax, log_softmax, rms_norm, add_rms_norm and layer_norm on rows_cta a CTA a row
    (rows_warp's ``measured`` predicate fails there, rows_warp.YIELD_MEASURED); float32
    cross_entropy, and N = 512 / 2048, keep the dispatch's (rows_warp's persistent grid of 256-thread CTAs)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 132)
    monkeypatch.setattr(rows_cta, "MIN_BLOCK", 128)
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.variants import rows_warp

    target = Target.parse("sm_90a")
    half = dtype != "float32"
    for kind in ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy"):
        m = module(kind, None, 1024, dtype, **({"weight": dtype, "eps": 1e-5} if "norm" in kind else {}))
        op = next(o for o in m.walk() if isinstance(o, NormalizeRowsOp))
        name = choose(op, target).name
        if half:
            want = "rows_bulk" if kind == "add_rms_norm" else "rows_warp"
            assert name == want, (kind, name)
            if name == "rows_warp":
                grid = rows_common.cell_setting(None, rows_warp.CTAS_PER_SM_MEASURED, op)
                assert grid == (None if kind == "cross_entropy" else GRID_M), kind
                narrow = rows_warp.BLOCK  # (test_rows.small_ctas' narrowed CTA: the default's, 256 outside the tests)
                assert rows_warp.block_of(op) == (128 if kind in ("log_softmax", "layer_norm") else narrow)
        else:
            assert name == ("rows_warp" if kind == "cross_entropy" else "rows_cta"), (kind, name)
            if name == "rows_cta":
                assert rows_common.cell_setting(None, rows_cta.CTAS_PER_SM_MEASURED, op) == GRID_M
                assert rows_cta.block_for(op) == (64 if kind == "layer_norm" else 128)
        for n in (512, 2048):
            other = module(kind, None, n, dtype, **({"weight": dtype, "eps": 1e-5} if "norm" in kind else {}))
            op = next(o for o in other.walk() if isinstance(o, NormalizeRowsOp))
            if n == 512:
                assert choose(op, target).name == "rows_warp"
                assert rows_common.cell_setting(None, rows_warp.CTAS_PER_SM_MEASURED, op) is None
                assert rows_warp.block_of(op) == rows_warp.BLOCK


def test_rows_warp_says_why_it_leaves_a_cell(tmp_path, capsys) -> None:
    """The explain rows of a cell rows_warp leaves (float32 softmax 1024): its ``measured``
    predicate FAIL with the cell, then rows_cta chosen (bulkred-opt in this process)."""
    from bulkred_dialect import cli

    f = tmp_path / "softmax_1024.mlir"
    f.write_text("func.func @f(%x: memref<8x1024xf32, #bulkred.scope<global>>, %y: memref<8x1024xf32, "
                 "#bulkred.scope<global>>) {\n  bulkred.normalize_rows softmax %x, %y : memref<8x1024xf32, "
                 "#bulkred.scope<global>>, memref<8x1024xf32, #bulkred.scope<global>>\n  func.return\n}\n")
    assert cli.main([str(f), "-p", "lower-tile-reductions{target=sm_90a explain=true}"]) in (0, None)
    out = capsys.readouterr().out
    warp = next(line for line in out.splitlines() if "rows_warp" in line and "measured" in line)
    assert "FAIL" in warp and "softmax, float32, N = 1024" in warp, warp
    assert "// chosen: rows_cta" in out


def test_a_forced_rows_warp_still_takes_a_cell_it_leaves() -> None:
    """rows_warp's ``measured`` predicate is a preference (Predicate.preference): the dispatch
    leaves float32 softmax 1024 to rows_cta, but ``variant="rows_warp"`` lowers it with
    rows_warp (its kernel: 256-thread CTAs, a warp a row), while a forced variant whose
    condition fails (rows_warp past its 1024) is still refused with that condition named."""
    from bulkred_dialect.diagnostics import LocatedError
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import select

    target = Target.parse("sm_90a")
    op = next(o for o in module("softmax", None, 1024, "float32").walk() if isinstance(o, NormalizeRowsOp))
    assert choose(op, target).name == "rows_cta"
    forced = next(o for o in module("softmax", None, 1024, "float32", variant="rows_warp").walk()
                  if isinstance(o, NormalizeRowsOp))
    assert choose(forced, target).name == "rows_warp"
    sel = select(forced, target)
    assert sel.chosen is not None and sel.chosen.variant.name == "rows_warp" and not sel.chosen.applies
    assert "chosen (forced by 'variant')" in sel.table()
    assert kernel_block(lowered(module("softmax", None, 1024, "float32", variant="rows_warp"))) == rows_warp_block()
    too_long = next(o for o in module("softmax", None, 2048, "float32", variant="rows_warp").walk()
                    if isinstance(o, NormalizeRowsOp))
    with pytest.raises(LocatedError, match="row_length") as e:
        choose(too_long, target)
    assert "measured" not in str(e.value).split("\n")[0]


def rows_warp_block() -> int:
    from bulkred_dialect.passes.variants import rows_warp

    return rows_warp.BLOCK
