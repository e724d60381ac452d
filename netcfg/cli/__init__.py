"""The `netcfg` command: argument parsing and the pure commands (``main``),
the commands that touch the kernel or netcfgd (``kernel_commands``), the
control-socket client (``client``), `syntax-help` and the progress line.
"""
