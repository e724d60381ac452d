"""The compatibility tier: no regression against tests/compat/expectation.json.

* Acceptance: every corpus file that `netcfg check` accepted when the
  expectation was recorded is still accepted (a file newly accepted is good
  news: rerun `tests/compat/table.py --update-expectation`).
* Differential: each file recorded as run gives the same kernel state as
  ifupdown2 where it did, and no difference that was not recorded (a
  recorded difference that went away is good news: rerun
  `tests/compat/differential.py --update-expectation`). Takeover: no more
  disruptive requests than recorded.

Root and ifupdown2 (`make compat-deps`) are needed for the differential; it
skips without them. `make test` runs the quick subset; NETCFG_COMPAT_FULL=1
(`make test-compat`) runs every recorded file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import dhcp_peer  # noqa: E402
import differential  # noqa: E402
import explain  # noqa: E402
import table  # noqa: E402

EXPECTATION = json.loads((HERE / "expectation.json").read_text())
FULL = os.environ.get("NETCFG_COMPAT_FULL") == "1"
RECORDED = EXPECTATION.get("differential", {})


def test_corpus_is_large_and_every_file_names_its_source():
    files = table.corpus_files()
    assert len(files) >= 300   # a source lost shows here (330 at issue 22)
    for path in files:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# compat-source: ") and "licence:" in first, path


def test_no_accepted_file_is_refused_now():
    results = {r.name: r for r in table.check_all()}
    assert set(EXPECTATION["accepted"]) <= set(results), "corpus files went missing"
    regressed = [f"{name}: {results[name].errors[:1]}" for name in EXPECTATION["accepted"]
                 if not results[name].accepted]
    assert not regressed, "accepted before, refused now:\n" + "\n".join(regressed)


def _differential_cases():
    for name, rec in sorted(RECORDED.items()):
        if rec["status"] not in ("same", "differs"):
            continue
        marks = [] if FULL or not rec.get("slow") else \
            [pytest.mark.skip(reason="slow (over differential.SLOW_S s): make test-compat runs it")]
        yield pytest.param(name, rec, id=name, marks=marks)


def _path(name: str) -> Path:
    return HERE / name if (HERE / name).exists() else HERE / "corpus" / name


@pytest.fixture(scope="module")
def host_kinds():
    if os.geteuid() != 0:
        pytest.skip("the differential needs root (namespaces)")
    share = differential.IFUPDOWN2_ROOT / "usr" / "share" / "ifupdown2" / "__main__.py"
    if not share.exists():
        pytest.skip("ifupdown2 is not unpacked: make compat-deps")
    differential.prepare_outside()
    return differential.host_kinds()


@pytest.mark.parametrize(("name", "recorded"), list(_differential_cases()))
def test_differential_no_new_difference(name, recorded, host_kinds):
    out = differential.run_file(_path(name), host_kinds)
    assert out.status in ("same", "differs"), f"{name}: {out.status} {out.detail}"
    new = sorted(set(out.differences) - set(recorded["differences"]))
    assert not new, (f"{name}: kernel state differs from ifupdown2's in ways not recorded "
                     "in tests/compat/expectation.json:\n" + "\n".join(new))
    assert len(out.takeover_disruptive) <= recorded["takeover_disruptive"], \
        f"{name}: takeover now disturbs working devices: {out.takeover_disruptive}"


def test_sandbox_is_private_and_its_sys_shows_its_own_devices(host_kinds):
    """ifupdown2 writes bridge knobs through /sys: there it must find the sandbox's
    devices (the stand-in port and its peer), not the host's."""
    path = HERE / "corpus" / "debian-ifupdown" / "bridge.interfaces"
    result = differential.sandbox("none", path, ["eth0"], takeover=False)
    assert result["netns"] != os.stat("/proc/self/ns/net").st_ino
    assert result["sys_class_net"] == ["cmp1", "eth0", "lo"]
    assert set(result["state"]["links"]) == {"eth0", "lo"}
    assert result["state"]["links"]["eth0"]["address"] == "02:cc:00:00:00:01"


