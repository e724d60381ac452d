"""An rtnetlink socket that sends requests in batches and dumps filtered in the kernel.

One ``RtnlSocket`` per namespace. Writes go through ``transact``: many
requests per sendmsg, none of them ACKed (the kernel still answers a failed
one with NLMSG_ERROR, carrying that request's sequence number), and one ACKed
NLMSG_NOOP at the end as a barrier. The kernel handles a datagram's requests
in order inside sendmsg, so once the barrier's ACK is read every error of the
batch has been read too, and each is matched to its request by seq. ACKing
every request would need a receive buffer the size of the batch (256 ACKs
fill the default 208 KiB) and one more message per request to read.

Reads go through ``dump`` with NETLINK_GET_STRICT_CHK on, so the filters in
the request (nlmsg.getlink_dump and friends) are applied by the kernel; the
``Dump`` says whether they were (NLM_F_DUMP_FILTERED).

Wire encoding and decoding are in nlmsg.py.
"""

from __future__ import annotations

import dataclasses
import errno as errno_mod
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Self, Sequence

# netcfg.model.errors cannot be the first netcfg module imported: it imports
# netcfg.model.location, whose package imports netcfg.model.errors back (a cycle).
from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, NetcfgError
from netcfg.netlink.nlmsg import (MESSAGE_NAMES, Request, NETLINK_CAP_ACK, NETLINK_EXT_ACK,
                                  NETLINK_GET_STRICT_CHK, NETLINK_ROUTE, NLM_F_ACK, NLM_F_DUMP,
                                  NLM_F_DUMP_FILTERED, NLM_F_DUMP_INTR, NLM_F_REQUEST, NLMSG_DONE,
                                  NLMSG_ERROR, NLMSG_HDRLEN, NLMSG_NOOP, NLMSG_OVERRUN, RTM_GETLINK,
                                  SOL_NETLINK, done_error, iter_messages, nlmsg, parse_error)

SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33

# Receive-buffer charge of one NLMSG_ERROR with an extended-ack message
# (DESIGN.md: 256 ACKs fill 208 KiB, ~830 bytes each). Used to drain errors
# between sendmsg calls before they could overflow the buffer.
ERROR_TRUESIZE = 1024
# The kernel builds dump datagrams of at most 32 KiB; a bigger buffer lets
# one recv take any single datagram (MSG_TRUNC tells if one did not fit).
RECV_SIZE = 256 * 1024


@dataclass(eq=False)
class NetlinkError(NetcfgError):
    """The kernel refused a request.

    ``index`` is the request's position in its batch, ``tag`` whatever the
    caller attached to it (the Operation), ``kernel_message`` the kernel's
    extended-ack text (NLMSGERR_ATTR_MSG), when it gave one.
    """

    exit_code = EXIT_APPLY_FAILED_REVERTED

    errno: int
    msg_type: int
    kernel_message: str | None = None
    index: int | None = None
    tag: Any = None
    attr_offset: int | None = None

    def __post_init__(self) -> None:
        super().__init__(self._text())

    @property
    def errno_name(self) -> str:
        return errno_mod.errorcode.get(self.errno, str(self.errno))

    @property
    def retryable(self) -> bool:
        # EBUSY/EAGAIN: a device is being torn down or a lock was contended.
        return self.errno in (errno_mod.EBUSY, errno_mod.EAGAIN)

    def errno_text(self) -> str:
        """The kernel's reason alone: ``No such device (ENODEV): extack text``."""
        kernel = f": {self.kernel_message}" if self.kernel_message else ""
        return f"{os.strerror(self.errno)} ({self.errno_name}){kernel}"

    def _text(self) -> str:
        what = MESSAGE_NAMES.get(self.msg_type, f"message type {self.msg_type}")
        where = f" #{self.index}" if self.index is not None else ""
        tag = f" ({self.tag})" if self.tag is not None else ""
        return f"{what}{where}{tag}: {self.errno_text()}"


class DumpInterrupted(NetcfgError):
    """The table changed while it was dumped (NLM_F_DUMP_INTR): dump again."""

    retryable = True


class AcksLost(NetcfgError):
    """The receive buffer overflowed (ENOBUFS): errors of the batch were lost.

    What was applied is unknown; read the state back before going on.
    """

    retryable = False


@dataclass(slots=True)
class BatchResult:
    """The outcome of ``transact``: one entry per request, None where it succeeded."""

    errors: list[NetlinkError | None]

    @property
    def ok(self) -> bool:
        return not any(self.errors)

    def failed(self) -> list[NetlinkError]:
        return [e for e in self.errors if e is not None]

    def raise_first(self) -> None:
        for error in self.errors:
            if error is not None:
                raise error


