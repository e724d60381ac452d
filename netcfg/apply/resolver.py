"""dns-nameservers, dns-search and dns-domain: the resolver settings an
ifupdown2 file writes on an interface (docs/compat.md).

ifupdown2 has no resolver addon: Debian's resolvconf package hooks
/etc/network/if-up.d/000resolvconf, which runs `resolvconf -a IFACE.inet`
with the interface's IF_DNS_* lines (systemd-resolved ships a resolvconf
that does the same). netcfg does what that hook does, after a verified
apply, for every up interface that has them (level-triggered: every apply
says it again, which resolvconf takes as a replacement):

* host namespace: resolvconf where it is installed, else systemd-resolved
  (resolvectl dns/domain IFACE) where it runs, else nothing and a line says
  so;
* a tenant namespace NS: /etc/netns/NS/resolv.conf (which `ip netns exec`
  and DHCP clients started there bind over /etc/resolv.conf), merged from
  the namespace's interfaces in name order; written only when it changes.

Where each goes is configurable (NETCFG_ETC_NETNS, NETCFG_HOST_RESOLVER:
auto, none, resolvconf, resolved, or file:PATH, a resolv.conf to write), so
tests point both into their sandbox and never touch the host's resolver.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass

from netcfg.model.model import ROOT_NETNS, ConfigObject, Model

LOG = logging.getLogger("netcfg.resolver")
ATTRIBUTES = ("dns-nameservers", "dns-search", "dns-domain")
_TIMEOUT_S = 30
_HEADER = "# written by netcfg from dns-nameservers/dns-search of: {}\n"


@dataclass(frozen=True)
class Resolver:
    etc_netns: str = "/etc/netns"
    host: str = "auto"

    @classmethod
    def from_environment(cls) -> "Resolver":
        return cls(os.environ.get("NETCFG_ETC_NETNS", "/etc/netns"),
                   os.environ.get("NETCFG_HOST_RESOLVER", "auto"))

    def update(self, model: Model) -> list[str]:
        """Tell the resolvers what the up interfaces of ``model`` say; what
        was done, one line each."""
        by_netns: dict[str, list[ConfigObject]] = {}
        for obj in model.interfaces.values():
            if obj.auto and not obj.attrs.get("link-down") and \
                    any(a in obj.attrs for a in ATTRIBUTES):
                by_netns.setdefault(obj.netns, []).append(obj)
        done: list[str] = []
        for netns, objs in sorted(by_netns.items()):
            objs.sort(key=lambda o: o.name)
            try:
                if netns == ROOT_NETNS:
                    done += self._host(objs)
                else:
                    done += self._namespace(netns, objs)
            except (OSError, subprocess.SubprocessError) as error:
                done.append(f"resolver of {netns or 'the host'}: not updated: {error}")
        for line in done:
            LOG.info("%s", line)
        return done

    def _namespace(self, netns: str, objs: list[ConfigObject]) -> list[str]:
        path = os.path.join(self.etc_netns, netns, "resolv.conf")
        text = _HEADER.format(", ".join(o.name for o in objs)) + resolv_conf(objs)
        if _read(path) == text:
            return []
        _write(path, text)
        return [f"wrote {path} ({_summary(objs)})"]

    def _host(self, objs: list[ConfigObject]) -> list[str]:
        how = self.host
        if how == "auto":
            how = ("resolvconf" if shutil.which("resolvconf") else
                   "resolved" if shutil.which("resolvectl")
                   and os.path.isdir("/run/systemd/resolve") else "none")
        if how == "none":
            return [f"dns settings of {_summary(objs)} not applied: no resolvconf or "
                    f"systemd-resolved on this host"]
        if how.startswith("file:"):
            path = how[len("file:"):]
            text = _HEADER.format(", ".join(o.name for o in objs)) + resolv_conf(objs)
            if _read(path) != text:
                _write(path, text)
                return [f"wrote {path} ({_summary(objs)})"]
            return []
        done = []
        for obj in objs:
            if how == "resolvconf":
                # As ifupdown's if-up.d/000resolvconf: one record per IFACE.ADDRFAM.
                _run(["resolvconf", "-a", f"{obj.name}.inet"], resolv_conf([obj]))
            else:
                _run(["resolvectl", "dns", obj.name,
                      *[str(a) for a in obj.attrs.get("dns-nameservers", ())]])
                _run(["resolvectl", "domain", obj.name, *_search(obj)])
            done.append(f"{how}: {obj.name} ({_summary([obj])})")
        return done


def resolv_conf(objs: list[ConfigObject]) -> str:
    servers: list[str] = []
    search: list[str] = []
    for obj in objs:
        servers += [str(a) for a in obj.attrs.get("dns-nameservers", ()) if str(a) not in servers]
        search += [d for d in _search(obj) if d not in search]
    lines = [f"nameserver {s}" for s in servers]
    if search:
        lines.append("search " + " ".join(search))
    return "".join(line + "\n" for line in lines)


def _search(obj: ConfigObject) -> list[str]:
    domain = obj.attrs.get("dns-domain")
    return ([domain] if domain else []) + list(obj.attrs.get("dns-search", ()))


def _summary(objs: list[ConfigObject]) -> str:
    return ", ".join(o.name for o in objs)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _write(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o755)   # not the daemon's UMask=077: tenants' processes read it
    partial = f"{path}.netcfg-new"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(text)
        # Every user of the namespace resolves names through it (issue 23 M4),
        # whatever umask netcfg runs under.
        os.fchmod(f.fileno(), 0o644)
    os.replace(partial, path)   # never a half-written resolv.conf


def _run(argv: list[str], stdin: str = "") -> None:
    subprocess.run(argv, input=stdin.encode(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=_TIMEOUT_S, check=True)
