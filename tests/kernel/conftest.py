"""The kernel tier's sandbox guard and fixtures are tests/kernel_env.py's
(shared with tests/vm); imported here by name, which is how pytest finds them."""

from pathlib import Path

from kernel_env import ip_json, netns_dir, read_links, session, skip_tier, switcher  # noqa: F401


def pytest_collection_modifyitems(config, items):
    skip_tier(items, Path(__file__).parent)
