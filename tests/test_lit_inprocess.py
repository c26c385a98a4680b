"""The in-process lit format (tests/filecheck/lit_inprocess.py) must fail what lit's
ShTest fails and pass what it passes: a wrong CHECK line, a ``not`` of a success, a
failing command in the middle of a pipe (bulkred-opt's, plain xdsl-opt's), stderr
routing (``2>&1 >/dev/null``), files written with ``>`` and read with ``<``; and the
same results with real processes (``BULKRED_LIT_SUBPROCESS=1``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = (ROOT / "examples" / "seed_sum32.mlir").read_text()

CASES = {
    "pass_print.mlir": ("// RUN: bulkred-opt %s | filecheck %s\n// CHECK: func.func @test_func\n", True),
    "fail_check.mlir": ("// RUN: bulkred-opt %s | filecheck %s\n// CHECK: func.func @no_such_kernel\n", False),
    "fail_not.mlir": ("// RUN: not bulkred-opt %s | filecheck %s --allow-empty\n// CHECK-NOT: nothing\n", False),
    "fail_middle.mlir": (
        "// RUN: bulkred-opt %s -p no-such-pass | filecheck %s --allow-empty\n// CHECK-NOT: nothing\n",
        False,
    ),
    "pass_stderr.mlir": (
        "// RUN: not bulkred-opt %s -p 'check-target{target=sm_10}' 2>&1 >/dev/null | filecheck %s\n"
        "// CHECK: error:\n// CHECK-NOT: func.func\n",
        True,
    ),
    "fail_stdout_dropped.mlir": (
        "// RUN: bulkred-opt %s 2>&1 >/dev/null | filecheck %s\n// CHECK: func.func\n",
        False,
    ),
    "pass_mixed.mlir": (
        "// RUN: sed -n 's|^// IN: ||p' %s > %t.in.mlir\n"
        "// RUN: bulkred-opt %t.in.mlir | filecheck %s --check-prefix=MIXED\n"
        "// IN: func.func @from_sed() {\n// IN:   func.return\n// IN: }\n// MIXED: func.func @from_sed\n",
        True,
    ),
    "fail_xdsl_opt.mlir": (  # plain xdsl-opt (in-process too): its error, a traceback, is exit status 1
        "// RUN: xdsl-opt %s -p no-such-pass | filecheck %s --allow-empty\n// CHECK-NOT: nothing\n",
        False,
    ),
    "fail_shell_line.mlir": ("// RUN: printf 'x' | grep -q y\n// RUN: bulkred-opt %s | filecheck %s\n// CHECK: func.func\n", False),
    "pass_files.mlir": (  # printed back, not lowered: the files are the point (a lowering took 0.3 CPU-s a process)
        "// RUN: bulkred-opt %s > %t.out.mlir\n"
        "// RUN: filecheck %s < %t.out.mlir\n// CHECK: func.func @test_func\n",
        True,
    ),
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("lit")
    shutil.copy(ROOT / "tests" / "filecheck" / "lit.cfg.py", d / "lit.cfg.py")
    shutil.copy(ROOT / "tests" / "filecheck" / "lit_inprocess.py", d / "lit_inprocess.py")
    for name, (head, _) in CASES.items():
        (d / name).write_text(head + SEED)
    return d


def _lit(suite: Path, subprocess_mode: bool) -> dict[str, str]:
    env = {**os.environ, "BULKRED_LIT_SUBPROCESS": "1" if subprocess_mode else "0"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # one lit worker: the nine small tests need no second process importing bulkred
    # (the suite runs beside the others on every CPU)
    r = subprocess.run(
        [str(Path(sys.executable).parent / "lit"), "-v", "-j1", str(suite)], capture_output=True, text=True, env=env, timeout=300
    )
    results = {}
    for line in r.stdout.splitlines():
        for status in ("PASS", "FAIL"):
            if line.startswith(f"{status}: "):
                results[line.rsplit(" :: ", 1)[1].split(" ")[0]] = status
    return results


@pytest.mark.parametrize("subprocess_mode", [False, True], ids=["in-process", "subprocess"])
def test_lit_format_passes_and_fails_like_the_shell(suite, subprocess_mode):
    got = _lit(suite, subprocess_mode)
    want = {name: "PASS" if ok else "FAIL" for name, (_, ok) in CASES.items()}
    assert got == want
