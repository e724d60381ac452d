"""The fleet tier (`make test-fleet`): the Ansible collection in fleet/ansible.

ansible-core and ansible-lint come from their own venv (ANSIBLE_VENV, made by
`make fleet-deps` in .cache/ansible-venv), Debian's sshd from .cache/openssh
(SSHD). The lint and documentation checks need neither root nor sshd; the
rollout over 20 fake hosts needs root and runs, like the kernel tier, inside a
private network and mount namespace (the conftest refuses to run otherwise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox import enter_or_refuse

REPO = Path(__file__).resolve().parents[2]
COLLECTION = REPO / "fleet/ansible"
ANSIBLE_VENV = Path(os.environ.get("ANSIBLE_VENV") or REPO / ".cache/ansible-venv")
SSHD = os.environ.get("SSHD") or str(REPO / ".cache/openssh/usr/sbin/sshd")

MISSING = None
if not (ANSIBLE_VENV / "bin/ansible-playbook").exists():
    MISSING = f"no ansible-core in {ANSIBLE_VENV}: make fleet-deps"

ROOT_SKIP = None
if os.geteuid() != 0:
    ROOT_SKIP = "the fleet rollout needs root, inside a private network namespace: make test-fleet"
elif not os.path.exists(SSHD) or shutil.which("ssh") is None:
    ROOT_SKIP = "no sshd in .cache/openssh or no ssh client: make fleet-deps"
else:
    enter_or_refuse("test-fleet")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here not in Path(item.fspath).parents:
            continue
        if MISSING:
            item.add_marker(pytest.mark.skip(reason=MISSING))
        elif ROOT_SKIP and "fleet" in item.fixturenames:
            item.add_marker(pytest.mark.skip(reason=ROOT_SKIP))


def ansible_env(home: Path) -> dict[str, str]:
    """An environment for ansible-* that reads no ansible.cfg and writes only
    under HOME (the test's tmp dir)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update({
        "PATH": f"{ANSIBLE_VENV / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
        "ANSIBLE_CONFIG": str(home / "ansible.cfg"),   # does not exist: the defaults
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_COLLECTIONS_PATH": str(home / "collections"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
    })
    return env


@pytest.fixture(scope="session")
def ansible_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ansible-home")


@pytest.fixture(scope="session")
def installed_collection(ansible_home) -> Path:
    """The collection as an operator gets it: `ansible-galaxy collection
    build`, then `install` of that tarball into ANSIBLE_COLLECTIONS_PATH."""
    env = ansible_env(ansible_home)
    build_dir = ansible_home / "build"
    done = subprocess.run([str(ANSIBLE_VENV / "bin/ansible-galaxy"), "collection", "build",
                           str(COLLECTION), "--output-path", str(build_dir), "--force"],
                          capture_output=True, text=True, env=env, cwd=ansible_home)
    assert done.returncode == 0, done.stdout + done.stderr
    tarball, = build_dir.glob("netcfg-fleet-*.tar.gz")
    done = subprocess.run([str(ANSIBLE_VENV / "bin/ansible-galaxy"), "collection", "install",
                           str(tarball), "--force"],
                          capture_output=True, text=True, env=env, cwd=ansible_home)
    assert done.returncode == 0, done.stdout + done.stderr
    return tarball