@pytest.mark.parametrize("tool", ["ifupdown2", "netcfg"])
def test_inet_dhcp_is_answered_and_its_files_stay_in_the_sandbox(tool, host_kinds):
    """The harness's DHCP peer (dhcp_peer.py): each tool's client leases port 1's
    address from 198.18.1.0/24 with its router as the default route, so `same`
    on an `inet dhcp` file compares a lease; the client writes nothing in the
    host's /var/lib/dhcp and is gone with the sandbox."""
    lease_dir = Path("/var/lib/dhcp")
    before = sorted(os.listdir(lease_dir)) if lease_dir.is_dir() else None
    path = HERE / "corpus" / "cumulus-demos" / "evpn-spine01.interfaces"
    ports = differential.physical_ports(differential.netcfg_plan(path))
    result = differential.sandbox(tool, path, ports, takeover=False)
    assert result["rc"] == 0, result["log"]
    leased = [a["local"] for a in result["state"]["addresses"].get("eth0", [])
              if a["family"] == "inet"]
    assert len(leased) == 1 and leased[0].startswith("198.18.1."), result["log"]
    assert {"dst": "default", "gateway": "198.18.1.1", "dev": "eth0", "flags": []} in \
        result["state"]["routes"]
    assert (sorted(os.listdir(lease_dir)) if lease_dir.is_dir() else None) == before
    assert dhcp_peer.clients_in(result["netns"]) == []


# ---- the VM tier (tests/compat/vm_differential.py; `make test-compat-vm`) -------------------

def test_vm_runner_forks_give_the_host_runs_outcome(host_kinds, tmp_path):
    """The VM runner's warm forks (netcfg's and ifupdown2's main() in forked children,
    sandboxes unshared in-process) must measure what the host tier's new processes
    measure: run on the host kernel, on a file the host tier records, the same outcome."""
    name = "debian-ifupdown/bridge.interfaces"
    recorded = RECORDED[name]
    (tmp_path / "files.txt").write_text(name + "\n")
    proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private",
                           sys.executable, str(HERE / "vm_differential.py"), "--guest",
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "outcomes.jsonl").read_text().splitlines()]
    out = next(r for r in rows if r.get("file") == name)
    assert out["status"] == recorded["status"], out["detail"]
    assert sorted(out["differences"]) == sorted(recorded["differences"])
    assert len(out["takeover_disruptive"]) == recorded["takeover_disruptive"]
    assert out["ifupdown2_rc"] == 0 and out["netcfg_rc"] == 0 and out["netcfg_query_rc"] == 0


def test_vm_subset_is_recorded():
    """`make test`'s VM subset checks against a record: each of its files has one."""
    import vm_differential
    recorded = EXPECTATION.get(vm_differential.EXPECTATION_KEY, {})
    missing = [n for n in vm_differential.SUBSET if n not in recorded]
    assert not missing, "run tests/compat/vm_differential.py --update-expectation: " + str(missing)


def test_explain_names_deliberate_differences_and_leaves_the_rest():
    """explain.explain: what the doc tables count as explained (pure, no root)."""
    text = ("auto br0\niface br0\n    bridge-ports eth0 bond0\n    address 10.0.0.1/24\n"
            "    gateway 10.0.0.254\nauto eth1\niface eth1\n    bond-master bond0\n"
            "auto bond0\niface bond0\n    bond-slaves none\n")
    lines = [
        "sysctl ipv4/br0/forwarding: ifupdown2 1, netcfg 0",
        "sysctl ipv6/eth0/disable_ipv6: ifupdown2 1, netcfg 0",
        'route ifupdown2 only: {"dev": "br0", "dst": "default", "flags": ["onlink"], '
        '"gateway": "10.0.0.254", "protocol": "kernel"}',
        'route netcfg only: {"dev": "br0", "dst": "default", "flags": [], '
        '"gateway": "10.0.0.254", "protocol": "110"}',
        "link eth1 master: ifupdown2 None, netcfg 'bond0'",
        "sysctl ipv6/eth9/disable_ipv6: ifupdown2 1, netcfg 0",     # not a port: unexplained
        "link br0 mtu: ifupdown2 9000, netcfg 1500",                  # unexplained
    ]
    why = explain.explain(lines, text)
    assert set(why) == set(lines[:5])
    assert all(w.startswith(("deliberate: ", "not a setting: ")) for w in why.values())


