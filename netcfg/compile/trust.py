"""Only root may write what root runs (issue 24, M10).

A config holds `post-up` lines, and netcfg (apply, netcfgd, ifup) runs them
as root: whoever can write a config file, vars.json, a lib/ template, or a
directory above any of them (to put another file in its place), can run
commands as root. So when netcfg runs as root, each file it reads as config
and every directory above it must be owned by root and writable by no one
else, as key and CHAP files already are (netcfg/apply/secrets.py). The
refusal says which path and the command that fixes it.

Judging the directories above: a directory whose sticky bit is set and
that root owns (/tmp, mode 1777) lets a user add names but not replace
root's, which is how the kernel's protected_* rules and sudo's checks see
it, so it is accepted as a parent. Group write is accepted for group root
(gid 0) only. As another user, netcfg runs nothing as root: `check`,
`render` and `plan` of one's own files are not judged (not_trusted returns
None), since only that user could have written them.
"""

from __future__ import annotations

import os
import stat
from typing import Callable


def enforced() -> bool:
    """Whether config files are judged: netcfg runs as root."""
    return os.geteuid() == 0


def not_trusted(path: str, st: os.stat_result | None = None,
                real_path: Callable[[int], str | None] | None = None, fd: int = -1,
                trusted_dirs: set[str] | None = None, always: bool = False) -> str | None:
    """Why root must not read ``path`` as config, with the fix; None when
    root owns it and the directories above it, and no one else can write
    them (or when not running as root). ``st``, and ``real_path(fd)``: the
    stat and the real path of the file when it is open already as ``fd``
    (what is read, not what the name points to now; asked only as root).
    ``trusted_dirs``: directories one compile found fine already, skipped
    (and added to). ``always``: judged whoever runs netcfg (a mapping
    script, compile/runtime_choice.py: `check` never runs another's program)."""
    if not enforced() and not always:
        return None
    try:
        st = st or os.stat(path)
    except OSError:
        return None   # the read reports it
    why = _writable_by_others(path, st, is_parent=False)
    if why:
        return why
    # The directories above the name as given and above what it resolves
    # to: a link in a directory others can write can be pointed elsewhere.
    seen: set[str] = trusted_dirs if trusted_dirs is not None else set()
    real = real_path(fd) if real_path is not None else None
    for start in (os.path.abspath(path), real or os.path.realpath(path)):
        directory = os.path.dirname(start)
        while directory not in seen:
            try:
                dst = os.stat(directory)
            except OSError:
                break
            why = _writable_by_others(directory, dst, is_parent=True)
            if why:
                return why
            seen.add(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return None


def _writable_by_others(path: str, st: os.stat_result, *, is_parent: bool) -> str | None:
    if st.st_uid != 0:
        return (f"{path} is owned by uid {st.st_uid}, not root, so that user can change "
                f"what netcfg runs as root: chown root {path}")
    mode = stat.S_IMODE(st.st_mode)
    if is_parent and stat.S_ISDIR(st.st_mode) and mode & stat.S_ISVTX:
        return None   # sticky and root's: others cannot replace root's entries
    if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and st.st_gid != 0):
        who = "every user" if mode & stat.S_IWOTH else f"group {st.st_gid}"
        return (f"{path} is writable by {who} (mode {mode:04o}), who could change what "
                f"netcfg runs as root: chmod go-w {path}")
    return None


def untrusted_directory(directory: str) -> str | None:
    """not_trusted for a template directory (lib/, --template-path) and each
    entry in it: Mako reads any file a template names from there."""
    why = not_trusted(directory)
    if why or not enforced():
        return why
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        why = _writable_by_others(path, os.stat(path) if stat.S_ISLNK(st.st_mode) and
                                  os.path.exists(path) else st, is_parent=False)
        if why:
            return why
    return None
