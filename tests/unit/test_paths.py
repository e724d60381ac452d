"""Issue 24, paths: volume names are names, not paths (M8); a dropped
ublk-owner gives the device back to root:disk (M9). Each failed on 8f56453."""

from __future__ import annotations

import grp
import logging
import os

import pytest

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid
from netcfgd import ublk


def volume_config(tmp_path, name: str) -> ConfigSource:
    path = tmp_path / "volumes"
    path.write_text(f"volume {name}\n    backing /srv/volumes/v.img\n    size 1G\n    ublk yes\n",
                    encoding="utf-8")
    return ConfigSource(path=str(path))


@pytest.mark.parametrize("name, said", [
    ("../../run/victim", "it contains '/': a volume name is a name, not a path"),
    ("a/b", "it contains '/'"),
    ("..", "'..' is a directory in /dev/netcfg"),
    (".", "'.' is a directory in /dev/netcfg"),
    ("db\x1b[2J", "control character (U+001B)"),
    ("db\u202e1", "bidirectional-text control character (U+202E)"),
    ("v" * 250, "250 bytes long"),
])
def test_a_volume_name_that_is_a_path_or_unreadable_is_refused_at_check(tmp_path, name, said):
    with pytest.raises(ConfigInvalid) as info:
        compile_config(volume_config(tmp_path, name))
    [error] = [d.format() for d in info.value.diagnostics]
    assert error.startswith(f"{tmp_path}/volumes:1: error: volume ")
    assert "not a valid volume name" in error and said in error
    assert "\x1b" not in error and "\u202e" not in error


def test_ordinary_volume_names_are_accepted(tmp_path):
    compiled = compile_config(volume_config(tmp_path, "db-1.data_2"))
    assert "db-1.data_2" in compiled.model.volumes


def disk_gid() -> int:
    try:
        return grp.getgrnam("disk").gr_gid
    except KeyError:
        return 0


def test_node_owner_without_ublk_owner_is_root_disk():
    assert ublk.node_owner(ublk.UblkSpec("db1")) == (0, disk_gid())
    assert ublk.node_owner(ublk.UblkSpec("db1", owner=(1000, 1001))) == (1000, 1001)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_dropping_ublk_owner_gives_the_node_back_to_root_disk(tmp_path, monkeypatch):
    """UblkService._set_node on a real file standing for /dev/ublkb7: owner
    set, then the config drops it; the file's owner read back with stat."""
    node = tmp_path / "ublkb7"
    node.write_text("")
    monkeypatch.setattr(ublk, "device_path", lambda dev_id: str(tmp_path / f"ublkb{dev_id}"))
    monkeypatch.setattr(ublk, "LINK_DIR", str(tmp_path / "links"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-udevadm-here"))   # no udev rules written
    service = ublk.UblkService(None, logging.getLogger("test"), str(tmp_path / "rules"))
    owned = ublk.UblkSpec("db1", owner=(1000, 1000))
    service.served["db1"] = (owned, 7, False)
    service._set_node("db1", owned, 7)
    assert (os.stat(node).st_uid, os.stat(node).st_gid) == (1000, 1000)
    service._set_node("db1", ublk.UblkSpec("db1"), 7)
    assert (os.stat(node).st_uid, os.stat(node).st_gid) == (0, disk_gid())
    assert os.stat(node).st_mode & 0o777 == ublk.DEVICE_MODE
    assert os.readlink(tmp_path / "links" / "db1") == "../ublkb7"
