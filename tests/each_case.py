"""Cases of one code path checked in one test: a pytest item costs the run about a
millisecond beyond its check (xdist's reports, the fixtures), more than many of these
checks themselves (issue 29: the CPU suite's time)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest


def each_case(check: Callable[..., Any], cases: Sequence[tuple]) -> None:
    """``check(*case)`` for each of ``cases``, every one run; the failing cases'
    messages together, each after its case (so a message need not name it). A failed
    assert and a failed ``pytest.raises`` (or ``pytest.fail``) fail the case."""
    failed = []
    for case in cases:
        try:
            check(*case)
        except (AssertionError, pytest.fail.Exception) as e:
            failed.append(f"{case}: {e}")
    assert not failed, f"{len(failed)} of {len(cases)} cases failed:\n" + "\n".join(failed)
