"""A DHCP server behind the stand-in NICs, so `inet dhcp` compares a lease.

Each sandbox of the differential makes the file's physical ports as veths
whose far ends (cmp1, cmp2, ...) it leaves in its own namespace. For a file
with an `inet dhcp` stanza, those far ends move into a namespace of their own
(held by a `sleep` started under `unshare --net`, so nothing is named in
/run/netns) where dnsmasq serves each port its own /24 of 198.18.0.0/15 (RFC
2544's benchmarking range: no real network uses it), the far end's .1 being
the router the lease names. dnsmasq picks a client's address from a hash of
its MAC, and the stand-in ports have fixed MACs, so both sandboxes lease the
same address.

The DHCP clients write their leases under /var/lib/dhcp (ifupdown2's) and may
write /etc/resolv.conf (dhclient-script; this server hands out no DNS, but a
hook may write anyway): private_client_files() gives the sandbox its own of
both before any client runs.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

POOL = ipaddress.ip_network("198.18.0.0/15")
# The sandbox's clients: ISC dhclient, from ifupdown2 and from netcfg.
CLIENT_FILES = ("/var/lib/dhcp",)
# Seconds a client is given to hold its lease before the state is read: a
# netcfg apply returns before the lease arrives (dhclient -nw).
LEASE_WAIT_S = 20


def dhcp_interfaces(file_text: str) -> list[str]:
    """The interfaces the file hands to DHCP over IPv4 (`iface X inet dhcp`)."""
    return sorted({m.group(1) for m in re.finditer(r"(?m)^\s*iface\s+(\S+)\s+inet\s+dhcp\b",
                                                   file_text)})


def private_client_files(scratch: str) -> None:
    """Before any client runs: its lease directory and /etc, this sandbox's own.
    Writes to /etc land in an overlay upper directory under ``scratch`` (a
    tmpfs of the sandbox); /etc's later mounts (ifupdown2's configuration, the
    VRF table map) go on top of it."""
    for directory in CLIENT_FILES:
        if os.path.isdir(directory):
            _sh("mount", "-t", "tmpfs", "-o", "mode=0755", "compat", directory)
    upper, work = Path(scratch, "etc-upper"), Path(scratch, "etc-work")
    upper.mkdir()
    work.mkdir()
    _sh("mount", "-t", "overlay", "overlay", "-o",
        f"lowerdir=/etc,upperdir={upper},workdir={work}", "/etc")


class Server:
    """dnsmasq on the far ends of ``ports`` (cmp1..cmpN), in a namespace of its own."""

    def __init__(self, ports: list[str], scratch: str) -> None:
        if not shutil.which("dnsmasq"):
            raise RuntimeError("the file has `inet dhcp` and dnsmasq is missing "
                               "(make compat-deps installs dnsmasq-base)")
        self.holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"])
        self.dnsmasq: subprocess.Popen | None = None
        try:
            self._wait_for_own_netns()
            self._start(len(ports), scratch)
        except BaseException:
            self.stop()
            raise

    def _wait_for_own_netns(self) -> None:
        mine = os.stat("/proc/self/ns/net").st_ino
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if os.stat(f"/proc/{self.holder.pid}/ns/net").st_ino != mine:
                    return
            except FileNotFoundError:
                break
            time.sleep(0.01)
        raise RuntimeError("the DHCP server's namespace did not come up")

    def _start(self, count: int, scratch: str) -> None:
        subnets = list(POOL.subnets(new_prefix=24))[1:count + 1]
        inside = ["nsenter", "-t", str(self.holder.pid), "-n"]
        _sh(*inside, "ip", "link", "set", "lo", "up")
        ranges = []
        for i, subnet in enumerate(subnets, 1):
            _sh("ip", "link", "set", f"cmp{i}", "netns", str(self.holder.pid))
            _sh(*inside, "ip", "addr", "add", f"{subnet[1]}/24", "dev", f"cmp{i}")
            _sh(*inside, "ip", "link", "set", f"cmp{i}", "up")
            ranges.append(f"--dhcp-range={subnet[100]},{subnet[199]},1h")
        # --port=0: DHCP only, no DNS (and so no DNS option in a lease); --no-ping:
        # no 3 s probe of an address before offering it (nothing else is there).
        self.dnsmasq = subprocess.Popen(
            [*inside, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0",
             "--bind-interfaces", *(f"--interface=cmp{i}" for i in range(1, len(subnets) + 1)),
             "--no-ping", "--user=root", *ranges,
             f"--dhcp-leasefile={scratch}/dnsmasq.leases", f"--pid-file={scratch}/dnsmasq.pid"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> None:
        """The server, then its namespace (which takes the far ends with it)."""
        for proc in (self.dnsmasq, self.holder):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(10)


def wait_for_leases(interfaces: list[str], timeout: float = LEASE_WAIT_S) -> list[str]:
    """Wait until each interface that exists holds an IPv4 address from a lease
    (dynamic); return those still without one when the time is up."""
    deadline = time.monotonic() + timeout
    while True:
        waiting = [name for name in interfaces
                   if os.path.exists(f"/sys/class/net/{name}") and not _leased(name)]
        if not waiting or time.monotonic() >= deadline:
            return waiting
        time.sleep(0.2)


def _leased(name: str) -> bool:
    out = subprocess.run(["ip", "-4", "-j", "addr", "show", "dev", name],
                         capture_output=True, text=True).stdout
    return any(a.get("dynamic") for link in json.loads(out or "[]")
               for a in link.get("addr_info", []))


def clients_in(netns_inode: int) -> list[int]:
    """The DHCP clients (dhclient, dhcpcd) running in the network namespace
    whose inode is ``netns_inode``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() in ("dhclient", "dhcpcd") and \
                    os.stat(f"/proc/{pid}/ns/net").st_ino == netns_inode:
                found.append(int(pid))
        except OSError:
            continue
    return found


# How long a DHCP client may take to exit on SIGTERM (dhclient writes its
# lease file first); then it is killed.
CLIENT_EXIT_S = 5.0


def stop_clients() -> None:
    """Every DHCP client in this sandbox's namespace: none outlives it. Waits
    for them to be gone (a client still exiting was seen by the caller's check
    once in a loaded run), SIGKILL after CLIENT_EXIT_S."""
    netns = os.stat("/proc/self/ns/net").st_ino
    for pid in clients_in(netns):
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + CLIENT_EXIT_S
    while clients_in(netns) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in clients_in(netns):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            continue


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)
