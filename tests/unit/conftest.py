"""The unit tier's Ctrl-C tests (test_cli.py, test_trial.py) need SIGINT as
an interactive shell leaves it. A runner started in the background (`cmd &`
in a non-interactive shell) inherits SIGINT ignored, which a child keeps
across exec: give the test process Python's own handler back, so it and the
commands it runs see what an operator's terminal gives them."""

import signal


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
