"""Typed wrapper over the data path (``netcfgd._dataplane``): turns the
compiler's ``volume`` and ``target`` objects into calls on the embedded
multi-namespace iSCSI target, and reads CHAP secret files safely.

    service = TargetService(Dataplane(threads=None))
    service.add_namespace(netns_dir.open("t1"))        # a netcfg.kernel.ns.Netns
    outcome = service.apply(compiled.model)            # volumes, targets, portals
    outcome.changes, outcome.errors                    # what was done, what was refused

A volume whose backing or block size changes is re-opened (its LUNs serve
the new one); a changed size is applied online (initiators get CAPACITY DATA
HAS CHANGED), a shrink refused while its targets have sessions. One object's
error never stops the others. See docs/dataplane.md for the API underneath.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from netcfg.apply.secrets import read_private_file
from netcfg.model.errors import NetcfgError, quote
from netcfg.model.model import ConfigObject, Model

DEFAULT_PORT = 3260
DEFAULT_MAX_CONNECTIONS = 64     # per target: the data path's TARGET_CONNECTIONS


class DataplaneError(NetcfgError):
    """A volume, target or namespace could not be served; the message says why
    and what to do."""


@dataclass(frozen=True)
class VolumeSpec:
    name: str
    backing: str
    size: int | None = None
    block_size: int = 512


@dataclass(frozen=True)
class TargetSpec:
    iqn: str
    netns: str
    portals: tuple[tuple[str, int], ...]
    luns: dict[int, str]
    allow: tuple[str, ...] = ()
    chap_file: str | None = None
    mutual_chap_file: str | None = None
    where: str = ""
    max_connections: int = DEFAULT_MAX_CONNECTIONS


@dataclass
class Outcome:
    """What one `TargetService.apply` did and what it could not do, each a
    line for the operator naming the volume, target or portal."""

    changes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class Secrets:
    """(user, secret) pairs read from files; repr never shows a secret."""

    chap: tuple[str, bytes] | None = None
    mutual_chap: tuple[str, bytes] | None = field(default=None)

    def __repr__(self) -> str:
        users = [p[0] for p in (self.chap, self.mutual_chap) if p]
        return f"Secrets(users={users})"


# The data path's limits (docs/dataplane.md "Memory and connection limits"):
# Dataplane keyword, environment variable of netcfgd, and whether it is a size.
BUDGETS = (("write_budget", "NETCFGD_STORAGE_MEMORY", True),
           ("netns_write_budget", "NETCFGD_STORAGE_NETNS_MEMORY", True),
           ("netns_connections", "NETCFGD_STORAGE_NETNS_CONNECTIONS", False))


def budgets_from_environment(env: Any) -> dict[str, int]:
    """Dataplane keyword arguments from NETCFGD_STORAGE_* (unset: the
    data path's defaults). A bad value is an error that names it."""
    from netcfg.compile.values import parse_size

    found = {}
    for keyword, variable, is_size in BUDGETS:
        text = env.get(variable)
        if text is None:
            continue
        try:
            value = parse_size(text) if is_size else int(text)
        except ValueError:
            value = 0
        if value <= 0:
            example = "1G or 512M" if is_size else "a number like 256"
            raise DataplaneError(f"{variable}={quote(text)} is not {example}")
        found[keyword] = value
    return found


def split_portal(portal: str) -> tuple[str, int]:
    """``10.0.0.1:3260`` / ``[2001:db8::1]:3260`` / ``10.0.0.1`` -> (address, port)."""
    if portal.startswith("["):
        host, _, tail = portal[1:].partition("]")
        return host, int(tail[1:]) if tail.startswith(":") else DEFAULT_PORT
    if portal.count(":") == 1:
        host, port = portal.split(":")
        return host, int(port)
    return portal, DEFAULT_PORT


def volume_spec(obj: ConfigObject) -> VolumeSpec:
    return VolumeSpec(obj.name, obj.attrs["backing"], obj.attrs.get("size"))


def target_spec(obj: ConfigObject) -> TargetSpec:
    return TargetSpec(
        iqn=obj.name,
        netns=obj.netns,
        portals=tuple(split_portal(p) for p in obj.attrs.get("portal", ())),
        luns={lun["lun"]: lun["volume"] for lun in obj.attrs.get("lun", ())},
        allow=tuple(obj.attrs.get("allow-initiator", ())),
        chap_file=obj.attrs.get("chap-secret-file"),
        mutual_chap_file=obj.attrs.get("mutual-chap-secret-file"),
        where=str(obj.where("chap-secret-file")) if "chap-secret-file" in obj.attrs else "",
        max_connections=obj.attrs.get("max-connections", DEFAULT_MAX_CONNECTIONS),
    )


def read_secret_file(path: str, what: str) -> tuple[str, bytes]:
    """A CHAP secret file: one line ``USER SECRET``. It must be a regular file
    owned by root and readable by nobody else (mode 0600 or 0400)."""
    content = read_private_file(path, what, DataplaneError)
    words = content.split()
    if len(words) != 2:
        raise DataplaneError(f"{what} {path}: expected one line 'USER SECRET' (two words)")
    user, secret = words
    # RFC 7143 12.1.3: CHAP secrets of at least 12 bytes (initiators enforce 12-16).
    if len(secret) < 12:
        raise DataplaneError(f"{what} {path}: the secret is {len(secret)} bytes; iSCSI "
                             f"initiators want at least 12")
    return user.decode(errors="replace"), secret


def read_secrets(spec: TargetSpec) -> Secrets:
    s = Secrets()
    if spec.chap_file:
        s.chap = read_secret_file(spec.chap_file, f"target {spec.iqn}: chap-secret-file")
    if spec.mutual_chap_file:
        s.mutual_chap = read_secret_file(spec.mutual_chap_file,
                                         f"target {spec.iqn}: mutual-chap-secret-file")
    return s


def netns_identity(netns: Any) -> int:
    """The u64 the data path compares: the kernel's namespace cookie, else
    (dev, ino), which is exact while the namespace is held open."""
    ident = netns.identity
    if ident.cookie is not None:
        return ident.cookie
    return ((ident.dev & 0xffffffff) << 32) | (ident.ino & 0xffffffff)


class TargetService:
    """What one Dataplane serves, kept in step with a model."""

    def __init__(self, dataplane: Any):
        self.dp = dataplane
        self.volumes: dict[str, VolumeSpec] = {}
        self.targets: dict[tuple[str, str], TargetSpec] = {}
        self.portals: set[tuple[str, str, int]] = set()
        self.namespaces: dict[str, int] = {}

    def add_namespace(self, netns: Any) -> None:
        """Serve a namespace (a netcfg.kernel.ns.Netns, "" the host's)."""
        identity = netns_identity(netns)
        self.dp.add_namespace(netns.name, netns.fd, identity)
        if self.namespaces.get(netns.name) != identity:
            # A new namespace under an old name starts without listeners.
            self.portals = {p for p in self.portals if p[0] != netns.name}
        self.namespaces[netns.name] = identity

    def remove_namespace(self, name: str) -> None:
        self.dp.remove_namespace(name)
        self.namespaces.pop(name, None)
        self.portals = {p for p in self.portals if p[0] != name}

    def apply(self, model: Model, pinned: frozenset[str] = frozenset()) -> Outcome:
        """Make the data path serve the model's volumes and targets, as far
        as each can be: an object that fails is reported in the outcome and
        tried again by the next call, and the others are served. Portals are
        opened only in namespaces already added. Volumes in ``pinned`` (a
        ublk device serves them: daemon/netcfgd/ublk.py) are neither closed,
        re-opened nor resized: the device is re-created first."""
        out = Outcome()
        volumes = {name: volume_spec(o) for name, o in model.volumes.items()}
        targets = {(o.netns, o.name): target_spec(o) for o in model.targets.values()}
        for name, spec in volumes.items():
            if self.volumes.get(name) != spec:
                if name in pinned:
                    out.errors.append(f"volume {name}: not changed yet: its ublk device is in "
                                      f"use and must be re-created for the change (netcfg "
                                      f"status says what holds it)")
                    continue
                self._apply_volume(name, spec, out)
        for key, spec in targets.items():
            missing = [v for v in spec.luns.values() if v not in self.volumes]
            if missing:
                out.errors.append(f"target {spec.iqn}: not served: volume {', '.join(missing)} "
                                  f"cannot be opened (see above)")
                continue
            try:
                secrets = read_secrets(spec)
                self._call(f"target {spec.iqn}", self.dp.set_target, spec.netns, spec.iqn,
                           spec.luns, allow=list(spec.allow), chap=secrets.chap,
                           mutual_chap=secrets.mutual_chap, max_connections=spec.max_connections)
            except DataplaneError as e:
                out.errors.append(str(e))
                continue
            self.targets[key] = spec
        for key in set(self.targets) - set(targets):
            self.dp.remove_target(*key)
            del self.targets[key]
        wanted = {(s.netns, addr, port) for key, s in targets.items() for addr, port in s.portals
                  if s.netns in self.namespaces and key in self.targets}
        for netns, addr, port in sorted(self.portals - wanted):
            self.dp.remove_portal(netns, addr, port)
            self.portals.discard((netns, addr, port))
        for netns, addr, port in sorted(wanted - self.portals):
            where = f"namespace {netns}" if netns else "the host's namespace"
            try:
                self._call(f"portal {addr}:{port} in {where}", self.dp.add_portal, netns, addr,
                           port)
            except DataplaneError as e:
                out.errors.append(str(e))
                continue
            self.portals.add((netns, addr, port))
        for name in set(self.volumes) - set(volumes) - pinned:
            try:
                self._call(f"volume {name}", self.dp.remove_volume, name)
            except DataplaneError as e:
                out.errors.append(str(e))
                continue
            del self.volumes[name]
            out.changes.append(f"volume {name}: closed")
        return out

    def _apply_volume(self, name: str, spec: VolumeSpec, out: Outcome) -> None:
        """Open a new volume, re-open one whose backing or block size
        changed, or resize one whose size changed (online)."""
        old = self.volumes.get(name)
        if old is None or (old.backing, old.block_size) != (spec.backing, spec.block_size):
            if spec.size is not None:
                # `size` asks netcfgd to create the sparse file when it is
                # missing: its directory too (root only: tenants' data).
                try:
                    os.makedirs(os.path.dirname(spec.backing) or ".", mode=0o700,
                                exist_ok=True)
                except OSError as e:
                    out.errors.append(f"volume {name}: cannot create the directory of "
                                      f"{spec.backing}: {e.strerror}")
                    return
            try:
                self._call(f"volume {name}", self.dp.add_volume, name, spec.backing,
                           size=spec.size, block_size=spec.block_size)
            except DataplaneError as e:
                still = f"; still serving {old.backing}" if old is not None else ""
                out.errors.append(f"{e}{still}")
                return
            out.changes.append(f"volume {name}: opened {spec.backing}" if old is None else
                               f"volume {name}: re-opened: backing {old.backing} -> "
                               f"{spec.backing}")
        elif spec.size is not None and spec.size != old.size:
            try:
                before, after = self.dp.resize_volume(name, spec.size)
            except (OSError, ValueError) as e:
                out.errors.append(str(e))
                return
            bs = spec.block_size
            verb = "grown" if after > before else "shrunk" if after < before else "kept"
            out.changes.append(f"volume {name}: {verb} online from {before * bs} to "
                               f"{after * bs} bytes")
        self.volumes[name] = spec

    @staticmethod
    def _call(what: str, fn, *args, **kwargs) -> None:
        try:
            fn(*args, **kwargs)
        except (OSError, ValueError) as e:
            raise DataplaneError(f"{what}: {e}") from None

    def namespaces_needed(self, model: Model) -> Iterable[str]:
        return sorted({o.netns for o in model.targets.values()})

    def sessions(self) -> dict[str, int]:
        """Sessions per target IQN (what `netcfg status` shows)."""
        return {t["iqn"]: t["sessions"] for t in self.dp.stats()["targets"]}
