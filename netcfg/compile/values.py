"""Turn attribute text from a stanza into the typed value the schema describes.

The schema decides: ``type`` gives the generic conversion (integer, boolean,
array of words), ``x-netcfg-syntax`` names one of the parsers below for values
with structure (routes, VLAN lists, portals). Each parser raises ValueError
with a message that says what was expected; the builder adds file:line.

``format_value`` is the inverse, used to print the model as stanzas.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any, Callable

from netcfg.compile.parser import expand_names
from netcfg.spec import AttributeSpec

TRUE_WORDS = frozenset(("yes", "on", "true", "1"))
FALSE_WORDS = frozenset(("no", "off", "false", "0"))

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")
_SIZE = re.compile(r"^([0-9]+)([KMGTP]?)(i?B)?$", re.I)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_bool(text: str) -> bool:
    word = text.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"expected yes or no, got '{text}'")


def _whole_number(text: str, base: int, error: str) -> int:
    """``int(text, base)``, or a ValueError saying ``error`` with the text in
    place of its ``{}`` (formatted only on failure: parse_int runs for every
    integer attribute)."""
    try:
        return int(text, base)
    except ValueError:
        raise ValueError(error.format(text)) from None


def parse_int(text: str) -> int:
    return _whole_number(text, 10, "expected a whole number, got '{}'")


def _canonical_ipv4(text: str) -> bool:
    """True for a dotted quad already in canonical form. glibc's inet_pton
    rejects leading zeros and short forms, so what it accepts is exactly
    what ipaddress would print back; it is ~30x faster than ipaddress, which
    matters with thousands of tenants' addresses."""
    try:
        socket.inet_pton(socket.AF_INET, text)
    except OSError:
        return False
    return True


def _canonical_ipv4_interface(word: str) -> bool:
    ip, _, prefix = word.partition("/")
    return (prefix.isdigit() and str(int(prefix)) == prefix and int(prefix) <= 32
            and _canonical_ipv4(ip))


def parse_address(word: str) -> str:
    """``10.0.0.1/24`` or a bare ``10.0.0.1`` (prefix filled in later from
    ``netmask`` or as a host address); returned in canonical form."""
    if _canonical_ipv4_interface(word) if "/" in word else _canonical_ipv4(word):
        return word
    try:
        if "/" in word:
            return str(ipaddress.ip_interface(word))
        return str(ipaddress.ip_address(word))
    except ValueError:
        raise ValueError(_bad_prefix(word) or f"'{word}' is not an IPv4 or IPv6 address") \
            from None


def _bad_prefix(word: str) -> str | None:
    """What is wrong with an address whose only fault is its prefix length
    (ifupdown-ng's doc writes 192.0.2.23/42): said as such, since `ip addr
    add` refuses it too."""
    ip, _, prefix = word.partition("/")
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return None
    most = address.max_prefixlen
    if prefix.isdigit() and int(prefix) > most:
        return (f"'{word}': prefix length /{prefix} is longer than an IPv{address.version} "
                f"address (/{most} at most); write the network's prefix length (iproute2 "
                f"refuses it too)")
    return f"'{word}': '/{prefix}' is not a prefix length (0-{most})"


def parse_ip(word: str) -> str:
    if _canonical_ipv4(word):
        return word
    try:
        return str(ipaddress.ip_address(word))
    except ValueError:
        raise ValueError(f"'{word}' is not an IPv4 or IPv6 address") from None


def parse_address_label(text: str) -> str:
    """``eth0:1 10.0.0.1/24`` (address-label: kinds/address_label.py):
    the label, at most 15 bytes, and one IPv4 address."""
    words = text.split()
    if len(words) != 2:
        raise ValueError(f"expected LABEL ADDRESS (eth0:1 192.0.2.1/24), got '{text}'")
    label, word = words
    if len(label.encode()) > 15:
        raise ValueError(f"label '{label}' is longer than 15 bytes")
    address = parse_address(word)
    if ":" in address:
        raise ValueError(f"'{word}' is IPv6: only IPv4 addresses have a label (IFA_LABEL)")
    return f"{label} {address}"


