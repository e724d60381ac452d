"""`python -m netcfg.ifupdown COMMAND ARGS`: COMMAND is ifup, ifdown, ifreload or ifquery."""

import sys

from netcfg.ifupdown.main import main

sys.exit(main(["netcfg.ifupdown", *sys.argv[1:]]))
