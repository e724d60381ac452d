"""netcfgd as a real process in the sandbox: ready on a real NOTIFY_SOCKET,
drift made with `ip` repaired (within a loose bound, measured), policy
report, reload with a good and a broken config, root-only control socket,
and the CLI going through the daemon.

The helpers here (``Netcfgd``, ``wait_for``) are shared with
test_netcfgd_faults.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from kernel_env import remove_what_netcfg_made, veth_tenants
from polling import poll

from netcfg.cli.client import connect, socket_path

REPO = Path(__file__).resolve().parents[2]
GROUP = "28259"
# Drift is repaired within this (measured ~10-30 ms here; loose for a loaded CI).
REPAIR_BOUND_S = 2.0

TENANTS = "netns watched\n    policy report\n\n" + veth_tenants(
    ["red", "blue", "watched"], route="10.${n}0.0.0/16", host="v-${tenant}") + textwrap.dedent("""\

    auto br0
    iface br0
        netns red
        bridge-ports p1 p2
        bridge-stp no

    % for i in (1, 2):
    auto p${i}
    iface p${i}
        netns red
        link-type veth
        veth-peer-name q${i}
    % endfor
    """)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, step: float = 0.005) -> Any:
    """Poll until predicate() is truthy; its value. Fails the test saying ``what``."""
    return poll(predicate, timeout, what, step, pytest.fail)


def ip_json(*args: str) -> Any:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def addresses(netns: str, dev: str) -> set[str]:
    where = ["-n", netns] if netns else []
    return {f"{a['local']}/{a['prefixlen']}" for link in ip_json(*where, "addr", "show", "dev", dev)
            for a in link.get("addr_info", ()) if a.get("family") == "inet"}


def link(netns: str, dev: str) -> dict | None:
    where = ["-n", netns] if netns else []
    found = ip_json(*where, "link", "show", "dev", dev)
    return found[0] if found else None


class Netcfgd:
    """netcfgd started as `python -m netcfgd` with a real NOTIFY_SOCKET (an
    AF_UNIX datagram socket this object reads) and its own run dir."""

    def __init__(self, tmp: Path, config: Path, watchdog_usec: int | None = None,
                 run_dir: Path | None = None, args: tuple[str, ...] = (),
                 prefix: tuple[str, ...] = ()):
        self.tmp = tmp
        self.prefix = prefix            # e.g. setpriv, to run with fewer capabilities
        self.config = config
        self.run_dir = run_dir or tmp / "run"
        self.notify_path = str(tmp / "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.notify.bind(self.notify_path)
        self.notify.settimeout(0.1)
        # Read as systemd does, all the time (a full queue would block the sender).
        self.messages: list[str] = []
        self.seen = 0                  # messages wait_message has looked at
        self._arrived = threading.Condition()
        self._closing = False
        self._reader = threading.Thread(target=self._read_notify, daemon=True)
        self._reader.start()
        self.watchdog_usec = watchdog_usec
        self.args = args
        self.proc: subprocess.Popen | None = None
        self.log = tmp / "netcfgd.log"

    def _read_notify(self) -> None:
        while not self._closing:
            try:
                message = self.notify.recv(65536).decode()
            except (TimeoutError, OSError):
                continue
            with self._arrived:
                self.messages.append(message)
                self._arrived.notify_all()

    def start(self, ready: bool = True, timeout: float = 30) -> "Netcfgd":
        env = {**os.environ, "NOTIFY_SOCKET": self.notify_path,
               "NETCFG_RUN_DIR": str(self.run_dir)}
        env.pop("INVOCATION_ID", None)
        env.pop("JOURNAL_STREAM", None)
        if self.watchdog_usec:
            env["WATCHDOG_USEC"] = str(self.watchdog_usec)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.prefix, sys.executable, "-m", "netcfgd", "-c", str(self.config), "-v",
                 *self.args],
                env=env, stdout=log, stderr=log, cwd="/")
        if ready:
            self.wait_message(lambda m: "READY=1" in m, timeout, "READY=1")
        return self

    def wait_message(self, predicate: Callable[[str], bool], timeout: float, what: str) -> str:
        """The first message not looked at yet that satisfies predicate."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                while self.seen < len(self.messages):
                    message = self.messages[self.seen]
                    self.seen += 1
                    if predicate(message):
                        return message
                if self.proc is not None and self.proc.poll() is not None:
                    pytest.fail(f"netcfgd exited ({self.proc.returncode}) before {what}:\n"
                                + self.log.read_text()[-3000:])
                if time.monotonic() > deadline:
                    pytest.fail(f"no sd_notify {what} within {timeout} s; got "
                                f"{self.messages[-5:]}\n" + self.log.read_text()[-3000:])
                self._arrived.wait(0.1)

    def status(self) -> dict:
        conn = connect(socket_path(str(self.run_dir)), timeout=30)
        assert conn is not None, "netcfgd's control socket does not answer"
        with conn:
            return conn.call("status")["status"]

    def counters(self) -> dict:
        return self.status()["counters"]

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def stop(self, timeout: float = 10) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._closing = True
        self._reader.join()
        self.notify.close()