@dataclass(slots=True)
class Counters:
    """What a socket did, for benchmarks and for tests that pin the batching.

    ``messages_sent`` counts every netlink message, barriers and dump
    requests included; ``acks`` the NLMSG_ERROR messages with errno 0.
    """

    messages_sent: int = 0
    sendmsg_calls: int = 0
    recv_calls: int = 0
    bytes_received: int = 0
    acks: int = 0
    errors: int = 0

    def copy(self) -> "Counters":
        return dataclasses.replace(self)

    def since(self, before: "Counters") -> "Counters":
        """What was done after ``before`` (a copy taken earlier).

        Field by field, not dataclasses.astuple: that deep-copies, and a read
        of 1000 namespaces spent 0.09 s in it."""
        return Counters(*(getattr(self, f) - getattr(before, f) for f in _COUNTER_FIELDS))


_COUNTER_FIELDS = tuple(f.name for f in dataclasses.fields(Counters))


class Dump:
    """The replies to one dump request; iterate once for (type, flags, payload).

    After iteration ``filtered`` says whether the kernel applied the
    request's filter (NLM_F_DUMP_FILTERED): when it did not (an old kernel,
    a kind whose module is not loaded), the caller must filter itself.
    NLM_F_DUMP_INTR raises DumpInterrupted once the dump is read to its end.
    """

    def __init__(self, sock: "RtnlSocket", msg_type: int, seq: int):
        self._sock = sock
        self.msg_type = msg_type
        self.seq = seq
        self.filtered = False
        self.interrupted = False
        self.done = False
        self.superseded = False
        self.count = 0
        self._end_read = False

    def finish(self) -> None:
        """Read what is left of the dump and drop it (the kernel runs one dump at a time)."""
        if not self.done:
            self.done = True
            self.superseded = True
            if not self._end_read:
                self._sock._drain_dump(self.seq)

    def __iter__(self) -> Iterator[tuple[int, int, memoryview]]:
        try:
            while not self.done:
                messages = list(iter_messages(self._sock._recv()))
                # A small dump's end shares the datagram with its last objects:
                # an iteration stopped before it must not wait for it again.
                self._end_read = any(m[0] in (NLMSG_DONE, NLMSG_ERROR) and m[2] == self.seq
                                     for m in messages)
                for msg_type, flags, seq, payload in messages:
                    if seq != self.seq:
                        continue  # left over from an abandoned exchange
                    if flags & NLM_F_DUMP_FILTERED:
                        self.filtered = True
                    if flags & NLM_F_DUMP_INTR:
                        self.interrupted = True
                    if msg_type == NLMSG_DONE:
                        self.done = True
                        err = done_error(payload)
                        if err:
                            raise NetlinkError(err, self.msg_type)
                        if self.count == 0 and self.msg_type == RTM_GETLINK:
                            # Link dumps flag only the links they send, so an
                            # empty one carries no flag; but an unfiltered one
                            # is never empty (every namespace has lo).
                            self.filtered = True
                        break
                    if msg_type == NLMSG_ERROR:
                        self.done = True
                        err, _type, text, offs = parse_error(payload, flags)
                        raise NetlinkError(err, self.msg_type, text, attr_offset=offs)
                    self.count += 1
                    yield msg_type, flags, payload
                    if self.superseded:
                        raise RuntimeError("dump resumed after the socket moved on to another "
                                           "request; its results are incomplete")
        finally:
            self.finish()
        if self.interrupted:
            raise DumpInterrupted(
                f"{MESSAGE_NAMES.get(self.msg_type, self.msg_type)} dump was interrupted "
                "by a concurrent change (NLM_F_DUMP_INTR); dump again")


