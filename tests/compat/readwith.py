"""How a corpus file is read on the host it comes from, for the acceptance table and
the differential alike.

Proxmox VE's SDN writes /etc/network/interfaces.d/sdn, which is never read alone:
the host's /etc/network/interfaces sources it (`source /etc/network/interfaces.d/*`,
written by Proxmox's installer), and its stanzas add to the host's (the SDN file of
qinq/bridge_vlanaware_vlanprotocol writes `bridge-vlan-protocol` on the host's
vmbr0, which only the host file makes a bridge). Each `-sdn` file of the corpus
says on its source line which host file its pve-network test pairs it with
(`read with: pve-network/NAME-host.interfaces`; collect.py writes it), and is checked
and applied through a top file that sources that host file and then it, as Proxmox
reads the pair.

ifupdown2's examples that include Mako templates find them in its
template_lookuppath (/etc/network/ifupdown2/templates on a host): TEMPLATES is that
directory for the corpus; both tools are pointed at it.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
# What /etc/network/ifupdown2/templates holds on the hosts the corpus's files come from.
TEMPLATES = HERE / "templates"

_READ_WITH = re.compile(r"; read with: (\S+)")


def host_file(path: Path) -> Path | None:
    """The host file PATH is read with (its source line's `read with:`), or None."""
    first = path.read_text().split("\n", 1)[0]
    m = _READ_WITH.search(first) if first.startswith("# compat-source:") else None
    if m is None or m.group(1) == "none":
        return None
    host = CORPUS / m.group(1)
    if not host.is_file():
        raise FileNotFoundError(f"{path}: its host file {host} is not in the corpus")
    return host


def top_file(path: Path, directory: str | Path) -> Path:
    """The file to give the tools for PATH: PATH itself, or, for a file read with a host
    file, DIRECTORY/interfaces sourcing the host file and then PATH (both unchanged;
    every location a tool reports stays in them)."""
    host = host_file(path)
    if host is None:
        return path
    top = Path(directory) / "interfaces"
    top.write_text(f"# {path.name} as Proxmox VE reads it: the host's file, then the SDN file\n"
                   f"source {host}\nsource {path.resolve()}\n")
    return top


def text_of(path: Path) -> str:
    """The text the tools read for PATH (the host file's and its own)."""
    host = host_file(path)
    return (host.read_text() if host else "") + path.read_text()
