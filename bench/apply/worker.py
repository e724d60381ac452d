#!/usr/bin/env python3
"""The inside half of bench/apply: one measurement, in the sandbox it was started in.

    bench/apply/run.py starts, for each measurement, a fresh private mount + network namespace
    (bench/common/sandbox.py, with a tmpfs over /run) and runs there

        .venv/bin/python bench/apply/worker.py MEASUREMENT --config DIR --set K=V ... [options]

It refuses to run unless its network and mount namespaces differ from PID 1's. It prints one
JSON object on stdout: the times it took (wall and CPU, of this process and its children) and
what it saw; run.py makes the table. Whatever a measurement builds, it tears down again
(untimed, by group and namespace: fast) before it exits, so the kernel's cleanup of one
measurement does not run into the next one's time.

Measurements (the objects are those of the config: veth pairs from the root namespace into
tenant namespaces, an address on each end, both ends up):

  netcfg          compile (timed apart), then `apply(model, KernelSession())` in-process, then,
                  after --settle seconds, a second apply from a fresh session (the no-op)
  cli             `netcfg apply -c DIR --set ... --json` end to end, twice (the second a no-op)
  iproute2        `ip -batch` of `netns add` lines, `ip -force -batch` of the root namespace's
                  link/addr/up lines (veths made with `peer name X netns NS`), then one
                  `ip -n NS -batch` per namespace (the peers' addresses and up)
  teardown-empty  set up with netcfg (untimed), then apply an empty config in-process
  teardown-down   set up with netcfg, then netcfg.apply.execute.down(everything=True) in-process
                  (`netcfg down --all`: netcfg's devices by group, the config's namespaces)
  teardown-ip     set up with netcfg, then one `ip -batch`: `link del` per root-side device,
                  `netns del` per namespace
  teardown-group  set up with netcfg, then `ip link delete group 28259` and one `ip -batch` of
                  `netns del` lines; and, apart, netcfg's own bulk request (delete_group) with
                  NetnsDir.delete_many (--via netcfg)
  read            set up with netcfg, then KernelSession.read of every namespace (RtnlSocket
                  counters), against `ip -d link show` + `ip addr show` in each namespace
                  (netlink bytes counted with strace when it is installed)
  read-netcfg     just the netcfg read (run by `read` under strace, to cross-check counters)
  ifupdown2       `ifup -a -i FILE` (Debian's python; run.py gives ifupdown2's isolation), then
                  what the kernel has compared with what FILE asks for
"""

from __future__ import annotations

import argparse
import cProfile
import ipaddress
import json
import os
import pstats
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

GROUP = 28259   # netcfg/model/tags.py NETCFG_GROUP; iproute2's side is tagged the same
SYSTEM_PYTHON = "/usr/bin/python3"


class Refused(SystemExit):
    pass


def _outermost_ns_inode(kind: str) -> int:
    """The namespace this process tree started in: PID 1's or, where PID 1's cannot be read
    (a container's may be hidden even from root), the farthest readable ancestor's (as
    tests/kernel_env.py does). run.py is such an ancestor, in the host's namespaces."""
    found = os.stat(f"/proc/self/ns/{kind}").st_ino
    pid = os.getppid()
    try:
        while pid > 1:
            found = os.stat(f"/proc/{pid}/ns/{kind}").st_ino
            with open(f"/proc/{pid}/status") as f:
                pid = int(next(ln.split()[1] for ln in f if ln.startswith("PPid:")))
        found = os.stat(f"/proc/1/ns/{kind}").st_ino
    except OSError:
        pass
    return found


def _mount_device(path: str, mountinfo: str) -> str | None:
    """major:minor of the mount that holds ``path`` in the mount table ``mountinfo``."""
    best, best_len = None, -1
    with open(mountinfo) as f:
        for line in f:
            fields = line.split()
            point = fields[4]
            if (path == point or path.startswith(point.rstrip("/") + "/")) \
                    and len(point) > best_len:
                best, best_len = fields[2], len(point)
    return best


def _outer_devices() -> set[str] | None:
    """major:minor of every mount of the farthest ancestor in another mount namespace (mount
    ids are renumbered in a copied namespace; a filesystem's device number is not)."""
    own, pid, outer = os.stat("/proc/self/ns/mnt").st_ino, os.getppid(), None
    try:
        while pid > 1:
            if os.stat(f"/proc/{pid}/ns/mnt").st_ino != own:
                outer = pid
            with open(f"/proc/{pid}/status") as f:
                pid = int(next(ln.split()[1] for ln in f if ln.startswith("PPid:")))
    except OSError:
        pass
    if outer is None:
        return None
    with open(f"/proc/{outer}/mountinfo") as f:
        return {line.split()[2] for line in f}