def test_explain_takes_ifupdown2s_own_refusals_and_stp_timing():
    """What ifupdown2 logged it would not do explains the differences about those
    devices (and only those); STP still converging is no setting."""
    text = ("auto vmbr0\niface vmbr0\n    bridge-ports eno1\n    bridge-vlan-aware yes\n"
            "auto z_two\niface z_two\n    bridge-ports ln_two\n    bridge-vlan-aware yes\n"
            "auto z_one\niface z_one\n    bridge-ports sv_one ln_one\n    bridge-vlan-aware yes\n"
            "auto br1\niface br1\n    bridge-ports swp1\n    bridge-stp yes\n")
    log = ("error: ignoring interface z_two. Only one object with attribute "
           "'bridge-vlan-aware yes' allowed.\n"
           "error: z_one: vmbr0.10: vlan sub-interface is not supported in a vlan-aware bridge\n")
    lines = [
        "link z_two: made by netcfg only (bridge)",
        "link ln_two info_slave_data.cost: ifupdown2 None, netcfg 2",
        "link z_two.100: made by netcfg only (vlan)",
        "bridge vlans ln_one: ifupdown2 [{'vlan': 1}], netcfg [{'vlan': 1}, {'vlan': 2}]",
        "bridge vlans vmbr0: ifupdown2 [{'vlan': 1}], netcfg [{'vlan': 1}, {'vlan': 10}]",
        "link br1 info_data.ageing_time: ifupdown2 3000, netcfg 30000",
        "link swp1 info_slave_data.state: ifupdown2 'forwarding', netcfg 'listening'",
        "link ln_one mtu: ifupdown2 1500, netcfg 9000",      # not a VLAN: unexplained
        "link eno1 mtu: ifupdown2 1500, netcfg 9000",        # unexplained
    ]
    why = explain.explain(lines, text, log)
    assert set(why) == set(lines[:7])
    assert why[lines[0]].startswith("ifupdown2 refused: a second VLAN-aware bridge (z_two")
    assert "nor VLAN 10 on vmbr0 itself" in why[lines[4]]
    assert why[lines[5]].startswith("not a setting: STP") and "topology change" in why[lines[5]]
    assert explain.explain(lines, text) == {
        lines[5]: why[lines[5]], lines[6]: why[lines[6]]}   # no log, no refusal


def test_explain_names_the_ipv6_address_ifupdown2_loses_to_its_hwaddress_down():
    """A VRF slave with hwaddress: ifupdown2 adds the addresses, then downs the
    device to set the MAC, which deletes IPv6 ones; netcfg keeps them."""
    text = ("auto myvnet\niface myvnet\n    address 10.0.0.1/24\n"
            "    address 2a08:2142:302:3::1/64\n    hwaddress A2:1D:CB:1A:C0:8B\n"
            "    bridge_ports vxlan_myvnet\n    vrf vrf_myzone\n")
    lines = [
        "address myvnet 2a08:2142:302:3::1/64: netcfg only",
        'route netcfg only: {"dev": "myvnet", "dst": "2a08:2142:302:3::/64", "metric": 256, '
        '"protocol": "kernel", "table": "1001"}',
        'route netcfg only: {"dev": "myvnet", "dst": "2a08:2142:302:3::1", "protocol": "kernel", '
        '"table": "1001", "type": "local"}',
        'route netcfg only: {"dev": "myvnet", "dst": "2001:db8::1", "protocol": "kernel"}',
        "address myvnet 10.0.0.1/24: netcfg only",
    ]
    why = explain.explain(lines, text)
    assert set(why) == set(lines[:3])
    assert all(w.startswith("ifupdown2 bug: ") for w in why.values())
    without_mac = text.replace("    hwaddress A2:1D:CB:1A:C0:8B\n", "")
    assert explain.explain(lines, without_mac) == {}