@pytest.fixture
def make_daemon(tmp_path, netns_dir):
    """make_daemon(config_text, **kw) -> a started Netcfgd on a config dir;
    stopped, and what netcfg made removed, after the test."""
    started: list[Netcfgd] = []

    def make(text: str, start: bool = True, name: str = "a.tmpl", preapply: bool = True,
             **kw: Any) -> Netcfgd:
        config = tmp_path / "etc"
        config.mkdir(exist_ok=True)
        (config / name).write_text(text)
        daemon = Netcfgd(tmp_path, config, **kw)
        if preapply:
            # As on a host: `netcfg apply` first (policy report namespaces are
            # made then), netcfgd keeps it so.
            done = cli(daemon.run_dir, "apply", "-c", str(config))
            assert done.returncode == 0, done.stderr
        started.append(daemon)
        return daemon.start() if start else daemon

    yield make
    for daemon in started:
        daemon.close()
    remove_what_netcfg_made(netns_dir)


def cli(run_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcfg", *args], capture_output=True,
                          text=True, input=stdin, timeout=120,
                          env={**os.environ, "NETCFG_RUN_DIR": str(run_dir)})


# ---------------------------------------------------------------------- tests

def test_ready_status_watchdog_and_clean_stop(make_daemon):
    daemon = make_daemon(TENANTS, watchdog_usec=400_000)
    ready = next(m for m in daemon.messages if "READY=1" in m)
    assert "STATUS=3 namespaces" in ready          # after the first full reconcile
    assert addresses("red", "eth0") == {"10.0.1.2/30"}   # which happened before READY
    daemon.wait_message(lambda m: m == "WATCHDOG=1", 2, "WATCHDOG=1")
    status = daemon.status()
    names = {ns["name"]: ns for ns in status["namespaces"]}
    assert set(names) == {"", "red", "blue", "watched"}
    assert names["watched"]["policy"] == "report" and names["red"]["policy"] == "enforce"
    # eth0 with its address and route, br0, p1, p2 and their peers q1, q2
    assert names["red"]["objects"] == 8
    assert status["daemon"]["ready"] and status["counters"]["full_passes"] >= 1
    assert status["daemon"]["event_buffer_bytes"] >= 64 << 20
    second = subprocess.run([sys.executable, "-m", "netcfgd", "-c", str(daemon.config)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "NETCFG_RUN_DIR": str(daemon.run_dir)})
    assert second.returncode == 1 and "another netcfgd is running" in second.stderr
    assert daemon.status()["daemon"]["ready"]     # the first one is untouched
    assert daemon.stop() == 0
    daemon.wait_message(lambda m: m == "STOPPING=1", 2, "STOPPING=1")
    # SIGTERM leaves the network as it is.
    assert addresses("red", "eth0") == {"10.0.1.2/30"}
    assert link("", "v-red") is not None


def _repaired(predicate: Callable[[], bool], what: str) -> float:
    started = time.monotonic()
    wait_for(predicate, REPAIR_BOUND_S, what)
    return time.monotonic() - started


