"""The Linux open-iscsi initiator against netcfgd's iSCSI target: the VM tier.

Two tenants, t1 and t2, both with the portal 10.0.0.1:3260 in their own
network namespace, each with its own 64 MiB sparse volume; t1's target wants
CHAP and names its initiator. The kernel initiator (iscsid + iscsi_tcp,
Debian's open-iscsi 2.1.8 unpacked by `make iscsi-initiator`, never
installed) discovers with SendTargets, logs in, and the test puts ext4 on
each disk, writes files of known content, checks the file system, restarts
the target process twice (once under live sessions, which iscsid must
re-establish; once after logging out) and reads every byte back.

What the kernel allows, found here on Debian's 6.12:

- The kernel's iSCSI transport is not per network namespace. Its netlink
  socket (NETLINK_ISCSI) exists in the initial namespace only
  (scsi_transport_iscsi keeps one global kernel socket, no pernet ops). An
  iscsid started in a tenant namespace opens the socket and even connects
  its TCP socket to the portal, but its first request to the kernel fails
  ("sendmsg: bug? ctrl_fd 7"), iscsid exits and iscsiadm reports error 18
  (could not communicate to iscsid); no session or SCSI host appears. So
  iscsid and iscsiadm (which reaches iscsid over an abstract unix socket,
  itself per namespace) run in the VM's initial namespace, and each tenant
  is reached across a veth pair from there.
- The TCP socket a session uses is made by iscsid and handed to the kernel,
  so it lives in whatever namespace iscsid is in. The tenants' overlapping
  addresses are told apart on the initiator's side with a VRF per tenant
  (vrf-tN, table 10N) holding the host end of the veth (isc-tN, 10.0.0.2/24)
  and an open-iscsi iface per tenant bound to it (iface.net_ifacename:
  SO_BINDTODEVICE for discovery and for the session). One SendTargets over
  both ifaces finds exactly one target through each.
- After SIGTERM the target closes every connection; iscsid reconnects and
  logs in again (ERL 0 session reinstatement) once the new process serves,
  and the disks come back without the SCSI layer seeing an error.
- On SIGTERM iscsid signals its whole process group: it is started in a
  session of its own, or it takes the test runner down with it.

The target runs as its own process (`netcfgd.target.main`, the code behind
``python -m netcfgd.target``), forked from the test process rather than
exec'd: under qemu TCG on this 2-core machine a fresh ``python -m
netcfgd.target`` took 33-80 s to start serving (interpreter, imports,
compiling the config), the fork about a second.

Root only, inside the virtme-ng VM (`make test-vm`): the test changes the
VM's initial network namespace (a VRF and a veth per tenant), so it refuses
to run anywhere that is not virtme's guest, and it mounts its own /etc (an
overlay) and /run/lock so that open-iscsi's node database and locks vanish
with the test's mount namespace.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from vm_helpers import SETTLE_S, fork_target, terminate, wait_for

REPO = Path(__file__).resolve().parents[2]
OPEN_ISCSI = REPO / ".cache" / "open-iscsi"
ISCSID = OPEN_ISCSI / "sbin" / "iscsid"
ISCSIADM = OPEN_ISCSI / "sbin" / "iscsiadm"
LIBS = OPEN_ISCSI / "usr" / "lib" / "x86_64-linux-gnu"

IQN = "iqn.2024-01.org.netcfg.test"
INITIATOR = f"{IQN}:vm-initiator"
TENANTS = ("t1", "t2")
PORTAL = "10.0.0.1"
CHAP_USER, CHAP_SECRET = "t1-host", "t1-chap-secret-0042"
VOLUME_BYTES = 64 << 20
# iscsiadm's exit codes (open-iscsi include/iscsi_err.h).
ISCSI_ERR_NO_OBJS_FOUND = 21
ISCSI_ERR_LOGIN_AUTH_FAILED = 24
INIT_NET = ["nsenter", "--net=/proc/1/ns/net"]


def target_iqn(tenant: str) -> str:
    return f"{IQN}:{tenant}.data"


def _in_virtme_guest() -> bool:
    try:
        return "virtme" in Path("/proc/cmdline").read_text()
    except OSError:
        return False


def _iscsi_tcp_loaded() -> bool:
    subprocess.run(["modprobe", "-q", "iscsi_tcp"], capture_output=True)
    return os.path.isdir("/sys/module/iscsi_tcp")


def _skip_reason() -> str | None:
    # Order matters: nothing is loaded or changed before we know we are the
    # VM's guest (a host with iscsi_tcp must not get our VRFs and iscsid).
    if os.geteuid() != 0:
        return "VM tier: needs root (make test-vm)"
    if not _in_virtme_guest():
        return "VM tier: changes the initial network namespace, so runs only in virtme's VM " \
               "(make test-vm)"
    if not _iscsi_tcp_loaded():
        return "VM tier: needs the kernel's iscsi_tcp (Debian's 6.12 in the VM; make test-vm)"
    if not (ISCSID.exists() and ISCSIADM.exists()):
        return f"needs open-iscsi unpacked in {OPEN_ISCSI.relative_to(REPO)}: make iscsi-initiator"
    return None


SKIP_REASON = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


def run(cmd: list[str], check: bool = True, timeout: float = SETTLE_S,
        **kwargs) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                       **kwargs)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n"
                             f"{r.stdout}{r.stderr}")
    return r


def in_init_net(*cmd, check: bool = True) -> subprocess.CompletedProcess:
    return run([*INIT_NET, *cmd], check=check)


def iscsiadm(*args, check: bool = True) -> subprocess.CompletedProcess:
    """iscsiadm in the initial namespace, where iscsid listens."""
    env = dict(os.environ, LD_LIBRARY_PATH=str(LIBS))
    return run([*INIT_NET, ISCSIADM, *args], check=check, env=env)


# --- the initiator's private world ------------------------------------------

ISCSID_CONF = """\
# iscsiadm runs this when it cannot reach iscsid; the package's default
# (systemctl start iscsid.socket) must never run.
iscsid.startup = /bin/true
node.startup = manual
node.session.scan = auto
node.session.initial_login_retry_max = 4
node.conn[0].timeo.login_timeout = 15
# Long enough for a target restart under qemu TCG without failing queued I/O.
node.session.timeo.replacement_timeout = 180
node.conn[0].timeo.noop_out_interval = 10
node.conn[0].timeo.noop_out_timeout = 30
"""


def _mount(*args) -> None:
    run(["mount", *args])


@pytest.fixture
def private_etc(tmp_path):
    """/etc as an overlay whose writes go to a tmpfs, and a fresh /run/lock:
    open-iscsi keeps its config and node database in /etc/iscsi and its locks
    in /run/lock/iscsi, paths compiled in."""
    upper = tmp_path / "etc-overlay"
    upper.mkdir()
    _mount("-t", "tmpfs", "tmpfs", upper)
    (upper / "upper").mkdir()
    (upper / "work").mkdir()
    _mount("-t", "overlay", "overlay", "-o",
           f"lowerdir=/etc,upperdir={upper}/upper,workdir={upper}/work", "/etc")
    lock = Path("/run/lock")
    own_lock = lock.is_dir()
    if own_lock:
        _mount("-t", "tmpfs", "tmpfs", lock)
    os.makedirs("/run/lock/iscsi", exist_ok=True)
    etc = Path("/etc/iscsi")
    etc.mkdir(exist_ok=True)
    (etc / "iscsid.conf").write_text(ISCSID_CONF)
    (etc / "initiatorname.iscsi").write_text(f"InitiatorName={INITIATOR}\n")
    yield etc
    if own_lock:
        run(["umount", "-l", lock], check=False)
    run(["umount", "-l", "/etc"], check=False)
    run(["umount", "-l", upper], check=False)


@pytest.fixture
def tenants(netns_dir):
    """t1 and t2, each with eth0 = 10.0.0.1/24; the other end of each veth in
    the initial namespace (isc-tN, 10.0.0.2/24) inside VRF vrf-tN."""
    for n, tenant in enumerate(TENANTS, start=1):
        netns_dir.create(tenant)
        run(["ip", "-n", tenant, "link", "set", "lo", "up"])
        in_init_net("ip", "link", "add", f"vrf-{tenant}", "type", "vrf", "table", str(100 + n))
        in_init_net("ip", "link", "add", f"isc-{tenant}", "type", "veth",
                    "peer", "name", "eth0", "netns", tenant)
        in_init_net("ip", "link", "set", f"isc-{tenant}", "master", f"vrf-{tenant}")
        in_init_net("ip", "addr", "add", "10.0.0.2/24", "dev", f"isc-{tenant}")
        in_init_net("ip", "link", "set", f"vrf-{tenant}", "up")
        in_init_net("ip", "link", "set", f"isc-{tenant}", "up")
        run(["ip", "-n", tenant, "addr", "add", f"{PORTAL}/24", "dev", "eth0"])
        run(["ip", "-n", tenant, "link", "set", "eth0", "up"])
    yield TENANTS
    for tenant in TENANTS:
        in_init_net("ip", "link", "del", f"isc-{tenant}", check=False)
        in_init_net("ip", "link", "del", f"vrf-{tenant}", check=False)


@pytest.fixture
def iscsid(private_etc, tmp_path):
    """iscsid in the foreground, in the initial namespace (the only one the
    kernel's iSCSI netlink socket answers in); every session logged out and
    iscsid stopped after."""
    log = open(tmp_path / "iscsid.log", "w")
    # Its own session: on SIGTERM iscsid signals its whole process group.
    proc = subprocess.Popen([*INIT_NET, str(ISCSID), "-f"], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, LD_LIBRARY_PATH=str(LIBS)),
                            start_new_session=True)
    try:
        wait_for("iscsid to answer iscsiadm",
                 lambda: iscsiadm("-m", "session", check=False).returncode
                 in (0, ISCSI_ERR_NO_OBJS_FOUND), timeout=60)
        yield proc
    finally:
        iscsiadm("-m", "node", "-u", check=False)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# --- the target ---------------------------------------------------------------

def storage_config(tmp_path: Path) -> Path:
    chap = tmp_path / "t1.chap"
    chap.write_text(f"{CHAP_USER} {CHAP_SECRET}\n")
    os.chmod(chap, 0o600)
    text = ""
    for tenant in TENANTS:
        # The interface is here because a portal must be an address of an
        # interface in the target's namespace; the runner does not apply it.
        text += f"""
iface eth0
    netns {tenant}
    address {PORTAL}/24

volume {tenant}-data
    backing {tmp_path}/{tenant}.img
    size {VOLUME_BYTES >> 20}M

target {target_iqn(tenant)}
    netns {tenant}
    portal {PORTAL}:3260
    lun 0 {tenant}-data
"""
        if tenant == "t1":
            text += f"""    allow-initiator {INITIATOR}
    chap-secret-file {chap}
"""
    path = tmp_path / "storage.cfg"
    path.write_text(text)
    # Compiled once here too: a config error shows in the test's own
    # traceback, and the child forked later finds the compiler warm.
    from netcfg.compile.pipeline import ConfigSource, compile_config
    compile_config(ConfigSource(path=str(path)))
    return path


class TargetProcess:
    """netcfgd's standalone target in a child process; stop() returns its
    exit code and the stats it printed (None, {} when already stopped)."""

    def __init__(self, config: Path, logdir: Path, generation: int):
        self.out = logdir / f"target{generation}.out"
        self.err = logdir / f"target{generation}.err"
        self.pid = fork_target(["-c", str(config), "--threads", "2", "--stats-on-exit"],
                               self.out, self.err)
        self.running = True
        try:
            wait_for("the target to serve both tenants", self._serving)
        except BaseException:
            self.stop()
            raise

    def _serving(self) -> bool:
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.running = False
            raise AssertionError(f"target exited ({status:#x}): {self.err.read_text()}")
        return self.err.exists() and self.err.read_text().count("serving ") == len(TENANTS)

    def stop(self) -> tuple[int | None, dict]:
        if not self.running:
            return None, {}
        self.running = False
        status = terminate(self.pid, "target")
        text = self.out.read_text()
        return os.waitstatus_to_exitcode(status), json.loads(text) if text.strip() else {}


# --- reading the initiator's state back ---------------------------------------

def sessions() -> dict[tuple[str, str], dict]:
    """{(target, iface): {"sid", "state", "disk"}} from /sys/class/iscsi_session."""
    found = {}
    for path in glob.glob("/sys/class/iscsi_session/session*"):
        def attr(name):
            return Path(path, name).read_text().strip()
        disks = [os.path.basename(p) for p in glob.glob(f"{path}/device/target*/*/block/*")]
        found[(attr("targetname"), attr("ifacename"))] = {
            "sid": path.rsplit("session", 1)[1], "state": attr("state"),
            "disk": disks[0] if len(disks) == 1 else None}
    return found


def disk_of(tenant: str) -> str:
    """/dev/sdX of the tenant's LUN 0, once the session is up and scanned."""
    def ready():
        s = sessions().get((target_iqn(tenant), tenant))
        if s and s["state"] == "LOGGED_IN" and s["disk"] and os.path.exists(f"/dev/{s['disk']}"):
            return f"/dev/{s['disk']}"
        return None
    return wait_for(f"{tenant}'s disk", ready)


def node_records() -> set[tuple[str, str, str]]:
    """(target, portal, iface) of every node record iscsiadm holds."""
    records, target, portal = set(), None, None
    for line in iscsiadm("-m", "node", "-P", "1").stdout.splitlines():
        line = line.strip()
        if line.startswith("Target: "):
            target = line.split()[1]
        elif line.startswith("Portal: "):
            portal = line.split()[1]
        elif line.startswith("Iface Name: "):
            records.add((target, portal, line.split(": ", 1)[1]))
    return records


def login(tenant: str, check: bool = True) -> subprocess.CompletedProcess:
    return iscsiadm("-m", "node", "-T", target_iqn(tenant), "-p", PORTAL, "-I", tenant, "-l",
                    check=check)


def set_chap(secret: str) -> None:
    for name, value in (("node.session.auth.authmethod", "CHAP"),
                        ("node.session.auth.username", CHAP_USER),
                        ("node.session.auth.password", secret)):
        iscsiadm("-m", "node", "-T", target_iqn("t1"), "-p", PORTAL, "-I", "t1",
                 "-o", "update", "-n", name, "-v", value)


# --- the file system ---------------------------------------------------------

def tenant_files(tenant: str) -> dict[str, bytes]:
    """What each tenant writes: its name, a 4 MiB blob and 40 small files,
    all different between tenants (seeded by the tenant's name)."""
    rng = random.Random(f"netcfg-iscsi-{tenant}")
    files = {"tenant": target_iqn(tenant).encode() + b"\n",
             "blob": rng.randbytes(4 << 20)}
    for i in range(40):
        files[f"small/{i:02d}"] = rng.randbytes(rng.randrange(1, 70000))
    return files


def digests(files: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def read_back(disk: str, mountpoint: Path) -> dict[str, str]:
    """sha256 of every file on the disk, mounted read-only."""
    run(["mount", "-o", "ro", disk, mountpoint])
    try:
        found = {}
        for path in sorted(mountpoint.rglob("*")):
            if path.is_file():
                found[str(path.relative_to(mountpoint))] = \
                    hashlib.sha256(path.read_bytes()).hexdigest()
        return found
    finally:
        run(["umount", mountpoint])


def fsck_clean(disk: str) -> None:
    r = run(["e2fsck", "-f", "-n", disk], check=False)
    assert r.returncode == 0, f"e2fsck -fn {disk} exited {r.returncode}:\n{r.stdout}{r.stderr}"


def test_open_iscsi_initiator_uses_each_tenants_volume_across_target_restarts(
        tenants, iscsid, tmp_path):
    started = time.monotonic()
    timings = {}
    config = storage_config(tmp_path)
    target = TargetProcess(config, tmp_path, 1)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        # One iface per tenant, bound to the VRF port that leads into it.
        for tenant in TENANTS:
            iscsiadm("-m", "iface", "-I", tenant, "-o", "new")
            iscsiadm("-m", "iface", "-I", tenant, "-o", "update",
                     "-n", "iface.net_ifacename", "-v", f"isc-{tenant}")

        # SendTargets through both ifaces to the same 10.0.0.1:3260: each
        # tenant's target, and only it, is found through its own iface.
        found = iscsiadm("-m", "discovery", "-t", "st", "-p", PORTAL,
                         "-I", "t1", "-I", "t2").stdout.split()
        assert sorted(found) == sorted([f"{PORTAL}:3260,1", target_iqn("t1"),
                                        f"{PORTAL}:3260,1", target_iqn("t2")])
        assert node_records() == {(target_iqn(t), f"{PORTAL}:3260,1", t) for t in TENANTS}

        # t1 wants CHAP: a wrong secret is refused, the right one logs in.
        set_chap("not-the-secret-0000")
        r = login("t1", check=False)
        assert r.returncode == ISCSI_ERR_LOGIN_AUTH_FAILED, r.stdout + r.stderr
        assert not sessions()
        set_chap(CHAP_SECRET)
        for tenant in TENANTS:
            login(tenant)
        assert {k: v["state"] for k, v in sessions().items()} == \
            {(target_iqn(t), t): "LOGGED_IN" for t in TENANTS}
        # The sessions' TCP connections leave through the tenants' VRF ports.
        conns = in_init_net("ss", "-Htn", "state", "established", "dport", "=", ":3260").stdout
        assert sorted(re.findall(r"10\.0\.0\.2%(isc-t\d)", conns)) == ["isc-t1", "isc-t2"]
        timings["discover+login"] = time.monotonic() - started

        expected = {}
        for tenant in TENANTS:
            disk = disk_of(tenant)
            size = int(Path(f"/sys/class/block/{os.path.basename(disk)}/size").read_text())
            assert size * 512 == VOLUME_BYTES
            run(["mkfs.ext4", "-q", "-F", "-L", tenant, disk])
            run(["mount", disk, mnt])
            try:
                files = tenant_files(tenant)
                for name, data in files.items():
                    (mnt / name).parent.mkdir(exist_ok=True)
                    (mnt / name).write_bytes(data)
                os.sync()
            finally:
                run(["umount", mnt])
            fsck_clean(disk)
            expected[tenant] = digests(files)
        assert expected["t1"] != expected["t2"]
        timings["mkfs+write"] = time.monotonic() - started

        # Restart the target under live sessions: iscsid reconnects by itself.
        code, stats = target.stop()
        assert code == 0
        assert sorted((t["netns"], t["iqn"], t["sessions"]) for t in stats["targets"]) == \
            [(t, target_iqn(t), 1) for t in TENANTS]
        assert stats["login_failures"] >= 1          # the wrong CHAP secret
        target = TargetProcess(config, tmp_path, 2)
        for tenant in TENANTS:
            assert read_back(disk_of(tenant), mnt) == expected[tenant]
        timings["restart under sessions"] = time.monotonic() - started

        # Log out, restart again, log in again: the data is still there.
        iscsiadm("-m", "node", "-u")
        assert iscsiadm("-m", "session", check=False).returncode == ISCSI_ERR_NO_OBJS_FOUND
        assert not sessions()
        code, stats = target.stop()
        assert code == 0 and all(t["sessions"] == 0 for t in stats["targets"])
        # What the initiator wrote is in each tenant's own backing file.
        for tenant in TENANTS:
            r = run(["debugfs", "-R", "cat /tenant", tmp_path / f"{tenant}.img"])
            assert r.stdout == target_iqn(tenant) + "\n"
        target = TargetProcess(config, tmp_path, 3)
        for tenant in TENANTS:
            login(tenant)
        for tenant in TENANTS:
            disk = disk_of(tenant)
            fsck_clean(disk)
            assert read_back(disk, mnt) == expected[tenant]
        iscsiadm("-m", "node", "-u")
        assert not sessions()
        timings["logout, restart, login"] = time.monotonic() - started
    finally:
        code, _ = target.stop()
    assert code in (0, None)
    print("timings (s, cumulative):", {k: round(v, 1) for k, v in timings.items()})
