"""A DHCP client that dies is an event (issue 23, L7).

netcfg starts dhclient and leaves the interface to it (netcfg/apply/dhcp.py);
a pass starts whatever client the config wants and is not running. But a
client's death changes nothing in the kernel, so no netlink event made a
pass come: the lease ran out unnoticed until the next resync (10 min).

Each running client's pid gets a pidfd (pidfd_open(2), Linux 5.3), which the
loop's selector waits on beside its sockets: readable once the process has
exited, whoever its parent is (dhclient -nw daemonizes; an adopted one is
ifupdown's). The loop then marks the client's namespace dirty, and that
pass restarts it. No polling, no timer.
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
from typing import Callable

from netcfg.apply.dhcp import DhcpClients, Lease


class DhcpWatch:
    """The pidfds of the DHCP clients netcfg runs, kept in ``selector``."""

    def __init__(self, registry: DhcpClients, selector: selectors.BaseSelector,
                 on_exit: Callable[[Lease, int], None]):
        self.registry = registry
        self.selector = selector
        self.on_exit = on_exit
        self._watched: dict[Lease, tuple[int, int]] = {}   # lease -> (pid, pidfd)

    def refresh(self) -> None:
        """Watch the clients running now: after a pass or an apply started or
        stopped some (a client netcfg stopped on purpose is no event)."""
        running = self.registry.pids()
        for lease, (pid, _fd) in list(self._watched.items()):
            if running.get(lease) != pid:
                self._forget(lease)
                # Its pid file left behind: it died (the loop came here
                # before it read the pidfd); netcfg's stop() removes it.
                if lease not in running and self.registry.recorded(lease):
                    self.on_exit(lease, pid)
        for lease, pid in running.items():
            if lease in self._watched:
                continue
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                self.on_exit(lease, pid)     # died between the look and now
                continue
            self._watched[lease] = (pid, fd)
            self.selector.register(fd, selectors.EVENT_READ,
                                   functools.partial(self._exited, lease))

    def _exited(self, lease: Lease) -> None:
        pid, _fd = self._watched[lease]
        self._forget(lease)
        self.on_exit(lease, pid)

    def _forget(self, lease: Lease) -> None:
        _pid, fd = self._watched.pop(lease)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(fd)
        os.close(fd)

    def close(self) -> None:
        for lease in list(self._watched):
            self._forget(lease)