class OwnsSocket:
    """Owns ``self.sock``: close() closes it, and so does leaving a ``with``."""

    sock: socket.socket

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RtnlSocket(OwnsSocket):
    """A NETLINK_ROUTE socket set up for batched writes and kernel-filtered dumps.

    Wraps ``sock`` as given, so a socket opened inside another namespace
    (by a thread that setns()ed there) serves that namespace; ``open()``
    makes one in the current namespace.
    """

    def __init__(self, sock: socket.socket, *, rcvbuf: int = 32 << 20, sndbuf: int = 512 << 10):
        self.sock = sock
        self.counters = Counters()
        self._seq = 0
        self._dump: Dump | None = None   # the dump in progress, if any
        sock.setblocking(True)   # transact's between-sends drain relies on MSG_DONTWAIT alone
        if sock.getsockname()[0] == 0:
            sock.bind((0, 0))
        self.rcvbuf = force_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, rcvbuf)
        self.sndbuf = force_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, sndbuf)
        # netlink_sendmsg refuses a datagram longer than sk_sndbuf - 32.
        self.max_send = self.sndbuf - 32
        self.cap_ack = _try_option(sock, NETLINK_CAP_ACK)
        self.ext_ack = _try_option(sock, NETLINK_EXT_ACK)
        self.strict_check = _try_option(sock, NETLINK_GET_STRICT_CHK)

    @classmethod
    def open(cls, **options: int) -> "RtnlSocket":
        """A socket on the current thread's network namespace."""
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                             NETLINK_ROUTE)
        try:
            return cls(sock, **options)
        except BaseException:
            sock.close()
            raise

    # --- writes -----------------------------------------------------------
    def transact(self, requests: Sequence[Request], max_send: int | None = None) -> BatchResult:
        """Send ``requests`` in as few sendmsg calls as fit, then one ACKed barrier.

        Returns the error of each request by index; a failed request does not
        stop the ones after it (the kernel goes on through the datagram).
        ``max_send`` caps the bytes of one sendmsg (default: the send buffer).
        """
        limit = min(max_send or self.max_send, self.max_send)
        count = len(requests)
        first = self._take_seq(count + 1)
        barrier_seq = first + count
        errors: list[NetlinkError | None] = [None] * count
        # Errors the receive buffer can hold unread; past that, read between sends.
        unread_cap = max(1, self.rcvbuf // (2 * ERROR_TRUESIZE))
        unread = 0
        chunk: list[bytes] = []
        size = 0
        for i, req in enumerate(requests):
            if req.type & 3 == 2 and req.flags & NLM_F_DUMP == NLM_F_DUMP:  # an RTM_GET* dump
                raise ValueError("a dump cannot be part of a batch; use dump()")
            msg = nlmsg(req.type, (req.flags & ~NLM_F_ACK) | NLM_F_REQUEST, first + i, req.payload)
            if len(msg) > limit:
                raise ValueError(f"request #{i} is {len(msg)} bytes, over the {limit} bytes "
                                 "one sendmsg may carry")
            if size + len(msg) > limit or len(chunk) >= unread_cap:
                self._send(b"".join(chunk), len(chunk))
                unread += len(chunk)
                chunk, size = [], 0
                if unread >= unread_cap:
                    self._collect(first, count, requests, errors, barrier_seq, block=False)
                    unread = 0
            chunk.append(msg)
            size += len(msg)
        barrier = nlmsg(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, barrier_seq, b"")
        if size + len(barrier) > limit:
            self._send(b"".join(chunk), len(chunk))
            chunk = []
        chunk.append(barrier)
        self._send(b"".join(chunk), len(chunk))
        self._collect(first, count, requests, errors, barrier_seq, block=True)
        return BatchResult(errors)

    def request(self, msg_type: int, flags: int, payload: bytes, tag: Any = None) -> None:
        """Send one ACKed request and wait for its answer; raises NetlinkError."""
        seq = self._take_seq(1)
        self._send(nlmsg(msg_type, flags | NLM_F_REQUEST | NLM_F_ACK, seq, payload), 1)
        while True:
            for rtype, rflags, rseq, rpayload in iter_messages(self._recv()):
                if rseq != seq or rtype != NLMSG_ERROR:
                    continue
                err, _type, text, offs = parse_error(rpayload, rflags)
                self._count_ack(err)
                if err:
                    raise NetlinkError(err, msg_type, text, tag=tag, attr_offset=offs)
                return

    def get(self, msg_type: int, payload: bytes) -> tuple[int, int, memoryview]:
        """One object by key, not a dump: the kernel's single reply.

        Equivalent to: `ip link show dev eth0` (RTM_GETLINK with IFLA_IFNAME).
        """
        seq = self._take_seq(1)
        self._send(nlmsg(msg_type, NLM_F_REQUEST, seq, payload), 1)
        while True:
            for rtype, rflags, rseq, rpayload in iter_messages(self._recv()):
                if rseq != seq:
                    continue
                if rtype == NLMSG_ERROR:
                    err, _type, text, offs = parse_error(rpayload, rflags)
                    self._count_ack(err)
                    if err:
                        raise NetlinkError(err, msg_type, text, attr_offset=offs)
                    continue
                return rtype, rflags, rpayload

    # --- reads ------------------------------------------------------------
    def dump(self, msg_type: int, payload: bytes, flags: int = NLM_F_DUMP) -> Dump:
        """Start a dump; iterate the result for (type, flags, payload).

        With the filters of nlmsg.getlink_dump / getaddr_dump / getroute_dump
        in ``payload`` the kernel sends only matching objects.
        Equivalent to: `ip link show`, `ip address show`, `ip route show table all`.
        """
        seq = self._take_seq(1)
        self._send(nlmsg(msg_type, flags | NLM_F_REQUEST, seq, payload), 1)
        self._dump = Dump(self, msg_type, seq)
        return self._dump

    # --- plumbing ---------------------------------------------------------
    def _take_seq(self, n: int) -> int:
        # Every exchange starts here: a dump left unread would answer EBUSY to
        # the next dump and mix its messages into the next reads.
        if self._dump is not None:
            self._dump.finish()
            self._dump = None
        # Sequence numbers wrap at 2**32; seq 0 is left unused.
        if self._seq + n + 1 >= 1 << 32:
            self._seq = 0
        first = self._seq + 1
        self._seq += n
        return first

    def _send(self, data: bytes, messages: int) -> None:
        self.sock.sendto(data, (0, 0))
        self.counters.sendmsg_calls += 1
        self.counters.messages_sent += messages

    def _recv(self, flags: int = 0) -> bytes:
        try:
            n = self.sock.recv_into(_receive_buffer(), RECV_SIZE, flags | socket.MSG_TRUNC)
        except OSError as e:
            if e.errno == errno_mod.ENOBUFS:
                raise AcksLost("netlink receive buffer overflowed (ENOBUFS): answers from the "
                               "kernel were lost; read the state back") from None
            raise
        self.counters.recv_calls += 1
        self.counters.bytes_received += n
        if n > RECV_SIZE:
            raise AcksLost(f"a netlink datagram of {n} bytes did not fit {RECV_SIZE}")
        return bytes(_receive_buffer()[:n])

    def _count_ack(self, err: int) -> None:
        if err:
            self.counters.errors += 1
        else:
            self.counters.acks += 1

    def _collect(self, first: int, count: int, requests: Sequence[Request],
                 errors: list[NetlinkError | None], barrier_seq: int, block: bool) -> None:
        """Read the errors of a batch until its barrier's ACK (or, not blocking, until none wait)."""
        while True:
            try:
                data = self._recv(0 if block else socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            for msg_type, flags, seq, payload in iter_messages(data):
                if msg_type == NLMSG_OVERRUN:
                    raise AcksLost("netlink overrun while reading a batch's answers")
                if msg_type != NLMSG_ERROR:
                    continue  # a reply to NLM_F_ECHO, not asked for here
                err, orig_type, text, offs = parse_error(payload, flags)
                self._count_ack(err)
                if seq == barrier_seq:
                    if block:
                        return
                    continue
                i = seq - first
                if err and 0 <= i < count:
                    errors[i] = NetlinkError(err, orig_type, text, index=i,
                                             tag=requests[i].tag, attr_offset=offs)

    def _drain_dump(self, seq: int) -> None:
        """Read an abandoned dump to its end so the next exchange starts clean."""
        while True:
            for msg_type, _flags, rseq, _payload in iter_messages(self._recv()):
                if rseq == seq and msg_type in (NLMSG_DONE, NLMSG_ERROR):
                    return


_per_thread = threading.local()


def _receive_buffer() -> memoryview:
    """The scratch buffer every RtnlSocket of this thread receives into (what
    is kept is copied out). One per socket cost 256 KiB and ~0.11 ms of page
    faults each: a tenth of a second and 256 MiB for 1000 namespaces."""
    view = getattr(_per_thread, "view", None)
    if view is None:
        view = _per_thread.view = memoryview(bytearray(RECV_SIZE))
    return view


def force_buffer(sock: socket.socket, force_opt: int, opt: int, size: int) -> int:
    """Set a socket buffer past the sysctl cap when allowed; the size in effect."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, force_opt, size)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, opt, size)
    # The kernel doubles the value (bookkeeping overhead) and reports the doubled size.
    return sock.getsockopt(socket.SOL_SOCKET, opt)


def _try_option(sock: socket.socket, option: int) -> bool:
    try:
        sock.setsockopt(SOL_NETLINK, option, 1)
    except OSError:
        return False
    return True


__all__ = [
    "AcksLost", "BatchResult", "Counters", "Dump", "DumpInterrupted", "NetlinkError",
    "Request", "RtnlSocket", "NLMSG_HDRLEN",
]
