"""Recorded rtnetlink dumps, and a socket that answers with them.

A case file (<netns>.dumps; "host" is the host's namespace) holds the
replies of every dump kernel/read.py's read_namespace() sent, in order:

    dump RTM_GETLINK filtered=no request=<payload hex>
    <one reply message's payload, hex>
    ...

capture.py writes them from the real kernel; ReplaySocket answers
read_namespace() with them, so decoding is tested without a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from netcfg.kernel.nl import Counters
from netcfg.netlink.nlmsg import MESSAGE_NAMES

HOST = "host"   # the file name of the host's namespace ("" in the model)
NAME_TYPES = {name: number for number, name in MESSAGE_NAMES.items()}


@dataclass
class RecordedDump:
    msg_type: int
    request: bytes
    filtered: bool
    replies: list[bytes] = field(default_factory=list)


def file_name(netns: str) -> str:
    return f"{netns or HOST}.dumps"


def netns_of(path: Path) -> str:
    name = path.name.removesuffix(".dumps")
    return "" if name == HOST else name


def write_dumps(path: Path, dumps: list[RecordedDump]) -> None:
    lines = []
    for dump in dumps:
        lines.append(f"dump {MESSAGE_NAMES.get(dump.msg_type, dump.msg_type)} "
                     f"filtered={'yes' if dump.filtered else 'no'} request={dump.request.hex()}")
        lines += [reply.hex() for reply in dump.replies]
    path.write_text("\n".join(lines) + "\n")


def read_dumps(path: Path) -> list[RecordedDump]:
    dumps: list[RecordedDump] = []
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("dump "):
            _, kind, filtered, request = line.split()
            msg_type = NAME_TYPES[kind] if kind in NAME_TYPES else int(kind)
            dumps.append(RecordedDump(msg_type, bytes.fromhex(request.removeprefix("request=")),
                                      filtered == "filtered=yes"))
        else:
            dumps[-1].replies.append(bytes.fromhex(line))
    return dumps


class _Replies(list):
    """A dump's replies as RtnlSocket.dump() iterates them: (type, flags, payload)."""

    filtered = False


class ReplaySocket:
    """Answers dump requests, in order, with recorded replies."""

    def __init__(self, dumps: list[RecordedDump]):
        self._dumps = list(dumps)
        self.counters = Counters()

    def dump(self, msg_type: int, payload: bytes) -> _Replies:
        assert self._dumps, f"no recorded dump left for {MESSAGE_NAMES.get(msg_type, msg_type)}"
        recorded = self._dumps.pop(0)
        assert (recorded.msg_type, recorded.request) == (msg_type, bytes(payload)), \
            "read_namespace() asked another dump than the one recorded (run capture.py again)"
        replies = _Replies((msg_type, 0, memoryview(r)) for r in recorded.replies)
        replies.filtered = recorded.filtered
        return replies

    def left(self) -> int:
        return len(self._dumps)


class RecordingSocket:
    """Wraps a real RtnlSocket: each dump read whole and kept, then replayed."""

    def __init__(self, sock):
        self._sock = sock
        self.dumps: list[RecordedDump] = []

    @property
    def counters(self) -> Counters:
        return self._sock.counters

    def dump(self, msg_type: int, payload: bytes) -> _Replies:
        real = self._sock.dump(msg_type, payload)
        messages = [(t, f, bytes(p)) for t, f, p in real]   # DumpInterrupted: not kept
        self.dumps.append(RecordedDump(msg_type, bytes(payload), real.filtered,
                                       [p for _t, _f, p in messages]))
        replies = _Replies((t, f, memoryview(p)) for t, f, p in messages)
        replies.filtered = real.filtered
        return replies
