"""The kubernetes tier (`make test-kubernetes`): NetcfgPolicy against a real
kube-apiserver and etcd (build-control-plane.sh, cached in
.cache/kubernetes/VERSION/bin), with fake nodes from tests/fleet/fakehosts.py,
each running the agent (fleet/kubernetes/netcfg_agent) and its own netcfgd.
Root, inside a private network and mount namespace, like the fleet tier."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "fleet"), str(HERE.parents[1] / "fleet/kubernetes")]

from controlplane import BIN, kubectl_path  # noqa: E402
from sandbox import enter_or_refuse  # noqa: E402

SKIP = None
try:
    import kubernetes  # noqa: F401
except ImportError:
    SKIP = "no kubernetes client in the venv: make kubernetes-deps"
if SKIP is None and not (BIN / "kube-apiserver").exists():
    SKIP = f"no kube-apiserver in {BIN}: make kubernetes-deps"
if SKIP is None and kubectl_path() is None:
    SKIP = "no kubectl: apt-get install kubernetes-client"
if SKIP is None and os.geteuid() != 0:
    SKIP = "the kubernetes tier needs root, inside a private network namespace"
if SKIP is None:
    enter_or_refuse("test-kubernetes")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SKIP and HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.skip(reason=SKIP))
