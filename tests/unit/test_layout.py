"""The project's top level is the brief's (DESIGN.md "Layout"), and its data is
found the same way from a checkout and from an installed prefix.

netcfg/    the library, the CLI and ifupdown2's commands
templates/ lib/ and examples/
schemas/   the JSON Schemas, one file per kind or trait
daemon/    netcfgd (daemon/netcfgd/, imported as ``netcfgd``), its unit, dataplane/
tests/ debian/ setup.cfg
"""

from __future__ import annotations

import configparser
import glob
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import netcfg
import netcfgd
from netcfg.data import data_dir, schemas_dir, templates_dir

TOP = Path(netcfg.__file__).resolve().parent.parent
BRIEF_TOP_LEVEL = {"netcfg", "templates", "schemas", "daemon", "tests", "debian", "setup.cfg"}

checkout_only = pytest.mark.skipif(not (TOP / "setup.cfg").exists(),
                                   reason="an installed netcfg: no tree around it")


@checkout_only
def test_the_top_level_is_the_briefs():
    names = {p.name for p in TOP.iterdir()}
    assert BRIEF_TOP_LEVEL <= names
    # Nothing left where the layout before issue 25 had it.
    assert not (TOP / "netcfgd").exists()
    assert not (TOP / "netcfg" / "schemas").exists()
    assert not (TOP / "netcfg" / "templates").exists()


@checkout_only
def test_daemon_holds_the_package_the_unit_and_the_crates():
    daemon = TOP / "daemon"
    assert Path(netcfgd.__file__).resolve() == daemon / "netcfgd" / "__init__.py"
    assert (daemon / "netcfgd.service").is_file()
    assert (daemon / "dataplane" / "Cargo.toml").is_file()


def test_schemas_and_templates_are_where_the_data_is():
    assert (schemas_dir() / "netcfg.schema.json").is_file()
    kinds = {p.stem for p in (schemas_dir() / "kinds").glob("*.json")}
    assert {"bridge", "vlan", "vxlan", "common"} <= kinds
    assert (templates_dir() / "lib" / "netcfg.tmpl").is_file()
    assert sorted(p.name for p in (templates_dir() / "examples").glob("*.tmpl"))


@checkout_only
def test_a_checkout_finds_its_own_data():
    assert data_dir() == TOP


@checkout_only
def test_setup_cfg_installs_every_data_file_under_share_netcfg():
    # pip and the Debian package (pybuild) install data_files under PREFIX/share/netcfg;
    # a schema or template that no line matches would be missing there only.
    config = configparser.ConfigParser()
    config.read(TOP / "setup.cfg")
    installed = set()
    for target, patterns in config["options.data_files"].items():
        assert target.startswith("share/netcfg/"), target
        for pattern in patterns.replace(",", " ").split():
            for path in glob.glob(str(TOP / pattern)):
                relative = Path(path).relative_to(TOP)
                assert str(relative.parent) == target.removeprefix("share/netcfg/"), (target, path)
                installed.add(relative)
    shipped = {p.relative_to(TOP) for d in ("schemas", "templates") for p in (TOP / d).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == installed


@checkout_only
def test_an_installed_prefix_finds_its_data(tmp_path):
    # A venv with netcfg copied into its site-packages and the data under
    # PREFIX/share/netcfg, as setup.cfg's data_files lay them out (Debian: /usr).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip",
                    str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    shutil.copytree(TOP / "netcfg", Path(site) / "netcfg",
                    ignore=shutil.ignore_patterns("__pycache__"))
    share = tmp_path / "venv" / "share" / "netcfg"
    for name in ("schemas", "templates"):
        shutil.copytree(TOP / name, share / name, ignore=shutil.ignore_patterns("__pycache__"))
    # -I: neither the checkout (cwd, PYTHONPATH) nor the test venv's editable install.
    out = subprocess.run(
        [python, "-I", "-c", "import netcfg, netcfg.data as d, netcfg.spec as s;"
         "print(netcfg.__file__); print(d.data_dir()); print(len(s.all_groups()))"],
        capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    package, data, groups = out.stdout.split()
    assert package.startswith(site) and Path(data) == share and int(groups) > 10
