"""The MLIR examples of every scope, compiled by bulkred-opt itself (a subprocess:
``-p 'bulkred-to-ptx{target=sm_90a}'`` for the kernel's signature and launch shape,
``-t ptx`` for the PTX) and run on the GPU against numpy on fresh random data. The
grid examples are run at a smaller shape (the same text with the sizes replaced)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import compile_ptx, parse, signatures_of_module

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def bulkred_opt(path: Path, *args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "bulkred_dialect.cli", str(path), *args], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def compiled_by_cli(tmp_path: Path, name: str, replace: dict[str, str] | None = None):
    text = (ROOT / "examples" / f"{name}.mlir").read_text()
    for a, b in (replace or {}).items():
        text = text.replace(a, b)
    src = tmp_path / f"{name}.mlir"
    src.write_text(text)
    level3 = parse(bulkred_opt(src, "-p", "bulkred-to-ptx{target=sm_90a}"), src.name)
    ptx = bulkred_opt(src, "-p", "bulkred-to-ptx{target=sm_90a}", "-t", "ptx")
    compiled = compile_ptx(ptx, "sm_90a", signatures_of_module(level3))
    (kernel,) = compiled.kernel_names()
    return compiled.kernel(kernel)


@pytest.mark.parametrize(
    "name, group, dtype, f",
    [
        ("warp_sum", 32, np.int32, np.sum),
        ("cta_max", 256, np.float32, np.max),
        ("cluster_sum", 256, np.int32, np.sum),
    ],
)
def test_scope_example(tmp_path, rng, name, group, dtype, f):
    kernel = compiled_by_cli(tmp_path, name)
    n = {"warp_sum": 64, "cta_max": 512, "cluster_sum": 512}[name]
    x = rng.integers(-1000, 1000, n).astype(dtype) if dtype == np.int32 else rng.standard_normal(n).astype(dtype)
    _, out = kernel(x, np.zeros(n, dtype))
    want = np.repeat(f(x.reshape(-1, group), axis=1), group)
    np.testing.assert_array_equal(out, want, err_msg=repr(rng))


@pytest.mark.parametrize(
    "name, replace, shape, axis",
    [
        ("full_sum", {"268435456": "1000003"}, [1000003], None),
        ("rowsum", {"65536x4096": "1000x4097", "65536xf32": "1000xf32"}, [1000, 4097], 1),
        ("colsum_1gib", {"65536x4096": "4097x1028", "4096xf32": "1028xf32"}, [4097, 1028], 0),
    ],
)
def test_grid_example(tmp_path, rng, name, replace, shape, axis):
    kernel = compiled_by_cli(tmp_path, name, replace)
    x = rng.standard_normal(shape).astype(np.float32)
    want = np.atleast_1d(x.astype(np.float64).sum(axis=axis))
    _, out = kernel(x, np.full(want.shape, np.nan, np.float32))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3 * np.sqrt(x.size / want.size), err_msg=repr(rng))
