"""ifupdown-ng's dialect (issue 22): its `use EXECUTOR` lines, `requires`, and
the executors' settings, said in netcfg's terms (docs/compat.md, "Lines that
do nothing here, and the dialect").

    auto eth0                     # ifupdown-ng                 netcfg
    iface eth0
        use dhcp                  # its dhcp executor            inet dhcp
        dhcp-hostname web1        # dhcpcd -h / udhcpc -x        hostname web1
        use ipv6-ra               # accept_ra 1 (2: forwarding)  accept-ra 1
        use ipv6-tempaddr         # use_tempaddr 2               privext 2

    auto br0
    iface br0
        use bridge
        requires bond0            # bond0 up before br0          requires bond0,
                                  #   and br0's bridge-ports     bridge-ports bond0

What ifupdown-ng does was read from its source (e42da09): executors/linux/*,
libifupdown/interface-file.c (its remap table and `use`),
libifupdown/lifecycle.c (`requires`: dependencies go up first; a bridge's
`requires` is its IF_BRIDGE_PORTS), libifupdown/interface.c (a name with no
stanza is an interface with the `link` executor: brought up).

Executors netcfg does not run stay `use` lines for compile/unsupported.py's
warning; a device only such an executor makes (cake-ingress's ifb,
wireguard-quick's wg-quick device) is left out of the model with a warning
(``left_to_executors``), as `inet ppp` is, so apply never looks for it.
"""

from __future__ import annotations

from netcfg.compile.syntax import RawAttribute, Stanza
from netcfg.compile.unsupported import inert_warning
from netcfg.model.errors import Report
from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.plan.graph import find_cycle

USE = "use"
REQUIRES = "requires"
DHCP_METHOD = "dhcp"
PPP_PROVIDER = "ppp-provider"
_MEMBER_LINES = ("bond-members", "bond-slaves", "slaves")
_FORWARDING = ("forward-ipv6", "ip6-forward")
_YES = ("yes", "1", "on", "true")

# Executors whose device netcfg cannot make: the stanza is theirs alone.
_MAKES_THE_DEVICE = {
    "cake-ingress": ("ifupdown-ng's cake-ingress executor makes it ('ip link add {name} type "
                     "ifb') and redirects the ingress traffic of its cake-ingress-dev to it with "
                     "tc; netcfg makes no ifb device and runs no tc"),
    "wireguard-quick": ("ifupdown-ng's wireguard-quick executor makes it with 'wg-quick up "
                        "{name}' from /etc/wireguard/{name}.conf; netcfg does not run wg-quick "
                        "(its wireguard kind configures a tunnel from the stanza's own lines)"),
}


def ng_lines(stanza: Stanza, report: Report) -> Stanza:
    """The stanza with ifupdown-ng's executor selections that netcfg carries
    out said in netcfg's lines; other stanzas unchanged."""
    if stanza.keyword != IFACE:
        return stanza
    names = {a.name for a in stanza.attributes}
    if USE not in names and PPP_PROVIDER not in names:
        return stanza
    family, method = stanza.family, stanza.method
    out: list[RawAttribute] = []
    executors: set[str] = set()
    for raw in stanza.attributes:
        if raw.name != USE:
            out.append(raw)
            continue
        kept = []
        for executor in raw.value.split():
            executors.add(executor)
            if executor == DHCP_METHOD:
                family, method = _dhcp(stanza, raw, family, method, report)
            elif executor == "ipv6-ra":
                out.extend(_unless_written(names, "accept-ra", _accept_ra(stanza), raw))
            elif executor == "ipv6-tempaddr":
                out.extend(_unless_written(names, "privext", "2", raw))
            else:
                kept.append(executor)
        if kept:
            out.append(RawAttribute(USE, " ".join(kept), raw.loc))
    if PPP_PROVIDER in names and method is None:
        # ifupdown-ng's ppp executor (chosen by the ppp- line): `pon PROVIDER`,
        # as ifupdown's inet ppp with `provider` (compile/build.py warns).
        family, method = "inet", "ppp"
        out = [RawAttribute("provider", r.value, r.loc) if r.name == PPP_PROVIDER else r
               for r in out]
    if "bond" in executors and names.isdisjoint(_MEMBER_LINES):
        # ifupdown-ng's bond executor makes the bond whatever its members;
        # only bond-members enslaves (its `requires` orders, nothing more).
        out = _without_use(out, "bond")
        out.append(RawAttribute("bond-slaves", "none", _line(stanza, USE)))
        requires = _first(stanza, REQUIRES)
        if requires is not None:
            report.warning(requires.loc, f"{stanza.name}: the bond gets no members from "
                           f"'requires {requires.value}': ifupdown-ng's bond executor "
                           f"enslaves only bond-members, and requires brings them up first; "
                           f"write 'bond-members {requires.value}' to enslave them", REQUIRES)
    if "bridge" in executors and "bridge-ports" not in names:
        requires = _first(stanza, REQUIRES)
        if requires is not None:
            # lifecycle.c: a bridge's `requires` is its IF_BRIDGE_PORTS.
            out = _without_use(out, "bridge")
            out.append(RawAttribute("bridge-ports", requires.value, requires.loc))
    return Stanza(stanza.keyword, stanza.name, stanza.loc, family, method, out)


