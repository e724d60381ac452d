"""Network namespaces, in-process: create, open, delete, and run code inside.

Namespaces are files in a run dir (``/run/netns``, as iproute2 keeps them, so
``ip netns exec NAME`` and ``ip -n NAME`` see ours). A namespace is made the
way ``ip netns add`` makes it, minus the fork: a short-lived helper thread
unshares its network namespace and bind-mounts it on the file. Namespaces are
per thread, so the caller never moves (~0.6 ms each, where a fork costs ~10).

Work inside a namespace goes through one long-lived :class:`NetnsSwitcher`
thread that setns()s on demand; sockets keep the namespace they were created
in, so after ``socket_in`` nothing switches again.

Assigning an nsid is an RTM_NEWNSID request (NETNSA_FD = ``Netns.fd``): the
netlink layer's job, not this module's.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import socket
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, NetcfgError, quote

# Kernel spellings (linux/sched.h, linux/mount.h, linux/nsfs.h, asm/socket.h).
CLONE_NEWNET = 0x40000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_SHARED = 1 << 20
MNT_DETACH = 2
SO_NETNS_COOKIE = 71
NS_GET_NSTYPE = 0xB703      # _IO(0xb7, 0x3)
NS_GET_ID = 0x8008B70D      # _IOR(0xb7, 0xd, __u64), Linux 6.18+
SIOCGSKNS = 0x894C          # linux/sockios.h: an fd of a socket's network namespace

DEFAULT_RUN_DIR = "/run/netns"
ROOT_NS_PATH = "/proc/self/ns/net"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")   # the schema's netns pattern

_libc = ctypes.CDLL(None, use_errno=True)


class NetnsError(NetcfgError):
    """A namespace operation failed; the message names the namespace and errno."""

    exit_code = EXIT_APPLY_FAILED_REVERTED   # as nl.NetlinkError: the kernel refused

    def __init__(self, name: str | None, what: str, err: int | None = None):
        self.netns = name   # None: about the run dir, not one namespace
        self.errno = err
        where = "" if name is None else f"netns {quote(name)}: " if name else "root netns: "
        text = where + what
        if err:
            text += f": {os.strerror(err)} ({errno.errorcode.get(err, err)})"
        super().__init__(text)


@dataclass(frozen=True, slots=True)
class NetnsIdentity:
    """Which namespace, exactly. Neither a name nor an fd says that: a namespace
    deleted and recreated under the same name gets the same name, very likely
    the same fd number and, once the old one is freed, the same nsfs inode.

    ``cookie`` is the kernel's 64-bit namespace id (NS_GET_ID, equal to
    SO_NETNS_COOKIE), never reused while the machine runs (unique, not ordered:
    each CPU hands out ids from its own batch). Kernels before 5.14
    have neither; then only (dev, ino) is left, which is unique only while the
    namespace lives: ``durable`` is False, and such identities may be compared
    only between handles held open at the same time (a Netns holds its fd, so
    its namespace lives).
    """

    cookie: int | None
    dev: int
    ino: int

    @property
    def durable(self) -> bool:
        return self.cookie is not None


class Netns:
    """An open network namespace: name ("" is the root), O_CLOEXEC fd, identity.

    The fd keeps the namespace alive even after it is deleted; ``is_stale()``
    says whether the name still leads to it. A session that has a socket in
    the namespace (which keeps it alive as well) ``release()``s the fd, so a
    namespace costs one fd, not two, and ``reacquire()``s it from the socket
    when a request needs to name the namespace (issue 23: 10,000 namespaces
    held two fds each against a hard limit of 20,000).
    """

    __slots__ = ("name", "path", "fd", "identity", "closed")

    def __init__(self, name: str, path: str, fd: int, identity: NetnsIdentity):
        self.name, self.path, self.fd, self.identity = name, path, fd, identity
        self.closed = False

    def is_stale(self) -> bool:
        """True when the name was deleted, or now names another namespace.

        (dev, ino) is exact here: our open fd, or the socket a released
        handle's session keeps there, keeps this namespace, and so its inode
        number, alive.
        """
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return self.closed or (st.st_dev, st.st_ino) != (self.identity.dev, self.identity.ino)

    def release(self) -> None:
        """Close the fd; something else (a socket inside) keeps the namespace."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def reacquire(self, inside: socket.socket) -> int:
        """The fd again, from a socket made inside the namespace (SIOCGSKNS:
        the socket's own namespace, whatever its name leads to now), or, where
        that is not allowed (no CAP_NET_ADMIN), from the path when it still
        leads here."""
        if self.fd >= 0:
            return self.fd
        try:
            fd = _libc.ioctl(inside.fileno(), ctypes.c_ulong(SIOCGSKNS))
            if fd < 0:
                raise OSError(ctypes.get_errno(), "SIOCGSKNS")
        except OSError:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError as e:
                raise NetnsError(self.name, f"cannot open {self.path}", e.errno) from None
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (self.identity.dev, self.identity.ino):
                os.close(fd)
                raise NetnsError(self.name, f"{self.path} names another namespace now") from None
        self.fd = fd
        return fd

    def close(self) -> None:
        self.release()
        self.closed = True

    def __enter__(self) -> Netns:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Netns({self.name!r}, fd={self.fd}, cookie={self.identity.cookie})"


