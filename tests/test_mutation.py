"""Mutation test: a few hundred seeded mutants of the example and lit inputs through
bulkred-opt in-process; none may end in a traceback, an internal error, or an exit status
other than 0 or 1, and one that is accepted must print as text that parses back to the
same module (tests/mutation_fuzz.py; run it alone for more mutants)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import mutation_fuzz as mf
from bulkred_dialect import cli

COUNT = 500
SEED = 1


def test_mutants_never_reach_a_traceback():
    failures = list(mf.fuzz(COUNT, SEED))
    assert not failures, f"{len(failures)} of {COUNT} mutants failed:\n\n" + "\n\n".join(
        f.describe() for f in failures[:5]
    )


def test_seeds_cover_the_examples_and_every_pipeline_stage():
    seeds = mf.seeds()
    assert any(s.source.startswith("examples/") for s in seeds)
    stages = {a for s in seeds for a in s.args}
    for stage in ("bulkred-to-ptx", "lower-to-ptx", "lower-bulk-ops", "ptx"):
        assert any(stage in a for a in stages), stage
    assert not any("assemble=true" in a for a in stages)


def test_seeds_hold_the_fuzz_finds():
    """Each input of mf.FINDS is a seed and gives its exit status: 0 (the i1 loads and
    stores), or 1 with one located error, never an internal error."""
    seeds = mf.seeds()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "find.mlir"
        for source, line, want in mf.FINDS:
            (seed,) = [s for s in seeds if s.source.startswith(source + ":") and line in s.text]
            status, output = mf.run_one(seed.text, seed.args, path, 5.0)
            assert status == want and not mf.is_failure(status, output), (seed.source, status, output)
            if want == 1:
                assert output.startswith(f"{path}:") and ": error: '" in output, output


def test_mutations_are_seeded_and_change_the_input():
    (s, *_) = mf.seeds()
    vocab = ["%x", "0", "func.func"]
    a = mf.mutate(s.text, random.Random(7), vocab)
    assert a == mf.mutate(s.text, random.Random(7), vocab)
    texts = {mf.mutate(s.text, random.Random(i), vocab)[0] for i in range(20)}
    assert len(texts) > 10 and s.text + "\n" not in texts


def test_the_fuzzer_reports_an_internal_error_and_a_bad_exit(monkeypatch, capsys):
    """The check can fail: a cli.main that reports an internal error (or crashes) on some
    inputs makes fuzz() yield failures."""
    real = cli.main

    def flaky(args):
        text = open(args[0]).read()
        if "func.func" in text and len(text) % 3 == 0:
            print("bulkred-opt: internal error: KeyError: 'x'")
            return 2
        if len(text) % 3 == 1:
            raise IndexError("list index out of range")
        return real(args)

    monkeypatch.setattr(mf.cli, "main", flaky)
    failures = list(mf.fuzz(30, SEED))
    assert failures
    assert any(f.status == 2 and "internal error" in f.output for f in failures)
    assert any(f.status == "raised IndexError" and "Traceback" in f.output for f in failures)


def test_the_fuzzer_reports_output_that_does_not_parse_back(monkeypatch):
    """The round-trip check can fail: a bulkred-opt that accepts every mutant but prints
    a module that reads back differently (as xDSL 0.74's printer did for
    scf.execute_region, dropping its terminator) makes fuzz() yield failures."""

    def lossy(args):
        with open(args[0]) as f:
            printed_before = "// printed by lossy" in f.read()
        print("builtin.module {\n}" if printed_before else "// printed by lossy\nbuiltin.module {\n}")
        return 0

    monkeypatch.setattr(mf.cli, "main", lossy)
    failures = list(mf.fuzz(5, SEED))
    assert len(failures) == 5
    assert all(f.status == "round trip: not the same" and "printed again" in f.output for f in failures)


def test_round_trip():
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.mlir"
        ok = "func.func @f() {\n  scf.execute_region {\n    scf.yield\n  }\n  func.return\n}\n"
        assert mf.round_trip(ok, path, 5.0) is None
        assert mf.round_trip("func.func @f(", path, 5.0)[0] == 1


def test_is_failure():
    assert not mf.is_failure(0, "ok")
    assert not mf.is_failure(1, "x.mlir:1:1: error: bad")
    assert mf.is_failure(2, "")
    assert mf.is_failure("timeout", "")
    assert mf.is_failure(1, "Traceback (most recent call last):")
    assert mf.is_failure(1, "bulkred-opt: internal error: Exception: boom")
