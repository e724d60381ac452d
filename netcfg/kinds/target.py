"""An iSCSI target served by netcfgd in a tenant's namespace (extension).

    target iqn.2024-01.com.example:t1.db
        netns t1
        portal 10.0.1.2:3260
        lun 0 db1
        allow-initiator iqn.2024-01.com.example:t1.host1
        chap-secret-file /etc/netcfg/secrets/t1.chap
        max-connections 16   # sessions at once (default 64); more are refused

The stanza's name is the target's iSCSI name (RFC 3720 3.2.6.3: iqn., eui.
or naa. form). One listener per (namespace, portal) serves every target
there, so targets may share portals.
"""

from __future__ import annotations

import ipaddress
import re

from netcfg.kinds.base import VOLUME_REF, Kind, Reference
from netcfg.model.model import TARGET, VOLUME, ConfigObject, Model

PORTAL, LUN, INITIATOR = "portal", "lun", "allow-initiator"
CHAP, MUTUAL_CHAP = "chap-secret-file", "mutual-chap-secret-file"
MAX_NAME = 223  # bytes, RFC 3720 3.2.6.1
_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
# iqn.YYYY-MM.reversed.domain[:anything]; iSCSI names are compared after
# stringprep, which lowercases, so only the lowercase form is accepted.
_IQN = re.compile(rf"^iqn\.[0-9]{{4}}-(0[1-9]|1[0-2])\.{_LABEL}(\.{_LABEL})*(:[a-z0-9.:-]+)?$")
_EUI = re.compile(r"^eui\.[0-9A-Fa-f]{16}$")
_NAA = re.compile(r"^naa\.([0-9A-Fa-f]{16}|[0-9A-Fa-f]{32})$")
NAME_FORMS = ("iqn.YYYY-MM.reversed.domain[:identifier] (iqn.2024-01.com.example:storage.db), "
              "eui.<16 hex digits> or naa.<16 or 32 hex digits>")


def iscsi_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid iSCSI name, or None when it is."""
    if len(name.encode()) > MAX_NAME:
        return f"is longer than {MAX_NAME} bytes"
    if _IQN.match(name) or _EUI.match(name) or _NAA.match(name):
        return None
    if name != name.lower() and iscsi_name_problem(name.lower()) is None:
        return f"must be lowercase ({name.lower()})"
    return f"is not an iSCSI name; expected {NAME_FORMS}"


def _host(portal: str) -> str:
    """``10.0.0.1:3260`` / ``[2001:db8::1]:3260`` -> the address."""
    host = portal.rpartition(":")[0]
    return host[1:-1] if host.startswith("[") else host


def _namespace_addresses(model: Model, netns: str) -> list:
    """Addresses (without prefix) of the namespace's interfaces, in model order."""
    found = {}
    for o in model.interfaces.values():
        if o.netns == netns:
            for address in o.attrs.get("address", ()):
                found.setdefault(ipaddress.ip_interface(address).ip)
    return list(found)


class Target(Kind):
    name = "target"
    section = TARGET
    traits = ()
    # Served by netcfgd, not a kernel network object.
    kernel_bytes = 0

    def references(self, obj: ConfigObject):
        # Volumes are host-wide: they live in no namespace.
        for lun in obj.attrs.get(LUN, ()):
            yield Reference(LUN, VOLUME_REF, VOLUME, "", lun["volume"], obj.where(LUN))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        problem = iscsi_name_problem(obj.name)
        if problem:
            report.error(obj.loc, f"{obj.label()}: the target's name {problem}")
        for initiator in obj.attrs.get(INITIATOR, ()):
            problem = iscsi_name_problem(initiator)
            if problem:
                report.error(obj.where(INITIATOR),
                             f"{obj.label()}: {INITIATOR} {initiator} {problem}", INITIATOR)
        for attribute, what in ((PORTAL, "'portal ADDR[:PORT]' to listen on"),
                                (LUN, "'lun N VOLUME' to export")):
            if not obj.attrs.get(attribute) and attribute not in obj.locs:
                report.error(obj.loc, f"{obj.label()}: a target needs at least one {what}",
                             attribute)
        numbers = [lun["lun"] for lun in obj.attrs.get(LUN, ())]
        for number in sorted({n for n in numbers if numbers.count(n) > 1}):
            report.error(obj.where(LUN),
                         f"{obj.label()}: LUN {number} is given more than once; each "
                         f"'lun N VOLUME' needs its own N", LUN)
        for attribute in (CHAP, MUTUAL_CHAP):
            path = obj.attrs.get(attribute)
            if path is not None and not path.startswith("/"):
                report.error(obj.where(attribute),
                             f"{obj.label()}: {attribute} '{path}' is a relative path; write an "
                             f"absolute one", attribute)
        if MUTUAL_CHAP in obj.attrs and CHAP not in obj.attrs:
            report.error(obj.where(MUTUAL_CHAP),
                         f"{obj.label()}: {MUTUAL_CHAP} authenticates the target to initiators "
                         f"that have authenticated themselves; add {CHAP} too", MUTUAL_CHAP)
        if obj.attrs.get(PORTAL):
            self._check_portals(obj, model, report)

    def _check_portals(self, obj: ConfigObject, model: Model, report) -> None:
        addresses = _namespace_addresses(model, obj.netns)
        for portal in obj.attrs[PORTAL]:
            ip = ipaddress.ip_address(_host(portal))
            # Wildcards listen on every address; loopback is in every namespace.
            if ip.is_unspecified or ip.is_loopback or ip in addresses:
                continue
            where = f"namespace {obj.netns}" if obj.netns else "the host's namespace"
            have = ", ".join(str(a) for a in addresses[:5]) or "none"
            more = f" and {len(addresses) - 5} more" if len(addresses) > 5 else ""
            report.error(obj.where(PORTAL),
                         f"{obj.label()}: portal {portal} is not an address of any interface in "
                         f"{where} (addresses there: {have}{more}); give an interface there "
                         f"that address, or listen on another", PORTAL)


KIND = Target()
