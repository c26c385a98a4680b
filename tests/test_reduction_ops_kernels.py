"""The GPU test kernels of tests/gpu/reduction_ops_kernels.py (shfl.sync, ld.vec, st.vec,
atom, red, fence, membar) assemble without a GPU: for sm_90a, and the 256-bit ld.vec
and st.vec forms for sm_100a."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

from assemble_batched import assemble_each
from bulkred_dialect.backend_ptx.assemble import assemble

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _kernels():
    sys.path.insert(0, str(ROOT / "tests"))
    from gpu import reduction_ops_kernels as R

    return R


def test_every_kernel_assembles_for_sm_90a_and_sm_100a():
    R = _kernels()
    kernels = R.REDUCTION_OPS_KERNELS()
    names = [k.name for k in kernels]
    assert len(names) == len(set(names))
    for arch in ("sm_90a", "sm_100a"):
        errors = assemble_each([(k.name, k.ptx(arch)) for k in kernels], arch)  # few nvJitLink runs
        assert list(errors) and set(errors) == set(names)
        failed = [f"{name}: {e}" for name, e in errors.items() if e is not None]
        assert not failed, "\n".join(failed)


def test_wide_ld_vec_and_st_vec_kernels_assemble_for_sm_100a_only():
    from bulkred_dialect.diagnostics import LocatedError

    R = _kernels()
    for k in R.WIDE_LD_VEC_KERNELS() + R.WIDE_ST_VEC_KERNELS():
        ptx = k.ptx("sm_100a")
        assert ".version 8.8" in ptx
        assemble(ptx, "sm_100a")
        with pytest.raises(LocatedError, match="needs sm_100 and PTX ISA 8.8"):
            k.ptx("sm_90a")


def test_kernels_print_the_instructions_under_test():
    R = _kernels()
    ptx = R.shfl_bfly_sum_kernel().ptx()
    assert ptx.count("shfl.sync.bfly.b32") == 5
    ptx = R.ld_vec_kernel("f32", 4, nc=True, offset=16).ptx()
    assert "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd" in ptx and "+16];" in ptx
    ptx = R.st_vec_kernel("f32", 4, offset=16).ptx()
    assert "st.global.v4.f32 [%rd" in ptx and "+16], {%f1, %f2, %f3, %f4};" in ptx
    ptx = R.st_vec_kernel("f32", 8).ptx("sm_100a")
    assert "st.global.v8.f32 [%rd" in ptx
    ptx = R.red_vec_kernel(4).ptx()
    assert "red.global.add.v4.f32 [%rd" in ptx
    ptx = R.red_vec_kernel(8, "bf16", "max").ptx()
    assert "red.global.max.noftz.v8.bf16 [%rd" in ptx
    ptx = R.last_block_sum_kernel(4).ptx()
    for line in ("red.relaxed.cta.shared::cta.add.u32", "fence.acq_rel.gpu;", "atom.global.add.u32", "membar.gl;"):
        assert line in ptx
    ptx = R.red_kernel("add", "f32", sem=R.RedSem.RELEASE, scope=R.MemScope.GPU).ptx()
    assert "red.release.gpu.global.add.f32" in ptx


def test_assemble_each_finds_each_failing_module():
    """tests/assemble_batched.py: printed modules of one header assemble in one run, and a
    group that fails falls back to one run each, naming the failing module with its own
    error; a module with more than kernels at module scope is assembled alone."""
    from assemble_batched import HEADER_END, _only_entries

    R = _kernels()
    kernels = R.REDUCTION_OPS_KERNELS()[:4]
    good = [(k.name, k.ptx("sm_90a")) for k in kernels]
    name, ptx = good[1]
    broken = ptx.replace("ret;", "ret.nonsense;", 1)
    assert broken != ptx
    got = assemble_each([*good[:1], (name, broken), *good[2:]], "sm_90a")
    assert [n for n, e in got.items() if e is not None] == [name]
    assert "nonsense" in got[name] or "ret" in got[name]
    assert assemble_each(good, "sm_90a") == {n: None for n, _ in good}
    body = good[0][1].partition(HEADER_END)[2]
    assert _only_entries(body)
    assert not _only_entries(".shared .align 4 .b8 smem[16];\n" + body)
    clash = assemble_each([good[0], ("again", good[0][1])], "sm_90a")  # one entry name twice: each alone passes
    assert clash == {good[0][0]: None, "again": None}
