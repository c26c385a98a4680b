"""red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes on the GPU
(PTX ISA 9.7.13.7): every .op x .type of the spec, from the peer CTAs of a cluster
into CTA 0's shared memory, completion observed on CTA 0's mbarrier. A 2-CTA cluster
for every form; a 4-CTA cluster (three peers) for the order-independent ones."""

from __future__ import annotations

import numpy as np
import pytest

from gpu import kernels as K
from gpu.models import mismatch_report, poison, random_values, reduce_update, same_bits

pytestmark = pytest.mark.gpu

CASES = [(op, t, 2) for op, t in K.RED_ASYNC_FORMS] + [
    (op, t, 4) for op, t in K.RED_ASYNC_FORMS if op not in ("inc", "dec")
]


@pytest.mark.parametrize("op,t,cluster", CASES, ids=lambda v: str(v))
def test_red_async_cluster(op, t, cluster, rng):
    d = random_values(rng, t, 32, op=op)
    s = np.stack([random_values(rng, t, 32, op=op) for _ in range(cluster - 1)])
    out, _, _ = K.red_async_kernel(op, t, cluster).run(poison(t, 32), d, s)
    want = d
    for row in s:
        want = reduce_update(op, t, want, row)
    assert same_bits(out, want), f"{op}.{t} cluster {cluster}, {rng}\n" + mismatch_report(out, want, {"d": d, "s0": s[0]})
