"""The interface-name check's fast match (one regex per name, for 200k-name
configs) must never vouch for a name the kernel's rules refuse, and must
vouch for the ordinary ASCII names so that the fast path is taken."""

from __future__ import annotations

import itertools

from netcfg.model.names import _PLAIN_IFNAME, _ifname_rules_problem, ifname_problem

# Every ASCII character, a few bytes the kernel counts as white space
# (0xa0 is a byte of 'à'), and other non-ASCII characters.
ALPHABET = [chr(c) for c in range(128)] + ["\xa0", "à", "é", "ü", "\u2028", "\udcff"]


def _verdicts(name: str) -> tuple[bool, bool]:
    return _PLAIN_IFNAME.match(name) is not None, _ifname_rules_problem(name) is None


def test_fast_match_agrees_with_the_rules_on_short_names():
    for length in (1, 2):
        for chars in itertools.product(ALPHABET, repeat=length):
            name = "".join(chars)
            fast, valid = _verdicts(name)
            if fast:
                assert valid, name
            if name.isascii() and name.isprintable():
                # For printable ASCII the fast match is exactly the rules
                # (control characters the kernel takes go the long way).
                assert fast == valid, name


def test_fast_match_agrees_on_lengths_and_dots():
    for name in ["", ".", "..", "...", ".a", "a.", "a" * 15, "a" * 16, "swp1.100",
                 "br-tenant_0", "eth0:1", "a/b", "a b", "x\n", "x\x00", "à" * 7, "à" * 8]:
        fast, valid = _verdicts(name)
        assert not fast or valid, name
        assert ifname_problem(name) == (None if fast else _ifname_rules_problem(name)), name
        if name.isascii() and name.isprintable():
            assert fast == valid, name