def parse_encap_limit(text: str) -> int | str:
    """tunnel-encaplimit: `none` or 0-255 (`ip -6 tunnel add ... encaplimit`)."""
    if text == "none":
        return text
    if not text.isdigit() or int(text) > 255:
        raise ValueError(f"expected 0-255 (encapsulations left) or none, got '{text}'")
    return int(text)


def parse_range(word: str, low: int, high: int, what: str) -> str:
    """``100`` or ``100-200`` within [low, high], canonical text."""
    m = _RANGE.match(word)
    if not m:
        raise ValueError(f"expected a {what} or a range like 100-200, got '{word}'")
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) else first
    if first > last:
        raise ValueError(f"range '{word}' runs backwards")
    if first < low or last > high:
        raise ValueError(f"{what} '{word}' is out of range {low}-{high}")
    return str(first) if first == last else f"{first}-{last}"


# 4095 is reserved (802.1Q) and 4096 is the count of 12-bit ids, not an id:
# Proxmox's pve-network tests write `bridge-vids 2-4096` meaning "all of
# them". Such a range is taken as ending at 4094, said at its line
# (vlan_list_notes); one that runs further is a defect and refused.
_VID_COUNT_SLIPS = (4095, 4096)


def parse_vlan_list(text: str) -> list[str]:
    try:
        return [parse_range(_clamp_vid_slip(w), 1, 4094, "VLAN id") for w in text.split()]
    except ValueError as e:
        if "out of range" not in str(e):
            raise
        # ifupdown2 runs `bridge vlan add vid 4000-5000`, which iproute2
        # refuses before the kernel sees it ("Invalid VLAN range"): it logs
        # a warning and sets none of that range.
        raise ValueError(f"{e}; ifupdown2 fails on it too (iproute2: Invalid VLAN "
                         f"range) and sets none of that range's VLANs: end it at "
                         f"4094") from None


def _clamp_vid_slip(word: str) -> str:
    m = _RANGE.match(word)
    if m and m.group(2) and int(m.group(2)) in _VID_COUNT_SLIPS and int(m.group(1)) <= 4094:
        return f"{m.group(1)}-4094"
    return word


def vlan_list_notes(text: str) -> list[str]:
    """What parse_vlan_list took differently from how it was written."""
    if "4095" not in text and "4096" not in text:
        return []       # the common case, without a regex per word
    return [f"'{w}' runs past 4094, the last VLAN id (4095 is reserved, and 4096 is "
            f"how many ids there are, not one of them): netcfg sets "
            f"{_clamp_vid_slip(w)}; ifupdown2 fails on the whole range (iproute2: "
            f"Invalid VLAN range) and sets none of it; write {_clamp_vid_slip(w)}"
            for w in text.split() if _clamp_vid_slip(w) != w]


def parse_vni_map(text: str) -> list[str]:
    """``bridge-vlan-vni-map 100-101=1000-1001``: VLANs to VNIs, equal lengths."""
    out = []
    for word in text.split():
        vlans, sep, vnis = word.partition("=")
        if not sep:
            raise ValueError(f"expected VLAN=VNI pairs like 100-101=1000-1001, got '{word}'")
        vlans = parse_range(vlans, 1, 4094, "VLAN id")
        vnis = parse_range(vnis, 1, 16777215, "VNI")
        if range_len(vlans) != range_len(vnis):
            raise ValueError(f"'{word}' maps {range_len(vlans)} VLANs to {range_len(vnis)} VNIs")
        out.append(f"{vlans}={vnis}")
    return out


def range_len(text: str) -> int:
    first, _, last = text.partition("-")
    return int(last or first) - int(first) + 1


def parse_mac(text: str) -> str:
    word = text.split()[-1].lower()  # ifupdown's `hwaddress ether XX:..` form too
    if len(text.split()) > 2 or (len(text.split()) == 2 and text.split()[0] != "ether"):
        raise ValueError(f"expected a MAC address like 02:00:00:00:00:01, got '{text}'")
    if not _MAC.match(word):
        raise ValueError(f"expected a MAC address like 02:00:00:00:00:01, got '{text}'")
    return word


