"""Golden cases for decode: the kernel's rtnetlink bytes -> the model.

A case is tests/golden/decode/<name>/ with:
  <netns>.dumps  every dump reply read_namespace() got from the real kernel,
                 one message a line in hex, a section per dump (replay.py);
                 host.dumps is the host's namespace
  nsids.json     each namespace's nsids of the others, as read_model() got them
  model.json     expected model, as `netcfg show -o json` prints it
  scene.sh       the `ip` commands that made the scene (capture.py)
The bytes are decoded by kernel/read.py's read_model() over sockets that
replay them: the real path, no kernel (unit tier). capture.py (root, in
`unshare --net --mount --propagation private`) records them again.
NETCFG_UPDATE_GOLDEN=1 rewrites model.json; review the diff.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_golden import _check_expected

DECODE = Path(__file__).parent / "decode"
sys.path.insert(0, str(DECODE))

from replay import ReplaySocket, netns_of, read_dumps  # noqa: E402

from netcfg.compile.jsonform import model_to_json  # noqa: E402
from netcfg.kernel.read import read_model  # noqa: E402


def decode_dirs() -> list[Path]:
    return sorted(p for p in DECODE.iterdir() if p.is_dir() and list(p.glob("*.dumps")))


@pytest.mark.parametrize("case", decode_dirs(), ids=lambda p: p.name)
def test_decode(case: Path) -> None:
    sockets = {netns_of(path): ReplaySocket(read_dumps(path))
               for path in sorted(case.glob("*.dumps"))}
    nsids = {view: {int(k): v for k, v in ids.items()}
             for view, ids in json.loads((case / "nsids.json").read_text()).items()}
    model, _states = read_model(sockets, nsids)
    for netns, sock in sockets.items():
        assert sock.left() == 0, f"{netns or 'host'}: recorded dumps left unread"
    _check_expected(case / "model.json", json.dumps(model_to_json(model), indent=2) + "\n")


def test_at_least_three_cases() -> None:
    assert len(decode_dirs()) >= 3
