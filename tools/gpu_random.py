"""The randomized differential test of the reduction API on the GPU machine (issue 16,
section 3): 2,000 cases by default with a fresh seed (printed first and last), in worker
processes, against numpy in float64 with torch alongside; the report (counts per kind,
dtype, form and view, and per (kind, dtype, form); the failures with the command that
repeats each; the refusals by reason) goes to stdout and, with --out or $OUT, to
random_reductions.txt and random_reductions.json there.

    python3 tools/gpu_random.py [--seed S] [--count 2000] [--jobs 12] [--timeout 300]
    python3 tools/gpu_random.py --seed S --only 17 42     # repeat cases, one process, verbose
    python3 tools/gpu_random.py --fused                   # the fused functions (issue 17): mean, var,
                                                          # std, var_mean, argmax, argmin, vector_norm, logsumexp
    python3 tools/gpu_random.py --table                   # the table's newer functions: amax, amin,
                                                          # count_nonzero, std_mean, max/min_with_indices,
                                                          # nansum, nanmean, aminmax
    python3 tools/gpu_random.py --rows                    # every row of the function table, with its options
    python3 tools/gpu_random.py --complex                 # complex64/complex128 inputs of every row that takes
                                                          # them (sum, prod, mean, var, std, ..., vector_norm,
                                                          # count_nonzero, any, all) against numpy in complex128

Exit status 1 when any case failed (unsupported cases do not fail the run).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

import random_reductions as R


def main() -> int:
    argv = sys.argv[1:]
    if not any(a.startswith("--jobs") for a in argv):
        argv += ["--jobs", str(max(1, min(12, (os.cpu_count() or 2) - 2)))]
    if not any(a.startswith("--out") for a in argv) and os.environ.get("OUT"):
        argv += ["--out", os.environ["OUT"]]
    if not any(a.startswith("--timeout") for a in argv) and "--only" not in argv:
        argv += ["--timeout", "300"]
    try:
        import torch

        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    except Exception as e:  # noqa: BLE001 - the runner says the same, with the failures
        print(f"torch/CUDA not usable here: {e}", flush=True)
    return R.main(argv)


if __name__ == "__main__":
    sys.exit(main())
