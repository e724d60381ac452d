"""The checks after a change is applied and before it is confirmed, run on
the node (hostNetwork): each retries until its deadline, as
kubernetes-nmstate's probes do. A node the change cut off fails the API
server probe (a new connection each try), cannot confirm, and reverts."""

from __future__ import annotations

import http.client
import ssl
import subprocess
import time
from urllib.parse import urlparse


def _until(deadline: float, check) -> str | None:
    """None once CHECK passes; its last failure when the deadline comes."""
    while True:
        failure = check()
        if failure is None or time.monotonic() >= deadline:
            return failure
        time.sleep(1)


def gateway(address: str, deadline: float) -> str | None:
    def check():
        done = subprocess.run(["ping", "-n", "-c", "1", "-W", "1", address],
                              capture_output=True, text=True)
        return None if done.returncode == 0 else f"gateway {address} does not answer ping"
    return _until(deadline, check)


def api_server(url: str, ssl_context: ssl.SSLContext, deadline: float) -> str | None:
    where = urlparse(url)

    def check():
        conn = http.client.HTTPSConnection(where.hostname, where.port or 443, timeout=3,
                                           context=ssl_context)
        try:
            conn.request("GET", "/readyz")
            answer = conn.getresponse()
            body = answer.read().decode(errors="replace")
            return None if answer.status == 200 else f"API server {url}/readyz: " \
                f"{answer.status} {body[:200]}"
        except OSError as error:
            return f"API server {url} unreachable: {error}"
        finally:
            conn.close()
    return _until(deadline, check)


def netcfg_status(status, deadline: float) -> str | None:
    """netcfgd ready, and no namespace failing or drifting."""
    def check():
        try:
            answer = status()
        except Exception as error:  # noqa: BLE001 - any failure is the probe's answer
            return f"netcfg status: {error}"
        daemon = answer.get("daemon") or {}
        problems = [] if daemon.get("ready") else ["netcfgd not ready"]
        problems += [f"config: {line}" for line in daemon.get("config_errors") or ()]
        for ns in answer.get("namespaces") or ():
            if ns.get("error"):
                problems.append(f"namespace {ns.get('name') or '(host)'} failing")
            if ns.get("drift"):
                problems.append(f"namespace {ns.get('name') or '(host)'} drifts")
        return f"netcfg status: {', '.join(problems)}" if problems else None
    return _until(deadline, check)


def command(argv: list[str], deadline: float) -> str | None:
    def check():
        try:
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=max(1, deadline - time.monotonic()))
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"command {argv}: {error}"
        return None if done.returncode == 0 else \
            f"command {argv}: exit {done.returncode}: {done.stderr.strip()[:200]}"
    return _until(deadline, check)


def run_all(probes: dict, *, api_url: str, ssl_context: ssl.SSLContext,
            status) -> str | None:
    """The first failing probe's message, or None when all pass."""
    seconds = probes.get("timeoutSeconds", 120)
    checks = []
    if probes.get("gateway"):
        checks.append(lambda d: gateway(probes["gateway"], d))
    if probes.get("apiServer", True):
        checks.append(lambda d: api_server(api_url, ssl_context, d))
    if probes.get("netcfgStatus", True):
        checks.append(lambda d: netcfg_status(status, d))
    for argv in probes.get("commands") or ():
        checks.append(lambda d, argv=argv: command(argv, d))
    for check in checks:
        failure = check(time.monotonic() + seconds)
        if failure:
            return failure
    return None
