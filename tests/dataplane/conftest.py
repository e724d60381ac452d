"""The data path tier: the embedded iSCSI target against libiscsi's own
clients and compliance suite. Root only, inside a private network and mount
namespace (`make test-dataplane`: ``unshare --net --mount --propagation
private PY -m pytest tests/dataplane``). The guard runs at import, before
anything is touched: not root or no libiscsi-bin skips the tier; root in the
host's namespaces stops the run.
"""

from __future__ import annotations

import os
import shutil

import pytest
from sandbox import NETNS_RUN_DIR, enter_or_refuse

RUN_DIR = NETNS_RUN_DIR
CLIENTS = ("iscsi-ls", "iscsi-inq", "iscsi-readcapacity16", "iscsi-test-cu")


SKIP_REASON = None
if os.geteuid() != 0:
    SKIP_REASON = "data path tests need root, inside a private network namespace: make test-dataplane"
elif any(shutil.which(c) is None for c in CLIENTS):
    SKIP_REASON = "data path tests use libiscsi's clients: apt-get install libiscsi-bin"
else:
    enter_or_refuse("test-dataplane")


def pytest_collection_modifyitems(config, items):
    if SKIP_REASON:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.fixture
def netns_dir():
    from netcfg.kernel.ns import NetnsDir
    d = NetnsDir(RUN_DIR)
    yield d
    for name in d.list_names():
        d.delete(name)


@pytest.fixture
def dataplane():
    """A Dataplane with the sandbox's own namespace added as ""."""
    from netcfg.kernel.ns import NetnsDir
    from netcfgd._dataplane import Dataplane
    dp = Dataplane(threads=2)
    root = NetnsDir(RUN_DIR).open("")
    dp.add_namespace("", root.fd, root.identity.cookie)
    yield dp
    dp.shutdown()
    root.close()
