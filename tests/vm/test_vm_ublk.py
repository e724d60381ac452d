"""netcfgd's volumes as local ublk block devices: the VM tier.

Debian's 6.12 kernel (virtme-ng, `make test-vm`) has ublk_drv; the host's
kernel here does not (test_netcfgd_storage.py covers that message). What is
proved, each against the kernel's own view (sysfs, the block device, fio's
checksums):

- a `ublk yes` volume is /dev/ublkbN with the link /dev/netcfg/NAME, the
  owner and mode ublk-owner asks for and the volume's size; ext4 on it holds
  files that read back, and `fio --verify=crc32c` randrw passes;
- netcfgd itself (`python -m netcfgd`) killed with SIGKILL, then stopped
  with SIGTERM, each during one verifying fio: the device stays with its
  I/O waiting, the next netcfgd adopts it (same device number and link,
  START/END_USER_RECOVERY, "(adopted)" in `netcfg status`) and fio finishes
  without an error; the owner stays through udev `change` events;
- the same volume through open-iscsi and ublk at once: what one writes the
  other reads (O_DIRECT on both sides: each block device has its own cache);
- dropping a mounted device is refused and reported with what holds it,
  then done once it is unmounted.

The mount rule (libublk's README): the server must never be the last holder
of a mount namespace that mounts its own device, or that namespace's
teardown waits for I/O only the dead server could do. So every mount here is
made in a child's own mount namespace (`unshare --mount`) that is gone before
the server stops.

The restart test runs netcfgd as the process it is on a host. The others
use `netcfgd.target` (the data path netcfgd embeds, with the same
daemon/netcfgd/ublk.py) forked from the test process, as test_vm_iscsi.py does: a
fresh interpreter is slow to start under qemu TCG, the fork starts warm.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_vm_iscsi as iscsi
import vm_helpers
# open-iscsi's world for the cross test: fixtures shared with test_vm_iscsi.py.
from test_vm_iscsi import iscsid, private_etc, tenants  # noqa: F401

from netcfg.compile.pipeline import ConfigSource, compile_config

# netcfgd's test harness (a real NOTIFY_SOCKET, its control socket), shared
# with the kernel tier's tests of the daemon.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernel"))

SETTLE_S = vm_helpers.SETTLE_S
VOLUME_BYTES = 128 << 20
OWNER = (1000, 1000)


def _in_virtme_guest() -> bool:
    try:
        return "virtme" in Path("/proc/cmdline").read_text()
    except OSError:
        return False


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "VM tier: needs root (make test-vm)"
    if not _in_virtme_guest():
        return "VM tier: makes block devices, so runs only in virtme's VM (make test-vm)"
    subprocess.run(["modprobe", "-q", "ublk_drv"], capture_output=True)
    if not os.path.exists("/dev/ublk-control"):
        return "VM tier: needs the kernel's ublk_drv (Debian's 6.12 in the VM; make test-vm)"
    return None


SKIP_REASON = _skip_reason()
pytestmark = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


def run(cmd, check: bool = True, timeout: float = SETTLE_S, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def in_child_mount_ns(script: str, check: bool = True) -> subprocess.CompletedProcess:
    """A shell script in a mount namespace of its own: its mounts die with it."""
    return run(["unshare", "--mount", "--propagation", "private", "sh", "-euc", script], check=check)


def wait_for(what: str, probe, timeout: float = SETTLE_S):
    return vm_helpers.wait_for(what, probe, timeout, step=0.2)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ublk.cfg"
    path.write_text(text)
    compile_config(ConfigSource(path=str(path)))     # errors show here, and the child starts warm
    return path


def volume_config(tmp_path: Path, name: str = "v1", extra: str = "") -> Path:
    return write_config(tmp_path, f"""
