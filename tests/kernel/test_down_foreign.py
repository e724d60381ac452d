"""Issue 24, M7: `netcfg down --netns NS` / `--all` deletes only namespaces
netcfg made (their lo carries tags.NETNS_MARK). A namespace the config uses
that another tool made stays, with that tool's devices in it; netcfg's own
devices in it go; the dry run says which namespace it leaves and why. On
8f56453 the namespace and the other tool's bridge went, and the dry run
showed only `- netns-del t2`. State is read back with `ip -j`."""

from __future__ import annotations

import json
import subprocess

import pytest
from clirun import netcfg_in_process as cli
from kernel_env import remove_what_netcfg_made


# t2 is used by the config; whether netcfg made it depends on the test.
CONFIG = """\
auto v-t2
iface v-t2
    link-type veth
    veth-peer-name eth0
    veth-peer-netns t2
    address 10.77.0.1/30

iface eth0
    netns t2
    address 10.77.0.2/30
"""


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def links(netns: str = "") -> list[str]:
    out = ip(*(["-n", netns] if netns else []), "-j", "link", "show")
    return sorted(link["ifname"] for link in json.loads(out or "[]"))


def namespaces() -> list[str]:
    return sorted(line.split()[0] for line in ip("netns", "list").splitlines())


@pytest.fixture
def cfg(netns_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    directory = tmp_path / "cfg"
    directory.mkdir()
    (directory / "net.tmpl").write_text(CONFIG)
    yield str(directory)
    subprocess.run(["ip", "link", "delete", "v-t2"], capture_output=True)
    remove_what_netcfg_made(netns_dir)


def foreign_namespace() -> None:
    """t2 as another tool makes it (`ip netns add`, no mark on its lo), with
    that tool's bridge in it."""
    ip("netns", "add", "t2")
    ip("-n", "t2", "link", "add", "fbr", "type", "bridge")
    ip("-n", "t2", "link", "set", "fbr", "up")


@pytest.mark.parametrize("how", [["--netns", "t2"], ["--all"]], ids=["netns", "all"])
def test_down_leaves_a_namespace_netcfg_did_not_make(cfg, how):
    foreign_namespace()
    code, _, err = cli("apply", "-c", cfg)
    assert code == 0, err
    assert links("t2") == ["eth0", "fbr", "lo"] and "v-t2" in links()

    code, out, err = cli("down", "-c", cfg, *how, "--dry-run")
    assert code == 0, err
    said = out + err
    assert "netns-del t2" not in said
    assert "netns t2 is left in place: its lo carries no 'netcfg' mark" in said

    code, _, err = cli("down", "-c", cfg, *how)
    assert code == 0, err
    assert "t2" in namespaces()
    assert links("t2") == ["fbr", "lo"]                 # netcfg's eth0 went, fbr stayed
    fbr = json.loads(ip("-n", "t2", "-j", "link", "show", "fbr"))[0]
    assert "UP" in fbr["flags"]
    assert "v-t2" not in links()


def test_down_still_deletes_a_namespace_netcfg_made(cfg):
    code, _, err = cli("apply", "-c", cfg)
    assert code == 0, err
    assert "t2" in namespaces()
    code, out, err = cli("down", "-c", cfg, "--netns", "t2", "--dry-run")
    assert "netns-del t2" in out + err and "left in place" not in out + err
    assert cli("down", "-c", cfg, "--netns", "t2")[0] == 0
    assert "t2" not in namespaces()
