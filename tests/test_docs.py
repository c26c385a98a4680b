"""Every bulkred-opt command in a ```sh block of the README and docs/*.md runs, the
README's Python blocks run and interpret the seed, and the README's set-up block names
the main job and the test command."""

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
    """The lines of ``path``'s sh blocks that run bulkred-opt (alone or at the end of a pipe)."""
    cmds = []
    for block in _sh_blocks(path):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("bulkred-opt ") or "| bulkred-opt" in line:
                cmds.append(line)
    return cmds


def _run_doc_command(cmd: str) -> subprocess.CompletedProcess:
    """Run ``cmd`` from the repository root: a pipe of ``bulkred-opt`` stages inside this
    process (with the runner lit uses, tests/filecheck/lit_inprocess.py), after a first
    ``python3 <file or -c code>`` stage run in this process too (:func:`_run_python`:
    a Python start and its imports cost about 0.45 CPU-s), anything else in a shell with
    ``bulkred-opt`` as ``python -m bulkred_dialect.cli`` and ``python3`` as
    ``sys.executable``."""
    stages = [shlex.split(stage) for stage in cmd.split(" | ")]
    if all(argv[0] == "bulkred-opt" for argv in stages):
        return _run_in_process(cmd)
    if stages[0][0] == "python3" and len(stages) > 1 and all(argv[0] == "bulkred-opt" for argv in stages[1:]):
        first = _run_python(stages[0][1:])
        rest = _run_in_process(cmd.split(" | ", 1)[1], first.stdout.encode())
        return subprocess.CompletedProcess(cmd, first.returncode or rest.returncode, rest.stdout, first.stderr + rest.stderr)
    opt = [sys.executable, "-m", "bulkred_dialect.cli"]
    shell = []
    for argv in stages:
        if argv[0] == "bulkred-opt":
            argv = [*opt, *argv[1:]]
        elif argv[0] == "python3":
            argv = [sys.executable, *argv[1:]]
        shell.append(shlex.join(argv))
    return subprocess.run(" | ".join(shell), shell=True, cwd=ROOT, capture_output=True, text=True, timeout=120)


def _run_python(args: list[str]) -> subprocess.CompletedProcess:
    """``python3 <args>`` (a script and its arguments, or ``-c code``) in this process,
    from the repository root, as ``__main__`` with ``sys.argv`` set: its stdout, its exit
    status (``SystemExit``'s; 1 and the traceback on stderr for an exception)."""
    import contextlib
    import io
    import os
    import runpy
    import traceback

    out, err, rc = io.StringIO(), io.StringIO(), 0
    argv, cwd = sys.argv, os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if args[0] == "-c":
                    sys.argv = ["-c", *args[2:]]
                    exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
                else:
                    sys.argv = list(args)
                    runpy.run_path(args[0], run_name="__main__")
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                err.write(traceback.format_exc())
                rc = 1
    finally:
        sys.argv = argv
        os.chdir(cwd)
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


def _run_in_process(cmd: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    import os

    sys.path.insert(0, str(ROOT / "tests" / "filecheck"))
    try:
        from lit_inprocess import _plan, _run_tool
    finally:
        sys.path.pop(0)
    steps = _plan(cmd)
    assert steps is not None, cmd
    data, errors, rc = stdin, [], 0
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for step in steps:
            code, written = _run_tool(step, data)
            rc = code or rc  # pipefail
            errors.append(written.get("log", ""))
            data = written.get("pipe", "").encode()
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(cmd, rc, data.decode(), "".join(errors))


def test_readme_opens_with_the_two_commands():
    first = _sh_blocks(ROOT / "README.md")[0].splitlines()
    assert "tools/run_seed.py" in first[0]
    assert first[1].startswith("bash tools/test.sh")
    assert "tools/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_two_commands_share_one_environment():
    """The main job runs with .venv's python once tools/setup.sh made it; tools/test.sh
    goes through the same script, so nothing is installed twice or into the system."""
    main_job = _sh_blocks(ROOT / "README.md")[0].splitlines()[0].split("  #", 1)[0].strip()
    assert main_job == "bash tools/setup.sh && .venv/bin/python tools/run_seed.py"
    test_sh = (ROOT / "tools" / "test.sh").read_text()
    assert "bash tools/setup.sh" in test_sh and "pip install" not in test_sh
    setup = (ROOT / "tools" / "setup.sh").read_text()
    assert 'VENV=.venv' in setup and "-m venv" in setup


def _user_docs() -> list[Path]:
    tools = [p for p in sorted((ROOT / "tools").rglob("*")) if p.suffix in (".sh", ".py", ".md")]  # probes/ too
    package = sorted((ROOT / "bulkred_dialect").rglob("*.py"))  # docstrings users read
    examples = sorted(p for p in (ROOT / "examples").iterdir() if p.is_file())
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *tools, *sorted((ROOT / "benchmarks").glob("*.py")), *package, *examples]


def test_the_doc_list_covers_readme_docs_and_tools():
    names = {p.name for p in _user_docs()}
    assert {"README.md", "DEVELOPING.md", "builder.md", "compile_speed.md", "setup.sh", "test.sh"} <= names


def test_docs_link_only_inside_the_repo():
    """../shared is beside our checkout, not in a clone: a doc points at the public PTX ISA
    (by section) or at files in the repository instead. (Every user doc in one test: a
    test each cost the run more than the check, some 200 of them.)"""
    docs = _user_docs()
    assert len(docs) > 150
    found = []
    for path in docs:
        text = path.read_text()
        found += [f"{path.relative_to(ROOT)} mentions {bad}" for bad in ("../shared", "/work/shared", "shared/spec/", "shared/tools/") if bad in text]
    assert not found, "\n".join(found)


