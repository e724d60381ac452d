"""`inet dhcp` / `inet6 dhcp`: hand the interface to the system's DHCP client
in the interface's own namespace, as ifupdown does, and take it back.

netcfg configures no address on a DHCP interface; it brings the link up and
starts one client per (namespace, interface, family), which owns the
addresses of that family from then on (the diff leaves them alone:
plan/diff.py). The client is ISC dhclient (Debian's isc-dhcp-client).

Why dhclient and not dhcpcd: dhclient takes its pid and lease files on the
command line, so clients of `eth0` in two namespaces never share a file;
dhcpcd names them after the interface only (/run/dhcpcd/eth0-4.pid), and two
tenants' `eth0` would collide. dhcpcd is used only when dhclient is missing,
and then only in the host's namespace (an error names the interface
otherwise).

Namespaces and DNS: a client in namespace NS runs under `ip netns exec NS`,
which overlays /etc/netns/NS/* on /etc. netcfg makes sure
/etc/netns/NS/resolv.conf exists first, so the DNS servers a tenant's DHCP
server hands out land in that namespace's own resolv.conf and never in the
host's /etc/resolv.conf.

What is running is read from the pid files (never from memory), so a later
`netcfg apply`, `netcfg down` or netcfgd finds the clients an earlier run
started: a second apply starts nothing, and an interface that is no longer
`dhcp` (or is gone) has its client stopped before any address is written.

Taking over from ifupdown or ifupdown2: they leave the interface's dhclient
running, its pid in /run/dhclient.IFACE.pid (dhclient6.IFACE.pid for
IPv6). A second client on the same interface would renew the same lease in
parallel and, stopped, flush the addresses the other holds; and stopping
theirs to start netcfg's would flush them too (dhclient-script's STOP).
So netcfg adopts that client: its pid goes into netcfg's pid file, and from
then on it is netcfg's to keep or stop, like one netcfg started.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from typing import Collection, Iterable

from netcfg.apply.confirm import run_dir
from netcfg.model.errors import NetcfgError
from netcfg.model.model import Model
from netcfg.plan.addresses import dhcp_owned
from netcfg.plan.diff import is_up

NETNS_ETC = "/etc/netns"
# Where ifupdown and ifupdown2 have dhclient write its pid file
# (ifupdownaddons/dhclient.py: /run/dhclient.IFACE.pid, /run/dhclient6.IFACE.pid).
IFUPDOWN_RUN_DIR = "/run"


class DhcpError(NetcfgError):
    """A DHCP client could not be started or stopped."""


@dataclass(frozen=True, order=True)
class Lease:
    """One DHCP client's job: an interface, a namespace and a family."""

    netns: str
    iface: str
    family: str  # "4" or "6"

    @property
    def stem(self) -> str:
        # "@" cannot start an interface name, so it stands for the root namespace.
        return f"{self.netns or '@'}/{self.iface}.{self.family}"

    def describe(self) -> str:
        where = f" in netns {self.netns}" if self.netns else ""
        return f"dhcp{'' if self.family == '4' else '6'} client for {self.iface}{where}"


def wanted_leases(model: Model) -> set[Lease]:
    """The clients a (lowered or not) model asks for: every up interface with
    a dhcp method, per family."""
    leases = set()
    for (netns, name), obj in model.interfaces.items():
        attrs = obj.attrs
        # The common case first: most interfaces have no dhcp method at all.
        if (attrs.get("inet") == "dhcp" or attrs.get("inet6") == "dhcp") and is_up(obj):
            # Not the family SLAAC owns (inet6 auto): no client for it.
            leases.update(Lease(netns, name, family) for family in dhcp_owned(obj)
                          if obj.attrs.get("inet6" if family == "6" else "inet") == "dhcp")
    return leases


@dataclass(frozen=True)
class ClientOptions:
    """ifupdown's `inet dhcp` options (interfaces(5)), as dhclient takes them.
    ifupdown hands dhclient only `metric` (-e IF_METRIC=M, which Debian's
    dhclient-script puts on the routes it adds) and `client no` (no -i);
    `hostname`, `client`, `leasehours`/`leasetime` and `vendor` it gives to
    dhcpcd, udhcpc and pump, whose flags say the same to the server as these
    `send` statements of dhclient.conf."""

    hostname: str | None = None
    client: str | None = None
    lease_seconds: int | None = None
    vendor: str | None = None
    metric: int | None = None

    @classmethod
    def of(cls, attrs: dict) -> "ClientOptions":
        hours = attrs.get("leasehours")
        return cls(hostname=attrs.get("hostname"), client=attrs.get("client"),
                   lease_seconds=attrs.get("leasetime", hours * 3600 if hours else None),
                   vendor=attrs.get("vendor"), metric=attrs.get("metric"))

    def send_statements(self) -> list[str]:
        """dhclient.conf lines (DHCPv4 options; strings quoted, as the
        schema keeps quotes and white space out of them)."""
        lines = []
        if self.hostname:
            lines.append(f'send host-name "{self.hostname}";')
        if self.client and self.client != "no":
            lines.append(f'send dhcp-client-identifier "{self.client}";')
        if self.lease_seconds:
            lines.append(f"send dhcp-lease-time {self.lease_seconds};")
        if self.vendor:
            lines.append(f'send vendor-class-identifier "{self.vendor}";')
        return lines


    def dhcpcd_flags(self) -> list[str]:
        """As ifupdown runs dhcpcd: [-h HOSTNAME] [-i VENDOR] [-I CLIENT] [-l
        LEASETIME] [-m METRIC]."""
        flags = []
        for flag, value in (("-h", self.hostname), ("-i", self.vendor),
                            ("-I", None if self.client == "no" else self.client),
                            ("-l", self.lease_seconds), ("-m", self.metric)):
            if value is not None:
                flags += [flag, str(value)]
        return flags


