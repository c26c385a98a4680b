"""Whole reductions from one op, written with the builder: the four of the benchmark
(full sum, full max, column sum, row sum) and an integer one.

Each kernel is one grid-scope ``T.reduce``; the dispatch picks the variant and the
launch shape from the shape, the type and the target.

    python examples/reductions.py          # prints each kernel's variant; runs them when a GPU is present
"""

from __future__ import annotations

import numpy as np

from bulkred_dialect import builder as T


def whole_reduction(name: str, kind: str, shape: list[int], dtype: str, axes: list[int] | None = None, **options) -> T.Kernel:
    """``out = kind-reduce(x, axes)``: one kernel, one op."""
    out_shape = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
    with T.kernel(name) as k:
        x = k.param("x", shape, dtype)
        out = k.param("out", out_shape, dtype)
        T.reduce(kind, out, x, axes=axes, **options)
    return k


EXAMPLES = {
    # name: (kind, shape, dtype, axes)
    "vector_sum": ("sum", [65536 + 3], "float32", None),  # grid_full
    "vector_max": ("max", [4097], "bfloat16", None),  # grid_full, combined in f32
    "vector_xor_i32": ("xor", [4097], "int32", None),  # grid_full_cluster: redux.sync + red.async
    "column_sum": ("sum", [4097, 1028], "float32", [0]),  # grid_split_bulk
    "row_sum": ("sum", [1000, 4097], "float32", [1]),  # grid_rows
}


def examples_module(target: str = "sm_90a"):
    return T.module(*(whole_reduction(n, *spec) for n, spec in EXAMPLES.items()), target=target)


def reference(kind: str, x: np.ndarray, axes: list[int] | None) -> np.ndarray:
    ax = None if axes is None else tuple(axes)
    if kind == "xor":
        return np.atleast_1d(np.bitwise_xor.reduce(x.reshape(-1)))
    f = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    return np.atleast_1d(f(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=ax))


def main() -> None:
    from bulkred_dialect.backend_ptx.runtime import (
        NoGpuError,
        compile_tile_module,
        current_arch,
        gpu_unavailable_reason,
    )
    from bulkred_dialect.ops.tile import ReduceOp
    from bulkred_dialect.passes.dispatch import explain

    reason = gpu_unavailable_reason()
    arch = current_arch() if reason is None else "sm_90a"
    module = examples_module(arch)
    for op in module.walk():
        if isinstance(op, ReduceOp):
            print(f"{op.parent_op().sym_name.data}: {explain(op, arch).splitlines()[-1]}")
    compiled = compile_tile_module(module, arch)
    if reason is not None:
        print(f"no GPU ({reason}): compiled {len(compiled.assemble())} bytes of cubin for {arch}")
        return
    rng = np.random.default_rng()
    for name, (kind, shape, dtype, axes) in EXAMPLES.items():
        if dtype == "int32":
            x = rng.integers(-(2**30), 2**30, shape).astype(np.int32)
        elif dtype == "bfloat16":
            x = (rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        else:
            x = rng.standard_normal(shape).astype(np.float32)
        out_shape = [d for i, d in enumerate(shape) if axes is not None and i not in axes] or [1]
        try:
            _, out = compiled.kernel(name)(x, np.zeros(out_shape, x.dtype))
        except NoGpuError as e:
            print(f"{name}: {e}")
            return
        shown = x if dtype != "bfloat16" else (x.astype(np.uint32) << 16).view(np.float32)
        got = out if dtype != "bfloat16" else (out.astype(np.uint32) << 16).view(np.float32)
        want = reference(kind, shown, axes)
        err = np.max(np.abs(got.astype(np.float64) - want)) / max(1.0, np.max(np.abs(want)))
        print(f"{name}: max relative error {err:.2e}")


if __name__ == "__main__":
    main()
