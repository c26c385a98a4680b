"""The compile cache (backend_ptx/cache.py), without a GPU: keys, hits and misses in
memory and on disk, corrupt entries detected and rebuilt, BULKRED_CACHE=0, a second
process that pays no compile, and two processes filling the same entry at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bulkred_dialect.backend_ptx import cache, runtime
from bulkred_dialect.backend_ptx.cache import CompileCache, decode_entry, encode_entry, make_key

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "examples" / "seed_sum32.mlir"


@pytest.fixture
def fresh(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("BULKRED_CACHE_DIR", str(d))
    monkeypatch.delenv("BULKRED_CACHE", raising=False)
    cache.CACHE.clear_memory()  # entries of earlier tests are not in this directory
    return d


# region Keys and entries


def test_key_covers_every_part_and_the_versions(monkeypatch):
    base = make_key({"text": "m", "target": "sm_90a"})
    assert make_key({"target": "sm_90a", "text": "m"}) == base
    assert make_key({"text": "m2", "target": "sm_90a"}) != base
    assert make_key({"text": "m", "target": "sm_100a"}) != base
    for name in ("bulkred", "xdsl", "nvJitLink", "cuda-bindings"):
        assert name in cache.versions()
        changed = {**cache.versions(), name: "other"}
        monkeypatch.setattr(cache, "versions", lambda changed=changed: changed)
        assert make_key({"text": "m", "target": "sm_90a"}) != base, name
        monkeypatch.undo()


def test_entry_round_trip_and_damage_is_detected():
    payload = b"\x00cubin\nbytes" * 50
    data = encode_entry(payload)
    assert decode_entry(data) == payload
    assert decode_entry(data[:-1]) is None  # truncated payload
    assert decode_entry(data[:10]) is None  # truncated header
    assert decode_entry(b"") is None
    for pos in (0, 20, len(data) - 1, len(data) // 2):
        flipped = bytearray(data)
        flipped[pos] ^= 0x40
        assert decode_entry(bytes(flipped)) is None, pos
    assert decode_entry(data + b"x") is None


def test_cache_dir_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("BULKRED_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "bulkred"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "bulkred"
    monkeypatch.setenv("BULKRED_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"


# endregion

# region Hits, misses, corruption


def test_miss_then_memory_then_disk_hit(fresh):
    c = CompileCache()
    key = make_key({"t": 1})
    assert c.get(key) is None and c.stats["misses"] == 1
    c.put(key, b"payload")
    assert c.path(key).is_file() and c.path(key).parent.parent == fresh
    assert c.get(key) == b"payload" and c.stats["memory_hits"] == 1
    other = CompileCache()  # another process: the disk only
    assert other.get(key) == b"payload" and other.stats["disk_hits"] == 1
    assert list(c.path(key).parent.glob("*.tmp")) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "header"])
def test_corrupt_entry_is_rebuilt_never_loaded(fresh, damage):
    key = make_key({"t": damage})
    CompileCache().put(key, b"good payload" * 100)
    p = CompileCache().path(key)
    data = p.read_bytes()
    if damage == "truncate":
        p.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        b = bytearray(data)
        b[-7] ^= 1
        p.write_bytes(bytes(b))
    elif damage == "empty":
        p.write_bytes(b"")
    else:
        p.write_bytes(data.replace(b"bulkred-cache 1", b"bulkred-cache 9", 1))
    c = CompileCache()
    built = []
    got = c.get_or_build(key, lambda: built.append(1) or b"rebuilt")
    assert got == b"rebuilt" and built == [1]
    assert c.stats["corrupt"] == 1 and c.stats["writes"] == 1
    assert CompileCache().get(key) == b"rebuilt"


def test_disabled_by_environment(fresh, monkeypatch):
    monkeypatch.setenv("BULKRED_CACHE", "0")
    c = CompileCache()
    key = make_key({"t": "off"})
    c.put(key, b"x")
    assert c.get(key) is None and not fresh.exists()


def test_unwritable_directory_keeps_the_cache_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("BULKRED_CACHE_DIR", str(blocker / "cache"))
    c = CompileCache()
    key = make_key({"t": "ro"})
    c.put(key, b"x")
    assert c.stats["write_errors"] == 1 and c.get(key) == b"x"


# endregion

# region Compiling through the cache


def test_compile_tile_module_hit_skips_lowering(fresh, monkeypatch):
    first = runtime.compile_tile_module(runtime.parse(SEED.read_text()), "sm_90a")
    from bulkred_dialect import compiler

    monkeypatch.setattr(compiler, "_lower", lambda *a, **k: pytest.fail("lowered on a hit"))
    monkeypatch.setattr(cache.CACHE, "_memory", {})  # as a new process would
    module = runtime.parse(SEED.read_text())
    before = str(module)
    again = runtime.compile_tile_module(module, "sm_90a")
    assert str(module) == before  # not lowered in place
    assert again.cubin == first.cubin and again.ptx == first.ptx and again is not first
    assert again.signatures == first.signatures
    with pytest.raises(pytest.fail.Exception, match="lowered on a hit"):  # another target: another entry
        runtime.compile_tile_module(runtime.parse(SEED.read_text()), "sm_100a")


def test_signatures_and_contract_survive_the_cache(fresh):
    text = """
    func.func @k(%out: !ptx.ptr<global>, %n: i32, %ws: !ptx.ptr<global>) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [64], cluster = [2]>, bulkred.workspace = 64 : i64, bulkred.zero_init = [0]} {
      ptx.ret
    }
    """
    a = runtime.compile_module(runtime.parse(text), "sm_90a")
    cache.CACHE.clear_memory()
    b = runtime.compile_module(runtime.parse(text), "sm_90a")
    assert b.signatures == a.signatures and b.signatures["k"].workspace == 64 and b.signatures["k"].zero_init == (0,)


def test_compile_ptx_caches_the_cubin(fresh, monkeypatch):
    from test_runtime_cpu import SCALE_PTX

    a = runtime.compile_ptx(SCALE_PTX, "sm_90a")
    from bulkred_dialect.backend_ptx import loading

    monkeypatch.setattr(loading.CompiledModule, "assemble", lambda *a, **k: pytest.fail("assembled on a hit"))
    cache.CACHE.clear_memory()
    assert runtime.compile_ptx(SCALE_PTX, "sm_90a").cubin == a.cubin


_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from bulkred_dialect import compiler
    from bulkred_dialect.backend_ptx import runtime
    from bulkred_dialect.backend_ptx.cache import CACHE
    calls = []
    real = compiler._lower
    compiler._lower = lambda *a, **k: (calls.append(1), real(*a, **k))[1]
    module = runtime.parse(open(sys.argv[1]).read())
    t = time.perf_counter()
    mod = runtime.compile_tile_module(module, "sm_90a")
    dt = time.perf_counter() - t
    print(json.dumps({"lowered": len(calls), "stats": dict(CACHE.stats), "cubin": len(mod.cubin), "s": dt}))
    """
)


