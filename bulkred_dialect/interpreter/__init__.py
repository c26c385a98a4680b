"""xDSL interpreter implementations of the ptx arithmetic ops, bit-exact against the GPU.

Runs the IR that ``lower-tile-reductions`` produces (``func``, ``memref``, ``arith``,
``scf`` and ptx arithmetic ops) on numpy buffers::

    from bulkred_dialect.interpreter import run_kernel
    a, b = run_kernel(module, "test_func", np.arange(32, dtype=np.float32), np.zeros(1, np.float32))

Values and rounding rules: :mod:`bulkred_dialect.interpreter.values`.
"""

from bulkred_dialect.interpreter.kernel_ids import KernelIdFunctions, ThreadIds
from bulkred_dialect.interpreter.memory import BufferFunctions
from bulkred_dialect.interpreter.ptx_arith import PtxArithFunctions
from bulkred_dialect.interpreter.ptx_memory import Pointer, PtxMemoryFunctions
from bulkred_dialect.interpreter.run import make_interpreter, run_kernel
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.interpreter.values import BF16, CANONICAL_NAN_BITS

__all__ = [
    "BF16",
    "CANONICAL_NAN_BITS",
    "BufferFunctions",
    "KernelIdFunctions",
    "Pointer",
    "PtxArithFunctions",
    "PtxMemoryFunctions",
    "ThreadIds",
    "make_interpreter",
    "run_grid",
    "run_kernel",
]
