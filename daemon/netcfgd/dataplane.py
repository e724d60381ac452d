"""Typed wrapper over the data path (``netcfgd._dataplane``): turns the
compiler's ``volume`` and ``target`` objects into calls on the embedded
multi-namespace iSCSI target, and reads CHAP secret files safely.

    service = TargetService(Dataplane(threads=None))
    service.add_namespace(netns_dir.open("t1"))        # a netcfg.kernel.ns.Netns
    service.apply(compiled.model)                      # volumes, targets, portals

See docs/dataplane.md for the API underneath.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any, Iterable

from netcfg.compile.model import ConfigObject, Model
from netcfg.errors import NetcfgError

DEFAULT_PORT = 3260


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


@dataclass
class Secrets:
    """(user, secret) pairs read from files; repr never shows a secret."""

    chap: tuple[str, bytes] | None = None
    mutual_chap: tuple[str, bytes] | None = field(default=None)

    def __repr__(self) -> str:
        users = [p[0] for p in (self.chap, self.mutual_chap) if p]
        return f"Secrets(users={users})"


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
    )


def read_secret_file(path: str, what: str) -> tuple[str, bytes]:
    """A CHAP secret file: one line ``USER SECRET``. It must be a regular file
    owned by root and readable by nobody else (mode 0600 or 0400)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as e:
        raise DataplaneError(f"{what} {path}: cannot open: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataplaneError(f"{what} {path}: not a regular file")
        if st.st_uid != 0:
            raise DataplaneError(f"{what} {path}: owned by uid {st.st_uid}, not root; "
                                 f"chown root:root {path}")
        if st.st_mode & 0o077:
            raise DataplaneError(f"{what} {path}: mode {stat.S_IMODE(st.st_mode):04o} lets group "
                                 f"or others read the secret; chmod 600 {path}")
        with os.fdopen(os.dup(fd), "rb") as f:
            content = f.read(4096)
    finally:
        os.close(fd)
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

    def apply(self, model: Model) -> None:
        """Make the data path serve exactly the model's volumes and targets.
        Portals are opened only in namespaces already added."""
        volumes = {name: volume_spec(o) for name, o in model.volumes.items()}
        targets = {(o.netns, o.name): target_spec(o) for o in model.targets.values()}
        for name, spec in volumes.items():
            if self.volumes.get(name) != spec:
                if spec.size is not None:
                    # `size` asks netcfgd to create the sparse file when it is
                    # missing: its directory too (root only: tenants' data).
                    os.makedirs(os.path.dirname(spec.backing) or ".", mode=0o700, exist_ok=True)
                self._call(f"volume {name}", self.dp.add_volume, name, spec.backing,
                           size=spec.size, block_size=spec.block_size)
                self.volumes[name] = spec
        for key, spec in targets.items():
            secrets = read_secrets(spec)
            self._call(f"target {spec.iqn}", self.dp.set_target, spec.netns, spec.iqn, spec.luns,
                       allow=list(spec.allow), chap=secrets.chap, mutual_chap=secrets.mutual_chap)
            self.targets[key] = spec
        for key in set(self.targets) - set(targets):
            self.dp.remove_target(*key)
            del self.targets[key]
        wanted = {(s.netns, addr, port) for s in targets.values() for addr, port in s.portals
                  if s.netns in self.namespaces}
        for netns, addr, port in sorted(self.portals - wanted):
            self.dp.remove_portal(netns, addr, port)
        for netns, addr, port in sorted(wanted - self.portals):
            where = f"namespace {netns}" if netns else "the host's namespace"
            self._call(f"portal {addr}:{port} in {where}", self.dp.add_portal, netns, addr, port)
        self.portals = wanted
        for name in set(self.volumes) - set(volumes):
            self._call(f"volume {name}", self.dp.remove_volume, name)
            del self.volumes[name]

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
