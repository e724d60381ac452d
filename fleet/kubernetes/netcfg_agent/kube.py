"""What the agent reads and writes in the API server: its enactments, the
policies' aggregated status, and the slots (Leases) under maxUnavailable."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from kubernetes import client
from kubernetes.client.exceptions import ApiException

GROUP, VERSION = "netcfg.io", "v1alpha1"
POLICIES, ENACTMENTS = "netcfgpolicies", "netcfgpolicyenactments"
STATES = ("Pending", "Progressing", "Available", "Failing", "Aborted")


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def stamp(when: datetime.datetime | None = None) -> str:
    return (when or now()).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_of(enactment: dict) -> str | None:
    for condition in (enactment.get("status") or {}).get("conditions") or ():
        if condition.get("status") == "True":
            return condition["type"]
    return None


@dataclass
class Api:
    custom: client.CustomObjectsApi
    core: client.CoreV1Api
    coordination: client.CoordinationV1Api

    @classmethod
    def from_client(cls, api_client: client.ApiClient) -> "Api":
        return cls(client.CustomObjectsApi(api_client), client.CoreV1Api(api_client),
                   client.CoordinationV1Api(api_client))

    def policies(self) -> dict:
        return self.custom.list_cluster_custom_object(GROUP, VERSION, POLICIES)

    def enactments(self, policy: str) -> list[dict]:
        return self.custom.list_cluster_custom_object(
            GROUP, VERSION, ENACTMENTS, label_selector=f"netcfg.io/policy={policy}")["items"]

    def enactment(self, name: str) -> dict | None:
        try:
            return self.custom.get_cluster_custom_object(GROUP, VERSION, ENACTMENTS, name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def delete_enactment(self, name: str) -> None:
        try:
            self.custom.delete_cluster_custom_object(GROUP, VERSION, ENACTMENTS, name)
        except ApiException as error:
            if error.status != 404:
                raise

    def write_enactment(self, policy: dict, node: str, state: str, reason: str,
                        message: str = "", **fields) -> dict:
        """Create NODE.POLICY if needed (owned by the policy), then set its
        status: STATE's condition True, the others False, and FIELDS."""
        name = f"{node}.{policy['metadata']['name']}"
        current = self.enactment(name)
        if current is None:
            body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NetcfgPolicyEnactment",
                    "metadata": {"name": name, "labels": {
                        "netcfg.io/policy": policy["metadata"]["name"],
                        "netcfg.io/node": node},
                        "ownerReferences": [{
                            "apiVersion": f"{GROUP}/{VERSION}", "kind": "NetcfgPolicy",
                            "name": policy["metadata"]["name"],
                            "uid": policy["metadata"]["uid"]}]},
                    "spec": {"nodeName": node, "policyName": policy["metadata"]["name"]}}
            try:
                current = self.custom.create_cluster_custom_object(GROUP, VERSION,
                                                                   ENACTMENTS, body)
            except ApiException as error:
                if error.status != 409:
                    raise
                current = self.enactment(name)
        old = {c["type"]: c for c in (current.get("status") or {}).get("conditions") or ()}
        conditions = []
        for kind in STATES:
            status = "True" if kind == state else "False"
            before = old.get(kind) or {}
            same = before.get("status") == status
            conditions.append({
                "type": kind, "status": status,
                "reason": reason if kind == state else "",
                "message": message[:8000] if kind == state else "",
                "lastTransitionTime": before.get("lastTransitionTime") if same and
                before.get("lastTransitionTime") else stamp()})
        status = {**(current.get("status") or {}), **fields, "conditions": conditions,
                  "policyGeneration": policy["metadata"]["generation"],
                  "message": message[:8000]}
        return self.custom.patch_cluster_custom_object_status(
            GROUP, VERSION, ENACTMENTS, name, {"status": status})

    def matched_nodes(self, selector: dict[str, str]) -> list[str]:
        labels = ",".join(f"{k}={v}" for k, v in sorted((selector or {}).items()))
        return [n.metadata.name for n in self.core.list_node(label_selector=labels).items]

    def update_policy_status(self, policy_name: str, limit_of) -> None:
        """The policy's status from its enactments (every agent computes the
        same from the same list; an update conflicting with another agent's is
        recomputed)."""
        for _ in range(8):
            try:
                policy = self.custom.get_cluster_custom_object(GROUP, VERSION, POLICIES,
                                                               policy_name)
            except ApiException as error:
                if error.status == 404:
                    return
                raise
            generation = policy["metadata"]["generation"]
            matched = self.matched_nodes(policy["spec"].get("nodeSelector"))
            counts = {s.lower(): 0 for s in STATES}
            failing = []
            for enactment in self.enactments(policy_name):
                if enactment["spec"]["nodeName"] not in matched:
                    continue
                # (An enactment just created has no status until its first
                # status write: Pending.)
                status = enactment.get("status") or {}
                state = state_of(enactment) or "Pending"
                if status.get("policyGeneration") != generation and state != "Available":
                    state = "Pending"
                counts[state.lower()] += 1
                if state == "Failing":
                    failing.append(f"{enactment['spec']['nodeName']}: "
                                   f"{status.get('message', '')[:300]}")
            counts["pending"] = len(matched) - sum(v for k, v in counts.items()
                                                   if k != "pending")
            counts["matched"] = len(matched)
            available = counts["available"] == len(matched)
            conditions = [
                {"type": "Available", "status": "True" if available else "False",
                 "reason": "SuccessfullyConfigured" if available else "ConfigurationProgressing",
                 "message": f"{counts['available']}/{len(matched)} nodes available"},
                {"type": "Degraded", "status": "True" if failing else "False",
                 "reason": "FailedToConfigure" if failing else "",
                 "message": "; ".join(failing)[:8000]}]
            old = {c["type"]: c for c in (policy.get("status") or {}).get("conditions") or ()}
            for condition in conditions:
                before = old.get(condition["type"]) or {}
                condition["lastTransitionTime"] = before.get("lastTransitionTime") \
                    if before.get("status") == condition["status"] and \
                    before.get("lastTransitionTime") else stamp()
            policy["status"] = {"observedGeneration": generation, "enactments": counts,
                                "conditions": conditions}
            try:
                self.custom.replace_cluster_custom_object_status(GROUP, VERSION, POLICIES,
                                                                 policy_name, policy)
                return
            except ApiException as error:
                if error.status != 409:
                    raise


