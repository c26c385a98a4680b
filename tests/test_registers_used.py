"""backend_ptx.assemble.registers_used: ptxas's register count of a kernel (its ``-v``
report through nvJitLink, no GPU), which the row probes print beside each setting; a PTX
that ptxas refuses raises PtxasError with its log."""

from __future__ import annotations

import pytest

from bulkred_dialect.backend_ptx.assemble import PtxasError, registers_used

PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .f32 %f<%d>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
%s
  ret;
}
"""


def _kernel(values: int) -> str:
    """A kernel that loads ``values`` floats, keeps them all live, and stores their sum."""
    body = [f"  ld.global.f32 %f{i}, [%rd2+{4 * i}];" for i in range(values)]
    body += [f"  add.f32 %f{values}, %f0, %f1;"] + [f"  add.f32 %f{values}, %f{values}, %f{i};" for i in range(2, values)]
    body += [f"  st.global.f32 [%rd2], %f{values};"]
    return PTX.replace("%d", str(values + 1)).replace("%s", "\n".join(body))


def test_more_live_values_take_more_registers():
    few, many = registers_used(_kernel(4)), registers_used(_kernel(64), "sm_90a")
    assert few is not None and many is not None and 0 < few < many


def test_a_refused_ptx_raises_ptxas_error_with_its_log():
    with pytest.raises(PtxasError) as e:
        registers_used(_kernel(4).replace("ld.global.f32", "ld.global.f99"))
    assert "sm_90a" in str(e.value)
