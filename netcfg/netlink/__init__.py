"""Pure rtnetlink codecs: message layouts (``nlmsg``), operations to requests
(``encode``), dumped messages to model objects (``read_parse``) and the marks
netcfg puts on what it owns (``tags``). Bytes in, bytes out: no socket, so
they are tested without a kernel; ``netcfg.kernel`` does the I/O.
"""
