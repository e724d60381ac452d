"""netcfgd: the reconciler daemon and the embedded storage target."""
