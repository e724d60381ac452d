"""Issue 24, H4 (second bullet): other programs' devices next to a `purge yes`
namespace. A veth whose other end is outside the purge (a container's
host-side end on a bridge netcfg does not manage) is not deleted by the
purge, so neither end changes; a revert never re-creates a device netcfg did
not make, nor puts one into netcfg's group. On 8f56453 the purge deleted the
pair and the revert made a new one in group 28259 (new MAC, down, no master),
which the next apply deleted. State read back with `ip -j`, in the sandbox.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time

import pytest
from clirun import netcfg_in_process as cli
from kernel_env import veth_tenants
from test_netcfgd import REPAIR_BOUND_S, make_daemon, wait_for  # noqa: F401 (a fixture)

from netcfg.apply.execute import ApplyFailed, RevertFailed, apply, revert
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.tags import NETCFG_GROUP
from netcfg.plan.scope import ForeignPortsRefused

CONFIG = textwrap.dedent("""\
    netns p
        purge yes

    auto br0
    iface br0
        netns p
        bridge-ports none
        address 10.88.0.1/24
    """)


def ip(*args: str) -> list[dict]:
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def link(name: str, netns: str = "") -> dict | None:
    where = ["-n", netns] if netns else []
    found = [d for d in ip(*where, "-d", "link", "show") if d["ifname"] == name]
    return found[0] if found else None


def identity(name: str, netns: str = "") -> tuple | None:
    """What must not change of a foreign device: it is the same device (its
    ifindex, MAC), in the same group, on the same master, in the same state."""
    dev = link(name, netns)
    if dev is None:
        return None
    return (dev["ifindex"], dev.get("address"), dev.get("group"), dev.get("master"),
            "UP" in dev["flags"])


def model_of(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


@pytest.fixture
def config(tmp_path, netns_dir):
    """config(text) -> a config directory holding ``text`` (rewritten on each call)."""
    directory = tmp_path / "cfg"
    directory.mkdir()

    def write(text: str) -> str:
        (directory / "net.tmpl").write_text(text)
        return str(directory)
    return write


@pytest.fixture
def host_bridge():
    """hbr: a bridge of another program in the host namespace."""
    subprocess.run(["ip", "link", "add", "hbr", "type", "bridge"], check=True)
    subprocess.run(["ip", "link", "set", "hbr", "up"], check=True)
    yield "hbr"
    subprocess.run(["ip", "link", "delete", "hbr"], capture_output=True)
    subprocess.run(["ip", "link", "delete", "vethH"], capture_output=True)


def container_veth() -> None:
    """A container runtime's pair: vethC in p, vethH in the host on hbr."""
    subprocess.run(["ip", "link", "add", "vethH", "type", "veth", "peer", "name", "vethC",
                    "netns", "p"], check=True)
    subprocess.run(["ip", "link", "set", "vethH", "master", "hbr", "up"], check=True)
    subprocess.run(["ip", "-n", "p", "link", "set", "vethC", "up"], check=True)


def test_purge_and_revert_leave_a_veth_whose_other_end_is_outside(session, tmp_path,
                                                                   host_bridge):
    model = model_of(tmp_path, CONFIG)
    assert apply(model, session).verified
    container_veth()
    before = identity("vethC", "p"), identity("vethH")
    assert before[1][3] == "hbr" and before[0][2] != NETCFG_GROUP

    result = apply(model, session)
    assert result.verified
    assert any("vethC" in note and "outside the purged namespaces" in note
               for note in result.plan.notes), result.plan.notes
    assert (identity("vethC", "p"), identity("vethH")) == before
    with pytest.raises(ApplyFailed):
        revert(result, "no confirmation (test)")
    assert (identity("vethC", "p"), identity("vethH")) == before
    # And the next apply plans nothing for either end.
    again = apply(model, session, dry_run=True)
    assert not [op for op in again.plan.operations if op.name in ("vethC", "vethH")]


