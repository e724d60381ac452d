"""The kernel tier's sandbox guard and fixtures are tests/kernel_env.py's
(shared with tests/vm); imported here by name, which is how pytest finds them."""

from pathlib import Path

import pytest
from kernel_env import ip_json, netns_dir, read_links, session, skip_tier, switcher  # noqa: F401


def pytest_collection_modifyitems(config, items):
    skip_tier(items, Path(__file__).parent)


@pytest.fixture(autouse=True)
def own_run_dir(tmp_path, monkeypatch):
    """Each test its own netcfg run dir: the hook record (apply/hookrecord.py)
    kept there by one test must not run down lines in the next."""
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "netcfg-run"))
