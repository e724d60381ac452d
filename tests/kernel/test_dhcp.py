"""`inet dhcp`: netcfg hands the interface to ISC dhclient in the interface's
namespace (netcfg/apply/dhcp.py), against a real DHCP server (dnsmasq) in another
namespace of the sandbox.

Everything a DHCP client's script may write under /etc (its temporary
resolv.conf, /etc/netns/NS/resolv.conf) lands in an overlay over /etc that
exists only in this sandbox's mount namespace.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import shutil
import subprocess
import textwrap
import time

import pytest

from netcfg.apply import dhcp
from netcfg.apply.execute import apply, down
from netcfg.compile.pipeline import ConfigSource, compile_config

pytestmark = pytest.mark.skipif(
    not (shutil.which("dhclient") and shutil.which("dnsmasq")),
    reason="needs isc-dhcp-client and dnsmasq-base (make kernel-deps)")

POOL = ipaddress.ip_network("10.77.0.0/24")


def server_side(pool: ipaddress.IPv4Network) -> str:
    """The DHCP tests' namespaces and link: s0 in srv (pool's .1, where
    start_dnsmasq serves), its veth peer c0 in cli, for the test's c0 stanza."""
    return textwrap.dedent(f"""\
        netns srv
        netns cli

        auto s0
        iface s0
            netns srv
            link-type veth
            veth-peer-name c0
            veth-peer-netns cli
            address {pool[1]}/{pool.prefixlen}

        """)


CONFIG = server_side(POOL) + textwrap.dedent("""\
    auto c0
    iface c0 {method}
        netns cli
    """)


@pytest.fixture
def private_etc(tmp_path):
    """An overlay over /etc in this (private) mount namespace: writes land in
    tmp_path, the host's /etc is untouched. Undone after the test."""
    upper, work = tmp_path / "etc-upper", tmp_path / "etc-work"
    upper.mkdir()
    work.mkdir()
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"lowerdir=/etc,upperdir={upper},workdir={work}".encode()
    if libc.mount(b"overlay", b"/etc", b"overlay", 0, options):
        pytest.skip(f"cannot mount an overlay over /etc: {os.strerror(ctypes.get_errno())}")
    yield upper
    libc.umount2(b"/etc", 2)  # MNT_DETACH


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    directory = tmp_path / "run"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv("NETCFG_RUN_DIR", str(directory))
    yield directory
    dhcp.release(["", "srv", "cli"])      # never leave a client running


def model(tmp_path, method: str):
    path = tmp_path / "net.tmpl"
    path.write_text(CONFIG.format(method=method))
    return compile_config(ConfigSource(path=str(path))).model


def start_dnsmasq(tmp_path, pool: ipaddress.IPv4Network = POOL,
                  stderr=subprocess.PIPE) -> subprocess.Popen:
    """dnsmasq in namespace srv on s0, leasing .50-.60 of POOL; its lease file is
    tmp_path/dnsmasq.leases. --port=0: DHCP only, no DNS server (and so no DNS
    option in leases)."""
    return subprocess.Popen(
        ["ip", "netns", "exec", "srv", "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
         "--port=0", "--interface=s0", "--bind-interfaces", "--user=root",
         f"--dhcp-range={pool[50]},{pool[60]},1h", f"--dhcp-leasefile={tmp_path}/dnsmasq.leases",
         f"--pid-file={tmp_path}/dnsmasq.pid"],
        stdout=subprocess.DEVNULL, stderr=stderr)


def client_addresses(netns: str = "cli", dev: str = "c0") -> list[str]:
    out = subprocess.run(["ip", "-n", netns, "-4", "-o", "addr", "show", "dev", dev],
                         capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[3] for line in out.splitlines())


