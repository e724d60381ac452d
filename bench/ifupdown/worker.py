#!/usr/bin/env python3
"""The inside half of bench/ifupdown: one tool's run on the Proxmox SDN host, in the sandbox
run.py started it in (a private network + mount namespace, /sys remounted, a tmpfs over /run and
/var/tmp/network, the bench's files bound over /etc/network/interfaces and interfaces.d).

    /usr/bin/python3 bench/ifupdown/worker.py --tool netcfg|ifupdown2 --sdn HOSTPATH ...

Stdlib only (the same interpreter starts both tools' commands, each a fresh process, as
Proxmox's pvestatd and pve-manager start them). It refuses to run in the namespaces run.py
started in. Then:

1. the host's NIC: a veth `eth0` whose peer is up (a cable plugged in);
2. boot: `ifup -a`, as networking.service does (timed, reported apart);
3. the kernel read back (`ip -j`): every vnet a bridge, up, with its address; vmbr0 with
   its address and eth0 as its port;
4. --polls x `ifquery -a -c -o json` (pve-network's status poll, Zones.pm): each timed, its
   JSON parsed, its verdicts counted;
5. --reloads x `ifreload -a` with nothing changed (a no-op reload);
6. --reloads x `ifreload -a` after a one-line edit of interfaces.d/sdn (a vnet's address
   moved, then moved back, alternately): each timed, then the kernel read back to see the
   new address there and the old one gone;
7. with --netcfgd (netcfg only): netcfgd started on /etc/network/interfaces before 4, so the
   polls run beside it and the reloads go through it.

Prints one JSON object on stdout; run.py makes the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import sdn  # noqa: E402  (this directory, not a package)

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_PYTHON = "/usr/bin/python3"


class Refused(SystemExit):
    pass


def refuse_host_namespaces(host_net: str, host_mnt: str) -> None:
    """run.py passes its own namespaces; running in either would touch the host."""
    if os.readlink("/proc/self/ns/net") == host_net:
        raise Refused("worker: in the host's network namespace; refusing to run")
    if os.readlink("/proc/self/ns/mnt") == host_mnt:
        raise Refused("worker: in the host's mount namespace; refusing to run")


class Tool:
    """How to start one of the four commands of one implementation."""

    def __init__(self, name: str, venv_bin: str, pythonpath: str | None = None):
        self.name = name
        self.venv_bin = venv_bin
        self.pythonpath = pythonpath   # netcfg from a snapshot of a commit (run.py --commit)

    def argv(self, command: str, *args: str) -> list[str]:
        if self.name == "ifupdown2":
            # Its scripts say `#!/usr/bin/env python3`: start them with Debian's python.
            return [SYSTEM_PYTHON, f"/usr/sbin/{command}", *args]
        return [os.path.join(self.venv_bin, command), *args]

    def env(self) -> dict[str, str]:
        path = SYSTEM_PATH if self.name == "ifupdown2" else f"{self.venv_bin}:{SYSTEM_PATH}"
        env = {"PATH": path, "LANG": "C.UTF-8", "HOME": "/root"}
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        return env


def timed(argv: list[str], env: dict[str, str], timeout: float = 600) -> dict:
    """Run argv; its wall time, its CPU (user + system, it and its children), exit, output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "rc": proc.returncode, "stdout": proc.stdout,
            "stderr": proc.stderr}


def ip_json(*args: str) -> list:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out or "[]")


def kernel_view() -> dict[str, dict]:
    """Per link: kind, master, up, IPv4 addresses (from `ip -j -d addr show`)."""
    view = {}
    for link in ip_json("-d", "addr", "show"):
        info = link.get("linkinfo", {})
        view[link["ifname"]] = {
            "kind": info.get("info_kind", ""),
            "master": link.get("master"),
            "up": "UP" in link.get("flags", []),
            "v4": {f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", [])
                   if a.get("family") == "inet"},
        }
    return view


def census(nets: list[sdn.Vnet], addresses: dict[str, str]) -> dict:
    """What the kernel has against what the files ask: the names that differ."""
    view = kernel_view()
    wrong = []
    for v in nets:
        link = view.get(v.name)
        if not (link and link["kind"] == "bridge" and link["up"]
                and link["v4"] == {addresses[v.name]}):
            wrong.append(v.name)
    vmbr0 = view.get("vmbr0")
    if not (vmbr0 and vmbr0["kind"] == "bridge" and sdn.HOST_ADDRESS in vmbr0["v4"]
            and view.get(sdn.NIC, {}).get("master") == "vmbr0"):
        wrong.append("vmbr0")
    return {"links": len(view), "bridges": sum(1 for x in view.values() if x["kind"] == "bridge"),
            "wrong": wrong}