class Slots:
    """maxUnavailable as Leases: slot i of policy P is the Lease
    netcfgpolicy-P-i. Creating a Lease is atomic (409 when it exists) and
    taking over an expired one is an update conditional on its
    resourceVersion, so no two agents hold one slot, however they race."""

    def __init__(self, api: Api, namespace: str, holder: str):
        self.api, self.namespace, self.holder = api, namespace, holder

    def _name(self, policy: str, index: int) -> str:
        return f"netcfgpolicy-{policy}-{index}"

    def take(self, policy: str, limit: int, seconds: int) -> str | None:
        coordination = self.api.coordination
        for index in range(limit):
            name = self._name(policy, index)
            spec = client.V1LeaseSpec(holder_identity=self.holder,
                                      lease_duration_seconds=seconds,
                                      acquire_time=now(), renew_time=now())
            try:
                lease = coordination.read_namespaced_lease(name, self.namespace)
            except ApiException as error:
                if error.status != 404:
                    raise
                try:
                    coordination.create_namespaced_lease(self.namespace, client.V1Lease(
                        metadata=client.V1ObjectMeta(name=name), spec=spec))
                    return name
                except ApiException as error:
                    if error.status == 409:
                        continue
                    raise
            held = lease.spec.holder_identity
            expired = lease.spec.renew_time is None or (
                lease.spec.renew_time + datetime.timedelta(
                    seconds=lease.spec.lease_duration_seconds or 0) < now())
            if held and held != self.holder and not expired:
                continue
            lease.spec = spec
            try:   # carries lease.metadata.resource_version: conflicts are 409
                coordination.replace_namespaced_lease(name, self.namespace, lease)
                return name
            except ApiException as error:
                if error.status == 409:
                    continue
                raise
        return None

    def release_all(self, policy: str) -> None:
        """Drop every slot of POLICY this node holds (one normally; after a
        restart, the one its previous run held)."""
        coordination = self.api.coordination
        for lease in coordination.list_namespaced_lease(self.namespace).items:
            if lease.metadata.name.startswith(f"netcfgpolicy-{policy}-") and \
                    lease.spec.holder_identity == self.holder:
                try:
                    coordination.delete_namespaced_lease(
                        lease.metadata.name, self.namespace,
                        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(
                            resource_version=lease.metadata.resource_version)))
                except ApiException as error:
                    if error.status not in (404, 409):
                        raise
