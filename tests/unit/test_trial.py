"""The bookkeeping of `apply --confirm` that needs no root: netcfgd's trials
(daemon/netcfgd/trial.py) and the CLI's interrupt guard (netcfg/apply/confirm.py).
The kernel tier runs them for real (test_netcfgd_confirm.py,
test_lifecycle.py); these pin the parts a restart or a second signal depend on."""

from __future__ import annotations

import json
import os
import signal
import stat

import pytest

from netcfg.apply.confirm import ApplyInterrupted, InterruptGuard
from netcfg.apply.execute import ApplyResult
from netcfg.apply.trial_record import read_ended
from netcfg.compile.pipeline import STDIN, ConfigSource, compile_config
from netcfg.plan.planner import build_plan
from netcfgd.trial import CONFIRMED, REVERTED, TRIAL_FILE, Trials, WAITING

PREVIOUS = "auto br0\niface br0\n    bridge-ports none\n    address 10.9.0.1/24\n"


def previous_model():
    return compile_config(ConfigSource(path=STDIN, stdin_text=PREVIOUS)).model


def test_the_config_to_go_back_to_is_on_disk_from_before_the_apply(tmp_path):
    trials = Trials(str(tmp_path / "run"))
    source = ConfigSource(path="/etc/netcfg", variables={"n": 2})
    trials.prepare(previous_model(), source, True, client_pid=4242)
    path = tmp_path / "run" / TRIAL_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    left = trials.left_over()
    assert left is not None and left["client_pid"] == 4242
    assert left["previous_source"] == {"path": "/etc/netcfg", "variables": {"n": 2},
                                       "stdin_text": None}
    # What a restarted daemon compiles: the same model as before.
    again = compile_config(ConfigSource(path=STDIN, stdin_text=json.dumps(left["previous"])))
    assert again.model.interfaces.keys() == previous_model().interfaces.keys()
    assert again.model.interfaces[("", "br0")].attrs["address"] == ["10.9.0.1/24"]


def test_a_trial_ends_once_and_its_outcome_stays_findable(tmp_path):
    trials = Trials(str(tmp_path))
    result = ApplyResult(build_plan([]))
    source = ConfigSource(path="/etc/netcfg")
    first = trials.begin(result, previous_model(), source, True, 0.5, client_pid=1)
    assert trials.current is first and first.to_json()["state"] == WAITING
    assert 0 < first.to_json()["left"] <= 0.5
    trials.end(CONFIRMED)
    assert trials.current is None and trials.left_over() is None
    assert trials.find(first.number).to_json() == {
        "number": first.number, "id": f"netcfgd-{os.getpid()}-{first.number}",
        "state": CONFIRMED, "client_pid": 1, "seconds": 0.5, "requests": 0,
        "config_sha256": "", "why": ""}
    # Its outcome is on disk too, for a client whose daemon went away.
    assert read_ended(str(tmp_path))["id"] == first.id
    second = trials.begin(result, previous_model(), source, True, 5, client_pid=2)
    assert second.number == first.number + 1
    trials.end(REVERTED, "no confirmation within 5 s")
    assert trials.find(second.number).why == "no confirmation within 5 s"
    assert trials.find(999) is None
    for _ in range(20):     # only the last few outcomes are kept
        trials.begin(result, previous_model(), source, True, 5, client_pid=3)
        trials.end(CONFIRMED)
    assert trials.find(first.number) is None and len(trials.ended) <= 8


def test_an_unreadable_trial_file_is_said_not_guessed(tmp_path):
    trials = Trials(str(tmp_path))
    (tmp_path / TRIAL_FILE).write_text("{not json")
    assert trials.left_over() == {}
    trials.forget_left_over()
    assert trials.left_over() is None


def test_the_interrupt_guard_notes_signals_and_raises_once():
    with InterruptGuard() as guard:
        guard.check()                        # nothing came: nothing raised
        os.kill(os.getpid(), signal.SIGINT)  # noted, not raised here
        assert guard.signal_name == "SIGINT"
        with pytest.raises(ApplyInterrupted, match=r"interrupted \(SIGINT\)") as raised:
            guard.check()
        assert raised.value.exit_code == 3
        # The revert that answers it runs batches too: they must go on.
        os.kill(os.getpid(), signal.SIGTERM)
        guard.check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_cli_trial_record_refuses_only_the_config_it_reverted(tmp_path):
    """netcfg/apply/trial_record.py: what a starting netcfgd reads."""
    from netcfg.apply.trial_record import CliTrial, config_digest

    model = previous_model()
    digest = config_digest(model)
    other = compile_config(ConfigSource(path=STDIN, stdin_text=PREVIOUS.replace(
        "10.9.0.1", "10.9.0.2"))).model
    assert config_digest(other) != digest
    record = CliTrial(str(tmp_path))
    begun = record.begin(seconds=5, requests=3, config="/etc/netcfg", digest=digest)
    assert begun["state"] == WAITING and begun["requests"] == 3
    assert record.refuses(digest) is None               # still waiting: not an outcome
    record.end(REVERTED, "no confirmation within 5 s")
    assert record.refuses(digest)["why"] == "no confirmation within 5 s"
    assert record.refuses(config_digest(other)) is None
    record.kept()
    assert record.read() is None and record.refuses(digest) is None


def test_a_cli_trial_whose_process_died_is_read_as_died(tmp_path):
    from netcfg.apply.trial_record import CliTrial

    record = CliTrial(str(tmp_path))
    record.begin(seconds=5, requests=1, config="-", digest="d")
    data = json.loads((tmp_path / "cli-trial.json").read_text())
    data["pid"] = 2 ** 22 + 1                            # above pid_max: no such process
    (tmp_path / "cli-trial.json").write_text(json.dumps(data))
    assert record.read()["state"] == "died"
    assert record.refuses("d")["state"] == "died"
