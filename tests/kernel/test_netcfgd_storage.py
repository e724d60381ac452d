"""netcfgd serving iSCSI to tenants (netcfgd/storage.py), as a real process
in the sandbox: two tenant namespaces with the same address each discover
and reach only their own target, `netcfg status` shows the targets, and a
tenant namespace deleted from outside is re-created with a fresh listener.
Clients are libiscsi's (Debian's libiscsi-bin), run inside each namespace.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import pytest
from test_netcfgd import cli, wait_for
from test_netcfgd import make_daemon  # noqa: F401 - the fixture, shared

pytestmark = pytest.mark.skipif(shutil.which("iscsi-ls") is None,
                                reason="needs libiscsi-bin (make kernel-deps)")

IQN = "iqn.2026-11.test.netcfg:{tenant}.db"
PORTAL = "10.0.0.1"          # the same address in both tenants


def config(tmp_path) -> str:
    return textwrap.dedent(f"""\
        % for tenant in ("t1", "t2"):
        netns ${{tenant}}

        auto lo
        iface lo inet loopback
            netns ${{tenant}}
            address {PORTAL}/32

        volume ${{tenant}}-db
            backing {tmp_path}/volumes/${{tenant}}-db.img
            size 8M

        target iqn.2026-11.test.netcfg:${{tenant}}.db
            netns ${{tenant}}
            portal {PORTAL}:3260
            lun 0 ${{tenant}}-db
        % endfor
        """)


def in_tenant(tenant: str, *argv: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", tenant, *argv], capture_output=True,
                          text=True, timeout=timeout)


def discovered(tenant: str) -> str:
    """What SendTargets lists in ``tenant`` ("" while nothing answers)."""
    done = in_tenant(tenant, "iscsi-ls", "-s", f"iscsi://{PORTAL}")
    return done.stdout if done.returncode == 0 else ""


def serving(daemon) -> dict[str, bool]:
    storage = daemon.status()["storage"]
    return {t["netns"]: t["serving"] for t in storage["targets"]}


def test_each_tenant_reaches_only_its_own_target(make_daemon, tmp_path):
    daemon = make_daemon(config(tmp_path))
    wait_for(lambda: serving(daemon) == {"t1": True, "t2": True}, 20, "both targets served")
    for tenant, other in (("t1", "t2"), ("t2", "t1")):
        listed = wait_for(lambda: discovered(tenant), 20, f"discovery in {tenant}", step=0.2)
        assert IQN.format(tenant=tenant) in listed
        assert IQN.format(tenant=other) not in listed
        inquiry = in_tenant(tenant, "iscsi-inq", f"iscsi://{PORTAL}/{IQN.format(tenant=tenant)}/0")
        assert inquiry.returncode == 0, inquiry.stderr
        # The other tenant's IQN is not there, though the address is the same.
        refused = in_tenant(tenant, "iscsi-inq", f"iscsi://{PORTAL}/{IQN.format(tenant=other)}/0")
        assert refused.returncode != 0

    shown = cli(daemon.run_dir, "status")
    assert shown.returncode == 0, shown.stderr
    assert IQN.format(tenant="t1") in shown.stdout and f"{PORTAL}:3260" in shown.stdout


def test_a_tenant_deleted_from_outside_gets_a_fresh_listener(make_daemon, tmp_path):
    daemon = make_daemon(config(tmp_path))
    wait_for(lambda: discovered("t1"), 20, "discovery in t1", step=0.2)
    subprocess.run(["ip", "netns", "del", "t1"], check=True)
    # netcfgd re-creates t1 with its address; the target listens in the new one.
    listed = wait_for(lambda: discovered("t1"), 30, "discovery in the re-created t1", step=0.2)
    assert IQN.format(tenant="t1") in listed
    assert serving(daemon) == {"t1": True, "t2": True}
    assert discovered("t2"), "the other tenant kept its listener"
