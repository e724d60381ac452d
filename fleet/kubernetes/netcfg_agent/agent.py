"""The node agent: level-triggered, one reconcile per policy on each change
of the policies and every RESYNC_S seconds; the node changes only through
`netcfg` (netcfg_cli.py). docs/fleet.md 'Agent loop' gives the steps."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from . import probes, render, stage
from .kube import GROUP, POLICIES, VERSION, Api, Slots, state_of
from .netcfg_cli import Netcfg, NetcfgFailed

RESYNC_S = 30
# While this node waits for a slot it looks again this often.
SLOT_RETRY_S = 2

log = logging.getLogger("netcfg-agent")


@dataclass
class Agent:
    node: str
    api: Api
    slots: Slots
    netcfg: Netcfg
    dest: Path
    api_url: str
    ssl_context: ssl.SSLContext

    def reconcile_all(self) -> bool:
        """Reconcile every policy; True when this node waits for a slot."""
        policies = self.api.policies()["items"]
        labels = self.api.core.read_node(self.node).metadata.labels or {}
        selecting = [p for p in policies if render.selects(p["spec"].get("nodeSelector"), labels)]
        for policy in policies:
            if policy not in selecting:
                self.api.delete_enactment(f"{self.node}.{policy['metadata']['name']}")
        waiting = False
        for policy in selecting:
            try:
                if len(selecting) > 1:
                    others = sorted(p["metadata"]["name"] for p in selecting)
                    self.report(policy, "Failing", "SelectedTwice",
                                f"node {self.node} is selected by {', '.join(others)}: a "
                                f"node takes its config from one policy")
                    continue
                waiting |= self.reconcile(policy)
            except ApiException as error:
                log.warning("%s: API: %s %s", policy["metadata"]["name"], error.status,
                            error.reason)
        return waiting

    def report(self, policy: dict, state: str, reason: str, message: str = "", **fields):
        self.api.write_enactment(policy, self.node, state, reason, message, **fields)
        try:
            # The policy's counts, which any agent's next report redoes.
            self.api.update_policy_status(policy["metadata"]["name"], None)
        except ApiException as error:
            log.warning("policy status: %s", error.reason)

    def reconcile(self, policy: dict) -> bool:
        name = policy["metadata"]["name"]
        spec = policy["spec"]
        generation = policy["metadata"]["generation"]
        files = render.node_files(spec, self.node)
        config_hash = render.config_hash(files)
        enactment = self.api.enactment(f"{self.node}.{name}") or {}
        status = enactment.get("status") or {}
        state = state_of(enactment)

        stale = self.netcfg.pending_trial()
        if stale is not None:
            # A previous run of the agent started this trial and never probed
            # it to the end: never confirm it. netcfgd reverts it at its
            # deadline; wait for that, then say so.
            if stale.alive():
                log.info("a trial of %s from before the restart is pending", stale.config_hash)
                return True
            stale.forget()
            self.slots.release_all(name)
            self.report(policy, "Failing", "TrialNotConfirmed",
                        f"the agent stopped during the trial of config {stale.config_hash}; "
                        f"netcfgd reverted it: {stale.said()[-500:]}",
                        configHash=stale.config_hash)
            return False
        if status.get("configHash") == config_hash:
            if state == "Available":
                if status.get("policyGeneration") != generation:
                    # A new generation that is the same config for this node:
                    # it is enacted already; the enactment says so for this
                    # generation (the tier's edit-back waited for it forever).
                    self.report(policy, "Available", "NoChange",
                                "the node already has this config", configHash=config_hash)
                return False
            if state in ("Failing", "Aborted") and status.get("policyGeneration") == generation:
                return False        # until the policy changes, as kubernetes-nmstate
            if state == "Progressing":
                # Progressing without a trial of ours: a run that stopped
                # before its trial began; start over.
                self.slots.release_all(name)

        staged = stage.staged_path(self.dest)
        stage.write_tree(staged, files)
        try:
            planned = self.netcfg.plan(staged)
        except NetcfgFailed as error:
            self.report(policy, "Failing", "ConfigInvalid", str(error), configHash=config_hash)
            return False
        plan = planned["plan"]
        fields = {"configHash": config_hash, "operations": planned["summary"]["operations"],
                  "plan": render.plan_text(plan)}
        if not planned["summary"]["operations"]:
            if stage.read_tree(self.dest) != files:
                stage.promote(staged, self.dest)
                self.netcfg.apply(self.dest)       # netcfgd enforces it from dest
            self.report(policy, "Available", "NoChange", "the node already has this config",
                        requests=0, **fields)
            return False

        matched = self.api.matched_nodes(spec.get("nodeSelector"))
        limit = render.max_unavailable(spec.get("maxUnavailable"), len(matched))
        if self.aborted(policy, limit, fields):
            return False
        timeout = render.duration_seconds(spec.get("confirmTimeout", "120s"))
        slot = self.slots.take(name, limit, timeout + 60)
        if slot is None:
            if state != "Pending" or status.get("configHash") != config_hash:
                self.report(policy, "Pending", "WaitingForSlot",
                            f"{limit} of {len(matched)} nodes on trial at once", **fields)
            return True
        log.info("%s: took %s (%d at once)", name, slot, limit)
        try:
            if not self.aborted(policy, limit, fields):
                self.report(policy, "Progressing", "Applying", f"slot {slot}", **fields)
                self.roll_out(policy, staged, timeout, fields)
        except BaseException:
            # The change may be on trial: the slot stays taken until its lease
            # runs out or the next reconcile learns how the trial ended (it
            # was released here, and another node started while this one was
            # on trial: the tier saw 5 Progressing under a maxUnavailable of 4).
            log.warning("%s: keeping %s: the roll-out stopped half-way", name, slot)
            raise
        self.slots.release_all(name)
        log.info("%s: released %s", name, slot)
        return False

    def aborted(self, policy: dict, limit: int, fields: dict) -> bool:
        """kubernetes-nmstate's rule: once as many nodes fail as may be
        unavailable, the nodes that did not start do not."""
        generation = policy["metadata"]["generation"]
        failing = [e["spec"]["nodeName"] for e in self.api.enactments(policy["metadata"]["name"])
                   if state_of(e) == "Failing" and e["spec"]["nodeName"] != self.node
                   and (e.get("status") or {}).get("policyGeneration") == generation]
        if len(failing) < limit:
            return False
        self.report(policy, "Aborted", "FailingNodes",
                    f"{len(failing)} nodes failing ({', '.join(sorted(failing))}), "
                    f"maxUnavailable {limit}: not started", **fields)
        return True

    def roll_out(self, policy: dict, staged: Path, timeout: int, fields: dict) -> None:
        try:
            trial = self.netcfg.start_trial(staged, timeout, fields["configHash"])
        except NetcfgFailed as error:
            self.report(policy, "Failing", "ApplyFailed", str(error), **fields)
            return
        log.info("on trial for %d s, probing", timeout)
        failure = probes.run_all(policy["spec"].get("probes") or {}, api_url=self.api_url,
                                 ssl_context=self.ssl_context, status=self.netcfg.status)
        if failure:
            said = self.netcfg.revert(trial)
            self.report_retrying(policy, "Failing", "ProbeFailed",
                                 f"{failure}; reverted: {said[-300:]}", **fields)
            return
        try:
            requests = self.netcfg.confirm(trial)
        except NetcfgFailed as error:
            self.report(policy, "Failing", "ConfirmFailed", str(error), **fields)
            return
        stage.promote(staged, self.dest)
        self.netcfg.apply(self.dest)
        self.report(policy, "Available", "SuccessfullyConfigured", "",
                    requests=requests, **fields)

    def report_retrying(self, policy: dict, *args, **fields) -> None:
        """After a revert the API server may take a moment to be reachable
        again (routes, neighbours): keep trying to tell it."""
        for _ in range(30):
            try:
                self.report(policy, *args, **fields)
                return
            except Exception as error:  # noqa: BLE001 - urllib3 raises many kinds
                log.warning("reporting: %s", error)
                time.sleep(2)

    def run(self) -> None:
        while True:
            try:
                waiting = self.reconcile_all()
                listed = self.api.policies()
                stream = watch.Watch().stream(
                    self.api.custom.list_cluster_custom_object, GROUP, VERSION, POLICIES,
                    resource_version=listed["metadata"]["resourceVersion"],
                    timeout_seconds=SLOT_RETRY_S if waiting else RESYNC_S)
                for _event in stream:
                    break
            except Exception as error:  # noqa: BLE001 - the API server may be away
                log.warning("loop: %s", error)
                time.sleep(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="netcfg-agent", description=__doc__)
    parser.add_argument("--node", required=True, help="this node's name")
    parser.add_argument("--kubeconfig", help="default: in-cluster service account")
    parser.add_argument("--namespace", default="netcfg-system", help="where the slot Leases are")
    parser.add_argument("--netcfg", default="netcfg", help="the netcfg command")
    parser.add_argument("--dest", default="/etc/netcfg", help="netcfgd's config directory")
    parser.add_argument("--state-dir", default="/run/netcfg-agent",
                        help="the record of a pending trial (survives an agent restart)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s {args.node} %(message)s")
    if args.kubeconfig:
        config.load_kube_config(args.kubeconfig)
    else:
        config.load_incluster_config()
    configuration = client.Configuration.get_default_copy()
    api = Api.from_client(client.ApiClient(configuration))
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    agent = Agent(args.node, api, Slots(api, args.namespace, args.node),
                  Netcfg(args.netcfg, Path(args.state_dir)), Path(args.dest),
                  configuration.host, context)
    agent.run()
    return 0