def check_sandbox(private_run: bool) -> None:
    """Never on the host's network: our net and mnt namespaces must differ from those this
    process tree started in. With ``private_run`` (a measurement that makes namespaces),
    /run/netns must also lie on a mount the host cannot see (run.py's tmpfs over /run), so
    no namespace file is ever created, or deleted, in the host's /run/netns."""
    if os.geteuid() != 0:
        raise Refused("worker.py: needs root")
    for kind in ("net", "mnt"):
        if os.stat(f"/proc/self/ns/{kind}").st_ino == _outermost_ns_inode(kind):
            raise Refused(f"worker.py: still in the host's {kind} namespace; refusing to run "
                          "(bench/apply/run.py starts me in a sandbox)")
    if private_run:
        outer = _outer_devices()
        ours = _mount_device("/run/netns", "/proc/self/mountinfo")
        if outer is None or ours is None or ours in outer:
            raise Refused("worker.py: /run/netns is not on a mount private to this sandbox; "
                          "refusing to make namespaces (run.py mounts a tmpfs over /run)")


# ---- timing ---------------------------------------------------------------------------------

@dataclass
class Timed:
    wall: float
    cpu: float   # user + system of this process and the children it waited for

    def add(self, other: "Timed") -> "Timed":
        return Timed(self.wall + other.wall, self.cpu + other.cpu)


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[Timed, Any]:
    cpu, start = _cpu(), time.perf_counter()
    value = fn()
    return Timed(time.perf_counter() - start, _cpu() - cpu), value


