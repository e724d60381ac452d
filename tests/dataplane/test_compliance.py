"""libiscsi's compliance suite, `iscsi-test-cu -t ALL --dataloss`, against the
embedded target: every test passes (exceptions would be listed, with their
reasons, in KNOWN_FAILURES and docs/dataplane.md "Compliance")."""

from __future__ import annotations

import pytest

from iscsi_clients import IQN, cu_results, run, url

TARGET = f"{IQN}:compliance"

# Tests allowed to fail, each with its reason in docs/dataplane.md
# ("Compliance"). None today: all 230 pass.
KNOWN_FAILURES: set[str] = set()


@pytest.mark.parametrize("digest", ["", "?header_digest=crc32c"], ids=["no-digest", "header-crc32c"])
def test_iscsi_test_cu_all(dataplane, tmp_path, digest):
    dataplane.add_volume("cu", str(tmp_path / "cu.img"), size=256 << 20)
    dataplane.set_target("", TARGET, {0: "cu"})
    dataplane.add_portal("", "127.0.0.1", 3260)
    r = run(["iscsi-test-cu", "-d", "-t", "ALL", url("127.0.0.1", TARGET, 0) + digest],
            timeout=900)
    ran, failed = cu_results(r.stdout)
    assert ran >= 200, r.stdout[-3000:]
    unexpected = sorted(set(failed) - KNOWN_FAILURES)
    assert unexpected == [], "\n".join(unexpected) + "\n" + r.stdout[-5000:]
    # The iSCSI family ran and passed in full.
    assert not [f for f in failed if f.startswith("iSCSI")]
    assert dataplane.stats()["digest_errors"] == 0
