"""No two modules of ``ctxkit.cli`` import each other, directly or through others (any import, at module
level or inside a function; ``if TYPE_CHECKING:`` imports aside): each module's dependencies run one way."""
from __future__ import annotations

import grimp


def _circles(package: str) -> list[tuple[str, ...]]:
    graph = grimp.build_graph("ctxkit", exclude_type_checking_imports=True)
    inside = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    found = []
    for m in sorted(inside):
        for other in sorted(graph.find_modules_directly_imported_by(m) & inside):
            chain = graph.find_shortest_chain(importer=other, imported=m)
            if chain is not None:
                found.append((m, *chain))
    return found


def test_the_cli_modules_import_each_other_in_no_circle():
    assert _circles("ctxkit.cli") == []
