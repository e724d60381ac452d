"""Serve one file-backed LUN with netcfgd's data path until SIGTERM, for the
benchmark. Loads the extension from --so (a release build) when given, so the
benchmark never measures a debug build of an editable install."""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import signal
import sys


def load(so: str | None):
    if not so:
        from netcfgd import _dataplane
        return _dataplane
    loader = importlib.machinery.ExtensionFileLoader("netcfgd._dataplane", so)
    spec = importlib.util.spec_from_file_location("netcfgd._dataplane", so, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--so")
    p.add_argument("--backing", required=True)
    p.add_argument("--iqn", required=True)
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3260)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-io-uring", action="store_true", help="synchronous backing I/O")
    p.add_argument("--batch-writes", action="store_true", help="batch writes as well as reads")
    a = p.parse_args()
    dp = load(a.so).Dataplane(threads=a.threads, io_uring=not a.no_io_uring, batch_writes=a.batch_writes)
    with open("/proc/self/ns/net") as ns:
        import os
        import socket
        import struct
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            cookie = struct.unpack("=Q", s.getsockopt(socket.SOL_SOCKET, 71, 8))[0]
        dp.add_namespace("", ns.fileno(), cookie)
        del os
    dp.add_volume("bench", a.backing)
    dp.set_target("", a.iqn, {0: "bench"})
    dp.add_portal("", a.addr, a.port)
    print("ready", flush=True)
    print(f"io_engine: {dp.stats()['io_engine']}", file=sys.stderr, flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    dp.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
