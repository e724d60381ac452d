"""IP tunnels end to end, in the VM tier (the host kernel here has no
ip_gre, ipip, sit, ip6_tunnel or ip_vti; Debian's 6.12 has them).

A veth underlay between the host namespace and a tenant `far`, a GRE
tunnel across it in both, and one device of every other tunnel kind on
the host side: check, apply, traffic through the GRE tunnel, the kernel's
own view (iproute2), `show | apply` and a second apply send nothing, an
endpoint change re-creates the device, and a tunnel deleted by hand is put
back by the next apply. The kernel's fallback devices (gre0, sit0, tunl0...,
made in every namespace as the modules load) are neither shown nor purged.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from vm_helpers import kernel_can, ping

from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.tags import NETNS_MARK


VM_TIER = pytest.mark.skipif(not kernel_can("greprobe0", "type", "gre", "remote", "192.0.2.99"),
                             reason="VM tier: needs the ip_gre module (make test-vm)")

CONFIG = textwrap.dedent("""\
    netns far
        purge yes

    auto u0
    iface u0
        link-type veth
        veth-peer-name u1
        address 192.0.2.1/24

    auto u1
    iface u1
        netns far
        link-type veth
        veth-peer-name u0
        veth-peer-netns ""
        address 192.0.2.2/24

    auto gre1
    iface gre1
        tunnel-mode gre
        tunnel-endpoint 192.0.2.2
        tunnel-local 192.0.2.1
        tunnel-ttl 64
        address 10.9.0.1/30

    auto gre1
    iface gre1
        netns far
        tunnel-mode gre
        tunnel-endpoint 192.0.2.1
        tunnel-local 192.0.2.2
        address 10.9.0.2/30

    auto tap1
    iface tap1 inet tunnel
        mode gretap
        endpoint 198.51.100.3
        local 192.0.2.1

    auto ipip1
    iface ipip1 inet tunnel
        mode ipip
        endpoint 198.51.100.4
        local 192.0.2.1
        ttl inherit
        address 10.9.1.1
        netmask 255.255.255.252
        dstaddr 10.9.1.2

    auto he-ipv6
    iface he-ipv6 inet6 v4tunnel
        endpoint 198.51.100.5
        local 192.0.2.1
        ttl 255
        address 2001:db8:1f0a::2/64

    auto t6
    iface t6 inet6 tunnel
        mode ip6ip6
        endpoint 2001:db8:ffff::2
        local 2001:db8:ffff::1

    auto g6
    iface g6
        tunnel-mode ip6gre
        tunnel-endpoint 2001:db8:ffff::3

    auto v1
    iface v1
        tunnel-mode vti
        tunnel-endpoint 198.51.100.9
        tunnel-local 192.0.2.1
    """)


def model_of(tmp_path, text: str):
    path = tmp_path / "tunnels.interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


def links(netns: str) -> list[str]:
    out = subprocess.run(["ip", *(["-n", netns] if netns else []), "-j", "link", "show"],
                         check=True, capture_output=True, text=True).stdout
    return [link["ifname"] for link in json.loads(out)]


def info(netns: str, dev: str) -> dict:
    out = subprocess.run(["ip", *(["-n", netns] if netns else []), "-d", "-j", "link", "show",
                          "dev", dev], check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]


@VM_TIER
def test_tunnels_apply_read_back_show_and_repair(session, tmp_path):
    result = apply(model_of(tmp_path, CONFIG), session)
    assert result.verified
    # The kernel's own view, by iproute2: kind and what ip -d prints of each.
    expected = {"gre1": ("gre", "192.0.2.2", "192.0.2.1"),
                "tap1": ("gretap", "198.51.100.3", "192.0.2.1"),
                "ipip1": ("ipip", "198.51.100.4", "192.0.2.1"),
                "he-ipv6": ("sit", "198.51.100.5", "192.0.2.1"),
                "t6": ("ip6tnl", "2001:db8:ffff::2", "2001:db8:ffff::1"),
                "g6": ("ip6gre", "2001:db8:ffff::3", "any"),
                "v1": ("vti", "198.51.100.9", "192.0.2.1")}
    for dev, (kind, remote, local) in expected.items():
        data = info("", dev)
        assert data["linkinfo"]["info_kind"] == kind, data
        assert data["linkinfo"]["info_data"]["remote"] == remote, data
        assert data["linkinfo"]["info_data"].get("local", "any") == local, data
    assert info("", "gre1")["linkinfo"]["info_data"]["ttl"] == 64
    assert info("", "he-ipv6")["linkinfo"]["info_data"]["ttl"] == 255
    assert info("", "t6")["linkinfo"]["info_data"]["proto"] == "ip6ip6"
    assert info("", "g6")["linkinfo"]["info_data"]["ttl"] == 64   # as `ip -6 tunnel add`
    addrs = json.loads(subprocess.run(["ip", "-j", "addr", "show", "dev", "ipip1"], check=True,
                                      capture_output=True, text=True).stdout)[0]["addr_info"]
    # (the kernel's own link-local, fe80::5efe:A.B.C.D from the local address, aside)
    assert [(a["local"], a.get("address"), a["prefixlen"]) for a in addrs
            if a.get("scope") != "link"] == [("10.9.1.1", "10.9.1.2", 30)]
    assert ping("far", "10.9.0.1"), "no traffic through the GRE tunnel"

    # The kernel's fallback devices stay, in both namespaces (far purges), unread.
    fallback = {"gre0", "gretap0", "erspan0", "tunl0", "sit0", "ip_vti0", "ip6gre0",
                "ip6tnl0", "ip6_vti0"}
    for netns in ("", "far"):
        assert {"gre0", "gretap0"} <= set(links(netns)), links(netns)
    assert "gre0" in links("far")
    # show | apply, and a second apply: nothing to send.
    shown = emit_model(session.read(["", "far"]), running=True, netns_mark=NETNS_MARK)
    assert not [dev for dev in fallback if f"iface {dev}" in shown], shown
    assert "tunnel-mode ip6ip6" in shown and "tunnel-endpoint 198.51.100.5" in shown, shown
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    assert apply(model_of(tmp_path, CONFIG), session).requests == 0

    # Drift: a tunnel deleted by hand comes back; an endpoint change re-creates.
    subprocess.run(["ip", "link", "del", "he-ipv6"], check=True)
    assert apply(model_of(tmp_path, CONFIG), session).verified
    assert info("", "he-ipv6")["linkinfo"]["info_kind"] == "sit"
    index = info("", "tap1")["ifindex"]
    changed = CONFIG.replace("endpoint 198.51.100.3", "endpoint 198.51.100.33")
    assert apply(model_of(tmp_path, changed), session).verified
    assert info("", "tap1")["linkinfo"]["info_data"]["remote"] == "198.51.100.33"
    assert info("", "tap1")["ifindex"] != index
    assert apply(model_of(tmp_path, changed), session).requests == 0
    assert {"gre0", "tunl0"} <= set(links("far")), links("far")


# Loaded as the apply starts, the tunnel modules make their fallback devices
# at the kernel's next free ifindex; netcfg starts its own 16 above the
# highest it read. The test puts the two next to each other, as earlier
# tests of this tier happened to (CI, run 28).
MODULES = ("ipip", "sit", "ip6_tunnel")
# What the test before loaded, users of ip6_tunnel among them first.
TUNNEL_MODULES = ("ip6_gre", "ip6_vti", "ip_vti", "sit", "ipip", "ip6_tunnel")
MODULE_CONFIG = textwrap.dedent("""\
    auto ipip1
    iface ipip1
        tunnel-mode ipip
        tunnel-endpoint 198.51.100.4
        tunnel-local 192.0.2.1

    auto sit1
    iface sit1
        tunnel-mode sit
        tunnel-endpoint 198.51.100.5
        tunnel-local 192.0.2.1

    auto t6
    iface t6
        tunnel-mode ip6ip6
        tunnel-endpoint 2001:db8:ffff::2
    """)


def unload(modules) -> str:
    """modprobe -r each ("" when they are gone, else why not); a namespace of
    the test before may still be going (netns cleanup is deferred) and hold
    one for a moment."""
    for _ in range(50):
        done = subprocess.run(["modprobe", "-r", *TUNNEL_MODULES], capture_output=True,
                              text=True)
        left = [m for m in modules if Path(f"/sys/module/{m}").exists()]
        if not left:
            return ""
        time.sleep(0.2)
    return f"{left} stay loaded: {done.stderr.strip()} " + " ".join(
        f"{m}: refcnt {(Path('/sys/module', m, 'refcnt')).read_text().strip()}" for m in left
        if Path("/sys/module", m, "refcnt").exists())


def next_kernel_ifindex() -> int:
    """The ifindex the kernel gives the next device made without one."""
    subprocess.run(["ip", "link", "add", "idxprobe", "type", "dummy"], check=True)
    index = info("", "idxprobe")["ifindex"]
    subprocess.run(["ip", "link", "del", "idxprobe"], check=True)
    return index + 1


@VM_TIER
def test_modules_loaded_before_the_read_make_no_ifindex_clash(session, tmp_path):
    why = unload(MODULES)
    assert not why, f"nothing left to test: {why}"
    highest = max(info("", dev)["ifindex"] for dev in links(""))
    while next_kernel_ifindex() - 15 <= highest:
        pass   # each probe moves the kernel's next index up by one
    # A device of someone else's whose index puts netcfg's first (16 above
    # it) one past the kernel's next: the second fallback device's.
    keep = next_kernel_ifindex() - 15
    subprocess.run(["ip", "link", "add", "keep0", "index", str(keep), "type", "dummy"],
                   check=True)
    try:
        result = apply(model_of(tmp_path, MODULE_CONFIG), session)
        assert result.verified
        assert {"tunl0", "sit0", "ip6tnl0", "ipip1", "sit1", "t6"} <= set(links("")), links("")
        assert apply(model_of(tmp_path, MODULE_CONFIG), session).requests == 0
    finally:
        subprocess.run(["ip", "link", "del", "keep0"], check=True)


# Debian ifupdown's inet6 tunnel method with encaplimit (its
# tests/linux/testcase.19) and its 6to4 method (testcase.9): what ifupdown
# runs, `ip -6 tunnel add tunnel1 mode ip6ip6 remote R local L encaplimit
# none` and `ip tunnel add tun6to4 mode sit remote any local L`, then the
# address 2002:LOCAL::1/16 and the route 2000::/3 via ::192.88.99.1.
IFUPDOWN_INET6 = textwrap.dedent("""\
    auto tunnel1 tunnel3 g8 tun6to4
    iface tunnel1 inet6 tunnel
      address fd00::1
      netmask 48
      mode ip6ip6
      endpoint 2001:db8::2
      local 2001:db8::1
      encaplimit none
      gateway fd00::2

    iface tunnel3 inet6 tunnel
      address 192.0.2.1
      netmask 24
      mode ipip6
      endpoint 2001:db8::2
      local 2001:db8::3

    iface g8 inet6 tunnel
      mode ip6gre
      endpoint 2001:db8::8
      encaplimit 8

    iface tun6to4 inet6 6to4
      local 198.51.100.10
      ttl 64
      metric 7

    auto tun6inherit
    iface tun6inherit inet6 6to4
      local 198.51.100.11
    """)


def routes6(dev: str) -> list[dict]:
    return json.loads(subprocess.run(["ip", "-6", "-j", "route", "show", "dev", dev],
                                     check=True, capture_output=True, text=True).stdout)


@VM_TIER
def test_ifupdown_inet6_tunnel_encaplimit_and_6to4(session, tmp_path):
    result = apply(model_of(tmp_path, IFUPDOWN_INET6), session)
    assert result.verified
    t1 = info("", "tunnel1")["linkinfo"]["info_data"]
    assert t1["proto"] == "ip6ip6" and t1.get("ip6_tnl_f_ign_encap_limit") is True, t1
    t3 = info("", "tunnel3")["linkinfo"]["info_data"]
    assert t3["proto"] == "ipip6" and t3.get("encap_limit") == 4, t3   # iproute2's default
    assert info("", "g8")["linkinfo"]["info_data"].get("encap_limit") == 8
    sit = info("", "tun6to4")
    assert sit["linkinfo"]["info_kind"] == "sit", sit
    assert sit["linkinfo"]["info_data"]["remote"] == "any", sit
    assert sit["linkinfo"]["info_data"]["local"] == "198.51.100.10", sit
    assert sit["linkinfo"]["info_data"]["ttl"] == 64, sit
    # Without a ttl line, as ifupdown's `ip tunnel add` makes it: the inner packet's.
    assert info("", "tun6inherit")["linkinfo"]["info_data"].get("ttl", 0) == 0
    addrs = json.loads(subprocess.run(["ip", "-6", "-j", "addr", "show", "dev", "tun6to4"],
                                      check=True, capture_output=True, text=True).stdout)
    assert ("2002:c633:640a::1", 16) in {(a["local"], a["prefixlen"])
                                         for a in addrs[0]["addr_info"]}, addrs
    assert [(r["dst"], r.get("gateway"), r.get("metric")) for r in routes6("tun6to4")
            if r["dst"] == "2000::/3"] == [("2000::/3", "::192.88.99.1", 7)]

    shown = emit_model(session.read([""]), running=True, netns_mark=NETNS_MARK)
    assert "tunnel-encaplimit none" in shown and "tunnel-endpoint any" in shown, shown
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    assert apply(model_of(tmp_path, IFUPDOWN_INET6), session).requests == 0

    # Drift: the 6to4 route deleted by hand comes back; an encaplimit
    # changed by hand (ip -6 tunnel change) re-creates the tunnel as written.
    subprocess.run(["ip", "-6", "route", "del", "2000::/3", "dev", "tun6to4"], check=True)
    subprocess.run(["ip", "-6", "tunnel", "change", "tunnel1", "mode", "ip6ip6", "remote",
                    "2001:db8::2", "local", "2001:db8::1", "encaplimit", "3"], check=True)
    assert info("", "tunnel1")["linkinfo"]["info_data"].get("encap_limit") == 3
    repaired = apply(model_of(tmp_path, IFUPDOWN_INET6), session)
    assert repaired.verified and repaired.requests > 0
    assert info("", "tunnel1")["linkinfo"]["info_data"].get("ip6_tnl_f_ign_encap_limit") is True
    assert [r["gateway"] for r in routes6("tun6to4") if r["dst"] == "2000::/3"] == \
        ["::192.88.99.1"]
    assert apply(model_of(tmp_path, IFUPDOWN_INET6), session).requests == 0
