"""Golden cases: one directory per case, one loop runs them all (STYLE.md 9).

A case is tests/golden/cases/<name>/ with:
  input/, input.tmpl,    the config: a directory of *.tmpl, one template, a JSON
  input.json, interfaces  model, or a plain ifupdown2 file
  plan-args              optional: extra words for `netcfg plan` (--lower off)
  errors.txt             expected diagnostics (stderr of `netcfg check`), exact
  model.json             expected JSON model (for valid configs)
  plan.txt               expected `netcfg plan` text (for valid configs)
A valid case must have model.json or plan.txt; an invalid one errors.txt.
Set NETCFG_UPDATE_GOLDEN=1 to rewrite the expected files (then review the diff).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clirun import netcfg_in_process

CASES = Path(__file__).parent / "cases"
UPDATE = os.environ.get("NETCFG_UPDATE_GOLDEN") == "1"


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    return netcfg_in_process(*argv)


def case_dirs() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


INPUTS = ("input", "input.tmpl", "input.json", "interfaces")


def _input(case: Path) -> str:
    return next(name for name in INPUTS if (case / name).exists())


def _check_expected(path: Path, actual: str) -> None:
    if UPDATE:
        path.write_text(actual)
    assert path.exists(), f"{path} missing (run with NETCFG_UPDATE_GOLDEN=1 and review)"
    assert actual == path.read_text()


@pytest.mark.parametrize("case", case_dirs(), ids=lambda p: p.name)
def test_golden(case: Path, monkeypatch) -> None:
    monkeypatch.chdir(case)
    extra = (case / "plan-args").read_text().split() if (case / "plan-args").exists() else []
    code, _, err = run_cli(["check", "-c", _input(case)])
    if (case / "errors.txt").exists() or (UPDATE and code != 0):
        assert code == 1, f"expected the config to be invalid, got exit {code}: {err}"
        _check_expected(case / "errors.txt", err)
        return
    assert code == 0, err
    expected_any = False
    if (case / "model.json").exists() or UPDATE:
        from netcfg.compile.pipeline import ConfigSource, compile_config
        from netcfg.compile.jsonform import model_to_json

        model = compile_config(ConfigSource(path=_input(case))).model
        _check_expected(case / "model.json", json.dumps(model_to_json(model), indent=2) + "\n")
        expected_any = True
    if (case / "plan.txt").exists() or UPDATE:
        code, out, err = run_cli(["plan", "-c", _input(case), *extra])
        assert code == 0, err
        _check_expected(case / "plan.txt", out)
        expected_any = True
    assert expected_any, "a valid case needs model.json or plan.txt"
