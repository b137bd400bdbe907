"""No module of ctxkit imports another in a circle: each package's modules import one another one way
only, so any of them can be read, tested and moved after what it builds on (DESIGN.md's layering)."""
from __future__ import annotations

import grimp

# Each is another branch's to break (issue 29 item 5): remove the line when it merges.
_KNOWN: set[frozenset[str]] = set()  # none left: add one here only with the reason it cannot go


def import_circles(graph: grimp.ImportGraph) -> list[set[str]]:
    """The sets of modules that import one another in a circle (strongly connected, more than one
    module): any import counts, at module level or inside a function, except one under
    ``if TYPE_CHECKING:`` (it never runs). Tarjan's algorithm, iterative."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[set[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                scc = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.add(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    circles.append(scc)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return circles


def test_no_module_of_ctxkit_imports_another_in_a_circle():
    graph = grimp.build_graph("ctxkit", exclude_type_checking_imports=True)
    circles = [c for c in import_circles(graph) if frozenset(c) not in _KNOWN]
    assert not circles, "modules importing one another in a circle: " + "; ".join(
        " <-> ".join(sorted(c)) for c in circles)


def test_the_check_finds_a_circle_through_a_function_level_import(tmp_path, monkeypatch):
    """The check is not vacuous: a package whose modules import each other, one of them inside a
    function, is a circle; one under ``if TYPE_CHECKING:`` is not."""
    pkg = tmp_path / "circled"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nfrom . import a\nif TYPE_CHECKING:\n    from . import d\n")
    (pkg / "d.py").write_text("from . import c\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circled", exclude_type_checking_imports=True, cache_dir=None)
    assert import_circles(graph) == [{"circled.a", "circled.b"}]
