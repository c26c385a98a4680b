"""Names of the attributes a lowering puts on a kernel ``func.func`` for the launcher
(no xDSL import, so that the runtime can read them cheaply).

* ``bulkred.workspace = <bytes> : i64``: the kernel takes one extra last parameter, a
  zero-filled global buffer of that many bytes, which it leaves zeroed again;
* ``bulkred.zero_init = [i, ...]``: the launcher zero-fills those user parameters before
  each launch (the kernel accumulates into them).

See docs/runtime.md.
"""

WORKSPACE_ATTR = "bulkred.workspace"
ZERO_INIT_ATTR = "bulkred.zero_init"
