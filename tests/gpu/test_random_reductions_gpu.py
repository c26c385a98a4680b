"""The randomized differential test of the reduction API on the GPU (issue 16, section 3):
``bulkred.sum/prod/max/min/any/all`` on random views of random tensors of every dtype,
against numpy in float64 (the pass rule is tests/random_reductions.py's docstring) with
torch's own result alongside. 300 cases by default, in worker processes;
``BULKRED_RANDOM_SEED`` (default 16), ``BULKRED_RANDOM_CASES`` and ``BULKRED_RANDOM_JOBS``
change that. A case the API refuses with ``ReductionError`` is counted as unsupported,
never as a pass; any failure fails the test. tools/gpu_random.py runs 2,000 cases or more
with a fresh seed."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import random_reductions as R

pytestmark = pytest.mark.gpu


def test_random_reductions_against_numpy_and_torch():
    seed = int(os.environ.get("BULKRED_RANDOM_SEED", "16"))
    count = int(os.environ.get("BULKRED_RANDOM_CASES", "300"))
    jobs = int(os.environ.get("BULKRED_RANDOM_JOBS", str(min(4, os.cpu_count() or 1))))
    results = R.run_parallel(seed, count, jobs, timeout_s=float(os.environ.get("BULKRED_RANDOM_TIMEOUT", "300")))
    text, ok = R.summarize(results, seed)
    print(text)
    assert len(results) == count
    assert ok, "\n".join(line for line in text.splitlines() if not line.startswith(tuple(R.KINDS)))[-6000:]
