"""What changed, and where: kernel notifications and /run/netns, turned into
dirty namespaces.

The event socket (netcfg.kernel.events) names a namespace by its nsid in the
host's view; ``NsidMap`` turns that into the namespace's name. A namespace
deleted with `ip netns del` sends no netlink event while netcfgd still holds
an fd or a socket in it (the namespace lives on, unnamed): the unlink of its
file in /run/netns is what says so, heard here with inotify. RTM_DELNSID
follows once the kernel has really destroyed it.
"""

from __future__ import annotations

import ctypes
import os
import struct
from dataclasses import dataclass, field
from typing import Iterator

from netcfg.kernel.events import LINK, NSID, Event
from netcfg.model.model import ROOT_NETNS

# linux/inotify.h (kernel spellings)
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_INOTIFY_EVENT = struct.Struct("=iIII")   # wd, mask, cookie, len

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class NsidMap:
    """nsid (in the host's view) <-> namespace name, for managed namespaces."""

    by_nsid: dict[int, str] = field(default_factory=dict)
    by_name: dict[str, int] = field(default_factory=dict)

    def set(self, name: str, nsid: int) -> None:
        old = self.by_name.get(name)
        if old is not None:
            self.by_nsid.pop(old, None)
        self.by_nsid[nsid] = name
        self.by_name[name] = nsid

    def drop(self, name: str) -> int | None:
        nsid = self.by_name.pop(name, None)
        if nsid is not None:
            self.by_nsid.pop(nsid, None)
        return nsid

    def name_of(self, nsid: int | None) -> str | None:
        return ROOT_NETNS if nsid is None else self.by_nsid.get(nsid)


@dataclass(frozen=True)
class Change:
    """One event's meaning for the reconciler."""

    netns: str | None          # the namespace it dirties (None: none we manage)
    obj: str = ""              # a device name, when the event carries one
    nsid_released: int | None = None   # RTM_DELNSID: this id is free again


def classify(event: Event, nsids: NsidMap) -> Change:
    if event.kind == NSID:
        if event.nsid is not None:
            return Change(None)   # ids other namespaces give theirs: not our map
        if event.deleted:
            return Change(None, nsid_released=event.target_nsid)
        return Change(None)       # an id assigned: map_nsids() reads them after a pass
    netns = nsids.name_of(event.nsid)
    return Change(netns, event.name if event.kind == LINK else "")


class NetnsDirWatch:
    """inotify on the namespace directory: (name, created) for each file made
    or removed there. Equivalent to: `inotifywait -m -e create,delete /run/netns`."""

    def __init__(self, path: str):
        os.makedirs(path, 0o755, exist_ok=True)
        fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
        if _libc.inotify_add_watch(fd, os.fsencode(path), mask) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise OSError(err, f"inotify_add_watch {path}: {os.strerror(err)}")
        self.fd = fd
        self.path = path

    def fileno(self) -> int:
        return self.fd

    def read(self) -> Iterator[tuple[str, bool]]:
        try:
            data = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return
        offset = 0
        while offset + _INOTIFY_EVENT.size <= len(data):
            _wd, mask, _cookie, length = _INOTIFY_EVENT.unpack_from(data, offset)
            start = offset + _INOTIFY_EVENT.size
            name = data[start:start + length].split(b"\0", 1)[0].decode(errors="replace")
            offset = start + length
            if name:
                yield name, bool(mask & (IN_CREATE | IN_MOVED_TO))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
