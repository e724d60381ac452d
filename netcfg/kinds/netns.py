"""A network namespace and how netcfg manages it (extension).

    netns t1
        nsid 11
        purge yes
        policy enforce

Interfaces join a namespace with their own `netns t1` attribute; this
stanza is only needed for namespace-level settings. A namespace named by
an interface but not declared here is created with the defaults.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind, repeated
from netcfg.model.errors import quote
from netcfg.model.location import SourceLocation
from netcfg.model.model import NETNS, TARGET, ConfigObject, Model
from netcfg.model.names import netns_name_problem

NSID = "nsid"


class Netns(Kind):
    name = "netns"
    section = NETNS
    traits = ()
    kernel_bytes = 200_000  # an empty namespace (DESIGN.md)

    def check_model(self, model: Model, report) -> None:
        self._check_names(model, report)
        with_nsid = [ns for ns in model.namespaces.values() if NSID in ns.attrs]
        for ns, first in repeated(with_nsid, lambda ns: ns.attrs[NSID]):
            # An nsid names one peer namespace in the host's; the kernel
            # refuses to give the same id twice (EEXIST).
            report.error(ns.where(NSID),
                         f"{ns.label()}: nsid {ns.attrs[NSID]} is already the nsid of "
                         f"namespace {first.name} (at {first.loc}); give each namespace its "
                         f"own nsid, or leave nsid out to let the kernel pick one", NSID)

    @staticmethod
    def _check_names(model: Model, report) -> None:
        """Each bad namespace name once, where it is first written. A name in
        a `netns` attribute met the schema's pattern already (or has its own
        error there), but "." and ".." meet it and still name no namespace; a
        `netns NAME` stanza's name is checked only here."""
        first: dict[str, SourceLocation] = {}
        stanza_names = set()
        for ns in model.namespaces.values():
            if not ns.implicit:
                stanza_names.add(ns.name)
                first[ns.name] = min(ns.loc, first.get(ns.name, ns.loc))
        # Where it is written (an interface's or a target's netns) wins over
        # where it is implied (a veth-peer-netns ..), whatever comes first.
        objs = [*model.interfaces.values(), *model.section(TARGET).values()]
        for implied in (False, True):
            for obj in objs:
                if obj.netns in (".", "..") and obj.implicit == implied and \
                        (not implied or obj.netns not in first):
                    loc = obj.where("netns")
                    first[obj.netns] = min(loc, first.get(obj.netns, loc))
        for name, loc in sorted(first.items(), key=lambda item: item[1]):
            why = netns_name_problem(name)
            if why is not None and (name in stanza_names or name in (".", "..")):
                report.error(loc, f"netns {quote(name)}: not a usable namespace name: {why}",
                             "netns")

    def create_params(self, obj: ConfigObject) -> dict:
        return {"nsid": obj.attrs[NSID]} if NSID in obj.attrs else {}


KIND = Netns()
