"""The standalone runner (`python -m netcfgd.target -c FILE`) and the typed
wrapper under it: a netcfg config's volume and target stanzas served until
SIGTERM; CHAP secret files must be root-only."""

from __future__ import annotations

import os
import signal

import pytest

from iscsi_clients import (IQN, make_netns, run, start_target, target_refuses, url,
                           write_target_config)

from netcfgd.dataplane import DataplaneError, read_secret_file

CONFIG = """
# The runner serves only volume and target stanzas; the interface is here
# because a portal must be an address of the target's namespace.
iface lo
    netns t1
    address 10.0.0.1/32

volume host-vol
    backing {dir}/host.img
    size 16M

volume tenant-vol
    backing {dir}/tenant.img
    size 32M

target {iqn}:host
    portal 127.0.0.1:3260
    lun 0 host-vol

target {iqn}:tenant
    netns t1
    portal 10.0.0.1:3260
    lun 0 tenant-vol
    chap-secret-file {dir}/chap
"""


def write_secret(path, text="alice alice-secret-1234\n", mode=0o600):
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def test_runner_serves_host_and_tenant_until_sigterm(netns_dir, tmp_path):
    make_netns(netns_dir, "t1", "10.0.0.1")
    write_secret(tmp_path / "chap")
    p = start_target(write_target_config(CONFIG, tmp_path), "--stats-on-exit")
    try:
        r = run(["iscsi-ls", url("127.0.0.1")])
        assert f"{IQN}:host" in r.stdout and f"{IQN}:tenant" not in r.stdout
        r = run(["iscsi-readcapacity16", url("10.0.0.1", f"{IQN}:tenant", 0,
                                            auth="alice%alice-secret-1234@")], netns="t1")
        assert r.returncode == 0, r.stderr
        assert "Total size:33554432" in r.stdout
        assert run(["iscsi-inq", url("10.0.0.1", f"{IQN}:tenant", 0)], netns="t1").returncode != 0
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    assert '"logins"' in out and "alice-secret" not in out + err


def test_runner_refuses_a_world_readable_secret(netns_dir, tmp_path):
    make_netns(netns_dir, "t1", "10.0.0.1")
    write_secret(tmp_path / "chap", mode=0o644)
    stderr = target_refuses(write_target_config(CONFIG, tmp_path))
    assert "chmod 600" in stderr and "Traceback" not in stderr


def test_runner_reports_a_missing_namespace(tmp_path):
    write_secret(tmp_path / "chap")
    stderr = target_refuses(write_target_config(CONFIG, tmp_path))
    assert "t1" in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("text,mode,message", [
    ("alice alice-secret-1234\n", 0o640, "chmod 600"),
    ("alice\n", 0o600, "USER SECRET"),
    ("alice short\n", 0o600, "at least 12"),
])
def test_secret_file_checks(tmp_path, text, mode, message):
    path = write_secret(tmp_path / "s", text, mode)
    with pytest.raises(DataplaneError, match=message):
        read_secret_file(path, "chap-secret-file")


def test_secret_file_must_be_root_owned(tmp_path):
    path = write_secret(tmp_path / "s")
    os.chown(path, 1000, 1000)
    with pytest.raises(DataplaneError, match="not root"):
        read_secret_file(path, "chap-secret-file")


def test_secret_file_read(tmp_path):
    assert read_secret_file(write_secret(tmp_path / "s"), "x") == ("alice", b"alice-secret-1234")