def parse_route(text: str) -> dict[str, Any]:
    """``PREFIX via GW [dev IF] [table N|vrf NAME] [metric M]``; ``via`` may be
    left out for a device route when ``dev`` is given."""
    words = text.split()
    if not words:
        raise ValueError("expected PREFIX via GATEWAY [dev IF] [table N|vrf NAME] [metric M]")
    route: dict[str, Any] = {"to": _route_prefix(words[0])}
    rest = words[1:]
    if "onlink" in rest:   # a flag, not a key and value (ip route's)
        rest.remove("onlink")
        route["onlink"] = True
    if len(rest) % 2:
        raise ValueError(f"'{rest[-1]}' needs a value (route {text})")
    for key, value in zip(rest[::2], rest[1::2]):
        if key in route:
            raise ValueError(f"'{key}' is given twice in route '{text}'")
        if key == "via":
            route["via"] = parse_ip(value)
        elif key == "dev":
            route["dev"] = value
        elif key == "table":
            route["table"] = parse_int(value)
        elif key == "vrf":
            route["vrf"] = value
        elif key == "metric":
            route["metric"] = parse_int(value)
        else:
            raise ValueError(f"unknown route option '{key}' (expected via, dev, table, vrf, "
                             f"metric, onlink)")
    if "table" in route and "vrf" in route:
        raise ValueError("a route takes either 'table' or 'vrf', not both")
    if "via" not in route and "dev" not in route:
        raise ValueError(f"route to {route['to']} needs 'via GATEWAY' or 'dev IF'")
    if "via" in route and _family(route["via"]) != _family(route["to"]):
        raise ValueError(f"gateway {route['via']} is not the same IP family as {route['to']}")
    return route


def _route_prefix(word: str) -> str:
    if word == "default":
        return "0.0.0.0/0"
    if word == "default6":
        return "::/0"
    try:
        return str(ipaddress.ip_network(word, strict=True))
    except ValueError as e:
        raise ValueError(f"'{word}' is not a network prefix ({e})") from None


def _family(text: str) -> int:
    return ipaddress.ip_network(text, strict=False).version


def format_route(route: dict[str, Any]) -> str:
    parts = [route["to"]]
    for key in ("via", "dev", "table", "vrf", "metric"):
        if key in route:
            parts += [key, str(route[key])]
    if route.get("onlink"):
        parts.append("onlink")
    return " ".join(parts)


def parse_portal(word: str) -> str:
    """``ADDR[:PORT]``, IPv6 as ``[ADDR]:PORT``; canonical form always has the port."""
    host, port = word, "3260"
    if word.startswith("["):
        host, _, tail = word[1:].partition("]")
        if tail:
            if not tail.startswith(":"):
                raise ValueError(f"expected [IPV6]:PORT, got '{word}'")
            port = tail[1:]
    elif word.count(":") == 1:
        host, port = word.split(":")
    ip = parse_ip(host)
    p = parse_int(port)
    if not 1 <= p <= 65535:
        raise ValueError(f"port {p} is out of range 1-65535")
    return f"[{ip}]:{p}" if ":" in ip else f"{ip}:{p}"


def parse_lun(text: str) -> dict[str, Any]:
    words = text.split()
    if len(words) != 2:
        raise ValueError(f"expected 'lun N VOLUME', got 'lun {text}'")
    number = parse_int(words[0])
    if not 0 <= number <= 16383:
        raise ValueError(f"LUN {number} is out of range 0-16383")
    return {"lun": number, "volume": words[1]}


