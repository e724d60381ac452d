"""What a hostile tenant can make the data path hold, and what a careless
backing path can expose (docs/security.md):

- the memory-exhaustion attack of issue 14: 40 logged-in connections, each
  with two 64 MiB WRITEs and no data. Before, each WRITE zero-filled its
  whole buffer at once (the runner grew to ~5 GB); now a WRITE reserves its
  length from the write budgets and takes memory only as data arrives. The
  runner's RSS must stay under the configured budget plus the baseline it
  had before the attack, and another tenant's reads must keep going;
- connection limits (a target's `max-connections`, a namespace's limit):
  logins beyond them refused with OUT OF RESOURCES (0x0302);
- volume files: created 0600; a symbolic link, a file of another user or
  one others may read or write refused with the fix in the message.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from iscsi_clients import (IQN, Session, iops, login_pdu, login_status, make_netns,
                           read_capacity16, read_pdu, rss_bytes, run, scsi_pdu, start_target,
                           target_refuses, url, write_target_config)

MiB = 1 << 20
BUDGET = 256 * MiB          # --memory: write data waiting for Data-Out, in all
NETNS_BUDGET = 128 * MiB    # --netns-memory
ATTACKERS = 40
WRITE = 64 * MiB

CONFIG = """
iface lo
    netns victim
    address 10.0.0.2/32

volume attacked
    backing {dir}/attacked.img
    size 64M

volume victim
    backing {dir}/victim.img
    size 64M

target {iqn}:attacked
    portal 127.0.0.1:3260
    lun 0 attacked

target {iqn}:victim
    netns victim
    portal 10.0.0.2:3260
    lun 0 victim
"""


def start_runner(config: str, tmp_path, *flags: str) -> subprocess.Popen:
    return start_target(write_target_config(config, tmp_path), *flags)


def stop(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)


def attack(target: str, connections: int, writes: int) -> tuple[list[socket.socket], dict]:
    """Log in `connections` times and send each `writes` WRITE(16) of 64 MiB
    with no data (the attacker never answers an R2T). Returns the open
    sockets and how the target answered each write."""
    answers = {"r2t": 0, "task_set_full": 0, "other": 0, "login_refused": 0}
    socks = []
    for n in range(connections):
        s = socket.create_connection(("127.0.0.1", 3260), timeout=10)
        # A session each: one ISID would reinstate (close) the one before.
        s.sendall(login_pdu("iqn.2024-01.org.netcfg.test:attacker", target, isid=n + 1))
        if login_status(read_pdu(s)[0]):
            answers["login_refused"] += 1
            s.close()
            continue
        socks.append(s)
        for i in range(writes):
            blocks = WRITE // 512
            cdb = bytes([0x8a, 0]) + bytes(8) + blocks.to_bytes(4, "big") + bytes(2)
            s.sendall(scsi_pdu(cdb, itt=i + 1, cmdsn=1 + i, edtl=WRITE, write=True))
            bhs, _ = read_pdu(s)
            if bhs[0] & 0x3f == 0x31:                      # R2T: waiting for data
                answers["r2t"] += 1
            elif bhs[0] & 0x3f == 0x21 and bhs[3] == 0x28:  # TASK SET FULL
                answers["task_set_full"] += 1
            else:
                answers["other"] += 1
    return socks, answers


class PeakRss(threading.Thread):
    """Samples a process's RSS every 20 ms until stopped; keeps the peak."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.02)


def test_forty_connections_of_unsent_writes_stay_within_the_budget(netns_dir, tmp_path):
    make_netns(netns_dir, "victim", "10.0.0.2")
    p = start_runner(CONFIG, tmp_path, "--memory", "256M", "--netns-memory", "128M")
    victim = url("10.0.0.2", f"{IQN}:victim", 0)
    socks = []
    try:
        before = iops(victim, "victim")
        baseline = rss_bytes(p.pid)
        sampler = PeakRss(p.pid)
        sampler.start()
        # The attack runs while the victim reads, and stays (its writes
        # pending) until the victim's measurement ends.
        result: list = []
        attacker = threading.Thread(
            target=lambda: result.extend(attack(f"{IQN}:attacked", ATTACKERS, 2)))
        attacker.start()
        during = iops(victim, "victim", seconds=4)
        attacker.join()
        socks, answers = result
        time.sleep(0.5)
        sampler.done.set()
        sampler.join()
        print(f"\nRSS baseline {baseline / MiB:.1f} MiB, peak under attack "
              f"{sampler.peak / MiB:.1f} MiB (budget {BUDGET // MiB} MiB); victim "
              f"{before:.0f} IOPS before, {during:.0f} during; writes {answers}")
        assert answers["login_refused"] == 0 and answers["other"] == 0, answers
        # The namespace's 128 MiB admits two 64 MiB writes; all others wait
        # in no buffer at all: the initiator is told TASK SET FULL.
        assert answers["r2t"] == NETNS_BUDGET // WRITE, answers
        assert answers["task_set_full"] == ATTACKERS * 2 - answers["r2t"], answers
        assert sampler.peak < baseline + BUDGET, "RSS grew past the write budget"
        assert during > 0.2 * before, "the other tenant's reads stalled"
        # The writes still waiting hold nothing once their connections go.
        for s in socks:
            s.close()
        socks = []
    finally:
        for s in socks:
            s.close()
        stop(p)