volume {name}
    backing {tmp_path}/{name}.img
    size {VOLUME_BYTES >> 20}M
    ublk yes
    ublk-owner {OWNER[0]}:{OWNER[1]}
    ublk-queues 2
    ublk-depth 32
{extra}""")


class Server:
    """`netcfgd.target` in a forked child; `devices` maps volume -> (N, adopted)
    from the lines it prints once serving."""

    def __init__(self, config: Path, logdir: Path, generation: int, extra_args=(), wait_lines=1,
                 targets=0):
        self.out = logdir / f"server{generation}.out"
        self.err = logdir / f"server{generation}.err"
        self.pid = vm_helpers.fork_target(
            ["-c", str(config), "--threads", "1", "--stats-on-exit", *extra_args],
            self.out, self.err, log_info=True)
        self.running = True
        self.wait_lines, self.targets = wait_lines, targets
        wait_for("the server to serve", self._serving)

    def _serving(self) -> bool:
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.running = False
            raise AssertionError(f"server exited ({status:#x}): {self.err.read_text()}")
        if not self.err.exists():
            return False
        iscsi = [ln for ln in self.err.read_text().splitlines()
                 if ln.startswith("serving iqn.")]
        return len(self.devices()) >= self.wait_lines and len(iscsi) >= self.targets

    def devices(self) -> dict[str, tuple[int, bool]]:
        found = {}
        for line in self.err.read_text().splitlines():
            if line.startswith("serving ") and " as /dev/ublkb" in line:
                words = line.split()
                found[words[1]] = (int(words[3].removeprefix("/dev/ublkb")), "(adopted)" in line)
        return found

    def kill9(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.running = False

    def stop(self) -> tuple[int | None, dict]:
        if not self.running:
            return None, {}
        self.running = False
        status = vm_helpers.terminate(self.pid, "server")
        code = os.waitstatus_to_exitcode(status)
        assert code == 0, f"server exited {code}: {self.err.read_text()}"
        text = self.out.read_text()
        return code, json.loads(text) if text.strip() else {}


def remove_devices(config: Path, tmp_path: Path) -> None:
    """Adopt what is left and delete it (the last step of every test)."""
    server = Server(config, tmp_path, 99, ["--ublk-remove-on-exit"])
    server.stop()


def dev_of(server: Server, name: str = "v1") -> str:
    return f"/dev/ublkb{server.devices()[name][0]}"


def fio(dev: str, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    return run(["fio", "--name=verify", f"--filename={dev}", "--direct=1", "--ioengine=libaio",
                "--output-format=json", *args], timeout=timeout)


def fio_errors(result: subprocess.CompletedProcess) -> int:
    job = json.loads(result.stdout[result.stdout.index("{"):])["jobs"][0]
    return job["error"]


def test_ublk_device_holds_ext4_and_passes_fio_verify(tmp_path):
    config = volume_config(tmp_path)
    server = Server(config, tmp_path, 1)
    try:
        dev = dev_of(server)
        n = dev.removeprefix("/dev/ublkb")
        assert os.readlink("/dev/netcfg/v1") == f"../ublkb{n}"
        st = os.stat(dev)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (*OWNER, 0o660)
        assert int(Path(f"/sys/class/block/ublkb{n}/size").read_text()) * 512 == VOLUME_BYTES
        assert int(Path(f"/sys/class/block/ublkb{n}/queue/logical_block_size").read_text()) == 512
        assert len(list(Path(f"/sys/class/block/ublkb{n}/mq").iterdir())) == 2

        rng = random.Random("netcfg-ublk")
        src = tmp_path / "files"
        src.mkdir()
        for i in range(20):
            (src / f"f{i:02d}").write_bytes(rng.randbytes(rng.randrange(1, 200_000)))
        want = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in src.iterdir()}
        run(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev])
        in_child_mount_ns(f"mkdir -p {tmp_path}/mnt; mount {dev} {tmp_path}/mnt; "
                          f"cp {src}/* {tmp_path}/mnt/; umount {tmp_path}/mnt")
        got = in_child_mount_ns(f"mount -o ro {dev} {tmp_path}/mnt; cd {tmp_path}/mnt; "
                                f"sha256sum f*; cd /; umount {tmp_path}/mnt").stdout
        assert {ln.split()[1]: ln.split()[0] for ln in got.splitlines()} == want
        run(["e2fsck", "-f", "-n", dev])
        # What ext4 wrote is in the backing file: debugfs reads it there.
        f00 = subprocess.run(["debugfs", "-R", "cat /f00", str(tmp_path / "v1.img")],
                             capture_output=True, check=True).stdout
        assert hashlib.sha256(f00).hexdigest() == want["f00"]

        r = fio(dev, "--rw=randrw", "--bs=4k", "--size=32M", "--iodepth=16", "--verify=crc32c",
                "--verify_fatal=1")
        assert fio_errors(r) == 0
        # Discard: blocks read back as zeros and the file has a hole there.
        run(["blkdiscard", "-o", "0", "-l", str(1 << 20), dev])
        zeros = run(["sh", "-c", f"dd if={dev} bs=1M count=1 iflag=direct status=none | "
                                 f"tr -d '\\000' | wc -c"]).stdout.strip()
        assert zeros == "0"
        code, stats = server.stop()
        assert code == 0
        assert stats["ublk"] == [{"volume": "v1", "dev_id": int(n), "queues": 2, "depth": 32,
                                  "recovered": False}]
        assert stats["ublk_errors"] == 0 and stats["ublk_ios"] > 10000
        # SIGTERM left the device for the next process.
        assert os.path.exists(dev)
    finally:
        server.stop()
        remove_devices(config, tmp_path)
    assert not list(Path("/sys/class/ublk-char").glob("ublkc*"))
    assert not os.path.lexists("/dev/netcfg/v1")


def netcfgd_config(tmp_path: Path) -> Path:
    """netcfgd's config directory: one `ublk yes` volume, nothing else."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "ublk.tmpl").write_text(volume_config(tmp_path).read_text())
    return etc


