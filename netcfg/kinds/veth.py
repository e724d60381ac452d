"""A veth pair: two devices joined back to back, often across namespaces.

    iface veth-t1
        veth-peer-name eth0
        veth-peer-netns t1      # extension: the peer's namespace
        address 10.0.1.1/30

    iface eth0                  # optional: configure the peer too
        netns t1
        veth-peer-name veth-t1
        veth-peer-netns ""      # "" is the host's (root) namespace
        address 10.0.1.2/30

Only one side needs declaring; the other is implied. Both ends are one
kernel object created by one request, so exactly one side (see owner())
creates the pair, with the peer made straight inside its namespace.
"""

from __future__ import annotations

import re

from netcfg.kinds.base import PEER, Kind, Reference, drop_own_netns
from netcfg.model.model import IFACE, ConfigObject, Model

PEER_NAME = "veth-peer-name"
PEER_NETNS = "veth-peer-netns"
# As the common `netns` attribute's pattern; "" (the host's) is allowed too.
_NETNS_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def peer_key(obj: ConfigObject) -> tuple[str, str] | None:
    """(netns, name) of the other end; the peer defaults to this side's namespace."""
    name = obj.attrs.get(PEER_NAME)
    if name is None:
        return None
    return (obj.attrs.get(PEER_NETNS, obj.netns), name)


def owner(obj: ConfigObject, model: Model) -> bool:
    """True for the side whose create request makes the pair.

    A declared side wins over an implied one; between two declared sides the
    smaller (netns, name) wins, so the choice does not depend on file order.
    """
    if obj.implicit:
        return False
    key = peer_key(obj)
    peer = model.interfaces.get(key) if key else None
    if peer is None or peer.implicit or peer.kind != "veth":
        return True
    return obj.key < peer.key


def netns_word(netns: str) -> str:
    """How a stanza writes a namespace in veth-peer-netns; "" is the host's."""
    return netns or '""'


def check_netns_attribute(obj: ConfigObject, attribute: str, report) -> None:
    """A namespace named by veth-peer-netns, vlan-raw-netns, macvlan-raw-netns.

    Checked here rather than by a schema pattern so that the message can say
    how to write the host's namespace.
    """
    value = obj.attrs.get(attribute)
    if value and not _NETNS_NAME.match(value):
        report.error(obj.where(attribute),
                     f"{obj.label()}: {attribute} '{value}' is not a namespace name (letters, "
                     f"digits, '_', '.', '-', at most 64); write \"\" for the host's namespace",
                     attribute)


def _describe(key: tuple[str, str]) -> str:
    netns, name = key
    return f"{name} (netns {netns})" if netns else name


class Veth(Kind):
    name = "veth"
    link_type = "veth"
    defining_attributes = (PEER_NAME,)
    info_kind = "veth"
    # Moving an end to another peer means a new pair.
    immutable_attributes = frozenset({PEER_NAME, PEER_NETNS})
    link_attributes = (PEER_NAME, PEER_NETNS)
    kernel_bytes = 45_000  # per side; a pair is ~90 kB (DESIGN.md)
    default_mtu = 1500  # ether_setup; each end its own

    def references(self, obj: ConfigObject):
        key = peer_key(obj)
        if key is not None:
            yield Reference(PEER_NAME, PEER, IFACE, key[0], key[1], obj.where(PEER_NAME))

    def implied(self, obj: ConfigObject, model: Model):
        key = peer_key(obj)
        if key is None or key in model.interfaces:
            return ()
        # Up with the side that declared the pair, as implied ports follow
        # their bridge: half a pair up carries nothing.
        peer = ConfigObject(IFACE, key[1], self.name, netns=key[0],
                            attrs={PEER_NAME: obj.name, PEER_NETNS: obj.netns},
                            implicit=True, loc=obj.where(PEER_NAME), auto=obj.auto)
        drop_own_netns(peer, PEER_NETNS)
        return (peer,)

    def complete(self, obj: ConfigObject, report) -> None:
        written = obj.locs.get(PEER_NETNS)
        drop_own_netns(obj, PEER_NETNS)
        if written is not None:
            # Remembered (without the value) so that complete_model infers the
            # peer's namespace only where the config did not say it.
            obj.locs[PEER_NETNS] = written

    def complete_model(self, model: Model, report) -> None:
        """A plain `iface eth0` stanza (in the peer's namespace) that a veth
        names as its peer is that peer: operators write the far end's
        addresses without repeating veth attributes, so it becomes a veth
        rather than a physical port that cannot exist there."""
        _infer_peer_netns(model, report)
        for obj in list(model.interfaces.values()):
            if obj.kind != self.name or obj.implicit:
                continue
            key = peer_key(obj)
            peer = model.interfaces.get(key) if key else None
            if peer is not None and peer.kind == "physical":
                peer.kind = self.name
                peer.attrs[PEER_NAME] = obj.name
                peer.attrs[PEER_NETNS] = obj.netns
                drop_own_netns(peer, PEER_NETNS)
                peer.locs.setdefault(PEER_NAME, obj.where(PEER_NAME))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        check_netns_attribute(obj, PEER_NETNS, report)
        key = peer_key(obj)
        if key is None:
            if PEER_NAME in obj.locs:
                return  # written but invalid: the builder said so
            report.error(obj.loc,
                         f"{obj.label()}: a veth needs the name of its other end; add "
                         f"'{PEER_NAME} NAME' (and '{PEER_NETNS} NS' if the other end lives "
                         f"in another namespace)", PEER_NAME)
            return
        if key == obj.key:
            report.error(obj.where(PEER_NAME),
                         f"{obj.label()}: {PEER_NAME} names this device itself; a veth's "
                         f"peer is a second device with another name", PEER_NAME)
            return
        peer = model.interfaces.get(key)
        if peer is None:
            return  # implied(), or reported as a missing reference
        if peer.kind != "veth":
            message = (f"is declared as a {peer.kind}, not a veth; add "
                       f"'{PEER_NAME} {obj.name}' to {peer.name}, or name another device in "
                       f"{PEER_NAME}")
            report.error(obj.where(PEER_NAME),
                         f"{obj.label()}: peer {_describe(key)} {message}", PEER_NAME)
            # The peer's own kind never runs this check, so say it there too.
            report.error(peer.loc,
                         f"{peer.label()}: {_describe(obj.key)} names it as its veth peer, "
                         f"but it {message}", PEER_NAME)
            return
        back = peer_key(peer)
        if back is not None and back != obj.key:
            hint = (f"'{PEER_NETNS} {netns_word(obj.netns)}'" if back[1] == obj.name
                    else f"'{PEER_NAME} {obj.name}'")
            text = (f"{_describe(obj.key)} and {_describe(key)} disagree about the pair: "
                    f"the first names the second as its peer, the second names "
                    f"{_describe(back)}; write {hint} on {peer.name}")
            report.error(obj.where(PEER_NAME), f"{obj.label()}: {text}", PEER_NAME)
            report.error(peer.where(PEER_NAME), f"{peer.label()}: {text}", PEER_NAME)

    def create_params(self, obj: ConfigObject) -> dict:
        netns, name = peer_key(obj) or (obj.netns, "")
        return {"peer": name, "peer_netns": netns}


