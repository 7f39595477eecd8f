"""Retrieval against a local HTTP server; the loopback network is allowed only where a test says so."""

from __future__ import annotations

import pytest

from llm.retrieval import MAX_CHARS, fetch_page, is_public_address
from llm.tests.local_site import SiteHandler as _Handler


@pytest.fixture
def loopback_allowed(settings):
    settings.CINDY_RETRIEVAL_ALLOWED_NETWORKS = ["127.0.0.1/32"]


def test_html_is_fetched_as_text_with_links(site, loopback_allowed):
    result = fetch_page(site + "/page")

    assert result.ok
    assert "Rye bread is dense. More (https://example.com/rye)" in result.content
    assert "alert(1)" not in result.content and "body{}" not in result.content


def test_connection_goes_to_the_checked_address_with_the_real_host_name(site, loopback_allowed):
    port = site.rsplit(":", 1)[1]

    result = fetch_page(f"http://bakery.test:{port}/page", resolve=lambda host, p: ["127.0.0.1"])

    assert result.ok
    assert _Handler.seen_hosts == [f"bakery.test:{port}"]


def test_non_html_is_not_fetched(site, loopback_allowed):
    assert (
        fetch_page(site + "/pdf").content == "Content-Type: application/pdf - not fetched (non-HTML content)"
    )


def test_text_is_capped(site, loopback_allowed):
    assert len(fetch_page(site + "/big").content) == MAX_CHARS


def test_loopback_is_refused_without_the_test_allowance(site):
    result = fetch_page(site + "/page")

    assert not result.ok and "non-public address (127.0.0.1)" in result.content
    assert _Handler.seen_hosts == []


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
    ],
)
def test_private_addresses_are_refused(url):
    result = fetch_page(url)

    assert not result.ok and "non-public address" in result.content


def test_a_name_with_any_private_address_is_refused():
    result = fetch_page("http://mixed.test/", resolve=lambda host, port: ["93.184.216.34", "10.0.0.7"])

    assert not result.ok and "10.0.0.7" in result.content


@pytest.mark.parametrize(
    "target", ["http://10.1.2.3/", "http://169.254.169.254/", "http://[::1]:8080/", "http://127.0.0.2/"]
)
def test_redirects_to_private_addresses_are_refused(site, loopback_allowed, target):
    result = fetch_page(f"{site}/redirect?to={target}")

    assert not result.ok and "non-public address" in result.content
    assert len(_Handler.seen_hosts) == 1


def test_redirects_to_allowed_addresses_are_followed(site, loopback_allowed):
    result = fetch_page(f"{site}/redirect?to=/page")

    assert result.ok and "Rye bread" in result.content


@pytest.mark.parametrize("url", ["ftp://example.com/", "file:///etc/passwd", "gopher://x/"])
def test_only_http_and_https(url):
    assert "not an http(s) URL" in fetch_page(url).content


def test_public_address_check():
    assert is_public_address("93.184.216.34")
    assert is_public_address("2606:4700::1111")
    for private in (
        "127.0.0.1",
        "10.0.0.1",
        "172.16.0.1",
        "169.254.1.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "0.0.0.0",
        "224.0.0.1",
    ):
        assert not is_public_address(private), private


@pytest.mark.parametrize(
    "address",
    [
        "::127.0.0.1",  # IPv4-compatible (deprecated)
        "::5db8:d822",  # IPv4-compatible, even of a public address: never routed
        "::ffff:0:7f00:1",  # IPv4-translated 127.0.0.1
        "64:ff9b::7f00:1",  # NAT64 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 10.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 169.254.169.254
        "64:ff9b:1::5db8:d822",  # local-use NAT64 prefix
        "2002:7f00:1::",  # 6to4 127.0.0.1
        "2002:c0a8:101::1",  # 6to4 192.168.1.1
        "2001:0:7f00:1::",  # Teredo with server 127.0.0.1
    ],
)
def test_ipv6_forms_of_private_ipv4_addresses_are_not_public(address):
    assert not is_public_address(address)
    result = fetch_page(f"http://[{address}]/")
    assert not result.ok and "non-public address" in result.content


@pytest.mark.parametrize("address", ["64:ff9b::5db8:d822", "2002:5db8:d822::1"])
def test_ipv6_forms_of_public_ipv4_addresses_stay_public(address):
    assert is_public_address(address)


def test_a_name_resolving_to_an_embedded_loopback_is_refused():
    result = fetch_page("http://nat64.test/", resolve=lambda host, port: ["64:ff9b::7f00:1"])

    assert not result.ok and "non-public address (64:ff9b::7f00:1)" in result.content
