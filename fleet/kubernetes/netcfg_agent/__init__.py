"""The netcfg node agent for Kubernetes: rolls NetcfgPolicy objects out on its
node through `netcfg apply --confirm` (docs/fleet.md)."""
