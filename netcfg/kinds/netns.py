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

from netcfg.compile.model import NETNS, ConfigObject, Model
from netcfg.kinds.base import Kind

NSID = "nsid"


class Netns(Kind):
    name = "netns"
    section = NETNS
    traits = ()
    kernel_bytes = 200_000  # an empty namespace (DESIGN.md)

    def check_model(self, model: Model, report) -> None:
        seen: dict[int, ConfigObject] = {}
        with_nsid = [ns for ns in model.namespaces.values() if NSID in ns.attrs]
        for ns in sorted(with_nsid, key=lambda o: o.loc):
            first = seen.setdefault(ns.attrs[NSID], ns)
            if first is not ns:
                # An nsid names one peer namespace in the host's; the kernel
                # refuses to give the same id twice (EEXIST).
                report.error(ns.where(NSID),
                             f"{ns.label()}: nsid {ns.attrs[NSID]} is already the nsid of "
                             f"namespace {first.name} (at {first.loc}); give each namespace its "
                             f"own nsid, or leave nsid out to let the kernel pick one", NSID)

    def create_params(self, obj: ConfigObject) -> dict:
        return {"nsid": obj.attrs[NSID]} if NSID in obj.attrs else {}


KIND = Netns()
