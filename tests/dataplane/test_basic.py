"""Loopback basics: discovery, login, INQUIRY, READ CAPACITY, and I/O through
libiscsi's clients against the embedded target; stats follow what happened."""

from __future__ import annotations

import socket
import struct
import time
from contextlib import contextmanager

from iscsi_clients import (INITIATOR, IQN, cu_results, login_pdu, login_status, read_pdu, run,
                           url)

TARGET = f"{IQN}:basic"


def serve_one(dataplane, tmp_path, luns=2, **target):
    for i in range(luns):
        dataplane.add_volume(f"v{i}", str(tmp_path / f"v{i}.img"), size=(16 + 16 * i) << 20)
    dataplane.set_target("", TARGET, {i: f"v{i}" for i in range(luns)}, **target)
    dataplane.add_portal("", "127.0.0.1", 3260)


def test_discovery_lists_target_and_luns(dataplane, tmp_path):
    serve_one(dataplane, tmp_path)
    r = run(["iscsi-ls", "-s", url("127.0.0.1")])
    assert r.returncode == 0, r.stderr
    assert f"Target:{TARGET} Portal:127.0.0.1:3260,1" in r.stdout
    assert "Lun:0" in r.stdout and "Lun:1" in r.stdout


def test_inquiry_and_capacity(dataplane, tmp_path):
    serve_one(dataplane, tmp_path)
    r = run(["iscsi-inq", url("127.0.0.1", TARGET, 0)])
    assert r.returncode == 0, r.stderr
    assert "DIRECT_ACCESS" in r.stdout
    r = run(["iscsi-readcapacity16", url("127.0.0.1", TARGET, 1)])
    assert r.returncode == 0, r.stderr
    # 32 MiB of 512-byte blocks: the last LBA is 65535.
    assert "RETURNED LOGICAL BLOCK ADDRESS:65535" in r.stdout
    assert "Total size:33554432" in r.stdout


def test_unknown_target_and_lun_fail(dataplane, tmp_path):
    serve_one(dataplane, tmp_path)
    r = run(["iscsi-inq", url("127.0.0.1", f"{IQN}:nosuch", 0)])
    assert r.returncode != 0
    r = run(["iscsi-readcapacity16", url("127.0.0.1", TARGET, 7)])
    assert r.returncode != 0


