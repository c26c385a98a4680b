"""GPU targets (``sm_90a``, ``sm_100a`` ...) and what an instruction requires of one.

Every ptx op declares a :class:`Requirement` (lowest SM, whether it needs the
architecture-specific ``a`` target, lowest PTX ISA version). One function,
:func:`check_target`, compares them with the chosen target; nothing else in the
project decides whether an op can run on a target. What else a target allows lives
here too: the cluster launch directives (:data:`CLUSTER_LAUNCH`) and the static shared
memory of a kernel (:func:`max_static_shared`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bulkred_dialect.errors import TargetError

if TYPE_CHECKING:  # pragma: no cover
    from xdsl.dialects.builtin import ModuleOp

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


@dataclass(frozen=True)
class Target:
    """An NVIDIA GPU target such as ``sm_90a``: SM number and suffix ('', 'a' or 'f')."""

    sm: int
    suffix: str = ""

    @staticmethod
    def parse(name: str) -> Target:
        """``"sm_100a"`` -> ``Target(100, "a")``; only the targets in ``_TARGET_MIN_PTX``
        are accepted (an unknown SM has no known lowest PTX ISA version)."""
        if not isinstance(name, str):
            raise TargetError(f"'target' must be a target name such as sm_90a, got {type(name).__name__} {name!r}")
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


def arch_name(arch: Target | str, what: str = "arch") -> str:
    """The name of ``arch`` for the assembler: a :class:`Target`'s, or a name shaped like
    one (``sm_75`` included: nvJitLink knows SMs that the table above does not)."""
    if isinstance(arch, Target):
        return arch.name
    if not isinstance(arch, str) or _TARGET_RE.match(arch.strip()) is None:
        got = repr(arch) if isinstance(arch, str) else f"{type(arch).__name__} {arch!r}"
        raise TargetError(f"'{what}' must be a target name such as sm_90a, got {got}")
    return arch.strip()


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


# The cluster launch directives (.reqnctapercluster, .explicitcluster) need sm_90 and PTX ISA 7.8.
CLUSTER_LAUNCH = Requirement(sm=90, ptx=(7, 8))


def cluster_launch_problem(cluster: tuple[int, int, int], target: Target) -> str | None:
    """Why ``target`` cannot launch clusters of ``cluster`` CTAs, else None."""
    if cluster == (1, 1, 1) or CLUSTER_LAUNCH.satisfied_by(target):
        return None
    return f"a cluster launch {list(cluster)} needs sm_{CLUSTER_LAUNCH.sm}, but the target is {target}"


# The most bytes of static .shared arrays one kernel may declare, as ptxas (nvJitLink
# 13) enforces it: the architecture-specific targets of sm_90/sm_100 lift the 48 KiB of
# the portable ones to the whole 227 KiB a CTA can have (sm_90a, sm_100a, sm_103a,
# sm_110a); sm_120a and sm_121a to 99 KiB.
_STATIC_SHARED_PORTABLE = 48 * 1024
_STATIC_SHARED_ARCH: dict[int, int] = {
    90: 232448, 100: 232448, 103: 232448, 110: 232448, 120: 101376, 121: 101376
}


def max_static_shared(target: Target) -> int:
    """The most bytes of ``.shared`` arrays a kernel may declare on ``target``
    (``uses too much shared data`` from ptxas past it)."""
    if target.suffix == "a":
        return _STATIC_SHARED_ARCH.get(target.sm, _STATIC_SHARED_PORTABLE)
    return _STATIC_SHARED_PORTABLE


def static_shared_hint(target: Target) -> str:
    """``"; sm_90a allows 232448"`` where the ``a`` target of ``target``'s SM allows more
    static shared memory than ``target``, else ``""``."""
    if target.suffix != "a" and target.sm in _STATIC_SHARED_ARCH:
        return f"; sm_{target.sm}a allows {_STATIC_SHARED_ARCH[target.sm]}"
    return ""


# region The target of a module

TARGET_ATTR = "bulkred.target"
"""The module attribute naming its target (``bulkred.target = "sm_100a"``)."""
TARGET_PREFIX = "'target' "


def resolve_target(module: ModuleOp, option: Target | str | None = None) -> Target:
    """The option when given, else the module's ``bulkred.target`` attribute, else sm_90a.

    A ``bulkred.target`` that is not a known target's name is an error located on
    the module, never silently replaced by the default.
    """
    if isinstance(option, Target):
        return option
    if option:
        return Target.parse(option)
    attr = module.attributes.get(TARGET_ATTR)
    if attr is None:
        return DEFAULT_TARGET
    from xdsl.dialects.builtin import StringAttr

    from bulkred_dialect.diagnostics import LocatedError

    if not isinstance(attr, StringAttr):
        raise LocatedError(module, f"'{TARGET_ATTR}' must be a string such as \"sm_90a\", got {attr}")
    try:
        return Target.parse(attr.data)
    except TargetError as e:
        raise LocatedError(module, f"'{TARGET_ATTR}' {str(e).removeprefix(TARGET_PREFIX)}") from None


def target_option(value: Target | str | None) -> Target | None:
    """A ``target`` option as given (a :class:`Target`, a name, or None/"" for none), parsed."""
    if isinstance(value, Target) or value is None:
        return value
    return Target.parse(value) if value else None


# endregion