def test_explain_names_a_prefix_route_whose_source_is_another_subnets_broadcast():
    """10.7.192.31/31 beside 10.7.192.30/30 (broadcast .31): the kernel makes the
    /31's prefix route only if that address came first, so the two tools' order
    decides it (eni-bridge7_macvlans). Another source, or a route of another
    type, stays unexplained."""
    text = ("auto bridge.30\niface bridge.30\n"
            "    address-virtual 42:38:39:ff:00:30 10.7.192.30/30\n"
            "auto bridge.31\niface bridge.31\n"
            "    address-virtual 42:38:39:ff:00:31 10.7.192.31/31\n")
    lines = [
        'route netcfg only: {"dev": "bridge-31-v0", "dst": "10.7.192.30/31", "flags": '
        '["linkdown"], "metric": 1024, "prefsrc": "10.7.192.31", "protocol": "kernel", '
        '"scope": "link"}',
        'route netcfg only: {"dev": "bridge-30-v0", "dst": "10.7.192.28/30", "flags": [], '
        '"metric": 1024, "prefsrc": "10.7.192.30", "protocol": "kernel", "scope": "link"}',
        'route netcfg only: {"dev": "bridge-31-v0", "dst": "10.7.192.31", "prefsrc": '
        '"10.7.192.31", "protocol": "kernel", "scope": "host", "table": "local", '
        '"type": "local"}',
    ]
    why = explain.explain(lines, text)
    assert list(why) == lines[:1]
    assert why[lines[0]] == explain.SHARED_BROADCAST
    assert explain.explain(lines, text.replace("10.7.192.30/30", "10.7.192.30/24")) == {}


def test_explain_names_the_vlans_ifupdown2_lost_to_a_range_past_4094():
    """pve-network's `bridge-vids 2-4096`: ifupdown2's `bridge vlan add` fails and the
    port keeps VLAN 1 only; netcfg sets 2-4094. Only VLANs inside the failed range
    on the device it named are explained."""
    log = ("warning: vmbr0: apply bridge settings: cmd '/sbin/bridge -force -batch - "
           "[vlan add vid 2-4096 dev eth0 ]' failed: returned 1 (Invalid VLAN range "
           "\"2-4096\"\nCommand failed -:1\n)\n")
    one = "{'vlan': 1, 'flags': ['PVID', 'Egress Untagged']}"
    lines = [
        f"bridge vlans eth0: ifupdown2 [{one}], netcfg [{one}, {{'vlan': 2}}, {{'vlan': 4094}}]",
        f"bridge vlans eth1: ifupdown2 [{one}], netcfg [{one}, {{'vlan': 2}}]",
    ]
    why = explain.explain(lines, "", log)
    assert why == {lines[0]: explain.VIDS_PAST_4094}
    assert explain.explain(lines, "") == {}


def test_explain_names_the_automatic_path_cost_of_a_vlan_of_a_bridge():
    """A VLAN of a bridge as another bridge's port: its cost is the kernel's, from
    the lower bridge's speed when the VLAN's carrier came up (100 when it had none
    yet); a cost the file writes, or a port that is no such VLAN, stays unexplained."""
    text = ("auto z_myzone\niface z_myzone\n    bridge-ports ln_myzone\n"
            "auto myvnet\niface myvnet\n    bridge-ports z_myzone.100 eth9\n")
    lines = ["link z_myzone.100 info_slave_data.cost: ifupdown2 2, netcfg 100",
             "link eth9 info_slave_data.cost: ifupdown2 2, netcfg 100"]
    assert explain.explain(lines, text) == {lines[0]: explain.AUTO_COST_TIMING}
    written = text + "    bridge-pathcosts z_myzone.100=100\n"
    assert explain.explain(lines, written) == {}


def test_explain_names_an_alias_stanzas_label():
    """iface eth0:1's address: netcfg labels it eth0:1 as ifupdown does (deliberate),
    ifupdown2 leaves it eth0's; a label the file has no alias stanza for stays
    unexplained."""
    text = "auto eth0:1\niface eth0:1 inet static\n    address 10.0.20.21/24\n"
    line = ("address eth0 10.0.20.21/24: ifupdown2 {'family': 'inet', 'local': '10.0.20.21', "
            "'prefixlen': 24, 'scope': 'global', 'label': 'eth0'}, netcfg {'family': 'inet', "
            "'local': '10.0.20.21', 'prefixlen': 24, 'scope': 'global', 'label': '%s'}")
    assert explain.explain([line % "eth0:1"], text)[line % "eth0:1"].startswith("deliberate: ")
    assert explain.explain([line % "eth0:2"], text) == {}


