"""Tenants in namespaces with the same address: each sees and reaches only
its own targets on 10.0.0.1:3260; the data path never switches namespace
while serving; a namespace going away takes its listeners and sessions."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from iscsi_clients import IQN, identity, make_netns, run, url

ADDR = "10.0.0.1"
INITIATOR = "iqn.2024-01.org.netcfg.test:host"


@pytest.fixture
def tenants(dataplane, netns_dir, tmp_path):
    """Namespaces t1 and t2, both with 10.0.0.1, a target and a volume each
    (16 MiB and 48 MiB, so READ CAPACITY tells which one answered)."""
    made = {}
    for name, mib in (("t1", 16), ("t2", 48)):
        ns = make_netns(netns_dir, name, ADDR)
        made[name] = ns
        dataplane.add_namespace(name, ns.fd, identity(ns))
        dataplane.add_volume(f"vol-{name}", str(tmp_path / f"{name}.img"), size=mib << 20)
        dataplane.set_target(name, f"{IQN}:{name}", {0: f"vol-{name}"})
        dataplane.add_portal(name, ADDR, 3260)
    yield made
    for ns in made.values():
        ns.close()


def test_each_tenant_discovers_only_its_targets(dataplane, tenants):
    for name, other in (("t1", "t2"), ("t2", "t1")):
        r = run(["iscsi-ls", url(ADDR)], netns=name)
        assert r.returncode == 0, r.stderr
        assert f"Target:{IQN}:{name} Portal:{ADDR}:3260,1" in r.stdout
        assert f"{IQN}:{other}" not in r.stdout


def test_each_tenant_reaches_its_own_volume(dataplane, tenants):
    for name, last_lba in (("t1", 32767), ("t2", 98303)):
        r = run(["iscsi-readcapacity16", url(ADDR, f"{IQN}:{name}", 0)], netns=name)
        assert r.returncode == 0, r.stderr
        assert f"RETURNED LOGICAL BLOCK ADDRESS:{last_lba}" in r.stdout


def test_other_tenants_target_is_not_found(dataplane, tenants):
    r = run(["iscsi-inq", url(ADDR, f"{IQN}:t2", 0)], netns="t1")
    assert r.returncode != 0
    # The login status itself: 0x0203, target not found.
    code = subprocess.run(
        ["ip", "netns", "exec", "t1", "python3", "-c",
         "import socket,sys;sys.path.insert(0,'tests/dataplane');"
         "from iscsi_clients import *;"
         f"s=socket.create_connection(('{ADDR}',3260));s.sendall(login_pdu('{INITIATOR}','{IQN}:t2'));"
         "print(login_status(read_pdu(s)[0]))"],
        capture_output=True, text=True, timeout=10)
    assert code.stdout.strip() == str(0x0203), code.stderr


def test_listeners_live_in_their_namespaces(dataplane, tenants):
    portals = {p["netns"]: p["netns_cookie"] for p in dataplane.stats()["portals"]}
    for name, ns in tenants.items():
        if ns.identity.cookie is not None:
            assert portals[name] == ns.identity.cookie


def test_serving_io_never_switches_namespace(dataplane, tenants):
    before = dataplane.stats()["setns_calls"]
    assert before >= 2          # the two listeners were made inside t1 and t2
    for _ in range(3):
        for name in tenants:
            r = run(["iscsi-test-cu", "-d", "-t", "SCSI.Read10.Simple", url(ADDR, f"{IQN}:{name}", 0)],
                    netns=name, timeout=60)
            assert r.returncode == 0, r.stdout[-2000:]
    after = dataplane.stats()
    assert after["scsi_commands"] > 100
    assert after["setns_calls"] == before


def test_portal_in_known_namespace_skips_the_switch(dataplane, tenants):
    before = dataplane.stats()["setns_calls"]
    dataplane.add_portal("t2", ADDR, 3261)       # the helper is still in t2
    assert dataplane.stats()["setns_calls"] == before
    dataplane.add_portal("t1", ADDR, 3261)
    assert dataplane.stats()["setns_calls"] == before + 1


def test_removing_a_namespace_closes_its_sessions_only(dataplane, tenants):
    socks = {}
    for name in tenants:
        s = subprocess.Popen(
            ["ip", "netns", "exec", name, "python3", "-c",
             "import socket,sys,time;sys.path.insert(0,'tests/dataplane');"
             "from iscsi_clients import *;"
             f"s=socket.create_connection(('{ADDR}',3260));"
             f"s.sendall(login_pdu('{INITIATOR}','{IQN}:{name}'));"
             "print(login_status(read_pdu(s)[0]),flush=True);"
             "s.settimeout(20);print('eof' if s.recv(1)==b'' else 'data',flush=True)"],
            stdout=subprocess.PIPE, text=True)
        socks[name] = s
    for s in socks.values():
        assert s.stdout.readline().strip() == "0"
    sessions = {t["netns"]: t["sessions"] for t in dataplane.stats()["targets"]}
    assert sessions == {"t1": 1, "t2": 1}
    dataplane.remove_namespace("t1")
    assert socks["t1"].stdout.readline().strip() == "eof"
    assert socks["t1"].wait(10) == 0
    assert socks["t2"].poll() is None          # t2's session is untouched
    sessions = {t["netns"]: t["sessions"] for t in dataplane.stats()["targets"]}
    assert sessions == {"t1": 0, "t2": 1}
    socks["t2"].kill()


def test_recreate_loop_while_a_client_keeps_logging_in(dataplane, netns_dir, tmp_path):
    """Create, serve, destroy and recreate a namespace under one name 20 times
    while a client in it logs in over and over: every incarnation gets fresh
    listeners (its own cookie), and logins work in each."""
    dataplane.add_volume("loop", str(tmp_path / "loop.img"), size=8 << 20)
    dataplane.set_target("churn", f"{IQN}:churn", {0: "loop"})
    stop = threading.Event()
    results = {"ok": 0, "failed": 0}

    def client():
        while not stop.is_set():
            try:
                r = subprocess.run(["ip", "netns", "exec", "churn", "iscsi-inq",
                                    url(ADDR, f"{IQN}:churn", 0)], capture_output=True, timeout=5)
            except subprocess.TimeoutExpired:
                # libiscsi retries a connection whose namespace vanished.
                results["failed"] += 1
                continue
            results["ok" if r.returncode == 0 else "failed"] += 1

    t = threading.Thread(target=client)
    t.start()
    cookies = set()
    try:
        for _ in range(20):
            ns = make_netns(netns_dir, "churn", ADDR)
            dataplane.add_namespace("churn", ns.fd, identity(ns))
            dataplane.add_portal("churn", ADDR, 3260)
            r = run(["iscsi-inq", url(ADDR, f"{IQN}:churn", 0)], netns="churn")
            assert r.returncode == 0, r.stderr
            cookie = [p["netns_cookie"] for p in dataplane.stats()["portals"] if p["netns"] == "churn"]
            assert cookie == [ns.identity.cookie]
            cookies.add(cookie[0])
            # The loop is faster than one client attempt cut short by a
            # removal (libiscsi retries it for 5 s): keep an incarnation up
            # until the background client has got in at least once.
            deadline = time.monotonic() + 15
            while results["ok"] == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            dataplane.remove_namespace("churn")
            ns.close()
            netns_dir.delete("churn")
            assert not [p for p in dataplane.stats()["portals"] if p["netns"] == "churn"]
    finally:
        stop.set()
        t.join(30)
    assert len(cookies) == 20
    assert results["ok"] > 0
    assert dataplane.stats()["targets"][0]["sessions"] == 0
