"""A real Kubernetes control plane for the tier: etcd and kube-apiserver
(built by build-control-plane.sh) on the sandbox's addresses, static-token
auth, a kubeconfig for kubectl and the agents. No kubelet, scheduler or
controller-manager: the agents run as processes in the fake hosts, so nothing
collects an owned enactment when its policy is deleted (the test does not
rely on it)."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KUBE_VERSION = os.environ.get("KUBE_VERSION", "v1.34.2")
BIN = Path(os.environ.get("KUBE_BIN") or REPO / ".cache/kubernetes" / KUBE_VERSION / "bin")


def kubectl_path() -> str | None:
    """$KUBECTL, or a kubectl on PATH (this machine's Cloud SDK ships
    1.27-1.33; Debian's kubernetes-client is 1.20 and applies v1 CRDs too)."""
    import shutil
    return os.environ.get("KUBECTL") or shutil.which("kubectl")


@dataclass
class ControlPlane:
    tmp: Path
    address: str
    port: int = 6443
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://{self.address}:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.tmp / "kubeconfig"

    def write_kubeconfig(self, path: Path, token: str) -> Path:
        """A kubeconfig for this API server that authenticates with ``token``."""
        cert = self.tmp / "certs/apiserver.crt"
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters: [{{name: test, cluster: {{server: '{self.url}', "
            f"certificate-authority: '{cert}'}}}}]\n"
            f"users: [{{name: test, user: {{token: '{token}'}}}}]\n"
            "contexts: [{name: test, context: {cluster: test, user: test}}]\n"
            "current-context: test\n")
        return path

    def start(self) -> "ControlPlane":
        token = secrets.token_hex(16)
        (self.tmp / "tokens.csv").write_text(f"{token},netcfg-test,1,system:masters\n")
        key = self.tmp / "sa.key"
        subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True,
                       capture_output=True)
        etcd_log = open(self.tmp / "etcd.log", "wb")
        self.procs.append(subprocess.Popen(
            [str(BIN / "etcd"), "--data-dir", str(self.tmp / "etcd"),
             "--listen-client-urls", "http://127.0.0.1:2379",
             "--advertise-client-urls", "http://127.0.0.1:2379",
             "--listen-peer-urls", "http://127.0.0.1:2380",
             "--unsafe-no-fsync", "--quota-backend-bytes", str(1 << 30)],
            stdin=subprocess.DEVNULL, stdout=etcd_log, stderr=etcd_log))
        api_log = open(self.tmp / "kube-apiserver.log", "wb")
        self.procs.append(subprocess.Popen(
            [str(BIN / "kube-apiserver"),
             "--etcd-servers", "http://127.0.0.1:2379",
             "--bind-address", "0.0.0.0", "--secure-port", str(self.port),
             "--advertise-address", self.address,
             "--cert-dir", str(self.tmp / "certs"),
             "--token-auth-file", str(self.tmp / "tokens.csv"),
             "--authorization-mode", "RBAC",
             "--service-account-issuer", "https://kubernetes.default.svc",
             "--service-account-key-file", str(key),
             "--service-account-signing-key-file", str(key),
             "--service-cluster-ip-range", "10.96.0.0/16",
             "--disable-admission-plugins", "ServiceAccount",
             "--enable-priority-and-fairness=false",
             "--watch-cache=true", "--profiling=false"],
            stdin=subprocess.DEVNULL, stdout=api_log, stderr=api_log))
        self.write_kubeconfig(self.kubeconfig, token)
        deadline = time.monotonic() + 120
        while self.kubectl("get", "--raw", "/readyz", check=False).returncode != 0:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args[0]} exited: {self.logs()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"kube-apiserver not ready in 120 s: {self.logs()}")
            time.sleep(0.5)
        return self

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None
                ) -> subprocess.CompletedProcess:
        done = subprocess.run([kubectl_path(), "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, text=True, input=stdin)
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def logs(self) -> str:
        return "".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                       for p in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