def test_explain_names_ifupdown2s_crash_on_an_address_with_a_netmask():
    """ifupdown2 3.0's netlink address add raises on `address A` + `netmask M` ('str'
    object has no attribute 'packed'): what netcfg alone then has on that device is
    ifupdown2's bug; another device's difference stays unexplained."""
    log = ("error: netlink: eth0: cannot add address 192.168.42.1/24 dev eth0: 'str' object "
           "has no attribute 'packed'\n")
    lines = ["address eth0 192.168.42.1/24: netcfg only", "address eth1 10.0.0.1/24: netcfg only"]
    why = explain.explain(lines, "iface eth0 inet static\n  address 192.168.42.1\n"
                          "  netmask 255.255.255.0\n", log)
    assert list(why) == lines[:1] and why[lines[0]].startswith("ifupdown2 bug: ")


def test_explain_names_the_addresses_of_a_stanza_without_auto():
    """`netcfg apply` sets a non-auto stanza's addresses (device down), `ifup -a` does
    not: its address and the kernel's routes of it are deliberate; the same on a stanza
    an auto line names stays unexplained."""
    text = "auto eth6\niface eth6 inet static\n  address 10.1.1.1/24\n" \
           "iface eth7 inet static\n  address 1.14.15.16/24\n"
    lines = ["address eth7 1.14.15.16/24: netcfg only",
             'route netcfg only: {"dev": "eth7", "dst": "1.14.15.16", "flags": [], "prefsrc": '
             '"1.14.15.16", "protocol": "kernel", "scope": "host", "table": "local", "type": '
             '"local"}',
             "address eth6 10.1.1.1/24: netcfg only"]
    why = explain.explain(lines, text)
    assert set(why) == set(lines[:2]) and all(w.startswith("deliberate: ") for w in why.values())


def test_explain_names_ifupdown2s_cache_race_on_a_device_a_pre_up_line_made():
    """ifupdown2's address addon skips a device its netlink cache has not seen yet: on a
    device made by its own `pre-up brctl addbr $IFACE`, no hwaddress and no address on
    some runs. Only such a device's lines; the same lines on a NIC stay unexplained."""
    text = ("auto donBR\niface donBR inet static\n  hwaddress 02:00:0a:0b:90:02\n"
            "  address 10.11.144.2\n  netmask 255.255.240.0\n"
            "  pre-up /sbin/brctl addbr $IFACE\n"
            "auto eth0\niface eth0 inet static\n  address 10.1.1.1/24\n")
    lines = ["link donBR address: ifupdown2 'ee:6b:6d:81:46:5e', netcfg '02:00:0a:0b:90:02'",
             "address donBR 10.11.144.2/20: netcfg only",
             "address eth0 10.1.1.1/24: netcfg only"]
    why = explain.explain(lines, text)
    assert set(why) == set(lines[:2])
    assert all(w == explain.IFUPDOWN2_CACHE_RACE for w in why.values())
    assert explain.ifupdown2_raced(lines, text) == {"donBR"}
    assert explain.ifupdown2_raced(lines[2:], text) == set()


def test_explain_names_the_bond_only_bond_master_lines_make():
    """A bond with bond-* settings and no bond-slaves, its slaves naming it by bond-master
    (traps-L189): ifupdown2 3.0 makes no bond at all; the `link bond0: made by netcfg
    only` line is the deliberate bond-master one too, not only the slaves' lines."""
    text = ("auto eno1\niface eno1 inet manual\n  bond-master bond0\n"
            "auto bond0\niface bond0 inet manual\n  bond-mode balance-alb\n")
    lines = ["link bond0: made by netcfg only (bond)", "link eno1 master: ifupdown2 None, "
             "netcfg 'bond0'", "link br9: made by netcfg only (bridge)"]
    why = explain.explain(lines, text)
    assert set(why) == set(lines[:2]) and all("bond-master" in w for w in why.values())


