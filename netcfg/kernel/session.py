"""Handles to the kernel for one command: namespaces, sockets, read-back.

One `KernelSession` per `netcfg apply` / `show`: it opens each namespace
once, opens one netlink socket inside each (on the setns helper thread, so
the process itself never moves), and reads current state back into the
model. A namespace costs one fd, its socket: the handle's own fd is closed
once the socket is there and taken back from it when a request names the
namespace (release_fds). Closing the session closes every fd it opened.
"""

from __future__ import annotations

import errno
import os
import resource
import socket
from typing import Any, Callable, Collection, Iterable

from netcfg.kernel.genl import NETLINK_GENERIC, GenlSockets
from netcfg.kernel.genl_families import read_genl_state
from netcfg.kernel.nl import NetlinkError, RtnlSocket
from netcfg.kernel.ns import Netns, NetnsDir, NetnsError, NetnsSwitcher
from netcfg.kernel.read import NamespaceState, netns_id, read_ifindexes, read_model
from netcfg.model.errors import NetcfgError, UnknownDevice
from netcfg.model.model import ROOT_NETNS, Model
from netcfg.model.tags import NETNS_MARK
from netcfg.netlink.nlmsg import (IFADDRMSG, IFINFOMSG, IFLA_EXT_MASK, IFLA_IFALIAS,
                                  IFLA_IFNAME, NETLINK_ROUTE, NETNSA_FD, NETNSA_NSID, S32,
                                  RTEXT_FILTER_SKIP_STATS, RTM_GETADDR, RTM_GETLINK, RTM_NEWLINK,
                                  RTM_NEWNSID, attr_str, getaddr_dump, ifinfomsg, parse_attrs,
                                  rtattr, rtattr_str, rtattr_u32)


LOOPBACK_IFINDEX = 1          # lo is always the first device of a namespace
# Devices netcfg creates get ifindexes it chose (new_ifindex), starting this
# far above the highest index the namespace had when read. Another program
# creating a device at the same moment gets the kernel's next free index,
# normally just above the highest: the gap keeps the two apart.
IFINDEX_GAP = 16
# What a namespace holds open while a session uses it: its rtnetlink socket
# (its handle's fd is released once the socket is made: ns.Netns.release).
FDS_PER_NAMESPACE = 1
# Handles' fds taken back at once (a request that names a namespace: a veth
# peer's, an nsid's) before they are released again: a batch of 10,000
# veths into as many namespaces is sent in parts of this many.
BORROWED_FDS = 256
# Besides the namespaces' and the borrowed: the setns thread's, pyroute2's
# generic netlink sockets, OVSDB's, a hook's pipes, the DHCP clients' pidfds.
FD_MARGIN = 64


class TooManyNamespaces(NetcfgError):
    """The namespaces an apply reaches need more file descriptors than the
    process may open: refused before anything is read or written (issue 23:
    at 10,000 namespaces EMFILE struck half-way, and the revert failed too)."""


