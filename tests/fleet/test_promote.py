"""Issue 24, M13 and L6: a rollout keeps the files of dest the config does not
own, and check mode changes nothing on the host.

promote() is plain Python (module_utils imports nothing of Ansible), so it
is loaded from the collection's source and run on temporary directories.
The check-mode test runs the real module with ansible-core's Python, the way
Ansible runs it on a host (its arguments as JSON), with a stand-in `netcfg`
that prints an empty plan: what is judged is what the module itself writes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ANSIBLE_VENV, COLLECTION

CLI = COLLECTION / "plugins/module_utils/netcfg_cli.py"


def load_cli():
    spec = importlib.util.spec_from_file_location("netcfg_cli_under_test", CLI)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def stage(tmp: Path, dest: Path, files: dict[str, str]) -> str:
    staged = Path(str(dest) + ".staged")
    for name, text in files.items():
        write(staged / name, text)
    return str(staged)


def listing(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_two_rollouts_keep_the_wireguard_key_and_remove_dropped_templates(tmp_path):
    """t26_promote.py: the key is in dest and in .previous after two rollouts;
    a template the config no longer ships is gone, an old lib/ template too."""
    cli = load_cli()
    dest = tmp_path / "netcfg"
    write(dest / "site.tmpl", "auto br0\n")
    write(dest / "old.tmpl", "auto br9\n")
    write(dest / "lib/old.mako", "<%def name='x()'/>\n")
    write(dest / "wg0.key", "PRIVATE\n")
    write(dest / "if-up.d/hook", "#!/bin/sh\n")

    cli.promote(stage(tmp_path, dest, {"site.tmpl": "auto br1\n", "vars.json": "{}\n"}),
                str(dest))
    assert listing(dest) == {"if-up.d/hook": "#!/bin/sh\n", "site.tmpl": "auto br1\n",
                             "vars.json": "{}\n", "wg0.key": "PRIVATE\n"}
    cli.promote(stage(tmp_path, dest, {"site.tmpl": "auto br2\n"}), str(dest))
    assert listing(dest) == {"if-up.d/hook": "#!/bin/sh\n", "site.tmpl": "auto br2\n",
                             "wg0.key": "PRIVATE\n"}
    previous = Path(str(dest) + ".previous")
    assert listing(previous)["wg0.key"] == "PRIVATE\n"
    assert not Path(str(dest) + ".staged").exists()


def test_a_shipped_file_replaces_the_one_of_that_name(tmp_path):
    cli = load_cli()
    dest = tmp_path / "netcfg"
    write(dest / "wg0.key", "OLD\n")
    cli.promote(stage(tmp_path, dest, {"site.tmpl": "x\n", "wg0.key": "NEW\n"}), str(dest))
    assert listing(dest) == {"site.tmpl": "x\n", "wg0.key": "NEW\n"}


def test_files_differ_ignores_what_the_config_does_not_own(tmp_path):
    cli = load_cli()
    dest = tmp_path / "netcfg"
    write(dest / "site.tmpl", "auto br0\n")
    write(dest / "wg0.key", "K\n")
    staged = stage(tmp_path, dest, {"site.tmpl": "auto br0\n"})
    assert not cli.files_differ(staged, str(dest))
    write(dest / "old.tmpl", "auto br9\n")
    assert cli.files_differ(staged, str(dest))


FAKE_NETCFG = """#!/bin/sh
# Stands in for netcfg: an empty plan, and what it was asked.
echo "$@" >> "{log}"
echo '{{"plan": {{"operations": 1, "batches": [[{{"action": "link-add", "name": "br0"}}]]}}}}'
"""


@pytest.mark.skipif(not (ANSIBLE_VENV / "bin/python").exists(), reason="no ansible-core venv")
def test_check_mode_leaves_the_trial_record_and_stages_nothing_beside_dest(tmp_path):
    """L6: a confirmed trial's record (awaiting promote) survives a check-mode
    run, and nothing appears next to dest."""
    collections = tmp_path / "collections/ansible_collections/netcfg"
    collections.mkdir(parents=True)
    (collections / "fleet").symlink_to(COLLECTION)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = {"pid": 999999999, "staged": "x", "dest": "y", "confirmed": True}
    (run_dir / "fleet-trial.json").write_text(json.dumps(record))
    etc = tmp_path / "etc"
    dest = etc / "netcfg"
    write(dest / "site.tmpl", "auto br0\n")
    fake = tmp_path / "netcfg"
    fake.write_text(FAKE_NETCFG.format(log=tmp_path / "calls"))
    fake.chmod(0o755)
    before = sorted(os.listdir(etc)), listing(dest), sorted(os.listdir(run_dir))
    args = {"ANSIBLE_MODULE_ARGS": {
        "src": "/unused", "dest": str(dest), "files": {"site.tmpl": "auto br1\n"},
        "vars": {}, "executable": str(fake), "run_dir": str(run_dir),
        "_ansible_check_mode": True}}
    (tmp_path / "args.json").write_text(json.dumps(args))
    done = subprocess.run(
        [str(ANSIBLE_VENV / "bin/python"), "-m",
         "ansible_collections.netcfg.fleet.plugins.modules.netcfg_apply",
         str(tmp_path / "args.json")],
        capture_output=True, text=True, cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path / "collections")})
    out = json.loads(done.stdout)
    assert not out.get("failed"), out
    assert out["changed"] and out["operations"] == 1 and out["files_changed"]
    assert (sorted(os.listdir(etc)), listing(dest), sorted(os.listdir(run_dir))) == before
    assert json.loads((run_dir / "fleet-trial.json").read_text()) == record
    assert "--dry-run" in (tmp_path / "calls").read_text()