def verdict_counts(stdout: str) -> dict:
    """pve-network's reading of the poll (Zones/Plugin.pm): status per interface."""
    try:
        objs = json.loads(stdout)
    except ValueError:
        return {"json": False}
    counts = {"json": True, "interfaces": len(objs), "pass": 0, "fail": 0, "other": 0}
    for obj in objs:
        status = obj.get("status")
        counts[status if status in ("pass", "fail") else "other"] += 1
    return counts


def summary(run: dict) -> dict:
    return {k: run[k] for k in ("wall", "cpu", "rc")}


def brief_err(run: dict) -> str:
    return run["stderr"][-1500:]


def plug_in_nic() -> None:
    """The node's NIC, a veth whose peer is up (a cable plugged in), and /run/network."""
    # A Debian host has /run/network (ifupdown2's lock and state dir; without it ifupdown2
    # reports its lock as held, exit 89); the sandbox's /run is an empty tmpfs.
    os.makedirs("/run/network", exist_ok=True)
    subprocess.run(["ip", "link", "add", sdn.NIC, "type", "veth", "peer", "name",
                    f"{sdn.NIC}p"], check=True)
    subprocess.run(["ip", "link", "set", f"{sdn.NIC}p", "up"], check=True)


def start_netcfgd(tool: Tool) -> subprocess.Popen:
    """netcfgd on the same file the commands read, its socket in the sandbox's /run."""
    log = open("/run/netcfgd.log", "ab")
    proc = subprocess.Popen([os.path.join(tool.venv_bin, "netcfgd"), "-c",
                             "/etc/network/interfaces"], env=tool.env(), stdout=log,
                            stderr=log, cwd="/")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        # Ready when a reload (a no-op: the file is applied) says the daemon served it.
        probe = subprocess.run(tool.argv("ifreload", "-a", "-v"), env=tool.env(),
                               capture_output=True, text=True)
        if "netcfgd applied" in probe.stderr:
            return proc
        time.sleep(0.2)
    # Stop it: a daemon left running would keep this sandbox's namespaces alive.
    proc.kill()
    proc.wait()
    with open("/run/netcfgd.log", errors="replace") as f:
        raise RuntimeError(f"netcfgd did not come up: {f.read()[-2000:]}")


def run_vlans(args: argparse.Namespace, tool: Tool) -> dict:
    """The 4094-VLAN compile case: `ifquery -a -i FILE` (parse and dependency graph, no
    kernel), then `ifquery -a -c -i FILE` against a kernel that has the front-panel ports
    (veths swp1..swpP, up) and none of the bridges or VLAN subinterfaces yet."""
    env = tool.env()
    for n in range(1, args.ports + 1):
        subprocess.run(["ip", "link", "add", f"swp{n}", "type", "veth", "peer", "name",
                        f"swp{n}p"], check=True)
        subprocess.run(["ip", "link", "set", f"swp{n}", "up"], check=True)
    out: dict = {"tool": tool.name, "runs": []}
    for _ in range(args.runs):
        query = timed(tool.argv("ifquery", "-a", "-i", args.file), env, args.timeout)
        check = timed(tool.argv("ifquery", "-a", "-c", "-i", args.file), env, args.timeout)
        out["runs"].append({
            "query": {**summary(query), "lines": query["stdout"].count("\n"),
                      "stderr_tail": brief_err(query)[-300:]},
            "check": {**summary(check), "pass": check["stdout"].count("[pass]"),
                      "fail": check["stdout"].count("[fail]"),
                      "stderr_tail": brief_err(check)[-300:]}})
        if tool.name == "netcfg":
            # The engine ifquery -c uses, as `netcfg query --check` runs it (the stand-in
            # where ifquery -c fails: files netcfg lowers, see docs/benchmarks.md).
            engine = timed(tool.argv("netcfg", "query", "--check", "-c", args.file), env,
                           args.timeout)
            out["runs"][-1]["engine"] = {**summary(engine),
                                         "drift": engine["stdout"].count("drift:"),
                                         "stderr_tail": brief_err(engine)[-300:]}
    return out


