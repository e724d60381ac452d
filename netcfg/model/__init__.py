"""The model every other package speaks: objects and their source locations
(``model``, ``location``), and the closed set of errors with their exit codes
(``errors``), the marks netcfg puts on what it owns (``tags``: the plan
names them, the codecs write them). The bottom layer: it imports nothing else from netcfg.
"""