def udevd_pid() -> int:
    """The VM's udevd (virtme's init starts one)."""
    found = subprocess.run(["pgrep", "-x", "systemd-udevd"], capture_output=True, text=True)
    pids = sorted(int(p) for p in found.stdout.split())
    assert pids, "udevd is not running in the VM: the owner's durability cannot be tested"
    return pids[0]


def in_udev_world(udevd: int, net: bool = False) -> list[str]:
    """A command prefix for the VM's own mount namespace, where udevd's /run
    is: the sandbox hides /run under a private tmpfs (tests/sandbox.py), and
    a bind mount of udevd's /run/udev into it does not carry its control
    socket (connect() says ENOENT). netcfgd keeps the sandbox's network
    namespace; ``net``: udevd's too, for `udevadm trigger --settle`, which
    hears udevd's netlink events only there."""
    return ["nsenter", "-t", str(udevd), "-m", *(["-n"] if net else []), "--"]


def start_netcfgd(tmp_path: Path, etc: Path, generation: int, udevd: int):
    """`python -m netcfgd` (the daemon itself, a fresh interpreter) with a real
    NOTIFY_SOCKET, every generation on the same run dir, as systemd restarts
    it, in the mount namespace udevd sees (a host's); returned once READY=1
    (after its first pass: the device is served)."""
    from test_netcfgd import Netcfgd
    home = tmp_path / f"netcfgd{generation}"
    home.mkdir()
    return Netcfgd(home, etc, run_dir=tmp_path / "run",
                   prefix=tuple(in_udev_world(udevd))).start(timeout=300)


def ublk_status(daemon) -> list[dict]:
    return daemon.status()["storage"]["ublk"]["devices"]


def udev_rules(udevd: int) -> str:
    return run([*in_udev_world(udevd), "cat", "/run/udev/rules.d/99-netcfgd-ublk.rules"]).stdout


def udev_keeps_the_owner(dev: str, udevd: int) -> None:
    """A udev `change` event on the device (blkid, a rescan, an operator's
    trigger) re-applies the rules: the owner and mode ublk-owner asked for stay."""
    run([*in_udev_world(udevd, net=True), "udevadm", "trigger", "--action=change", "--settle",
         dev])
    st = os.stat(dev)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (*OWNER, 0o660), \
        f"{dev} after a udev change event: {st.st_uid}:{st.st_gid} {st.st_mode & 0o777:o}"


