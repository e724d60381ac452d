"""Pure rtnetlink codecs: message layouts (``nlmsg``), operations to requests
(``encode``, with its attribute tables in ``attrs``) and dumped messages to
model objects (``read_parse``). Bytes in, bytes out: no socket, so
they are tested without a kernel; ``netcfg.kernel`` does the I/O.
"""
