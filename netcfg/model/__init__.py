"""The model every other package speaks: objects and their source locations
(``model``, ``location``), and the closed set of errors with their exit codes
(``errors``). The bottom layer: it imports nothing else from netcfg.
"""
