"""Golden cases for the stages after compile: diff, order and revert.

A case is tests/golden/stages/<name>/ with:
  current.json   the kernel's state as `netcfg show -o json` printed it, in the
                 kernel tier's sandbox, after `netcfg apply -c current.tmpl`
                 (current.tmpl is kept to say how it was made)
  input.tmpl     the config to apply over it
  plan.txt       expected `netcfg plan -c input.tmpl --current current.json`
  revert.txt     expected plan of the revert of that apply: from the state it
                 leaves back to current, ordered as apply.revert orders it
A change in diff, ordering or revert shows as a readable diff of these files
(as nmstate's gen_diff test files do). NETCFG_UPDATE_GOLDEN=1 rewrites the
expected files; review the diff.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_golden import UPDATE, _check_expected, run_cli

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kinds import registry
from netcfg.model.model import Model
from netcfg.plan.diff import diff
from netcfg.plan.lower.lowering import lower
from netcfg.plan.planner import build_plan

STAGES = Path(__file__).parent / "stages"


def stage_dirs() -> list[Path]:
    return sorted(p for p in STAGES.iterdir() if p.is_dir())


def _creatable(kind: str) -> bool:
    try:
        return registry.kind(kind).creatable
    except KeyError:
        return False


# Attributes the diff manages whole (a config without them removes them); the
# others it only sets, leaving what the kernel has where the config is silent.
WHOLE = frozenset({"address", "route", "gateway", "bridge-ports", "bond-slaves", "vrf",
                   "bridge-vids", "bridge-pvid", "bridge-access", "bridge-vlan-vni-map",
                   "link-down"})


def managed(current: Model, desired: Model) -> Model:
    """What apply compares (apply.managed_view), as far as a JSON file can
    tell: the devices netcfg makes (in the sandbox, all it was shown) and the
    others only where the config names them."""
    kept = {key: obj for key, obj in current.interfaces.items()
            if _creatable(obj.kind) or key in desired.interfaces}
    return dataclasses.replace(current, interfaces=kept)


def after_apply(before: Model, lowered: Model) -> Model:
    """The state a verified apply of ``lowered`` leaves, as read back: each
    device the config names has what it writes over what it had (a device
    kept, not made anew), what the config does not name is gone."""
    interfaces = {}
    for key, obj in lowered.interfaces.items():
        had = before.interfaces.get(key)
        if had is not None and had.kind == obj.kind and all(
                had.attrs.get(a) == obj.attrs.get(a, had.attrs.get(a))
                for a in registry.kind(obj.kind).immutable_attributes):
            attrs = {a: v for a, v in had.attrs.items() if a not in WHOLE}
            attrs.update(obj.attrs)
            obj = dataclasses.replace(obj, attrs=attrs)
        interfaces[key] = obj
    return dataclasses.replace(lowered, interfaces=interfaces, masters={})


@pytest.mark.parametrize("case", stage_dirs(), ids=lambda p: p.name)
def test_stage(case: Path, monkeypatch) -> None:
    monkeypatch.chdir(case)
    code, plan_text, err = run_cli(["plan", "-c", "input.tmpl", "--current", "current.json"])
    assert code == 0, err
    _check_expected(case / "plan.txt", plan_text)

    current = compile_config(ConfigSource(path="current.json")).model
    desired = compile_config(ConfigSource(path="input.tmpl")).model
    lowered, _ = lower(desired, enabled=True)
    # What apply.revert runs: diff(the state before, the state now), ordered.
    before = managed(current, desired)
    after = after_apply(before, lowered)
    _check_expected(case / "revert.txt", build_plan(diff(before, after)).to_text())
    # The state after is the config, as far as the diff can see.
    assert len(build_plan(diff(lowered, after))) == 0
