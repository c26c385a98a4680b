"""A new list given to the list functions (bulkred_dialect/foreach.py, docs/foreach.md,
"The checks of a new list"), on the CPU with torch's CPU or CUDA build and no GPU: the
list's device type is set to "cpu" (``foreach.DEVICE_TYPE``), the kernels record the
table they are launched with, the table stays on the host.

What must hold: a new list is refused with the same one-line error, naming the same
tensor, whichever way it is checked (torch's grouping by device and dtype then a pass
per attribute, :func:`foreach._check_all`; one attribute per pass, the reference
:func:`foreach._check_passes`; or a kind's guard, :class:`foreach._Kind`); a list that
passes gives the same addresses, element counts, codes and device, and the same table
bit for bit, whichever way; a list that differs from a kept kind in any one item (dtype,
shape, strides, device, Python type, ``requires_grad``, a non-tensor) is checked in full."""

from __future__ import annotations

import random
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")

from bulkred_dialect import foreach as F  # noqa: E402
from bulkred_dialect.foreach_table import descriptor_base, descriptor_table, with_addresses  # noqa: E402
from bulkred_dialect.ops.list_layout import ALIGN, ALIGNED, TENSOR  # noqa: E402

GRID = 5
ADDRESS, NUMEL, CODE = (TENSOR.index(c) for c in ("address", "numel", "code"))
HOLDS = "(a list holds float32, float16 and bfloat16)"


@pytest.fixture
def lists(monkeypatch):
    """CPU lists: the device type "cpu", every cache empty, the kernels record their tables."""
    launched: list = []

    class Kernel:
        signature = types.SimpleNamespace(launch=types.SimpleNamespace(grid=(GRID, 1, 1)))

        def __call__(self, table, *args):
            launched.append(table)

    monkeypatch.setattr(F, "DEVICE_TYPE", "cpu")
    monkeypatch.setattr(F, "KIND_GUARDS", True)
    monkeypatch.setattr(F, "_reduce_kernel", lambda row, options: Kernel())
    monkeypatch.setattr(F, "_clip_kernel", lambda: Kernel())
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, *a, **k: self)
    for cache in ("_TABLES", "_BY_IDS", "_KINDS", "_LAST"):
        monkeypatch.setattr(F, cache, type(getattr(F, cache))())
    return launched


def needs_guards():
    if F._guard_maker(torch) is None:
        pytest.skip("this torch has no TensorGuards that behaves as foreach._Kind needs (every list checked in full)")


def new(n: int, dtypes=(torch.float32,), numel=lambda i: 3 + i % 5):
    return [torch.empty(numel(i), dtype=dtypes[i % len(dtypes)]) for i in range(n)]


def outcome(check, ts):
    """What a check gives: its result's fields, or its error's message."""
    try:
        c = check("total_norm", ts, torch)
    except F.ListError as e:
        return str(e)
    return (c.addresses, c.numels, c.codes, c.device)


def kept(ts, times: int = 2):
    """Checks lists of the kind of ``ts`` until its kind is kept (the second full check)."""
    for _ in range(times):
        F._check("total_norm", [t.clone() for t in ts], torch)
    assert F._KINDS.get(len(ts)), "no kind was kept after two full checks of one kind"


def bad_lists():
    """(what, the list, the message): each refusal names the first offending tensor, in
    the order of the checks (not a tensor, dtype, tensor 0's device type, the device,
    density)."""
    meta = torch.empty(3, device="meta")
    base = new(12)
    cases = []

    def with_(changes):
        ts = list(base)
        for i, t in changes.items():
            ts[i] = t
        return ts

    cases.append(("a float", with_({7: 2.5}), "bulkred.total_norm: tensor 7 is a float, not a torch tensor"))
    cases.append(("None", with_({0: None}), "bulkred.total_norm: tensor 0 is a NoneType, not a torch tensor"))
    cases.append(("a numpy array", with_({11: np.zeros(3, np.float32)}),
                  "bulkred.total_norm: tensor 11 is a ndarray, not a torch tensor"))
    cases.append(("float64", with_({4: torch.zeros(3, dtype=torch.float64)}),
                  f"bulkred.total_norm: tensor 4 has dtype float64 {HOLDS}"))
    cases.append(("int32 before float64", with_({2: torch.zeros(3, dtype=torch.int32),
                                                 9: torch.zeros(3, dtype=torch.float64)}),
                  f"bulkred.total_norm: tensor 2 has dtype int32 {HOLDS}"))
    cases.append(("a non-tensor before a dtype", with_({3: torch.zeros(3, dtype=torch.float64), 8: "x"}),
                  "bulkred.total_norm: tensor 8 is a str, not a torch tensor"))
    cases.append(("tensor 0 on meta", with_({0: meta}), "bulkred.total_norm: tensor 0 is on meta, not a CUDA device"))
    cases.append(("a meta tensor", with_({5: meta}),
                  "bulkred.total_norm: tensor 5 is on meta, tensor 0 on cpu (one device per list)"))
    cases.append(("a dtype before a device", with_({2: meta, 6: torch.zeros(2, dtype=torch.float64)}),
                  f"bulkred.total_norm: tensor 6 has dtype float64 {HOLDS}"))
    cases.append(("not dense", with_({6: torch.zeros(8)[::2]}),
                  "bulkred.total_norm: tensor 6 (shape [4], strides [2]) is not dense: it skips memory; pass "
                  "t.contiguous() or a dense view"))
    cases.append(("a device before density", with_({1: torch.zeros(8)[::2], 3: meta}),
                  "bulkred.total_norm: tensor 3 is on meta, tensor 0 on cpu (one device per list)"))
    cases.append(("expanded", with_({10: torch.zeros(1).expand(4)}),
                  "bulkred.total_norm: tensor 10 (shape [4], strides [0]) is not dense: it skips memory; pass "
                  "t.contiguous() or a dense view"))
    return cases


