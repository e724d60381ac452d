"""Files that hold secrets (WireGuard private keys, iSCSI CHAP secrets).

Root's config names them; root alone may be able to read them. A file
another user can read (or replace: a symlink, a file they own) would hand
them a tenant's credentials, so each is opened without following links and
refused, with the command that fixes it, unless it is a regular file owned
by root with no permission for group or others (docs/security.md).
"""

from __future__ import annotations

import os
import stat

# More than any secret file netcfg reads holds; a bigger one is not read whole.
MAX_SECRET_BYTES = 4096


def read_private_file(path: str, what: str, error: type[Exception],
                      holds: str = "the secret", limit: int = MAX_SECRET_BYTES) -> bytes:
    """The first ``limit`` bytes of ``path``, or ``error`` naming ``what``,
    the path and the fix. ``holds`` says what a reader would get (``the key``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as e:
        raise error(f"{what} {path}: cannot open: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {path}: not a regular file")
        if st.st_uid != 0:
            raise error(f"{what} {path}: owned by uid {st.st_uid}, not root; "
                        f"chown root:root {path}")
        if st.st_mode & 0o077:
            raise error(f"{what} {path}: mode {stat.S_IMODE(st.st_mode):04o} lets group "
                        f"or others read {holds}; chmod 600 {path}")
        return os.read(fd, limit)
    finally:
        os.close(fd)