def run(argv: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and proc.returncode != 0:
        raise SystemExit(f"worker.py: {' '.join(argv[:6])} ... failed (exit {proc.returncode}):"
                         f"\n{proc.stderr.strip()[-2000:]}")
    return proc


def run_timed(argv: list[str], check: bool = True) -> tuple[Timed, subprocess.CompletedProcess]:
    return timed(lambda: run(argv, check=check))


# ---- the objects ----------------------------------------------------------------------------

def compile_model(config: str, variables: dict[str, Any]):
    from netcfg.compile.pipeline import ConfigSource, compile_config
    return compile_config(ConfigSource(path=config, variables=variables)).model


@dataclass
class Objects:
    """What the config asks for, as iproute2 needs it."""

    namespaces: list[str]
    # (root-side name, peer name, peer namespace, root-side addresses, peer addresses)
    pairs: list[tuple[str, str, str, list[str], list[str]]]

    @property
    def expected(self) -> dict[str, int]:
        return {"links": 2 * len(self.pairs), "up": 2 * len(self.pairs),
                "ipv4": sum(len(a) + len(b) for _, _, _, a, b in self.pairs)}


def objects_of(model) -> Objects:
    """The veth pairs of the model, owned by their root-namespace side."""
    pairs, seen = [], set()
    for (netns, name), obj in model.interfaces.items():
        if netns or obj.kind != "veth":
            continue
        peer, peer_ns = obj.attrs["veth-peer-name"], obj.attrs.get("veth-peer-netns", "")
        if (peer_ns, peer) in seen:
            continue   # both ends in the root namespace: the pair is counted once
        seen.add(("", name))
        other = model.interfaces.get((peer_ns, peer))
        pairs.append((name, peer, peer_ns, list(obj.attrs.get("address", [])),
                      list(other.attrs.get("address", [])) if other else []))
    return Objects(sorted(model.namespaces), pairs)


def iproute2_batches(objs: Objects, directory: str) -> tuple[str, str, dict[str, str]]:
    """Write the batch files: namespaces, the root namespace, one per tenant namespace."""
    def write(name: str, lines: list[str]) -> str:
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    netns = write("netns.batch", [f"netns add {n}" for n in objs.namespaces])
    adds, addrs, ups = [], [], []
    per_ns: dict[str, list[str]] = {n: [] for n in objs.namespaces}
    peer_ups: dict[str, list[str]] = {n: [] for n in objs.namespaces}
    for name, peer, peer_ns, addresses, peer_addresses in objs.pairs:
        # The same attributes netcfg sends: the group tag on both ends, the peer made inside
        # its namespace (or beside it: the root-namespace file of (b)).
        adds.append(f"link add {name} group {GROUP} type veth peer name {peer} group {GROUP}"
                    + (f" netns {peer_ns}" if peer_ns else ""))
        addrs += [f"addr add {a} dev {name}" for a in addresses]
        ups.append(f"link set {name} up")
        if peer_ns:
            per_ns[peer_ns] += [f"addr add {a} dev {peer}" for a in peer_addresses]
            peer_ups[peer_ns].append(f"link set {peer} up")
        else:
            addrs += [f"addr add {a} dev {peer}" for a in peer_addresses]
            ups.append(f"link set {peer} up")
    root = write("root.batch", adds + addrs + ups)
    tenants = {n: write(f"{n}.batch", per_ns[n] + peer_ups[n]) for n in objs.namespaces}
    return netns, root, tenants


# ---- reading back with iproute2 (untimed checks) --------------------------------------------

def ip_json(netns: str, *args: str) -> list[dict]:
    out = run(["ip", "-j", *(["-n", netns] if netns else []), *args]).stdout
    return json.loads(out) if out.strip() else []


def census(namespaces: list[str]) -> dict[str, int]:
    """Links (lo aside), links up, IPv4 addresses: as iproute2 reads them, all namespaces."""
    links = up = ipv4 = 0
    for netns in ["", *namespaces]:
        for link in ip_json(netns, "addr", "show"):
            if link.get("ifname") == "lo":
                continue
            links += 1
            up += "UP" in link.get("flags", [])
            ipv4 += sum(1 for a in link.get("addr_info", []) if a.get("family") == "inet")
    return {"links": links, "up": up, "ipv4": ipv4}


def existing_namespaces() -> list[str]:
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


def tag_all_devices() -> None:
    """Put every device but lo in our group (ifupdown2 made them untagged), so that cleanup()
    removes them in one request instead of leaving them to the namespace's slow teardown."""
    names = [link["ifname"] for link in ip_json("", "link", "show") if link["ifname"] != "lo"]
    with tempfile.NamedTemporaryFile("w", suffix=".batch") as f:
        f.write("".join(f"link set dev {n} group {GROUP}\n" for n in names))
        f.flush()
        run(["ip", "-force", "-batch", f.name], check=False)


def cleanup(namespaces: bool) -> None:
    """Tear down fast and synchronously (untimed): the group in the root namespace (a veth's
    peer goes with it), then, with ``namespaces`` (only where /run/netns is the sandbox's
    own), the namespaces, now empty."""
    run(["ip", "link", "delete", "group", str(GROUP)], check=False)
    names = existing_namespaces() if namespaces else []
    if names:
        with tempfile.NamedTemporaryFile("w", suffix=".batch") as f:
            f.write("".join(f"netns del {n}\n" for n in names))
            f.flush()
            run(["ip", "-force", "-batch", f.name], check=False)


# ---- netcfg ---------------------------------------------------------------------------------

def timed_session_class():
    from netcfg.kernel.session import KernelSession

    class TimedSession(KernelSession):
        """A KernelSession that notes how long each read took (apply reads three times)."""

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.reads: list[tuple[int, float]] = []

        def read(self, names, **options):
            names = list(names)
            start = time.perf_counter()
            try:
                return super().read(names, **options)
            finally:
                self.reads.append((len(names), time.perf_counter() - start))

        def netlink(self) -> dict[str, int]:
            total: dict[str, int] = {}
            for sock in self.sockets.values():
                for k, v in asdict(sock.counters).items():
                    total[k] = total.get(k, 0) + v
            return total

    return TimedSession


def apply_once(model, profile_to: str | None = None, down: bool = False) -> dict[str, Any]:
    """One apply (``down``: netcfg.apply.execute.down(model, everything=True), `netcfg down --all`)
    from a fresh session, as one `netcfg` command would. A failure is reported, not raised:
    its time and message are results too."""
    from netcfg.apply.execute import apply
    from netcfg.model.errors import NetcfgError

    session = timed_session_class()()
    profiler = cProfile.Profile() if profile_to else None

    def go():
        if down:
            from netcfg.apply.execute import down as take_down
            return take_down(model, session, everything=True)
        return apply(model, session)

    try:
        if profiler:
            profiler.enable()
        error, cpu0, start = None, _cpu(), time.perf_counter()
        try:
            result = go()
        except NetcfgError as e:
            result, error = None, f"{type(e).__name__}: {e}"
        t = Timed(time.perf_counter() - start, _cpu() - cpu0)
        if profiler:
            profiler.disable()
            write_profile(profiler, profile_to)
        return {"time": asdict(t), "error": error,
                "summary": result.summary() if result else {"verified": False},
                "reads": [{"namespaces": n, "seconds": s} for n, s in session.reads],
                "netlink": session.netlink()}
    finally:
        session.close()


def write_profile(profiler: cProfile.Profile, path: str) -> None:
    profiler.dump_stats(path + ".pstats")
    with open(path, "w") as f:
        for order in ("cumulative", "tottime"):
            f.write(f"==== sorted by {order} ====\n")
            pstats.Stats(profiler, stream=f).strip_dirs().sort_stats(order).print_stats(35)


def setup_with_netcfg(model, settle: float) -> dict[str, Any]:
    first = apply_once(model)
    if not first["summary"]["verified"]:
        raise SystemExit(f"worker.py: netcfg's setup apply failed: {first['error']}")
    time.sleep(settle)
    return first


def measure_netcfg(args, variables) -> dict[str, Any]:
    t_compile, model = timed(lambda: compile_model(args.config, variables))
    objs = objects_of(model)
    first = apply_once(model, args.profile)
    state = census(objs.namespaces)
    time.sleep(args.settle)
    second = apply_once(model)
    floor = kernel_floor(model.netns_names())
    return {"compile": asdict(t_compile), "first": first, "noop": second, "census": state,
            "expected": objs.expected, "profiled": bool(args.profile), "floor": floor}


def kernel_floor(names: list[str]) -> dict[str, Any]:
    """What any no-op that reads the kernel costs at least: from a fresh session, a socket
    in each namespace and the dumps KernelSession.read makes (links, addresses per family,
    netcfg's routes), each message received and dropped, nothing parsed or compared."""
    from netcfg.netlink.nlmsg import (AF_INET, AF_INET6, AF_UNSPEC, RTM_GETADDR, RTM_GETLINK,
                                      RTM_GETROUTE, getaddr_dump, getlink_dump, getroute_dump)
    from netcfg.kernel.session import KernelSession
    from netcfg.model.tags import RTPROT_NETCFG
    dumps = ((RTM_GETLINK, getlink_dump()), (RTM_GETADDR, getaddr_dump(AF_INET)),
             (RTM_GETADDR, getaddr_dump(AF_INET6)),
             (RTM_GETROUTE, getroute_dump(AF_UNSPEC, protocol=RTPROT_NETCFG)))
    session = KernelSession()
    try:
        messages, cpu0, start = 0, _cpu(), time.perf_counter()
        session.open_sockets(names)
        sockets = [session.socket(n) for n in names]
        opened = time.perf_counter() - start
        for sock in sockets:
            for msg_type, payload in dumps:
                for _ in sock.dump(msg_type, payload):
                    messages += 1
        t = Timed(time.perf_counter() - start, _cpu() - cpu0)
        return {"time": asdict(t), "sockets_seconds": opened, "messages": messages,
                "bytes": sum(sock.counters.bytes_received for sock in sockets)}
    finally:
        session.close()


def measure_cli(args, variables) -> dict[str, Any]:
    netcfg = os.path.join(REPO, ".venv", "bin", "netcfg")
    if not os.access(netcfg, os.X_OK):
        netcfg = shutil.which("netcfg") or "netcfg"
    argv = [netcfg, "apply", "-c", args.config, "--json"]
    for k, v in variables.items():
        argv += ["--set", f"{k}={json.dumps(v)}"]
    t_first, p_first = run_timed(argv)
    namespaces = existing_namespaces()
    state = census(namespaces)
    time.sleep(args.settle)
    t_noop, p_noop = run_timed(argv)
    return {"first": {"time": asdict(t_first), "summary": json.loads(p_first.stdout)["summary"]},
            "noop": {"time": asdict(t_noop), "summary": json.loads(p_noop.stdout)["summary"]},
            "census": state, "argv": argv}


def measure_iproute2(args, variables) -> dict[str, Any]:
    """`ip -batch` of the config's objects; with --interfaces, of that file's (the root
    namespace subset of (b): the kernel's floor for the work ifupdown2 is given)."""
    objs = objects_of(compile_model(args.interfaces, {}) if args.interfaces
                      else compile_model(args.config, variables))
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as d:
        netns_batch, root_batch, tenant_batches = iproute2_batches(objs, d)
        t_netns, _ = run_timed(["ip", "-batch", netns_batch])
        t_root, p_root = run_timed(["ip", "-force", "-batch", root_batch], check=False)
        t_tenants, failed = Timed(0.0, 0.0), []
        for netns, path in tenant_batches.items():
            t, p = run_timed(["ip", "-n", netns, "-batch", path], check=False)
            t_tenants = t_tenants.add(t)
            if p.returncode:
                failed.append(f"{netns}: {p.stderr.strip()[-300:]}")
        lines = sum(1 for _ in open(root_batch)) + sum(
            sum(1 for _ in open(p)) for p in tenant_batches.values())
    total = t_netns.add(t_root).add(t_tenants)
    return {"netns": asdict(t_netns), "root": asdict(t_root), "tenants": asdict(t_tenants),
            "total": asdict(total), "processes": 2 + len(tenant_batches), "lines": lines,
            "errors": ([p_root.stderr.strip()[-300:]] if p_root.returncode else []) + failed,
            "census": census(objs.namespaces), "expected": objs.expected}


# ---- teardown -------------------------------------------------------------------------------

def leftovers() -> dict[str, int]:
    names = existing_namespaces()
    state = census(names)
    return {"namespaces": len(names), "links": state["links"]}


def measure_teardown_empty(args, variables) -> dict[str, Any]:
    from netcfg.model.model import Model

    model = compile_model(args.config, variables)
    setup = setup_with_netcfg(model, args.settle)
    empty = apply_once(Model())
    return {"setup": setup["time"], "teardown": empty, "left": leftovers()}


def measure_teardown_down(args, variables) -> dict[str, Any]:
    model = compile_model(args.config, variables)
    setup = setup_with_netcfg(model, args.settle)
    down = apply_once(model, down=True)
    return {"setup": setup["time"], "teardown": down, "left": leftovers()}


def measure_teardown_ip(args, variables) -> dict[str, Any]:
    model = compile_model(args.config, variables)
    objs = objects_of(model)
    setup = setup_with_netcfg(model, args.settle)
    with tempfile.NamedTemporaryFile("w", suffix=".batch") as f:
        f.write("".join(f"link del {name}\n" for name, *_ in objs.pairs))
        f.write("".join(f"netns del {n}\n" for n in objs.namespaces))
        f.flush()
        t, p = run_timed(["ip", "-force", "-batch", f.name], check=False)
    return {"setup": setup["time"], "teardown": asdict(t), "lines": len(objs.pairs)
            + len(objs.namespaces), "errors": p.stderr.strip()[-300:] if p.returncode else "",
            "left": leftovers()}


def measure_teardown_group(args, variables) -> dict[str, Any]:
    model = compile_model(args.config, variables)
    objs = objects_of(model)
    setup = setup_with_netcfg(model, args.settle)
    if args.via == "netcfg":
        from netcfg.netlink.encode import delete_group

        session = timed_session_class()()
        try:
            t_group, result = timed(lambda: session.socket("").transact([delete_group("")]))
            names = session.nsdir.list_names()
            t_netns, _ = timed(lambda: session.nsdir.delete_many(names))
        finally:
            session.close()
        errors = [str(e) for e in result.failed()]
    else:
        t_group, p = run_timed(["ip", "link", "delete", "group", str(GROUP)], check=False)
        errors = [p.stderr.strip()] if p.returncode else []
        with tempfile.NamedTemporaryFile("w", suffix=".batch") as f:
            f.write("".join(f"netns del {n}\n" for n in existing_namespaces()))
            f.flush()
            t_netns, _ = run_timed(["ip", "-batch", f.name])
    return {"setup": setup["time"], "group": asdict(t_group), "netns": asdict(t_netns),
            "teardown": asdict(t_group.add(t_netns)), "via": args.via, "errors": errors,
            "left": leftovers(), "namespaces": len(objs.namespaces)}


# ---- reading state --------------------------------------------------------------------------

def netcfg_read(names: list[str], again: bool = True) -> dict[str, Any]:
    """KernelSession.read of every namespace from a fresh session: time and netlink counters;
    then (``again``) a second read on the same sockets, and what each of the read's dumps
    costs in the root namespace and in one tenant's."""
    session = timed_session_class()()
    try:
        t, _ = timed(lambda: session.read(names))
        out: dict[str, Any] = {"time": asdict(t), "netlink": session.netlink(),
                               "namespaces": len(names)}
        if again:
            out["per_namespace"] = {n: asdict(session.states[n].counts) for n in names[:2]}
            out["again"] = asdict(timed(lambda: session.read(names))[0])
            out["dumps"] = {n: dump_sizes(session.socket(n)) for n in names[:2]}
            out["link_dump_bytes"] = sum(link_dump_bytes(session.socket(n)) for n in names)
        return out
    finally:
        session.close()


def link_dump_bytes(sock) -> int:
    """Bytes of one link dump (RTEXT_FILTER_SKIP_STATS) in the namespace of ``sock``: what
    any reader of every link's attributes receives at least from this kernel."""
    from netcfg.netlink.nlmsg import RTM_GETLINK, getlink_dump
    before = sock.counters.bytes_received
    for _ in sock.dump(RTM_GETLINK, getlink_dump()):
        pass
    return sock.counters.bytes_received - before


def dump_sizes(sock) -> dict[str, dict[str, int]]:
    """Bytes and messages of each dump KernelSession.read makes, on one socket."""
    from netcfg.netlink.nlmsg import (AF_UNSPEC, RTM_GETADDR, RTM_GETLINK, RTM_GETROUTE,
                                      getaddr_dump, getlink_dump, getroute_dump)
    from netcfg.model.tags import RTPROT_NETCFG

    out: dict[str, Any] = {}
    for label, msg_type, payload in (
            ("link", RTM_GETLINK, getlink_dump()),
            ("addr", RTM_GETADDR, getaddr_dump(AF_UNSPEC)),
            ("route proto 110", RTM_GETROUTE, getroute_dump(AF_UNSPEC, protocol=RTPROT_NETCFG))):
        before = sock.counters.copy()
        attributes: dict[str, int] = {}
        messages = 0
        for _type, _flags, message in sock.dump(msg_type, payload):
            messages += 1
            if msg_type == RTM_GETLINK:
                link_attribute_bytes(message, attributes)
        spent = sock.counters.since(before)
        out[label] = {"messages": messages, "bytes": spent.bytes_received,
                      "recv_calls": spent.recv_calls}
        if attributes:
            out[label]["attribute_bytes"] = dict(sorted(attributes.items(),
                                                        key=lambda kv: -kv[1]))
    return out


# Top-level IFLA_* numbers (linux/if_link.h), and inside IFLA_AF_SPEC the families, and inside
# AF_INET6 the IFLA_INET6_*: where a link message's bytes go.
IFLA_NAMES = dict(enumerate((
    "UNSPEC", "ADDRESS", "BROADCAST", "IFNAME", "MTU", "LINK", "QDISC", "STATS", "COST",
    "PRIORITY", "MASTER", "WIRELESS", "PROTINFO", "TXQLEN", "MAP", "WEIGHT", "OPERSTATE",
    "LINKMODE", "LINKINFO", "NET_NS_PID", "IFALIAS", "NUM_VF", "VFINFO_LIST", "STATS64",
    "VF_PORTS", "PORT_SELF", "AF_SPEC", "GROUP", "NET_NS_FD", "EXT_MASK", "PROMISCUITY",
    "NUM_TX_QUEUES", "NUM_RX_QUEUES", "CARRIER", "PHYS_PORT_ID", "CARRIER_CHANGES",
    "PHYS_SWITCH_ID", "LINK_NETNSID", "PHYS_PORT_NAME", "PROTO_DOWN", "GSO_MAX_SEGS",
    "GSO_MAX_SIZE", "PAD", "XDP", "EVENT", "NEW_NETNSID", "IF_NETNSID", "CARRIER_UP_COUNT",
    "CARRIER_DOWN_COUNT", "NEW_IFINDEX", "MIN_MTU", "MAX_MTU", "PROP_LIST", "ALT_IFNAME",
    "PERM_ADDRESS", "PROTO_DOWN_REASON", "PARENT_DEV_NAME", "PARENT_DEV_BUS_NAME",
    "GRO_MAX_SIZE", "TSO_MAX_SIZE", "TSO_MAX_SEGS", "ALLMULTI", "DEVLINK_PORT",
    "GSO_IPV4_MAX_SIZE", "GRO_IPV4_MAX_SIZE", "DPLL_PIN", "MAX_PACING_OFFLOAD_HORIZON",
    "NETNS_IMMUTABLE", "HEADROOM", "TAILROOM")))
AF_NAMES = {2: "inet", 7: "bridge", 10: "inet6", 28: "mpls", 46: "mctp"}
INET6_NAMES = {1: "FLAGS", 2: "CONF", 3: "STATS", 4: "MCAST", 5: "CACHEINFO", 6: "ICMP6STATS",
               7: "TOKEN", 8: "ADDR_GEN_MODE", 9: "RA_MTU"}
IFINFOMSG_SIZE = 16


def _rtattrs(data, start: int, end: int):
    """(type, total length with padding, payload offset, payload end) of each attribute."""
    while start + 4 <= end:
        length, kind = int.from_bytes(data[start:start + 2], sys.byteorder), \
            int.from_bytes(data[start + 2:start + 4], sys.byteorder)
        if length < 4:
            return
        padded = (length + 3) & ~3
        yield kind & 0x3FFF, min(padded, end - start), start + 4, start + length
        start += padded


def link_attribute_bytes(message, totals: dict[str, int]) -> None:
    """Add the bytes of each attribute of one RTM_NEWLINK (AF_SPEC split by family, inet6
    by its own attributes) to ``totals``; the fixed header counts as "ifinfomsg+nlmsghdr"."""
    totals["ifinfomsg+nlmsghdr"] = totals.get("ifinfomsg+nlmsghdr", 0) + IFINFOMSG_SIZE + 16
    for kind, size, begin, end in _rtattrs(message, IFINFOMSG_SIZE, len(message)):
        name = IFLA_NAMES.get(kind, str(kind))
        if name != "AF_SPEC":
            totals[name] = totals.get(name, 0) + size
            continue
        totals["AF_SPEC header"] = totals.get("AF_SPEC header", 0) + 4
        for family, fsize, fbegin, fend in _rtattrs(message, begin, end):
            fname = f"AF_SPEC {AF_NAMES.get(family, family)}"
            if family != 10:
                totals[fname] = totals.get(fname, 0) + fsize
                continue
            totals[fname + " header"] = totals.get(fname + " header", 0) + 4
            for sub, ssize, _b, _e in _rtattrs(message, fbegin, fend):
                sname = f"{fname} {INET6_NAMES.get(sub, sub)}"
                totals[sname] = totals.get(sname, 0) + ssize


STRACE_LINE = re.compile(r"^\d+\s+(recvmsg|recvfrom)\(([^)]*)\)\s+=\s+(-1|0x[0-9a-f]+|\d+)")
MSG_PEEK = 0x2


def strace_recv(path: str) -> dict[str, int]:
    """recvmsg/recvfrom calls and bytes in an `strace -f -e raw=all` log. A MSG_PEEK call
    (iproute2 peeks each datagram's size first) is counted apart: it moves no data."""
    calls = peeks = data = 0
    with open(path) as f:
        for line in f:
            m = STRACE_LINE.match(line)
            if not m or m.group(3) == "-1":
                continue
            args = [a.strip() for a in m.group(2).split(",")]
            flags = int(args[2] if m.group(1) == "recvmsg" else args[3], 0)
            if flags & MSG_PEEK:
                peeks += 1
            else:
                calls += 1
                data += int(m.group(3), 0)
    return {"recv_calls": calls, "peek_calls": peeks, "bytes": data}


def iproute2_read_script(namespaces: list[str], directory: str) -> str:
    path = os.path.join(directory, "read.sh")
    with open(path, "w") as f:
        for netns in namespaces:
            n = f"-n {netns} " if netns else ""
            f.write(f"ip {n}-d link show\nip {n}addr show\n")
    return path


def measure_read(args, variables) -> dict[str, Any]:
    model = compile_model(args.config, variables)
    objs = objects_of(model)
    setup_with_netcfg(model, args.settle)
    names = ["", *objs.namespaces]
    out: dict[str, Any] = {"netcfg": netcfg_read(names)}
    with tempfile.TemporaryDirectory(prefix="bench-apply-read-") as d:
        script = iproute2_read_script(names, d)
        t, p = run_timed(["sh", "-e", script])
        out["iproute2"] = {"time": asdict(t), "output_bytes": len(p.stdout.encode()),
                           "processes": 2 * len(names)}
        strace = shutil.which("strace")
        if strace:
            def traced(argv: list[str], log: str) -> dict[str, int]:
                run([strace, "-f", "-qq", "-e", "trace=recvmsg,recvfrom", "-e", "raw=all",
                     "-o", log, *argv])
                return strace_recv(log)

            out["iproute2"]["strace"] = traced(["sh", "-e", script], os.path.join(d, "ip.log"))
            for label, subset in (("root", [""]), ("one tenant", [objs.namespaces[0]])):
                one = iproute2_read_script(subset, os.path.join(d))
                out["iproute2"].setdefault("strace_per_namespace", {})[label] = traced(
                    ["sh", "-e", one], os.path.join(d, f"ip-{len(label)}.log"))
            out["netcfg"]["strace"] = traced(
                [sys.executable, os.path.abspath(__file__), "read-netcfg", "--config",
                 args.config, *sum((["--set", f"{k}={json.dumps(v)}"]
                                    for k, v in variables.items()), [])],
                os.path.join(d, "netcfg.log"))
    return out


def measure_read_netcfg(args, variables) -> dict[str, Any]:
    objs = objects_of(compile_model(args.config, variables))
    return netcfg_read(["", *objs.namespaces], again=False)


# ---- ifupdown2 ------------------------------------------------------------------------------

def interfaces_file_wants(path: str) -> dict[str, Any]:
    """The `auto` names and `address` lines of an interfaces file (ifupdown2's dialect, as
    netcfg renders it: one attribute per line)."""
    auto, addresses, name = set(), {}, None
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] == "auto":
                auto.update(words[1:])
            elif words[0] == "iface":
                name = words[1]
            elif words[0] == "address" and name and line[:1].isspace():
                addresses.setdefault(name, []).append(
                    str(ipaddress.ip_interface(words[1])))
    return {"auto": auto, "addresses": addresses}


