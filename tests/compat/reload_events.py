"""What a reload did to the kernel, from its netlink events: recorded, then judged.

`Monitor` listens (pyroute2, bound to the link, address and route groups: the
same messages `ip monitor link address route` prints, decoded by field rather
than read back from text) in a forked child, from before a reload starts to
after it ends, and writes one JSON line per event. Start and end are marked
by an alias written on lo, so the recording is known to cover the whole
reload (a listener bound late would miss the first events).

`disruptions` reads those events with the devices' state before the reload
and the pair's declared expectation (what the edit asks for), and returns
each disruptive request beyond it:

* a link going down (IFF_UP cleared) that the edit did not ask to go down;
* a device deleted, or deleted and made again, that the edit did not remove
  or change immutably;
* a port leaving its master (or moving to another);
* an address, or a route that is not the kernel's own, removed.

What follows from a counted or asked event is not counted again: the
addresses and routes the kernel drops with a link that went down or was
deleted, the ports a deleted master lets go, the kernel's own routes of a
removed address. It is pure (no kernel), so tests/compat/test_reload.py
unit-tests it directly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

AF_UNSPEC, AF_BRIDGE = 0, 7
IFF_UP = 0x1
RTPROT_KERNEL = 2
RT_TABLE_LOCAL = 255
MARK_START, MARK_END = "netcfg-reload-start", "netcfg-reload-end"
READY_TIMEOUT_S = 30.0


# ---- recording (in the sandbox) ---------------------------------------------------------

def _event(msg) -> dict | None:
    """One netlink message as the judge reads it (names resolved later, by index)."""
    kind = msg["event"]
    if kind in ("RTM_NEWLINK", "RTM_DELLINK"):
        return {"event": kind, "family": msg["family"], "index": msg["index"],
                "name": msg.get_attr("IFLA_IFNAME"), "up": bool(msg["flags"] & IFF_UP),
                "master": msg.get_attr("IFLA_MASTER") or 0,
                "alias": msg.get_attr("IFLA_IFALIAS")}
    if kind in ("RTM_NEWADDR", "RTM_DELADDR"):
        local = msg.get_attr("IFA_LOCAL") or msg.get_attr("IFA_ADDRESS")
        return {"event": kind, "index": msg["index"], "addr": f"{local}/{msg['prefixlen']}"}
    if kind in ("RTM_NEWROUTE", "RTM_DELROUTE"):
        dst = msg.get_attr("RTA_DST")
        return {"event": kind, "dst": f"{dst}/{msg['dst_len']}" if dst else "default",
                "proto": msg["proto"], "table": msg.get_attr("RTA_TABLE") or msg["table"],
                "index": msg.get_attr("RTA_OIF") or 0,
                "gateway": msg.get_attr("RTA_GATEWAY")}
    return None


def _listen(out_path: str) -> None:
    """The child: every event, one JSON line, until the end mark."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.rtnl import (RTMGRP_IPV4_IFADDR, RTMGRP_IPV4_ROUTE,
                                       RTMGRP_IPV6_IFADDR, RTMGRP_IPV6_ROUTE, RTMGRP_LINK)

    ipr = IPRoute()
    ipr.bind(groups=RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR
             | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE)
    with open(out_path, "w") as out:
        out.write(json.dumps({"event": "bound"}) + "\n")
        out.flush()
        while True:
            for msg in ipr.get():
                ev = _event(msg)
                if ev is None:
                    continue
                out.write(json.dumps(ev) + "\n")
                out.flush()
                if ev.get("alias") == MARK_END:
                    return


class Monitor:
    """Recording from start() to stop(); events() returns them between the marks."""

    def __init__(self, out_path: str) -> None:
        self.out_path = out_path
        self.pid = 0

    def _mark(self, alias: str) -> None:
        # An alias on lo (up: the kernel notifies only for a device that is up).
        subprocess.run(["ip", "link", "set", "dev", "lo", "alias", alias], check=True)

    def _wait_for(self, alias: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if os.path.exists(self.out_path) and \
                    f'"alias": "{alias}"' in Path(self.out_path).read_text():
                return
            time.sleep(0.05)
        raise RuntimeError(f"netlink monitor never saw its mark {alias}")

    def start(self) -> None:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _listen(self.out_path)
            except BaseException:   # noqa: BLE001 - the child reports through its exit
                code = 1
            os._exit(code)
        self.pid = pid
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not (os.path.exists(self.out_path) and Path(self.out_path).read_text()):
            if time.monotonic() > deadline:
                raise RuntimeError("netlink monitor did not start")
            time.sleep(0.02)
        self._mark(MARK_START)
        self._wait_for(MARK_START)

    def stop(self) -> None:
        try:
            self._mark(MARK_END)
            self._wait_for(MARK_END)
        finally:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            subprocess.run(["ip", "link", "set", "dev", "lo", "alias", ""], check=False)

    def events(self) -> list[dict]:
        rows = [json.loads(ln) for ln in Path(self.out_path).read_text().splitlines() if ln]
        start = next(i for i, r in enumerate(rows) if r.get("alias") == MARK_START)
        end = next(i for i, r in enumerate(rows) if r.get("alias") == MARK_END)
        return rows[start + 1:end]


def links_now() -> dict[int, dict]:
    """index -> name, up, master index: the devices before the reload (`ip -j link show`)."""
    proc = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True,
                          check=True)
    by_name = {link["ifname"]: link for link in json.loads(proc.stdout)}
    return {link["ifindex"]: {"name": name, "up": "UP" in link.get("flags", []),
                              "master": by_name[link["master"]]["ifindex"]
                              if link.get("master") in by_name else 0}
            for name, link in by_name.items()}


