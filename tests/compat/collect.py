#!/usr/bin/env python3
"""Rebuild tests/compat/corpus/ from git checkouts of the public sources.

The corpus is kept as committed files; this script says where each came from
and lets it be refreshed. Each file is written as its source wrote it, with
one first comment line naming the source (repository, path, commit) and its
licence. Files identical to one already taken (same text) are skipped, so a
layout that a test suite repeats in many directories counts once.

    tests/compat/collect.py --derive-without bridge-fd
    tests/compat/collect.py --ifupdown2 GITDIR --pve-docs GITDIR \
        --pve-network GITDIR --cldemo-evpn GITDIR --cldemo-l3clos GITDIR \
        --debian-ifupdown-examples DIR

GITDIR is a clone (bare or not) of github.com/CumulusNetworks/ifupdown2,
proxmox/pve-docs, proxmox/pve-network, CumulusNetworks/cldemo-evpn and
cldemo-l3clos; DIR is usr/share/doc/ifupdown/examples from Debian's ifupdown
package (`apt-get download ifupdown && dpkg-deb -x ifupdown_*.deb DIR`).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
# What the corpus's hosts hold in /etc/network/ifupdown2/templates (ifupdown2's
# template_lookuppath; tests/compat/readwith.py points both tools at it): its
# examples' def files, under the name their own usage notes give them.
TEMPLATES = CORPUS.parent / "templates"
IFUPDOWN2_TEMPLATES = {
    # "Copy this file under the template dir", used as file="/bridge_template".
    "docs/examples/interfaces_bridge_template_func": "bridge_template",
}


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True,
                          capture_output=True, text=True).stdout


def git_dir(path: str) -> str:
    p = Path(path)
    return str(p / ".git") if (p / ".git").is_dir() else str(p)


def _digest(text: str) -> str:
    """The identity of a text for deduplication: as kept (with its final newline)."""
    body = text if text.endswith("\n") else text + "\n"
    return hashlib.sha256(body.encode()).hexdigest()


class Corpus:
    def __init__(self, keep_existing: bool = False) -> None:
        self.seen: dict[str, str] = {}      # text's digest -> the corpus name it is kept as
        self.count: dict[str, int] = {}
        if keep_existing:
            # Adding sources to the kept corpus: a text it holds already is not taken again
            # (the public files copy each other: ifupdown2's examples, Proxmox's defaults).
            for kept in sorted(CORPUS.glob("*/*.interfaces")):
                body = kept.read_text().split("\n", 1)[1]
                self.seen.setdefault(_digest(body), f"{kept.parent.name}/{kept.name}")

    def add(self, source: str, name: str, origin: str, licence: str, text: str) -> str | None:
        """Keep TEXT as SOURCE/NAME.interfaces unless the same text is kept already; the
        corpus name (SOURCE/FILE) it is kept as, or None for a text without a stanza."""
        if "iface" not in text:
            return None
        digest = _digest(text)
        if digest in self.seen:
            return self.seen[digest]
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
        out = CORPUS / source / f"{name}.interfaces"
        self.seen[digest] = f"{source}/{out.name}"
        out.parent.mkdir(parents=True, exist_ok=True)
        body = text if text.endswith("\n") else text + "\n"
        out.write_text(f"# compat-source: {origin}; licence: {licence}\n{body}")
        self.count[source] = self.count.get(source, 0) + 1
        return self.seen[digest]


def from_git(corpus: Corpus, repo: str, url: str, source: str, licence: str,
             select, name_of, commit: str = "HEAD") -> None:
    repo = git_dir(repo)
    rev = git(repo, "rev-parse", commit).strip()
    for path in git(repo, "ls-tree", "-r", "--name-only", rev).splitlines():
        if select(path):
            text = git(repo, "show", f"{rev}:{path}")
            corpus.add(source, name_of(path), f"{url} {path} @ {rev[:12]}", licence, text)


def from_pve_network(corpus: Corpus, repo: str, commit: str) -> None:
    """pve-network's SDN zone tests: each test directory holds a host's `interfaces` and
    the `expected_sdn_interfaces` generated for it, which Proxmox writes to
    /etc/network/interfaces.d/sdn and reads only through the host's file (it sources
    it). The SDN file's source line names the host file kept for its test
    (`read with:`, tests/compat/readwith.py), so both tiers read the pair."""
    url, licence = "github.com/proxmox/pve-network", "AGPL-3.0-or-later"
    repo = git_dir(repo)
    rev = git(repo, "rev-parse", commit).strip()
    tests = sorted({str(Path(p).parent) for p in
                    git(repo, "ls-tree", "-r", "--name-only", rev, "src/test/zones/").splitlines()
                    if Path(p).name in ("interfaces", "expected_sdn_interfaces")})
    hosts: dict[str, str | None] = {}
    for test in tests:      # the host files first, so each SDN file can name its host's
        try:
            text = git(repo, "show", f"{rev}:{test}/interfaces")
        except subprocess.CalledProcessError:
            continue
        hosts[test] = corpus.add("pve-network", "-".join(test.split("/")[3:5]) + "-host",
                                 f"{url} {test}/interfaces @ {rev[:12]}", licence, text)
    for test in tests:
        try:
            text = git(repo, "show", f"{rev}:{test}/expected_sdn_interfaces")
        except subprocess.CalledProcessError:
            continue
        host = hosts.get(test)
        read_with = (f"read with: {host} (the host file of its pve-network test, which "
                     "sources it)" if host else
                     "read with: none (the host file of its pve-network test is empty)")
        corpus.add("pve-network", "-".join(test.split("/")[3:5]) + "-sdn",
                   f"{url} {test}/expected_sdn_interfaces @ {rev[:12]}; {read_with}", licence,
                   text)


def adoc_blocks(text: str) -> list[tuple[int, str]]:
    """The `----` delimited listing blocks of an AsciiDoc file that hold a stanza."""
    blocks, start, lines = [], None, text.splitlines()
    for number, line in enumerate(lines, 1):
        if line.strip() == "----":
            previous = lines[number - 2].strip() if number > 1 else ""
            if start is None and previous and not previous.startswith(("[", ".")):
                continue    # a four-letter section title's underline, not a block
            if start is None:
                start = number
            else:
                body = "\n".join(lines[start:number - 1])
                if re.search(r"^\s*iface\s", body, re.M):
                    blocks.append((start + 1, body))
                start = None
    return blocks


# Issue 22's sources: public repositories that ship an interfaces file or show one in
# their docs. Each row: the repository (owner/name on GitHub), the corpus directory its
# files go to, its licence as its repository states it, the paths taken whole (a regex),
# and the documents whose code blocks holding a stanza are taken (a regex, or None).
NO_LICENCE = "no licence file in the repository"
MORE_SOURCES = (
    ("ifupdown-ng/ifupdown-ng", "ifupdown-ng", "ISC",
     r"^tests/fixtures/.*\.interfaces$", r"^doc/.*\.(scd|md)$"),
    # Debian's ifupdown source (salsa.debian.org/debian/ifupdown) as Pexip mirrors it: its
    # test suite's input files, several of them wrong on purpose (a parser's tests).
    ("pexip/os-ifupdown", "debian-ifupdown", "GPL-2.0-or-later",
     r"^tests/linux/testcase\.\d+$", None),
    ("CumulusNetworks/cldemo-config-vxlan", "cumulus-topologies", NO_LICENCE,
     r"(^|/)interfaces$", None),
    ("CumulusNetworks/cldemo-pim", "cumulus-topologies", NO_LICENCE, r"(^|/)interfaces$", None),
    ("CumulusNetworks/cldemo-qinq", "cumulus-topologies", NO_LICENCE, r"(^|/)interfaces$", None),
    ("CumulusNetworks/ansible-evpn-symmetric", "cumulus-topologies", NO_LICENCE,
     r"(^|/)interfaces$", None),
    ("CumulusNetworks/cldemo-onie-ztp-ptm", "cumulus-topologies", NO_LICENCE,
     r"(^|/)interfaces$", None),
    ("CumulusNetworks/citc-bootcamp-3.7.3", "cumulus-topologies", "MIT", r"(^|/)interfaces$",
     None),
    ("BozkurtDev/hetzner-proxmox-nat", "proxmox-hosts", "MIT", r"^etc/network/interfaces$", None),
    ("SOlangsam/hetzner-proxmox-nat", "proxmox-hosts", "MIT", r"^etc/network/interfaces$", None),
    ("AshaTM/proxmox_network_structure_single_ip", "proxmox-hosts", NO_LICENCE,
     r"^etc/network/interfaces$", None),
    ("HackInTheBox/proxmox_config", "proxmox-hosts", NO_LICENCE, r"^etc/network/interfaces$",
     None),
    ("AdrianLSY/Proxmox-setup", "proxmox-hosts", NO_LICENCE, r"^etc/network/interfaces$", None),
    ("FlynnYork/PVE", "proxmox-hosts", NO_LICENCE, r"^interfaces$", None),
    ("USTC-vlab/maint-docs", "proxmox-hosts", NO_LICENCE, None, r"^docs/.*\.md$"),
    ("vlombardino/Proxmox", "proxmox-hosts", NO_LICENCE, None, r"\.md$"),
    ("Cherish0221/OpenStack_controller", "openstack-lxc-hosts", NO_LICENCE, r"^interfaces$",
     None),
    ("0x00-pl/lxc_simple_config", "openstack-lxc-hosts", NO_LICENCE, r"^interfaces$", None),
    ("Cherish0221/OpenStack_compute1", "openstack-lxc-hosts", NO_LICENCE, r"^interfaces$",
     None),
    ("AmpereComputing/openstack-kolla-ampere-aio-scripts", "openstack-lxc-hosts",
     "Apache-2.0", r"^etc/network/interfaces", None),
    ("Biohazardhpk/OpenStack-Liberty-Install-Script", "openstack-lxc-hosts", "GPL-2.0",
     None, r"^README\.md$"),
    ("CedrX/network-interfaces-openvswitch", "openstack-lxc-hosts", NO_LICENCE,
     r"^interfaces$", None),
    ("Andreansx/proxmox-nginx-vm-setup", "proxmox-hosts", NO_LICENCE, r"^interfaces$",
     r"^README\.md$"),
    # Debian routers and servers kept in git by their admins.
    ("Razuuu/debian-router", "debian-hosts", NO_LICENCE, r"^etc/network/interfaces$", None),
    ("LENS-energie/routerconfig", "debian-hosts", NO_LICENCE, r"^etc/network/interfaces$",
     None),
    ("Esysteme/188.165.203.-", "debian-hosts", NO_LICENCE, r"^etc/network/interfaces$", None),
    ("ResEl-TB/debian8-reference", "debian-hosts", NO_LICENCE,
     r"^etc/network/interfaces\.sample$", None),
    ("AS206729/bird2", "debian-hosts", "MIT", r"^interfaces$", None),
    ("ACM-USAL/routerbox", "debian-hosts", NO_LICENCE, r"^interfaces(\.default)?$", None),
    ("BenJule/local_infra", "debian-hosts", NO_LICENCE, r"^etc/network/interfaces(\.d/.*)?$",
     None),
    ("Navok85/lancache", "debian-hosts", NO_LICENCE, r"^etc/network/interfaces$", None),
    ("ffdon/technik-meta", "freifunk-gateways", NO_LICENCE, None, r"\.rst$"),
    ("freifunk-mwu/technik-meta", "freifunk-gateways", NO_LICENCE, None, r"\.rst$"),
)
_STANZA = re.compile(r"^\s*iface\s", re.M)


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def doc_blocks(text: str, rst: bool = False) -> list[tuple[int, str]]:
    """The code blocks of a Markdown, scdoc or reStructuredText document that hold a
    stanza, each as (first line, text): fenced blocks (``` or ~~~, indented or not, as
    in mkdocs tabs), and indented literal blocks: in reStructuredText those after a
    paragraph ending in '::' (indented deeper than it), in Markdown four-space blocks
    after a blank line that hold no fence. Each is dedented to what a user pastes into
    the file; nothing else is changed."""
    lines = text.splitlines()
    blocks: list[tuple[int, list[str]]] = []
    i = 0
    while i < len(lines):
        # (reStructuredText has no fences: its ~~~ lines underline titles.)
        fence = None if rst else re.match(r"^(\s*)(```|~~~)", lines[i])
        if fence:
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].strip().startswith(fence.group(2))), len(lines))
            blocks.append((i + 2, lines[i + 1:end]))
            i = end + 1
            continue
        if rst and lines[i].rstrip().endswith("::"):
            opener = _indent(lines[i])
            start = i + 1
            while start < len(lines) and not lines[start].strip():
                start += 1
            end = start
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > opener):
                end += 1
            if end > start:
                blocks.append((start + 1, lines[start:end]))
            i = max(end, i + 1)
            continue
        previous = lines[i - 1] if i else ""
        if not rst and not previous.strip() and re.match(r"^(    |\t)\S", lines[i]):
            end = i
            while end < len(lines) and (not lines[end].strip()
                                        or re.match(r"^(    |\t)", lines[end])):
                end += 1
            if not any(re.match(r"^\s*(```|~~~)", ln) for ln in lines[i:end]):
                blocks.append((i + 1, lines[i:end]))
                i = end
                continue
        i += 1
    found = []
    for start, body in blocks:
        # The common leading white space only: tabs inside stay tabs, as published.
        block = textwrap.dedent("\n".join(body)).strip("\n")
        if _STANZA.search(block):
            found.append((start, block + "\n"))
    return found


