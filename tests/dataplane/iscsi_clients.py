"""Helpers for the data path tests: libiscsi's clients, run (optionally) in
a named namespace, and a namespace with one address on lo."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

IQN = "iqn.2024-01.org.netcfg.test"
INITIATOR = "iqn.2024-01.org.netcfg.test:initiator"


def run(cmd: list[str], netns: str | None = None, timeout: float = 30, env=None):
    """Run a client; in `netns` through `ip netns exec`."""
    full = (["ip", "netns", "exec", netns] if netns else []) + cmd
    return subprocess.run(full, capture_output=True, text=True, timeout=timeout, env=env)


def url(addr: str, iqn: str = "", lun: int | None = None, port: int = 3260, auth: str = "") -> str:
    u = f"iscsi://{auth}{addr}:{port}"
    if iqn:
        u += f"/{iqn}"
        if lun is not None:
            u += f"/{lun}"
    return u


def write_target_config(config: str, tmp_path) -> Path:
    """``config`` with {dir} and {iqn} filled in, as tmp_path/storage.cfg."""
    cfg = tmp_path / "storage.cfg"
    cfg.write_text(config.format(dir=tmp_path, iqn=IQN))
    return cfg


def start_target(cfg: Path, *flags: str) -> subprocess.Popen:
    """`python -m netcfgd.target -c cfg --threads 2 *flags`, once iscsi-ls finds
    it serving on 127.0.0.1 (its stdout and stderr piped, as text)."""
    p = subprocess.Popen([sys.executable, "-m", "netcfgd.target", "-c", str(cfg),
                          "--threads", "2", *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise AssertionError(f"runner exited {p.returncode}: {p.stderr.read()}")
        if run(["iscsi-ls", url("127.0.0.1")], timeout=5).returncode == 0:
            return p
        time.sleep(0.2)
    p.kill()
    raise AssertionError("runner did not start serving")


def target_refuses(cfg: Path) -> str:
    """What `python -m netcfgd.target -c cfg` says on stderr as it exits 1."""
    r = subprocess.run([sys.executable, "-m", "netcfgd.target", "-c", str(cfg)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    return r.stderr


def make_netns(netns_dir, name: str, address: str):
    """A namespace with lo up and `address`/32 on lo (all a portal needs)."""
    ns = netns_dir.create(name)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "-n", name, "addr", "add", f"{address}/32", "dev", "lo"], check=True)
    return ns


def identity(ns) -> int:
    ident = ns.identity
    return ident.cookie if ident.cookie is not None else (ident.dev << 32) | ident.ino


def cu_results(output: str) -> tuple[int, list[str]]:
    """From iscsi-test-cu's output: (tests run, names of the failed ones as
    FAMILY-less SUITE.TEST)."""
    suite, test, failed, ran = "", "", [], 0
    current_failed = False

    def close():
        if test and current_failed:
            failed.append(f"{suite}.{test}")

    for line in output.splitlines():
        if line.startswith("Suite: "):
            close()
            suite, test, current_failed = line[7:].strip(), "", False
        elif line.startswith("  Test: "):
            close()
            test = line[8:].split(" ...")[0].strip()
            current_failed = line.rstrip().endswith("FAILED")
            ran += 1
        elif line.strip() == "FAILED":
            current_failed = True
    close()
    return ran, failed


def login_pdu(initiator: str, target: str | None, itt: int = 1, cmdsn: int = 1,
              isid: int = 1) -> bytes:
    """A leading Login request straight to full feature phase
    (CSG=operational, NSG=full feature, T=1), no authentication. Sessions
    of one initiator need distinct `isid`s, or each reinstates the last."""
    keys = [f"InitiatorName={initiator}", "AuthMethod=None"]
    keys += ["SessionType=Normal", f"TargetName={target}"] if target else ["SessionType=Discovery"]
    data = b"".join(k.encode() + b"\0" for k in keys[:1] + keys[2:])
    bhs = bytearray(48)
    bhs[0] = 0x43
    bhs[1] = 0x80 | (1 << 2) | 3
    bhs[5:8] = len(data).to_bytes(3, "big")
    bhs[8:14] = bytes([0x80, 0]) + isid.to_bytes(4, "big")   # ISID: random format
    bhs[16:20] = itt.to_bytes(4, "big")
    bhs[24:28] = cmdsn.to_bytes(4, "big")
    return bytes(bhs) + data + b"\0" * (-len(data) % 4)


def read_pdu(sock) -> tuple[bytes, bytes]:
    """One PDU (no digests): (BHS, data)."""
    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed")
            buf += chunk
        return buf
    bhs = exact(48)
    length = int.from_bytes(bhs[5:8], "big")
    data = exact(bhs[4] * 4 + length + (-length % 4))
    return bhs, data[bhs[4] * 4:bhs[4] * 4 + length]


def login_status(bhs: bytes) -> int:
    return int.from_bytes(bhs[36:38], "big")


def scsi_pdu(cdb: bytes, itt: int, cmdsn: int, edtl: int = 0, read: bool = False,
             write: bool = False, data: bytes = b"") -> bytes:
    """A SCSI Command PDU (F set; R/W as asked) with optional immediate data."""
    bhs = bytearray(48)
    bhs[0] = 0x01
    bhs[1] = 0x80 | (0x40 if read else 0) | (0x20 if write else 0) | 0x01   # SIMPLE task
    bhs[5:8] = len(data).to_bytes(3, "big")
    bhs[16:20] = itt.to_bytes(4, "big")
    bhs[20:24] = edtl.to_bytes(4, "big")
    bhs[24:28] = cmdsn.to_bytes(4, "big")
    bhs[32:32 + len(cdb)] = cdb
    return bytes(bhs) + data + b"\0" * (-len(data) % 4)


class Session:
    """A raw iSCSI session over one socket (login straight to full feature
    phase, RFC defaults): for what libiscsi's one-shot clients cannot show,
    such as a unit attention seen by a session that was there before."""

    def __init__(self, addr: str, target: str, port: int = 3260, initiator: str = INITIATOR,
                 isid: int = 1):
        import socket
        self.sock = socket.create_connection((addr, port), timeout=10)
        self.sock.sendall(login_pdu(initiator, target, isid=isid))
        status = login_status(read_pdu(self.sock)[0])
        if status:
            self.sock.close()
            raise ConnectionRefusedError(f"login refused: 0x{status:04x}")
        self.cmdsn, self.itt = 1, 1

    def command(self, cdb: bytes, edtl: int = 0, read: bool = False) -> tuple[int, bytes, bytes]:
        """Run one command: (status, sense, Data-In)."""
        self.itt += 1
        self.sock.sendall(scsi_pdu(cdb, self.itt, self.cmdsn, edtl, read=read))
        self.cmdsn += 1
        data = b""
        while True:
            bhs, seg = read_pdu(self.sock)
            if bhs[0] & 0x3f == 0x25:                       # Data-In
                data += seg
                if bhs[1] & 0x01:                           # S: status is here
                    return bhs[3], b"", data
            elif bhs[0] & 0x3f == 0x21:                     # SCSI Response
                sense = seg[2:2 + int.from_bytes(seg[:2], "big")] if seg else b""
                return bhs[3], sense, data

    def close(self) -> None:
        self.sock.close()


def read_capacity16(session: Session) -> tuple[int, bytes, int]:
    """(status, sense, bytes) from READ CAPACITY(16)."""
    cdb = bytes([0x9e, 0x10]) + bytes(8) + (32).to_bytes(4, "big") + bytes(2)
    status, sense, data = session.command(cdb, 32, read=True)
    if status or len(data) < 12:
        return status, sense, 0
    return status, sense, (int.from_bytes(data[:8], "big") + 1) * int.from_bytes(data[8:12], "big")


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise LookupError(f"no VmRSS for pid {pid}")


def iops(target_url: str, netns: str | None = None, seconds: int = 3) -> float:
    """4 KiB random reads, 32 in flight, for `seconds` (libiscsi's iscsi-perf):
    the last running average it printed."""
    r = run(["timeout", "-s", "INT", str(seconds), "iscsi-perf", "-r", "-m", "32", "-b", "8",
             target_url], netns=netns, timeout=seconds + 15)
    # "00:00:02 - lba 28492, iops current 69803 (272 MB/s), iops average 115036 ..."
    found = re.findall(r"iops average (\d+)", r.stdout)
    return float(found[-1]) if found else 0.0
