#!/usr/bin/env python3
"""The seed demo end to end: compile ``examples/seed_sum32.mlir`` (32 float32 values
summed by one thread into B[0]) to PTX, assemble it, and run it when a GPU is present.

Three compilations, each printed as PTX and assembled with nvJitLink:

* ``sm_100a``: the ``sm100_packed`` variant (``add.rn.ftz.f32x2``), assembled only;
* ``sm_90a``, ``local`` variant: a sequential ``add.rn.f32`` chain;
* ``sm_90a``, ``sm100_packed`` legalized: the variant chosen for sm_100a, then
  ``legalize-for-target{target=sm_90a}`` (each ``add.f32x2`` into two ``add.rn.ftz.f32``).

With a GPU, both sm_90a kernels run on fresh random data (several trials, poisoned
output) and B is compared bit for bit with ``bulkred_dialect.reference``
(``reduce_local`` -- also the float32 sequential sum -- and ``reduce_sm100_packed``).
Without a GPU the script says so and exits 0.

    PYTHONPATH=$PWD python3 tools/run_seed.py [--no-ptx] [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import hashlib
import struct
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble  # noqa: E402
from bulkred_dialect.backend_ptx.runtime import (  # noqa: E402
    CompiledModule,
    NoGpuError,
    compile_tile_module,
    gpu,
    gpu_unavailable_reason,
    parse,
)

SEED = ROOT / "examples" / "seed_sum32.mlir"
N = 32

# The sm100_packed lowering, then legalized and lowered for sm_90a.
PACKED_ON_SM90 = (
    "lower-tile-reductions{target=sm_100a},legalize-for-target{target=sm_90a},"
    "lower-to-ptx{target=sm_90a},check-target{target=sm_90a}"
)


def compile_seed(target: str, pipeline: str | None = None) -> CompiledModule:
    module = parse(SEED.read_text(), str(SEED))
    return compile_tile_module(module, target, pipeline)


def kernel_code(cubin: bytes, kernel: str = "test_func") -> bytes:
    """The machine code of ``kernel``: the cubin's ``.text.<kernel>`` ELF64 section."""
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    for name_at, _, _, _, offset, size in headers:
        start = names + name_at
        if cubin[start : cubin.index(b"\0", start)] == f".text.{kernel}".encode():
            return cubin[offset : offset + size]
    raise ValueError(f"no .text.{kernel} section in the cubin")


# Every SASS instruction of sm_90 and sm_100 is 16 bytes.
SASS_BYTES = 16


def show(title: str, mod: CompiledModule, arch: str, print_ptx: bool) -> bytes | None:
    """Print the PTX and what nvJitLink made of it; the cubin, or None if rejected."""
    print(f"== {title}")
    if print_ptx:
        print(mod.ptx.rstrip())
    try:
        cubin = assemble(mod.ptx, arch)
    except PtxasError as e:
        print(f"-- nvJitLink rejected the PTX for {arch}:\n{e.log}")
        return None
    code = kernel_code(cubin)
    print(
        f"-- nvJitLink, {title}: {len(cubin)} bytes of cubin, {len(code) // SASS_BYTES} SASS instructions "
        f"(padding included), sha256 {hashlib.sha256(cubin).hexdigest()[:16]}"
    )
    return cubin


def compare(names: tuple[str, str], cubins: tuple[bytes, bytes]) -> None:
    """Say whether two cubins hold the same code. The two sm_90a seed kernels assemble
    to cubins of the same size but not the same code: ptxas unrolls the local
    variant's 31-step loop, so both kernels are 80 instruction slots of the same
    opcodes (32 LDG, 31 FADD, 10 NOP of padding, ...); 64 slots differ, in the order
    of the adds (a chain against pairs of columns) and in .FTZ, and the register
    counts differ (40 and 38)."""
    (a, b), (ca, cb) = names, cubins
    if ca == cb:
        print(f"-- {a} and {b}: identical code")
        return
    ka, kb = kernel_code(ca), kernel_code(cb)
    slots = range(0, min(len(ka), len(kb)), SASS_BYTES)
    differ = sum(ka[i : i + SASS_BYTES] != kb[i : i + SASS_BYTES] for i in slots)
    print(
        f"-- {a} and {b}: different code ({len(ka) // SASS_BYTES} and {len(kb) // SASS_BYTES} "
        f"SASS instructions, {differ} of them differ"
        + (", though the cubins have the same size)" if len(ca) == len(cb) else ")")
    )