# Read first into a client's own configuration, so its `send` lines add to
# the host's (the request list, the host name Debian's file sends) and,
# coming later, win over them.
SYSTEM_DHCLIENT_CONF = "/etc/dhcp/dhclient.conf"


def options_of(model: Model, lease: Lease) -> ClientOptions:
    obj = model.interfaces.get((lease.netns, lease.iface))
    return ClientOptions.of(obj.attrs) if obj is not None else ClientOptions()


class DhcpClients:
    """The DHCP clients netcfg started, found through their pid files under
    ``directory`` (``<run dir>/dhcp``)."""

    def __init__(self, directory: str, *, netns_etc: str | None = None) -> None:
        self.directory = directory
        # Where resolv.conf goes per namespace: as resolver.py's (L8 of issue 24).
        self.netns_etc = netns_etc or os.environ.get("NETCFG_ETC_NETNS", NETNS_ETC)

    # ------------------------------------------------------------------ state

    def running(self) -> set[Lease]:
        """Clients whose pid file names a live process."""
        return set(self.pids())

    def pids(self) -> dict[Lease, int]:
        """The live clients and their pids (netcfgd watches them: dhcpwatch.py)."""
        found: dict[Lease, int] = {}
        if not os.path.isdir(self.directory):
            return found
        for netns_dir in os.listdir(self.directory):
            path = os.path.join(self.directory, netns_dir)
            for entry in os.listdir(path):
                stem, dot, suffix = entry.rpartition(".")
                iface, _, family = stem.rpartition(".")
                if suffix != "pid" or family not in ("4", "6") or not iface:
                    continue
                lease = Lease("" if netns_dir == "@" else netns_dir, iface, family)
                pid = self._pid(lease)
                if pid is not None:
                    found[lease] = pid
        return found

    def recorded(self, lease: Lease) -> bool:
        """A pid file for ``lease`` exists (its process alive or not):
        stop() removes it, a client that died leaves it."""
        return os.path.exists(self._path(lease, "pid"))

    def _path(self, lease: Lease, suffix: str) -> str:
        return os.path.join(self.directory, f"{lease.stem}.{suffix}")

    def _pid(self, lease: Lease) -> int | None:
        """The client's pid if it is alive and still a DHCP client (a pid
        file can outlive its process and the pid be reused)."""
        found = _client_of(self._path(lease, "pid"), lease.iface)
        return found[0] if found else None

    # ------------------------------------------------------------------ changes

    def stop_all(self, leases: Iterable[Lease]) -> list[Lease]:
        stopped = sorted(leases)
        for lease in stopped:
            self.stop(lease)
        return stopped

    def start(self, lease: Lease, options: ClientOptions = ClientOptions()) -> str:
        os.makedirs(os.path.dirname(self._path(lease, "pid")), mode=0o700, exist_ok=True)
        theirs = ifupdown_client(lease)
        if theirs is not None:
            with open(self._path(lease, "pid"), "w") as f:
                f.write(f"{theirs}\n")
            return f"adopted {lease.describe()}: the dhclient ifupdown started (pid {theirs})"
        argv = self._client_argv(lease, options)
        if lease.netns:
            self._own_resolv_conf(lease.netns)
            argv = ["ip", "netns", "exec", lease.netns, *argv]
        self._call(argv, f"cannot start the {lease.describe()}")
        return f"started {lease.describe()}"

    def stop(self, lease: Lease) -> str:
        """Stop a client; dhclient -x runs its script with reason STOP, which
        removes the addresses it configured."""
        pid = self._pid(lease)
        if pid is not None and shutil.which("dhclient"):
            argv = ["dhclient", f"-{lease.family}", "-x", "-pf", self._path(lease, "pid"),
                    "-lf", self._path(lease, "leases"), lease.iface]
            if lease.netns and os.path.exists(os.path.join("/run/netns", lease.netns)):
                argv = ["ip", "netns", "exec", lease.netns, *argv]
            result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            if result.returncode != 0:
                # The namespace or the interface is gone: nothing to deconfigure.
                _kill(pid)
        elif pid is not None:
            _kill(pid)
        for suffix in ("pid", "leases", "conf"):
            try:
                os.unlink(self._path(lease, suffix))
            except FileNotFoundError:
                pass
        return f"stopped {lease.describe()}"

    def _client_argv(self, lease: Lease, options: ClientOptions = ClientOptions()) -> list[str]:
        if shutil.which("dhclient"):
            # -nw: go to the background at once (the lease arrives later, as
            # with ifupdown's `ifup` of a dhcp interface without waiting).
            argv = ["dhclient", f"-{lease.family}", "-nw", "-pf", self._path(lease, "pid"),
                    "-lf", self._path(lease, "leases")]
            if options.metric is not None:
                argv += ["-e", f"IF_METRIC={options.metric}"]
            sends = options.send_statements() if lease.family == "4" else []
            if sends:
                argv += ["-cf", self._own_conf(lease, sends)]
            return [*argv, lease.iface]
        if shutil.which("dhcpcd"):
            if lease.netns:
                raise DhcpError(f"{lease.describe()}: dhcpcd names its files after the "
                                "interface only, so it cannot serve namespaces; install "
                                "isc-dhcp-client (dhclient)")
            return ["dhcpcd", f"-{lease.family}", "--background", *options.dhcpcd_flags(),
                    lease.iface]
        raise DhcpError(f"{lease.describe()}: no DHCP client found; install isc-dhcp-client "
                        "(dhclient) or dhcpcd-base (dhcpcd)")

    def _own_conf(self, lease: Lease, sends: list[str]) -> str:
        """The client's dhclient.conf: the host's, then ``sends``."""
        path = self._path(lease, "conf")
        try:
            with open(SYSTEM_DHCLIENT_CONF) as f:
                system = f.read()
        except OSError:
            system = ""
        with open(path, "w") as f:
            f.write(system + ("\n" if system and not system.endswith("\n") else "")
                    + "".join(f"{line}\n" for line in sends))
        return path

    def _own_resolv_conf(self, netns: str) -> None:
        path = os.path.join(self.netns_etc, netns, "resolv.conf")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            with open(path, "a"):
                pass
            os.chmod(path, 0o644)

    def _call(self, argv: list[str], failure: str) -> None:
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DhcpError(f"{failure}: {exc}") from None
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise DhcpError(f"{failure}: {argv[0]} exited {result.returncode}"
                            + (f": {detail[-1]}" if detail else ""))


