#!/usr/bin/env python3
"""The diagnostics worth keeping, one subcommand each: the probes of ``tools/probes/``,
most of them run on the GPU machine (``bash tools/gpu.sh probe:NAME`` runs one there and
keeps its log; ``var_emulation`` is numpy only). Each measures one question that the benchmarks do not (where a call's host time
goes, which launch settings or variant serve a case best); docs/benchmarks.md records
their answers.

    python3 tools/diag.py                  # the probes, one line each
    python3 tools/diag.py NAME [ARGS...]   # run one (ARGS: its own options; NAME --help)
"""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "tools" / "probes"


def probes() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PROBES.glob("*.py"))}


def summary(path: Path) -> str:
    """The head of a probe's docstring (up to its first colon or full stop), on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    head = text.split(": ")[0].split(". ")[0].rstrip(".")
    if head.count("(") > head.count(")"):  # cut inside a parenthesis: drop its start
        head = head[: head.rindex("(")].rstrip()
    return head


def main(argv: list[str]) -> int:
    found = probes()
    if not argv or argv[0] in ("-h", "--help"):
        print("python3 tools/diag.py NAME [ARGS...], NAME one of:")
        for name, path in found.items():
            print(f"  {name:14s} {summary(path)}")
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    if name not in found:
        print(f"diag.py: no probe '{name}' (one of {', '.join(found)})", file=sys.stderr)
        return 2
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]
    sys.argv = [str(found[name]), *args]
    try:
        runpy.run_path(str(found[name]), run_name="__main__")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
