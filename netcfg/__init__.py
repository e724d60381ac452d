"""netcfg: declarative network configuration for multi-tenant Linux hosts.

The package is split along the flow described in docs/architecture.md:
``compile`` (templates to a validated model), ``kinds`` (one module per object
kind), ``plan`` (lowering, diff, ordered batches) are pure; ``kernel`` and
``apply`` are the only parts that talk to the kernel.
"""

__version__ = "0.1.0"