def parse_size(text: str) -> int:
    """``10G``, ``512M``, ``1T``, ``4096`` (bytes); binary units."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"expected a size like 10G or 512M, got '{text}'")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


def format_size(size: int) -> str:
    for unit in ("P", "T", "G", "M", "K"):
        if size and size % _SIZE_UNITS[unit] == 0:
            return f"{size // _SIZE_UNITS[unit]}{unit}"
    return str(size)


def parse_milliseconds(text: str) -> int:
    """Seconds as ifupdown writes them (`dad-interval 0.1`) -> whole
    milliseconds; finer than a millisecond is refused, not rounded."""
    whole, dot, fraction = text.partition(".")
    if not whole.isdigit() or (dot and not fraction.isdigit()):
        raise ValueError(f"expected seconds such as 0.1 or 2, got '{text}'")
    if len(fraction.rstrip("0")) > 3:
        raise ValueError(f"expected at most three decimals (milliseconds), got '{text}'")
    return int(whole) * 1000 + int(fraction.ljust(3, "0")[:3] or 0)


def format_milliseconds(ms: int) -> str:
    seconds, rest = divmod(ms, 1000)
    return f"{seconds}.{rest:03d}".rstrip("0").rstrip(".") if rest else str(seconds)


def parse_string(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


# Parsers for one occurrence of an attribute. For arrays, a parser returning a
# list extends the value; one returning a single item appends it.
# bridge-l2protocol-tunnel: the link-local groups a port forwards instead of
# dropping (IFLA_BRPORT_GROUP_FWD_MASK, bit N = 01:80:C2:00:00:0N), with
# ifupdown2's names and bits (addons/bridge.py _l2protocol_tunnel_set_*).
L2PROTOCOL_BITS = {"stp": 0x1, "lacp": 0x4, "lldp": 0x4000}
# pvst and cdp are Cisco's groups (01:00:0C:CC:CC:CC/CD): ifupdown2 sets them in
# IFLA_BRPORT_GROUP_FWD_MASKHI, which only Cumulus Linux's kernel has; an
# upstream kernel ignores that attribute, so they do nothing here: taken as
# nothing, with an inert-line warning (l2protocol_notes; docs/compat.md "Lines
# that do nothing here"). `all` is every group: here stp, lacp and lldp.
CUMULUS_ONLY_L2PROTOCOLS = ("pvst", "cdp")
ALL_L2PROTOCOLS = "all"


def parse_l2protocols(text: str) -> int:
    """``stp lacp,lldp`` -> the port's group forwarding mask (0x4005)."""
    mask = 0
    for word in text.replace(",", " ").split():
        word = word.lower()
        if word in L2PROTOCOL_BITS:
            mask |= L2PROTOCOL_BITS[word]
        elif word == ALL_L2PROTOCOLS:
            mask |= sum(L2PROTOCOL_BITS.values())
        elif word in CUMULUS_ONLY_L2PROTOCOLS:
            pass   # nothing on this kernel: l2protocol_notes says so at the line
        elif word.startswith("0x"):
            mask |= _whole_number(word, 16, "'{}' is not a hexadecimal mask")
        else:
            raise ValueError(f"expected {', '.join(L2PROTOCOL_BITS)} (or a mask like "
                             f"0x4005), got '{word}'")
    return mask


def l2protocol_notes(text: str) -> list[str]:
    """pvst and cdp (and those `all` includes) do nothing on this kernel."""
    words = list(dict.fromkeys(text.lower().replace(",", " ").split()))
    cisco = [w for w in words if w in CUMULUS_ONLY_L2PROTOCOLS]
    notes = []
    if cisco:
        one = len(cisco) == 1
        notes.append(f"{' and '.join(repr(w) for w in cisco)} {'does' if one else 'do'} "
                     f"nothing here: {'it needs' if one else 'they need'} {_CUMULUS_KERNEL}")
    if ALL_L2PROTOCOLS in words:
        notes.append(f"'all' is stp, lacp and lldp here; its pvst and cdp do nothing: they "
                     f"need {_CUMULUS_KERNEL}")
    return notes


_CUMULUS_KERNEL = ("Cumulus Linux's kernel (ifupdown2 sets them in IFLA_BRPORT_GROUP_FWD_MASKHI, "
                   "which upstream Linux does not have and ignores; this kernel forwards only "
                   "the 01:80:C2:00:00:0X groups)")


