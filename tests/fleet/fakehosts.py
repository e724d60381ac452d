"""A fleet of fake hosts for the Ansible tests: each a private network and
mount namespace with its own /etc/netcfg, /run/netcfg and /run/netns (tmpfs in
its mount namespace), its own netcfgd, and Debian's sshd listening only on its
management address, on a veth whose other end is a port of the bridge
`fleet0` in the controller's namespace (the sandbox the test runs in).

Nothing here is mocked: ansible-core reaches each host over real SSH, the
modules run the real `netcfg` against the real netcfgd, and the tests read the
kernel state of each host back with iproute2 inside its namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from polling import poll

REPO = Path(__file__).resolve().parents[2]
GATEWAY = "10.77.0.1"
PREFIX = 24
BRIDGE = "fleet0"
# The config the fleet tests roll out (Ansible's and the Kubernetes agent's):
# a host's management address and one veth into each tenant's namespace.
TEMPLATE = textwrap.dedent("""\
    ## A fleet host: its management address and one veth per tenant.
    auto mgmt0
    iface mgmt0
        address ${mgmt_address}

    % for n, tenant in enumerate(tenants, start=1):
    auto v-${tenant}
    iface v-${tenant}
        link-type veth
        veth-peer-name eth0
        veth-peer-netns ${tenant}
        address 10.${host}.${n}.1/30

    auto eth0
    iface eth0
        netns ${tenant}
        address 10.${host}.${n}.2/30
    % endfor
    """)


def mgmt_address(number: int) -> str:
    return f"10.77.0.{10 + number}"


def run(*args: str, **kw) -> str:
    done = subprocess.run(args, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def overlay_etc(tmp: Path) -> None:
    """A writable /etc for this mount namespace only (overlayfs, upper layer in
    tmp): sshd needs its privilege separation user, and the hosts an
    /etc/netcfg to mount on; the host's /etc is not touched."""
    upper, work = tmp / "etc-upper", tmp / "etc-work"
    upper.mkdir()
    work.mkdir()
    run("mount", "-t", "overlay", "overlay", "-o",
        f"lowerdir=/etc,upperdir={upper},workdir={work}", "/etc")
    with open("/etc/passwd") as f:
        has_user = any(line.startswith("sshd:") for line in f)
    if not has_user:
        with open("/etc/passwd", "a") as f:
            f.write("sshd:x:65533:65534:sshd privsep:/run/sshd:/usr/sbin/nologin\n")
    os.makedirs("/etc/netcfg", exist_ok=True)
    for path in ("/run/sshd", "/run/netcfg"):
        os.makedirs(path, mode=0o755, exist_ok=True)


