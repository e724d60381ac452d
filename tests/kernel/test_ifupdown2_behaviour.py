"""ifupdown2's implicit behaviour, applied by netcfg against the real kernel
(issue 12; docs/compat.md). Inside the sandbox (conftest.py); physical ports
are veth pairs made before the apply, as tests/compat/differential.py makes
them, and state is read back with iproute2.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from netcfg.apply.execute import ApplyFailed, apply
from netcfg.cli.main import main
from netcfg.compile.pipeline import ConfigSource, compile_config

# Proxmox VE's installer writes the port without an auto line.
PROXMOX = textwrap.dedent("""\
    auto lo
    iface lo inet loopback

    iface eno1 inet manual

    auto vmbr0
    iface vmbr0 inet static
        address 192.168.10.2/24
        gateway 192.168.10.1
        bridge-ports eno1
        bridge-stp off
    """)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def ip_sysctl(key: str) -> str:
    return subprocess.run(["sysctl", "-n", key], check=True, capture_output=True,
                          text=True).stdout.strip()


def link(name: str) -> dict:
    return json.loads(ip("-d", "-j", "link", "show", "dev", name))[0]


@pytest.fixture
def stand_in_port():
    """Makes a physical port: one end of a veth pair whose peer is up
    (carrier); removed after the test (netcfg's fixture removes only what
    netcfg made)."""
    made = []

    def make(name: str) -> None:
        ip("link", "add", name, "type", "veth", "peer", "name", f"{name}-peer")
        ip("link", "set", f"{name}-peer", "up")
        made.append(name)

    yield make
    for name in made:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def test_a_bridge_port_without_an_auto_line_comes_up_with_its_bridge(session, tmp_path,
                                                                    stand_in_port):
    """The silent outage of issue 12: eno1 was enslaved and left down while
    apply and query --check both said ok."""
    stand_in_port("eno1")
    path, model = interfaces(tmp_path, PROXMOX)
    result = apply(model, session)
    assert result.verified
    eno1 = link("eno1")
    assert "UP" in eno1["flags"]
    assert eno1["master"] == "vmbr0"
    assert eno1["linkinfo"]["info_slave_data"]["state"] == "forwarding"
    routes = json.loads(ip("-j", "route", "show", "default"))
    assert [r["gateway"] for r in routes] == ["192.168.10.1"]
    assert "linkdown" not in routes[0].get("flags", [])
    assert main(["query", "--check", "-c", str(path)]) == 0
    # A port taken down by hand is drift that query --check reports.
    ip("link", "set", "eno1", "down")
    assert main(["query", "--check", "-c", str(path)]) == 1


def interfaces(tmp_path, text: str):
    """``text`` (dedented) written as tmp_path/interfaces, and the model
    compiled from it."""
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent(text))
    return path, compile_config(ConfigSource(path=str(path))).model


def red_pair(host: tuple[str, ...] = (), eth0: tuple[str, ...] = (), method: str = "") -> str:
    """Config text: veth-red (10.0.1.1/30) whose peer is eth0 (10.0.1.2/30) in
    the namespace red, each stanza ending with its ``host`` / ``eth0`` lines;
    ``method``: eth0's `inet static` (the METHOD its hooks see)."""
    return "".join([
        "auto veth-red\niface veth-red\n    link-type veth\n    veth-peer-name eth0\n",
        "    veth-peer-netns red\n    address 10.0.1.1/30\n", *(f"    {a}\n" for a in host),
        f"\nauto eth0\niface eth0{method and ' ' + method}\n    netns red\n",
        "    address 10.0.1.2/30\n", *(f"    {a}\n" for a in eth0)])


HOOKS = "netns red\n\n" + red_pair(eth0=(
    'pre-up echo "pre-up of $IFACE"',
    "post-up env | grep -E '^(IFACE|LOGICAL|ADDRFAM|METHOD|MODE|PHASE|VERBOSITY|IF_[A-Z_]+)=' "
    "\\\n        | sort > {out}",
    "post-up readlink /proc/self/ns/net >> {out}",
    "post-up ip route add 192.0.2.0/24 via 10.0.1.1"), method="inet static")


