#!/usr/bin/env python3
"""netcfgd under load: an event storm, and the latency of repairing one change.

    sudo .venv/bin/python bench/storm/run.py [--quick] [--record]

Runs itself inside a private network + mount namespace (unshare) with a tmpfs
on /run/netns, starts netcfgd there as a real process (`python -m netcfgd`),
and measures:

* storm: 500 bridge ports of a managed bridge taken off it and down, plus
  500 foreign veth pairs made and brought up, by one `ip -batch` script:
  kernel notifications the daemon received vs the reconcile passes it ran,
  the daemon's CPU time per 1000 notifications, and how long until every
  port was back.
* repair latency: one address deleted (a raw RTM_DELADDR sent from here),
  the time until the kernel announces it back (RTM_NEWADDR, heard on our own
  NETLINK_LISTEN_ALL_NSID socket), at 100, 1000 and 10000 managed objects;
  p50 and p99 over the trials. Layout: tenants of 100 objects each (a veth
  pair inside the namespace, 98 addresses on one end), so the size of the
  host grows with the number of tenants; and, for contrast, all objects in
  one namespace ("dense").

Prints a JSON summary; --record appends a table to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import ctypes
import ipaddress
import json
import math
import os
import random
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The storm scenario is the kernel tier's (one definition for the test and this).
sys.path[:0] = [str(REPO), str(REPO / "tests" / "kernel")]

SANDBOX_FLAG = "NETCFG_BENCH_STORM_INNER"
OBJECTS_PER_TENANT = 100
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- sandbox

def inside_sandbox() -> bool:
    """True in the namespace the outer half made (its network namespace
    differs from the one recorded by the outer half)."""
    marker = os.environ.get(SANDBOX_FLAG, "")
    return bool(marker) and marker != os.readlink("/proc/self/ns/net")


def run_in_sandbox() -> int:
    """This script again, under unshare: a private network and mount namespace."""
    if os.environ.get(SANDBOX_FLAG):
        sys.exit("bench/storm: still in the host's network namespace after unshare; refusing")
    if os.geteuid() != 0:
        sys.exit("bench/storm: needs root (it runs in its own network namespace)")
    host = os.readlink("/proc/self/ns/net")
    return subprocess.call(["unshare", "--net", "--mount", "--propagation", "private",
                            sys.executable, __file__, *sys.argv[1:]],
                           env={**os.environ, SANDBOX_FLAG: host})


def prepare_sandbox() -> None:
    libc = ctypes.CDLL(None, use_errno=True)

    def mount_tmpfs(path: str) -> None:
        if libc.mount(b"tmpfs", path.encode(), b"tmpfs", 0, b"mode=755"):
            raise OSError(ctypes.get_errno(), f"mount tmpfs on {path}")
    if os.path.isdir("/run/netns"):
        mount_tmpfs("/run/netns")
    else:
        mount_tmpfs("/run")
        os.mkdir("/run/netns")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


# ---------------------------------------------------------------- configs

def tenants_config(objects: int) -> str:
    """objects/100 tenants: eth0 (veth, peer eth1, both inside) with 98 addresses."""
    tenants = max(1, objects // OBJECTS_PER_TENANT)
    per = OBJECTS_PER_TENANT - 2
    return (f"% for t in range({tenants}):\n"
            "auto eth0\niface eth0\n    netns t${t}\n    link-type veth\n"
            "    veth-peer-name eth1\n"
            f"% for a in range({per}):\n"
            "    address 10.${t // 250}.${t % 250}.${a + 1}/32\n"
            "% endfor\n% endfor\n")


def dense_config(objects: int) -> str:
    """Every object in one namespace: addresses spread over 10 veth pairs."""
    per = max(1, (objects - 20) // 10)
    return ("% for v in range(10):\n"
            "auto a${v}\niface a${v}\n    netns dense\n    link-type veth\n"
            "    veth-peer-name b${v}\n"
            f"% for a in range({per}):\n"
            "    address 10.${v}.${a // 250}.${a % 250 + 1}/32\n"
            "% endfor\n% endfor\n")


# ---------------------------------------------------------------- the daemon

class Daemon:
    def __init__(self, work: Path, config_text: str, extra_args: tuple[str, ...] = ()):
        self.work = work
        self.config = work / "etc"
        self.config.mkdir(parents=True, exist_ok=True)
        for old in self.config.iterdir():
            old.unlink()
        (self.config / "bench.tmpl").write_text(config_text)
        self.run_dir = work / "run"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify_path = work / f"notify-{time.monotonic_ns()}"
        self.notify.bind(str(notify_path))
        env = {**os.environ, "NOTIFY_SOCKET": str(notify_path),
               "NETCFG_RUN_DIR": str(self.run_dir)}
        self.log = open(work / "netcfgd.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "netcfgd", "-c", str(self.config),
                                      *extra_args],
                                     env=env, stdout=self.log, stderr=self.log, cwd="/")
        self.notify.settimeout(600)
        while b"READY=1" not in self.notify.recv(4096):
            pass
        self.notify.setblocking(False)

    def drain_notify(self) -> None:
        try:
            while True:
                self.notify.recv(4096)
        except BlockingIOError:
            pass

    def status(self) -> dict:
        from netcfg.cli.client import connect, socket_path
        self.drain_notify()
        conn = connect(socket_path(str(self.run_dir)), timeout=60)
        with conn:
            return conn.call("status")["status"]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime + stime

    def stop(self) -> None:
        self.drain_notify()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.notify.close()
        self.log.close()


def clean() -> None:
    subprocess.run("for n in $(ip netns list | cut -d' ' -f1); do ip netns del $n; done",
                   shell=True, check=False)
    time.sleep(0.5)


# ---------------------------------------------------------------- measurements

def storm(work: Path) -> dict:
    import storm_scenario
    daemon = Daemon(work, storm_scenario.config())
    try:
        before, cpu0 = daemon.status()["counters"], daemon.cpu_seconds()
        started = time.monotonic()
        storm_scenario.run(work / "storm.batch")
        script_s = time.monotonic() - started
        while not storm_scenario.converged(json.loads(subprocess.run(
                ["ip", "-j", "-n", "storm", "link", "show"],
                capture_output=True, text=True).stdout)):
            time.sleep(0.05)
        converged_s = time.monotonic() - started
        time.sleep(1.0)   # the passes our own writes cause
        after, cpu1 = daemon.status()["counters"], daemon.cpu_seconds()
    finally:
        daemon.stop()
        clean()
    events = after["events"] - before["events"]
    return {"ports": storm_scenario.PORTS, "notifications": events,
            "passes": after["passes"] - before["passes"],
            "passes_writing": after["passes_writing"] - before["passes_writing"],
            "event_losses": after["event_losses"] - before["event_losses"],
            "script_s": round(script_s, 3), "converged_s": round(converged_s, 3),
            "daemon_cpu_s": round(cpu1 - cpu0, 3),
            "cpu_ms_per_1000_events": round((cpu1 - cpu0) * 1e6 / max(events, 1), 1)}


def repair_latency(work: Path, objects: int, layout: str, trials: int) -> dict:
    from netcfg.kernel.events import EventSocket
    from netcfg.kernel.nl import RtnlSocket
    from netcfg.netlink.nlmsg import AF_INET, IFA_LOCAL, RTM_DELADDR, RTM_NEWADDR, ifaddrmsg, rtattr
    from netcfg.kernel.ns import NetnsDir, NetnsSwitcher
    from netcfg.kernel.read import netns_id

    config = tenants_config(objects) if layout == "tenants" else dense_config(objects)
    daemon = Daemon(work, config)
    nsdir, switcher = NetnsDir(), NetnsSwitcher()
    events = EventSocket()
    host = RtnlSocket.open()
    latencies = []
    try:
        names = nsdir.list_names()
        rng = random.Random(objects)
        sockets = {}
        for _ in range(trials):
            netns = rng.choice(names)
            if netns not in sockets:
                handle = nsdir.open(netns)
                raw = switcher.socket_in(handle, socket.AF_NETLINK, socket.SOCK_RAW, 0)
                # Its nsid here (the daemon gave it one): ifindexes repeat
                # between namespaces, so events are matched on both.
                sockets[netns] = (RtnlSocket(raw), handle, netns_id(host, handle.fd))
            sock, handle, nsid = sockets[netns]
            addrs = json.loads(subprocess.run(["ip", "-j", "-n", netns, "-4", "addr", "show"],
                                              capture_output=True, text=True).stdout)
            candidates = [(l["ifindex"], a["local"], a["prefixlen"]) for l in addrs
                          if l["ifname"] != "lo" for a in l["addr_info"]]
            ifindex, address, prefix = rng.choice(candidates)
            payload = (ifaddrmsg(AF_INET, prefix, ifindex)
                       + rtattr(IFA_LOCAL, ipaddress.ip_address(address).packed))
            events.read()                                   # start from a quiet socket
            started = time.monotonic()
            sock.request(RTM_DELADDR, 0, payload)
            back = None
            while back is None and time.monotonic() - started < 10:
                select.select([events], [], [], 1.0)
                for event in events.read():
                    if (event.msg_type == RTM_NEWADDR and event.ifindex == ifindex
                            and event.nsid == nsid and event.origin == 0):
                        back = time.monotonic()
            if back is None:
                log = (work / "netcfgd.log").read_text().splitlines()[-30:]
                raise RuntimeError(f"{address} in {netns} was not repaired within 10 s; "
                                   f"netcfgd's log ends:\n" + "\n".join(log))
            latencies.append(back - started)
            time.sleep(0.15)   # let the quiet pass that follows a repair go by
            daemon.drain_notify()
        status = daemon.status()
    finally:
        events.close()
        host.close()
        daemon.stop()
        switcher.close()
        clean()
    latencies.sort()
    return {"objects": status["objects"], "layout": layout, "namespaces":
            len(status["namespaces"]) - 1, "trials": len(latencies),
            "p50_ms": round(statistics.median(latencies) * 1000, 1),
            "p90_ms": round(latencies[math.ceil(len(latencies) * 0.9) - 1] * 1000, 1),
            "p99_ms": round(latencies[math.ceil(len(latencies) * 0.99) - 1] * 1000, 1),
            "max_ms": round(latencies[-1] * 1000, 1),
            "all_ms": [round(x * 1000, 1) for x in latencies]}


# ---------------------------------------------------------------- report

def markdown(result: dict, command: str) -> str:
    s = result["storm"]
    lines = [f"### {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             "```sh", command, "```", ""]
    if s:
        lines += [f"Storm: {s['ports']} managed bridge ports taken off their bridge and down, plus "
             f"{s['ports']} foreign veth pairs made and brought up (one `ip -batch`, "
             f"{s['script_s']} s): **{s['notifications']} notifications, {s['passes']} reconcile "
             f"passes** ({s['passes_writing']} writing), {s['event_losses']} losses; every port "
             f"back {s['converged_s']} s after the script started; daemon CPU "
             f"{s['daemon_cpu_s']} s = **{s['cpu_ms_per_1000_events']} ms per 1000 "
             f"notifications** (reading and reconciling included).", ""]
    lines += ["| layout | managed objects | namespaces | trials | repair p50 | p90 | p99 | max |",
              "|---|---|---|---|---|---|---|---|"]
    for r in result["latency"]:
        lines.append(f"| {r['layout']} | {r['objects']} | {r['namespaces']} | {r['trials']} | "
                     f"{r['p50_ms']} ms | {r['p90_ms']} ms | {r['p99_ms']} ms | "
                     f"{r['max_ms']} ms |")
    load = os.getloadavg()[0]
    lines += ["", f"Load average when it ended: {load:.1f} on {os.cpu_count()} CPUs."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials, no 10000 case")
    parser.add_argument("--record", action="store_true", help="append to docs/benchmarks.md")
    parser.add_argument("--trials", type=int, default=0, help="repairs timed per case")
    parser.add_argument("--sizes", default="", help="managed objects, comma-separated "
                        "(default 100,1000,10000)")
    parser.add_argument("--layouts", default="tenants,dense")
    parser.add_argument("--no-storm", action="store_true")
    args = parser.parse_args()
    if not inside_sandbox():
        return run_in_sandbox()
    prepare_sandbox()
    trials = args.trials or (10 if args.quick else 100)
    sizes = (100, 1000) if args.quick else (100, 1000, 10000)
    if args.sizes:
        sizes = tuple(int(n) for n in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="netcfg-storm-") as tmp:
        work = Path(tmp)
        result = {"storm": None if args.no_storm else storm(work), "latency": []}
        print(json.dumps(result["storm"]), flush=True)
        for layout in args.layouts.split(","):
            for objects in sizes:
                one = repair_latency(work, objects, layout, trials)
                print(json.dumps(one), flush=True)
                result["latency"].append(one)
    command = "sudo .venv/bin/python bench/storm/run.py " + " ".join(sys.argv[1:])
    text = markdown(result, command)
    print(text)
    if args.record:
        path = REPO / "docs" / "benchmarks.md"
        with open(path, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