@dataclass
class Host:
    """One fake host: a process holding its namespaces, and its daemons."""
    number: int
    name: str
    holder: subprocess.Popen
    tmp: Path
    daemons: list[subprocess.Popen] = field(default_factory=list)
    notify: socket.socket | None = None

    @property
    def pid(self) -> int:
        return self.holder.pid

    @property
    def address(self) -> str:
        return mgmt_address(self.number)

    def root(self, path: str) -> Path:
        """PATH as this host sees it (its mount namespace, through /proc)."""
        return Path(f"/proc/{self.pid}/root{path}")

    def enter(self, *args: str, mount: bool = True) -> list[str]:
        return ["nsenter", "-t", str(self.pid), "-n", *(["-m"] if mount else []), *args]

    def sh(self, *args: str) -> str:
        return run(*self.enter(*args))

    def netcfg(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(self.enter(str(REPO / ".venv/bin/netcfg"), *args),
                              capture_output=True, text=True)

    def status(self) -> dict:
        done = self.netcfg("status", "--json")
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: netcfg status: exit {done.returncode}: "
                               f"{done.stderr.strip()}")
        return json.loads(done.stdout)

    def config_files(self) -> dict[str, str]:
        base = self.root("/etc/netcfg")
        return {p.name: p.read_text() for p in sorted(base.iterdir()) if p.is_file()}

    def state(self) -> dict:
        """The host's network state as iproute2 reads it back: per namespace
        (the host's own, then each in its /run/netns), each link's kind,
        up flag, MTU, master and addresses (not link-local: a re-created
        veth gets a new MAC), and the main table's routes."""
        names = [""] + sorted(p.name for p in self.root("/run/netns").iterdir())
        state = {}
        for ns in names:
            where = ["-n", ns] if ns else []
            links = json.loads(self.sh("ip", "-j", "-d", *where, "addr", "show") or "[]")
            routes = json.loads(self.sh("ip", "-j", *where, "route", "show") or "[]")
            state[ns or "(host)"] = {
                "links": sorted(
                    (link["ifname"], (link.get("linkinfo") or {}).get("info_kind", ""),
                     "UP" in link.get("flags", ()), link.get("mtu"), link.get("master", ""),
                     tuple(sorted(f"{a['local']}/{a['prefixlen']}"
                                  for a in link.get("addr_info", ())
                                  if a.get("scope") != "link")))
                    for link in links),
                "routes": sorted((r.get("dst", ""), r.get("gateway", ""), r.get("dev", ""))
                                 for r in routes),
            }
        return state

    def cpu_seconds(self) -> float:
        """CPU time of this host's daemons and what they ran and reaped
        (sshd: the sessions, the modules, the netcfg commands)."""
        total = 0
        for proc in self.daemons:
            try:
                with open(f"/proc/{proc.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        for proc in self.daemons:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.daemons:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.holder.kill()
        self.holder.wait()


class Fleet:
    """COUNT fake hosts named h01.., each started with CONFIG (relative name ->
    text) and VARS(number) as its /etc/netcfg, as an operator would have."""

    def __init__(self, tmp: Path, count: int, sshd: str):
        self.tmp = tmp
        self.count = count
        self.sshd = sshd
        self.hosts: list[Host] = []
        self.client_key = tmp / "id_ed25519"
        self.host_key = tmp / "ssh_host_ed25519_key"

    def start(self, config: dict[str, str], host_vars) -> "Fleet":
        overlay_etc(self.tmp)
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.client_key))
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key))
        authorized = self.tmp / "authorized_keys"
        shutil.copy(f"{self.client_key}.pub", authorized)
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{GATEWAY}/{PREFIX}", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        for number in range(1, self.count + 1):
            self.hosts.append(self._make_host(number, config, host_vars(number), authorized))
        for host in self.hosts:
            self._wait_ready(host)
        return self

    def _make_host(self, number: int, config: dict[str, str], variables: dict,
                   authorized: Path) -> Host:
        tmp = self.tmp / f"h{number:02d}"
        tmp.mkdir()
        holder = subprocess.Popen(["unshare", "--net", "--mount", "--propagation", "private",
                                   "sleep", "infinity"], stdin=subprocess.DEVNULL)
        host = Host(number, f"h{number:02d}", holder, tmp)
        wait(lambda: os.readlink(f"/proc/{holder.pid}/ns/net")
             != os.readlink("/proc/self/ns/net"), 10, f"{host.name}'s namespaces")
        port = f"fleet-h{number:02d}"
        run("ip", "link", "add", port, "master", BRIDGE, "type", "veth",
            "peer", "name", "mgmt0", "netns", str(holder.pid))
        run("ip", "link", "set", port, "up")
        (tmp / "etc-upper").mkdir()
        (tmp / "etc-work").mkdir()
        script = "; ".join([
            "set -e",
            # Its own /etc: what the modules write next to /etc/netcfg (the
            # staged config) must not be shared with the other hosts.
            f"mount -t overlay overlay -o lowerdir=/etc,upperdir={tmp}/etc-upper,"
            f"workdir={tmp}/etc-work /etc",
            *(f"mount -t tmpfs -o mode={mode} {name} {path}" for name, path, mode in (
                ("netcfg-etc", "/etc/netcfg", "755"), ("netcfg-run", "/run/netcfg", "700"),
                ("netns", "/run/netns", "755"))),
            "ip link set lo up",
            f"ip addr add {host.address}/{PREFIX} dev mgmt0",
            "ip link set mgmt0 up",
        ])
        host.sh("sh", "-c", script)
        etc = host.root("/etc/netcfg")
        for name, text in config.items():
            (etc / name).write_text(text)
        (etc / "vars.json").write_text(json.dumps(variables, indent=2, sort_keys=True) + "\n")
        # READY=1 comes on a notify socket, as under systemd: polling `netcfg
        # status` for 20 hosts would cost more CPU than the daemons' start.
        host.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        host.notify.bind(str(tmp / "notify.sock"))
        with open(tmp / "netcfgd.log", "wb") as log:
            host.daemons.append(subprocess.Popen(
                host.enter(sys.executable, "-m", "netcfgd", "-c", "/etc/netcfg"),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                env={**os.environ, "NOTIFY_SOCKET": str(tmp / "notify.sock")}))
        sshd_config = tmp / "sshd_config"
        sshd_config.write_text("\n".join([
            f"ListenAddress {host.address}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {authorized}",
            f"PidFile {tmp / 'sshd.pid'}",
            "UsePAM no",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "StrictModes no",          # the keys live in pytest's tmp dir
            "MaxSessions 50",
            "MaxStartups 100",
            "LogLevel INFO",
            # SSH sessions start with a clean environment: they get the test
            # run's Python path, as the netcfgd started here does.
            *([f"SetEnv PYTHONPATH={os.environ['PYTHONPATH']}"]
              if os.environ.get("PYTHONPATH") else []),
            "",
        ]))
        libs = Path(self.sshd).parents[1] / "lib/x86_64-linux-gnu"   # libwrap, unpacked
        host.daemons.append(subprocess.Popen(
            host.enter(self.sshd, "-D", "-f", str(sshd_config), "-E", str(tmp / "sshd.log")),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "LD_LIBRARY_PATH": str(libs)}))
        return host

    def _wait_ready(self, host: Host) -> None:
        def ready() -> bool:
            for proc in host.daemons:
                if proc.poll() is not None:
                    raise RuntimeError(f"{host.name}: {proc.args} exited "
                                       f"({proc.returncode}):\n" + read_tail(host.tmp))
            host.notify.settimeout(0.2)
            try:
                return b"READY=1" in host.notify.recv(4096)
            except TimeoutError:
                return False
        wait(ready, 90, f"{host.name}'s netcfgd", step=0)
        host.notify.close()
        wait(lambda: port_open(host.address, 22), 20, f"{host.name}'s sshd")

    def stop(self) -> None:
        for host in self.hosts:
            host.stop()
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)


def read_tail(tmp: Path) -> str:
    return "".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(tmp.glob("*.log")))


def port_open(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def wait(predicate, timeout: float, what: str, step: float = 0.1):
    return poll(predicate, timeout, what, step, TimeoutError)
