"""``lower-to-ptx{target=sm_XX}``: level-2 IR into ptx ops inside ``func.func`` kernels
(docs/DEVELOPING.md, "Dialect levels", level 3).

What becomes what:

========================================  ==================================================
level 2                                   level 3
========================================  ==================================================
memref argument (scope global)            ``!ptx.ptr<global>`` argument (the printer loads
                                          it with ``ld.param.u64`` + ``cvta.to.global.u64``)
``memref.alloca`` (scope local, shared)   ``ptx.alloc`` (``.local`` / ``.shared`` array) and
                                          ``ptx.mov.addr``
``memref.load`` / ``memref.store``        address arithmetic + ``ptx.ld`` / ``ptx.st``; of
                                          ``i1`` (one byte): ``ld.u8`` + ``setp.ne.b32`` /
                                          ``selp.b32`` + ``st.b8``
``arith.constant``                        ``ptx.mov.imm``
``arith.addi/subi/muli``                  ``ptx.add/sub/mul.lo`` (folded when both constant)
``arith.divui/divsi/remui/remsi/``        ``ptx.div/rem/min/max`` of the op's signedness
``minui/minsi/maxui/maxsi``               (folded when both constant)
``gpu.thread_id/block_id/block_dim/``     ``ptx.mov.sreg`` (``%tid``, ``%ctaid``, ``%ntid``,
``grid_dim/lane_id``,                     ``%nctaid``, ``%laneid``, ``%cluster_ctarank``,
``bulkred.cluster_rank/cluster_size``     ``%cluster_nctarank``) + ``cvt.u64.u32``; block
                                          extents and a cluster size from ``bulkred.launch``
                                          are constants
``memref.subview`` (static sizes and      the view's first element; its loads and stores
strides)                                  use the source's strides (docs/kernels.md)
``arith.index_cast/extsi/extui/trunci``   ``ptx.cvt`` (or nothing when the width is kept)
``arith.cmpi`` / ``arith.select``         ``ptx.setp`` / ``ptx.selp``
``arith.xori %p, true`` (``i1``)          nothing: the branches on ``%p``'s negation take
                                          ``%p`` with their successors swapped (only a
                                          branch condition may be negated)
``scf.for/if/yield``                      ``cf`` branches (xDSL's scf-to-cf), then ``ptx.bra``
                                          / ``ptx.bra.cond``
``scf.while/condition``                   ``cf`` branches (:class:`WhileLowering`), then as above
``func.return``                           ``ptx.ret``
``builtin.unrealized_conversion_cast``    the buffer's address (``shared`` to
memref -> ``!ptx.ptr<space>``             ``shared::cluster`` through ``ptx.mov``)
ptx ops                                   unchanged
========================================  ==================================================

**``index`` is lowered to ``i64``**: a global or local address is 64-bit, so index math
feeds address math without widening and cannot overflow for any buffer. Shared-memory
addresses are 32-bit: the byte offset is narrowed with ``cvt.u32.u64`` where it meets one.

Addresses: the byte offset of ``m[i, j]`` is ``(i * stride_0 + j) * elem_bytes`` (row-major,
static shapes only; for a view, its offset plus ``i * stride_0 + j * stride_1`` with the
source's strides). Indices are read as linear combinations through index adds,
subtractions and multiplications by constants: the constant part folds into the
``offset`` of ``ld``/``st`` (``A[i + 1]`` is ``[%rd+4]`` after ``4*i``), each remaining
value costs one ``mul.lo.s64`` (skipped when its factor is 1) and one ``add``.

Arrays: ``.local`` arrays are aligned to 16 bytes; ``.shared`` arrays to 16 bytes, or 128
bytes from 128 bytes up (bulk-copy tiles). The ``cluster_shared`` scope allocates in the
CTA's own shared memory like ``shared`` (peers reach it through ``mapa``).

Every created op carries the location of the op it replaces (a ptxas error or a later
verifier error then points at the source line). Anything else inside a kernel is a
located error naming the op, and so is any op of the module outside a ``func.func``, a
``bulkred.launch`` that is not a ``#bulkred.launch<...>``, and shared buffers that add
up to more static ``.shared`` memory than ptxas allows on the target
(:func:`~bulkred_dialect.ops.target.max_static_shared`: 48 KiB, 227 KiB on
sm_90a/sm_100a). With a ``target`` option the module records it as
``bulkred.target``, so that ``-t ptx`` prints for that target.

The package, one module per source dialect around a shared state:

* ``state.py`` -- :class:`~.state.LoweringState` (the kernel's buffers, created ops,
  declarations, negated predicates) and the type helpers (``index`` -> ``i64``, element bytes);
* ``addresses.py`` -- the address arithmetic above;
* ``arith.py``, ``indices.py`` (gpu and bulkred index ops), ``memref.py``, ``casts.py``
  (``builtin.unrealized_conversion_cast``), ``control_flow.py`` (``cf`` and ``func.return``):
  one handler per op type, in a table per module;
* ``scf_to_cf.py`` -- ``scf`` into ``cf`` branches, with locations;
* ``kernel.py`` -- :class:`~.kernel.KernelLowering`: arguments, block order, the handler table;
* ``lower_pass.py`` -- :class:`~.lower_pass.LowerToPtxPass`.

Example::

    bulkred-opt kernel.mlir -p lower-to-ptx -t ptx
"""

from __future__ import annotations

from bulkred_dialect.passes.lower_to_ptx.kernel import KernelLowering
from bulkred_dialect.passes.lower_to_ptx.lower_pass import LowerToPtxPass
from bulkred_dialect.passes.lower_to_ptx.scf_to_cf import WhileLowering, convert_scf_to_cf
from bulkred_dialect.passes.lower_to_ptx.state import INDEX_TYPE, Buffer, element_bytes, lowered_type

__all__ = [
    "INDEX_TYPE",
    "Buffer",
    "KernelLowering",
    "LowerToPtxPass",
    "WhileLowering",
    "convert_scf_to_cf",
    "element_bytes",
    "lowered_type",
]
