"""One owner of the kernel at a time (issue 23, H2, M5, M16) and the trial
commands a node agent drives (issue 26): `apply --confirm --json-events`,
`confirm --wait`, `confirm --revert`, with and without netcfgd.

Each test reads the kernel back (`ip -j`) for what stays in force; netcfgd
is a real process in the sandbox (helpers: test_netcfgd.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_netcfgd import TENANTS, addresses, cli, wait_for
from test_netcfgd import make_daemon  # noqa: F401 - the fixture, shared
from test_netcfgd_confirm import AFTER, BEFORE, finished

from netcfg.apply.trial_record import config_digest
from netcfg.compile.jsonform import model_to_json
from netcfg.compile.pipeline import ConfigSource, compile_config

NEW = TENANTS + "\niface eth0\n    netns red\n    address 10.0.1.6/30\n"
BLUE_BEFORE = {"10.0.2.2/30"}


def _netcfg(run_dir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "netcfg", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NETCFG_RUN_DIR": str(run_dir)})


def trial(run_dir: Path, config: Path, seconds: float, *extra: str) -> subprocess.Popen:
    """`netcfg apply -c CONFIG --confirm SECONDS`, started, once its change is in."""
    client = _netcfg(run_dir, "apply", "-c", str(config), "--confirm", str(seconds), *extra)
    wait_for(lambda: addresses("red", "eth0") == AFTER or client.poll() is not None, 30,
             "the change on trial")
    assert client.poll() is None, client.communicate()
    return client


def edit_config(config_dir: Path, text: str) -> None:
    (config_dir / "a.tmpl").write_text(text)


# ---------------------------------------------------------------- H2

def test_h2_confirm_reaches_a_cli_trial_while_netcfgd_starts(make_daemon):
    """netcfgd started while a CLI `apply --confirm` waits (the migration's
    step 4): it waits for the trial's end before it serves or enforces, so
    `netcfg confirm` reaches the CLI, which keeps the change."""
    daemon = make_daemon(TENANTS, start=False)
    edit_config(daemon.config, NEW)
    client = trial(daemon.run_dir, daemon.config, 20)
    daemon.start(ready=False)
    # Up: it says it waits (before this fix it opened its control socket instead).
    wait_for(lambda: "waits for its end" in daemon.log.read_text()
             or (daemon.run_dir / "netcfgd.sock").exists(), 30, "netcfgd up")
    assert "waits for its end" in daemon.log.read_text()
    started = time.monotonic()
    confirmed = cli(daemon.run_dir, "confirm")
    assert confirmed.returncode == 0, confirmed.stderr
    assert f"pid {client.pid}" in confirmed.stdout and time.monotonic() - started < 5
    code, out, err = finished(client)
    assert code == 0 and "confirmed" in out, err
    daemon.wait_message(lambda m: "READY=1" in m, 30, "READY=1 after the trial")
    assert addresses("red", "eth0") == AFTER
    assert daemon.status()["daemon"]["trial"] is None


def test_h2_netcfgd_does_not_enforce_the_config_a_cli_trial_reverted(make_daemon):
    daemon = make_daemon(TENANTS, start=False)
    edit_config(daemon.config, NEW)
    client = trial(daemon.run_dir, daemon.config, 3)
    daemon.start(ready=False)
    code, _out, err = finished(client)
    assert code == 3 and "restored" in err, err
    assert addresses("red", "eth0") == BEFORE
    # It says why and stops rather than enforce what nobody confirmed.
    assert daemon.proc.wait(30) == 1
    log = daemon.log.read_text()
    assert "reverted" in log and "not enforcing" in log, log[-2000:]
    time.sleep(0.5)
    assert addresses("red", "eth0") == BEFORE
    # Applying that config on purpose (no --confirm) makes it the one to enforce.
    assert cli(daemon.run_dir, "apply", "-c", str(daemon.config)).returncode == 0
    daemon.start()
    assert addresses("red", "eth0") == AFTER


# ---------------------------------------------------------------- M5

def test_m5_a_selection_of_another_config_is_refused_through_netcfgd(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    other = tmp_path / "other.tmpl"
    other.write_text(NEW + "\niface eth0\n    netns blue\n    address 10.0.2.6/30\n")
    refused = cli(daemon.run_dir, "apply", "-c", str(other), "--netns", "red", "eth0")
    assert refused.returncode == 2, refused.stderr
    assert "whole" in refused.stderr and "nothing was changed" in refused.stderr
    time.sleep(0.5)
    assert addresses("red", "eth0") == BEFORE and addresses("blue", "eth0") == BLUE_BEFORE
    # The config it enforces, narrowed: fine (the rest is enforced already).
    same = cli(daemon.run_dir, "apply", "-c", str(daemon.config), "--netns", "red", "eth0")
    assert same.returncode == 0, same.stderr
    # The whole of another config: fine, and from then on enforced.
    whole = cli(daemon.run_dir, "apply", "-c", str(other))
    assert whole.returncode == 0, whole.stderr
    assert addresses("blue", "eth0") == BLUE_BEFORE | {"10.0.2.6/30"}


# ---------------------------------------------------------------- M16

def test_m16_netcfgd_stopped_during_a_trial_reverts_it(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    other = tmp_path / "other.tmpl"
    other.write_text(NEW)
    client = trial(daemon.run_dir, other, 60)
    assert daemon.stop() == 0
    assert addresses("red", "eth0") == BEFORE
    assert not (daemon.run_dir / "trial.json").exists()
    code, _out, err = finished(client)
    assert code == 3, err
    assert "stopped" in err and "restored" in err, err


def test_m16_a_killed_netcfgd_leaves_the_client_saying_what_stays(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    other = tmp_path / "other.tmpl"
    other.write_text(NEW)
    client = trial(daemon.run_dir, other, 60)
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    code, _out, err = finished(client)
    assert addresses("red", "eth0") == AFTER
    assert code == 4 and "stays in force" in err, err


# ---------------------------------------------------------------- status

def test_status_names_what_is_enforced(make_daemon, tmp_path):
    daemon = make_daemon(TENANTS)
    expected = config_digest(compile_config(ConfigSource(path=str(daemon.config))).model)
    status = daemon.status()["daemon"]
    assert status["config"] == str(daemon.config) and status["config_sha256"] == expected
    text = cli(daemon.run_dir, "status").stdout
    assert f"sha256 {expected[:12]}" in text, text
    # A config from stdin: status says so, and what a reload would read instead.
    other = tmp_path / "other.tmpl"
    other.write_text(NEW)
    as_json = json.dumps(model_to_json(compile_config(ConfigSource(path=str(other))).model))
    done = cli(daemon.run_dir, "apply", "-c", "-", stdin=as_json)
    assert done.returncode == 0, done.stderr
    status = daemon.status()["daemon"]
    assert status["config_from"].startswith("stdin"), status
    assert status["config_sha256"] != expected
    assert "stdin" in cli(daemon.run_dir, "status").stdout


def test_l4_a_cli_with_another_run_dir_does_not_go_around_netcfgd(make_daemon, tmp_path):
    """L4: `NETCFG_RUN_DIR` set differently made the CLI apply directly,
    outside netcfgd's lock, say "verified", and netcfgd undo it within 1 s.
    Now it finds netcfgd (its abstract socket in this network namespace)
    and refuses, naming netcfgd's run dir, with nothing changed."""
    daemon = make_daemon(TENANTS)
    other = tmp_path / "other.tmpl"
    other.write_text(NEW)
    done = cli(tmp_path / "another-run-dir", "apply", "-c", str(other))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "netcfgd runs with another run dir" in done.stderr, done.stderr
    assert os.path.realpath(daemon.run_dir) in done.stderr
    assert addresses("red", "eth0") == BEFORE            # nothing was written
    # The same run dir goes through netcfgd, as always.
    assert cli(daemon.run_dir, "apply", "-c", str(other)).returncode == 0
    assert addresses("red", "eth0") == AFTER