class KernelSession:
    def __init__(self, run_dir: str = "/run/netns"):
        self.nsdir = NetnsDir(run_dir)
        self.switcher = NetnsSwitcher()
        self.handles: dict[str, Netns] = {}
        self.sockets: dict[str, RtnlSocket] = {}
        # Generic netlink (pyroute2) sockets, opened in a namespace only when
        # one of its devices has such state (kernel/genl_families.py).
        self.genl = GenlSockets(self._genl_raw_socket)
        # Open vSwitch's database connection (apply/ovs.py), opened when a
        # config has OVS objects.
        self.ovsdb: Any = None
        self.states: dict[str, NamespaceState] = {}
        # Per namespace, the lowest ifindex new_ifindex() may hand out next:
        # it never goes down, so an index freed in this session is not reused.
        self._next_ifindex: dict[str, int] = {}
        # Namespaces where a device was created with an ifindex the kernel
        # chose: read their ifindexes again before they are needed.
        self.unknown_ifindexes: set[str] = set()
        # Reporting hook of the command using the session: called after each
        # batch with (batches done, batches, operations done, operations).
        self.on_batch: Callable[[int, int, int, int], None] | None = None
        # Handles whose fd was taken back from their socket (netns()), until
        # release_fds() closes it again.
        self._borrowed: list[Netns] = []
        _raise_fd_limit()

    # -- namespaces and sockets

    def reserve_fds(self, namespaces: Collection[str]) -> None:
        """Refuse (TooManyNamespaces) to go on when holding ``namespaces``,
        besides what is open now, would pass RLIMIT_NOFILE (its soft limit,
        raised to the hard one as the session started)."""
        new = sum(1 for name in namespaces if name not in self.handles)
        open_now = len(os.listdir("/proc/self/fd"))
        spare = min(len(namespaces), BORROWED_FDS) + FD_MARGIN
        needed = open_now + FDS_PER_NAMESPACE * new + spare
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if needed > soft:
            raise TooManyNamespaces(
                f"refused, nothing was changed: {len(namespaces)} namespaces need "
                f"{FDS_PER_NAMESPACE} file descriptor each while netcfg works in them, "
                f"{needed} in all with the {open_now} open now and {spare} for the work, but "
                f"this process may open {soft} (RLIMIT_NOFILE; hard limit {hard}). Raise "
                f"the limit (as root: `ulimit -Hn {needed} && ulimit -n {needed}` in the "
                f"shell, LimitNOFILE={needed} in a service's unit), or apply fewer namespaces "
                f"at a time (`netcfg apply --netns NAME`)")

    def existing_namespaces(self) -> set[str]:
        return set(self.nsdir.list_names())

    def netns(self, name: str) -> Netns:
        """The namespace's handle, its fd open (taken back from the socket when
        it was released: see release_fds)."""
        handle = self.handles.get(name)
        if handle is None or handle.is_stale():
            handle = self.handles[name] = self.nsdir.open(name)
            self.sockets.pop(name, None)
        elif handle.fd < 0:
            handle.reacquire(self.sockets[name].sock)
            self._borrowed.append(handle)
        return handle

    def netns_fd(self, name: str) -> int:
        """An fd of the namespace for one request sent before the next call
        (read-back's nsid questions, one after the other): when many are
        out, they are released first."""
        if len(self._borrowed) >= BORROWED_FDS:
            self.release_fds()
        return self.netns(name).fd

    def borrowed_fds(self) -> int:
        return len(self._borrowed)

    def release_fds(self) -> None:
        """Close the fds of the handles whose namespace has a socket of ours
        (which keeps it alive): one fd per namespace, not two. Only where no
        request that names a namespace by fd is still to be sent."""
        for handle in self._borrowed:
            if handle.name in self.sockets and not handle.closed:
                handle.release()
        self._borrowed.clear()

    def release_handles(self, names: Iterable[str]) -> None:
        """Close the fds of these namespaces' handles where a socket of ours is
        there (a namespace just made: its handle came open from create())."""
        for name in names:
            handle = self.handles.get(name)
            if handle is not None and name in self.sockets and not handle.closed:
                handle.release()

    def socket(self, name: str) -> RtnlSocket:
        if name not in self.sockets:
            self.open_sockets([name])
        return self.sockets[name]

    def open_sockets(self, names: Iterable[str]) -> None:
        """A socket in each of these namespaces that has none yet, made in one
        trip to the setns thread per BORROWED_FDS namespaces (reads open every
        namespace's at once); the fd of each handle opened for it is released
        once its socket is there."""
        missing = [n for n in dict.fromkeys(names) if n not in self.sockets]
        for start in range(0, len(missing), BORROWED_FDS):
            part = missing[start:start + BORROWED_FDS]
            # Handles opened here: no request names them by fd yet.
            opened = [n for n in part if n not in self.handles or self.handles[n].is_stale()]
            handles = [self.netns(n) for n in part]
            raws = self.switcher.sockets_in(handles, socket.AF_NETLINK,
                                            socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
            for i, (name, raw) in enumerate(zip(part, raws)):
                try:
                    self.sockets[name] = RtnlSocket(raw)
                except BaseException:
                    for left in raws[i:]:
                        left.close()
                    raise
            self.release_handles(opened)

    def _genl_raw_socket(self, name: str) -> socket.socket:
        """A NETLINK_GENERIC socket made inside namespace ``name`` (a datagram
        socket: pyroute2's event loop takes no other), for self.genl."""
        raw, = self.switcher.sockets_in([self.netns(name)], socket.AF_NETLINK,
                                        socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_GENERIC)
        return raw

    def forget(self, name: str) -> None:
        """A namespace was deleted: drop its socket and handle."""
        sock = self.sockets.pop(name, None)
        if sock is not None:
            sock.close()
        self.genl.forget(name)
        handle = self.handles.pop(name, None)
        if handle is not None:
            handle.close()
        self.states.pop(name, None)
        self._next_ifindex.pop(name, None)

    # -- reading

    def read(self, names: Iterable[str], *, foreign_routes: Collection[str] = (),
             desired: Model | None = None) -> Model:
        """Current state of these namespaces (those that exist), as a model;
        in those of ``foreign_routes``, other programs' routes too (into
        ``states[NAME].foreign_routes``, never into the model). ``desired``:
        the config this read is compared with (apply, query, ifquery -c):
        generic netlink state that matters only where a config writes it
        (NICs' link modes) is asked only there; None (show, ifquery -r):
        all of it (kernel/genl_families.py)."""
        existing = self.existing_namespaces()
        wanted = [n for n in dict.fromkeys(names) if n == ROOT_NETNS or n in existing]
        self.open_sockets(wanted)
        model, states = read_model({n: self.socket(n) for n in wanted},
                                   netns_fd=self.netns_fd, foreign_routes=foreign_routes)
        self.release_fds()
        # Generic netlink state (wireguard keys and peers, NICs' link modes)
        # of the devices that have it; nothing is asked elsewhere.
        for state in states.values():
            read_genl_state(self.genl, state, desired)
        self.states.update(states)
        return model

    def nsid(self, view: str, target: str, wanted: int | None = None) -> int:
        """The nsid ``target`` has in ``view``'s namespace, assigning one when it
        has none (``wanted``, else the kernel picks). Devices whose lower
        device or peer lives in another namespace are named through it
        (IFLA_LINK_NETNSID), and event sockets see it on every message.

        Equivalent to: `ip -n VIEW netns set TARGET auto` (or `... TARGET N`).
        """
        # (Not netns_fd(): an encoder asks this between requests that name
        # namespaces by fd and are still to be sent.)
        sock, fd = self.socket(view), self.netns(target).fd
        current = netns_id(sock, fd)
        if current is not None:
            return current
        payload = (b"\0\0\0\0" + rtattr_u32(NETNSA_FD, fd)
                   + rtattr(NETNSA_NSID, S32.pack(-1 if wanted is None else wanted)))
        sock.request(RTM_NEWNSID, 0, payload)
        assigned = netns_id(sock, fd)
        if assigned is None:  # the kernel accepted it: it must be there now
            raise NetnsError(target, f"has no nsid in netns '{view or 'host'}' after assigning one")
        return assigned

    def mark_netns(self, name: str) -> None:
        """Tag a namespace netcfg made (tags.NETNS_MARK on its lo, ifindex 1).

        Equivalent to: `ip -n NAME link set lo alias netcfg`.
        """
        self.socket(name).request(RTM_NEWLINK, 0, ifinfomsg(index=LOOPBACK_IFINDEX)
                                  + rtattr_str(IFLA_IFALIAS, NETNS_MARK))

    def marked_namespaces(self, besides: Iterable[str] = ()) -> set[str]:
        """Namespaces (other than ``besides``) that netcfg made: one request each."""
        skip = set(besides)
        marked = set()
        for name in self.existing_namespaces() - skip:
            _t, _f, payload = self.socket(name).get(
                RTM_GETLINK, ifinfomsg(index=LOOPBACK_IFINDEX)
                + rtattr_u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS))
            alias = parse_attrs(payload, IFINFOMSG.size, {IFLA_IFALIAS}).get(IFLA_IFALIAS)
            if alias is not None and attr_str(alias) == NETNS_MARK:
                marked.add(name)
        return marked

    def refresh_ifindexes(self, names: Iterable[str]) -> None:
        """Learn the ifindexes a namespace has now (after deletions, or in a
        namespace just created), without a full read."""
        for name in names:
            self.unknown_ifindexes.discard(name)
            state = self.states.get(name)
            if state is None:
                state = self.states[name] = NamespaceState(name)
            read_ifindexes(self.socket(name), state)

    def link_now(self, netns: str, name: str) -> tuple[int, int] | None:
        """(ifindex, IFF_* flags) of device ``name`` in ``netns`` as the kernel
        has it now (not as last read); None when there is no such device.

        Equivalent to: `ip -n NETNS link show dev NAME`.
        """
        try:
            _type, _flags, payload = self.socket(netns).get(
                RTM_GETLINK, ifinfomsg() + rtattr_str(IFLA_IFNAME, name))
        except NetlinkError as e:
            if e.errno in (errno.ENODEV, errno.EINVAL):   # no such device / not a name
                return None
            raise
        _family, _type, index, flags, _change = IFINFOMSG.unpack_from(payload)
        return index, flags

    def addresses_now(self, netns: str, index: int, family: int) -> list[memoryview]:
        """The RTM_NEWADDR payloads of one device and family in ``netns``, in
        the kernel's order, filtered by the kernel (and here, for a kernel that
        ignores the filter). Read whole: a dump left half-read would answer
        the socket's next request.

        Equivalent to: `ip -n NETNS -4|-6 address show dev NAME`.
        """
        dump = self.socket(netns).dump(RTM_GETADDR, getaddr_dump(family, index))
        return [p for _t, _f, p in list(dump) if IFADDRMSG.unpack_from(p)[4] == index]

    def ifindex(self, netns: str, name: str) -> int:
        """The device's ifindex as last read; UnknownDevice when there is none."""
        state = self.states.get(netns)
        index = state.ifindex.get(name) if state is not None else None
        if index is None:
            raise UnknownDevice(netns, name)
        return index

    def new_ifindex(self, netns: str, name: str) -> int:
        """An ifindex for a device about to be created in ``netns``, recorded
        as its own: known without reading the kernel again, which is what a
        build costs most beyond the writes (docs/benchmarks.md). 0 (the kernel
        chooses) when the namespace's indexes were never read; it is then
        put in ``unknown_ifindexes``. A collision with a device another
        program made meanwhile fails the link-add (EEXIST) and the apply is
        reverted, never a change to the other device (NLM_F_EXCL)."""
        state = self.states.get(netns)
        if state is None:
            self.unknown_ifindexes.add(netns)
            return 0
        index = self._next_ifindex.get(netns)
        if index is None:   # once per namespace: max() each time is quadratic
            index = max(state.names, default=LOOPBACK_IFINDEX) + IFINDEX_GAP
        while index in state.names:
            index += 1
        self._next_ifindex[netns] = index + 1
        state.ifindex[name] = index
        state.names[index] = name
        state.managed.add(name)
        return index

    def managed(self) -> dict[str, set[str]]:
        """Devices netcfg made (its group), per namespace, as last read."""
        return {netns: state.managed for netns, state in self.states.items()}

    def requests_sent(self) -> int:
        return sum(s.counters.messages_sent for s in self.sockets.values())

    def close(self) -> None:
        for name in list(self.sockets):
            self.sockets.pop(name).close()
        self.genl.close()
        for name in list(self.handles):
            self.handles.pop(name).close()
        self.switcher.close()

    def __enter__(self) -> "KernelSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _raise_fd_limit() -> None:
    """A socket per namespace: 1000 tenants pass the usual soft limit of
    1024, so take the hard limit (reserve_fds checks against it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
