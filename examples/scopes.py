"""Reductions at warp, CTA and cluster scope, written with the builder.

Each kernel gives thread t of the grid the value ``x[t]`` (a one-element tile view of
the global input, copied into a local buffer), reduces it at one scope, and writes every
thread's result to ``out[t]``: each thread holds the reduction over its warp (its CTA,
its cluster).

    python examples/scopes.py            # prints the explain table of each reduction and the PTX size
"""

from __future__ import annotations

from bulkred_dialect import builder as T

THREADS = 128  # per CTA: 4 warps
CTAS = 4  # 2 clusters of 2


def scope_kernel(name: str, kind: str, scope: str, dtype: str, cluster: int = 1) -> T.Kernel:
    with T.kernel(name, grid=[CTAS], block=[THREADS], cluster=[cluster]) as k:
        x = k.param("x", [CTAS * THREADS], dtype)
        out = k.param("out", [CTAS * THREADS], dtype)
        t = T.add(T.mul(T.block_id("x"), THREADS), T.thread_id("x"))
        mine = T.alloc_buffer([1], dtype, scope="local")
        r = T.alloc_buffer([1], dtype, scope="local")
        T.copy(T.view(x, [t], [1]), mine)
        T.reduce(kind, r, mine, scope=scope)
        T.copy(r, T.view(out, [t], [1]))
    return k


KERNELS = {
    # name: (kind, scope, dtype, cluster size) -> the variant the dispatch picks on sm_90a
    "warp_sum_i32": ("sum", "warp", "int32", 1),  # warp_redux: redux.sync
    "warp_max_f32": ("max", "warp", "float32", 1),  # warp_shuffle (warp_redux_f32 on sm_100a)
    "cta_sum_f32": ("sum", "cta", "float32", 1),  # cta_shared
    "cta_xor_i32": ("xor", "cta", "int32", 1),  # cta_shared with redux.sync
    "cluster_sum_i32": ("sum", "cluster", "int32", 2),  # cluster_red_async: red.async
    "cluster_min_f32": ("min", "cluster", "float32", 2),  # cluster_dsmem
    "cluster_sum_bf16": ("sum", "cluster", "bfloat16", 2),  # cluster_dsmem
}


def scopes_module(target: str = "sm_90a"):
    return T.module(*(scope_kernel(n, *spec) for n, spec in KERNELS.items()), target=target)


if __name__ == "__main__":
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module
    from bulkred_dialect.ops.tile import ReduceOp
    from bulkred_dialect.passes.dispatch import explain

    module = scopes_module()
    for op in module.walk():
        if isinstance(op, ReduceOp):
            print(explain(op, "sm_90a").splitlines()[-1], "for", op.parent_op().sym_name.data)
    compiled = compile_tile_module(module, "sm_90a")
    print(len(compiled.ptx.splitlines()), "lines of PTX;", len(compiled.assemble()), "bytes of cubin for sm_90a")
