"""Generic netlink through pyroute2: one socket per (namespace, family).

Every netlink family other than rtnetlink goes through pyroute2 (its
message classes encode and decode; nothing here packs a genl header). Those
families are cold paths, a few messages per device, where pyroute2's cost
per message (~0.1-1 ms) does not matter; rtnetlink's dumps and batches stay
hand-built (kernel/nl.py: 17-21 us against pyroute2's 160-200 us per link).

A device of these families is known only in its own namespace, so each
socket is made inside it on the session's setns helper thread (never
pyroute2's ``netns=``, which forks a child per socket: ~10 ms) and handed
to pyroute2 as an fd. pyroute2 is imported only when the first such socket
is opened: a namespace without wireguard devices, read for a config that
writes no link-speed/-duplex/-autoneg (kernel/genl_families.py), never
loads it, and neither do `netcfg check` and `ifquery` without -c or -r.

Which kinds have generic netlink state, and whose reader and configurer
serve them: kinds/genl.py, kernel/genl_families.py, apply/genl.py.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any, Callable, Iterable

from netcfg.kernel.nl import NetlinkError
from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, NetcfgError

NETLINK_GENERIC = 16
# A device's answer is a few KiB (a wireguard device with thousands of
# peers, a few MiB over several datagrams); rtnetlink's 32 MiB would be waste.
RCVBUF = 1 << 20
SNDBUF = 256 << 10


def each_device(state: Any, kind: str, ask: Callable[[int], Any]) -> Iterable[tuple[Any, Any]]:
    """(config object, answer) for each ``kind`` device of one namespace's
    read (kernel/read.py's NamespaceState), ``ask(ifindex)`` being its
    request; a device deleted since the link dump (ENODEV) is skipped."""
    for name, obj in state.interfaces.items():
        if obj.kind != kind:
            continue
        try:
            answer = ask(state.ifindex[name])
        except NetlinkError as e:
            if e.errno == errno.ENODEV:
                continue
            raise
        yield obj, answer


class FamilyMissing(NetcfgError):
    """The kernel has no such generic netlink family (its module is not loaded)."""

    exit_code = EXIT_APPLY_FAILED_REVERTED
    retryable = False


def refusal(error: Exception, family_id: int, tag: Any = None) -> Exception:
    """pyroute2's NetlinkError as netcfg's (errno, the kernel's extended-ack
    text, the operation it answered), so a refusal reads as rtnetlink's do
    (apply/refusal.py); anything else is returned unchanged."""
    code = getattr(error, "code", None)
    if not isinstance(code, int) or not code:
        return error
    text = error.args[1] if len(error.args) > 1 else None
    kernel_text = text if isinstance(text, str) and text != os.strerror(abs(code)) else None
    return NetlinkError(errno=abs(code), msg_type=family_id, kernel_message=kernel_text,
                        tag=tag)


class GenlSockets:
    """The generic netlink sockets of one session, and what its families
    remember between read-back and write (``memo``)."""

    def __init__(self, open_raw: Callable[[str], socket.socket]):
        # open_raw(NETNS): a NETLINK_GENERIC datagram socket made inside NETNS.
        self._open_raw = open_raw
        self._sockets: dict[tuple[str, str], Any] = {}
        self._memos: dict[str, Any] = {}

    def memo(self, name: str, factory: Callable[[], Any]) -> Any:
        """Per-session state a family keeps (wireguard's private keys read
        back, ethtool's speeds set), made on first use."""
        if name not in self._memos:
            self._memos[name] = factory()
        return self._memos[name]

    def socket(self, netns: str, family: str, msg_class: type) -> Any:
        """A pyroute2 GenericNetlinkSocket inside ``netns``, bound to
        ``family`` (its id asked once); FamilyMissing when the kernel has
        no such family."""
        key = (netns, family)
        sock = self._sockets.get(key)
        if sock is not None:
            return sock
        from pyroute2.netlink.exceptions import NetlinkError as Pyroute2Error
        from pyroute2.netlink.generic import GenericNetlinkSocket

        raw = self._open_raw(netns)
        try:
            sock = GenericNetlinkSocket(fileno=raw.detach(), rcvbuf=RCVBUF, sndbuf=SNDBUF,
                                        ext_ack=True)
        except BaseException:
            raw.close()
            raise
        try:
            sock.bind(family, msg_class)
        except Pyroute2Error as e:
            sock.close()
            if e.code == errno.ENOENT:
                raise FamilyMissing(f"the kernel has no '{family}' generic netlink family; "
                                    f"load its module (modprobe {family})") from None
            raise refusal(e, 0) from None
        except BaseException:
            sock.close()
            raise
        self._sockets[key] = sock
        return sock

    def request(self, netns: str, family: str, msg_class: type, msg: Any, *,
                dump: bool = False, ack: bool = False, tag: Any = None) -> list:
        """One request on ``family`` in ``netns``; its answers, decoded by
        ``msg_class``. A refusal is raised as netcfg's NetlinkError naming ``tag``.

        Equivalent to: what `wg` / `ethtool` ask over generic netlink."""
        from pyroute2.netlink import NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST
        from pyroute2.netlink.exceptions import NetlinkError as Pyroute2Error

        sock = self.socket(netns, family, msg_class)
        flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else 0) | (NLM_F_ACK if ack else 0)
        try:
            return list(sock.nlm_request(msg, msg_type=sock.prid, msg_flags=flags))
        except Pyroute2Error as e:
            raise refusal(e, sock.prid, tag) from None

    def send_all(self, netns: str, family: str, msg_class: type, msgs: Iterable[Any],
                 tag: Any = None) -> int:
        """Each message as one ACKed request, in order; stops at the first
        refusal (raised). Returns the requests sent."""
        sent = 0
        for msg in msgs:
            self.request(netns, family, msg_class, msg, ack=True, tag=tag)
            sent += 1
        return sent

    def forget(self, netns: str) -> None:
        """A namespace was deleted: close its sockets."""
        for key in [k for k in self._sockets if k[0] == netns]:
            self._sockets.pop(key).close()

    def close(self) -> None:
        for key in list(self._sockets):
            self._sockets.pop(key).close()
