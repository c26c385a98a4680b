"""The runtime on a GPU: device and arch detection, cubin loading, checks before
launch, cluster launches with ``grid`` counted in CTAs, and event timing."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx import runtime
from gpu import kernels as K
from gpu.models import same_bits

pytestmark = pytest.mark.gpu


def test_device_and_arch():
    g = runtime.gpu()
    major, minor = g.compute_capability
    assert g.arch == f"sm_{major}{minor}a"
    assert runtime.gpu_unavailable_reason() is None


def test_loaded_from_cubin_and_arrays_round_trip(rng):
    tk = K.bulk_s2g_kernel(64)
    mod = tk.compile()
    inp = rng.integers(1, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(64, np.uint32)
    got_out, got_inp = mod.kernel(tk.name)(out, inp)
    assert mod.loaded_from == "cubin"
    assert same_bits(got_out, inp) and same_bits(got_inp, inp)
    assert not same_bits(out, inp), "the caller's array must not be written"


def test_signature_checked_before_launch():
    tk = K.bulk_s2g_kernel(64)
    k = tk.kernel()
    with pytest.raises(runtime.SignatureError, match="param 'inp': expected shape \\(64,\\), got \\(63,\\)"):
        k(np.zeros(64, np.uint32), np.zeros(63, np.uint32))
    with pytest.raises(runtime.SignatureError, match="param 'out': expected dtype uint32"):
        k(np.zeros(64, np.float32), np.zeros(64, np.uint32))


def test_cluster_launch_counts_ctas(rng):
    """Four CTAs in clusters of two each reduce their own row into dst: with grid read
    as clusters, eight CTAs would run and read past src."""
    tk = K.cp_reduce_global_kernel("add", "u32", 64, ctas=4)
    d = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    s = rng.integers(0, 1 << 32, (4, 64), dtype=np.uint64).astype(np.uint32)
    out, _ = tk.run(d, s, grid=4, cluster=2)
    assert same_bits(out, d + s.sum(axis=0, dtype=np.uint32))


def test_event_timing():
    k = K.bulk_s2g_kernel(64).kernel()
    times = k.time(np.zeros(64, np.uint32), np.ones(64, np.uint32), repeat=5, warmup=1)
    assert len(times) == 5 and all(0 < t < 1000 for t in times)


def test_non_portable_cluster_of_16(rng):
    """A 16-CTA cluster is above the portable limit of 8: the runtime opts the kernel in
    (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) before launching. 15 peers
    reduce into CTA 0's shared tile."""
    n = 64
    d = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    s = rng.integers(0, 1 << 32, (15, n), dtype=np.uint64).astype(np.uint32)
    out, _, _ = K.cp_reduce_cluster_kernel("add", "u32", n, 16).run(np.full(n, 0xDEADBEEF, np.uint32), d, s)
    assert same_bits(out, d + s.sum(axis=0, dtype=np.uint32))