def check_name(name: str) -> None:
    """Refuse names iproute2 or the schema would not accept (before any syscall)."""
    if not _NAME.match(name) or name in (".", ".."):
        raise NetnsError(name, "invalid name: use 1-64 letters, digits, '_', '.' or '-' "
                               "(not '.' or '..')")


class NetnsDir:
    """A directory of namespace files; ``/run/netns`` unless a test says otherwise."""

    def __init__(self, path: str | os.PathLike = DEFAULT_RUN_DIR):
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._shared = False

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def _make_shared(self) -> None:
        # As iproute2: the run dir is a shared mount point, so a namespace
        # unmounted here is unmounted in every mount namespace that copied it
        # (`ip netns exec` makes one per run), and can then be freed.
        with self._lock:
            if self._shared:
                return
            os.makedirs(self.path, 0o755, exist_ok=True)
            path = os.fsencode(self.path)
            shared = ctypes.c_ulong(MS_SHARED | MS_REC)
            if _libc.mount(b"", path, b"none", shared, None):
                err = ctypes.get_errno()
                if err != errno.EINVAL:   # EINVAL: not a mount point yet
                    raise NetnsError(None, f"cannot make {self.path} a shared mount", err)
                _check(_libc.mount(path, path, b"none", ctypes.c_ulong(MS_BIND | MS_REC), None)
                       or _libc.mount(b"", path, b"none", shared, None),
                       None, f"cannot bind-mount {self.path} on itself, shared")
            self._shared = True

    def create(self, name: str) -> Netns:
        """Equivalent to: `ip netns add NAME` (the namespace starts with lo down)."""
        return self.create_many([name])[0]

    def create_many(self, names: Iterable[str]) -> list[Netns]:
        """`ip netns add` for each name, all on one helper thread; all or none."""
        names = list(names)
        for name in names:
            check_name(name)
        self._make_shared()

        def make_all() -> list[Netns]:   # on the helper thread: only it moves
            made: list[Netns] = []
            try:
                for name in names:
                    made.append(self._make_here(name))
            except BaseException:
                for netns in made:
                    netns.close()
                with suppress(NetnsError):   # the first error is the one to report
                    self.delete_many(n.name for n in made)
                raise
            return made

        return _on_thread(make_all)

    def _make_here(self, name: str) -> Netns:
        path = self._file(name)
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0))
        except OSError as e:
            raise NetnsError(name, f"cannot create {path}", e.errno) from None
        try:
            _check(_libc.unshare(CLONE_NEWNET), name, "cannot unshare a new network namespace")
            # /proc/thread-self, not /proc/self: that would be the main thread's.
            _check(_libc.mount(b"/proc/thread-self/ns/net", os.fsencode(path), b"none",
                               ctypes.c_ulong(MS_BIND), None),
                   name, f"cannot bind-mount the namespace on {path}")
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            _libc.umount2(os.fsencode(path), MNT_DETACH)
            with suppress(OSError):
                os.unlink(path)
            raise
        return Netns(name, path, fd, _identity(name, fd, inside=True))

    def open(self, name: str) -> Netns:
        """Open NAME's namespace ("" is the process's own, the root one).

        Equivalent to what `ip -n NAME` does first: open /run/netns/NAME.
        """
        if name:
            check_name(name)
        path = self._file(name) if name else ROOT_NS_PATH
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise NetnsError(name, f"no such namespace ({path} is missing)") from None
        except OSError as e:
            raise NetnsError(name, f"cannot open {path}", e.errno) from None
        nstype = _libc.ioctl(fd, ctypes.c_ulong(NS_GET_NSTYPE))
        if nstype != CLONE_NEWNET:
            os.close(fd)
            raise NetnsError(name, f"{path} is not a network namespace (nothing mounted on it? "
                                   f"`ip netns del {name}` removes it)")
        return Netns(name, path, fd, _identity(name, fd, inside=False))

    def delete(self, name: str) -> None:
        """Equivalent to: `ip netns del NAME`.

        Processes, sockets and fds still in it keep it alive; the kernel
        frees it (asynchronously) after the last one goes.
        """
        check_name(name)
        path = self._file(name)
        _libc.umount2(os.fsencode(path), MNT_DETACH)   # fails on a leftover file: fine
        try:
            os.unlink(path)
        except FileNotFoundError:
            raise NetnsError(name, f"no such namespace ({path} is missing)") from None
        except OSError as e:
            raise NetnsError(name, f"cannot remove {path}", e.errno) from None

    def delete_many(self, names: Iterable[str]) -> None:
        """`ip netns del` for each name; tries all, then reports every failure."""
        failures = []
        for name in names:
            try:
                self.delete(name)
            except NetnsError as e:
                failures.append(e)
        if failures:
            first = failures[0]
            raise first if len(failures) == 1 else NetnsError(None, "\n".join(map(str, failures)))

    def list_names(self) -> list[str]:
        """Equivalent to: `ip netns list` (names only, sorted)."""
        try:
            return sorted(os.listdir(self.path))
        except FileNotFoundError:
            return []


