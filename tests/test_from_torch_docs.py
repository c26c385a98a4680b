"""docs/from_torch.md against what the function table takes and refuses, so the page
cannot go stale (it once listed float64 logsumexp and p-norms as refused long after
both ran):

* "Every function": one row per row of ``functions.ROWS``, and each row's "input
  dtypes" are exactly the element types ``api.plan`` takes; every dtype listed builds
  its module (``api.module_of``: the dialect's refusal would show there), float64
  logsumexp and p-norms lowered too (their exp/log are the FMA routines);
* a qualifier of a dtype in that column that says it is refused or limited ("not yet",
  "for now") must name a refusal this file can show (:data:`LIMITS`);
* "What torch has that bulkred refuses": every row is refused by its probe
  (:data:`PROBES`), in the words the page quotes, and every probe has its row."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import api
from bulkred_dialect.functions import COMPLEX, ROWS
from bulkred_dialect.ops.dtypes import DTYPES

DOC = Path(__file__).resolve().parents[1] / "docs" / "from_torch.md"
ALL = (*DTYPES, *COMPLEX)
INTEGERS = tuple(n for n, d in DTYPES.items() if not d.is_float and n != "bool")


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _table(title: str) -> list[list[str]]:
    """The rows of the first markdown table of section ``title`` (cells stripped)."""
    rows, seen = [], False
    for line in _section(title).splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if seen and not set("".join(cells)) <= set("- "):
                rows.append(cells)
            seen = True
        elif seen and rows:
            break
    return rows


def _listed(column: str) -> set[str]:
    """The element types an "input dtypes" cell names, qualifiers in parentheses left out."""
    plain = re.sub(r"\([^)]*\)", "", column)
    got: set[str] = set(DTYPES) if "every type" in plain else set()  # bulkred's 13 element types
    for word in (w.strip() for w in plain.split(",")):
        if word == "integers":
            got |= set(INTEGERS)
        elif word == "every type":
            continue
        elif word:
            assert word in ALL, f"from_torch.md: {word!r} is not an element type"
            got.add(word)
    return got


def _every_function() -> dict[str, str]:
    return {cells[0].strip("`"): cells[3] for cells in _table("Every function")}


LIMITS: dict[tuple[str, str], object] = {}
"""(function, the qualifier's text) -> a call the qualifier says is refused. Empty
today: no row of "Every function" claims a limit of one of its dtypes."""


def test_every_row_has_its_row_in_the_doc():
    assert list(_every_function()) == [r.name for r in ROWS]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_input_dtypes_are_what_the_plan_takes(row):
    column = _every_function()[row.name]
    listed = _listed(column)
    taken = set()
    for d in ALL:
        try:
            api.plan(row.name, (4, 6), d, 1)
            taken.add(d)
        except api.ReductionError:
            pass
    assert taken == listed, f"{row.name}: the doc lists {sorted(listed)}, the plan takes {sorted(taken)}"
    for qualifier in re.findall(r"\(([^)]*)\)", column):
        if re.search(r"not yet|for now|refused", qualifier):
            probe = LIMITS.get((row.name, qualifier))
            assert probe is not None, f"{row.name}: the doc claims a limit ({qualifier}) no probe shows"
            with pytest.raises(api.ReductionError):
                probe()


ORDS = (1, 2, math.inf, -math.inf, 3.0, 0.5, -1.5, 0)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_listed_dtype_builds(row):
    """Each dtype the page lists builds its module (the dialect takes it), with every
    kind of option the page names (vector_norm: each kind of ord, 0 included); float64
    logsumexp and p-norms (exp and log from FMA) are lowered as well."""
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module

    for d in sorted(_listed(_every_function()[row.name])):
        for opts in [{"ord": p} for p in ORDS] if "ord" in row.option_names else [{}]:
            p = api.plan(row.name, (4, 6), d, 1, **opts)
            m = api.module_of(p)
            fma_math = d == "float64" and (p.kind == "logsumexp" or any(isinstance(x, tuple) for x in p.prologue))
            if fma_math:
                lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")


_X = np.zeros((4, 5), np.float32)

PROBES = {
    "matrix norms (`torch.linalg.matrix_norm` and `torch.linalg.norm` of a matrix `ord`, `torch.norm(p=\"nuc\")`)":
        lambda: bulkred.vector_norm(_X, ord="nuc"),
    "a complex result of a real x (`torch.sum(x, dtype=torch.complex64)` of a float32 x)":
        lambda: bulkred.sum(np.zeros(4, np.float32), dtype=np.complex64),
    "a flipped view (negative strides: cupy's `x[::-1]`; torch's `flip` copies)":
        lambda: api.check_layout("sum", "x", (4,), (-1,), views=True),
    "numpy masked arrays": lambda: bulkred.sum(np.ma.masked_array(_X, mask=np.zeros_like(_X, bool))),
}
"""The first cell of each row of "What torch has that bulkred refuses" -> a call that
must be refused in the words of its second cell."""


def test_the_refusal_list_is_what_is_refused():
    rows = {cells[0]: cells[1] for cells in _table("What torch has that bulkred refuses")}
    assert set(rows) == set(PROBES), "a row of the refusal list without its probe here, or a probe without its row"
    for what, said in rows.items():
        assert said.startswith("refused"), (what, said)
        with pytest.raises(api.ReductionError) as e:
            PROBES[what]()
        message = str(e.value)
        assert "\n" not in message
        for quote in re.findall(r'"([^"]+)"', said):
            at = 0
            for piece in (q for q in quote.split("...") if q.strip()):
                found = message.find(piece, at)
                assert found >= 0, f"{what}: the doc quotes {quote!r}, the refusal says {message!r}"
                at = found + len(piece)



def test_the_opinfo_allowlist_is_the_refusal_list():
    """Every refusal the OpInfo test allows (tests/opinfo_reductions.py, ``ALLOWED``) is a
    row of "What torch has that bulkred refuses", by its name."""
    from opinfo_reductions import ALLOWED

    rows = [cells[0] for cells in _table("What torch has that bulkred refuses")]
    for name in ALLOWED:
        assert any(r.startswith(name.split(" (")[0]) for r in rows), name
