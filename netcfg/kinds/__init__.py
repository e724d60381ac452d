"""Object kinds: one module each, found through netcfg.kinds.registry."""
