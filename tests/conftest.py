"""Shared pytest fixtures and the `gpu` marker's skip rule."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The compile cache of a test run lives in a fresh directory, not the user's cache. The
# process that starts the run makes it (pytest-xdist workers inherit the variable, so
# they make none) and removes it when the run ends.
_OWN_CACHE_DIR: str | None = None
if "BULKRED_CACHE_DIR" not in os.environ:
    _OWN_CACHE_DIR = tempfile.mkdtemp(prefix="bulkred-test-cache-")
    os.environ["BULKRED_CACHE_DIR"] = _OWN_CACHE_DIR


def pytest_configure(config):
    """The cyclic garbage collector runs less often in a test process (each pytest
    worker): the tests build and interpret many IR modules, many small objects that
    survive a young collection (the collected tests, compiled modules kept by the
    caches), and at Python's default thresholds (700, 10, 10) the collector re-walked
    them about 8% of the CPU-heavy tests' time; at these, under half of that. Cycles
    are still collected (every 50,000 net allocations). The middle generation is
    walked after 100 young collections, not 20: each such walk re-read every object
    that had survived a young one since the last (the modules the tests' memos keep,
    and what a test made with the collector paused), 0.3-0.6 CPU-s each, 1.3-1.6 CPU-s
    of the files of issue 29's heaviest tests in two workers, for some 10 MB more at
    the peak (the cycles that die after their first young collection wait longer)."""
    gc.set_threshold(50_000, 100, 20)


# The slowest files first (their CPU seconds in a run on a 2-CPU machine, slowest
# first): tools/test.sh runs pytest-xdist with --dist loadfile --no-loadscope-reorder,
# which hands out the files in this order, so that the run does not end with one
# worker busy on a slow file and the other idle (xdist's own order, by the number of
# tests, put the differential test's three slow tests last). A file not named keeps
# its place after these; a stale entry only costs some of that idle tail.
SLOW_FIRST = (
    "test_lowering_numerics.py", "test_public_boundary.py", "test_differential.py", "test_assemble_all.py",
    "test_compile_speed.py", "test_rows_norms_forward.py", "test_lit_inprocess.py", "test_grid_element_types.py",
    "test_dispatch.py", "test_cache.py", "test_rows_forward_pipeline.py", "test_fused.py", "test_fused_api.py",
    "test_random_reductions.py", "test_rows.py", "test_rows_backward_bulk.py", "test_interpreter_lockstep.py",
    "test_complex.py", "test_bool.py", "test_nd_grid.py", "test_docs.py", "test_rows_ce_reduction.py",
    "test_torch_rules.py", "test_grid_variants.py", "test_op_definition.py", "test_rows_backward_overlap.py",
    "test_sass.py", "test_rows_backward_fast.py", "test_nan_prod.py", "test_mutation.py", "test_rows_long_forward.py",
    "test_reduce_list.py", "test_rows_backward_pipeline.py", "test_lower_bulk_ops.py", "test_targets.py",
    "test_rows_forward_bulk.py", "test_nan_functions.py",
)


def pytest_collection_modifyitems(session, config, items):
    """The files of :data:`SLOW_FIRST` first, in its order; each file's tests, and the
    other files, as collected."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_collection_finish(session):
    """What exists once the tests are collected (the modules imported, the test items,
    the dialects) lives to the end of the process: moved out of the collector's
    generations (``gc.freeze``), no collection walks it again (about 7% of a
    CPU-heavy file's time)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """After pytest's own ``pytest_unconfigure`` hooks, whose unraisable-exception check
    has collected the garbage left (a full ``gc.collect``, its finalizers' errors
    reported), what lives then is frozen: pytest's cleanup collects again, and that
    second walk over every live object (the caches' compiled modules, about half a
    CPU-second in each worker) found nothing more to free."""
    if _OWN_CACHE_DIR is not None:
        shutil.rmtree(_OWN_CACHE_DIR, ignore_errors=True)
    gc.freeze()


def _gpu_reason() -> str | None:
    """None when a CUDA GPU and driver are usable, else why not."""
    try:
        from cuda.bindings import driver
    except Exception as e:  # pragma: no cover - cuda-python is a dependency
        return f"cuda-python is not importable: {e}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:
        return f"no CUDA driver: {e}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"no CUDA driver or GPU (cuInit: {err.name})"
    err, n = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or n == 0:
        return "no CUDA GPU present"
    return None


_REASON: list[str | None] = []


def gpu_skip_reason() -> str | None:
    if not _REASON:
        _REASON.append(_gpu_reason())
    return _REASON[0]


def pytest_runtest_setup(item):
    """Skip a `gpu` test when no GPU is usable. The skip is raised here, in one place,
    so that `pytest -rs` folds every such skip into one line
    (``SKIPPED [41] tests/conftest.py:NN: gpu test: no CUDA driver ...``), while each
    still counts in the summary's "N skipped"; a skip marker would be reported at each
    test's own line."""
    if item.get_closest_marker("gpu") is not None:
        reason = gpu_skip_reason()
        if reason is not None:
            pytest.skip(f"gpu test: {reason}")


GPU_TESTS = Path(__file__).resolve().parent / "gpu"


class _GpuModuleSkipped(pytest.Module):
    """A module of tests/gpu/ where no GPU is usable: skipped as a whole, not imported."""

    def collect(self):
        pytest.skip(f"gpu test module: {gpu_skip_reason()}", allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    """Where no GPU is usable, each test module of tests/gpu/ (all its tests carry the
    `gpu` marker) is one skip with the reason, raised here (``pytest -rs``: ``SKIPPED
    [33] tests/conftest.py:NN: gpu test module: ...``), not collected: its ~1,500 tests,
    each collected and skipped in every pytest worker, cost the CPU run some 2 CPU-s
    (issue 29). The `gpu` tests of the other modules are skipped one by one
    (:func:`pytest_runtest_setup`)."""
    if (
        module_path.name.startswith("test_")
        and module_path.parent.resolve() == GPU_TESTS
        and gpu_skip_reason() is not None
    ):
        return _GpuModuleSkipped.from_parent(parent, path=module_path)
    return None