def test_drift_of_every_kind_is_repaired(make_daemon):
    daemon = make_daemon(TENANTS)
    latencies = {}

    ip("-n", "red", "addr", "del", "10.0.1.2/30", "dev", "eth0")
    latencies["address deleted"] = _repaired(
        lambda: addresses("red", "eth0") == {"10.0.1.2/30"}, "the address to come back")
    wait_for(lambda: any(r.get("dst") == "10.10.0.0/16" for r in ip_json("-n", "red", "route")),
             REPAIR_BOUND_S, "the route that went with the address")

    ip("link", "set", "v-blue", "down")
    latencies["link down"] = _repaired(
        lambda: "UP" in (link("", "v-blue") or {}).get("flags", ()), "v-blue to be up again")

    ip("-n", "red", "link", "set", "p2", "nomaster")
    latencies["port removed"] = _repaired(
        lambda: (link("red", "p2") or {}).get("master") == "br0", "p2 back in br0")

    ip("netns", "del", "blue")
    latencies["namespace deleted"] = _repaired(
        lambda: addresses("blue", "eth0") == {"10.0.2.2/30"}
        and addresses("", "v-blue") == {"10.0.2.1/30"}, "netns blue and its veth re-created")

    print("repair latencies (s):", {k: round(v, 4) for k, v in latencies.items()})
    # Converged: no duplicates, nothing left of the old blue.
    assert sorted(l["ifname"] for l in ip_json("link", "show", "group", GROUP) if l) == \
        ["v-blue", "v-red", "v-watched"]
    status = daemon.status()
    assert status["counters"]["passes_quiet"] >= 1      # our own writes came back as events
    assert all(ns["error"] is None for ns in status["namespaces"])
    check = cli(daemon.run_dir, "query", "--check", "-c", str(daemon.config))
    assert check.returncode == 0, check.stdout + check.stderr


def test_report_policy_only_reports(make_daemon):
    daemon = make_daemon(TENANTS)
    ip("-n", "watched", "addr", "del", "10.0.3.2/30", "dev", "eth0")
    ip("-n", "red", "addr", "del", "10.0.1.2/30", "dev", "eth0")
    wait_for(lambda: addresses("red", "eth0"), REPAIR_BOUND_S, "red (enforce) repaired")

    def reported():
        ns = {n["name"]: n for n in daemon.status()["namespaces"]}["watched"]
        return ns["drift"]
    drift = wait_for(reported, REPAIR_BOUND_S, "drift reported in watched", step=0.05)
    assert any("10.0.3.2/30" in line for line in drift)
    assert addresses("watched", "eth0") == set()       # report: not repaired
    text = cli(daemon.run_dir, "status")
    assert text.returncode == 0 and "drift: " in text.stdout and "watched" in text.stdout


def test_reload_keeps_the_last_good_config(make_daemon):
    daemon = make_daemon(TENANTS)
    template = daemon.config / "a.tmpl"
    template.write_text(TENANTS + "\niface eth0\n    netns red\n    mtu lots\n")
    daemon.signal(signal.SIGHUP)
    daemon.wait_message(lambda m: "RELOADING=1" in m, 5, "RELOADING=1")
    failed = daemon.wait_message(lambda m: "READY=1" in m, 10, "READY=1 after the reload")
    assert "reload failed" in failed
    errors = daemon.status()["daemon"]["config_errors"]
    assert errors and all("a.tmpl:" in e for e in errors) and any("mtu" in e for e in errors)
    assert "mtu" in "".join(errors) and "reload failed" in daemon.log.read_text()
    # The last good config is still enforced.
    ip("-n", "red", "addr", "del", "10.0.1.2/30", "dev", "eth0")
    wait_for(lambda: addresses("red", "eth0") == {"10.0.1.2/30"}, REPAIR_BOUND_S,
             "repair under the last good config")

    template.write_text(TENANTS + "\niface eth0\n    netns red\n    address 10.9.9.9/32\n")
    daemon.signal(signal.SIGHUP)
    daemon.wait_message(lambda m: "RELOADING=1" in m, 5, "RELOADING=1")
    daemon.wait_message(lambda m: "READY=1" in m, 10, "READY=1 after the good reload")
    assert addresses("red", "eth0") == {"10.0.1.2/30", "10.9.9.9/32"}
    assert daemon.status()["daemon"]["config_errors"] == []


