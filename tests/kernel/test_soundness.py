"""The soundness property: `check` says ok only for what `apply` can do.

For every config drawn from the grammar of the kinds (soundness_configs.py):
either compiling it fails with errors that each name a file and a line, or
apply succeeds, the kernel then matches the config (what `query --check`
runs: a dry-run apply plans nothing) and a second apply sends no request.
Each example runs in fresh namespaces, removed afterwards, in the kernel
tier's sandbox (conftest.py). The library is driven in-process, as the CLI
does (apply, apply --dry-run), without a process per command.

`make test-kernel` runs a bounded, derandomized number of examples;
`make soundness` runs many more (NETCFG_SOUNDNESS_EXAMPLES, random seeds)
and prints how many configs were refused and applied. Every counterexample
found was fixed and became a golden case (tests/golden/cases/sound-*);
docs/soundness.md keeps the record.
"""

from __future__ import annotations

import collections
import os
import tempfile
import textwrap
from pathlib import Path

from kernel_env import RUN_DIR, remove_what_netcfg_made
from hypothesis import HealthCheck, given, settings
from soundness_configs import configs

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.ns import NetnsDir
from netcfg.kernel.session import KernelSession
from netcfg.model.errors import ConfigInvalid

BOUNDED = 400  # ~15 s here; make soundness runs many more
EXAMPLES = int(os.environ.get("NETCFG_SOUNDNESS_EXAMPLES", BOUNDED))
TALLY: collections.Counter = collections.Counter()


def _compile(text: str):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.tmpl"
        path.write_text(text)
        try:
            return compile_config(ConfigSource(path=str(path))).model, []
        except ConfigInvalid as e:
            return None, [d for d in e.diagnostics if d.severity == "error"]


def _say(text: str, what: str) -> str:
    return f"{what}\n--- config ---\n{textwrap.indent(text, '  ')}"


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          derandomize=EXAMPLES <= BOUNDED, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much])
@given(text=configs())
def test_check_ok_means_apply_succeeds_and_converges(text, netns_dir):
    model, errors = _compile(text)
    if model is None:
        TALLY["refused"] += 1
        assert errors, _say(text, "refused without an error")
        for error in errors:
            assert error.loc.file and error.loc.line > 0, _say(
                text, f"an error without a line: {error.format()}")
        return
    try:
        with KernelSession(RUN_DIR) as session:
            try:
                first = apply(model, session)
            except Exception as e:  # noqa: BLE001 - any failure is the counterexample
                raise AssertionError(_say(text, f"check said ok, apply failed: {e}")) from None
            assert first.verified, _say(text, "apply did not verify")
            drift = apply(model, session, dry_run=True).plan
            assert len(drift) == 0, _say(text, f"query --check after apply:\n{drift.to_text()}")
            again = apply(model, session)
            assert again.requests == 0, _say(
                text, f"a second apply sent {again.requests} requests:\n{again.plan.to_text()}")
        TALLY["applied"] += 1
    finally:
        remove_what_netcfg_made(NetnsDir(RUN_DIR))


def teardown_module(module) -> None:
    if TALLY:
        print(f"\nsoundness: {sum(TALLY.values())} configs tried, {TALLY['refused']} refused "
              f"by check with located errors, {TALLY['applied']} applied and converged")
