"""A seeded, bounded mutation fuzzer for bulkred-opt: bad input must never reach a
Python traceback or an internal error, and the exit status must be 0 or 1; a mutant it
accepts must print (parse, verify, print) as text that parses back to the same module.

Seeds are the chunks (split at ``// -----``) of ``examples/*.mlir`` and the lit tests'
``.mlir`` files; each is run with the ``-p``/``-t`` of its file's first RUN line (with
``assemble=true`` dropped: assembling costs a child process per run). A mutant applies one
to three edits to a seed: a number replaced by an extreme (0, -1, 2**31, 2**63, ...), a
token replaced by another token of the corpus, a token or a line deleted, a line
duplicated, two lines swapped, an operand of a list dropped or repeated, a dimension of a
shaped type dropped or repeated. bulkred-opt runs in-process.

    python3 tests/mutation_fuzz.py [--count N] [--seed S]   # prints each failure
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import shlex
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bulkred_dialect import cli

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "examples").glob("*.mlir"), *(ROOT / "tests" / "filecheck").rglob("*.mlir")])

EXTREMES = ("0", "-1", "1", "3", "2147483647", "2147483648", "4294967296", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "18446744073709551616", "1000000")
_TOKEN = re.compile(r"%[\w.$]+|@[\w.$]+|#[\w.]+|![\w.]+|\"[^\"\n]*\"|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_][\w.]*|->|::|[^\s\w]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$")
_SPLIT = re.compile(r"(?m)^// -----[ \t\r]*$")
_LIST_ITEM = re.compile(r",\s*%[\w.$]+")
_DIM = re.compile(r"(?<=[<x])\d+x")

# Inputs the fuzzer found (issue 22, section 3), kept among the seeds by the lit chunks
# that hold them: (lit file, a line of the chunk, the exit status bulkred-opt must give
# with the file's -p/-t). Each used to end in an internal error or in code that
# addressed memory outside its buffer (tests/test_mutation.py checks them).
FINDS: tuple[tuple[str, str, int], ...] = (
    ("tests/filecheck/passes/lower_to_ptx_bool.mlir", "memref.store %t, %A[%c0] : memref<4xi1", 0),
    ("tests/filecheck/passes/lower_to_ptx_bool.mlir", "%x = memref.load %A[%i] : memref<4xi1", 0),
    ("tests/filecheck/tools/upstream_verifier_errors.mlir", "memref.subview %A[3, 0] [2, 16] [1, 1]", 1),
    ("tests/filecheck/tools/upstream_verifier_errors.mlir", "memref.subview %A[0, 0] [1, 4294967296]", 1),
    ("tests/filecheck/tools/upstream_verifier_errors.mlir", "to memref<3x16xf32, strided<[16, 1], offset: 16>", 1),
    ("tests/filecheck/tools/upstream_verifier_errors.mlir", "%x = memref.load %a[%c9] : memref<4xf32>", 1),
)


@dataclass(frozen=True)
class Seed:
    source: str  # file:chunk
    text: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Failure:
    mutant: str
    args: tuple[str, ...]
    status: int | str
    output: str
    edits: tuple[str, ...]

    def describe(self) -> str:
        return (
            f"exit {self.status} with {' '.join(shlex.quote(a) for a in self.args)} after "
            f"{'; '.join(self.edits)}:\n{self.output.strip()[-600:]}\n--- mutant ---\n{self.mutant}"
        )


def _args_of(text: str) -> tuple[str, ...]:
    """The -p/-t options of the first ``RUN:`` line that runs bulkred-opt on %s."""
    for line in text.splitlines():
        m = re.search(r"RUN:.*?bulkred-opt\s+(.*?)(?:\||2>|$)", line)
        if m is None or "%s" not in m.group(1):
            continue
        try:
            words = shlex.split(m.group(1))
        except ValueError:
            return ()
        out: list[str] = []
        for flag, value in zip(words, words[1:]):
            if flag in ("-p", "-t"):
                out += [flag, value.replace(",assemble=true", "").replace("{assemble=true}", "").replace("assemble=true,", "")]
        return tuple(out)
    return ()


def seeds() -> list[Seed]:
    out = []
    for path in SOURCES:
        text = path.read_text()
        args = _args_of(text)
        for i, chunk in enumerate(_SPLIT.split(text)):
            body = "\n".join(l for l in chunk.splitlines() if not l.lstrip().startswith("//"))
            if not body.strip():
                continue
            chunk_args = args
            if not chunk_args and "bulkred." in body:
                chunk_args = ("-p", "bulkred-to-ptx", "-t", "ptx")  # the whole pipeline
            elif not chunk_args and "ptx." in body:
                chunk_args = ("-t", "ptx")
            out.append(Seed(f"{path.relative_to(ROOT)}:{i}", body, chunk_args))
    return out


def mutate(text: str, rng: random.Random, vocabulary: list[str]) -> tuple[str, list[str]]:
    edits: list[str] = []
    for _ in range(rng.randint(1, 3)):
        lines = text.splitlines()
        kind = rng.choice(
            ("number", "number", "token", "token", "delete-token", "delete-line", "dup-line", "swap",
             "list", "list", "dims")
        )
        tokens = list(_TOKEN.finditer(text))
        if kind == "list":
            # one operand more or fewer in a list: `[%i, %j]` -> `[%i]` or `[%i, %j, %j]`
            items = list(_LIST_ITEM.finditer(text))
            if items:
                t = rng.choice(items)
                new = "" if rng.random() < 0.5 else t.group() + t.group()
                text = text[: t.start()] + new + text[t.end() :]
                edits.append(f"list item {t.group()!r} -> {new!r} at {t.start()}")
                continue
            kind = "token"
        if kind == "dims":
            # one dimension more or fewer in a shaped type: `4x8xf32` -> `8xf32` / `4x4x8xf32`
            dims = list(_DIM.finditer(text))
            if dims:
                t = rng.choice(dims)
                new = "" if rng.random() < 0.5 else t.group() * 2
                text = text[: t.start()] + new + text[t.end() :]
                edits.append(f"dimension {t.group()!r} -> {new!r} at {t.start()}")
                continue
            kind = "number"
        if kind == "number":
            nums = [t for t in tokens if _NUMBER.match(t.group())]
            if nums:
                t = rng.choice(nums)
                new = rng.choice(EXTREMES)
                text = text[: t.start()] + new + text[t.end() :]
                edits.append(f"{t.group()} -> {new} at {t.start()}")
                continue
            kind = "token"
        if kind in ("token", "delete-token") and tokens:
            t = rng.choice(tokens)
            new = rng.choice(vocabulary) if kind == "token" else ""
            text = text[: t.start()] + new + text[t.end() :]
            edits.append(f"{t.group()!r} -> {new!r} at {t.start()}")
        elif kind == "delete-line" and len(lines) > 1:
            i = rng.randrange(len(lines))
            edits.append(f"delete line {i + 1}")
            text = "\n".join(lines[:i] + lines[i + 1 :])
        elif kind == "dup-line" and lines:
            i = rng.randrange(len(lines))
            edits.append(f"duplicate line {i + 1}")
            text = "\n".join(lines[: i + 1] + lines[i:])
        elif kind == "swap" and len(lines) > 1:
            i, j = rng.sample(range(len(lines)), 2)
            lines[i], lines[j] = lines[j], lines[i]
            edits.append(f"swap lines {i + 1} and {j + 1}")
            text = "\n".join(lines)
    return text + "\n", edits


class _TimeOut(Exception):
    pass


def _write(path: Path, text: str) -> None:
    """``path.write_text(text)``, but writing over the old contents and cutting off what
    is left after them, not truncating the file to nothing first: ext4 starts writing a
    file that was truncated to nothing and written again to disk when it is closed
    (auto_da_alloc), and the next such write waits for that, up to 3 ms per mutant on a
    busy disk (a run itself takes about 4 ms)."""
    with open(path, "r+" if path.exists() else "w") as f:
        f.write(text)
        f.truncate()


def run_one(text: str, args: tuple[str, ...], path: Path, limit_s: float) -> tuple[int | str, str]:
    """bulkred-opt on ``text`` in-process: (exit status or 'timeout', stdout + stderr)."""
    _write(path, text)
    out, err = io.StringIO(), io.StringIO()

    def on_alarm(signum, frame):
        raise _TimeOut

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status: int | str = cli.main([str(path), *args])
    except _TimeOut:
        status = "timeout"
    except SystemExit as e:  # argparse
        status = e.code if isinstance(e.code, int) else 1
    except Exception as e:  # cli.main must report, never raise
        status = f"raised {type(e).__name__}"
        err.write("".join(traceback.format_exception(e)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return status, out.getvalue() + err.getvalue()


def is_failure(status: int | str, output: str) -> bool:
    return status not in (0, 1) or "Traceback" in output or "internal error" in output


def round_trip(text: str, path: Path, limit_s: float) -> tuple[int | str, str] | None:
    """None when ``text``, printed by bulkred-opt, parses back and prints the same; else
    the second run's (status, output), status "not the same" when it printed otherwise.
    Only mutants that bulkred-opt accepted come here (one in fifty or so), so the check
    costs two runs for those only."""
    status, printed = run_one(text, (), path, limit_s)
    if status != 0:
        return status, printed
    status, again = run_one(printed, (), path, limit_s)
    if status != 0:
        return status, again
    if again != printed:
        return "not the same", f"--- printed ---\n{printed}--- printed again ---\n{again}"
    return None


def fuzz(count: int, seed: int = 0, limit_s: float = 5.0) -> Iterator[Failure]:
    """Run ``count`` mutants; yield each failure."""
    rng = random.Random(seed)
    pool = seeds()
    vocabulary = sorted({t.group() for s in pool for t in _TOKEN.finditer(s.text)})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mutant.mlir"
        for _ in range(count):
            s = rng.choice(pool)
            text, edits = mutate(s.text, rng, vocabulary)
            status, output = run_one(text, s.args, path, limit_s)
            if is_failure(status, output):
                yield Failure(text, s.args, status, output, (s.source, *edits))
            elif status == 0 and (bad := round_trip(text, path, limit_s)) is not None:
                yield Failure(text, (), f"round trip: {bad[0]}", bad[1], (s.source, *edits))


def main(argv: list[str]) -> int:
    count = int(argv[argv.index("--count") + 1]) if "--count" in argv else 300
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 0
    start = time.monotonic()
    failures = list(fuzz(count, seed))
    for f in failures:
        print(f.describe(), end="\n\n")
    print(f"{count} mutants, {len(failures)} failures, {time.monotonic() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