def from_more_sources(corpus: Corpus, gits: dict[str, str]) -> None:
    """Take MORE_SOURCES from the clones in GITS (owner/name -> git directory)."""
    for repo, source, licence, whole, docs in MORE_SOURCES:
        if repo not in gits:
            print(f"{repo}: no clone given, skipped", file=sys.stderr)
            continue
        gdir = git_dir(gits[repo])
        rev = git(gdir, "rev-parse", "HEAD").strip()
        # The repository's name alone, or with its owner where two share it (forks).
        short = repo.split("/")[1]
        if sum(r[0].split("/")[1] == short for r in MORE_SOURCES) > 1:
            short = repo.replace("/", "-")
        url = f"github.com/{repo}"
        for path in git(gdir, "ls-tree", "-r", "--name-only", rev).splitlines():
            if whole and re.search(whole, path):
                text = git(gdir, "show", f"{rev}:{path}")
                if _STANZA.search(text):
                    corpus.add(source, f"{short}-{path.removesuffix('.interfaces').replace('/', '-')}",
                               f"{url} {path} @ {rev[:12]}", licence, text)
            elif docs and re.search(docs, path):
                text = git(gdir, "show", f"{rev}:{path}")
                for line, body in doc_blocks(text, rst=path.endswith(".rst")):
                    corpus.add(source, f"{short}-{Path(path).with_suffix('')}-L{line}"
                               .replace("/", "-"),
                               f"{url} {path} line {line} (a code block) @ {rev[:12]}",
                               licence, body)