@pytest.mark.parametrize("what", [c[0] for c in bad_lists()])
def test_a_bad_list_is_refused_alike_each_way(lists, what):
    _, ts, message = next(c for c in bad_lists() if c[0] == what)
    for check in (F._check_passes, F._check_all, F._check):
        with pytest.raises(F.ListError) as e:
            check("total_norm", ts, torch)
        assert str(e.value) == message, check.__name__
    with pytest.raises(F.ListError) as e:  # the public call, twice (nothing kept from a refused list)
        F.total_norm(ts)
    assert str(e.value) == message
    if F._guard_maker(torch) is not None:  # and with a kind of the good list kept
        good = new(len(ts))
        kept(good)
        with pytest.raises(F.ListError) as e:
            F.total_norm(ts)
        assert str(e.value) == message
    assert not lists, "a refused list was launched"


def test_a_cuda_list_refuses_a_cpu_tensor_first(monkeypatch):
    """With the device type "cuda" (the functions' own), a list of CPU tensors is refused
    at tensor 0, before its density (whatever the grouping finds)."""
    monkeypatch.setattr(F, "DEVICE_TYPE", "cuda")
    ts = [torch.zeros(3), torch.zeros(8)[::2], torch.zeros(2, dtype=torch.bfloat16)]
    for check in (F._check_passes, F._check_all, F._check):
        with pytest.raises(F.ListError, match=r"^bulkred.total_norm: tensor 0 is on cpu, not a CUDA device$"):
            check("total_norm", ts, torch)


def test_the_checks_agree_on_random_lists(lists):
    """_check_all, _check and the reference _check_passes give the same outcome on random
    lists of 1 to 40 tensors, good or with one or two defects."""
    rng = random.Random(29)
    dtypes = (torch.float32, torch.float16, torch.bfloat16)
    defects = [lambda: 1.0, lambda: torch.zeros(2, dtype=torch.float64), lambda: torch.zeros(4, device="meta"),
               lambda: torch.zeros(6)[::3], lambda: torch.zeros(2, 3).t(), lambda: torch.zeros(3).requires_grad_(),
               lambda: torch.nn.Parameter(torch.zeros(3)), lambda: torch.zeros(0), lambda: torch.zeros(4, 1)[:, 0]]
    seen, by_kind = 0, 0
    for _ in range(150):
        n = rng.randrange(1, 40)
        kinds = rng.sample(dtypes, rng.randrange(1, 4))
        ts = [torch.empty(rng.randrange(0, 9), dtype=rng.choice(kinds)) for _ in range(n)]
        for _ in range(rng.randrange(0, 3)):
            ts[rng.randrange(n)] = rng.choice(defects)()
        want = outcome(F._check_passes, ts)
        assert outcome(F._check_all, ts) == want
        assert outcome(F._check, ts) == want
        for _ in range(2):  # new objects, the same memory: the second by the kind kept at the first
            views = [t.view_as(t) if isinstance(t, torch.Tensor) and t.layout == torch.strided else t for t in ts]
            assert outcome(F._check, views) == want
        if not isinstance(want, str):
            by_kind += F._check("total_norm", [t.view_as(t) for t in ts], torch).kind is not None
        seen += isinstance(want, str)
    assert 20 < seen < 140, seen  # both refusals and passes were drawn
    assert by_kind > 20 or F._guard_maker(torch) is None, by_kind