def test_stats_count_sessions_and_io(dataplane, tmp_path):
    serve_one(dataplane, tmp_path)
    before = dataplane.stats()
    assert run(["iscsi-inq", url("127.0.0.1", TARGET, 0)]).returncode == 0
    after = dataplane.stats()
    assert after["logins"] >= before["logins"] + 1
    assert after["scsi_commands"] > before["scsi_commands"]
    assert after["pdus_in"] > before["pdus_in"] and after["bytes_out"] > before["bytes_out"]
    # The client logged out: no session left on the target.
    deadline = time.monotonic() + 5
    while dataplane.stats()["targets"][0]["sessions"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dataplane.stats()["targets"][0]["sessions"] == 0


def test_hostile_pdus_close_only_their_connection(dataplane, tmp_path):
    """Garbage, an oversized data segment and a truncated PDU each lose their
    connection; the target keeps serving others."""
    serve_one(dataplane, tmp_path)
    bad_len = bytearray(48)
    bad_len[0] = 0x43                     # Login request
    bad_len[5:8] = (0xff, 0xff, 0xff)     # 16 MiB data segment
    scsi_before_login = bytearray(48)
    scsi_before_login[0] = 0x01           # SCSI command during login
    for payload in (b"\xff" * 4096, bytes(bad_len), bytes(scsi_before_login), b"\x43" * 20):
        with socket.create_connection(("127.0.0.1", 3260), timeout=5) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            # At most a login reject; never a hang, never a crash.
            assert len(data) <= 48 + 8192
    r = run(["iscsi-inq", url("127.0.0.1", TARGET, 0)])
    assert r.returncode == 0, r.stderr
    assert dataplane.stats()["connections_closed"] >= 4


def test_login_response_to_scsi_during_login_is_an_error(dataplane, tmp_path):
    serve_one(dataplane, tmp_path)
    pdu = bytearray(48)
    pdu[0] = 0x01
    with socket.create_connection(("127.0.0.1", 3260), timeout=5) as s:
        s.sendall(pdu)
        reply = s.recv(48)
    assert reply[0] & 0x3f == 0x23                    # Login response
    assert struct.unpack(">H", reply[36:38])[0] == 0x020b  # invalid during login


def test_header_digest_crc32c(dataplane, tmp_path):
    serve_one(dataplane, tmp_path)
    r = run(["iscsi-test-cu", "-d", "-t", "SCSI.Read10", "-i", INITIATOR,
             url("127.0.0.1", TARGET, 0) + "?header_digest=crc32c"], timeout=120)
    ran, failed = cu_results(r.stdout)
    assert ran >= 5 and failed == [], r.stdout[-3000:]
    assert dataplane.stats()["digest_errors"] == 0


@contextmanager
def pinging_dataplane(tmp_path, ping_idle: float):
    """A dataplane of its own that pings sessions idle for ``ping_idle`` s
    (ping_timeout 1 s), serving one LUN on 127.0.0.1."""
    from netcfg.kernel.ns import NetnsDir
    from netcfgd._dataplane import Dataplane
    dp = Dataplane(threads=1, ping_idle=ping_idle, ping_timeout=1.0)
    root = NetnsDir("/run/netns").open("")
    try:
        dp.add_namespace("", root.fd, root.identity.cookie)
        serve_one(dp, tmp_path, luns=1)
        yield dp
    finally:
        dp.shutdown()
        root.close()


def logged_in() -> socket.socket:
    """A connection to TARGET on 127.0.0.1, past a successful login."""
    s = socket.create_connection(("127.0.0.1", 3260), timeout=10)
    try:
        s.sendall(login_pdu(INITIATOR, TARGET))
        assert login_status(read_pdu(s)[0]) == 0
    except BaseException:
        s.close()
        raise
    return s


def test_idle_connections_are_pinged_and_dropped_when_silent(tmp_path):
    """NOP-In to an idle session; no NOP-Out back within ping_timeout: closed."""
    with pinging_dataplane(tmp_path, 0.5) as dp:
        with logged_in() as s:
            started = time.monotonic()
            bhs, _ = read_pdu(s)
            assert bhs[0] & 0x3f == 0x20                       # NOP-In
            assert bhs[16:20] == b"\xff\xff\xff\xff"           # target-initiated
            assert bhs[20:24] != b"\xff\xff\xff\xff"           # wants an answer
            assert 0.4 < time.monotonic() - started < 3
            assert s.recv(1) == b""                            # unanswered: closed
        assert dp.stats()["nops_sent"] >= 1


def test_answered_pings_keep_the_session(tmp_path):
    with pinging_dataplane(tmp_path, 0.3) as dp:
        with logged_in() as s:
            for _ in range(4):
                bhs, _ = read_pdu(s)
                assert bhs[0] & 0x3f == 0x20
                answer = bytearray(48)
                answer[0] = 0x40                               # NOP-Out, immediate
                answer[1] = 0x80
                answer[16:20] = b"\xff\xff\xff\xff"
                answer[20:24] = bhs[20:24]                     # the TTT it asked for
                s.sendall(bytes(answer))
        # Four pings answered over more than ping_timeout: still connected.
        assert dp.stats()["nops_sent"] >= 4


def test_ipv6_portal(dataplane, tmp_path):
    dataplane.add_volume("v6", str(tmp_path / "v6.img"), size=8 << 20)
    dataplane.set_target("", TARGET, {0: "v6"})
    dataplane.add_portal("", "::1", 3260)
    r = run(["iscsi-ls", "iscsi://[::1]:3260"])
    assert r.returncode == 0, r.stderr
    assert f"Target:{TARGET} Portal:[::1]:3260,1" in r.stdout
    assert run(["iscsi-inq", f"iscsi://[::1]:3260/{TARGET}/0"]).returncode == 0
