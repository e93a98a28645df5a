"""The diagnosis package is the engine and nothing else: it imports only itself, the standard library and a few pinned
libraries (speed-ups, version ranges), never Django or the site, and its modules import each other without a circle."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import diagnosis

PACKAGE = Path(diagnosis.__file__).parent
THIRD_PARTY = {"hyperscan", "numpy", "packaging", "yaml"}  # speed-ups, version ranges, the catalogue's data


def _modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _run_time_nodes(tree: ast.AST):
    """Every node but those under `if TYPE_CHECKING:`, which name types for readers of the code and never run."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _run_time_nodes(node)


def _imports(name: str, path: Path) -> set[str]:
    """Every module an import statement that runs names, anywhere in the file, relative imports resolved."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _run_time_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def test_diagnosis_imports_nothing_but_itself_the_standard_library_and_its_accelerators():
    outside = {
        f"{name}: {target}"
        for name, path in _modules().items()
        for target in _imports(name, path)
        if target.split(".")[0] not in {"diagnosis", *THIRD_PARTY} and target.split(".")[0] not in sys.stdlib_module_names
    }
    assert not outside, sorted(outside)


def test_diagnosis_modules_import_each_other_without_a_circle():
    modules = _modules()
    graph = {name: {t for t in _imports(name, path) if t in modules and t != name} for name, path in modules.items()}
    # a package's own __init__ importing its modules is how a package shows its way in, not a circle
    graph = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                circles.append(trail[trail.index(target) :] + [target] if target in trail else [node, target])
            elif target not in state:
                visit(target, trail + [target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, circles