def measure_ifupdown2(args, variables) -> dict[str, Any]:
    wants = interfaces_file_wants(args.interfaces)
    ifup = [SYSTEM_PYTHON, "/usr/sbin/ifup", "-a", "-i", args.interfaces]
    t, p = run_timed(ifup, check=False)
    have = {link["ifname"]: link for link in ip_json("", "addr", "show")}
    missing_dev = sorted(n for n in wants["auto"] if n not in have)
    down = sorted(n for n in wants["auto"] if n in have and "UP" not in have[n].get("flags", []))
    missing_addr = sorted(
        f"{n} {a}" for n, addrs in wants["addresses"].items() for a in addrs
        if n not in have or a not in {f"{i['local']}/{i['prefixlen']}"
                                      for i in have[n].get("addr_info", [])})
    warnings = [ln for ln in p.stderr.splitlines() if ln.startswith("warning:")]
    return {"time": asdict(t), "returncode": p.returncode, "warnings": len(warnings),
            "stderr_tail": p.stderr.strip()[-1500:], "stdout_tail": p.stdout.strip()[-500:],
            "wanted": {"auto": len(wants["auto"]),
                       "addresses": sum(len(a) for a in wants["addresses"].values())},
            "missing_devices": len(missing_dev), "not_up": len(down),
            "missing_addresses": len(missing_addr),
            "examples": {"missing_devices": missing_dev[:5], "not_up": down[:5],
                         "missing_addresses": missing_addr[:5]}}