def ifupdown_client(lease: Lease) -> int | None:
    """The pid of the dhclient ifupdown(2) left serving ``lease``: named by its
    pid file, alive, a dhclient of that interface and family, in the lease's
    namespace (a pid file can outlive its process, and /run is shared by
    every namespace)."""
    name = f"dhclient{'6' if lease.family == '6' else ''}.{lease.iface}.pid"
    found = _client_of(os.path.join(IFUPDOWN_RUN_DIR, name), lease.iface)
    if found is None:
        return None
    pid, argv = found
    try:
        theirs = os.stat(f"/proc/{pid}/ns/net").st_ino
        ours = os.stat(os.path.join("/run/netns", lease.netns) if lease.netns
                       else "/proc/self/ns/net").st_ino
    except OSError:
        return None
    if not os.path.basename(argv[0]).startswith(b"dhclient") or \
            (b"-6" in argv) != (lease.family == "6") or theirs != ours:
        return None
    return pid


def _client_of(pid_file: str, iface: str) -> tuple[int, list[bytes]] | None:
    """The pid ``pid_file`` names and its argv, if that process is alive and
    has ``iface`` among its arguments."""
    try:
        with open(pid_file) as f:
            pid = int(f.read().split()[0])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    return (pid, argv) if iface.encode() in argv else None


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def clients() -> DhcpClients:
    """The clients of this host's netcfg (pid files under the run directory)."""
    return DhcpClients(os.path.join(run_dir(), "dhcp"))


def stop_unwanted(target: Model, namespaces: Collection[str], selection=None) -> list[Lease]:
    """Before an apply of ``target`` over ``namespaces`` (or a selection of
    them): stop the running clients there whose interface is no longer dhcp
    (or gone). Returns what was stopped."""
    scope = set(namespaces)
    wanted = wanted_leases(target)

    def considered(lease: Lease) -> bool:
        if lease.netns not in scope:
            return False
        if selection is None:
            return True
        return lease.netns in selection.namespaces or lease.iface in selection.interfaces

    registry = clients()
    return registry.stop_all(lease for lease in registry.running() - wanted if considered(lease))


def start_wanted(target: Model) -> list[str]:
    """After a verified apply: start the clients ``target`` asks for that are
    not running yet."""
    registry = clients()
    return [registry.start(lease, options_of(target, lease))
            for lease in sorted(wanted_leases(target) - registry.running())]


def restart(leases: Iterable[Lease]) -> None:
    """After a reverted apply: the clients stopped before it run again."""
    registry = clients()
    for lease in leases:
        registry.start(lease)


def release(namespaces: Collection[str]) -> list[str]:
    """`netcfg down`: stop the clients in ``namespaces``."""
    registry = clients()
    stopped = registry.stop_all(lease for lease in registry.running() if lease.netns in namespaces)
    return [f"stopped {lease.describe()}" for lease in stopped]
