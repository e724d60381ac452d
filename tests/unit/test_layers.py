"""The packages form a DAG in a declared layer order, with no import cycle
between modules, no lazy-import tricks and no file over 800 lines
(STYLE.md 12; docs/architecture.md "Packages").

The import graph is built from the source (ast), not by importing: an import
that only a type checker runs (``if TYPE_CHECKING:``) is not an edge, any other
import is, wherever it stands (a function-level import still loads the module
at run time, so it counts for cycles and layers alike).
"""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

import pytest

import netcfg
import netcfgd

# Lowest first: a package may import its own layer and the ones before it.
# data (where schemas/ and templates/ are) and spec (the schemas' loader) are
# one module each at netcfg's top; kinds sits below compile (the compiler asks
# each kind for its hooks) and plan below compile (the compiler's reference
# check uses plan.graph).
LAYERS = ("data", "model", "spec", "kinds", "plan", "compile", "netlink", "kernel", "apply", "cli",
          "ifupdown", "netcfgd")
MODULE_LAYERS = {"data", "spec"}
# Not layers: netcfg/__init__ (the version, importable from anywhere) and
# netcfg/__main__ (the entry point, above everything).
TOP_FILES = {"__init__.py", "__main__.py"}
MAX_LINES = 800

NETCFG = Path(netcfg.__file__).parent
NETCFGD = Path(netcfgd.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for root in (NETCFG, NETCFGD):
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _runtime_imports(tree: ast.AST):
    """Import nodes outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _known(name: str) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        # `from pkg import mod` imports the module pkg.mod
        names = [f"{base}.{alias.name}" for alias in node.names]
    return {t for t in map(_known, names) if t and t != module}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[module] = set().union(*(_targets(module, path, n) for n in _runtime_imports(tree)))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "netcfgd":
        return "netcfgd"
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None


def test_cycles_finds_a_cycle():
    # The check can fail: a two-module loop and a self-contained chain.
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_is_real():
    graph = import_graph()
    assert len(graph) > 80
    assert "netcfg.model.model" in graph["netcfg.kinds.base"]
    assert "netcfg.plan.graph" in graph["netcfg.compile.validate"]


def test_no_module_import_cycles():
    assert cycles(import_graph()) == []


def test_packages_follow_the_layer_order():
    wrong = []
    for module, targets in import_graph().items():
        here = layer(module)
        if here is None:
            continue
        assert here in LAYERS, f"{module}: package {here} has no place in LAYERS"
        for target in targets:
            there = layer(target)
            if there is not None and LAYERS.index(there) > LAYERS.index(here):
                wrong.append(f"{module} ({here}) imports {target} ({there})")
    assert wrong == []


def test_no_loose_modules_at_the_top():
    assert {p.name for p in NETCFG.glob("*.py")} <= TOP_FILES | {f"{m}.py" for m in MODULE_LAYERS}
    packages = {p.name for p in NETCFG.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS[:-1]) - MODULE_LAYERS


def test_no_module_getattr():
    # A lazy module __getattr__ hides imports from this graph (and from readers).
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "__getattr__" not in names, module


def test_no_file_over_800_lines():
    long = {str(p): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_setup_cfg_lists_every_package():
    # setuptools installs only the packages named there; one left out is
    # missing from the wheel and the Debian package, not from a checkout.
    setup_cfg = NETCFG.parent / "setup.cfg"
    if not setup_cfg.exists():
        pytest.skip("an installed netcfg: no setup.cfg beside it")
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    listed = set(config["options"]["packages"].split())
    # Each import root (the tree's top for netcfg, daemon/ for netcfgd) names its packages.
    packages = {".".join(p.relative_to(root.parent).parts)
                for root in (NETCFG, NETCFGD) for p in [root, *root.rglob("*")]
                if (p / "__init__.py").exists()}
    assert listed == packages
