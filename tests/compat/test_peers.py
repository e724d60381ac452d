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


def test_every_peer_accepted_file_has_an_apply_verdict():
    """The headline's denominator is the files a peer applies without an error: each
    file a peer's check accepts has an apply verdict from each peer that accepts it
    (kept in its record, so a new text drops it), `needs-vm` where the host kernel
    cannot judge it."""
    missing = []
    for name, record in peers.load()["files"].items():
        if peers.accepted_by_peer(record) and \
                set(record.get("apply") or {}) != set(peers.apply_peers(record)):
            missing.append(name)
    assert not missing, ("rerun `sudo tests/compat/peers.py --apply FILE...`: no apply "
                         f"verdict for {missing}")


def test_apply_verdict_reads_the_peers_exit_and_errors():
    ok = peers.apply_status("ifupdown2", 0, "warning: br0: something\n")
    assert ok["status"] == "applied" and ok["first_error"] == ""
    bad = peers.apply_status("ifupdown2", 0, "error: eno1: cmd '/bin/ip route add default "
                             "via <Gateway-IP>' failed\n")
    assert bad["status"] == "error" and bad["first_error"].startswith("error: eno1")
    one = peers.apply_status("ifupdown", 1, "RTNETLINK answers: File exists\n"
                             "ifup: failed to bring up eth0\n")
    assert one["status"] == "error" and one["first_error"] == "RTNETLINK answers: File exists"
    assert peers.applied_by_peer({"apply": {"ifupdown2": {"status": "error"},
                                            "ifupdown": {"status": "applied"}}})
    assert peers.applied_by_peer({"apply": {"ifupdown2": {"status": "needs-vm"}}}) is None
    assert peers.applied_by_peer({"apply": {"ifupdown2": {"status": "error"}}}) is False


def test_ports_and_kinds_from_text():
    text = ("auto vmbr0\niface vmbr0 inet static\n  address <Haupt-IP>\n"
            "  bridge_ports eno1 eth9.20\nauto bond0\niface bond0 inet manual\n"
            "  bond-slaves eth1 eth2\niface eno1:0 inet static\n  address 192.0.2.1/24\n")
    assert peers.ports_from_text(text) == ["eno1", "eth9", "eth1", "eth2"]
    assert peers.kinds_from_text(text) == {"bond", "vlan"}
    assert peers.kinds_from_text("iface t inet6 tunnel\n  mode sit\n") == {"tunnel"}


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