def _dhcp(stanza: Stanza, raw: RawAttribute, family: str | None, method: str | None,
          report: Report) -> tuple[str | None, str | None]:
    """`use dhcp`: ifupdown-ng's dhcp executor starts dhcpcd, dhclient or
    udhcpc on the interface: netcfg's inet dhcp (dhclient -4, or dhcpcd)."""
    if method is None:
        return "inet", DHCP_METHOD
    if method != DHCP_METHOD:
        report.error(raw.loc, f"{stanza.name}: use dhcp contradicts {family} {method} "
                     f"({stanza.loc}): ifupdown-ng would run its {method} and dhcp executors "
                     f"both; netcfg takes one method per family: drop 'use dhcp', or write "
                     f"'iface {stanza.name} inet dhcp'", USE)
    return family, method


def _accept_ra(stanza: Stanza) -> str:
    """ifupdown-ng's ipv6-ra executor writes accept_ra 2 where the interface
    forwards IPv6 (RAs are ignored there at 1), else 1."""
    forwarding = next((a.value for a in stanza.attributes if a.name in _FORWARDING), "")
    return "2" if forwarding.strip().lower() in _YES else "1"


def _unless_written(names: set[str], attribute: str, value: str,
                    raw: RawAttribute) -> list[RawAttribute]:
    # The stanza's own line says what it wants; the executor's would contradict.
    return [] if attribute in names else [RawAttribute(attribute, value, raw.loc)]


def _without_use(attributes: list[RawAttribute], executor: str) -> list[RawAttribute]:
    """``attributes`` less ``executor`` on their `use` lines: a selection
    netcfg carried out (it made the lines the executor reads) is no line
    that does nothing."""
    out = []
    for raw in attributes:
        if raw.name == USE and executor in raw.value.split():
            rest = [e for e in raw.value.split() if e != executor]
            if not rest:
                continue
            raw = RawAttribute(USE, " ".join(rest), raw.loc)
        out.append(raw)
    return out


def _first(stanza: Stanza, name: str) -> RawAttribute | None:
    return next((a for a in stanza.attributes if a.name == name), None)


def _line(stanza: Stanza, name: str):
    raw = _first(stanza, name)
    return raw.loc if raw is not None else stanza.loc


def left_to_executors(pending: dict, report: Report, left: set[str] = frozenset()) -> set[str]:
    """Interfaces whose device only an ifupdown-ng executor netcfg does not
    run makes (``_MAKES_THE_DEVICE``): left out of the model with a warning
    at the `use` line (--strict refuses it), so netcfg never takes the
    executor's device for a missing port. ``left``: the names already left
    out (to pppd). Returns all the names left out, after taking them out of
    the others' `requires` lines (``_requires_without``)."""
    names = set(left)
    for key, p in list(pending.items()):
        if p.section != IFACE:
            continue
        for raw in p.raws:
            if raw.name != USE:
                continue
            made_by = next((e for e in raw.value.split() if e in _MAKES_THE_DEVICE), None)
            if made_by is None:
                continue
            del pending[key]
            names.add(p.name)
            why = _MAKES_THE_DEVICE[made_by].format(name=p.name)
            report.diagnostics.append(inert_warning(
                raw.loc, f"{p.name}: use {made_by} does nothing here: {why}; the stanza is "
                f"left alone (ifupdown2 ignores the line too)", USE))
            break
    _requires_without(pending, names, report)
    return names


def _requires_without(pending: dict, left: set[str], report: Report) -> None:
    """`requires` of an interface another program makes (pppd's ppp0): netcfg
    cannot wait for it, and naming it would make netcfg take it for a device
    of the host and set it up. It is taken out of the line, with a warning
    there (--strict refuses it): the interface comes up without waiting."""
    if not left:
        return
    for p in pending.values():
        if p.section != IFACE:
            continue
        for index, raw in enumerate(p.raws):
            if raw.name != REQUIRES:
                continue
            words = raw.value.split()
            gone = [w for w in words if w in left]
            if not gone:
                continue
            kept = [w for w in words if w not in left]
            report.diagnostics.append(inert_warning(
                raw.loc, f"{p.name}: requires {' '.join(gone)} does nothing here: another "
                f"program makes {', '.join(gone)} (the warning at its stanza says which), so "
                f"netcfg cannot wait for it; {p.name} comes up without waiting", REQUIRES))
            p.raws[index] = RawAttribute(REQUIRES, " ".join(kept), raw.loc)


def requires_loops(model: Model, report: Report) -> None:
    """A `requires` loop (a requires b, b requires a; or through a lower
    device: a VLAN on a bond that requires the VLAN) is an error at the line
    that closes it: no order brings each up after the other. ifupdown-ng
    breaks such a loop wherever its walk enters it (its is_pending flag) and
    says nothing; which interface then comes up first depends on the order of
    the file."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    lines: dict[tuple[tuple[str, str], tuple[str, str]], ConfigObject] = {}
    for obj in model.interfaces.values():
        required = obj.attrs.get(REQUIRES)
        if not required:
            continue
        for name in required:
            target = (obj.netns, name)
            edges.setdefault(obj.key, []).append(target)
            lines[(obj.key, target)] = obj
    if not edges:
        return
    for obj in model.interfaces.values():
        lower = obj.attrs.get("vlan-raw-device") or obj.attrs.get("macvlan-raw-device")
        if lower:
            edges.setdefault(obj.key, []).append((obj.netns, lower))
    cycle = find_cycle(edges)
    if not cycle:
        return
    steps = list(zip(cycle, cycle[1:]))
    first = next(step for step in steps if step in lines)
    obj = lines[first]
    path = " -> ".join(name for _, name in cycle)
    report.error(obj.where(REQUIRES),
                 f"{obj.label()}: requires loop {path}: no order brings each of them up after "
                 f"the other. ifupdown-ng breaks such a loop wherever its walk enters it and "
                 f"says nothing, so which comes up first depends on the file's order; remove "
                 f"one of the requires lines", REQUIRES)

