"""netcfgd's holds of a device it cannot configure now (daemon/netcfgd/hooks.py):
a wireguard key file that cannot be used, a tunnel whose tunnel-local-dev has
no address. The retry backoff grows across holds, though poll() drops each
hold when its retry time comes, and a reason is logged once, not at each
retry (a missing key file logged an error every second)."""

from __future__ import annotations

import logging

from netcfgd.hooks import InterfaceHooks

KEY = ("a", "wg0")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def hooks() -> tuple[InterfaceHooks, Clock]:
    clock = Clock()
    return InterfaceHooks("/nonexistent", logging.getLogger("netcfgd-test"), clock=clock), clock


def retries(hooks_: InterfaceHooks, clock: Clock, fail, times: int) -> list[float]:
    """Fail ``times`` in a row, each time once the hold's retry time came
    (poll() then drops it, as the daemon's loop does); the delays held."""
    delays = []
    for _ in range(times):
        fail()
        hold = hooks_.held[KEY]
        delays.append(hold.until - clock.now)
        clock.now = hold.until
        hooks_.poll()
        assert KEY not in hooks_.held
    return delays


def test_a_key_file_failing_again_backs_off_and_is_logged_once(caplog):
    h, clock = hooks()
    with caplog.at_level(logging.ERROR, "netcfgd-test"):
        delays = retries(h, clock, lambda: h.key_file_failed(KEY, "a.key: missing"), 4)
    assert delays == [1.0, 2.0, 4.0, 8.0]
    assert [r.getMessage() for r in caplog.records].count(
        "wg0 (netns a): keys left as they are: a.key: missing") == 1
    # Another reason is said; a pass that gets through ends the count.
    h.key_file_failed(KEY, "a.key: not a key")
    assert sum("not a key" in r.getMessage() for r in caplog.records) == 1
    clock.now = h.held[KEY].until
    h.poll()
    h.resolved(frozenset())
    assert retries(h, clock, lambda: h.key_file_failed(KEY, "a.key: missing"), 1) == [1.0]


def test_a_dry_run_does_not_end_a_key_files_hold(caplog):
    """A dry run (policy report) holds only what is left as it is: the key
    file's hold, still running, is not 'resolved' by it."""
    h, clock = hooks()
    h.key_file_failed(KEY, "a.key: missing")
    h.resolved(frozenset())
    assert KEY in h.held
    clock.now = h.held[KEY].until
    h.poll()
    h.key_file_failed(KEY, "a.key: missing")
    assert h.held[KEY].until - clock.now == 2.0


def test_an_unresolved_tunnel_backs_off_the_same_way(caplog):
    h, clock = hooks()
    with caplog.at_level(logging.ERROR, "netcfgd-test"):
        delays = retries(h, clock, lambda: h.unresolved(KEY, "eth0 has no IPv4 address"), 3)
    assert delays == [1.0, 2.0, 4.0]
    assert sum("left as it is" in r.getMessage() for r in caplog.records) == 1