def test_max_connections_refuses_logins_beyond_it(netns_dir, tmp_path):
    make_netns(netns_dir, "victim", "10.0.0.2")
    config = CONFIG.replace("    lun 0 attacked\n", "    lun 0 attacked\n    max-connections 2\n")
    p = start_runner(config, tmp_path, "--netns-connections", "4")
    held = []
    try:
        for isid in (1, 2):
            held.append(Session("127.0.0.1", f"{IQN}:attacked", isid=isid))
        with pytest.raises(ConnectionRefusedError, match="0x0302"):
            Session("127.0.0.1", f"{IQN}:attacked", isid=3)
        held.pop().close()
        # A place freed is a place taken again (once the target saw the close).
        deadline = time.monotonic() + 5
        while True:
            try:
                held.append(Session("127.0.0.1", f"{IQN}:attacked", isid=4))
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, "the closed session's place never came back"
                time.sleep(0.1)
        # The namespace allows 4 connections: two more sockets that never
        # log in fill it, and the next login is refused whatever its target.
        idle = [socket.create_connection(("127.0.0.1", 3260)) for _ in range(2)]
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", 3260), timeout=5) as s:
            s.sendall(login_pdu("iqn.2024-01.org.netcfg.test:late", None))
            assert login_status(read_pdu(s)[0]) == 0x0302
        for s in idle:
            s.close()
        # Another namespace has its own limit: the victim logs in.
        assert run(["iscsi-inq", url("10.0.0.2", f"{IQN}:victim", 0)], netns="victim").returncode == 0
    finally:
        for s in held:
            s.close()
        stop(p)


def test_volume_grown_online_is_seen_by_a_live_session(dataplane, tmp_path):
    dataplane.add_volume("grow", str(tmp_path / "grow.img"), size=8 * MiB)
    dataplane.add_portal("", "127.0.0.1", 3260)
    dataplane.set_target("", f"{IQN}:grow", {0: "grow"})
    s = Session("127.0.0.1", f"{IQN}:grow")
    try:
        assert read_capacity16(s) == (0, b"", 8 * MiB)
        assert dataplane.resize_volume("grow", 16 * MiB) == (16384, 32768)
        status, sense, _ = read_capacity16(s)
        assert status == 0x02 and (sense[2] & 0xf, sense[12], sense[13]) == (0x6, 0x2a, 0x09), \
            "CAPACITY DATA HAS CHANGED first"
        assert read_capacity16(s) == (0, b"", 16 * MiB)
        # A shrink while the session lives is refused and changes nothing.
        with pytest.raises(ValueError, match="live session"):
            dataplane.resize_volume("grow", 4 * MiB)
        assert read_capacity16(s) == (0, b"", 16 * MiB)
    finally:
        s.close()
    assert os.stat(tmp_path / "grow.img").st_size == 16 * MiB
    r = run(["iscsi-readcapacity16", url("127.0.0.1", f"{IQN}:grow", 0)])
    assert "Total size:16777216" in r.stdout, r.stdout + r.stderr


def test_volume_files_are_private_and_never_followed(dataplane, tmp_path):
    dataplane.add_volume("new", str(tmp_path / "new.img"), size=MiB)
    assert os.stat(tmp_path / "new.img").st_mode & 0o777 == 0o600

    other = tmp_path / "other.img"
    other.write_bytes(bytes(MiB))
    os.symlink(other, tmp_path / "link.img")
    os.chmod(other, 0o600)
    with pytest.raises(OSError, match="symbolic link.*readlink -f"):
        dataplane.add_volume("link", str(tmp_path / "link.img"))

    os.chmod(other, 0o644)
    with pytest.raises(OSError, match="mode 0644.*chmod 600"):
        dataplane.add_volume("open", str(other))
    os.chmod(other, 0o600)
    os.chown(other, 1000, 1000)
    with pytest.raises(OSError, match="owned by uid 1000, not root.*chown root:root"):
        dataplane.add_volume("theirs", str(other))
    os.chown(other, 0, 0)
    dataplane.add_volume("ours", str(other))
    assert dataplane.stats()["volumes"]["ours"] == (2048, 512)


def test_runner_never_prints_a_traceback_for_what_it_cannot_serve(tmp_path):
    config = CONFIG.replace("    size 64M\n", "    size 99999999P\n", 1)
    stderr = target_refuses(write_target_config(config, tmp_path))
    assert "storage.cfg:8" in stderr and "more than a Linux file can hold" in stderr
    assert "Traceback" not in stderr
