"""The VM tier: what the host kernel cannot do (8021q, dummy, vrf, bonding,
bridge VLAN filtering, iscsi_tcp), run by `make test-vm` in Debian's 6.12
kernel under qemu. Its sandbox guard and fixtures are tests/kernel_env.py's
(shared with tests/kernel), imported here by name, which is how pytest finds
them."""

from pathlib import Path

from kernel_env import ip_json, netns_dir, read_links, session, skip_tier, switcher  # noqa: F401


def pytest_collection_modifyitems(config, items):
    skip_tier(items, Path(__file__).parent)
