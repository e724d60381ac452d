"""The collection as its users meet it: ansible-lint (production profile) has
nothing to say, and ansible-doc shows every module's documentation."""

from __future__ import annotations

import subprocess

import pytest
from conftest import ANSIBLE_VENV, COLLECTION, ansible_env

MODULES = ("netcfg_apply", "netcfg_confirm", "netcfg_facts")


def test_ansible_lint_passes(installed_collection, ansible_home):
    done = subprocess.run([str(ANSIBLE_VENV / "bin/ansible-lint"), "--offline", "--nocolor",
                           "--profile", "production", "--project-dir", "."],
                          capture_output=True, text=True, cwd=COLLECTION,
                          env=ansible_env(ansible_home), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout + done.stderr


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_shows_the_module(installed_collection, ansible_home, module):
    done = subprocess.run([str(ANSIBLE_VENV / "bin/ansible-doc"), f"netcfg.fleet.{module}"],
                          capture_output=True, text=True, env=ansible_env(ansible_home))
    assert done.returncode == 0, done.stderr
    assert f"netcfg.fleet.{module}" in done.stdout
    for section in ("OPTIONS", "EXAMPLES", "RETURN VALUES"):
        assert section in done.stdout, f"ansible-doc {module} has no {section}"
    assert "[WARNING]" not in done.stderr and "ERROR" not in done.stderr, done.stderr


def test_ansible_doc_shows_the_role(installed_collection, ansible_home):
    done = subprocess.run([str(ANSIBLE_VENV / "bin/ansible-doc"), "-t", "role",
                           "netcfg.fleet.rollout"],
                          capture_output=True, text=True, env=ansible_env(ansible_home))
    assert done.returncode == 0, done.stderr
    assert "rollout_confirm_timeout" in done.stdout
