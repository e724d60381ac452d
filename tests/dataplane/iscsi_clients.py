"""Helpers for the data path tests: libiscsi's clients, run (optionally) in
a named namespace, and a namespace with one address on lo."""

from __future__ import annotations

import subprocess

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


def login_pdu(initiator: str, target: str | None, itt: int = 1, cmdsn: int = 1) -> bytes:
    """A leading Login request straight to full feature phase
    (CSG=operational, NSG=full feature, T=1), no authentication."""
    keys = [f"InitiatorName={initiator}", "AuthMethod=None"]
    keys += ["SessionType=Normal", f"TargetName={target}"] if target else ["SessionType=Discovery"]
    data = b"".join(k.encode() + b"\0" for k in keys[:1] + keys[2:])
    bhs = bytearray(48)
    bhs[0] = 0x43
    bhs[1] = 0x80 | (1 << 2) | 3
    bhs[5:8] = len(data).to_bytes(3, "big")
    bhs[8:14] = bytes([0x80, 0, 0, 0, 0, 1])          # ISID: random format
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
