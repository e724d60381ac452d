"""The config directory on disk: a new config is staged next to the one
netcfgd enforces and only a confirmed change is promoted into it, so a
reverted change never reaches the directory netcfgd reloads and restarts from
(the Ansible module does the same: docs/fleet.md 'Why the config is staged')."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def staged_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".staged")


def write_tree(directory: Path, files: dict[str, str]) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_text(text)


def read_tree(directory: Path) -> dict[str, str]:
    if not directory.is_dir():
        return {}
    return {str(p.relative_to(directory)): p.read_text()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def promote(staged: Path, dest: Path) -> None:
    """Make STAGED's files DEST's, file by file (each a rename: DEST may be a
    mount point, so it is not renamed itself); files DEST had that STAGED has
    not are removed; the stage is dropped."""
    wanted = read_tree(staged)
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in wanted.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{target}.new").write_text(text)
        os.rename(f"{target}.new", target)
    for path in list(dest.rglob("*")):
        if path.is_file() and str(path.relative_to(dest)) not in wanted:
            path.unlink()
    shutil.rmtree(staged)
