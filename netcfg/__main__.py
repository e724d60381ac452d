import sys

from netcfg.cli.main import main

sys.exit(main())
