"""The known targets are exactly those the bundled assembler (nvJitLink) knows from sm_80
on, each with its lowest PTX ISA version; the seed example lowers and assembles for each."""

from __future__ import annotations

import pytest

from bulkred_dialect import cli
from bulkred_dialect.backend_ptx.assemble import assemble, ptxas_accepts
from bulkred_dialect.ops.target import KNOWN_TARGETS, Target, TargetError, max_static_shared
from differential_harness import DOC, PTX_VERSIONS
from each_case import each_case

SEED = DOC.parent.parent / "examples" / "seed_sum32.mlir"

# Every name the assembler might know from sm_80 on: the SMs of CUDA 12 and 13 (sm_101 was
# renamed sm_110 in CUDA 13) with each suffix.
CANDIDATE_SMS = (80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)
CANDIDATES = tuple(f"sm_{sm}{suffix}" for sm in CANDIDATE_SMS for suffix in ("", "a", "f"))


def empty_kernel(target: str, version: tuple[int, int]) -> str:
    return (
        f".version {version[0]}.{version[1]}\n.target {target}\n.address_size 64\n"
        ".visible .entry k()\n{\n\tret;\n}\n"
    )


def assembler_knows(target: str) -> bool:
    return ptxas_accepts(empty_kernel(target, PTX_VERSIONS[-1]), target)[0]


def test_known_targets_are_exactly_what_the_assembler_knows():
    knows = {t for t in CANDIDATES if assembler_knows(t)}
    assert set(KNOWN_TARGETS) == knows
    assert set(KNOWN_TARGETS) <= set(CANDIDATES)


@pytest.mark.parametrize("name", ["sm_101", "sm_101a", "sm_90f", "sm_80a"])
def test_names_the_assembler_does_not_know_are_refused(name):
    assert not assembler_knows(name)
    with pytest.raises(TargetError, match=f"'target' must be one of .*, got '{name}'"):
        Target.parse(name)


def test_lowest_ptx_version_of_each_target():
    each_case(_check_lowest_ptx_version, [(name,) for name in KNOWN_TARGETS])


def _check_lowest_ptx_version(name):
    t = Target.parse(name)
    assert ptxas_accepts(empty_kernel(name, t.min_ptx), name)[0]
    older = [v for v in PTX_VERSIONS if v < t.min_ptx]
    if older:
        ok, log = ptxas_accepts(empty_kernel(name, older[-1]), name)
        assert not ok, f"{name} also takes PTX ISA {older[-1]}: lower its minimum"


def test_seed_lowers_and_assembles_for_every_target(capsys):
    def check(name):
        capsys.readouterr()  # nothing left from a failed case before
        assert cli.main([str(SEED), "-p", f"bulkred-to-ptx{{target={name}}}", "-t", "ptx"]) == 0
        ptx = capsys.readouterr().out
        assert f".target {name}\n" in ptx
        assert len(assemble(ptx, name)) > 0

    each_case(check, [(name,) for name in KNOWN_TARGETS])


def shared_kernel(target: str, nbytes: int) -> str:
    return (
        f".version 9.0\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n"
        f"\t.shared .align 16 .b8 buf[{nbytes}];\n\t.reg .b32 %r<2>;\n\tmov.u32 %r1, buf;\n"
        "\tst.shared.u32 [%r1], 1;\n\tret;\n}\n"
    )


def test_static_shared_limit_of_every_target():
    each_case(_check_static_shared_limit, [(name,) for name in KNOWN_TARGETS])


def _check_static_shared_limit(name):
    limit = max_static_shared(Target.parse(name))
    assert ptxas_accepts(shared_kernel(name, limit), name)[0]
    ok, log = ptxas_accepts(shared_kernel(name, limit + 16), name)
    assert not ok and "too much shared data" in log
