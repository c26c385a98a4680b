"""Kernels with thread/CTA/cluster indices, tile loops and views (built with the
builder, tests/gpu/tile_kernels.py) on the GPU, against numpy:

* a grid of 4 CTAs x 128 threads where each thread sums its own 8-element view of a
  global vector in a loop of 2 tiles (thread scope) and writes its partial;
* a 2-CTA cluster where CTA 1 bulk-reduces (i32 sum) or bulk-copies its shared tile
  into CTA 0's cluster_shared buffer by rank;
* a 2-CTA cluster gathering both tiles side by side in CTA 1 (a view as the
  destination of the peer copy);
* a 4-CTA cluster where one multicast copy (issued by CTA 0) reaches the CTAs of a mask.
"""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import compile_tile_module

from gpu import tile_kernels as K
from gpu.models import mismatch_report, same_bits

pytestmark = pytest.mark.gpu

ARCH = "sm_90a"


def _run(kernel, *args):
    module = kernel.module(target=ARCH)
    return compile_tile_module(module, ARCH).kernel(kernel.name)(*args)


def test_each_thread_sums_its_view(rng):
    # small integers: every partial sum is exact in f32
    A = rng.integers(-1000, 1000, K.GRID * K.THREADS * K.PER_THREAD).astype(np.float32)
    P = np.full(K.GRID * K.THREADS, np.nan, np.float32)
    A_out, P_out = _run(K.thread_sums(), A, P)
    want = A.reshape(-1, K.PER_THREAD).sum(axis=1, dtype=np.float32)
    assert same_bits(A_out, A), "the kernel changed A"
    assert same_bits(P_out, want), f"{rng}\n" + mismatch_report(P_out, want)


@pytest.mark.parametrize("op", ["reduce", "copy"])
def test_cluster_peer_by_rank(op, rng):
    n = K.CLUSTER_N
    inp = rng.integers(-(2**31), 2**31 - 1, 2 * n, dtype=np.int32, endpoint=True)
    out = np.zeros(2 * n, np.int32)
    _, out_got = _run(K.cluster_peer(op), inp, out)
    rows = inp.reshape(2, n)
    with np.errstate(over="ignore"):
        first = rows[0] + rows[1] if op == "reduce" else rows[1]
    want = np.concatenate([first, rows[1]])
    assert same_bits(out_got, want), f"{op}, {rng}\n" + mismatch_report(out_got, want)


def test_cluster_gather_into_views(rng):
    n = 16
    inp = rng.standard_normal(2 * n).astype(np.float32)
    out = np.zeros(4 * n, np.float32)
    _, out_got = _run(K.cluster_gather(n), inp, out)
    got = out_got.reshape(2, 2 * n)[1]
    assert same_bits(got, inp), f"{rng}\n" + mismatch_report(got, inp)


@pytest.mark.parametrize("mask", [0b1111, 0b1010, 0b0001])
def test_cluster_multicast(mask, rng):
    n, cluster = 64, 4
    src = rng.standard_normal(n).astype(np.float32)
    init = rng.standard_normal(cluster * n).astype(np.float32)
    out = np.zeros(cluster * n, np.float32)
    _, _, out_got = _run(K.cluster_multicast(mask, cluster, n), src, init, out)
    rows = init.reshape(cluster, n).copy()
    for r in range(cluster):
        if mask >> r & 1:
            rows[r] = src
    want = rows.reshape(-1)
    assert same_bits(out_got, want), f"mask {mask:#x}, {rng}\n" + mismatch_report(out_got, want)