def seed_inputs(rng: np.random.Generator, trial: int) -> np.ndarray:
    """Trial 0: standard normal values; trial 1: magnitudes spread over many binades;
    later trials: normal values with some subnormal ones mixed in (the packed sum
    flushes them, the local one keeps them)."""
    if trial == 0:
        a = rng.standard_normal(N)
    elif trial == 1:
        a = rng.standard_normal(N) * np.exp2(rng.integers(-20, 20, N))
    else:
        a = rng.standard_normal(N) * 1e-37
        sub = rng.integers(1, 1 << 23, N).astype(np.uint32).view(np.float32)
        a = np.where(rng.random(N) < 0.3, sub * np.sign(a), a)
    a = np.asarray(a, dtype=np.float32)
    a[a == 0] = np.float32(0.5)
    return a


def run_on_gpu(mods: dict[str, CompiledModule], trials: int, seed: int) -> bool:
    from bulkred_dialect import reference

    g = gpu()
    print(f"== running on {g.name} ({g.arch})")
    rng = np.random.default_rng(seed)
    ok = True
    for trial in range(trials):
        A = seed_inputs(rng, trial)
        want = {
            "local": reference.reduce_local("sum", A),
            "sm100_packed legalized": reference.reduce_sm100_packed("sum", A),
        }
        seq = A[0]
        for x in A[1:]:
            seq = np.float32(seq + x)
        if reference.bits(want["local"])[0] != np.array([seq]).view(np.uint32)[0]:
            print(f"   trial {trial}: reference.reduce_local differs from the float32 sequential sum")
            ok = False
        for name, mod in mods.items():
            B = np.full(1, np.nan, dtype=np.float32)  # poison
            (_, B_out) = mod.kernel("test_func")(A, B)
            same = reference.bits(B_out)[0] == reference.bits(want[name])[0]
            ok &= bool(same)
            print(
                f"   trial {trial} {name:24s} B = {B_out[0]!r:>24} (0x{int(reference.bits(B_out)[0]):08x}) "
                f"reference 0x{int(reference.bits(want[name])[0]):08x}: {'OK' if same else 'MISMATCH'}"
            )
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-ptx", action="store_true", help="do not print the PTX")
    ap.add_argument("--trials", type=int, default=4, help="random inputs per kernel (default 4)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: time based)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else time.time_ns() % (1 << 32)
    print(f"seed_sum32: {SEED.relative_to(ROOT)}, random seed {seed}")

    ok = True
    packed100 = compile_seed("sm_100a")
    ok &= show("sm_100a (sm100_packed)", packed100, "sm_100a", not args.no_ptx) is not None
    if "add.rn.ftz.f32x2" not in packed100.ptx:
        print("-- expected add.rn.ftz.f32x2 in the sm_100a PTX, not found")
        ok = False
    mods = {
        "local": compile_seed("sm_90a"),
        "sm100_packed legalized": compile_seed("sm_90a", PACKED_ON_SM90),
    }
    cubins: dict[str, bytes] = {}
    for name, mod in mods.items():
        cubin = show(f"sm_90a ({name})", mod, "sm_90a", not args.no_ptx)
        if cubin is None:
            ok = False
        else:
            cubins[name] = cubin
        if "f32x2" in mod.ptx:
            print(f"-- the sm_90a PTX ({name}) still holds an f32x2 instruction")
            ok = False
    if len(cubins) == 2:
        compare(tuple(cubins), tuple(cubins.values()))  # type: ignore[arg-type]
    if not ok:
        print("seed_sum32: FAILED (compilation)")
        return 1

    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"no GPU here ({reason}): compiled and assembled only, nothing run")
        return 0
    try:
        ok = run_on_gpu(mods, args.trials, seed)
    except NoGpuError as e:
        print(f"no GPU here ({e.reason}): compiled and assembled only, nothing run")
        return 0
    print("seed_sum32: all results equal the reference bit for bit" if ok else "seed_sum32: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
