"""The unit tier's Ctrl-C tests (test_cli.py, test_trial.py) need SIGINT as
an interactive shell leaves it. A runner started in the background (`cmd &`
in a non-interactive shell) inherits SIGINT ignored, which a child keeps
across exec: give the test process Python's own handler back, so it and the
commands it runs see what an operator's terminal gives them."""

import signal
import socket

import pytest


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# sd_notify's end: a datagram socket netcfgd's Notifier sends to (NOTIFY_SOCKET).
@pytest.fixture
def notify_socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify")
    sock.bind(path)
    sock.settimeout(2)
    yield path, sock
    sock.close()