def measure_netcfg_file(args, variables) -> dict[str, Any]:
    """netcfg applying the very file ifupdown2 gets (in-process, as `netcfg`)."""
    t_compile, model = timed(lambda: compile_model(args.interfaces, {}))
    first = apply_once(model)
    return {"compile": asdict(t_compile), "first": first,
            "census": census(existing_namespaces())}


MEASUREMENTS = {
    "netcfg": measure_netcfg, "cli": measure_cli, "iproute2": measure_iproute2,
    "teardown-empty": measure_teardown_empty, "teardown-ip": measure_teardown_ip,
    "teardown-down": measure_teardown_down,
    "teardown-group": measure_teardown_group, "read": measure_read,
    "read-netcfg": measure_read_netcfg, "ifupdown2": measure_ifupdown2,
    "netcfg-file": measure_netcfg_file,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measurement", choices=sorted(MEASUREMENTS))
    parser.add_argument("--config", default=os.path.join(HERE, "veths"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--settle", type=float, default=2.0,
                        help="seconds between building and the next step (IPv6 DAD settles)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the first apply into FILE")
    parser.add_argument("--via", choices=("ip", "netcfg"), default="ip")
    parser.add_argument("--interfaces", metavar="FILE", help="ifupdown2's file")
    parser.add_argument("--keep", action="store_true", help="skip the final cleanup")
    args = parser.parse_args(argv)
    private_run = args.measurement != "ifupdown2"
    check_sandbox(private_run)
    variables = {}
    for item in args.set:
        key, _, value = item.partition("=")
        variables[key] = json.loads(value)
    try:
        result = MEASUREMENTS[args.measurement](args, variables)
    finally:
        if not args.keep and args.measurement != "read-netcfg":
            if not private_run:
                tag_all_devices()
            cleanup(namespaces=private_run)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
