"""The list functions' host path on the CPU (bulkred_dialect/foreach.py, docs/foreach.md,
"The descriptor table, and when it is reused"), with torch's CPU build and no GPU: the
list check, the table build and the launch are replaced by stand-ins that record what a
call would launch, so that each call's table can be compared with the list it was given.

What must hold whatever path a call takes: the table a call launches names exactly the
tensors of the list it was given, in order (addresses and element counts), including
when the very list object that was seen before was changed in place (an item replaced,
an item appended, two items swapped), a kept tensor died, or an equal new list holds the
same tensors. Which path it takes: the first three calls of a list are checked, from
the fourth the same live objects are not (the ids of the list, read as one C-level copy
of its pointer array, :func:`foreach._ids`, else ``map(id, ...)``); new objects at the
same memory find the table by content. The in-place functions refuse tensors that share
memory on a kept table too."""

from __future__ import annotations

import gc
import types

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")

from bulkred_dialect import foreach as F  # noqa: E402
from bulkred_dialect.ops.list_layout import TENSOR  # noqa: E402

GRID = 3
ADDRESS, NUMEL = TENSOR.index("address"), TENSOR.index("numel")


class Launches:
    """Stand-ins for the GPU parts of a call: the list check without its CUDA device
    test (``checks`` counts the calls), the table built without pinned memory, and a
    kernel that records the table it is launched with."""

    def __init__(self, monkeypatch):
        self.tables: list = []
        self.checks = 0
        kernel = types.SimpleNamespace(signature=types.SimpleNamespace(launch=types.SimpleNamespace(grid=(GRID, 1, 1))))

        class Kernel:
            signature = kernel.signature

            def __call__(k, table, *args):  # noqa: N805 - the recorder's self is the test's
                self.tables.append(table)

        monkeypatch.setattr(F, "_reduce_kernel", lambda row, options: Kernel())
        monkeypatch.setattr(F, "_clip_kernel", lambda: Kernel())
        monkeypatch.setattr(F, "_check", self._check)
        monkeypatch.setattr(F, "_build", self._build)
        monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
        for cache in ("_TABLES", "_BY_IDS"):
            monkeypatch.setattr(F, cache, type(getattr(F, cache))())

    def _check(self, fn, ts, torch_):
        self.checks += 1
        codes = F._codes(torch)
        return F._Checked(list(map(torch.Tensor.data_ptr, ts)), list(map(torch.Tensor.numel, ts)),
                          list(map(codes.__getitem__, map(F._DTYPE, ts))), torch.device("cpu"))

    @staticmethod
    def _build(checked, grid, torch_):
        host = torch.from_numpy(F.descriptor_table(checked.addresses, checked.numels, checked.codes, grid))
        return F._Table(checked, host, host.clone(), grid)

    def last_names(self, ts) -> None:
        """The last launch's table names the tensors of ``ts``, in order."""
        table = self.tables[-1]
        assert int(table[0, 0]) == len(ts)
        rows = table[1 : 1 + len(ts)]
        assert rows[:, ADDRESS].tolist() == [t.data_ptr() for t in ts]
        assert rows[:, NUMEL].tolist() == [t.numel() for t in ts]


@pytest.fixture(params=["pointers", "map"])
def launches(request, monkeypatch):
    """Both ways of taking a list's ids: the pointer array (CPython) and map(id, ...)."""
    if request.param == "pointers":
        if F._ids is F._ids_by_map:
            pytest.skip("this interpreter's lists are not read as a pointer array (map(id, ...) is used)")
    else:
        monkeypatch.setattr(F, "_ids", F._ids_by_map)
    return Launches(monkeypatch)


def tensors(n: int, first: int = 5):
    return [torch.empty(first + i, dtype=(torch.float32, torch.bfloat16)[i % 2]) for i in range(n)]


