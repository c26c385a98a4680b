"""rows_backward.NORM_LEAN and NORM_FOLD_DX (off by default, tools/probes/rows_ln_bf16.py
measures them): fewer SASS instructions a row and an element in the norms' backward,
bfloat16's layer_norm and rms_norm above all. On the CPU interpreter, the CTAs narrowed
as in test_rows (one unit looping over 5 rows, the next row loaded over each row's
reduction where pipelined):

* NORM_LEAN (the means by a multiply where N is a power of two, the pipelined weight in
  32-bit words): every output bit for bit the default's, and no ``div.rn`` left in the
  kernel;
* NORM_FOLD_DX (layer_norm's dx as two FFMA from per-row constants): dx against float64
  (test_rows.test_norm_backward), dweight and dbias bit for bit the default's, dx's bits
  of a row independent of the batch (M = 5 against M = 2 on the same first rows);
* the default (all None, their tables empty) lowers as with them off."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from ir_compare import same_ir
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.passes.variants import rows_backward
from bulkred_dialect.row_kernels import module

CASES = [  # (kind, variant, N, dtype, weight's type, dbias): pipelined (rows_backward.MEASURED: 16-bit rows) or not
    ("layer_norm_backward", "rows_cta", 512, "bfloat16", "bfloat16", True),  # 64 threads x 2 vectors of 4, pipelined
    ("rms_norm_backward", "rows_cluster", 512, "bfloat16", "bfloat16", False),  # 4 CTAs of one warp, pipelined
    ("layer_norm_backward", "rows_cluster", 512, "float16", "float16", True),  # float16 as bfloat16, pipelined
    ("layer_norm_backward", "rows_stream", 256, "float32", "float32", True),  # streamed twice, not pipelined
    ("layer_norm_backward", "rows_warp", 256, "bfloat16", "bfloat16", True),  # 2 vectors a lane, WARP_PIPELINE
]


def _divides(built) -> bool:
    """``built`` holds a division (an op named ``div``: ptx's ``div.rn``, arith's)."""
    return any("div" in op.name for op in built.walk())


def _lowered(kind, variant, n, dtype, affine, db):
    return test_rows.lowered(module(kind, None, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                                    variant=variant))


def _outputs(built, kind, n, dtype, affine, db, m: int, seed: int = 7) -> list[np.ndarray]:
    """The kernel's outputs (dx, dweight, dbias) on fixed random rows (the first rows the
    same whatever ``m``)."""
    rng = np.random.default_rng(seed)
    layer = kind == "layer_norm_backward"
    x = test_rows.to_bits(rng.standard_normal((5, n)) * 2 + 0.5, dtype)[:m]
    dy = test_rows.to_bits(rng.standard_normal((5, n)), dtype)[:m]
    w = test_rows.to_bits(rng.standard_normal(n), affine)
    mean = rng.standard_normal(5).astype(np.float32)[:m]
    rstd = (rng.random(5).astype(np.float32) + 0.5)[:m]
    args = [x, test_rows.to_bits(np.zeros((m, n)), dtype), dy, w] + ([mean] if layer else []) + [rstd]
    args += [test_rows.to_bits(np.zeros(n), affine) for _ in range(1 + db)]
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ws = np.zeros(kernel.attributes["bulkred.workspace"].value.data, np.int8)
    got = test_rows.interpret(built, *args, ws)
    return [got[1]] + list(got[len(got) - 1 - (1 + db):-1])  # dx, dweight (, dbias)


def _set(monkeypatch, lean, fold) -> None:
    monkeypatch.setattr(rows_backward, "NORM_LEAN", lean)
    monkeypatch.setattr(rows_backward, "NORM_FOLD_DX", fold)


@pytest.mark.parametrize("case", CASES[:3] + CASES[4:])
def test_lean_bits_are_the_defaults(case, monkeypatch) -> None:
    kind, variant, n, dtype, affine, db = case
    _set(monkeypatch, False, False)
    plain = _lowered(*case)
    want = _outputs(plain, kind, n, dtype, affine, db, 5)
    _set(monkeypatch, True, False)
    lean = _lowered(*case)
    assert _divides(plain) and not _divides(lean)  # (the means by a multiply: N a power of two)
    got = _outputs(lean, kind, n, dtype, affine, db, 5)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("case", [CASES[0], CASES[3]])
def test_fold_dx_against_float64(case, monkeypatch) -> None:
    kind, variant, n, dtype, affine, db = case
    taken = []
    real = rows_backward.norm_fold_dx
    monkeypatch.setattr(rows_backward, "norm_fold_dx", lambda p: taken.append(real(p)) or taken[-1])
    _set(monkeypatch, None, True)
    test_rows.test_norm_backward(kind, variant, n, dtype, affine, db, monkeypatch)
    assert taken and all(taken)


@pytest.mark.parametrize("case", [CASES[0], CASES[2]])
def test_fold_dx_keeps_the_column_sums_and_batch_invariance(case, monkeypatch) -> None:
    """NORM_FOLD_DX with NORM_LEAN (the probe's combination): dweight and dbias bit for
    bit the default's (dx's form only changes), dx within bfloat16's rounding of the
    default's, and the first two rows' dx the same bits in a batch of 5 as alone."""
    kind, variant, n, dtype, affine, db = case
    _set(monkeypatch, False, False)
    want = _outputs(_lowered(*case), kind, n, dtype, affine, db, 5)
    _set(monkeypatch, True, True)
    built = _lowered(*case)
    got = _outputs(built, kind, n, dtype, affine, db, 5)
    for a, b in zip(got[1:], want[1:], strict=True):
        assert a.tobytes() == b.tobytes()
    dx, ref = test_rows.values(got[0], dtype), test_rows.values(want[0], dtype)
    assert np.abs(dx - ref).max() <= 2**-7 * np.abs(ref).max()
    alone = _outputs(built, kind, n, dtype, affine, db, 2)
    assert alone[0].tobytes() == got[0][:2].tobytes()


def test_the_default_is_neither(monkeypatch) -> None:
    """Both settings None: the cells the H200 did not measure faster (layer_norm 4096,
    rms_norm) lower as with both False, the measured ones (layer_norm's backward at 16384 and
    65536, bfloat16 and float16 as bfloat16; tools/probes/rows_ln_bf16.py, the seventh
    session) as with both True."""
    assert rows_backward.NORM_LEAN is None and rows_backward.NORM_FOLD_DX is None
    cases = [("layer_norm_backward", 4096, "bfloat16"), ("rms_norm_backward", 65536, "bfloat16")]
    measured = [("layer_norm_backward", 16384, "float16")]

    def lowered(kind, n, dtype):
        layer = kind == "layer_norm_backward"
        return test_rows.lowered(module(kind, None, n, dtype, weight=dtype, dweight=dtype, dbias=dtype if layer else None))

    default = [lowered(*c) for c in cases + measured]
    _set(monkeypatch, False, False)
    assert all(same_ir(d, lowered(*c)) for d, c in zip(default, cases))
    ((last, c),) = zip(default[len(cases):], measured)
    assert not same_ir(last, lowered(*c))
    _set(monkeypatch, True, True)
    assert same_ir(last, lowered(*c))

