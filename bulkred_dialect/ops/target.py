"""GPU targets (``sm_90a``, ``sm_100a`` ...) and what an instruction requires of one.

Every ptx op declares a :class:`Requirement` (lowest SM, whether it needs the
architecture-specific ``a`` target, lowest PTX ISA version). One function,
:func:`check_target`, compares them with the chosen target; nothing else in the
project decides whether an op can run on a target.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.utils.exceptions import DiagnosticException

_TARGET_RE = re.compile(r"^sm_(\d+)([af]?)$")

# The targets the bundled assembler (nvJitLink 13.5) knows from sm_80 on, each with the
# lowest PTX ISA version it accepts in `.target` (probed: tests/test_targets.py checks
# both). CUDA 13 renamed sm_101 to sm_110, and has no sm_101 any more.
_TARGET_MIN_PTX: dict[str, tuple[int, int]] = {
    "sm_80": (7, 0),
    "sm_86": (7, 1),
    "sm_87": (7, 4),
    "sm_88": (9, 0),
    "sm_89": (7, 8),
    "sm_90": (7, 8),
    "sm_90a": (8, 0),
    "sm_100": (8, 6),
    "sm_100a": (8, 6),
    "sm_100f": (8, 8),
    "sm_103": (8, 8),
    "sm_103a": (8, 8),
    "sm_103f": (8, 8),
    "sm_110": (9, 0),
    "sm_110a": (9, 0),
    "sm_110f": (9, 0),
    "sm_120": (8, 7),
    "sm_120a": (8, 7),
    "sm_120f": (8, 8),
    "sm_121": (8, 8),
    "sm_121a": (8, 8),
    "sm_121f": (8, 8),
}

KNOWN_TARGETS: tuple[str, ...] = tuple(_TARGET_MIN_PTX)

# The highest PTX ISA version the GPU machines' driver JIT accepts.
MAX_PTX_VERSION = (9, 0)


class TargetError(DiagnosticException):
    """A target name that does not parse, or an op the target cannot run."""


@dataclass(frozen=True)
class Target:
    """An NVIDIA GPU target such as ``sm_90a``: SM number and suffix ('', 'a' or 'f')."""

    sm: int
    suffix: str = ""

    @staticmethod
    def parse(name: str) -> Target:
        """``"sm_100a"`` -> ``Target(100, "a")``; only the targets in ``_TARGET_MIN_PTX``
        are accepted (an unknown SM has no known lowest PTX ISA version)."""
        m = _TARGET_RE.match(name.strip())
        if m is None:
            raise TargetError(
                f"'target' must look like sm_90, sm_90a or sm_100a, got '{name}'"
            )
        target = Target(int(m.group(1)), m.group(2))
        if target.name not in _TARGET_MIN_PTX:
            raise TargetError(
                f"'target' must be one of {', '.join(KNOWN_TARGETS)}, got '{name}'"
            )
        return target

    @property
    def name(self) -> str:
        return f"sm_{self.sm}{self.suffix}"

    @property
    def min_ptx(self) -> tuple[int, int]:
        # Target.parse admits only table entries; (8, 0) serves targets built directly
        # (tests probe ptxas one SM below a requirement, e.g. Target(75)).
        return _TARGET_MIN_PTX.get(self.name, (8, 0))

    def __str__(self) -> str:
        return self.name


DEFAULT_TARGET = Target(90, "a")


def format_ptx_version(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


@dataclass(frozen=True)
class Requirement:
    """What an instruction form needs: ``sm`` or higher; with ``arch_specific`` the
    ``a`` target of that SM family (for sm_100: sm_100a, sm_103a);
    PTX ISA ``ptx`` or higher."""

    sm: int = 90
    arch_specific: bool = False
    ptx: tuple[int, int] = (8, 0)

    def combine(self, other: Requirement) -> Requirement:
        """The stronger of two requirements (used when qualifiers add needs)."""
        return Requirement(
            sm=max(self.sm, other.sm),
            arch_specific=self.arch_specific or other.arch_specific,
            ptx=max(self.ptx, other.ptx),
        )

    def describe(self) -> str:
        return f"sm_{self.sm}{'a' if self.arch_specific else ''} and PTX ISA {format_ptx_version(self.ptx)}"

    def satisfied_by(self, target: Target) -> bool:
        if target.sm < self.sm:
            return False
        if self.arch_specific:
            # 'a' features are not forward compatible: same major family, 'a' target.
            if target.suffix != "a" or target.sm // 10 != self.sm // 10:
                return False
        return True


def check_target(op_name: str | Callable[[], str], req: Requirement, target: Target) -> None:
    """Raise :class:`TargetError` naming the op, what it needs and the target.
    ``op_name`` may be a function giving the name (``op.ptx_mnemonic``): it is called
    only for the error, so that checking a whole module builds no mnemonic."""
    if req.satisfied_by(target) and req.ptx <= MAX_PTX_VERSION:
        return
    name = op_name() if callable(op_name) else op_name
    if not req.satisfied_by(target):
        raise TargetError(f"'{name}' needs {req.describe()}, but the target is {target.name}")
    raise TargetError(
        f"'{name}' needs PTX ISA {format_ptx_version(req.ptx)}, above the "
        f"supported maximum {format_ptx_version(MAX_PTX_VERSION)}"
    )
