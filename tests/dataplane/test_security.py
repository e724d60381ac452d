"""Access control: initiator ACLs, CHAP and mutual CHAP, with libiscsi as the
initiator; secrets never appear in stats."""

from __future__ import annotations

import socket

import pytest

from iscsi_clients import IQN, login_pdu, login_status, read_pdu, run, url

TARGET = f"{IQN}:secure"
ALLOWED = "iqn.2024-01.org.netcfg.test:allowed"
OTHER = "iqn.2024-01.org.netcfg.test:other"
USER, SECRET = "alice", "alice-secret-1234"
TUSER, TSECRET = "storage", "target-secret-5678"


@pytest.fixture
def volume(dataplane, tmp_path):
    dataplane.add_volume("sec", str(tmp_path / "sec.img"), size=8 << 20)
    dataplane.add_portal("", "127.0.0.1", 3260)
    return "sec"


def raw_login_status(initiator: str, target: str) -> int:
    with socket.create_connection(("127.0.0.1", 3260), timeout=5) as s:
        s.sendall(login_pdu(initiator, target))
        return login_status(read_pdu(s)[0])


def test_acl_admits_only_listed_initiators(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, allow=[ALLOWED])
    assert run(["iscsi-inq", "-i", ALLOWED, url("127.0.0.1", TARGET, 0)]).returncode == 0
    assert run(["iscsi-inq", "-i", OTHER, url("127.0.0.1", TARGET, 0)]).returncode != 0
    assert raw_login_status(OTHER, TARGET) == 0x0202
    assert raw_login_status(ALLOWED, TARGET) == 0


def test_discovery_hides_targets_the_initiator_may_not_use(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, allow=[ALLOWED])
    assert TARGET in run(["iscsi-ls", "-i", ALLOWED, url("127.0.0.1")]).stdout
    r = run(["iscsi-ls", "-i", OTHER, url("127.0.0.1")])
    assert r.returncode == 0 and TARGET not in r.stdout


def test_acl_change_applies_to_the_next_login(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, allow=[ALLOWED])
    assert raw_login_status(OTHER, TARGET) == 0x0202
    dataplane.set_target("", TARGET, {0: volume}, allow=[ALLOWED, OTHER])
    assert raw_login_status(OTHER, TARGET) == 0


def test_chap(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, chap=(USER, SECRET))
    good = url("127.0.0.1", TARGET, 0, auth=f"{USER}%{SECRET}@")
    assert run(["iscsi-inq", good]).returncode == 0
    wrong = url("127.0.0.1", TARGET, 0, auth=f"{USER}%not-the-secret-00@")
    assert run(["iscsi-inq", wrong]).returncode != 0
    assert run(["iscsi-inq", url("127.0.0.1", TARGET, 0)]).returncode != 0
    # Skipping the security stage is an authentication failure.
    assert raw_login_status(ALLOWED, TARGET) == 0x0201


def test_mutual_chap(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, chap=(USER, SECRET), mutual_chap=(TUSER, TSECRET))
    base = url("127.0.0.1", TARGET, 0, auth=f"{USER}%{SECRET}@")
    assert run(["iscsi-inq", f"{base}?target_user={TUSER}&target_password={TSECRET}"]).returncode == 0
    # The initiator refuses a target that does not know the secret it expects.
    r = run(["iscsi-inq", f"{base}?target_user={TUSER}&target_password=wrong-secret-999"])
    assert r.returncode != 0


def test_mutual_chap_without_target_secret_fails(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, chap=(USER, SECRET))
    base = url("127.0.0.1", TARGET, 0, auth=f"{USER}%{SECRET}@")
    assert run(["iscsi-inq", f"{base}?target_user={TUSER}&target_password={TSECRET}"]).returncode != 0


def test_secrets_never_in_stats(dataplane, volume):
    dataplane.set_target("", TARGET, {0: volume}, chap=(USER, SECRET), mutual_chap=(TUSER, TSECRET))
    text = repr(dataplane.stats())
    assert SECRET not in text and TSECRET not in text


def test_bad_arguments_are_clear_errors(dataplane, volume):
    with pytest.raises(ValueError, match="mutual CHAP needs CHAP"):
        dataplane.set_target("", TARGET, {0: volume}, mutual_chap=(TUSER, TSECRET))
    with pytest.raises(ValueError, match="not added"):
        dataplane.set_target("", TARGET, {0: "nosuch"})
    with pytest.raises(ValueError, match="not known"):
        dataplane.add_portal("nosuch", "127.0.0.1", 3260)
    with pytest.raises(OSError, match="cannot listen"):
        dataplane.add_portal("", "192.0.2.1", 3260)