def test_a_kind_is_kept_at_the_second_full_check_and_serves_new_lists(lists):
    needs_guards()
    ts = new(60, (torch.float32, torch.bfloat16))
    first = F._check("total_norm", ts, torch)
    assert first.kind is None and not F._KINDS
    F._check("total_norm", [t.clone() for t in ts], torch)
    (kind,) = F._KINDS[60]
    for make in (lambda: [t.clone() for t in ts], lambda: [t.view_as(t) for t in ts], lambda: ts):
        fresh = make()
        c = F._check("total_norm", fresh, torch)
        assert c.kind is kind
        assert (c.addresses, c.numels, c.codes, c.device) == outcome(F._check_all, fresh)
        assert np.array_equal(F._host_table(c, GRID), descriptor_table(c.addresses, c.numels, c.codes, GRID))
    assert kind.used


@pytest.mark.parametrize("change", ["dtype", "shape", "strides", "numel", "requires_grad", "parameter", "device",
                                    "not dense", "not a tensor", "length"])
def test_a_list_unlike_the_kept_kind_is_checked_in_full(lists, change):
    """One item changed from the kept kind: the kind's guard refuses the list, which is
    checked in full (its own counts, codes, or the error of the full check)."""
    needs_guards()
    ts = new(30, numel=lambda i: 12)
    kept(ts)
    other = {
        "dtype": lambda t: t.bfloat16(), "shape": lambda t: t.view(3, 4), "strides": lambda t: t.view(3, 4).t(),
        "numel": lambda t: torch.zeros(13), "requires_grad": lambda t: t.clone().requires_grad_(),
        "parameter": lambda t: torch.nn.Parameter(t.clone()), "device": lambda t: t.to("meta"),
        "not dense": lambda t: torch.zeros(24)[::2], "not a tensor": lambda t: 12,
    }
    fresh = [t.clone() for t in ts]
    if change == "length":
        fresh.append(torch.zeros(12))
    else:
        fresh[17] = other[change](fresh[17])
    want = outcome(F._check_passes, fresh)
    c = None
    try:
        c = F._check("total_norm", fresh, torch)
    except F.ListError as e:
        assert str(e) == want
    else:
        assert (c.addresses, c.numels, c.codes, c.device) == want
        assert c.kind is None or c.kind not in F._KINDS.get(30, ()), "the kept kind served a list unlike it"
    assert isinstance(want, str) == (change in ("device", "not dense", "not a tensor"))


def test_new_lists_launch_tables_that_name_their_tensors(lists):
    """total_norm of a new list of new tensors each call (one dtype and two), with kinds
    and without: each launched table names the call's tensors, in order, bit for bit the
    table of a full check."""
    for dtypes in ((torch.float32,), (torch.float32, torch.bfloat16)):
        for guards in (True, False):
            F.KIND_GUARDS = guards
            for _ in range(5):
                ts = new(50, dtypes)
                F.total_norm(ts)
                table = lists[-1].numpy()
                c = F._check_passes("total_norm", ts, torch)
                assert np.array_equal(table, descriptor_table(c.addresses, c.numels, c.codes, GRID))
                assert table[1:51, ADDRESS].tolist() == [t.data_ptr() for t in ts]
    assert any(k.used for ks in F._KINDS.values() for k in ks)


def test_lists_of_one_length_that_take_turns_keep_both_kinds(lists):
    needs_guards()
    a = new(20)
    b = [torch.nn.Parameter(t.clone()) for t in a]  # the same counts and codes, another Python type
    for _ in range(4):
        F._check("total_norm", [t.view_as(t) for t in a], torch)
        F._check("total_norm", [torch.nn.Parameter(t.clone()) for t in b], torch)
    assert len(F._KINDS[20]) == 2
    assert F._check("total_norm", [t.clone() for t in a], torch).kind is not None
    assert F._check("total_norm", [torch.nn.Parameter(t.clone()) for t in b], torch).kind is not None


def test_a_kind_that_serves_no_list_holds_back_the_next(lists):
    """Lists of equal counts whose strides change every call (no kind ever serves one):
    one kind per 8 full checks, not one per call."""
    needs_guards()
    built = []
    maker = F._guard_maker(torch)
    F._GUARDS[:] = [lambda ts: built.append(1) or maker(ts)]
    try:
        for i in range(20):  # tensor i transposed: 20 lists, no two alike
            ts = [torch.zeros(4, 3).t() if j == i else torch.zeros(12) for j in range(20)]
            assert F._check("total_norm", ts, torch).kind is None
    finally:
        F._GUARDS[:] = [maker]
    assert 2 <= len(built) <= 4, len(built)