def test_a_revert_does_not_recreate_a_device_the_purge_deleted(session, tmp_path):
    """Another program's bridge in a purge namespace is the purge's to delete;
    a revert cannot bring that device back (a new one would be another device,
    and netcfg's), so it does not make one and says so: exit 4, not 'restored'."""
    model = model_of(tmp_path, CONFIG)
    assert apply(model, session).verified
    subprocess.run(["ip", "-n", "p", "link", "add", "fbr", "type", "bridge"], check=True)
    result = apply(model, session)
    assert result.verified and link("fbr", "p") is None
    with pytest.raises(RevertFailed, match="fbr") as raised:
        revert(result, "no confirmation (test)")
    assert "not netcfg's" in str(raised.value)
    assert link("fbr", "p") is None
    assert not [d for d in ip("-n", "p", "link", "show", "group", str(NETCFG_GROUP))
                if d and d.get("ifname") != "br0"]   # ip prints {} for the others


# ---------------------------------------------------------------- events (M14)

def test_a_foreign_route_replace_is_repaired_when_its_event_arrives(make_daemon):
    """M14: another program's `ip route replace` of netcfg's default route
    (RTM_NEWROUTE with NLM_F_REPLACE, its own protocol) was dropped as
    'another program's route' and left until the 10-minute resync. Now the
    replace dirties the namespace and the next pass puts netcfg's back."""
    daemon = make_daemon(veth_tenants(["t1"]))
    time.sleep(1)   # settled: no pass of its start-up left to mask the event's

    def default_protocol():
        routes = [r for r in ip("-n", "t1", "route", "show", "default")]
        return [str(r.get("protocol")) for r in routes]

    ours = default_protocol()
    assert len(ours) == 1
    subprocess.run(["ip", "-n", "t1", "route", "replace", "default", "via", "10.0.1.1",
                    "proto", "bird"], check=True)
    assert default_protocol() == ["bird"]
    wait_for(lambda: default_protocol() == ours, REPAIR_BOUND_S,
             "netcfg's default route back after a foreign replace")
    print(daemon.status()["counters"])


# ---------------------------------------------------------------- down (item 3)

GUEST_BRIDGE = textwrap.dedent("""\
    auto vmbr9
    iface vmbr9
        bridge-ports none
        address 10.89.0.1/24
    """)


def test_down_all_leaves_a_bridge_with_a_guest_on_it(config):
    """`netcfg down --all` deleted netcfg's bridge under a VM's tap: the tap
    was left with no master. Now the bridge stays, with only the tap on it,
    and the plan says why; its address goes (down takes netcfg's config)."""
    cfg = config(GUEST_BRIDGE)
    try:
        assert cli("apply", "-c", cfg)[0] == 0
        subprocess.run(["ip", "tuntap", "add", "tap100i0", "mode", "tap"], check=True)
        subprocess.run(["ip", "link", "set", "tap100i0", "master", "vmbr9", "up"], check=True)
        tap = identity("tap100i0")
        assert tap[3] == "vmbr9"
        code, out, err = cli("down", "-c", cfg, "--all", "--dry-run")
        assert code == 0, err
        said = out + err
        assert "vmbr9: cannot remove bridge" in said and "port tap100i0 is present" in said
        code, out, err = cli("down", "-c", cfg, "--all")
        assert code == 0, err
        assert identity("tap100i0") == tap
        assert [a["local"] for a in ip("addr", "show", "vmbr9")[0]["addr_info"]
                if a["family"] == "inet"] == []
    finally:
        subprocess.run(["ip", "link", "delete", "tap100i0"], capture_output=True)
        subprocess.run(["ip", "link", "delete", "vmbr9"], capture_output=True)


# ---------------------------------------------------------------- L2

def test_link_speed_on_a_tap_is_refused_at_its_line(config):
    """L2: tun accepts the SET but is no NIC; netcfg did not read it back, so
    every apply failed 'verification' with the SET left in place. Now the
    line is refused and the link modes never sent; the rest is reverted."""
    cfg = config("auto tap7\niface tap7\n    mtu 1400\n    link-speed 1000\n")
    subprocess.run(["ip", "tuntap", "add", "tap7", "mode", "tap"], check=True)
    try:
        before = link("tap7")
        code, _, err = cli("apply", "-c", cfg)
        assert code == 3, err
        assert f"{cfg}/net.tmpl:4: error: tap7" in err and "tun device, not a NIC" in err
        assert link("tap7")["mtu"] == before["mtu"]
    finally:
        subprocess.run(["ip", "link", "delete", "tap7"], capture_output=True)


# ---------------------------------------------------------------- VLAN filtering missing

