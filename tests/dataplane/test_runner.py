"""The standalone runner (`python -m netcfgd.target -c FILE`) and the typed
wrapper under it: a netcfg config's volume and target stanzas served until
SIGTERM; CHAP secret files must be root-only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from iscsi_clients import IQN, make_netns, run, url

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


def start(config_path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-m", "netcfgd.target", "-c", str(config_path),
                          "--threads", "2", "--stats-on-exit"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise AssertionError(f"runner exited {p.returncode}: {p.stderr.read()}")
        if run(["iscsi-ls", url("127.0.0.1")], timeout=5).returncode == 0:
            return p
        time.sleep(0.2)
    p.kill()
    raise AssertionError("runner did not start serving")


def test_runner_serves_host_and_tenant_until_sigterm(netns_dir, tmp_path):
    make_netns(netns_dir, "t1", "10.0.0.1")
    write_secret(tmp_path / "chap")
    cfg = tmp_path / "storage.cfg"
    cfg.write_text(CONFIG.format(dir=tmp_path, iqn=IQN))
    p = start(cfg)
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
    cfg = tmp_path / "storage.cfg"
    cfg.write_text(CONFIG.format(dir=tmp_path, iqn=IQN))
    r = subprocess.run([sys.executable, "-m", "netcfgd.target", "-c", str(cfg)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "chmod 600" in r.stderr and "Traceback" not in r.stderr


def test_runner_reports_a_missing_namespace(tmp_path):
    write_secret(tmp_path / "chap")
    cfg = tmp_path / "storage.cfg"
    cfg.write_text(CONFIG.format(dir=tmp_path, iqn=IQN))
    r = subprocess.run([sys.executable, "-m", "netcfgd.target", "-c", str(cfg)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "t1" in r.stderr and "Traceback" not in r.stderr


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
