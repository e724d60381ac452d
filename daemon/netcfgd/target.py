"""Run the embedded iSCSI target alone, from a netcfg config's volume and
target stanzas, until SIGTERM or SIGINT. For tests, benchmarks and trying it
out; netcfgd embeds the same data path.

    python -m netcfgd.target -c /etc/netcfg/storage.tmpl [--threads N] [--ublk-remove-on-exit]

Volumes with ``ublk yes`` are served as /dev/ublkbN too; on exit the devices
stay, with their I/O queued, for the next run to adopt, unless
--ublk-remove-on-exit asks to delete them (refused for one still in use).

Targets are served in the namespaces their stanzas name, which must exist
(`/run/netns/NAME`; the host's namespace when no `netns` is given). Exit
codes: 0 stopped by a signal, 1 invalid config or cannot serve it, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys

from netcfg.model.model import Model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.ns import NetnsDir
from netcfg.model.errors import EXIT_INVALID_CONFIG, EXIT_USAGE, NetcfgError

from netcfgd.dataplane import DataplaneError, Outcome, TargetService, budgets_from_environment
from netcfgd.ublk import UblkService, ublk_specs


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m netcfgd.target", description=__doc__.split("\n\n")[0])
    p.add_argument("-c", "--config", required=True, help="config file or directory (volume/target stanzas)")
    p.add_argument("--threads", type=int, default=None, help="event loops (default: one per CPU)")
    p.add_argument("--netns-dir", default="/run/netns", help="where named namespaces are (default /run/netns)")
    p.add_argument("--ping-idle", type=float, default=10.0, help="seconds before an idle connection gets a NOP-In")
    p.add_argument("--stats-on-exit", action="store_true", help="print stats() as JSON when stopping")
    p.add_argument("--memory", metavar="SIZE", help="write data waiting for Data-Out, all namespaces "
                   "(default 1G; as NETCFGD_STORAGE_MEMORY)")
    p.add_argument("--netns-memory", metavar="SIZE", help="the same per namespace (default 256M)")
    p.add_argument("--netns-connections", metavar="N", help="connections per namespace (default 256)")
    p.add_argument("--ublk-remove-on-exit", action="store_true",
                   help="delete the ublk devices when stopping (default: leave them to the next run)")
    return p.parse_args(argv)


def serve(args: argparse.Namespace) -> int:
    from netcfgd._dataplane import Dataplane

    compiled = compile_config(ConfigSource(args.config))
    model = compiled.model
    if not model.targets and not ublk_specs(model):
        raise DataplaneError(f"{args.config}: no target stanzas and no 'ublk yes' volume; "
                             f"nothing to serve")
    flags = {"NETCFGD_STORAGE_MEMORY": args.memory, "NETCFGD_STORAGE_NETNS_MEMORY": args.netns_memory,
             "NETCFGD_STORAGE_NETNS_CONNECTIONS": args.netns_connections}
    budgets = budgets_from_environment({**os.environ, **{k: v for k, v in flags.items() if v}})
    netns_dir = NetnsDir(args.netns_dir)
    dp = Dataplane(threads=args.threads, ping_idle=args.ping_idle, **budgets)
    service = TargetService(dp)
    ublk = UblkService(dp, logging.getLogger("netcfgd.target"))
    held = []
    try:
        for name in service.namespaces_needed(model):
            netns = netns_dir.open(name)
            held.append(netns)
            service.add_namespace(netns)
        outcome = service.apply(model)
        if outcome.errors:
            raise DataplaneError("; ".join(outcome.errors))
        done = Outcome()
        ublk.add_wanted(model, done)
        if done.errors:
            raise DataplaneError("; ".join(done.errors))
        for name, (_, dev_id, adopted) in sorted(ublk.served.items()):
            how = "adopted" if adopted else "added"
            print(f"serving {name} as /dev/ublkb{dev_id} ({how})", file=sys.stderr, flush=True)
        for (netns, iqn), spec in sorted(service.targets.items()):
            where = f"netns {netns}" if netns else "host netns"
            portals = ", ".join(f"{a}:{p}" for a, p in spec.portals)
            print(f"serving {iqn} ({where}) on {portals}", file=sys.stderr, flush=True)
        signals = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        signal.sigwait(signals)
        if args.stats_on_exit:
            print(json.dumps(dp.stats(), indent=1, sort_keys=True))
        if args.ublk_remove_on_exit:
            ublk.remove_dropped(Model(), done)
            if ublk.kept or done.errors:
                raise DataplaneError("; ".join(done.errors + [
                    f"ublk: volume {n}: kept, in use: {what}" for n, what in sorted(ublk.kept.items())]))
        return 0
    finally:
        dp.shutdown()
        for netns in held:
            netns.close()


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else 0
    try:
        return serve(args)
    except NetcfgError as e:
        print(f"netcfgd.target: {e}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    except (OSError, ValueError, OverflowError) as e:
        # The data path's own refusals (a size it cannot hold, a bad value)
        # are said, never a traceback.
        print(f"netcfgd.target: {e}", file=sys.stderr)
        return EXIT_INVALID_CONFIG


if __name__ == "__main__":
    sys.exit(main())
