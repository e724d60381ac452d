"""`netcfg apply --confirm` while netcfgd runs (daemon/netcfgd/trial.py): the
daemon holds the deadline, so the change is reverted whatever happens to the
client, and after a revert the daemon enforces the config from before. The
daemon is a real process in the sandbox (helpers: test_netcfgd.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_netcfgd import REPAIR_BOUND_S, TENANTS, addresses, cli, ip, wait_for
from test_netcfgd import make_daemon  # noqa: F401 - the fixture, shared

BEFORE = {"10.0.1.2/30"}
AFTER = {"10.0.1.2/30", "10.0.1.6/30"}


def new_config(tmp_path: Path) -> Path:
    other = tmp_path / "other.tmpl"
    other.write_text(TENANTS + "\niface eth0\n    netns red\n    address 10.0.1.6/30\n")
    return other


def apply_confirm(run_dir: Path, config: Path, seconds: float) -> subprocess.Popen:
    """`netcfg apply -c CONFIG --confirm SECONDS`, started, once its change is in."""
    client = subprocess.Popen(
        [sys.executable, "-m", "netcfg", "apply", "-c", str(config), "--confirm", str(seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "NETCFG_RUN_DIR": str(run_dir)})
    wait_for(lambda: addresses("red", "eth0") == AFTER or client.poll() is not None, 30,
             "the change on trial")
    assert client.poll() is None, client.communicate()
    return client


def finished(client: subprocess.Popen, timeout: float = 30) -> tuple[int, str, str]:
    out, err = client.communicate(timeout=timeout)
    return client.returncode, out, err


def test_confirmed_change_is_kept_and_enforced(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    other = new_config(tmp_path)
    client = apply_confirm(daemon.run_dir, other, 30)
    # Another apply must wait for the trial to end: it is refused, saying why.
    second = cli(daemon.run_dir, "apply", "-c", str(daemon.config))
    assert second.returncode != 0 and "waits for `netcfg confirm`" in second.stderr
    assert (daemon.run_dir / "trial.json").exists()
    status = cli(daemon.run_dir, "status")
    assert "on trial: reverted in" in status.stdout, status.stdout

    confirmed = cli(daemon.run_dir, "confirm")
    assert confirmed.returncode == 0 and "netcfgd" in confirmed.stdout, confirmed.stderr
    code, out, err = finished(client)
    assert code == 0 and "confirmed" in out, err
    assert not (daemon.run_dir / "trial.json").exists()
    # The daemon enforces the confirmed config: drift from it is repaired.
    ip("-n", "red", "addr", "del", "10.0.1.6/30", "dev", "eth0")
    wait_for(lambda: addresses("red", "eth0") == AFTER, REPAIR_BOUND_S, "repair to the new config")
    assert cli(daemon.run_dir, "confirm").returncode == 1   # nothing waits any more


def test_no_confirmation_reverts_and_the_old_config_is_enforced_again(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    client = apply_confirm(daemon.run_dir, new_config(tmp_path), 1.5)
    code, _out, err = finished(client)
    assert code == 3 and "no confirmation within 1.5 s" in err and "netcfgd" in err, err
    assert addresses("red", "eth0") == BEFORE
    status = json.loads(cli(daemon.run_dir, "status", "--json").stdout)
    assert status["daemon"]["config"] == str(daemon.config)
    # Enforcing the old config again: the address of the reverted one goes.
    ip("-n", "red", "addr", "add", "10.0.1.6/30", "dev", "eth0")
    wait_for(lambda: addresses("red", "eth0") == BEFORE, REPAIR_BOUND_S,
             "repair to the config from before the trial")


def test_the_deadline_is_the_daemons_and_ctrl_c_reverts_at_once(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    other = new_config(tmp_path)
    # A client killed outright (its ssh session gone with the change): the
    # change stays until the deadline, then goes.
    client = apply_confirm(daemon.run_dir, other, 3)
    applied = time.monotonic()
    client.kill()
    client.wait()
    time.sleep(0.5)
    assert addresses("red", "eth0") == AFTER      # not reverted on the disconnect
    wait_for(lambda: addresses("red", "eth0") == BEFORE, 10, "the revert at the deadline")
    assert time.monotonic() - applied >= 2.5
    # ...and one that is told to stop: Ctrl-C reverts now, not at the deadline.
    client = apply_confirm(daemon.run_dir, other, 60)
    started = time.monotonic()
    client.send_signal(signal.SIGINT)
    code, _out, err = finished(client)
    assert code == 3 and "interrupted (SIGINT)" in err, err
    assert addresses("red", "eth0") == BEFORE and time.monotonic() - started < 30


def test_a_restarted_daemon_reverts_a_change_nobody_confirmed(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    client = apply_confirm(daemon.run_dir, new_config(tmp_path), 60)
    daemon.proc.send_signal(signal.SIGKILL)     # the watchdog, a crash
    daemon.proc.wait()
    code, _out, err = finished(client)
    assert code == 4 and "stays in force" in err and "reverts the change when it starts again" in err, err
    assert addresses("red", "eth0") == AFTER    # nobody reverted it yet

    daemon.start()        # READY=1 after its first pass: the revert
    assert addresses("red", "eth0") == BEFORE
    assert not (daemon.run_dir / "trial.json").exists()
    assert "apply --confirm" in daemon.log.read_text()