def test_control_socket_refuses_non_root(make_daemon):
    # A run dir that uid 65534 can reach once loosened (pytest's tmp is 0700).
    public = Path(tempfile.mkdtemp(prefix="netcfgd-test-", dir="/tmp"))
    os.chmod(public, 0o755)
    try:
        _refuses_non_root(make_daemon(TENANTS, run_dir=public / "run"))
    finally:
        shutil.rmtree(public)


def _refuses_non_root(daemon: Netcfgd) -> None:
    path = socket_path(str(daemon.run_dir))
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(daemon.run_dir).st_mode & 0o777 == 0o700

    def as_nobody(loosen: bool) -> str:
        """What a uid-65534 client gets (the socket's permissions loosened or not)."""
        if loosen:
            os.chmod(daemon.run_dir, 0o755)
            os.chmod(path, 0o666)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: drop to nobody, then connect
            os.close(read)
            try:
                os.setgid(65534)
                os.setuid(65534)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(path)
                try:
                    sock.sendall(b'{"version": 1, "command": "status"}\n')
                except BrokenPipeError:
                    pass    # refused before the request was read: the answer is there
                answer = sock.makefile("rb").readline().decode()
            except OSError as e:
                answer = f"OSError {e.errno}"
            os.write(write, answer.encode())
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        with os.fdopen(read) as f:
            return f.read()

    assert as_nobody(loosen=False).startswith("OSError 13")    # EACCES: 0700 directory
    refused = json.loads(as_nobody(loosen=True))                # SO_PEERCRED says no
    assert refused["type"] == "error" and "root only" in refused["message"]
    assert "status" not in refused
    assert "refused uid 65534" in daemon.log.read_text()
    assert daemon.status()["daemon"]["ready"]                   # root still served


def test_cli_goes_through_the_daemon(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS, start=False)
    run = daemon.run_dir
    # Not running: status says so (exit 1); with it: text and JSON.
    assert cli(run, "status").returncode == 1
    daemon.start()
    # A netcfg with another run dir does not take it for "not running" (issue 23 L4).
    elsewhere = cli(tmp_path / "nowhere", "status")
    assert elsewhere.returncode == 2 and "netcfgd runs with another run dir" in elsewhere.stderr
    status = json.loads(cli(run, "status", "--json").stdout)
    assert status["running"] and status["daemon"]["pid"] == daemon.proc.pid

    # A second config, applied by two clients at once: the daemon serializes
    # them, and enforces the config it applied last.
    other = tmp_path / "other.tmpl"
    other.write_text(TENANTS + "\niface eth0\n    netns red\n    address 10.0.1.6/30\n")
    results: list[subprocess.CompletedProcess] = []
    clients = [threading.Thread(target=lambda: results.append(
        cli(run, "apply", "-c", str(other)))) for _ in range(2)]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    assert all("(by netcfgd)" in r.stdout for r in results)
    assert addresses("red", "eth0") == {"10.0.1.2/30", "10.0.1.6/30"}
    assert json.loads(cli(run, "status", "--json").stdout)["daemon"]["config"] == str(other)
    ip("-n", "red", "addr", "del", "10.0.1.6/30", "dev", "eth0")
    wait_for(lambda: addresses("red", "eth0") == {"10.0.1.2/30", "10.0.1.6/30"},
             REPAIR_BOUND_S, "the daemon enforcing the config the CLI applied")

    ip("-n", "red", "addr", "del", "10.0.1.2/30", "dev", "eth0")
    time.sleep(0.01)   # may or may not be repaired yet: query answers about now
    wait_for(lambda: addresses("red", "eth0") == {"10.0.1.2/30", "10.0.1.6/30"},
             REPAIR_BOUND_S, "repair")
    check = cli(run, "query", "--check", "-c", str(daemon.config))
    assert check.returncode == 1 and "10.0.1.6/30 is on the device" in check.stdout
    ok = cli(run, "query", "--check", "-c", str(other))
    assert ok.returncode == 0 and ok.stdout.startswith("ok:")
    dry = cli(run, "apply", "--dry-run", "-c", str(daemon.config))
    assert dry.returncode == 0 and "addr-del eth0 (netns red) 10.0.1.6/30" in dry.stdout
    assert addresses("red", "eth0") == {"10.0.1.2/30", "10.0.1.6/30"}  # a dry run changes nothing
    shown = cli(run, "show", "--netns", "red")
    assert shown.returncode == 0 and "10.0.1.6/30" in shown.stdout
    shown_json = json.loads(cli(run, "show", "-o", "json", "--netns", "red").stdout)
    assert "10.0.1.6/30" in json.dumps(shown_json)
    broken = cli(run, "apply", "-c", "-", stdin="iface x\n    mtu lots\n")
    assert broken.returncode == 1 and "<stdin>:2" in broken.stderr
    assert "Traceback" not in broken.stderr
    refused = cli(run, "down", "--all", "-c", str(other))
    assert refused.returncode == 2 and "netcfgd is running" in refused.stderr


