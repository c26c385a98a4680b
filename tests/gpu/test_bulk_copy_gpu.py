"""cp.async.bulk on the GPU in its four directions (PTX ISA 9.7.9.25.4.1), completion
on an mbarrier (expect_tx + try_wait.parity) or through the bulk async-group:
global -> shared::cta, shared::cta -> global, global -> shared::cluster (own CTA, and
.multicast::cluster to 2 and 4 CTAs with full and partial masks), shared::cta -> the
shared memory of the peer CTA. Data: fresh random u32 words; outputs poisoned first."""

from __future__ import annotations

import numpy as np
import pytest

from gpu import kernels as K
from gpu.models import mismatch_report, poison, same_bits

pytestmark = pytest.mark.gpu

SIZES = [4, 1020, 4096]  # u32 words: 16 bytes, an odd multiple of 16 bytes, 16 KiB


def _words(rng, *shape) -> np.ndarray:
    x = rng.integers(1, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)
    return x


@pytest.mark.parametrize("n", SIZES)
def test_global_to_shared_cta(n, rng):
    inp = _words(rng, n)
    out, _ = K.bulk_g2s_cta_kernel(n).run(poison("u32", n), inp)
    assert same_bits(out, inp), f"{rng}\n" + mismatch_report(out, inp)


@pytest.mark.parametrize("n", SIZES)
def test_shared_cta_to_global(n, rng):
    inp = _words(rng, n)
    out, _ = K.bulk_s2g_kernel(n).run(poison("u32", n), inp)
    assert same_bits(out, inp), f"{rng}\n" + mismatch_report(out, inp)


@pytest.mark.parametrize("n", SIZES)
def test_global_to_shared_cluster_own_cta(n, rng):
    inp = _words(rng, 2, n)
    out, _ = K.bulk_g2s_cluster_kernel(n, 2, None).run(poison("u32", 2 * n).reshape(2, n), inp)
    assert same_bits(out, inp), f"{rng}\n" + mismatch_report(out, inp)


@pytest.mark.parametrize(
    "cluster,mask", [(2, 0b11), (4, 0b1111), (4, 0b1011), (4, 0b0110)], ids=lambda v: str(v) if isinstance(v, int) and v < 8 else bin(v)
)
@pytest.mark.parametrize("n", [1020, 4096])
def test_global_to_shared_cluster_multicast(cluster, mask, n, rng):
    """CTA 0 issues one multicast copy of inp[0]; each CTA in ``mask`` gets it (CTA 0
    need not be one of them); the others write nothing."""
    inp = _words(rng, cluster, n)
    pois = poison("u32", cluster * n).reshape(cluster, n)
    out, _ = K.bulk_g2s_cluster_kernel(n, cluster, mask).run(pois, inp)
    want = pois.copy()
    for r in range(cluster):
        if mask >> r & 1:
            want[r] = inp[0]
    assert same_bits(out, want), f"cluster {cluster} mask {mask:#x}, {rng}\n" + mismatch_report(out, want)


@pytest.mark.parametrize("n", SIZES)
def test_shared_cta_to_peer_cta(n, rng):
    inp = _words(rng, n)
    out, _ = K.bulk_s2s_peer_kernel(n).run(poison("u32", n), inp)
    assert same_bits(out, inp), f"{rng}\n" + mismatch_report(out, inp)
