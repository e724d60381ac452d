"""netcfgd serving iSCSI to tenants (daemon/netcfgd/storage.py), as a real process
in the sandbox: two tenant namespaces with the same address each discover
and reach only their own target, `netcfg status` shows the targets, and a
tenant namespace deleted from outside is re-created with a fresh listener.
Clients are libiscsi's (Debian's libiscsi-bin), run inside each namespace.
"""

from __future__ import annotations

import os
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


# ------------------------------------------------------------ storage changes

def _session_client():
    """The raw iSCSI session of the data path tier (tests/dataplane): a
    session that lives across an apply, which libiscsi's one-shot clients
    cannot keep."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dataplane"))
    import iscsi_clients
    return iscsi_clients


HOST_IQN = "iqn.2026-11.test.netcfg:host.db"


def host_volume(tmp_path, backing: str, size: str) -> str:
    """One volume served in the sandbox's own namespace on 127.0.0.1."""
    return textwrap.dedent(f"""\
        volume db
            backing {tmp_path}/volumes/{backing}
            size {size}

        target {HOST_IQN}
            portal 127.0.0.1:3260
            lun 0 db
        """)


def capacity(url: str) -> int:
    done = subprocess.run(["iscsi-readcapacity16", url], capture_output=True, text=True, timeout=20)
    for line in done.stdout.splitlines():
        if line.startswith("Total size:"):
            return int(line.split(":")[1])
    return 0


def test_storage_changes_are_applied_and_reported(make_daemon, tmp_path):
    clients = _session_client()
    daemon = make_daemon(host_volume(tmp_path, "a.img", "8M"))
    url = f"iscsi://127.0.0.1:3260/{HOST_IQN}/0"
    wait_for(lambda: capacity(url), 20, "the volume served", step=0.2)
    assert capacity(url) == 8 << 20
    live = clients.Session("127.0.0.1", HOST_IQN)
    etc = tmp_path / "etc"

    def apply(text: str) -> subprocess.CompletedProcess:
        (etc / "a.tmpl").write_text(text)
        return cli(daemon.run_dir, "apply", "-c", str(etc))

    try:
        assert clients.read_capacity16(live)[2] == 8 << 20
        # Grow: online, the live session told, the new size served.
        done = apply(host_volume(tmp_path, "a.img", "16M"))
        assert done.returncode == 0, done.stderr
        assert "storage: volume db: grown online from 8388608 to 16777216 bytes" in done.stdout
        status, sense, _ = clients.read_capacity16(live)
        assert (status, sense[12:14]) == (0x02, b"\x2a\x09"), "CAPACITY DATA HAS CHANGED"
        assert clients.read_capacity16(live) == (0, b"", 16 << 20)
        assert capacity(url) == 16 << 20

        # Shrink under a live session: refused, said, exit 5, in status.
        done = apply(host_volume(tmp_path, "a.img", "4M"))
        assert done.returncode == 5, done.stdout + done.stderr
        assert "not shrunk" in done.stderr and "live session" in done.stderr
        shown = cli(daemon.run_dir, "status")
        assert "not shrunk" in shown.stdout, shown.stdout
        assert clients.read_capacity16(live) == (0, b"", 16 << 20)

        # A new backing: re-opened, the live session told the medium changed.
        done = apply(host_volume(tmp_path, "b.img", "16M"))
        assert done.returncode == 0, done.stderr
        assert "re-opened: backing" in done.stdout and "b.img" in done.stdout
        new = tmp_path / "volumes" / "b.img"
        assert new.stat().st_size == 16 << 20 and new.stat().st_mode & 0o777 == 0o600
        status, sense, _ = clients.read_capacity16(live)
        assert (status, sense[12:14]) == (0x02, b"\x28\x00"), "MEDIUM MAY HAVE CHANGED"
        assert daemon.status()["storage"]["errors"] == []

        # A backing that is a symbolic link: refused, the old one still served.
        os.symlink(tmp_path / "volumes" / "a.img", tmp_path / "volumes" / "link.img")
        done = apply(host_volume(tmp_path, "link.img", "16M"))
        assert done.returncode == 5, done.stdout + done.stderr
        assert "symbolic link" in done.stderr and "still serving" in done.stderr
        assert "Traceback" not in done.stderr
        assert clients.read_capacity16(live) == (0, b"", 16 << 20)
    finally:
        live.close()
def _kernel_has_ublk() -> bool:
    """Whether ublk_drv is loaded, built in, or a module this kernel could load.

    Read from /sys and the kernel's module lists rather than `modprobe -n`: a
    fresh machine may have no kmod at all (CI's had none), and a kernel with no
    /lib/modules has nothing to load either.
    """
    if os.path.exists("/dev/ublk-control") or os.path.exists("/sys/module/ublk_drv"):
        return True
    modules = f"/lib/modules/{os.uname().release}"
    for listing in ("modules.builtin", "modules.dep"):
        try:
            with open(os.path.join(modules, listing)) as f:
                if "/ublk_drv.ko" in f.read():
                    return True
        except FileNotFoundError:
            pass
    return False


@pytest.mark.skipif(_kernel_has_ublk(), reason="this kernel has ublk_drv: the VM tier "
                    "(test_vm_ublk.py) serves it; this test is for a kernel without it")
def test_a_kernel_without_ublk_gets_a_status_line_and_iscsi_keeps_serving(make_daemon, tmp_path):
    text = config(tmp_path) + textwrap.dedent(f"""\

        volume local
            backing {tmp_path}/volumes/local.img
            size 8M
            ublk yes
        """)
    daemon = make_daemon(text)
    wait_for(lambda: serving(daemon) == {"t1": True, "t2": True}, 20, "both targets served")
    ublk = wait_for(lambda: daemon.status()["storage"].get("ublk", {}).get("unavailable"), 20,
                    "the ublk status line")
    assert "module ublk_drv" in ublk and "Debian's 6.12 kernel has it" in ublk
    if shutil.which("modprobe"):
        # The load was tried and what modprobe said is kept (issue 23 M4: under
        # the unit a refused load read as "the kernel has no ublk driver").
        assert "loading ublk_drv failed (" in ublk, ublk
    # Refused (an apply through netcfgd says so) for the ublk volume only.
    errors = daemon.status()["storage"]["errors"]
    assert len(errors) == 1 and errors[0].startswith("ublk: /dev/ublk-control is missing")
    assert errors[0].endswith("not served as local devices: volume local")
    listed = wait_for(lambda: discovered("t1"), 20, "discovery in t1", step=0.2)
    assert IQN.format(tenant="t1") in listed
    shown = cli(daemon.run_dir, "status")
    assert shown.returncode == 0, shown.stderr
    assert "ublk: unavailable: /dev/ublk-control is missing" in shown.stdout
    assert "iSCSI is not affected" in shown.stdout
