"""The peers' verdicts (tests/compat/peer_results.json, written by peers.py) are
recorded for every corpus file as it is now, so the acceptance table's peers'
column and its peer-accepted measure are not stale. Reads the results file only:
`make test` never runs the peers (`sudo tests/compat/peers.py` regenerates it)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402
import table  # noqa: E402


def test_every_corpus_file_has_a_current_peer_verdict():
    recorded = peers.load()["files"]
    missing, stale = [], []
    for path in table.corpus_files():
        name = str(path.relative_to(peers.CORPUS))
        if name not in recorded:
            missing.append(name)
        elif recorded[name]["digest"] != peers.digest(path):
            stale.append(name)
    assert not missing and not stale, (
        "rerun `sudo tests/compat/peers.py` (or --update FILE...):\n"
        f"no verdict: {missing}\nverdict for another text: {stale}")


def test_no_verdict_for_a_file_that_left_the_corpus():
    names = {str(p.relative_to(peers.CORPUS)) for p in table.corpus_files()}
    assert set(peers.load()["files"]) <= names


def test_written_for_ifupdown(tmp_path):
    def file(text: str) -> Path:
        path = tmp_path / "f.interfaces"
        path.write_text("# compat-source: test; licence: none\n" + text)
        return path
    assert peers.for_ifupdown(file("auto br0\niface br0 inet static\n  address 192.0.2.1/24\n"
                                   "  bridge_ports eth0\n  bond-slaves none\n"))
    assert not peers.for_ifupdown(file("auto br0\niface br0 inet manual\n"
                                       "  bridge-vlan-aware yes\n"))
    assert not peers.for_ifupdown(file("auto vx\niface vx inet manual\n  vxlan-id 10\n"))
    assert not peers.for_ifupdown(file("auto eth0\niface eth0\n  use dhcp\n"))
    assert not peers.for_ifupdown(file("% for v in range(2):\niface v${v} inet manual\n"
                                       "% endfor\n"))


def test_verdict_reads_ifupdown2s_syntax_check():
    assert peers.verdict(0, "", warnings_only_pass=True)["status"] == "yes"
    warned = peers.verdict(1, "warning: br0: bridge inherits mtu from its ports\n",
                           warnings_only_pass=True)
    assert warned["status"] == "warnings" and warned["accepts"]
    refused = peers.verdict(1, "warning: x\nerror: f:3: unknown attribute\n",
                            warnings_only_pass=True)
    assert not refused["accepts"] and refused["first_error"] == "error: f:3: unknown attribute"
    assert not peers.verdict(1, "warning: x\n", warnings_only_pass=False)["accepts"]


def test_ifupdown2_ignores_what_it_does_not_declare():
    known = peers.ifupdown2_attributes()
    if not known:
        import pytest
        pytest.skip("ifupdown2 is not unpacked: make compat-deps")
    assert {"address", "bridge-ports", "vxlan-id", "post-up"} <= known
    text = ("auto eth0\niface eth0\n  use dhcp\n  requires lo\n  address 192.0.2.1/24\n"
            "  dns-nameservers 192.0.2.53\n  bridge_ports none\n")
    assert peers.ignored_by_ifupdown2(text, known) == ["use", "requires"]