# ---------------------------------------------------------------- issue 26's commands

@pytest.mark.parametrize("with_daemon", [False, True], ids=["cli", "netcfgd"])
def test_trial_begins_with_a_json_line_and_confirm_wait_and_revert(make_daemon, tmp_path,
                                                                    with_daemon):
    daemon = make_daemon(TENANTS, start=with_daemon)
    other = tmp_path / "other.tmpl"
    other.write_text(NEW)
    client = trial(daemon.run_dir, other, 60, "--json-events")
    began = json.loads(client.stdout.readline())
    assert began["event"] == "trial-begin" and began["requests"] > 0, began
    assert time.time() + 50 < began["deadline"] <= time.time() + 61
    assert began["owner"] == ("netcfgd" if with_daemon else "netcfg")
    waiter = _netcfg(daemon.run_dir, "confirm", "--wait")
    time.sleep(1)
    assert waiter.poll() is None, waiter.communicate()      # it blocks while the trial waits
    reverted = cli(daemon.run_dir, "confirm", "--revert")
    assert reverted.returncode == 0, reverted.stderr
    code, _out, err = finished(waiter)
    assert code == 3 and "revert" in err, err
    code, out, err = finished(client)
    assert code == 3, err
    ended = json.loads(out.splitlines()[-1])
    assert ended["event"] == "trial-end" and ended["state"] == "reverted", ended
    # Once seen empty right after netcfgd's revert under load (not understood yet: see
    # the report of issue 23's trial part); it must settle on BEFORE.
    wait_for(lambda: addresses("red", "eth0") == BEFORE, 2, "the state from before")

    # ... and one confirmed: --wait exits 0.
    client = trial(daemon.run_dir, other, 60, "--json-events")
    json.loads(client.stdout.readline())
    waiter = _netcfg(daemon.run_dir, "confirm", "--wait")
    time.sleep(0.5)
    assert cli(daemon.run_dir, "confirm").returncode == 0
    code, out, err = finished(waiter)
    assert code == 0 and "confirmed" in out, err
    assert finished(client)[0] == 0
    assert addresses("red", "eth0") == AFTER
