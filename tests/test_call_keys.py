"""The public functions' call keys on the CPU: what a key merges and what it keeps apart.

- A row function's key holds each tensor's layout as ``api.call_key`` does (contiguous,
  else its strides) and its device index: two contiguous tensors of one shape whose
  size-1 dimension has another stride are one key, and the second runs the first's
  launcher with its own result; a strided view is another key.
- A reduction called with torch's spelling (``dim=``, ``keepdim=``) is keyed as given:
  the second call runs the kept launcher, the spellings give one result, and both
  spellings of one argument are refused on every call (never kept).
"""

from __future__ import annotations

import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api, row_functions

from test_grads import host_kernels  # noqa: F401 - the reductions' kernels simulated by torch (a fixture)
from test_row_functions import InterpretedKernel, _close, _randn, interpreted  # noqa: F401 - the rows' fixture


def test_contiguous_rows_of_another_size1_stride_share_a_key(interpreted):  # noqa: F811
    torch = interpreted
    x = _randn(torch, 4, 1, 8, seed=3)
    odd = torch.empty(4 * 8 + 40).as_strided((4, 1, 8), (8, 99, 1))  # contiguous: dim 1 has one element
    odd.copy_(_randn(torch, 4, 1, 8, seed=4))
    assert odd.is_contiguous() and odd.stride() != x.stride()
    _close(bulkred.softmax(x), torch.softmax(x, -1))
    _close(bulkred.softmax(odd), torch.softmax(odd, -1))  # the first call's launcher, odd's own values
    assert len(row_functions.CALLS) == 1 and len(InterpretedKernel.built) == 1
    w = _randn(torch, 8, seed=5)
    _close(bulkred.rms_norm(odd, (8,), w, 1e-6), torch.nn.functional.rms_norm(odd, (8,), w, 1e-6))
    _close(bulkred.rms_norm(x, (8,), w, 1e-6), torch.nn.functional.rms_norm(x, (8,), w, 1e-6))
    assert len(row_functions.CALLS) == 2
    padded = _randn(torch, 4, 1, 16, seed=6)[..., :8]  # rows 16 apart: another key, another kernel
    _close(bulkred.softmax(padded), torch.softmax(padded, -1))
    assert len(row_functions.CALLS) == 3 and InterpretedKernel.built[-1][4]["x_stride"] == 16


def test_torchs_spelling_is_keyed_as_given(host_kernels):  # noqa: F811
    torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(7))
    want = torch.amax(x, dim=1, keepdim=True)
    got = bulkred.amax(x, dim=1, keepdim=True)
    assert len(api.CALLS) == 1
    torch.testing.assert_close(got, want)
    x2 = torch.randn(4, 8, generator=torch.Generator().manual_seed(8))
    torch.testing.assert_close(bulkred.amax(x2, dim=1, keepdim=True), torch.amax(x2, dim=1, keepdim=True))
    assert len(api.CALLS) == 1  # the kept launcher
    torch.testing.assert_close(bulkred.amax(x2, axis=1, keepdims=True), torch.amax(x2, dim=1, keepdim=True))
    assert len(api.CALLS) == 2  # the array API's spelling: its own key, the same result
    for _ in range(2):
        with pytest.raises(api.ReductionError, match="'dim' .* and 'axis' name one argument"):
            bulkred.amax(x, axis=0, dim=1)
        with pytest.raises(api.ReductionError, match="'keepdim' .* and 'keepdims' name one argument"):
            bulkred.amax(x, dim=1, keepdims=True, keepdim=True)
    assert len(api.CALLS) == 2
