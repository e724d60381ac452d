"""The pure core never imports pyroute2 (STYLE.md 1, DESIGN.md "The flow")."""

import ast
from pathlib import Path

import netcfg

# Everything below the kernel edge in tests/unit/test_layers.py's order.
PURE_PACKAGES = ("model", "schemas", "kinds", "plan", "compile", "netlink")
EDGE = ("netcfg.kernel", "netcfg.apply", "netcfg.cli", "netcfgd")
PACKAGE_ROOT = Path(netcfg.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_pure_packages_do_not_import_the_kernel_edge():
    checked = 0
    for package in PURE_PACKAGES:
        for path in (PACKAGE_ROOT / package).rglob("*.py"):
            imported = _imports(path)
            bad = {n for n in imported if n.split(".")[0] == "pyroute2"
                   or n.startswith("netcfg.kernel") or n == "netcfg.apply.execute"}
            assert not bad, f"{path} imports {sorted(bad)}"
            checked += 1
    assert checked >= 50  # the walk really found the packages


def test_compiling_does_not_load_pyroute2():
    import subprocess
    import sys

    code = ("import sys; from netcfg.compile.pipeline import ConfigSource, compile_config; "
            "import netcfg.plan, netcfg.cli.main; "
            "print('pyroute2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