def _child(cache_dir: Path, n: int = 1) -> list[dict]:
    """What ``n`` processes at once report of compiling the seed."""
    import json
    import os

    env = {**os.environ, "BULKRED_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", _CHILD, str(SEED)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        out += [json.loads(line) for line in stdout.strip().splitlines() if line.startswith("{")]
    return out


def test_processes_share_the_entry(tmp_path, monkeypatch):
    """Two cold processes at once fill the same entry (each compiles and writes it, or
    finds the other's: never a torn entry, no temporary file left); a later process pays
    no compile, then, the entry damaged and its memory cache cleared, rebuilds it from
    the disk's refusal (as test_corrupt_entry_is_rebuilt_never_loaded's damages, here
    through compile_tile_module). (2 child processes, the cold ones at once; the later
    process is this one, which wrote nothing: its memory cache emptied and its counts
    from zero, as a new process's, it finds the entry on the disk, damages it itself and
    compiles again, where a third child paid 0.5-0.6 CPU-s of start and imports.)"""
    results = _child(tmp_path, n=2)
    assert all(r["cubin"] == results[0]["cubin"] for r in results)
    for r in results:  # compiled and wrote it, or read the other's
        assert (r["lowered"], r["stats"]["writes"], r["stats"]["disk_hits"]) in ((1, 1, 0), (0, 0, 1)), r
    assert any(r["lowered"] == 1 for r in results)
    (entry,) = list(tmp_path.rglob("*.bin"))
    assert decode_entry(entry.read_bytes()) is not None
    assert list(tmp_path.rglob("*.tmp")) == []
    warm, rebuilt = _later_process(tmp_path, entry, monkeypatch)
    assert warm["lowered"] == 0 and warm["stats"]["disk_hits"] == 1 and warm["cubin"] == results[0]["cubin"]
    assert rebuilt["lowered"] == 1 and rebuilt["stats"]["corrupt"] == 1 and rebuilt["stats"]["writes"] == 1
    assert rebuilt["cubin"] == results[0]["cubin"] and decode_entry(entry.read_bytes()) is not None


def _later_process(cache_dir: Path, damage: Path, monkeypatch) -> tuple[dict, dict]:
    """What a later process reports (as ``_CHILD`` does), from this one run as a new
    process would be: the cache directory ``cache_dir``, the memory cache empty, the
    counts from zero. It compiles the seed, then damages the entry ``damage``, forgets
    it in memory and compiles again: a report each."""
    import functools

    from bulkred_dialect import compiler

    monkeypatch.setenv("BULKRED_CACHE_DIR", str(cache_dir))
    # bulkred's source hashed afresh, as a new process hashes it (a key's part): this one
    # hashed it at its first compile, and sources edited since give the others new keys
    monkeypatch.setattr(cache, "_source_hash", functools.cache(cache._source_hash.__wrapped__))
    monkeypatch.setattr(cache.CACHE, "_memory", {})
    monkeypatch.setattr(cache.CACHE, "stats", dict.fromkeys(cache.CACHE.stats, 0))
    calls = []
    real = compiler._lower
    monkeypatch.setattr(compiler, "_lower", lambda *a, **k: (calls.append(1), real(*a, **k))[1])

    def compiled() -> dict:
        mod = runtime.compile_tile_module(runtime.parse(SEED.read_text()), "sm_90a")
        return {"lowered": len(calls), "stats": dict(cache.CACHE.stats), "cubin": len(mod.cubin)}

    warm = compiled()
    data = damage.read_bytes()
    damage.write_bytes(data[:-100])
    cache.CACHE.clear_memory()
    calls.clear()
    return warm, compiled()


def test_two_writers_racing_on_one_key(tmp_path):
    """Many interleaved writes and reads of one entry from two processes: every read
    sees a whole entry (one of the two payloads), never a torn one."""
    import os

    script = textwrap.dedent(
        """
        import sys
        from bulkred_dialect.backend_ptx.cache import CompileCache
        me = sys.argv[1].encode()
        c = CompileCache()
        key = "ab" + "0" * 62
        for i in range(300):
            c.put(key, me * 5000)
            c.clear_memory()
            got = c.get(key)
            assert got in (b"A" * 5000, b"B" * 5000), (len(got or b""), c.stats)
        assert c.stats["corrupt"] == 0, c.stats
        """
    )
    env = {**os.environ, "BULKRED_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script, w], env=env, stderr=subprocess.PIPE, text=True) for w in "AB"]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert list(tmp_path.rglob("*.tmp")) == []


# endregion