def run_profile(args: argparse.Namespace, tool: Tool) -> dict:
    """netcfg only: boot the node, then profile_poll.py (phases of the poll, imports)."""
    boot = timed(tool.argv("ifup", "-a"), tool.env())
    if boot["rc"] != 0:
        raise RuntimeError(f"ifup -a exit {boot['rc']}: {brief_err(boot)}")
    python = os.path.join(tool.venv_bin, "python")
    proc = subprocess.run([python, os.path.join(HERE, "profile_poll.py"), str(args.polls)],
                          env=tool.env(), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("sdn", "vlans", "profile"))
    p.add_argument("--tool", choices=("netcfg", "ifupdown2"), required=True)
    p.add_argument("--venv-bin", required=True)
    p.add_argument("--pythonpath", help="netcfg's packages from here (a commit's snapshot)")
    p.add_argument("--host-netns", required=True)
    p.add_argument("--host-mntns", required=True)
    p.add_argument("--sdn", help="sdn mode: host path of the sdn file (edited in place)")
    p.add_argument("--vnets", type=int, default=100)
    p.add_argument("--polls", type=int, default=20)
    p.add_argument("--reloads", type=int, default=5)
    p.add_argument("--netcfgd", action="store_true")
    p.add_argument("--file", help="vlans mode: the rendered interfaces file")
    p.add_argument("--ports", type=int, default=48)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--timeout", type=float, default=900)
    args = p.parse_args(argv)
    refuse_host_namespaces(args.host_netns, args.host_mntns)
    tool = Tool(args.tool, args.venv_bin, args.pythonpath)
    if args.mode == "vlans":
        json.dump(run_vlans(args, tool), sys.stdout)
        return 0
    plug_in_nic()
    if args.mode == "profile":
        json.dump(run_profile(args, tool), sys.stdout)
        return 0
    env = tool.env()
    nets = sdn.vnets(args.vnets)
    with open(args.sdn) as f:
        original = f.read()
    addresses = {v.name: v.gateway.with_prefixlen for v in nets}
    out: dict = {"tool": args.tool, "netcfgd": args.netcfgd, "notes": []}

    boot = timed(tool.argv("ifup", "-a"), env)
    out["boot"] = summary(boot)
    if boot["rc"] != 0:
        out["notes"].append(f"ifup -a exit {boot['rc']}: {brief_err(boot)}")
    out["census_boot"] = census(nets, addresses)

    daemon = start_netcfgd(tool) if args.netcfgd else None
    try:
        polls = []
        for _ in range(args.polls):
            run = timed(tool.argv("ifquery", "-a", "-c", "-o", "json"), env)
            polls.append({**summary(run), **verdict_counts(run["stdout"])})
            if run["rc"] != 0 and len(out["notes"]) < 5:
                out["notes"].append(f"ifquery -c exit {run['rc']}: {brief_err(run)}")
        out["polls"] = polls

        noop = []
        for _ in range(args.reloads):
            run = timed(tool.argv("ifreload", "-a"), env)
            noop.append(summary(run))
            if run["rc"] != 0 and len(out["notes"]) < 5:
                out["notes"].append(f"no-op ifreload exit {run['rc']}: {brief_err(run)}")
        out["reload_noop"] = noop
        out["census_noop"] = census(nets, addresses)

        edited_vnet = nets[len(nets) // 2]
        edits = []
        for i in range(args.reloads):
            flip = i % 2 == 0          # move it, then move it back
            with open(args.sdn, "w") as f:   # in place: the bind mount sees the same inode
                f.write(sdn.with_one_line_edited(original, edited_vnet, flip))
            run = timed(tool.argv("ifreload", "-a"), env)
            want = sdn.edited_address(edited_vnet, flip).with_prefixlen
            have = kernel_view().get(edited_vnet.name, {}).get("v4", set())
            edits.append({**summary(run), "vnet": edited_vnet.name, "want": want,
                          "kernel": sorted(have), "applied": have == {want}})
            if run["rc"] != 0 and len(out["notes"]) < 5:
                out["notes"].append(f"ifreload after edit exit {run['rc']}: {brief_err(run)}")
        out["reload_edit"] = edits
        with open(args.sdn, "w") as f:
            f.write(original)
        last = timed(tool.argv("ifquery", "-a", "-c", "-o", "json"), env)
        out["poll_after"] = {**summary(last), **verdict_counts(last["stdout"])}
    finally:
        if daemon is not None:
            daemon.terminate()
            try:
                daemon.wait(10)
            except subprocess.TimeoutExpired:
                daemon.kill()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
