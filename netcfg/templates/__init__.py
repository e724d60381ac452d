"""Shipped Mako templates: lib/ (defs) and examples/ (applied in CI)."""