def test_explain_names_the_path_cost_ifupdown2s_ifup_of_a_port_resets():
    """networking.service's `ifup eno1` of an allow-hotplug port resets its path cost to
    ifupdown2's default 100; netcfg keeps the kernel's. A port not on an allow-hotplug
    line, or a cost the file writes, stays unexplained."""
    text = ("allow-hotplug eno1\niface eno1 inet dhcp\niface eno2 inet manual\n"
            "auto vmbr0\niface vmbr0 inet dhcp\n  bridge-ports eno1 eno2\n")
    lines = ["link eno1 info_slave_data.cost: ifupdown2 100, netcfg 2",
             "link eno2 info_slave_data.cost: ifupdown2 100, netcfg 2"]
    assert explain.explain(lines, text) == {lines[0]: explain.PORT_COST_RESET}
    written = text + "  bridge-pathcosts eno1=100\n"
    assert explain.explain(lines, written) == {}


def test_explain_names_the_vrrp_macvlans_netcfg_names_after_their_interface():
    """ifupdown2's vrrp4-IFINDEX-ID and netcfg's vrrp4-PARENT-ID for one `vrrp` line are
    the deliberate naming difference; a VRRP macvlan only one tool made stays unexplained."""
    text = "auto eth0\niface eth0\n  address 192.168.10.2/24\n  vrrp 10 192.168.10.1\n"
    lines = ["link vrrp4-3-10: made by ifupdown2 only (macvlan)",
             "link vrrp4-eth0-10: made by netcfg only (macvlan)",
             "address vrrp4-3-10 192.168.10.1/32: ifupdown2 only",
             "address vrrp4-eth0-10 192.168.10.1/32: netcfg only"]
    why = explain.explain(lines, text)
    assert set(why) == set(lines) and set(why.values()) == {explain.VRRP_NAMES}
    assert explain.explain(lines[1::2], text) == {}


def test_explain_names_the_autoconf_ifupdown_sets_on_inet6_static():
    """Compared with ifupdown 0.8 (bird2-interfaces): its `inet6 static` writes autoconf 0,
    netcfg leaves the kernel's as ifupdown2 does; a stanza that writes autoconf, or one that
    is not inet6 static, stays unexplained."""
    text = ("auto eth0\niface eth0 inet dhcp\niface eth0 inet6 static\n  address 2001:db8::1/64\n"
            "auto eth1\niface eth1 inet6 static\n  address 2001:db8:1::1/64\n  autoconf 1\n"
            "auto eth2\niface eth2 inet6 auto\n")
    lines = [f"sysctl ipv6/eth{i}/autoconf: ifupdown2 0, netcfg 1" for i in range(3)]
    assert explain.explain(lines, text) == {lines[0]: explain.INET6_STATIC_AUTOCONF}


def test_explain_names_a_ports_own_address_the_peer_set():
    """ifupdown 0.8 (testcase.7) puts eth0.0201's address on it though br0.0201 enslaves
    it; netcfg ignores it as ifupdown2 does. The kernel's routes of it go with it; an
    address of a device that is no port stays unexplained."""
    text = ("auto eth0.0201 br0.0201 eth1\niface eth0.0201 inet static\n  address 192.168.0.1/25\n"
            "iface br0.0201 inet manual\n  bridge_ports eth0.0201\n"
            "iface eth1 inet static\n  address 10.0.0.1/24\n")
    lines = ["address eth0.0201 192.168.0.1/25: ifupdown2 only",
             'route ifupdown2 only: {"dev": "eth0.0201", "dst": "192.168.0.1", "flags": [], '
             '"prefsrc": "192.168.0.1", "protocol": "kernel", "scope": "host", "table": "local", '
             '"type": "local"}',
             "address eth1 10.0.0.1/24: ifupdown2 only"]
    why = explain.explain(lines, text)
    assert set(why) == set(lines[:2]) and set(why.values()) == {explain.PORT_ADDRESS}
