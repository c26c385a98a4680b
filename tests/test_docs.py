"""Every command shown in the README and docs/lowering.md runs, and the README's
set-up block names the main job and the test command."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _sh_blocks(path: Path) -> list[str]:
    text = path.read_text()
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def _bulkred_opt_commands(path: Path) -> list[str]:
    cmds = []
    for block in _sh_blocks(path):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("bulkred-opt "):
                cmds.append(line)
    return cmds


def test_readme_opens_with_the_two_commands():
    first = _sh_blocks(ROOT / "README.md")[0].splitlines()
    assert "tools/run_seed.py" in first[0]
    assert first[1].startswith("bash tools/test.sh")
    assert "tools/test.sh" in (ROOT / ".ci" / "run").read_text()


README_COMMANDS = _bulkred_opt_commands(ROOT / "README.md")


def test_readme_has_commands():
    assert len(README_COMMANDS) >= 4


@pytest.mark.parametrize("cmd", README_COMMANDS)
def test_readme_command_runs(cmd):
    argv = [sys.executable, "-m", "bulkred_dialect.cli", *shlex.split(cmd)[1:]]
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
    assert "Traceback" not in r.stderr


def test_readme_python_example_runs_and_interprets():
    import numpy as np

    from bulkred_dialect.interpreter import run_kernel
    from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass
    from bulkred_dialect.builder import context
    from bulkred_dialect.reference import reduce_sm100_packed

    block = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[0]
    scope: dict = {}
    exec(block, scope)
    module = scope["module"]
    LowerTileReductionsPass().apply(context(), module)
    a = np.random.default_rng(7).standard_normal(32).astype(np.float32)
    b = np.full(1, np.nan, np.float32)
    run_kernel(module, "test_func", a, b)
    assert b.view(np.uint32)[0] == np.float32(reduce_sm100_packed("sum", a)).view(np.uint32)


@pytest.mark.gpu
def test_runtime_doc_example_runs_on_the_gpu():
    """docs/runtime.md's launching example, run as written, gives the local variant's sum."""
    import numpy as np

    from bulkred_dialect.reference import reduce_local

    block = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "runtime.md").read_text(), flags=re.S)[0]
    scope: dict = {}
    old = Path.cwd()
    try:
        import os

        os.chdir(ROOT)
        exec(block, scope)
    finally:
        os.chdir(old)
    A, B_out = scope["A"], scope["B_out"]
    want = np.asarray(reduce_local("sum", A)).reshape(-1)[:1].astype(np.float32)
    assert B_out.view(np.uint32)[0] == want.view(np.uint32)[0]