def kernel_has_vlan_filtering() -> bool:
    made = subprocess.run(["ip", "link", "add", "vfprobe0", "type", "bridge", "vlan_filtering",
                           "1"], capture_output=True).returncode == 0
    subprocess.run(["ip", "link", "delete", "vfprobe0"], capture_output=True)
    return made


@pytest.mark.parametrize("existing", [False, True], ids=["made", "changed-in-place"])
def test_a_vlan_aware_bridge_on_a_kernel_without_vlan_filtering_says_so(config, existing):
    """The host kernel here has bridges but no CONFIG_BRIDGE_VLAN_FILTERING:
    the refusal said 'the running kernel has no bridge devices'."""
    if kernel_has_vlan_filtering():
        pytest.skip("this kernel has bridge VLAN filtering (the VM tier's does)")
    plain = "auto vmbr5\niface vmbr5\n    bridge-ports none\n"
    try:
        if existing:
            assert cli("apply", "-c", config(plain))[0] == 0
        code, _, err = cli("apply", "-c", config(plain + "    bridge-vlan-aware yes\n"))
        assert code == 3, err
        assert "no bridge VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING)" in err
        assert "no bridge devices" not in err
    finally:
        subprocess.run(["ip", "link", "delete", "vmbr5"], capture_output=True)


# ---------------------------------------------------------------- re-create with guests (item 2)

def test_a_recreate_that_drops_a_guest_is_refused_unless_forced(session, tmp_path):
    """A change the kernel cannot make in place (here the bridge becomes a
    veth) re-creates the device, which takes a VM's tap off it. The dry run
    names the tap; apply refuses and writes nothing; apply(force=True) does
    it. Before: kept as it was, with a warning, and apply said 'verified'."""
    bridge = "auto vmbr8\niface vmbr8\n    bridge-ports none\n"
    veth = "auto vmbr8\niface vmbr8\n    link-type veth\n    veth-peer-name vmbr8p\n"
    assert apply(model_of(tmp_path, bridge), session).verified
    subprocess.run(["ip", "tuntap", "add", "tap108i0", "mode", "tap"], check=True)
    try:
        subprocess.run(["ip", "link", "set", "tap108i0", "master", "vmbr8", "up"], check=True)
        tap = identity("tap108i0")
        dry = apply(model_of(tmp_path, veth), session, dry_run=True)
        assert any("refuses this without --force" in n and "tap108i0" in n
                   for n in dry.plan.notes), dry.plan.notes
        with pytest.raises(ForeignPortsRefused, match="tap108i0") as refused:
            apply(model_of(tmp_path, veth), session)
        assert refused.value.exit_code == 1 and "--force" in str(refused.value)
        assert identity("tap108i0") == tap and link("vmbr8")["linkinfo"]["info_kind"] == "bridge"
        forced = apply(model_of(tmp_path, veth), session, force=True)
        assert forced.verified
        assert link("vmbr8")["linkinfo"]["info_kind"] == "veth"
        assert identity("tap108i0")[3] is None     # dropped, as forced
    finally:
        subprocess.run(["ip", "link", "delete", "tap108i0"], capture_output=True)


def test_apply_force_on_the_command_line(config):
    """The same through `netcfg apply`: refused (exit 1, the port named),
    then `apply --force` re-creates the device."""
    bridge = "auto vmbr6\niface vmbr6\n    bridge-ports none\n"
    assert cli("apply", "-c", config(bridge))[0] == 0
    subprocess.run(["ip", "tuntap", "add", "tap106i0", "mode", "tap"], check=True)
    try:
        subprocess.run(["ip", "link", "set", "tap106i0", "master", "vmbr6"], check=True)
        cfg = config("auto vmbr6\niface vmbr6\n    link-type veth\n    veth-peer-name vmbr6p\n")
        code, _, err = cli("apply", "-c", cfg)
        assert code == 1 and "tap106i0" in err and "--force" in err, err
        assert identity("tap106i0")[3] == "vmbr6"
        code, _, err = cli("apply", "-c", cfg, "--force")
        assert code == 0, err
        assert link("vmbr6")["linkinfo"]["info_kind"] == "veth"
    finally:
        subprocess.run(["ip", "link", "delete", "tap106i0"], capture_output=True)
        subprocess.run(["ip", "link", "delete", "vmbr6"], capture_output=True)
