"""Attributes of other programs: which ones netcfg accepts with a warning, which
it refuses, and why (docs/compat.md, "Lines that do nothing here").

A name no netcfg kind has is looked up here before it is called a typo. The
rule (issue 22):

- a line that can do nothing on this host, because the daemon or kernel
  feature it is for is not there (mstpd's mstpctl-*, Cumulus Linux's clagd
  and LACP bypass, ifupdown-ng's `use`), is **accepted with a warning** at
  its line saying why and what ifupdown2 does with it: ifupdown2 passes such
  lines on too, and refusing them blocks moving a host to netcfg;
- a line for a Debian package that hooks /etc/network/if-*.d itself
  (wpasupplicant, hostapd, resolvconf, ethtool, wireless-tools) is accepted
  with a warning naming the package and whether its hook script is there:
  the hook, run by netcfg's if-*.d runner, reads it as IF_<KEY>;
- a setting ifupdown2 applies and netcfg does not (yet) stays **refused**
  (bridge-mc*, batman-*, ovs-extra, vrrp...): accepting it would leave the
  host other than the file says; ifupdown-ng's `mpls-enable yes` is refused
  where the kernel has MPLS and a warning where it has not.

`--strict` (``strict_errors``) turns the warnings of the first two kinds into
errors. Anything else unknown is a typo, refused with "did you mean".

The accepted lines never enter the model, so nothing of them reaches the
kernel; they stay in the parsed stanzas (Compiled.parsed), where the if-*.d
runner finds them (``hook_lines``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from netcfg.compile.syntax import ParsedConfig
from netcfg.model.errors import Diagnostic
from netcfg.model.location import SourceLocation
from netcfg.model.model import ROOT_NETNS

DAEMON = "a setting of {daemon}, a userspace program netcfg does not run"
KERNEL = "a feature the Linux kernel lacks"
NOT_YET = "the kernel has it; netcfg does not configure it yet"

# Where Debian packages put their ifupdown hooks; the same variable as the
# if-*.d runner's (netcfg/ifupdown, docs/ifupdown.md).
NETWORK_DIR_ENV = "NETCFG_NETWORK_DIR"
DEFAULT_NETWORK_DIR = "/etc/network"


@dataclass(frozen=True, slots=True)
class Unsupported:
    """What netcfg does with an attribute no kind of it has."""

    reason: str
    accepted: bool   # True: a warning (it does nothing here); False: an error


@dataclass(frozen=True, slots=True)
class InertLine(Diagnostic):
    """A warning for a line accepted because it does nothing on this host (or
    only through another package's hook): what --strict refuses."""


@dataclass(frozen=True, slots=True)
class _Hook:
    """A Debian package that reads some interfaces(5) lines in its own hook."""

    package: str
    script: str      # its file under NETWORK_DIR, e.g. if-up.d/000resolvconf
    what: str        # what the package does with the lines


_WPASUPPLICANT = _Hook("wpasupplicant", "if-pre-up.d/wpasupplicant",
                       "starts wpa_supplicant for the interface")
_HOSTAPD = _Hook("hostapd", "if-pre-up.d/hostapd", "starts hostapd with that configuration")
_RESOLVCONF = _Hook("resolvconf", "if-up.d/000resolvconf",
                    "hands the dns-* lines to resolvconf")
# Debian's ethtool package reads these in if-pre-up.d/ethtool, a script
# ifupdown2 never runs (its ethtool addon overrides it) and netcfg neither
# (apply/scripts.py skips built-in handlers' names): on such a host they do
# nothing, whether the package is installed or not.
_ETHTOOL_KEYS = ("ethernet-", "hardware-irq-coalesce-", "hardware-dma-ring-", "offload-",
                 "driver-message-level")
_ETHTOOL_REASON = ("is read only by Debian's ethtool package, in its if-pre-up.d/ethtool "
                   "hook, which ifupdown2 does not run (its own ethtool addon takes its "
                   "place) and netcfg does not either: the line does nothing here; netcfg's "
                   "link-speed, link-duplex and link-autoneg are what it sets")
_WIRELESS = _Hook("wireless-tools", "if-pre-up.d/wireless-tools", "runs iwconfig with them")

# By prefix (or whole name), the packages whose hooks read the lines. Names
# netcfg itself has (dns-nameservers, link-speed...) never get here.
_HOOK_PREFIXES = (
    ("wpa-", _WPASUPPLICANT),
    ("hostapd", _HOSTAPD),
    ("dns-", _RESOLVCONF),
    ("wireless-", _WIRELESS),
)

# mstpctl-* with the kernel STP's own spelling, where the kernel bridge has the
# knob. ifupdown2's mstpctl addon hands every mstpctl-* to mstpctl, only while
# mstpd runs (addons/mstpctl.py: `if self.mstpd_running and stp`); on a host
# without mstpd (Debian's default) they do nothing, so netcfg maps none of them:
# the kernel's STP is configured with its own attributes.
_MSTP_KERNEL_SPELLING = {
    "mstpctl-treeprio": "bridge-bridgeprio",
    "mstpctl-fdelay": "bridge-fd",
    "mstpctl-maxage": "bridge-maxage",
    "mstpctl-hello": "bridge-hello",
    "mstpctl-ageing": "bridge-ageing",
    "mstpctl-portpathcost": "bridge-pathcosts",
    "mstpctl-treeportcost": "bridge-pathcosts",
    "mstpctl-treeportprio": "bridge-portprios",
    "mstpctl-stp": "bridge-stp",
}

_MSTPD = ("mstpd's (Debian package mstpd, not installed with ifupdown2), which netcfg does "
          "not drive: ifupdown2 hands mstpctl-* to mstpctl only while mstpd runs and does "
          "nothing with them without it; the bridge keeps the kernel's STP (bridge-stp)")
_CLAGD = ("Cumulus Linux's MLAG (clagd and its kernel), which Debian has not: nothing on "
          "this host reads it, and Debian's ifupdown2 does nothing with it")

# Inert lines, by prefix: accepted with a warning.
_INERT_PREFIXES = (
    ("mstpctl-", _MSTPD),
    ("clagd-", _CLAGD),
    ("clag-", _CLAGD),
)

_INERT_NAMES = {
    "bond-lacp-bypass-allow": (
        "LACP bypass is a Cumulus Linux kernel patch (IFLA_BOND_AD_LACP_BYPASS, attribute 60, "
        "Cumulus's private range); no upstream Linux bond has it, and Debian's ifupdown2 "
        "sends it to a kernel that ignores it"),
}

# ifupdown-ng's `use EXECUTOR`: the executors whose work netcfg infers from
# the stanza's other lines (bridge-ports makes a bridge, as in ifupdown2).
# `use dhcp`, `use ipv6-ra` and `use ipv6-tempaddr` never get here: they are
# netcfg's inet dhcp, accept-ra and privext (compile/ng_dialect.py).
_NG_INFERRED = frozenset({"link", "static", "loopback", "bond", "bridge", "vlan", "vrf",
                          "vxlan", "wireguard", "forward", "ipv6", "gre", "tunnel", "batman",
                          "vrrp", "mpls"})

# ifupdown-ng's other executors (executors/linux/ at e42da09, and its test
# suite's): what each does, for the warning of a `use` line netcfg does not
# carry out. ifupdown2 ignores `use` lines (no addon reads them).
_NG_EXECUTORS = {
    "cake": "sets a CAKE queueing discipline on the interface (tc qdisc replace root dev IF "
            "cake ...); netcfg configures no qdisc",
    "cake-ingress": "makes an ifb device and redirects a device's ingress traffic to it (tc)",
    "wifi": "starts wpa_supplicant (or runs iwconfig) for the interface",
    "wireguard-quick": "runs wg-quick up IF from /etc/wireguard/IF.conf",
    "ppp": "runs pon/poff for ppp-provider",
    "ethtool": "runs ethtool with the stanza's ethtool-* lines",
    "dhcp6": "is not one ifupdown-ng ships",
    "mock-dependency-generator": "is its test suite's executor: it reports dependencies "
                                 "(mock-depends) and configures nothing",
    "mock": "is its test suite's executor and configures nothing",
}

# Settings of ifupdown-ng's executors netcfg does not run, by prefix: inert.
_NG_SETTING_PREFIXES = (
    ("cake-", "a setting of ifupdown-ng's cake executors, which set a CAKE queueing "
              "discipline with tc (and, for cake-ingress, redirect a device's ingress traffic "
              "to an ifb device); netcfg configures no qdisc, and ifupdown2 ignores the line "
              "too"),
    ("wifi-", "a setting of ifupdown-ng's wifi executor, which starts wpa_supplicant (or runs "
              "iwconfig) for the interface; netcfg does not, and ifupdown2 ignores the line "
              "too. Debian's wpasupplicant package reads wpa-ssid, wpa-psk and wpa-conf in its "
              "own ifupdown hook instead"),
    ("mock-", "a setting of ifupdown-ng's test-suite executor mock-dependency-generator "
              "(dependencies it reports at run time); it configures nothing"),
    ("vxrd-", "a setting of Cumulus Linux's vxrd (its VXLAN registration daemon, for "
              "service-node replication), which Debian has not: nothing on this host reads "
              "it, and Debian's ifupdown2 does nothing with it"),
)

# ifupdown-ng's dhcp executor's settings netcfg has no line for (the others,
# dhcp-hostname, -client-id, -vendor, -leasetime, are netcfg's hostname,
# client, vendor and leasetime: compile/build.py LEGACY_NAMES).
_NG_DHCP = {
    "dhcp-program": "chooses which DHCP client it runs (dhcpcd, dhclient or udhcpc); netcfg "
                    "runs dhclient (dhcpcd where there is none)",
    "dhcp-script": "gives the client its own hook script (dhcpcd -c, dhclient -sf, udhcpc -s); "
                   "netcfg's client runs the distribution's",
    "dhcp-config": "gives the client its own configuration file (dhcpcd -f, dhclient -cf); "
                   "netcfg writes the client's own from the stanza's hostname, client, vendor "
                   "and leasetime",
    "dhcp-opts": "adds its words to the client's command line; netcfg passes none",
}

# Refused families, by prefix. Valid netcfg attributes with the same prefix
# (bridge-mcsnoop) never get here: only unknown names are explained.
_REFUSED_PREFIXES = (
    ("bridge-mc", f"{NOT_YET}: this IGMP/MLD snooping tunable; bridge-mcsnoop turns "
                  "snooping on or off and bridge-mcast-vlan-snooping keeps it per VLAN"),
    ("bridge-portmc", f"{NOT_YET}: this per-port multicast setting"),
    ("ovs-", "netcfg writes Open vSwitch's database with ovs-type, ovs-bridge, ovs-ports, "
             "ovs-options and ovs-mtu only (docs/ovs.md); ovs-extra (ovs-vsctl commands), "
             "ovs-bonds and tunnel or patch settings are not supported"),
)


# Value syntaxes whose notes (compile/values.py NOTES) are about a part of the
# value that does nothing on this host: Cumulus's pvst and cdp in
# bridge-l2protocol-tunnel. Those notes are inert-line warnings too.
INERT_NOTE_SYNTAXES = frozenset({"l2protocols"})


def network_dir() -> str:
    return os.environ.get(NETWORK_DIR_ENV) or DEFAULT_NETWORK_DIR


def explain(attribute: str, value: str = "", hooks_dir: str | None = None) -> Unsupported | None:
    """What netcfg does with ``attribute`` (a name no kind has), or None when
    it is no other program's either: a typo. ``hooks_dir``: where the
    packages' hook scripts are looked for (default: network_dir())."""
    for prefix, reason in _INERT_PREFIXES:
        if attribute.startswith(prefix):
            spelling = _MSTP_KERNEL_SPELLING.get(attribute)
            if spelling:
                reason += f"; for the kernel's STP write {spelling}"
            return Unsupported(f"does nothing here: it is {reason}", True)
    if attribute in _INERT_NAMES:
        return Unsupported(f"does nothing here: {_INERT_NAMES[attribute]}", True)
    if attribute == "use":
        return _ng_use(value)
    if attribute in _NG_DHCP:
        return Unsupported(f"does nothing here: ifupdown-ng's dhcp executor {_NG_DHCP[attribute]}"
                           f"; ifupdown2 ignores the line too", True)
    for prefix, reason in _NG_SETTING_PREFIXES:
        if attribute.startswith(prefix):
            return Unsupported(f"does nothing here: it is {reason}", True)
    if attribute == MPLS_ENABLE:
        return _mpls_enable(value)
    if attribute in _VRRP_NG:
        return Unsupported(_VRRP, False)
    for prefix, hook in _HOOK_PREFIXES:
        if attribute.startswith(prefix):
            return Unsupported(_hook_reason(hook, hooks_dir or network_dir()), True)
    if attribute.startswith(_ETHTOOL_KEYS):
        return Unsupported(_ETHTOOL_REASON, True)
    if attribute.startswith(_BATMAN_PREFIX):
        return Unsupported(_batman(attribute), False)
    for prefix, reason in _REFUSED_PREFIXES:
        if attribute.startswith(prefix):
            return Unsupported(reason, False)
    return None


# B.A.T.M.A.N. advanced (issue 22): the batadv kind (kinds/batadv.py) has
# batman-ifaces, batman-ifaces-ignore-regex and batman-hop-penalty; the other
# batman-* lines of ifupdown2's batman_adv addon get here. It reads and writes
# them in /sys/class/net/IF/mesh/: batman-adv's sysfs files, which Linux
# removed (Debian's 6.12 kernel, batman-adv 2024.2, has no mesh/ directory:
# measured in the VM tier), so its ifup fails on those lines there.
_BATMAN_PREFIX = "batman-"
_ROUTING_ALGO = "batman-routing-algo"


def _batman(attribute: str) -> str:
    daemon = DAEMON.format(daemon="batctl (B.A.T.M.A.N. mesh setup)")
    if attribute == _ROUTING_ALGO:
        return (f"{daemon}; ifupdown2 runs `batctl ra ALGO`, the algorithm of meshes made "
                f"after it; netcfg does not set it yet (IFLA_BATADV_ALGO_NAME at creation)")
    return (f"{daemon}; ifupdown2 writes it to /sys/class/net/IF/mesh/, which Linux no longer "
            f"has (batman-adv's sysfs files are gone: Debian's 6.12 kernel has none), so "
            f"ifupdown2 fails on it too; the kernel's setting is the batadv generic netlink "
            f"family's, which netcfg sends only for batman-hop-penalty yet")


# ifupdown-ng's mpls executor: `mpls-enable yes` writes net.mpls.conf.IF.input
# (MPLS decapsulation on the interface), a file only the mpls_router module
# makes. Not a declared attribute yet: netcfg reads back devconf sysctls from
# IFLA_AF_SPEC, and MPLS's are not there (RTM_GETNETCONF AF_MPLS has them).
MPLS_ENABLE = "mpls-enable"
MPLS_CONF = "/proc/sys/net/mpls/conf"


def mpls_in_kernel(conf_dir: str = MPLS_CONF) -> bool:
    """Whether this host's kernel has MPLS forwarding (mpls_router loaded, or
    a module of it to load, as ifupdown-ng's executor modprobes)."""
    if os.path.isdir(conf_dir):
        return True
    modules = os.path.join("/lib/modules", os.uname().release, "kernel", "net", "mpls")
    return os.path.isdir(modules) and any(n.startswith("mpls_router")
                                          for n in os.listdir(modules))


def _mpls_enable(value: str, conf_dir: str = MPLS_CONF) -> Unsupported:
    if value.strip().lower() in ("no", "0", "off", "false"):
        return Unsupported("does nothing here: 'no' is the kernel's default (net.mpls.conf.IF."
                           "input 0), and ifupdown-ng's mpls executor writes nothing else",
                           True)
    if not mpls_in_kernel(conf_dir):
        return Unsupported("does nothing here: MPLS input (net.mpls.conf.IF.input, ifupdown-ng's "
                           "mpls executor) needs the kernel's mpls_router module, which this "
                           "host's kernel does not have (no /proc/sys/net/mpls, no module to "
                           "load); ifupdown-ng skips the line there too", True)
    return Unsupported(f"{NOT_YET}: MPLS input (net.mpls.conf.IF.input); until it does, "
                       "write 'post-up sysctl -w net.mpls.conf.$IFACE.input=1'", False)


# ifupdown-ng's vrrp executor reads its lines as these (IF_VRRP_ID,
# IF_VRRP_ADDRESS); its doc writes `vrrp ID ADDRESS...`, ifupdown2's spelling.
_VRRP_NG = frozenset({"vrrp-id", "vrrp-address"})
_VRRP = ("ifupdown-ng's vrrp executor reads its settings as vrrp-id and vrrp-address, and "
         "netcfg takes them in ifupdown2's spelling, one line a virtual router: write "
         "'vrrp ID ADDRESS...' (vrrp 10 192.0.2.1 2001:db8::1), which makes the VRRP "
         "daemon's macvlans (compile/vrrp.py)")


def _ng_use(value: str) -> Unsupported:
    executors = value.split()
    other = [e for e in executors if e not in _NG_INFERRED]
    if not other:
        return Unsupported("does nothing here: it is ifupdown-ng's executor selection, and "
                           "netcfg knows what the interface "
                           "is from its other lines (bridge-ports, bond-slaves, ...), as "
                           "ifupdown2 does", True)
    said = "; ".join(f"ifupdown-ng's {e} executor "
                     f"{_NG_EXECUTORS.get(e, 'is not one netcfg knows')}" for e in other)
    return Unsupported(f"does nothing here: {said}; netcfg does not run it, and ifupdown2 "
                       "ignores the line too", True)


def _hook_reason(hook: _Hook, hooks_dir: str) -> str:
    path = os.path.join(hooks_dir, hook.script)
    present = os.access(path, os.X_OK) and os.path.isfile(path)
    state = (f"{path} is present and gets it as IF_<KEY>" if present else
             f"{path} is not there (is {hook.package} installed?), so nothing reads "
             f"the line")
    return (f"is left to the {hook.package} package's ifupdown hook, which {hook.what}, "
            f"as under ifupdown and ifupdown2 (netcfg does not apply it itself): {state}")


def inert_warning(loc: SourceLocation, message: str, attribute: str) -> InertLine:
    return InertLine(loc, message, attribute, "warning")


def strict_errors(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` with every inert-line warning made an error (--strict)."""
    return [Diagnostic(d.loc, f"{d.message} (refused: --strict)", d.attribute, "error")
            if isinstance(d, InertLine) else d for d in diagnostics]


def inert_count(diagnostics: list[Diagnostic]) -> int:
    """How many accepted lines do nothing here (or only through a hook)."""
    return sum(1 for d in diagnostics if isinstance(d, InertLine))


def inert_summary(diagnostics: list[Diagnostic]) -> str | None:
    """The line counting the accepted lines that do nothing here, if any."""
    count = inert_count(diagnostics)
    if not count:
        return None
    lines = "line does" if count == 1 else "lines do"
    return (f"netcfg: {count} {lines} nothing here or only through another package's "
            f"hook (warnings above); --strict refuses them")


def hook_lines(parsed: ParsedConfig) -> dict[tuple[str, str], dict[str, str]]:
    """{(netns, interface name): {attribute: first value}}, keyed as the
    model's interfaces are, of the lines accepted for other packages' hooks:
    what the if-*.d runner adds to a hook's environment as IF_<KEY> (the
    model never holds them)."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for stanza in parsed.stanzas:
        if stanza.keyword != "iface":
            continue
        netns = next((r.value for r in reversed(stanza.attributes) if r.name == "netns"),
                     ROOT_NETNS)
        for raw in stanza.attributes:
            if any(raw.name.startswith(prefix) for prefix, _ in _HOOK_PREFIXES):
                found.setdefault((netns, stanza.name), {}).setdefault(raw.name, raw.value)
    return found