def test_imperative_lines_run_in_the_interfaces_namespace_with_ifupdown2s_environment(
        session, tmp_path):
    out = tmp_path / "env"
    _, model = interfaces(tmp_path, HOOKS.format(out=out))
    result = apply(model, session)
    assert result.verified
    lines = out.read_text().splitlines()
    env = dict(line.split("=", 1) for line in lines[:-1])
    assert env == {"IFACE": "eth0", "LOGICAL": "eth0", "ADDRFAM": "inet", "METHOD": "static",
                   "MODE": "start", "PHASE": "post-up", "VERBOSITY": "0",
                   "IF_ADDRESS": "10.0.1.2/30", "IF_NETNS": "red",
                   "IF_PRE_UP": 'echo "pre-up of $IFACE"',
                   "IF_POST_UP": env["IF_POST_UP"],
                   # A declared peer adopts the veth (architecture.md): its
                   # stanza gains the pairing, located at the veth's line.
                   "IF_VETH_PEER_NAME": "veth-red"}
    assert env["IF_POST_UP"].startswith("env | grep")
    red = subprocess.run(["ip", "netns", "exec", "red", "readlink", "/proc/self/ns/net"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert lines[-1] == red
    # The route a post-up line added, read back from the namespace.
    assert "192.0.2.0/24 via 10.0.1.1 dev eth0" in ip("-n", "red", "route", "show")
    assert "eth0 (netns red): pre-up 'echo \"pre-up of $IFACE\"': pre-up of eth0" in result.hooks
    # Nothing comes up on a second apply: no line runs again.
    out.unlink()
    again = apply(model, session)
    assert again.hooks == [] and not out.exists()


def test_a_failing_pre_up_keeps_its_interface_down_and_the_apply_is_reverted(session, tmp_path):
    path, model = interfaces(tmp_path, """\
        auto veth0
        iface veth0
            link-type veth
            veth-peer-name veth1
            address 10.0.9.1/30
            pre-up echo refusing; exit 3
        """)
    with pytest.raises(ApplyFailed) as failed:
        apply(model, session)
    message = str(failed.value)
    assert f"{path}:6: veth0: pre-up 'echo refusing; exit 3' failed (exit 3): refusing" in message
    assert "the previous state was restored" in message
    assert subprocess.run(["ip", "link", "show", "veth0"], capture_output=True).returncode != 0


def test_a_device_its_own_pre_up_line_makes_is_configured_after_the_line(session, tmp_path):
    """`pre-up brctl addbr $IFACE` (a Freifunk gateway), `pre-up ip link add vxlan0 ...`
    (a Proxmox host): ifupdown2 runs the line, then sets the stanza's MAC, MTU and
    addresses on the device it made. netcfg ran the line only before the batch that
    brings the device up, after the one that sets its MAC: no such device, exit 3,
    though `check` was ok (issue 22)."""
    path, model = interfaces(tmp_path, """\
        auto hookbr0
        iface hookbr0 inet static
            hwaddress 02:00:0a:0b:90:02
            address 10.11.144.2/20
            mtu 1400
            pre-up ip link add $IFACE type bridge
            post-down ip link del $IFACE
        """)
    try:
        result = apply(model, session)
        assert result.verified
        made = link("hookbr0")
        assert made["address"] == "02:00:0a:0b:90:02" and made["mtu"] == 1400
        assert "UP" in made["flags"]
        assert "10.11.144.2/20" in ip("-br", "addr", "show", "dev", "hookbr0")
        assert apply(model, session).plan.batches == []     # nothing left to do
    finally:
        subprocess.run(["ip", "link", "del", "hookbr0"], capture_output=True)


def test_dns_lines_go_to_the_namespaces_resolv_conf_and_the_hosts_resolver(
        session, tmp_path, monkeypatch):
    """Both paths point into the test's directory: the host's resolver is
    never touched."""
    monkeypatch.setenv("NETCFG_ETC_NETNS", str(tmp_path / "netns"))
    monkeypatch.setenv("NETCFG_HOST_RESOLVER", f"file:{tmp_path / 'host-resolv.conf'}")
    _, model = interfaces(tmp_path, red_pair(
        host=("dns-nameservers 192.0.2.53", "dns-search example.net"),
        eth0=("dns-nameservers 10.0.1.1 2001:db8::53", "dns-search tenant.example corp.example")))
    result = apply(model, session)
    assert (tmp_path / "netns" / "red" / "resolv.conf").read_text() == (
        "# written by netcfg from dns-nameservers/dns-search of: eth0\n"
        "nameserver 10.0.1.1\nnameserver 2001:db8::53\nsearch tenant.example corp.example\n")
    assert (tmp_path / "host-resolv.conf").read_text().splitlines()[1:] == [
        "nameserver 192.0.2.53", "search example.net"]
    assert f"wrote {tmp_path}/netns/red/resolv.conf (eth0)" in result.hooks
    # Unchanged: not written again.
    assert apply(model, session).hooks == []


def test_one_address_on_two_interfaces(session, tmp_path, stand_in_port):
    """An unnumbered /32 on two uplinks, and one IPv6 address on two links:
    the kernel takes both, and a second apply finds nothing to do."""
    stand_in_port("swp1")
    stand_in_port("swp2")
    _, model = interfaces(tmp_path, """\
        auto swp1
        iface swp1
            address 10.255.0.1/32
            address 2001:db8::1/64

        auto swp2
        iface swp2
            address 10.255.0.1/32
            address 2001:db8::1/64
        """)
    assert apply(model, session).verified
    for dev in ("swp1", "swp2"):
        info = json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
        assert {(a["local"], a["prefixlen"]) for a in info if a["scope"] == "global"} == {
            ("10.255.0.1", 32), ("2001:db8::1", 64)}
    assert len(apply(model, session).plan) == 0


GATEWAY = textwrap.dedent("""\
    auto eth0
    iface eth0 inet static
        address 192.168.10.2/24
        gateway 192.168.10.1
    """)


def ifupdown2_was_here(stand_in_port) -> None:
    """What ifupdown2 leaves for GATEWAY: its default route is `proto kernel onlink`."""
    stand_in_port("eth0")
    ip("link", "set", "eth0", "up")
    ip("addr", "add", "192.168.10.2/24", "dev", "eth0")
    ip("route", "add", "default", "via", "192.168.10.1", "dev", "eth0", "onlink",
       "proto", "kernel")


def default_routes() -> list[tuple[str, str]]:
    return [(r["gateway"], r["protocol"])
            for r in json.loads(ip("-j", "route", "show", "default"))]


def test_takeover_replaces_ifupdown2s_default_route_in_place(session, tmp_path, stand_in_port):
    """It was answered EEXIST and the apply reverted: netcfg apply failed on
    every host ifupdown2 had configured with a gateway line."""
    ifupdown2_was_here(stand_in_port)
    path, model = interfaces(tmp_path, GATEWAY)
    dry = apply(model, session, dry_run=True)
    assert [op.params for op in dry.plan.operations] == [
        {"to": "0.0.0.0/0", "via": "192.168.10.1", "dev": "eth0", "replace": True}]
    assert apply(model, session).verified
    assert default_routes() == [("192.168.10.1", "110")]
    assert main(["query", "--check", "-c", str(path)]) == 0


def test_a_reverted_takeover_puts_the_replaced_route_back(session, tmp_path, monkeypatch,
                                                          stand_in_port):
    import netcfg.apply.execute as execute

    ifupdown2_was_here(stand_in_port)
    _, model = interfaces(tmp_path, GATEWAY + "\nauto eth1\niface eth1\n    link-type veth\n"
                                    "    veth-peer-name eth1p\n    address 10.0.0.1/24\n")
    real = execute._transact

    def failing_later(netns, ops, *args, **kwargs):
        if any(op.action == "route-add" for op in ops):
            real(netns, ops, *args, **kwargs)
            raise OSError(5, "injected after the route was replaced")
        return real(netns, ops, *args, **kwargs)

    monkeypatch.setattr(execute, "_transact", failing_later)
    with pytest.raises(ApplyFailed, match="previous state was restored"):
        apply(model, session)
    assert default_routes() == [("192.168.10.1", "kernel")]


def test_address_virtual_makes_ifupdown2s_macvlans(session, tmp_path, stand_in_port):
    """VRR: one macvlan per address-virtual line, named as ifupdown2's
    addressvirtual addon names them (NAME-vINDEX; a dot in NAME becomes a
    dash: tests/golden), private mode, the MAC and addresses."""
    stand_in_port("uplink")
    _, model = interfaces(tmp_path, """\
        auto uplink
        iface uplink
            address 10.1.13.2/24
            address-virtual 44:39:39:FF:00:13 10.1.13.1/24
            address-virtual none 10.1.14.1/24
        """)
    assert apply(model, session).verified
    v0, v1 = link("uplink-v0"), link("uplink-v1")
    assert (v0["linkinfo"]["info_kind"], v0["linkinfo"]["info_data"]["mode"]) == (
        "macvlan", "private")
    assert v0["link"] == "uplink" and "UP" in v0["flags"]
    assert v0["address"] == "44:39:39:ff:00:13"
    assert v1["address"] != v0["address"]
    for dev, want in (("uplink-v0", "10.1.13.1"), ("uplink-v1", "10.1.14.1")):
        info = json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
        assert [a["local"] for a in info if a["family"] == "inet"] == [want]
    assert len(apply(model, session).plan) == 0


def test_address_virtual_metric_1024_and_no_dad(session, tmp_path, stand_in_port):
    """As ifupdown2's addressvirtual addon: the macvlan's addresses with
    metric 1024 (IPv4 and IPv6), so the lower device's own prefix route wins,
    and accept_dad 0, dad_transmits 0 (the peer router has the same address):
    its IPv6 address is usable at once, never tentative. A metric changed
    behind netcfg's back is a drift `query --check` names, and the next apply
    puts it back in place (ip addr replace)."""
    stand_in_port("uplink")
    path, model = interfaces(tmp_path, """\
        auto uplink
        iface uplink
            address 10.1.13.2/24
            address 2001:db8:13::2/64
            address-virtual 44:39:39:FF:00:13 10.1.13.1/24 2001:db8:13::1/64
        """)
    assert apply(model, session).verified

    def addresses(dev: str) -> dict[str, dict]:
        info = json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
        return {f"{a['local']}/{a['prefixlen']}": a for a in info if a["scope"] == "global"}

    vrr = addresses("uplink-v0")
    assert {a: v.get("metric") for a, v in vrr.items()} == {
        "10.1.13.1/24": 1024, "2001:db8:13::1/64": 1024}
    assert not vrr["2001:db8:13::1/64"].get("tentative")
    assert all("metric" not in v for v in addresses("uplink").values())
    for sysctl in ("accept_dad", "dad_transmits"):
        assert ip_sysctl(f"net.ipv6.conf.uplink-v0.{sysctl}") == "0"
        assert ip_sysctl(f"net.ipv6.conf.uplink.{sysctl}") == "1"
    for family, to in (("-4", "10.1.13.5"), ("-6", "2001:db8:13::5")):
        assert json.loads(ip(family, "-j", "route", "get", to))[0]["dev"] == "uplink"
    assert len(apply(model, session).plan) == 0

    ip("addr", "replace", "10.1.13.1/24", "dev", "uplink-v0", "metric", "5")
    assert main(["query", "--check", "-c", str(path)]) != 0
    again = apply(model, session)
    assert again.verified
    # The read side has one metric per device: both addresses are given it again.
    assert sorted(op.describe() for batch in again.plan.batches for op in batch) == [
        "+ addr-add uplink-v0 10.1.13.1/24 metric=1024 replace=yes",
        "+ addr-add uplink-v0 2001:db8:13::1/64 metric=1024 replace=yes"]
    assert {a: v["metric"] for a, v in addresses("uplink-v0").items()} == {
        "10.1.13.1/24": 1024, "2001:db8:13::1/64": 1024}
    assert main(["query", "--check", "-c", str(path)]) == 0


def test_pointopoint_broadcast_and_onlink(session, tmp_path, stand_in_port):
    """Hetzner's routed layout (pve-network simple-hetzner-host): a /32 with
    a point-to-point peer that is the gateway; a broadcast address; a route
    whose gateway is on no prefix (onlink). A second apply finds nothing."""
    stand_in_port("eth0")
    stand_in_port("eth1")
    path, model = interfaces(tmp_path, """\
        auto eth0
        iface eth0 inet static
          address 144.76.0.1
          netmask 255.255.255.255
          pointopoint 172.31.1.1
          gateway 172.31.1.1

        auto eth1
        iface eth1
          address 192.168.10.1/30
          broadcast 192.168.10.3
          route 10.9.0.0/16 via 10.0.0.1 onlink
        """)
    assert apply(model, session).verified
    (a0,) = [a for a in json.loads(ip("-j", "addr", "show", "dev", "eth0"))[0]["addr_info"]
             if a["family"] == "inet"]
    assert (a0["local"], a0["address"], a0["prefixlen"]) == ("144.76.0.1", "172.31.1.1", 32)
    (a1,) = [a for a in json.loads(ip("-j", "addr", "show", "dev", "eth1"))[0]["addr_info"]
             if a["family"] == "inet"]
    assert a1["broadcast"] == "192.168.10.3"
    routes = {r["dst"]: r for r in json.loads(ip("-j", "route", "show"))}
    assert routes["default"]["gateway"] == "172.31.1.1"
    assert "onlink" in routes["10.9.0.0/16"]["flags"]
    assert len(apply(model, session).plan) == 0
    assert main(["query", "--check", "-c", str(path)]) == 0
