"""The architecture holds: no import cycle among linkdyn's modules, and the public names stay where
the documentation put them.  (The layers themselves are import-linter's contracts in pyproject.toml,
which ``.ci/run`` checks with ``lint-imports``; docs/architecture.md draws them.)"""
from __future__ import annotations

import importlib
import json
import pathlib

import pytest

grimp = pytest.importorskip("grimp")     # import-linter's import graph (the test extra installs it)

HERE = pathlib.Path(__file__).parent


def _graph():
    return grimp.build_graph("linkdyn", exclude_type_checking_imports=True)


def _cycles(edges):
    """Strongly connected components of more than one module (Tarjan 1972), iteratively."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_cycles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    """Every import counts, inside functions too (a lazy import that closes a loop is still a
    loop of dependencies); imports under ``if TYPE_CHECKING`` never run and are left out.  A
    package's ``__init__`` is a module like the others."""
    g = _graph()
    mods = {m for m in g.modules if m == "linkdyn" or m.startswith("linkdyn.")}
    edges = {m: {d for d in g.find_modules_directly_imported_by(m) if d in mods} for m in mods}
    edges.pop("linkdyn")                 # the top-level package re-exports everything; nothing imports it back
    for m in edges:
        edges[m].discard("linkdyn")
    assert _cycles(edges) == []


def test_nothing_inside_linkdyn_imports_the_top_level_package():
    """Modules import the module that defines a name, never ``linkdyn`` itself (which imports them
    all), except the command line and the Dask layer at the very top."""
    g = _graph()
    users = {m for m in g.find_modules_that_directly_import("linkdyn")}
    assert users <= {"linkdyn.cli", "linkdyn.distributed"}, sorted(users)


PUBLIC = json.loads((HERE / "public_api.json").read_text())


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_documented_names_still_import_from_where_the_docs_say(module):
    """The public names of every module that docs/api/*.md names (recorded before the layers were
    enforced) still import from that module."""
    mod = importlib.import_module(module)
    missing = [n for n in PUBLIC[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lost {missing}"


# --- the one private Numba interface linkdyn relies on -----------------------------------------
#: Numba releases whose compiled-version table (``dispatcher.overloads[sig].entry_point``) linkdyn's
#: ``_api.Entry`` was checked against.  On a release outside this range ``Entry`` still works (it
#: falls back to the dispatcher, ~0.03 us per argument slower); this test says so, so that the
#: range is widened only after checking the fast path on the new release.
NUMBA_CHECKED = ((0, 59), (0, 68))


def test_entry_skips_the_dispatcher_on_a_checked_numba():
    import numba
    import numpy as np

    from linkdyn import _api
    from linkdyn.dynamics.rnea import _rnea_plain_entry as _rnea_entry   # (a model without springs)

    version = tuple(int(x) for x in numba.__version__.split(".")[:2])
    lo, hi = NUMBA_CHECKED
    assert lo <= version <= hi, (
        f"Numba {numba.__version__} is outside the releases linkdyn._api.Entry was checked against "
        f"({lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}): check that Entry still finds the compiled version "
        "(kernel.overloads[sig].entry_point) and calls it, then widen NUMBA_CHECKED")
    import linkdyn as ld
    m = ld.models.planar_2link()
    q = np.zeros(m.nq)
    ld.rnea(m, q, q, q)                                   # compiles, then binds the entry point
    assert isinstance(_rnea_entry, _api.Entry)
    assert _rnea_entry.fn is not _rnea_entry.kernel, "Entry fell back to the dispatcher on a checked Numba"
    assert getattr(_rnea_entry.fn, "__func__", None) is not _api.Entry._first_call
