"""Run one netcfg command with some veths read as NICs; report what it loaded.

    python tests/kernel/nic_standin.py --nics eno1,eno2 --report OUT.json \\
        [--tree DIR] -- ifquery -a -c -o json -i FILE
    python tests/kernel/nic_standin.py --nics eno1 --report OUT.json -- netcfg apply -c FILE

A sandbox has no NIC: every device it can make carries a link kind (veth,
dummy, tun...), and netcfg asks link modes only of devices without one
(kernel/ethtool.py). Here the links named by --nics are read without their
kind, as a NIC's RTM_NEWLINK has none, and nothing else changes: the dumps,
the diff, the apply and the LINKMODES_GET a veth answers (10000 Mb/s, full,
autoneg off, as `ethtool` prints) are real. What the command loaded and
asked is written to --report as JSON: its exit code, whether pyroute2 was
imported, and how many LINKMODES_GET it sent.

--tree runs another checkout's netcfg (bench/ifupdown/linkmodes_poll.py
times two trees in the same run); the venv's editable install is set aside.
Used by tests/kernel/test_ethtool.py and bench/ifupdown/linkmodes_poll.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _use_tree(tree: str) -> None:
    """Import netcfg from ``tree``: the editable install's finder would
    otherwise win over sys.path."""
    sys.meta_path[:] = [f for f in sys.meta_path
                        if "__editable__" not in getattr(f, "__module__", "")
                        and "__editable__" not in getattr(type(f), "__module__", "")]
    sys.path[:0] = [tree, os.path.join(tree, "daemon")]


def _read_as_nics(names: set[str]) -> None:
    """The links in ``names`` read without their link kind."""
    import dataclasses

    from netcfg.kernel import read

    build = read.build_interfaces

    def build_interfaces(state, links, nsid_names):
        links = [dataclasses.replace(link, info_kind=None) if link.name in names else link
                 for link in links]
        return build(state, links, nsid_names)

    read.build_interfaces = build_interfaces


def _count_linkmodes_gets(counter: list[int]) -> None:
    from netcfg.kernel import ethtool

    get = ethtool.get_link_modes

    def get_link_modes(*args, **kwargs):
        counter[0] += 1
        return get(*args, **kwargs)

    ethtool.get_link_modes = get_link_modes


def _run(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    if command == "netcfg":
        from netcfg.cli.main import main
        return main(rest)
    from netcfg.ifupdown.main import main as ifupdown_main
    return ifupdown_main([command, *rest])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nics", default="", help="comma-separated link names read as NICs")
    parser.add_argument("--report", required=True)
    parser.add_argument("--tree", default=os.environ.get("NIC_STANDIN_TREE"),
                        help="a checkout whose netcfg to run (default: $NIC_STANDIN_TREE, "
                             "else the one installed)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.tree:
        _use_tree(os.path.abspath(args.tree))
    _read_as_nics({n for n in args.nics.split(",") if n})
    gets = [0]
    _count_linkmodes_gets(gets)
    code = 1
    try:
        code = _run(command)
    finally:
        with open(args.report, "w") as f:
            json.dump({"exit": code, "pyroute2": "pyroute2" in sys.modules,
                       "linkmodes_gets": gets[0],
                       "netcfg": sys.modules["netcfg"].__file__}, f)
    return code


if __name__ == "__main__":
    sys.exit(main())