README_COMMANDS = _bulkred_opt_commands(ROOT / "README.md")
DOC_COMMANDS = [
    (f"{path.name}:{i}", cmd)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for i, cmd in enumerate(_bulkred_opt_commands(path))
]


def test_readme_has_commands():
    assert len(README_COMMANDS) >= 4


def test_every_doc_with_commands_is_collected():
    """lowering.md's commands and builder.md's pipe are among those run below."""
    names = {name.split(":")[0] for name, _ in DOC_COMMANDS}
    assert {"README.md", "lowering.md", "builder.md"} <= names
    assert any("| bulkred-opt" in cmd for _, cmd in DOC_COMMANDS)


@pytest.mark.parametrize("cmd", [c for _, c in DOC_COMMANDS], ids=[n for n, _ in DOC_COMMANDS])
def test_doc_command_runs(cmd):
    r = _run_doc_command(cmd)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
    assert "Traceback" not in r.stderr


def test_doc_command_runner_can_fail():
    r = _run_doc_command("bulkred-opt examples/seed_sum32.mlir -p no-such-pass")
    assert r.returncode == 1 and "unknown pass 'no-such-pass'" in r.stderr
    r = _run_doc_command("python3 -c 'print(1)' | bulkred-opt")
    assert r.returncode == 1 and "error:" in r.stderr
    r = _run_doc_command("python3 -c 'raise ValueError(7)' | bulkred-opt")  # the first stage's failure
    assert r.returncode == 1 and "Traceback" in r.stderr and "ValueError: 7" in r.stderr
    r = _run_doc_command("bulkred-opt examples/seed_sum32.mlir | bulkred-opt -p no-such-pass")
    assert r.returncode == 1 and "unknown pass 'no-such-pass'" in r.stderr and r.stdout == ""
    r = _run_doc_command("bulkred-opt examples/no_such_file.mlir | bulkred-opt")
    assert r.returncode == 1 and "no_such_file.mlir" in r.stderr


def test_readme_python_examples_run_and_interpret(capsys):
    """Both README blocks run as written (build, lower to level 2, interpret), and the
    lowered module interprets a random input bit-exactly like the reference."""
    import numpy as np

    from bulkred_dialect.interpreter import run_kernel
    from bulkred_dialect.reference import reduce_sm100_packed

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 2
    scope: dict = {}
    exec(blocks[0] + blocks[1], scope)
    assert capsys.readouterr().out == "[496.]\n"
    a32 = np.arange(32, dtype=np.float32)
    assert scope["B"].view(np.uint32)[0] == np.float32(reduce_sm100_packed("sum", a32)).view(np.uint32)
    module = scope["module"]  # lowered in place by the second block
    a = np.random.default_rng(7).standard_normal(32).astype(np.float32)
    b = np.full(1, np.nan, np.float32)
    run_kernel(module, "test_func", a, b)
    assert b.view(np.uint32)[0] == np.float32(reduce_sm100_packed("sum", a)).view(np.uint32)


@pytest.mark.gpu
def test_runtime_doc_example_runs_on_the_gpu():
    """docs/runtime.md's examples (the reduction API, device arrays, then numpy arrays),
    run as written in one scope: the numpy launch gives the local variant's sum."""
    import numpy as np

    from bulkred_dialect.reference import reduce_local

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "runtime.md").read_text(), flags=re.S)
    scope: dict = {}
    old = Path.cwd()
    try:
        import os

        os.chdir(ROOT)
        for block in blocks:
            exec(block, scope)
    finally:
        os.chdir(old)
    A, B_out = scope["A"], scope["B_out"]
    want = np.asarray(reduce_local("sum", A)).reshape(-1)[:1].astype(np.float32)
    assert B_out.view(np.uint32)[0] == want.view(np.uint32)[0]


def test_runtime_doc_errors_example_runs(capsys):
    """docs/runtime.md's "Errors" example runs without a GPU and prints what it says."""
    import os

    section = (ROOT / "docs" / "runtime.md").read_text().split("## Errors", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    old = Path.cwd()
    try:
        os.chdir(ROOT)
        exec(compile(block, "docs/runtime.md", "exec"), {})
    finally:
        os.chdir(old)
    first, second = capsys.readouterr().out.splitlines()
    assert first == "bad.mlir:1:6: error: Operation this is not registered"
    assert second == "'target' must look like sm_90, sm_90a or sm_100a, got 'hopper'"


def test_scopes_doc_python_example_runs(capsys):
    """docs/scopes.md's builder example lowers and assembles the 1 GiB column sum."""
    (block,) = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "scopes.md").read_text(), flags=re.S)
    exec(compile(block, "docs/scopes.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("['colsum']") and "bytes of cubin" in out


@pytest.mark.parametrize("name", ["warp_sum", "cta_max", "cluster_sum", "full_sum", "rowsum", "colsum_1gib"])
def test_scope_examples_choose_what_the_doc_says(name):
    """The variant docs/scopes.md names for each example is the one the dispatch picks."""
    want = {
        "warp_sum": "warp_redux", "cta_max": "cta_shared", "cluster_sum": "cluster_red_async",
        "full_sum": "grid_full", "rowsum": "grid_rows", "colsum_1gib": "grid_split_bulk",
    }[name]
    r = _run_doc_command(f"bulkred-opt examples/{name}.mlir -p 'lower-tile-reductions{{target=sm_90a explain=true}}'")
    assert r.returncode == 0, r.stderr
    assert f"// chosen: {want}\n" in r.stdout
    assert want in (ROOT / "docs" / "scopes.md").read_text()
