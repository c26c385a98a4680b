"""Assembling in a child process (a crash of nvJitLink is an error, not the end of the
process), and the ptx.alloc limits that keep verified input away from ptxas's crashes."""

from __future__ import annotations

import pytest

from bulkred_dialect import cli
from bulkred_dialect.backend_ptx import printer
from bulkred_dialect.backend_ptx.assemble import AssemblerCrashed, PtxasError, assemble
from bulkred_dialect.ops.ptx.memory import MAX_ALIGN


def decl_ptx(space: str, align: int, size: int = 16, *, used: bool = False) -> str:
    use = f"\t.reg .b64 %rd<2>;\n\tmov.u64 %rd1, buf;\n\tst.{space}.u32 [%rd1], 1;\n" if used else ""
    return (
        ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
        f"\t.{space} .align {align} .b8 buf[{size}];\n{use}\tret;\n}}\n"
    )


def test_isolated_gives_the_same_cubin():
    text = decl_ptx("local", 16, used=True)
    assert assemble(text, "sm_90a", isolated=True) == assemble(text, "sm_90a")


def test_isolated_rejection_carries_ptxas_diagnostics():
    with pytest.raises(PtxasError) as e:
        assemble(decl_ptx("local", 24), "sm_90a", isolated=True)
    assert not isinstance(e.value, AssemblerCrashed)
    assert [(d.line, d.message) for d in e.value.diagnostics] == [(6, "Alignment must be a power of two")]


def test_a_crash_in_nvjitlink_is_an_error():
    # an unused .local array aligned to 2**31: nvJitLink 13.5 dies of a segmentation fault
    with pytest.raises(AssemblerCrashed, match=r"crashed inside nvJitLink \(signal SIGSEGV\)"):
        assemble(decl_ptx("local", 1 << 31), "sm_90a", isolated=True)


def test_running_too_long_is_an_error():
    with pytest.raises(AssemblerCrashed, match="did not finish within 1e-09 s"):
        assemble(decl_ptx("local", 16), "sm_90a", isolated=True, timeout=1e-9)


def test_max_align_is_the_largest_ptxas_survives():
    """MAX_ALIGN assembles in both spaces, used or not; twice it crashes ptxas (so the
    limit is tight: when a new nvJitLink stops crashing, this says so)."""
    for space in ("local", "shared"):
        for used in (False, True):
            assemble(decl_ptx(space, MAX_ALIGN, used=used), "sm_90a")
    with pytest.raises(AssemblerCrashed):
        assemble(decl_ptx("local", 2 * MAX_ALIGN), "sm_90a", isolated=True)


def test_cli_assembles_in_a_child_and_reports_a_crash(tmp_path, capsys, monkeypatch):
    f = tmp_path / "k.mlir"
    f.write_text(
        "func.func @k() attributes {bulkred.kernel} {\n"
        "  ptx.alloc local @scratch size 16 align 16\n  ptx.ret\n}\n"
    )
    seen = {}

    def crashing(text, arch, **kw):
        seen.update(kw)
        raise AssemblerCrashed(arch, "crashed inside nvJitLink (signal SIGSEGV)")

    monkeypatch.setattr(printer, "assemble", crashing)
    assert cli.main([str(f), "-t", "ptx{assemble=true}"]) == 1
    err = capsys.readouterr().err
    assert seen == {"isolated": True}
    assert err.strip().splitlines() == [
        f"{f}: error: ptxas (sm_90a) crashed inside nvJitLink (signal SIGSEGV)"
    ]


def test_cli_assemble_true_still_assembles(tmp_path, capsys):
    f = tmp_path / "k.mlir"
    f.write_text(
        "func.func @k() attributes {bulkred.kernel} {\n"
        "  ptx.alloc local @scratch size 16 align 16\n  ptx.ret\n}\n"
    )
    assert cli.main([str(f), "-t", "ptx{assemble=true}"]) == 0
    assert "// assembled by ptxas (nvJitLink) for sm_90a:" in capsys.readouterr().out


def _child_pid() -> int:
    from bulkred_dialect.backend_ptx import assemble as a

    assert a._child is not None
    return a._child.proc.pid


def test_one_child_assembles_module_after_module():
    """The child stays for the next module (one Python start-up per process); a
    rejection leaves it, a crash or a time-out ends it and the next call starts another,
    which assembles as before."""
    good = decl_ptx("local", 16, used=True)
    want = assemble(good, "sm_90a")
    assert assemble(good, "sm_90a", isolated=True) == want
    first = _child_pid()
    sm100 = good.replace("sm_90a", "sm_100a").replace(".version 8.0", ".version 8.6")
    assert assemble(sm100, "sm_100a", isolated=True) == assemble(sm100, "sm_100a")
    with pytest.raises(PtxasError) as e:
        assemble(decl_ptx("local", 24), "sm_90a", isolated=True)
    assert not isinstance(e.value, AssemblerCrashed)
    assert _child_pid() == first
    with pytest.raises(AssemblerCrashed, match="SIGSEGV"):
        assemble(decl_ptx("local", 1 << 31), "sm_90a", isolated=True)
    assert assemble(good, "sm_90a", isolated=True) == want
    second = _child_pid()
    assert second != first
    with pytest.raises(AssemblerCrashed, match="did not finish"):
        assemble(good, "sm_90a", isolated=True, timeout=1e-9)
    assert assemble(good, "sm_90a", isolated=True) == want
    assert _child_pid() != second


def test_a_forked_process_starts_its_own_child(monkeypatch):
    """A child made by another process (this one before a fork) is not written to."""
    from bulkred_dialect.backend_ptx import assemble as a

    good = decl_ptx("local", 16, used=True)
    assemble(good, "sm_90a", isolated=True)
    theirs = a._child
    assert theirs is not None
    monkeypatch.setattr(theirs, "pid", -1)  # as if made before a fork
    try:
        assert assemble(good, "sm_90a", isolated=True) == assemble(good, "sm_90a")
        assert a._child is not theirs and theirs.proc.poll() is None
    finally:
        theirs.close()