def test_namespace_hooks_are_told_configured_and_removing(session):
    """The per-namespace lifecycle hooks (where the iSCSI target attaches),
    driven by a Reconciler in this process on the sandbox's kernel."""
    import logging

    from netcfg.compile.pipeline import ConfigSource, compile_config
    from netcfgd.hooks import NamespaceHooks
    from netcfgd.reconcile import Reconciler

    calls: list[tuple[str, str]] = []

    class Recording(NamespaceHooks):
        def configured(self, name: str) -> None:
            calls.append(("configured", name))

        def removing(self, name: str) -> None:
            calls.append(("removing", name))

    def model(text: str):
        return compile_config(ConfigSource(path="-", stdin_text=text)).model

    two = "".join(f"iface eth0\n    netns {t}\n    link-type veth\n    veth-peer-name eth1\n"
                  f"    address 10.9.{n}.1/24\n\n" for n, t in enumerate(("a", "b")))
    reconciler = Reconciler(session, logging.getLogger("test"), Recording(logging.getLogger()))
    reconciler.load(model(two))
    result = reconciler.reconcile(None)
    assert result.failed == {} and result.requests > 0
    assert sorted(calls) == [("configured", ""), ("configured", "a"), ("configured", "b")]
    assert set(reconciler.nsids.by_name) == {"a", "b"}      # both heard by the event socket
    calls.clear()
    assert reconciler.reconcile({"a"}).requests == 0         # level-triggered: nothing to do
    assert calls == []

    ip("netns", "del", "b")                                  # deleted from outside
    assert reconciler.namespace_deleted("b", time.monotonic())
    assert calls == [("removing", "b")]
    calls.clear()
    wait_for(lambda: reconciler.reconcile({"b"}, now=time.monotonic() + 5).requests,
             REPAIR_BOUND_S, "b re-created", step=0.05)
    assert calls == [("configured", "b")] and addresses("b", "eth0") == {"10.9.1.1/24"}
    calls.clear()
    assert reconciler.load(model(two.split("\n\n")[0] + "\n")) == ["b"]
    assert calls == [("removing", "b")]                      # before the pass removes it
    reconciler.reconcile(None)
    assert "b" not in os.listdir("/run/netns")


def unit_capabilities() -> list[str]:
    """CapabilityBoundingSet= of daemon/netcfgd.service, as setpriv spells them."""
    for line in (REPO / "daemon" / "netcfgd.service").read_text().splitlines():
        if line.startswith("CapabilityBoundingSet="):
            return [c.lower().removeprefix("cap_") for c in line.split("=", 1)[1].split()]
    raise AssertionError("the unit sets no CapabilityBoundingSet=")


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_runs_with_only_the_units_capabilities(make_daemon):
    """systemd gives netcfgd only the unit's CapabilityBoundingSet: the kernel
    tier, running as unconfined root, missed that NETLINK_LISTEN_ALL_NSID
    needs CAP_NET_BROADCAST (the booted Debian test found it)."""
    caps = unit_capabilities()
    bounding = "-all," + ",".join(f"+{c}" for c in caps)
    daemon = make_daemon(TENANTS, prefix=("setpriv", f"--bounding-set={bounding}",
                                          f"--inh-caps={bounding}"))
    assert daemon.status()["daemon"]["ready"]
    # It still repairs drift with no more than that.
    ip("-n", "red", "addr", "del", "10.0.1.2/30", "dev", "eth0")
    wait_for(lambda: addresses("red", "eth0") == {"10.0.1.2/30"}, REPAIR_BOUND_S * 5,
             "the address repaired")
