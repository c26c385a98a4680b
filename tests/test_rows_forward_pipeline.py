"""rows_common.FORWARD_PIPELINE (by default where rows_common.FORWARD_MEASURED says): a
forward kind on rows_warp and rows_cta loads its group's next row (x, add_rms_norm's
residual, cross_entropy's target) before the current row's reduction and carries it
over the loop step. On the CPU interpreter, with the CTAs narrowed as in test_rows (one
CTA; rows_warp: two warps, rows 0, 2, 4 and 1, 3): each kind against float64, and every
output bit for bit the unpipelined kernel's, the kernel of any M and of M = 5."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

import bulkred_dialect.passes.variants.rows_lower as rows_lower
from bulkred_dialect.passes.variants import rows_common, rows_cta, rows_warp
from bulkred_dialect.row_kernels import module

N = {"rows_warp": 256, "rows_cta": 512}  # every thread holds whole vectors: 32 lanes x 2, 64 threads x 2 (of 4)
KINDS = ("softmax", "log_softmax", "rms_norm", "layer_norm", "add_rms_norm", "cross_entropy")
CASES = [(kind, variant, dtype) for i, kind in enumerate(KINDS) for variant in N
         for dtype in [("float32", "bfloat16")[(i + (variant == "rows_cta")) % 2]]]  # each kind, variant: one dtype, both in turn


@pytest.fixture
def taken(monkeypatch):
    """FORWARD_PIPELINE on, and the plans it was asked about recorded (each must pipeline)."""
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    seen = []
    real = rows_common.forward_pipelined
    monkeypatch.setattr(rows_lower, "forward_pipelined", lambda p: seen.append(real(p)) or seen[-1])
    return seen


@pytest.mark.parametrize("kind,variant,dtype", CASES)
def test_pipelined_forward_against_float64(kind: str, variant: str, dtype: str, taken) -> None:
    """5 rows (cross_entropy: 4, the targets 3, N - 1, ignored and outside [0, N)), y and
    the statistics against float64 (test_rows.check's tolerances)."""
    n = N[variant]
    if kind == "cross_entropy":
        test_rows.run_cross_entropy(n, 0.1 if variant == "rows_cta" else 0.0, variant=variant)
    else:
        x = np.random.default_rng(n).standard_normal((5, n)) * 3 + 1.5
        affine = dtype if kind != "softmax" and kind != "log_softmax" else None
        y, stats, xv, w, b = test_rows.run(kind, x, dtype, variant=variant, affine=affine)
        test_rows.check(kind, y, stats, xv, w, b, dtype)
    assert taken == [True]


def _outputs(kind: str, variant: str, dtype: str, m: int, static: bool) -> list[np.ndarray]:
    """The kernel's outputs on fixed random rows (``static``: built for these M rows, else for any M)."""
    rng = np.random.default_rng(11)
    n = N[variant]
    x = test_rows.to_bits(rng.standard_normal((m, n)) * 3 + 0.5, dtype)
    kw: dict = {}
    if kind == "cross_entropy":
        target = np.array([3, n - 1, -7, n + 5, 0][:m], np.int64)
        kw = {"ignore_index": -7, "label_smoothing": 0.1, "stats": ("lse",)}
        args = [x, target, np.full(m, 7.0, np.float32), np.full(m, 7.0, np.float32)]
    else:
        args = [x, test_rows.to_bits(np.zeros((m, n)), dtype)]
        if kind == "add_rms_norm":
            args += [test_rows.to_bits(rng.standard_normal((m, n)), dtype), test_rows.to_bits(np.zeros((m, n)), dtype)]
        if kind in ("rms_norm", "layer_norm", "add_rms_norm"):
            kw = {"weight": dtype, "eps": 1e-5}
            args.append(test_rows.to_bits(rng.standard_normal(n), dtype))
        if kind == "layer_norm":
            kw["bias"] = dtype
            args.append(test_rows.to_bits(rng.standard_normal(n), dtype))
        kw["stats"] = test_rows.STATS[kind]
        args += [np.full(m, 7.0, np.float32) for _ in kw["stats"]]
    built = test_rows.lowered(module(kind, m if static else None, n, dtype, variant=variant, **kw))
    return test_rows.interpret(built, *args)


_UNPIPELINED: dict[tuple, tuple[list[np.ndarray], list[bool]]] = {}


def _unpipelined(kind: str, variant: str, dtype: str, static: bool, taken: list[bool] | None = None) -> list[np.ndarray]:
    """The unpipelined kernel's outputs on ``_outputs``' 5 rows (FORWARD_PIPELINE off, the
    defaults of FORWARD_AHEAD and ROWS_AT_ONCE): the reference of the three bit-for-bit
    tests below, lowered and run once per module (the same settings build the same
    kernel). The dispatch must have said 'not pipelined' of it; ``taken`` (the fixture's
    record) gets that verdict whether the kernel was lowered now or before."""
    assert rows_common.FORWARD_PIPELINE is False and rows_common.FORWARD_AHEAD is None and rows_warp.ROWS_AT_ONCE == 1
    key = (kind, variant, dtype, static, rows_common.FAST_EXP, tuple(sorted(rows_common.FAST_EXP_MEASURED.items())))  # (like with like)
    hit = _UNPIPELINED.get(key)
    if hit is None:
        real, said = rows_lower.forward_pipelined, []  # (the taken fixture's recorder, if on)
        rows_lower.forward_pipelined = lambda p: said.append(real(p)) or said[-1]
        try:
            hit = _UNPIPELINED[key] = (_outputs(kind, variant, dtype, 5, static), said)
        finally:
            rows_lower.forward_pipelined = real
    elif taken is not None:
        taken.extend(hit[1])
    assert hit[1] == [False]
    return [a.copy() for a in hit[0]]


@pytest.mark.parametrize("kind,variant,dtype", CASES)
def test_pipelined_bits_are_the_defaults(kind: str, variant: str, dtype: str, taken, monkeypatch) -> None:
    """5 rows on one CTA (rows_warp: warp 0 takes 3 of them, warp 1 two), each row after
    a group's first loaded during the step before, a group's last one read twice: every
    output's bits as unpipelined, the kernel of any M and of M = 5 (its stride a constant)."""
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    want = _unpipelined(kind, variant, dtype, False, taken) + _unpipelined(kind, variant, dtype, True, taken)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    got = _outputs(kind, variant, dtype, 5, False) + _outputs(kind, variant, dtype, 5, True)
    assert taken == [False, False, True, True] and len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("kind,variant,dtype", CASES)
def test_part_of_the_row_ahead_bits_are_the_defaults(kind: str, variant: str, dtype: str, taken, monkeypatch) -> None:
    """FORWARD_AHEAD = 1: the first of each thread's two vectors of the next row loaded
    ahead, the second as the row starts: the bits of the kernel of any M as unpipelined,
    and its carried registers fewer than with the whole row ahead."""
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    want = _unpipelined(kind, variant, dtype, False, taken)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    monkeypatch.setattr(rows_common, "FORWARD_AHEAD", 1)
    got = _outputs(kind, variant, dtype, 5, False)
    assert taken == [False, True]
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()
    eps = 1e-5 if kind in ("rms_norm", "layer_norm", "add_rms_norm") else None
    op = next(o for o in module(kind, None, N[variant], dtype, eps=eps).walk() if o.name == "bulkred.normalize_rows")
    p = rows_common.RowPlan(op.norm_kind, rows_common.dtype_of(op), None, N[variant], N[variant], N[variant], 4,
                            32 if variant == "rows_warp" else 64, 64, 2, 4, 1)
    part = len(rows_common.prefetch_row_types(p, op))
    monkeypatch.setattr(rows_common, "FORWARD_AHEAD", None)
    whole = len(rows_common.prefetch_row_types(p, op))
    assert 0 < part < whole


@pytest.mark.parametrize("kind", KINDS)
def test_two_rows_a_warp_bits_are_the_defaults(kind: str, monkeypatch) -> None:
    """rows_warp.ROWS_AT_ONCE = 2: a warp's two rows a step (warp 0: rows 0 and 2, then 4
    with itself again; warp 1: 1 and 3): every output's bits as one row a step, the
    kernel of any M and of M = 5; and rows of 260 (a partial vector: lanes 0 to 0 of the
    65th) against float64."""
    dtype = "bfloat16" if kind in ("softmax", "layer_norm", "cross_entropy") else "float32"
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    want = _unpipelined(kind, "rows_warp", dtype, False) + _unpipelined(kind, "rows_warp", dtype, True)
    monkeypatch.setattr(rows_warp, "ROWS_AT_ONCE", 2)
    seen = []
    real = rows_common.together
    monkeypatch.setattr(rows_lower, "together", lambda p: seen.append(real(p)) or seen[-1])
    got = _outputs(kind, "rows_warp", dtype, 5, False) + _outputs(kind, "rows_warp", dtype, 5, True)
    assert seen == [True, True] and len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()
    if kind == "cross_entropy":
        test_rows.run_cross_entropy(260, 0.0, variant="rows_warp")
    else:
        x = np.random.default_rng(3).standard_normal((5, 260)) * 3 + 1.5
        affine = dtype if kind not in ("softmax", "log_softmax") else None
        y, stats, xv, w, b = test_rows.run(kind, x, dtype, variant="rows_warp", affine=affine)
        test_rows.check(kind, y, stats, xv, w, b, dtype)
    assert seen[-1] is True


def test_pipelined_only_where_every_thread_holds_whole_vectors(monkeypatch) -> None:
    """Forced on, a plan with a partial vector (N = 260 on rows_warp: 65 vectors over 32
    lanes) or a cluster is not pipelined; a backward kind never by this setting."""
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    seen = []
    real = rows_common.forward_pipelined
    monkeypatch.setattr(rows_lower, "forward_pipelined", lambda p: seen.append((p.kind.value, real(p))) or seen[-1][1])
    for kind, n, variant in (("softmax", 260, "rows_warp"), ("softmax", 256, "rows_cluster"),
                             ("softmax_backward", 256, "rows_warp"), ("softmax", 256, "rows_warp")):
        test_rows.lowered(module(kind, 4, n, "float32", variant=variant))
    assert seen == [("softmax", False), ("softmax", False), ("softmax_backward", False), ("softmax", True)]


def test_the_settings_as_measured() -> None:
    """FORWARD_PIPELINE defaults to FORWARD_MEASURED (the H200's probe: bfloat16 rows to
    16384, float32 rows to 1024), the CTAs per multiprocessor to the variants' own."""
    assert rows_common.FORWARD_PIPELINE is None and rows_common.FORWARD_AHEAD is None
    assert rows_warp.CTAS_PER_SM is None and rows_cta.CTAS_PER_SM is None and rows_warp.ROWS_AT_ONCE == 1
    from types import SimpleNamespace

    from bulkred_dialect.ops.dtypes import DTYPES
    from bulkred_dialect.ops.tile.rows import NormKind

    def on(dtype: str, n: int) -> bool:
        p = SimpleNamespace(kind=NormKind.SOFTMAX, dtype=DTYPES[dtype], n=n, items=8, cluster=1, vectors=n // 4, group=n // 32)
        return rows_common.forward_pipelined(p)  # type: ignore[arg-type]

    # (softmax 16-bit 16384: unpipelined, a CTA a row in a grid of M, the eighth session's measured cell;
    # 8192 and the other N still pipelined)
    # (and softmax 1024 / 4096 in both types: rows_warp's grid of M / 8, rows_cta's a CTA a row, the quack
    # probes'; 512, 2048 and 8192 pipelined)
    assert [on("bfloat16", n) for n in (512, 1024, 2048, 4096, 8192, 16384)] == [True, False, True, False, True, False]
    assert [on("float32", n) for n in (512, 1024, 4096, 16384)] == [True, False, False, False]
    assert [on("float16", n) for n in (512, 1024, 2048, 4096, 8192, 16384)] == [True, False, True, False, True, False]
    assert not on("float16", 32768) and not on("bfloat16", 32768)


@pytest.mark.parametrize("variant,reduction", [("rows_warp", "mean"), ("rows_cta", "sum")])
def test_pipelined_cross_entropy_reduced_bits(variant: str, reduction: str, taken, monkeypatch) -> None:
    """cross_entropy with its reduction in the kernel (the last CTA's sum after the rows
    loop, whose carried registers the pipeline adds to): the losses and the reduced
    value's bits as unpipelined (test_rows_ce_reduction's kernel: any M, 5 rows, one ignored)."""
    from test_rows_ce_reduction import run_reduced

    target = np.array([3, N[variant] - 1, -7, 0, 9], np.int64)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", False)
    want = run_reduced(variant, N[variant], target, reduction, "bfloat16", seed=5)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", True)
    got = run_reduced(variant, N[variant], target, reduction, "bfloat16", seed=5)
    assert taken == [False, True]
    assert np.float64(got[0]).tobytes() == np.float64(want[0]).tobytes() and np.isfinite(got[0])
    assert got[1].tobytes() == want[1].tobytes()
