"""Fixtures of the GPU tests: a fresh random generator per test, its seed in every
failure message."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest


class SeededRng:
    """A numpy Generator that remembers its seed (``BULKRED_SEED`` fixes it)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.gen = np.random.default_rng(seed)

    def __getattr__(self, name):
        return getattr(self.gen, name)

    def __repr__(self) -> str:
        return f"seed {self.seed} (rerun with BULKRED_SEED={self.seed})"


@pytest.fixture
def rng() -> SeededRng:
    env = os.environ.get("BULKRED_SEED")
    return SeededRng(int(env) if env else time.time_ns() % (1 << 32))
