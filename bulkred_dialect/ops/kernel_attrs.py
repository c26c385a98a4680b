"""Names of the attributes a lowering puts on a kernel ``func.func`` for the launcher
(no xDSL import, so that the runtime can read them cheaply).

* ``bulkred.workspace = <bytes> : i64``: the kernel takes one extra last parameter, a
  zero-filled global buffer of that many bytes, which it leaves zeroed again;
* ``bulkred.zero_init = [i, ...]``: the launcher zero-fills those user parameters before
  each launch (the kernel accumulates into them);
* ``bulkred.align = [a, ...]``: one entry per user parameter, the alignment in bytes its
  address needs (the width of the widest vector access of it: 16 for ``ld.v4.f32``, 8
  for ``ld.v4.b16``; 1 for none beyond the element's own); the launcher refuses an array
  whose address is not a multiple (a view at a storage offset) instead of launching a
  kernel that would fault.

See docs/runtime.md.
"""

WORKSPACE_ATTR = "bulkred.workspace"
ZERO_INIT_ATTR = "bulkred.zero_init"
ALIGN_ATTR = "bulkred.align"