# ---- judging (pure) ---------------------------------------------------------------------

@dataclass(frozen=True)
class Asks:
    """What an edit asks of the running devices, from the pair's `asks` lines:
    `down DEV`, `del DEV`, `recreate DEV`, `unmaster PORT`, `addr-del DEV ADDR|*`,
    `route-del DST`."""

    down: frozenset = frozenset()
    deleted: frozenset = frozenset()
    unmaster: frozenset = frozenset()
    addr_del: frozenset = frozenset()       # (dev, addr or "*")
    route_del: frozenset = frozenset()

    @classmethod
    def parse(cls, lines: list[str], where: str = "asks") -> "Asks":
        sets: dict[str, set] = {"down": set(), "deleted": set(), "unmaster": set(),
                                "addr_del": set(), "route_del": set()}
        for line in lines:
            words = line.split()
            verb, args = (words[0], words[1:]) if words else ("", [])
            if verb == "down" and len(args) == 1:
                sets["down"].add(args[0])
            elif verb in ("del", "recreate") and len(args) == 1:
                sets["deleted"].add(args[0])
            elif verb == "unmaster" and len(args) == 1:
                sets["unmaster"].add(args[0])
            elif verb == "addr-del" and len(args) == 2:
                sets["addr_del"].add((args[0], args[1]))
            elif verb == "route-del" and len(args) == 1:
                sets["route_del"].add(args[0])
            else:
                raise ValueError(f"{where}: {line!r}: expected down DEV, del DEV, recreate "
                                 f"DEV, unmaster PORT, addr-del DEV ADDR|*, route-del DST")
        return cls(**{k: frozenset(v) for k, v in sets.items()})


@dataclass
class Judged:
    disruptive: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)      # disruptive-looking, but asked for
    events: int = 0


def disruptions(before: dict[int, dict], events: list[dict], asks: Asks,
                ignore: tuple[str, ...] = ("cmp",)) -> Judged:
    """The disruptive requests among ``events`` beyond ``asks`` (module docstring).
    ``before``: links_now() when the recording started; devices whose names start
    with one of ``ignore`` (the stand-in NICs' peers) are not judged."""
    links = {i: dict(v) for i, v in before.items()}
    names = {i: v["name"] for i, v in before.items()}
    for ev in events:       # every index's name, also of devices made during the reload
        if ev.get("name"):
            names.setdefault(ev["index"], ev["name"])
    deleted = {ev["name"] or names.get(ev["index"]) for ev in events
               if ev["event"] == "RTM_DELLINK" and ev["family"] == AF_UNSPEC}
    downed: set[str] = set()
    made_again: set[str] = set()
    out = Judged(events=len(events))

    def verdict(text: str, asked: bool) -> None:
        (out.asked if asked else out.disruptive).append(text)

    for ev in events:
        kind = ev["event"]
        name = ev.get("name") or names.get(ev.get("index"), f"#{ev.get('index')}")
        if name.startswith(ignore) or name == "lo":
            continue
        if kind in ("RTM_NEWLINK", "RTM_DELLINK") and ev["family"] != AF_UNSPEC:
            continue        # AF_BRIDGE port messages: their AF_UNSPEC twin says it
        if kind == "RTM_DELLINK":
            downed.add(name)
            verdict(f"{name} deleted", name in asks.deleted)
            links.pop(ev["index"], None)
        elif kind == "RTM_NEWLINK":
            old = links.get(ev["index"])
            if old is None:
                if name in deleted and name not in made_again:
                    made_again.add(name)        # the deletion was counted (or asked)
                links[ev["index"]] = {"name": name, "up": ev["up"], "master": ev["master"]}
                continue
            if old["up"] and not ev["up"]:
                downed.add(name)
                verdict(f"{name} set down", name in asks.down | asks.deleted)
            if old["master"] and old["master"] != ev["master"]:
                master = names.get(old["master"], f"#{old['master']}")
                new = names.get(ev["master"]) if ev["master"] else None
                # A master being deleted lets its ports go: that deletion is the request.
                if master not in deleted:
                    text = f"{name} left master {master}" + (f" for {new}" if new else "")
                    verdict(text, name in asks.unmaster | asks.deleted)
            old.update(up=ev["up"], master=ev["master"])
        elif kind == "RTM_DELADDR":
            if name in downed or name in deleted:
                continue
            if ev["addr"].startswith("fe80:") and not links.get(ev["index"], {}).get("up"):
                continue
            verdict(f"{name} address {ev['addr']} removed",
                    (name, ev["addr"]) in asks.addr_del or (name, "*") in asks.addr_del)
        elif kind == "RTM_DELROUTE":
            if ev["proto"] == RTPROT_KERNEL or ev["table"] == RT_TABLE_LOCAL:
                continue    # the kernel's own, following an address or a link
            if name in downed or name in deleted:
                continue
            verdict(f"route {ev['dst']} dev {name} removed", ev["dst"] in asks.route_del)
    return out
