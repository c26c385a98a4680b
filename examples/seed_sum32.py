"""The TIRx reduction card's demonstration program, built with the Python builder.

One thread of one CTA sums a 32-element float32 vector A into B[0] (the card's
``test_func``). The script prints the module and checks that it is the same IR as
``examples/seed_sum32.mlir``::

    python3 examples/seed_sum32.py                       # print the module
    python3 examples/seed_sum32.py --target sm_100a      # with bulkred.target = "sm_100a"
    python3 examples/seed_sum32.py | bulkred-opt         # the text parses and verifies
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from bulkred_dialect import builder as T
from bulkred_dialect.diagnostics import parse_module

SEED_MLIR = Path(__file__).with_name("seed_sum32.mlir")


def build(target: str | None = None) -> ModuleOp:
    """The card's program: copy A to registers, Tx.sum into B_local, copy B_local to B."""
    with T.kernel("test_func", grid=[1], block=[1], cluster=[1]) as k:  # T.cta_id([1]); T.thread_id([1])
        A = k.param("A", [32], "float32")  # T.match_buffer(A_ptr, [32], "float32")
        B = k.param("B", [1], "float32")
        A_local = T.alloc_buffer([32], "float32", scope="local", name="A_local")
        B_local = T.alloc_buffer([1], "float32", scope="local", name="B_local")
        T.copy(A, A_local)  # for i in T.serial(32): A_local[i] = A[i]
        T.sum(B_local, A_local, accum=False)  # Tx.sum(B_local, A_local, accum=False)
        T.copy(B_local, B)  # B[0] = B_local[0]
    return k.module(target=target)


def parse_seed() -> ModuleOp:
    """``examples/seed_sum32.mlir``, parsed and verified."""
    return parse_module(T.context(), SEED_MLIR.read_text(), str(SEED_MLIR))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=None, help="set bulkred.target on the module, e.g. sm_100a")
    args = ap.parse_args()

    built = build()
    seed = parse_seed()
    assert built.is_structurally_equivalent(seed), "the built module differs from examples/seed_sum32.mlir"
    assert str(built) == str(seed), "the built module prints differently from examples/seed_sum32.mlir"
    try:
        print(build(args.target) if args.target else built)
    except ValueError as e:
        print(f"seed_sum32.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