FIO_LOOPS = 6


def test_netcfgd_kill9_and_sigterm_under_verifying_fio_then_adopted_with_no_io_error(tmp_path):
    """The daemon itself, not the standalone target: netcfgd serves a `ublk
    yes` volume; a verifying fio runs on /dev/netcfg/v1; netcfgd is killed
    with SIGKILL mid-I/O and restarted, then stopped with SIGTERM mid-I/O and
    restarted. Each new netcfgd adopts the same /dev/ublkbN
    (START/END_USER_RECOVERY), `netcfg status` says so, and fio ends with no
    error: no I/O was lost or failed. The owner survives udev events
    throughout (netcfgd's rule in /run/udev/rules.d). Then the config drops
    the device and netcfgd removes it, and its rule."""
    from test_netcfgd import cli
    udevd = udevd_pid()
    etc = netcfgd_config(tmp_path)
    daemons = [start_netcfgd(tmp_path, etc, 1, udevd)]
    fio_proc, dev_id = None, -1
    try:
        [device] = ublk_status(daemons[0])
        assert device["state"] == "serving" and device["adopted"] is False, device
        dev = device["device"]
        dev_id = int(dev.removeprefix("/dev/ublkb"))
        assert os.readlink("/dev/netcfg/v1") == f"../ublkb{dev_id}"
        assert f'KERNEL=="ublkb{dev_id}", OWNER="{OWNER[0]}", GROUP="{OWNER[1]}", ' \
               f'MODE="0660"' in udev_rules(udevd)
        udev_keeps_the_owner(dev, udevd)

        log = tmp_path / "fio.json"
        fio_proc = subprocess.Popen(
            ["fio", "--name=verify", "--filename=/dev/netcfg/v1", "--direct=1",
             "--ioengine=libaio", "--rw=randrw", "--bs=4k", "--size=64M", "--iodepth=16",
             # Each loop writes, then verifies: enough I/O to outlast both stops.
             f"--loops={FIO_LOOPS}", "--verify=crc32c", "--verify_fatal=1",
             "--output-format=json", f"--output={log}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for("fio to write 2000 blocks", lambda: writes_completed(dev_id) > 2000, timeout=300)
        for generation, how in ((2, signal.SIGKILL), (3, signal.SIGTERM)):
            old = daemons[-1]
            assert fio_proc.poll() is None, "fio ended before netcfgd was stopped"
            before = writes_completed(dev_id)
            print(f"netcfgd generation {generation - 1}: {how.name} after {before} writes")
            old.signal(how)
            assert old.proc.wait(60) == (-signal.SIGKILL if how == signal.SIGKILL else 0), \
                old.log.read_text()[-3000:]
            # Nobody serves the device now: it stays, its I/O waits.
            assert os.path.exists(dev) and os.readlink("/dev/netcfg/v1") == f"../ublkb{dev_id}"
            time.sleep(3)
            assert fio_proc.poll() is None, "fio ended while no netcfgd ran"
            daemons.append(start_netcfgd(tmp_path, etc, generation, udevd))
            [device] = ublk_status(daemons[-1])
            assert (device["device"], device["state"], device["adopted"]) == (dev, "serving", True)
            shown = cli(tmp_path / "run", "status")
            assert shown.returncode == 0, shown.stderr
            assert re.search(rf"^v1 +{dev} +serving as /dev/netcfg/v1 \(adopted\)$", shown.stdout,
                             re.M), shown.stdout
            udev_keeps_the_owner(dev, udevd)
            # I/O moves again before the next stop.
            wait_for("fio's I/O to resume", lambda: fio_proc.poll() is not None
                     or writes_completed(dev_id) > before + 500, timeout=300)
        assert fio_proc.wait(timeout=900) == 0, fio_proc.stderr.read()
        job = json.loads(log.read_text())["jobs"][0]
        assert job["error"] == 0
        assert job["write"]["io_bytes"] >= FIO_LOOPS * (16 << 20)    # about half of each 64M

        # The config drops the device (the volume stays, without ublk): it goes, with its rule.
        (etc / "ublk.tmpl").write_text(f"volume v1\n    backing {tmp_path}/v1.img\n"
                                       f"    size {VOLUME_BYTES >> 20}M\n")
        daemons[-1].signal(signal.SIGHUP)
        wait_for("netcfgd to remove the device", lambda: not os.path.exists(dev))
        wait_for("netcfgd to report it gone", lambda: ublk_status(daemons[-1]) == [])
        assert not os.path.lexists("/dev/netcfg/v1")
        assert f"ublkb{dev_id}" not in udev_rules(udevd)
        assert daemons[-1].stop(timeout=60) == 0
    finally:
        if fio_proc is not None and fio_proc.poll() is None:
            fio_proc.kill()
            fio_proc.wait()
        for daemon in daemons:
            daemon.close()
        if dev_id >= 0 and os.path.exists(f"/dev/ublkb{dev_id}"):
            remove_devices(volume_config(tmp_path), tmp_path)


def writes_completed(dev_id: int) -> int:
    """The block layer's count of completed writes (Documentation/block/stat.rst)."""
    return int(Path(f"/sys/class/block/ublkb{dev_id}/stat").read_text().split()[4])


def test_dropping_a_device_in_use_is_refused_then_done_once_free(tmp_path):
    """In this process, as netcfgd's passes do it: the config drops the
    volume while its device is mounted in another mount namespace, then
    while a process has it open; each time the device stays and says what
    holds it, and it goes once nothing does."""
    from netcfg.model.model import Model
    from netcfgd._dataplane import Dataplane
    from netcfgd.dataplane import Outcome, TargetService
    from netcfgd.ublk import UblkService, holders

    model = compile_config(ConfigSource(path=str(volume_config(tmp_path)))).model
    dp = Dataplane(threads=1)
    service, ublk = TargetService(dp), UblkService(dp, logging.getLogger("test"))
    holder = None
    try:
        out = Outcome()
        assert service.apply(model).errors == []
        ublk.add_wanted(model, out)
        assert out.errors == [] and out.changes == [
            f"ublk: volume v1: /dev/ublkb{ublk.served['v1'][1]} added (/dev/netcfg/v1)"]
        dev_id = ublk.served["v1"][1]
        dev = f"/dev/ublkb{dev_id}"
        run(["mkfs.ext4", "-q", "-F", dev])
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        empty = Model()

        def drop() -> Outcome:
            done = Outcome()
            ublk.remove_dropped(empty, done)
            applied = service.apply(empty, pinned=frozenset(ublk.pinned()))
            assert done.errors == [] and applied.errors == []     # kept is not an error
            done.changes += applied.changes
            return done

        for how, script in (("mounted", f"mount {dev} {mnt}; echo ready; exec sleep 600"),
                            ("open", f"exec 3<{dev}; echo ready; exec sleep 600")):
            holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh",
                                       "-euc", script], stdout=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "ready"
            assert drop().changes == []
            assert os.path.exists(dev) and os.path.lexists("/dev/netcfg/v1")
            if how == "mounted":
                expected = f"mounted on {mnt} (mount namespace of pid {holder.pid})"
            else:       # the shell may not have exec'd sleep yet
                expected = ublk.kept.get("v1", "")
                assert re.fullmatch(rf"open by (sh|sleep) \(pid {holder.pid}\)", expected), expected
            assert ublk.kept == {"v1": expected}
            assert ublk.status_json(set())["devices"] == [{
                "volume": "v1", "device": dev, "link": "/dev/netcfg/v1", "adopted": False,
                "state": "kept", "held_by": expected}]
            assert "v1" in dp.stats()["volumes"]            # its volume stays open too
            with pytest.raises(ValueError, match="still served as /dev/ublkb"):
                dp.remove_volume("v1")
            if how == "mounted":
                # The data path's own guard, under the check above: EBUSY.
                with pytest.raises(OSError) as refused:
                    dp.remove_ublk("v1")
                assert refused.value.errno == 16
            holder.kill()                   # its mount namespace (and the mount) go with it
            holder.wait()
            holder = None
            wait_for("the holder to let go", lambda: not holders(dev_id))
            if how == "mounted":
                ublk.remove_dropped(model, Outcome())   # the config asks for it again
                assert ublk.kept == {} and ublk.served["v1"][1] == dev_id
        assert drop().changes == [f"ublk: volume v1: {dev} removed", "volume v1: closed"]
        assert ublk.served == {} and ublk.kept == {}
        assert not os.path.exists(dev) and not os.path.lexists("/dev/netcfg/v1")
        assert "v1" not in dp.stats()["volumes"]
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        for name in list(ublk.served):
            dp.remove_ublk(name)
        dp.shutdown()


@pytest.mark.skipif(iscsi.SKIP_REASON is not None, reason=iscsi.SKIP_REASON or "")
def test_one_volume_through_open_iscsi_and_ublk_reads_what_the_other_wrote(
        tenants, iscsid, tmp_path):
    """open-iscsi's disk and the ublk device of one volume: each reads what
    the other wrote (the server has one fd and one page cache for both;
    O_DIRECT on the clients, since each block device caches for itself)."""
    config = write_config(tmp_path, f"""
iface eth0
    netns t1
    address {iscsi.PORTAL}/24

volume v1
    backing {tmp_path}/v1.img
    size 64M
    ublk yes

target {iscsi.target_iqn("t1")}
    netns t1
    portal {iscsi.PORTAL}:3260
    lun 0 v1
""")
    server = Server(config, tmp_path, 1, targets=1)
    try:
        ub = dev_of(server)
        iscsi.iscsiadm("-m", "iface", "-I", "t1", "-o", "new")
        iscsi.iscsiadm("-m", "iface", "-I", "t1", "-o", "update", "-n", "iface.net_ifacename",
                       "-v", "isc-t1")
        iscsi.iscsiadm("-m", "discovery", "-t", "st", "-p", iscsi.PORTAL, "-I", "t1")
        iscsi.login("t1")
        sd = iscsi.disk_of("t1")
        rng = random.Random("netcfg-ublk-iscsi")
        for writer, reader, offset_mib in ((ub, sd, 0), (sd, ub, 8)):
            blob = tmp_path / f"blob{offset_mib}"
            blob.write_bytes(rng.randbytes(2 << 20))
            run(["dd", f"if={blob}", f"of={writer}", "bs=1M", f"seek={offset_mib}",
                 "oflag=direct", "conv=notrunc", "status=none"])
            back = subprocess.run(["dd", f"if={reader}", "bs=1M", f"skip={offset_mib}", "count=2",
                                   "iflag=direct", "status=none"], capture_output=True, check=True)
            assert hashlib.sha256(back.stdout).hexdigest() == \
                hashlib.sha256(blob.read_bytes()).hexdigest(), f"{writer} -> {reader}"
        # fio writes checksummed blocks through one and verifies them through the other.
        common = ["--rw=randwrite", "--bs=16k", "--offset=16M", "--size=16M", "--iodepth=8",
                  "--verify=crc32c", "--randseed=7"]
        for writer, reader in ((ub, sd), (sd, ub)):
            assert fio_errors(fio(writer, *common, "--do_verify=0")) == 0
            assert fio_errors(fio(reader, *common, "--verify_only")) == 0
        iscsi.iscsiadm("-m", "node", "-u")
        code, stats = server.stop()
        assert stats["ublk_errors"] == 0 and stats["ublk_write_bytes"] >= 18 << 20
    finally:
        iscsi.iscsiadm("-m", "node", "-u", check=False)
        server.stop()
        remove_devices(config, tmp_path)