def derive_cases(attribute: str) -> int:
    """tests/compat/cases/: each corpus file that `netcfg check` refuses for `attribute`
    alone, with that attribute's lines removed, so the differential can run it today
    and show what the attribute changes in the kernel."""
    sys.path.insert(0, str(CORPUS.parent))
    import table
    cases = CORPUS.parent / "cases"
    made = 0
    for r in table.check_all():
        if r.accepted or r.attributes != [attribute]:
            continue
        lines = (CORPUS / r.name).read_text().splitlines(keepends=True)
        keep = [ln for ln in lines[1:]
                if ln.split()[:1] not in ([attribute], [attribute.replace("-", "_")])]
        stem = r.name.replace("/", "-").removesuffix(".interfaces")
        out = cases / f"{stem}-without-{attribute}.interfaces"
        out.write_text(f"# compat-source: derived from corpus/{r.name} with its '{attribute}' "
                       f"lines removed; licence: {lines[0].split('licence: ', 1)[-1].strip()}\n"
                       + "".join(keep) if "licence" in lines[0] else "".join(keep))
        made += 1
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("ifupdown2", "pve-docs", "pve-network", "cldemo-evpn", "cldemo-l3clos",
                "debian-ifupdown-examples"):
        ap.add_argument(f"--{opt}")
    ap.add_argument("--cldemo-l3clos-commit", default="84f2fc8e7d379419fa67108534177ce3df0d2140")
    ap.add_argument("--pve-network-commit", default="HEAD")
    ap.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=GITDIR",
                    help="a clone of one of MORE_SOURCES' repositories (repeatable)")
    ap.add_argument("--mirror-root", metavar="DIR",
                    help="clones of MORE_SOURCES as DIR/OWNER+NAME/repo")
    ap.add_argument("--derive-without", metavar="ATTRIBUTE",
                    help="write tests/compat/cases/ from the files refused for ATTRIBUTE alone")
    a = ap.parse_args()
    if a.derive_without:
        print(f"cases: {derive_cases(a.derive_without)}")
        return 0
    gits = dict(g.split("=", 1) for g in a.git)
    if a.mirror_root:
        for repo, *_ in MORE_SOURCES:
            clone = Path(a.mirror_root) / repo.replace("/", "+") / "repo"
            if clone.exists():
                gits.setdefault(repo, str(clone))
    # Only issue 22's sources given: add them to the corpus kept, without its texts again.
    corpus = Corpus(keep_existing=not any((a.ifupdown2, a.pve_docs, a.pve_network,
                                           a.cldemo_evpn, a.cldemo_l3clos,
                                           a.debian_ifupdown_examples)))
    if gits:
        from_more_sources(corpus, gits)
    if a.ifupdown2:
        url = "github.com/CumulusNetworks/ifupdown2"
        from_git(corpus, a.ifupdown2, url, "ifupdown2", "GPL-2.0",
                 lambda p: p.startswith("tests/eni/") or p.startswith("tests/scp/"),
                 lambda p: p.split("/")[1] + "-" + Path(p).stem)
        from_git(corpus, a.ifupdown2, url, "ifupdown2", "GPL-2.0",
                 lambda p: p.startswith("docs/examples/") and not p.endswith((".py", ".sh")),
                 lambda p: "examples-" + p[len("docs/examples/"):].replace("/", "-"))
        repo = git_dir(a.ifupdown2)
        rev = git(repo, "rev-parse", "HEAD").strip()
        for path, name in IFUPDOWN2_TEMPLATES.items():
            # A '#' line is text to Mako, not a comment; outside any <%def> it is
            # rendered only when the file is, never when it is used as a namespace.
            TEMPLATES.mkdir(exist_ok=True)
            (TEMPLATES / name).write_text(
                f"# compat-source: {url} {path} @ {rev[:12]}, as "
                f"/etc/network/ifupdown2/templates/{name} (its usage notes say to put it "
                f"there); licence: GPL-2.0\n" + git(repo, "show", f"{rev}:{path}"))
    if a.pve_docs:
        repo = git_dir(a.pve_docs)
        rev = git(repo, "rev-parse", "HEAD").strip()
        for path in ("pve-network.adoc", "pvesdn.adoc"):
            try:
                text = git(repo, "show", f"{rev}:{path}")
            except subprocess.CalledProcessError:
                continue
            for line, body in adoc_blocks(text):
                corpus.add("pve-docs", f"{Path(path).stem}-L{line}",
                           f"github.com/proxmox/pve-docs {path} line {line} @ {rev[:12]}",
                           "GFDL-1.3-or-later", body)
    if a.pve_network:
        from_pve_network(corpus, a.pve_network, a.pve_network_commit)
    for opt, url in (("cldemo_evpn", "github.com/CumulusNetworks/cldemo-evpn"),
                     ("cldemo_l3clos", "github.com/CumulusNetworks/cldemo-l3clos")):
        repo = getattr(a, opt)
        if repo:
            commit = a.cldemo_l3clos_commit if opt == "cldemo_l3clos" else "HEAD"
            from_git(corpus, repo, url, "cumulus-demos", "no licence file in the repository",
                     lambda p: Path(p).name == "interfaces",
                     lambda p, o=opt: o.split("_")[1] + "-" + p.split("/")[-2], commit)
    if a.debian_ifupdown_examples:
        for path in sorted(Path(a.debian_ifupdown_examples).iterdir()):
            if path.suffix in (".sh", ".pl"):
                continue
            raw = path.read_bytes()
            text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
            origin = ""
            if path.name == "bridge":
                # A note in prose around one example: keep the example's lines only.
                lines = text.splitlines()
                first = next(i for i, ln in enumerate(lines) if ln.startswith("auto "))
                last = next(i for i, ln in enumerate(lines) if ln.startswith("Note"))
                text, origin = "\n".join(lines[first:last]).rstrip() + "\n", " (its example lines)"
            corpus.add("debian-ifupdown", path.name.removesuffix(".gz"),
                       "Debian ifupdown 0.8.41 /usr/share/doc/ifupdown/examples/"
                       f"{path.name}{origin}",
                       "GPL-2.0-or-later", text)
    for source, n in sorted(corpus.count.items()):
        print(f"{source}: {n}")
    print(f"total: {sum(corpus.count.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