def _infer_peer_netns(model: Model, report) -> None:
    """veth-peer-netns left out, and the peer's name not declared in the
    veth's namespace but in exactly one other: the peer's own stanza says
    where it lives (its `netns`), so the pair is made across the two. Only a
    stanza that can be this peer counts: a plain one (no kind of its own yet)
    or a veth that names this one back."""
    by_name: dict[str, list[ConfigObject]] | None = None
    for obj in list(model.interfaces.values()):
        if obj.kind != "veth" or obj.implicit:
            continue
        name = obj.attrs.get(PEER_NAME)
        written = PEER_NETNS in obj.locs
        if name is None or peer_key(obj) in model.interfaces:
            continue
        if by_name is None:
            by_name = {}
            for other in model.interfaces.values():
                if not other.implicit:
                    by_name.setdefault(other.name, []).append(other)
        if written:
            # The peer is made where veth-peer-netns says; a plain stanza of
            # its name elsewhere (this veth's own namespace included) would
            # configure a device nobody makes.
            for stanza in by_name.get(name, ()):
                if stanza.kind == "physical" and stanza.netns != peer_key(obj)[0]:
                    report.error(obj.where(PEER_NETNS),
                                 f"{obj.label()}: {PEER_NETNS} puts {name} in "
                                 f"{_where(peer_key(obj)[0])}, but {name}'s own stanza "
                                 f"({stanza.loc}) is in {_where(stanza.netns)}; write "
                                 f"'{PEER_NETNS} {netns_word(stanza.netns)}', or move the "
                                 f"stanza", PEER_NETNS)
            continue
        candidates = [c for c in by_name.get(name, ()) if _could_be_peer(c, obj)]
        if len(candidates) == 1:
            peer = candidates[0]
            obj.attrs[PEER_NETNS] = peer.netns
            obj.locs[PEER_NETNS] = peer.where("netns")
        elif candidates:
            places = ", ".join(f"{netns_word(c.netns)} ({c.loc})" for c in candidates)
            report.error(obj.where(PEER_NAME),
                         f"{obj.label()}: {PEER_NAME} {name} is declared in several other "
                         f"namespaces ({places}); say which end is this veth's peer with "
                         f"'{PEER_NETNS} NS'", PEER_NAME)


def _where(netns: str) -> str:
    return f"namespace {netns}" if netns else "the host namespace"


def _could_be_peer(candidate: ConfigObject, obj: ConfigObject) -> bool:
    if candidate.netns == obj.netns:
        return False
    if candidate.kind == "physical":
        return True
    if candidate.kind != "veth" or candidate.attrs.get(PEER_NAME) != obj.name:
        return False
    back = peer_key(candidate)
    # It names this veth back, or names a same-named device and leaves its
    # own peer's namespace out too (then both are inferred, each from the other).
    return back == obj.key or PEER_NETNS not in candidate.locs


KIND = Veth()