def test_the_ids_of_a_list_are_its_objects_ids_in_order():
    ts = tensors(300)
    for part in (ts, ts[:1], ts[::-1], [ts[0]] * 3, []):
        want = F._ids_by_map(part)
        got = F._ids(part)
        if isinstance(got, bytes):
            assert got == b"".join(i.to_bytes(len(got) // max(len(part), 1), "little") for i in want)
        else:
            assert got == want
    assert F._ids(ts[:10]) != F._ids(ts[1:11]) and F._ids(ts[:10]) == F._ids(list(ts[:10]))


def test_unchanged_lists_skip_the_checks_and_changed_ones_do_not(launches):
    ts = tensors(40)
    for _ in range(3):
        F.total_norm(ts)
        launches.last_names(ts)
    assert launches.checks == 3
    for _ in range(3):  # the same list object, an equal new list, a tuple, per tensor
        F.total_norm(ts)
        F.total_norm(list(ts))
        F.total_norm(tuple(ts))
        F.foreach_norm(ts)
        launches.last_names(ts)
    assert launches.checks == 3, "an unchanged list of the same live tensors was checked again"

    # the same list object changed in place, every old tensor still alive (the kept table
    # stays kept): each change is seen, the table follows the list, and the list put back
    # is served unchecked again
    old, other, saved = ts[7], torch.empty(123), []
    changes = [  # (what, the change, its undoing)
        ("an item replaced", lambda: ts.__setitem__(7, other), lambda: ts.__setitem__(7, old)),
        ("two items swapped", lambda: ts.__setitem__(slice(3, 5), [ts[4], ts[3]]),
         lambda: ts.__setitem__(slice(3, 5), [ts[4], ts[3]])),
        ("an item twice", lambda: ts.__setitem__(7, ts[8]), lambda: ts.__setitem__(7, old)),
        ("an item appended", lambda: ts.append(other), lambda: ts.pop()),
        ("the first item new, the same length", lambda: (ts.insert(0, other), saved.append(ts.pop())),
         lambda: (ts.pop(0), ts.append(saved.pop()))),
    ]
    for what, change, undo in changes:
        change()
        before = launches.checks
        F.total_norm(ts)
        launches.last_names(ts)
        F.foreach_norm(ts)
        launches.last_names(ts)
        assert launches.checks > before, f"{what}: the change of the list object was not seen"
        undo()
        before = launches.checks
        F.total_norm(ts)
        launches.last_names(ts)
        assert launches.checks == before, f"{what}: the list put back was checked again"
    assert all(e.live[0] for e in F._BY_IDS.values())


def test_a_kept_tensor_that_dies_makes_the_list_checked_again(launches):
    ts = tensors(20)
    for _ in range(4):
        F.total_norm(ts)
    kept = [e for e in F._BY_IDS.values() if e.live is not None and e.live[0]]
    assert len(kept) == 1 and launches.checks == 3
    ts[5] = torch.empty(77)  # the old tensor 5 dies: its id may be handed to a new object
    gc.collect()
    assert not kept[0].live[0], "a kept tensor died and its table still names it"
    F.total_norm(ts)
    launches.last_names(ts)
    assert launches.checks == 4


def test_new_objects_at_the_same_memory_take_the_table_by_content(launches):
    """zero_grad(set_to_none=True) with torch's caching allocator: new grad objects over
    the same memory each step, checked, served by the table of that content."""
    base = tensors(30)
    for _ in range(4):
        F.total_norm(base)
    table = launches.tables[-1]
    for _ in range(3):
        before = launches.checks
        views = [t.view_as(t) for t in base]
        F.total_norm(views)
        assert launches.checks == before + 1 and launches.tables[-1] is table
        launches.last_names(views)


def test_in_place_functions_refuse_shared_memory_on_a_kept_list(launches):
    x = torch.zeros(1000)
    ts = [x[:600], torch.zeros(10), x[500:]]
    for call in range(5):
        with pytest.raises(F.ListError, match=r"tensors 0 and 2 of the list share memory"):
            F.clip_grad_norm_(ts, 1.0)
        with pytest.raises(F.ListError, match=r"tensors 0 and 2 of the list share memory"):
            F.unscale_and_norm_(ts, torch.ones(1), torch.zeros(1))
        F.total_norm(ts)  # the read-only functions take it
        launches.last_names(ts)
    touching = [x[:500], x[500:]]
    for _ in range(4):
        F.clip_grad_norm_(touching, 1.0)
    launches.last_names(touching)