def format_l2protocols(mask: int) -> str:
    words = [name for name, bit in L2PROTOCOL_BITS.items() if mask & bit]
    rest = mask & ~sum(L2PROTOCOL_BITS.values())
    return " ".join([*words, *([f"{rest:#06x}"] if rest or not words else [])])


def parse_nameservers(text: str) -> list[Any]:
    """dns-nameservers: addresses apart by white space, or by commas as
    some published files write them (nameserver_notes)."""
    return [parse_ip(w) for w in text.replace(",", " ").split()]


def nameserver_notes(text: str) -> list[str]:
    if "," not in text:
        return []
    return [f"'{text}': netcfg takes the comma as a separator "
            f"({', '.join(text.replace(',', ' ').split())}); ifupdown and ifupdown2 pass "
            f"the text as it is to resolvconf's hook, which writes one 'nameserver' line the "
            f"resolver cannot read: write the addresses apart by spaces"]


SYNTAX: dict[str, Callable[[str], Any]] = {
    "names": expand_names,
    "words": str.split,
    "address": lambda text: [parse_address(w) for w in text.split()],
    "ip": lambda text: [parse_ip(w) for w in text.split()],
    "nameservers": parse_nameservers,
    "vlan-list": parse_vlan_list,
    "vni-map": parse_vni_map,
    "mac": parse_mac,
    "route": parse_route,
    "portal": lambda text: [parse_portal(w) for w in text.split()],
    "lun": parse_lun,
    "size": parse_size,
    "string": parse_string,
    "address-label": parse_address_label,
    "command": str,  # a shell command, kept as written (quotes are the shell's)
    "int-or-auto": lambda text: text if text == "auto" else parse_int(text),
    "encap-limit": parse_encap_limit,
    "l2protocols": parse_l2protocols,
    "seconds": parse_milliseconds,
}

# Warnings about a value that parsed, by syntax: what netcfg took the text
# to mean where it differs from the letter (said at the line, once).
NOTES: dict[str, Callable[[str], list[str]]] = {
    "vlan-list": vlan_list_notes,
    "nameservers": nameserver_notes,
    "l2protocols": l2protocol_notes,   # inert: unsupported.INERT_NOTE_SYNTAXES
}

FORMAT: dict[str, Callable[[Any], str]] = {
    "route": format_route,
    "size": format_size,
    "lun": lambda lun: f"{lun['lun']} {lun['volume']}",
    "l2protocols": format_l2protocols,
    "seconds": format_milliseconds,
}


def value_notes(spec: AttributeSpec, text: str) -> list[str]:
    """Warnings for a value parse_value accepted (see NOTES)."""
    notes = NOTES.get(spec.syntax or "")
    return notes(text) if notes else []


def parse_value(spec: AttributeSpec, text: str) -> Any:
    """One occurrence's text -> its typed value (an item list for arrays)."""
    if spec.aliases:
        text = spec.aliases.get(text, text)
    if spec.syntax:
        value = SYNTAX[spec.syntax](text)
        if spec.type == "array" and not isinstance(value, list):
            return [value]
        return value
    if spec.type == "integer":
        return parse_int(text)
    if spec.type == "boolean":
        return parse_bool(text)
    if spec.type == "array":
        return text.split()
    return parse_string(text)


def format_value(spec: AttributeSpec, value: Any) -> list[str]:
    """A typed value -> the text of one or more stanza lines (without the name)."""
    fmt = FORMAT.get(spec.syntax or "")
    if spec.syntax == "names" and not value:
        return ["none"]  # ifupdown2's spelling of an empty port list
    if spec.type == "array":
        items = [fmt(v) if fmt else str(v) for v in value]
        return items if spec.repeatable else [" ".join(items)]
    if fmt:
        return [fmt(value)]
    if isinstance(value, bool):
        return ["yes" if value else "no"]
    text = str(value)
    if spec.syntax == "string" and (not text or text != text.strip() or "  " in text):
        text = f'"{text}"'
    return [text]
