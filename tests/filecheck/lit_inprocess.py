"""A lit test format that runs ``bulkred-opt`` and ``filecheck`` inside lit's worker
process instead of starting a Python interpreter for each (about 0.5 s of imports per
RUN line, most of the suite's time).

A RUN line that is a pipeline of ``bulkred-opt``, ``xdsl-opt``, ``filecheck`` and ``not``
(redirections ``2>&1``, ``>``, ``2>`` and ``<``, applied left to right as a shell
does) runs in-process: each command's stdin, stdout and stderr are in-memory streams,
its exit status is what ``bulkred_dialect.cli.main`` returns (or ``SystemExit``
carries), and the environment is the test's (``config.environment``) for the duration.
Plain ``xdsl-opt`` runs as its console script does (``xDSLOptMain().run()``, with the
DeprecationWarning filter its ``main`` sets, here for the run only), finding our
dialects and passes through the same ``xdsl.universe`` entry point; an exception it
raises is exit status 1 and its traceback on stderr, as the process gives.
Any other RUN line (``printf``, ``sed``, ``python3``, ...) runs in bash
(``-o pipefail``) in the test's environment and directory, in order with the others.
A test with no in-process line at all, and every test when ``BULKRED_LIT_SUBPROCESS=1``
is set, runs through lit's own ``ShTest`` unchanged (real processes, e.g. to check the
installed console script).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass

import lit.formats
import lit.Test
import lit.TestRunner
from lit.ShUtil import Command, Pipeline, ShParser

TOOLS = ("bulkred-opt", "xdsl-opt", "filecheck")


@dataclass
class _Step:
    argv: list[str]
    nots: int
    stdin: str | None  # a file (``< path``), else the pipe
    out: object  # where stdout goes: "pipe", "log" or ("file", path)
    err: object  # where stderr goes, likewise


def _redirect(redirects) -> tuple[str | None, object, object] | None:
    """Apply ``redirects`` left to right as a shell does (``2>&1``, ``>``, ``2>``,
    ``<``); None for anything else (appending, other descriptors)."""
    stdin, fd = None, {1: "pipe", 2: "log"}
    for (op, *num), target in redirects:
        n = num[0] if num else None
        if op == ">&" and n == 2 and target == "1":
            fd[2] = fd[1]
        elif op == ">" and n in (None, 1, 2):
            fd[n or 1] = ("file", target)
        elif op == "<" and n is None:
            stdin = target
        else:
            return None
    return stdin, fd[1], fd[2]


def _plan(line: str) -> list[_Step] | None:
    """The steps of one RUN line, or None when it is not a plain pipeline of the tools."""
    try:
        parsed = ShParser(line, win32Escapes=False, pipefail=True).parse()
    except Exception:
        return None
    if not isinstance(parsed, Pipeline) or parsed.negate:
        return None
    steps = []
    for cmd in parsed.commands:
        if not isinstance(cmd, Command) or not all(isinstance(a, str) for a in cmd.args):
            return None
        args, nots = list(cmd.args), 0
        while args and args[0] == "not":
            args, nots = args[1:], nots + 1
        if not args or args[0] not in TOOLS:
            return None
        redirected = _redirect(cmd.redirects)
        if redirected is None:
            return None
        steps.append(_Step(args, nots, *redirected))
    return steps


def _run_tool(step: _Step, stdin: bytes) -> tuple[int, dict]:
    """Exit status of one tool run in this process, and what it wrote to each target."""
    sinks: dict = {}
    out = sinks.setdefault(step.out, io.StringIO())
    err = sinks.setdefault(step.err, io.StringIO())
    if step.stdin is not None:
        with open(step.stdin, "rb") as f:
            stdin = f.read()
    argv = step.argv
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr, sys.argv = out, err, list(argv)
    try:
        if argv[0] == "bulkred-opt":
            from bulkred_dialect.cli import main

            rc = main(argv[1:])
        elif argv[0] == "xdsl-opt":
            rc = _xdsl_opt(err)
        else:
            from filecheck.main import main

            main(list(argv))  # it consumes its argument list
            rc = 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # a crash of the tool: the test fails with its traceback
        err.write(traceback.format_exc())
        rc = 134
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
    return int(rc or 0), {k: v.getvalue() for k, v in sinks.items()}


def _xdsl_opt(err: io.StringIO) -> int:
    """``xdsl-opt`` on ``sys.argv`` (its console script, xdsl.tools.xdsl_opt.main, in
    this process): 1 and the traceback for an exception, as Python's exit gives."""
    import warnings

    from xdsl.xdsl_opt_main import xDSLOptMain

    with warnings.catch_warnings():
        warnings.filterwarnings("default", category=DeprecationWarning)
        try:
            xDSLOptMain().run()
        except SystemExit:
            raise
        except Exception:
            err.write(traceback.format_exc())
            return 1
    return 0


