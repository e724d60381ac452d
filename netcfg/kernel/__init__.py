"""The kernel edge: the only package that touches the kernel (DESIGN.md).

``ns`` makes, opens and enters network namespaces in-process (no fork);
``nl`` is the netlink core. Nothing in the pure packages imports from here
(tests/unit/test_purity.py).
"""
