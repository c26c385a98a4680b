"""redux.sync integer forms on the GPU (PTX ISA 9.7.13.12): add/min/max .u32/.s32 and
and/or/xor .b32, with the full membermask and partial ones (lanes outside the mask do
not execute the instruction and leave their output poisoned)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu import kernels as K
from gpu.models import mismatch_report, poison, random_values, redux_sync, same_bits

pytestmark = pytest.mark.gpu

MASKS = [0xFFFFFFFF, 0x0000FFFF, 0xA5A5A5A5, 0x80000001, 0x00000100]


@pytest.mark.parametrize("op,t", K.REDUX_FORMS, ids=lambda v: str(v))
def test_redux_sync(op, t, rng):
    kernel = K.redux_kernel(op, t).kernel()
    masks = MASKS + [int(rng.integers(1, 1 << 32))]
    for mask in masks:
        inp = random_values(rng, t, 32)
        pois = poison(t, 32)
        out, _ = kernel(pois, inp, np.uint32(mask))
        want = pois.copy()
        r = redux_sync(op, t, inp, mask)
        for lane in range(32):
            if mask >> lane & 1:
                want[lane] = r
        assert same_bits(out, want), f"{op}.{t} mask {mask:#010x}, {rng}\n" + mismatch_report(out, want, {"inp": inp})