def _check(ret: int, name: str | None, what: str) -> None:
    if ret:
        raise NetnsError(name, what, ctypes.get_errno())


def _identity(name: str, fd: int, inside: bool) -> NetnsIdentity:
    """NS_GET_ID on the fd where the kernel has it (6.18+), else SO_NETNS_COOKIE
    read inside: here if the calling thread is inside, else on a helper thread."""
    buf = ctypes.c_uint64()
    if _libc.ioctl(fd, ctypes.c_ulong(NS_GET_ID), ctypes.byref(buf)) == 0:
        cookie = buf.value
    elif inside:
        cookie = _cookie_here()
    else:
        cookie = _on_thread(lambda: (_setns(name, fd), _cookie_here())[1])
    st = os.fstat(fd)
    return NetnsIdentity(cookie, st.st_dev, st.st_ino)


def _cookie_here() -> int | None:
    """SO_NETNS_COOKIE of the calling thread's namespace (None before 5.14)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        try:
            return struct.unpack("=Q", s.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8))[0]
        except OSError:
            return None


def _setns(name: str, fd: int) -> None:
    _check(_libc.setns(fd, CLONE_NEWNET), name, "cannot enter (setns)")


def _on_thread(fn: Callable[[], Any]) -> Any:
    """fn() on a fresh thread that then exits, and with it whatever namespace
    fn moved it to; fn's result, or its exception."""
    with ThreadPoolExecutor(1, thread_name_prefix="netns-helper") as helper:
        return helper.submit(fn).result()


class NetnsSwitcher:
    """One long-lived thread that runs calls inside namespaces, switching only
    when the next call wants another namespace than the one it is in.

    Calls run one at a time, in order; keep them short (open a socket, bind a
    listener), since every caller waits behind them, and never let them move
    the thread themselves. Thread-safe; close() it. Skipping by identity is
    exact even without cookies: the thread's presence keeps its namespace,
    and so its inode number, alive.
    """

    def __init__(self, name: str = "netns-switcher"):
        self.setns_calls = 0
        self.current: NetnsIdentity | None = None   # where the thread is now
        self._ident: int | None = None
        self._worker = ThreadPoolExecutor(1, name, initializer=self._started)

    def _started(self) -> None:
        self._ident = threading.get_ident()
        with open("/proc/thread-self/ns/net", "rb", buffering=0) as own:
            self.current = _identity("", own.fileno(), inside=True)

    def call(self, netns: Netns, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) on the switcher thread inside netns; its result, or its exception."""
        if threading.get_ident() == self._ident:
            raise NetnsError(netns.name, "NetnsSwitcher.call from inside a switched call "
                                         "would wait for itself")
        if netns.closed:    # its identity may still match where the thread is
            raise NetnsError(netns.name, "the handle is closed")
        try:
            future = self._worker.submit(self._run, netns, fn, args)
        except RuntimeError:   # "cannot schedule new futures after shutdown"
            raise NetnsError(netns.name, "the namespace switcher is closed") from None
        return future.result()

    def socket_in(self, netns: Netns, family: int, type: int, proto: int = 0) -> socket.socket:
        """A socket created inside netns; it stays there whatever thread uses it."""
        return self.call(netns, socket.socket, family, type, proto)

    def sockets_in(self, handles: list[Netns], family: int, type: int,
                   proto: int = 0) -> list[socket.socket]:
        """A socket inside each of ``handles``, in one trip to the thread (a
        trip costs ~60 us: 1000 namespaces' sockets one by one paid 0.06 s of
        hand-offs). On a failure, those made are closed and the error raised."""
        if not handles:
            return []
        for netns in handles:
            if netns.closed:
                raise NetnsError(netns.name, "the handle is closed")

        def make_all() -> list[socket.socket]:
            made: list[socket.socket] = []
            try:
                for netns in handles:
                    self._enter(netns)
                    made.append(socket.socket(family, type, proto))
            except BaseException:
                for sock in made:
                    sock.close()
                raise
            return made
        return self.call(handles[0], make_all)

    def _run(self, netns: Netns, fn: Callable[..., Any], args: tuple) -> Any:
        self._enter(netns)
        return fn(*args)

    def _enter(self, netns: Netns) -> None:
        """Move the thread (it must be the switcher's) into netns, if not there."""
        if netns.identity != self.current:
            _setns(netns.name, netns.fd)
            self.setns_calls += 1
            self.current = netns.identity

    def close(self) -> None:
        self._worker.shutdown(wait=threading.get_ident() != self._ident)

    def __enter__(self) -> NetnsSwitcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
