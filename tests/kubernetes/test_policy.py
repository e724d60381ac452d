"""NetcfgPolicy over NODES fake nodes against a real kube-apiserver.

One scenario in order (each step starts from the state the previous one
left), as tests/fleet/test_rollout.py: invalid policies are refused by the
API server or reported Failing with no node changed; a good policy converges
on the selected nodes only, with at most maxUnavailable on trial at once; a
second apply changes nothing; a policy that cuts node 3's gateway leaves node
3 Failing and reverted, no other node started; editing it back recovers; an
agent killed mid-trial leaves its node reverted by netcfgd and, restarted,
reports it. Kernel state is read back with iproute2 in each node's namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from controlplane import REPO, ControlPlane, kubectl_path
from fakehosts import GATEWAY, PREFIX, TEMPLATE, Fleet, mgmt_address, wait

NODES = int(os.environ.get("NETCFG_KUBE_NODES", "10"))
UNSELECTED = NODES            # the last node has no fleet label
BAD_NODE = 3

def node_name(number: int) -> str:
    return f"h{number:02d}"


def base_vars(number: int) -> dict:
    return {"mgmt_address": f"{mgmt_address(number)}/{PREFIX}", "host": number, "tenants": []}


def policy(name: str, tenants: list[str], *, max_unavailable="50%", confirm="60s",
           node_vars: dict | None = None, template: str = TEMPLATE, probes=None) -> dict:
    node_vars = {node_name(n): {"mgmt_address": f"{mgmt_address(n)}/{PREFIX}", "host": n}
                 for n in range(1, NODES + 1)} | (node_vars or {})
    return {"apiVersion": "netcfg.io/v1alpha1", "kind": "NetcfgPolicy",
            "metadata": {"name": name},
            "spec": {"nodeSelector": {"netcfg.io/fleet": "on"},
                     "templates": {"fleet.tmpl": template},
                     "vars": {"tenants": tenants}, "nodeVars": node_vars,
                     "maxUnavailable": max_unavailable, "confirmTimeout": confirm,
                     "probes": probes or {"gateway": GATEWAY, "apiServer": True,
                                          "netcfgStatus": True, "timeoutSeconds": 10}}}


class Cluster:
    def __init__(self, tmp: Path, fleet: Fleet, plane: ControlPlane, agent_kubeconfig: Path):
        self.tmp, self.fleet, self.plane = tmp, fleet, plane
        self.agent_kubeconfig = agent_kubeconfig   # the agent ServiceAccount's token
        self.agents: dict[int, subprocess.Popen] = {}
        self.events: list[tuple[float, str, str, str]] = []   # (t, node, hash, state)

    def start_agent(self, number: int) -> None:
        host = self.fleet.hosts[number - 1]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO / "fleet/kubernetes"), os.environ.get("PYTHONPATH", "")])}
        log = open(host.tmp / "agent.log", "ab")
        self.agents[number] = subprocess.Popen(
            host.enter(sys.executable, "-m", "netcfg_agent", "--node", host.name,
                       "--kubeconfig", str(self.agent_kubeconfig),
                       "--netcfg", str(REPO / ".venv/bin/netcfg"),
                       "--state-dir", str(host.tmp / "agent")),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd="/")

    def apply(self, obj: dict, check: bool = True) -> subprocess.CompletedProcess:
        return self.plane.kubectl("apply", "-f", "-", stdin=json.dumps(obj), check=check)

    def get(self, *args: str) -> dict:
        return json.loads(self.plane.kubectl("get", *args, "-o", "json").stdout)

    def enactments(self, policy_name: str) -> dict[str, dict]:
        items = self.get("netcfgpolicyenactments", "-l", f"netcfg.io/policy={policy_name}")
        return {e["spec"]["nodeName"]: e for e in items["items"]}

    def states(self, policy_name: str) -> dict[str, str]:
        """Each node's state for the policy as it is now ("Stale" while its
        enactment speaks of an earlier generation)."""
        generation = self.get("netcfgpolicy", policy_name)["metadata"]["generation"]
        return {node: state_of(e) if (e.get("status") or {}).get("policyGeneration")
                == generation else "Stale"
                for node, e in self.enactments(policy_name).items()}

    def wait_states(self, policy_name: str, done, timeout: float, what: str) -> dict:
        def check():
            states = self.states(policy_name)
            return states if done(states) else None
        try:
            return wait(check, timeout, what, step=1)
        except TimeoutError:
            raise AssertionError(f"{what}: {self.states(policy_name)}\n"
                                 + self.agent_logs()) from None

    def agent_logs(self) -> str:
        return "".join(f"--- {h.name}\n{(h.tmp / 'agent.log').read_text()[-1500:]}"
                       for h in self.fleet.hosts if (h.tmp / "agent.log").exists())

    def watch_enactments(self, stop: threading.Event) -> threading.Thread:
        """Every state change of every enactment, from a watch (kubectl
        --watch: one process for the whole run), for the concurrency checks."""
        def follow():
            proc = subprocess.Popen(
                [kubectl_path(), "--kubeconfig",
                 str(self.plane.kubeconfig), "get", "netcfgpolicyenactments", "--watch",
                 "-o", "json"], stdout=subprocess.PIPE, text=True)
            decoder, buffer = json.JSONDecoder(), ""
            while not stop.is_set():
                line = proc.stdout.readline()
                if not line:
                    break
                buffer += line
                try:
                    obj, _ = decoder.raw_decode(buffer.strip())
                except ValueError:
                    continue
                buffer = ""
                self.events.append((time.monotonic(), obj["spec"]["nodeName"],
                                    (obj.get("status") or {}).get("configHash", ""),
                                    state_of(obj) or ""))
            proc.kill()
        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        return thread

    def most_progressing(self, since: float) -> int:
        """The most nodes Progressing at any moment since SINCE."""
        current: dict[str, str] = {}
        most = 0
        for when, node, _hash, state in self.events:
            current[node] = state
            if when >= since:
                most = max(most, sum(1 for s in current.values() if s == "Progressing"))
        return most


def state_of(enactment: dict) -> str | None:
    for condition in (enactment.get("status") or {}).get("conditions") or ():
        if condition.get("status") == "True":
            return condition["type"]
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kubernetes")
    started = time.monotonic()
    stand_in = tmp / "no-sshd"
    # fakehosts starts an sshd per host; this tier needs none: a stand-in
    # that listens on the host's port 22 as fakehosts waits for.
    stand_in.write_text("#!/bin/sh\naddr=$(sed -n 's/^ListenAddress //p' \"$3\")\n"
                        f"exec {sys.executable} -c \"import socket, time; s = socket.socket(); "
                        "s.bind(('$addr', 22)); s.listen(); time.sleep(1e9)\"\n")
    stand_in.chmod(0o755)
    fleet = Fleet(tmp / "fleet", NODES, str(stand_in))
    (tmp / "fleet").mkdir()
    plane = None
    stop = threading.Event()
    try:
        fleet.start({"fleet.tmpl": TEMPLATE}, base_vars)
        hosts_up = time.monotonic()
        plane = ControlPlane(tmp / "plane", GATEWAY)
        (tmp / "plane").mkdir()
        plane.start()
        plane_up = time.monotonic()
        plane.kubectl("apply", "-f", str(REPO / "fleet/kubernetes/crds"))
        plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        # The agents run as the shipped ServiceAccount, with its RBAC: a
        # permission missing there fails the tier. The DaemonSet is
        # validated by the API server (no kubelet here to run it).
        deploy = REPO / "fleet/kubernetes/deploy"
        plane.kubectl("apply", "-f", str(deploy / "rbac.yaml"))
        plane.kubectl("apply", "--dry-run=server", "-f", str(deploy / "daemonset.yaml"))
        token = plane.kubectl("create", "token", "netcfg-agent", "-n", "netcfg-system",
                              "--duration", "4h").stdout.strip()
        agent_kubeconfig = plane.write_kubeconfig(tmp / "agent-kubeconfig", token)
        for host in fleet.hosts:
            labels = {} if host.number == UNSELECTED else {"netcfg.io/fleet": "on"}
            plane.kubectl("apply", "-f", "-", stdin=json.dumps({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": host.name, "labels": labels}}))
        cluster = Cluster(tmp, fleet, plane, agent_kubeconfig)
        for host in fleet.hosts:
            cluster.start_agent(host.number)
        cluster.watch_enactments(stop)
        print(f"\n{NODES} fake nodes up in {hosts_up - started:.1f} s, control plane in "
              f"{plane_up - hosts_up:.1f} s, agents started at {time.monotonic() - started:.1f} s")
        yield cluster
    finally:
        stop.set()
        for proc in getattr(locals().get("cluster"), "agents", {}).values():
            proc.kill()
            proc.wait()
        if plane is not None:
            plane.stop()
        fleet.stop()


def all_states(fleet: Fleet) -> dict[str, dict]:
    return {h.name: h.state() for h in fleet.hosts}


def selected(fleet: Fleet) -> list[str]:
    return [h.name for h in fleet.hosts if h.number != UNSELECTED]


def test_api_server_rejects_invalid_policies(cluster):
    for spec_change, message in (
            ({"maxUnavailable": 0}, "maxUnavailable is a count above 0"),
            ({"maxUnavailable": "150%"}, "maxUnavailable is a count above 0"),
            ({"confirmTimeout": "2s"}, "confirmTimeout is a duration"),
            ({"templates": {"lib/only": "x"}}, "at least one top-level NAME.tmpl"),
            ({"probes": {"gateway": "not-an-ip"}}, "gateway is an IP address")):
        bad = policy("invalid", ["red"])
        bad["spec"].update(spec_change)
        done = cluster.apply(bad, check=False)
        assert done.returncode != 0 and message in done.stderr, (spec_change, done.stderr)
    assert cluster.get("netcfgpolicies")["items"] == []


def test_policy_that_does_not_compile_fails_and_changes_nothing(cluster):
    before = all_states(cluster.fleet)
    broken = TEMPLATE.replace("% endfor\n", "")      # a Mako block left open
    cluster.apply(policy("broken", ["red"], template=broken))
    states = cluster.wait_states("broken", lambda s: len(s) == NODES - 1 and
                                 set(s.values()) == {"Failing"}, 90, "Failing everywhere")
    assert set(states) == set(selected(cluster.fleet))
    for node, enactment in cluster.enactments("broken").items():
        assert enactment["status"]["conditions"][3]["reason"] == "ConfigInvalid"
        assert "fleet.tmpl:" in enactment["status"]["message"], enactment["status"]
    status = cluster.get("netcfgpolicy", "broken")["status"]
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and "fleet.tmpl:" in degraded["message"]
    assert all_states(cluster.fleet) == before
    cluster.plane.kubectl("delete", "netcfgpolicy", "broken")
    # No controller-manager here to collect the owned enactments.
    cluster.plane.kubectl("delete", "netcfgpolicyenactments", "-l", "netcfg.io/policy=broken")


def test_good_policy_converges_on_selected_nodes_only(cluster):
    before = all_states(cluster.fleet)
    since = time.monotonic()
    cluster.apply(policy("tenants", ["red"], max_unavailable="50%"))
    started = time.monotonic()
    states = cluster.wait_states(
        "tenants", lambda s: len(s) == NODES - 1 and set(s.values()) == {"Available"},
        240, "Available on every selected node")
    print(f"\nconverged on {len(states)} nodes in {time.monotonic() - started:.1f} s")
    assert set(states) == set(selected(cluster.fleet))
    limit = max(1, (NODES - 1) * 50 // 100)
    most = cluster.most_progressing(since)
    (cluster.tmp / "events.txt").write_text("\n".join(
        f"{t - since:.2f} {n} {h} {s}" for t, n, h, s in cluster.events))
    assert 1 <= most <= limit, cluster.tmp / "events.txt"
    after = all_states(cluster.fleet)
    for host in cluster.fleet.hosts:
        if host.number == UNSELECTED:
            assert after[host.name] == before[host.name]
            continue
        links = {link[0] for link in after[host.name]["(host)"]["links"]}
        assert "v-red" in links, after[host.name]
        assert json.loads(host.config_files()["vars.json"])["tenants"] == ["red"]
        assert host.status()["daemon"].get("trial") is None
    status = cluster.get("netcfgpolicy", "tenants")["status"]
    assert status["enactments"]["available"] == NODES - 1
    assert status["enactments"]["matched"] == NODES - 1


def test_second_apply_changes_nothing(cluster):
    before = all_states(cluster.fleet)
    versions = {n: e["metadata"]["resourceVersion"]
                for n, e in cluster.enactments("tenants").items()}
    cluster.apply(policy("tenants", ["red"], max_unavailable="50%"))
    # An annotation wakes every agent (a watch event) without a new generation.
    cluster.plane.kubectl("annotate", "--overwrite", "netcfgpolicy", "tenants", "touch=1")
    time.sleep(10)
    assert {n: e["metadata"]["resourceVersion"]
            for n, e in cluster.enactments("tenants").items()} == versions
    assert all_states(cluster.fleet) == before


def test_policy_cutting_node3_fails_there_and_reverts_it(cluster):
    before = all_states(cluster.fleet)
    since = time.monotonic()
    bad = f"h{BAD_NODE:02d}"
    cut = {bad: {"mgmt_address": f"10.78.0.{10 + BAD_NODE}/{PREFIX}", "host": BAD_NODE}}
    cluster.apply(policy("tenants", ["red", "blue"], max_unavailable=1, node_vars=cut))
    states = cluster.wait_states(
        "tenants", lambda s: s.get(bad) == "Failing" and len(s) == NODES - 1 and
        all(v in ("Available", "Aborted") for k, v in s.items() if k != bad),
        240, f"{bad} Failing, the others done or aborted")
    enactment = cluster.enactments("tenants")[bad]
    assert enactment["status"]["conditions"][3]["reason"] == "ProbeFailed", enactment["status"]
    host = cluster.fleet.hosts[BAD_NODE - 1]
    assert host.state() == before[bad]
    assert cluster.most_progressing(since) == 1
    failed_at = max(t for t, n, _h, s in cluster.events if n == bad and s == "Failing")
    started_after = [n for t, n, _h, s in cluster.events
                     if s == "Progressing" and t > failed_at and n != bad]
    assert started_after == [], started_after
    after = all_states(cluster.fleet)
    for node, state in states.items():
        if state == "Aborted":
            assert after[node] == before[node], node


def test_editing_the_policy_back_recovers(cluster):
    cluster.apply(policy("tenants", ["red", "blue"], max_unavailable=3))
    cluster.wait_states(
        "tenants", lambda s: len(s) == NODES - 1 and set(s.values()) == {"Available"},
        300, "Available everywhere again")
    after = all_states(cluster.fleet)
    for name in selected(cluster.fleet):
        links = {link[0] for link in after[name]["(host)"]["links"]}
        assert {"v-red", "v-blue"} <= links, (name, links)


def test_killed_agent_leaves_its_node_reverted_and_reports_it(cluster):
    before = all_states(cluster.fleet)
    slow = {"apiServer": True, "netcfgStatus": True, "timeoutSeconds": 60,
            "commands": [["sleep", "40"]]}
    cluster.apply(policy("tenants", ["red", "blue", "green"], max_unavailable=1,
                         confirm="15s", probes=slow))
    states = cluster.wait_states("tenants", lambda s: "Progressing" in s.values(), 120,
                                 "a node on trial")
    victim = next(n for n, s in states.items() if s == "Progressing")
    number = int(victim[1:])
    host = cluster.fleet.hosts[number - 1]
    wait(lambda: host.status()["daemon"].get("trial") is not None, 60, f"{victim}'s trial")
    cluster.agents[number].send_signal(signal.SIGKILL)
    cluster.agents[number].wait()
    wait(lambda: host.status()["daemon"].get("trial") is None, 60,
         f"netcfgd reverting {victim}'s trial")
    assert host.state() == before[victim]
    cluster.start_agent(number)
    cluster.wait_states("tenants", lambda s: s.get(victim) == "Failing", 60,
                        f"{victim} reported Failing")
    enactment = cluster.enactments("tenants")[victim]
    assert enactment["status"]["conditions"][3]["reason"] == "TrialNotConfirmed"
    assert "reverted" in enactment["status"]["message"]
    assert host.state() == before[victim]
