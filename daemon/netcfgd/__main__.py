"""`python -m netcfgd`: the daemon, as the netcfgd command runs it."""

import sys

from netcfgd.main import main

sys.exit(main())