def _run_line(steps: list[_Step]) -> tuple[int, str]:
    """Run one pipeline (pipefail); return its status and a log like lit's."""
    data, log, status = b"", [], 0
    for step in steps:
        rc, written = _run_tool(step, data)
        for _ in range(step.nots):
            rc = 0 if rc != 0 else 1
        for target, text in written.items():
            if isinstance(target, tuple) and target[1] != "/dev/null":
                with open(target[1], "w", encoding="utf-8") as f:
                    f.write(text)
        if written.get("log"):
            log.append(f"# .---stderr of {step.argv[0]}\n{written['log']}")
        if rc:
            status = rc
            log.append(f"# error: {step.argv[0]} exited with status {rc}\n")
        data = written.get("pipe", "").encode()
    if data:
        log.append(f"# .---stdout of the last command\n{data.decode()}")
    return status, "".join(log)


def _run_shell(cmd: str, env: dict) -> tuple[int, str]:
    """A RUN line that is not a pipeline of the tools (``printf``, ``sed``, ``python3``,
    ``xdsl-opt``, ...): bash with pipefail, in the test's environment and directory."""
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], env=env, capture_output=True, text=True, timeout=600)
    log = ""
    if r.stdout:
        log += f"# .---stdout\n{r.stdout}"
    if r.stderr:
        log += f"# .---stderr\n{r.stderr}"
    if r.returncode:
        log += f"# error: exited with status {r.returncode}\n"
    return r.returncode, log


class InProcessShTest(lit.formats.ShTest):
    def __init__(self) -> None:
        super().__init__(execute_external=False)
        if os.environ.get("BULKRED_LIT_SUBPROCESS") == "1":
            return  # every RUN line a real process: nothing of ours runs in lit's
        # imported once here, in lit's main process: its workers fork from it
        import bulkred_dialect.cli  # noqa: F401
        import bulkred_dialect.pipeline  # noqa: F401
        import filecheck.main  # noqa: F401

    def execute(self, test, litConfig):
        if os.environ.get("BULKRED_LIT_SUBPROCESS") == "1" or test.config.unsupported:
            return super().execute(test, litConfig)
        parsed = lit.TestRunner.parseIntegratedTestScript(test)
        if isinstance(parsed, lit.Test.Result):
            return parsed
        tmp_dir, tmp_base = lit.TestRunner.getTempPaths(test)
        script = lit.TestRunner.applySubstitutions(
            parsed,
            lit.TestRunner.getDefaultSubstitutions(test, tmp_dir, tmp_base),
            {feature: True for feature in test.config.available_features},
            recursion_limit=test.config.recursiveExpansionLimit,
        )
        lines = []
        for ln in script:
            m = re.fullmatch(lit.TestRunner.kPdbgRegex, ln)
            lines.append((m.group(1), m.group(2).strip()) if m else ("RUN", ln))
        plans = [_plan(cmd) for _, cmd in lines]
        if all(p is None for p in plans):
            return super().execute(test, litConfig)
        os.makedirs(os.path.dirname(tmp_base), exist_ok=True)  # as lit's ShTest does for %t
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        os.environ.clear()
        os.environ.update(test.config.environment)
        os.chdir(os.path.dirname(test.getExecPath()))
        log = []
        try:
            for (where, cmd), steps in zip(lines, plans):
                status, out = _run_line(steps) if steps is not None else _run_shell(cmd, test.config.environment)
                log.append(f"# {where}\n{cmd}\n{out}")
                if status:
                    return lit.Test.Result(lit.Test.FAIL, f"Exit Code: {status}\n\n" + "\n".join(log))
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return lit.Test.Result(lit.Test.PASS, "\n".join(log))
