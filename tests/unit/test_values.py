"""Attribute value parsers: the fast IPv4 path agrees with ipaddress."""

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netcfg.compile.values import parse_address, parse_ip


@given(st.integers(0, 2**32 - 1), st.integers(0, 32))
def test_ipv4_fast_path_is_canonical(n, prefix):
    ip = str(ipaddress.IPv4Address(n))
    assert parse_ip(ip) == ip
    assert parse_address(f"{ip}/{prefix}") == str(ipaddress.ip_interface(f"{ip}/{prefix}"))


@pytest.mark.parametrize("word, expected", [
    ("010.0.0.1/24", None),            # leading zeros: ipaddress decides (rejects)
    ("10.0.0.1/024", "10.0.0.1/24"),   # not canonical: slow path canonicalises
    ("2001:DB8::0001/64", "2001:db8::1/64"),
    ("10.0.0.1", "10.0.0.1"),
])
def test_non_canonical_forms_take_the_slow_path(word, expected):
    if expected is None:
        with pytest.raises(ValueError, match="is not an IPv4 or IPv6 address"):
            parse_address(word)
    else:
        assert parse_address(word) == expected


@pytest.mark.parametrize("word", ["10.0.0.1/33", "1.2.3", "1.2.3.4/", "1.2.3.4/x", "banana"])
def test_bad_addresses_are_rejected(word):
    with pytest.raises(ValueError):
        parse_address(word)