def test_without_a_guard_every_list_is_checked_in_full(lists, monkeypatch):
    monkeypatch.setattr(F, "_GUARDS", [None])
    ts = new(25, (torch.float16,))
    for _ in range(4):
        c = F._check("total_norm", [t.clone() for t in ts], torch)
        assert c.kind is None
    assert not F._KINDS


def test_the_table_without_addresses_completed_is_the_table():
    rng = random.Random(7)
    for _ in range(200):
        t = rng.randrange(0, 30)
        numels = [rng.choice([0, 1, 5, 8, 4096, rng.randrange(9999)]) for _ in range(t)]
        codes = rng.choice([rng.randrange(3), [rng.randrange(3) for _ in range(t)]])
        addrs = [rng.randrange(1, 2**40) * rng.choice([1, 2, 16]) for _ in range(t)]
        grid = rng.choice([1, 3, 64])
        base = descriptor_base(numels, codes, grid)
        table = with_addresses(base, addrs)
        assert np.array_equal(table, descriptor_table(addrs, numels, codes, grid))
        assert np.array_equal(with_addresses(base, np.asarray(addrs, dtype=np.int64)), table)
        assert not base[1 : 1 + t, ADDRESS].any() and (base[1 : 1 + t, CODE] < ALIGNED).all()
        assert table[1 : 1 + t, ADDRESS].tolist() == addrs
        flags = (table[1 : 1 + t, CODE] & ALIGNED) != 0
        assert flags.tolist() == [a % ALIGN == 0 for a in addrs]
    with pytest.raises(ValueError, match="2 addresses for a table of 3 tensors"):
        with_addresses(descriptor_base([1, 2, 3], 0, 2), [16, 32])


def test_the_in_place_functions_refuse_shared_memory_in_new_lists(lists):
    """clip_grad_norm_ of a new list each call, by a kind and in full: two tensors that
    overlap are named (from the table's rows), distinct ones pass."""
    for guards in (True, False):
        F.KIND_GUARDS = guards
        for _ in range(4):
            ts = new(30, numel=lambda i: 8)
            F.clip_grad_norm_(ts, 1.0)
            big = torch.zeros(16)
            bad = [t.clone() for t in ts]
            bad[4], bad[21] = big[:8], big[4:12]
            with pytest.raises(F.ListError, match=r"^bulkred.clip_grad_norm_: tensors 4 and 21 of the list share memory"):
                F.clip_grad_norm_(bad, 1.0)
    assert any(k.used for ks in F._KINDS.values() for k in ks)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_a_nested_tensor_in_a_list_of_a_kept_kind_is_checked_in_full(lists):
    """The kind's guard reads each tensor's strides, which a nested tensor does not have
    (torch aborts there): such a list never reaches the guard, and the check in full
    takes it as the reference does (a contiguous nested tensor is one block)."""
    needs_guards()
    ts = new(10, numel=lambda i: 5)
    kept(ts)
    nested = torch.nested.nested_tensor([torch.zeros(3), torch.zeros(2)])
    fresh = [t.clone() for t in ts]
    fresh[6] = nested
    assert outcome(F._check, fresh) == outcome(F._check_passes, fresh)
    assert F._check("total_norm", fresh, torch).kind is None
    for _ in range(3):  # and no kind is kept of a list that holds one
        F._check("total_norm", list(fresh), torch)
    assert all(len(k.numels) == 10 and k.numels[6] == 5 for k in F._KINDS[10])


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
def test_a_sparse_tensor_is_refused_in_one_line_each_way(lists):
    ts = new(8)
    for layout, make in (("torch.sparse_coo", lambda: torch.zeros(4).to_sparse()),
                         ("torch.sparse_csr", lambda: torch.zeros(2, 2).to_sparse_csr())):
        bad = list(ts)
        bad[3] = make()
        for check in (F._check_passes, F._check_all, F._check):
            with pytest.raises(F.ListError) as e:
                check("total_norm", bad, torch)
            assert str(e.value) == f"bulkred.total_norm: tensor 3 has layout {layout} (not dense); pass t.to_dense()"


def test_no_kind_is_kept_for_a_subclass(lists):
    """A tensor subclass may compute its strides in Python, which the guard's C++ would
    call: lists of one are always checked in full."""

    class Grad(torch.Tensor):
        pass

    for _ in range(4):
        ts = [torch.Tensor._make_subclass(Grad, torch.zeros(3)) for _ in range(6)]
        assert F._check("total_norm", ts, torch).kind is None
    assert not F._KINDS