def wait_for_lease(timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leased = [a for a in client_addresses()
                  if ipaddress.ip_interface(a).ip in POOL and int(a.split(".")[3].split("/")[0]) >= 50]
        if leased:
            return leased[0]
        time.sleep(0.2)
    raise AssertionError(f"no DHCP lease on c0 after {timeout} s: {client_addresses()}")


def test_dhcp_interface_is_handed_to_dhclient_and_left_to_it(session, tmp_path, private_etc,
                                                              run_dir):
    # The server's side first, so dnsmasq has an interface to bind.
    server_side = apply(model(tmp_path, "inet manual"), session)
    assert server_side.verified and server_side.dhcp == []
    server = start_dnsmasq(tmp_path)
    try:
        first = apply(model(tmp_path, "inet dhcp"), session)
        assert first.verified
        assert first.dhcp == ["started dhcp client for c0 in netns cli"]
        leased = wait_for_lease()
        # The tenant's DNS goes to its own resolv.conf, never the host's.
        assert (private_etc / "netns" / "cli" / "resolv.conf").exists()

        # The lease is the client's: a second apply neither removes it nor
        # starts another client, and sends nothing.
        again = apply(model(tmp_path, "inet dhcp"), session)
        assert again.verified and again.requests == 0 and again.dhcp == []
        assert client_addresses() == [leased]

        # Back to a static address: netcfg owns the addresses again, the
        # client is stopped, only the configured address is left.
        static_text = model(tmp_path, "inet static\n        address 10.77.0.9/24")
        back = apply(static_text, session)
        assert back.verified
        assert back.dhcp == ["stopped dhcp client for c0 in netns cli"]
        assert client_addresses() == ["10.77.0.9/24"]
        assert dhcp.clients().running() == set()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_down_stops_the_client(session, tmp_path, private_etc, run_dir):
    apply(model(tmp_path, "inet manual"), session)
    server = start_dnsmasq(tmp_path)
    try:
        desired = model(tmp_path, "inet dhcp")
        apply(desired, session)
        wait_for_lease()
        running = dhcp.clients().running()
        assert running == {dhcp.Lease("cli", "c0", "4")}
        result = down(desired, session, namespaces=["cli"])
        assert result.dhcp == ["stopped dhcp client for c0 in netns cli"]
        assert dhcp.clients().running() == set()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_client_ifupdown_left_is_adopted_not_doubled(session, tmp_path, private_etc,
                                                         run_dir, monkeypatch):
    """Taking over a host ifupdown2 configured: its dhclient for c0 keeps running
    (pid in /run/dhclient.c0.pid). netcfg adopts it instead of starting a second
    client on the interface, keeps the lease as it is, and stops it as its own."""
    monkeypatch.setattr(dhcp, "IFUPDOWN_RUN_DIR", str(tmp_path))
    apply(model(tmp_path, "inet manual"), session)
    server = start_dnsmasq(tmp_path)
    try:
        # What ifupdown2's dhcp addon runs (ifupdownaddons/dhclient.py start()).
        subprocess.run(["ip", "netns", "exec", "cli", "dhclient", "-pf",
                        f"{tmp_path}/dhclient.c0.pid", "-lf", f"{tmp_path}/dhclient.c0.leases",
                        "c0"], check=True, capture_output=True, timeout=60)
        leased = wait_for_lease()
        theirs = int((tmp_path / "dhclient.c0.pid").read_text())
        desired = model(tmp_path, "inet dhcp")
        taken = apply(desired, session)
        assert taken.verified and taken.requests == 0
        assert taken.dhcp == [f"adopted dhcp client for c0 in netns cli: the dhclient "
                              f"ifupdown started (pid {theirs})"]
        assert _dhclients_of("c0") == [theirs] and client_addresses() == [leased]
        assert apply(desired, session).dhcp == []
        assert down(desired, session, namespaces=["cli"]).dhcp == [
            "stopped dhcp client for c0 in netns cli"]
        assert _dhclients_of("c0") == []
    finally:
        server.terminate()
        server.wait(timeout=10)


def _dhclients_of(iface: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"dhclient" and iface.encode() in argv:
            found.append(int(pid))
    return sorted(found)
