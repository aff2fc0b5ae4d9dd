"""The SSRF guard: which target URLs and resolved addresses an HTTP target may reach."""

from __future__ import annotations

import pickle
import socket
from typing import Any

import pytest

from punctual_functions.core.ssrf_guard import (
    ForbiddenAddressError,
    NetworkPolicy,
    TargetError,
    check_url,
    parse_target_url,
    resolve_and_check,
)

STRICT = NetworkPolicy()
LOCAL = NetworkPolicy(allow_loopback=True)

REFUSED = [
    # scheme, credentials, host
    ("ftp://example.com/file", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://example.com:70/", "scheme"),
    ("http://user:secret@example.com/", "credentials"),
    ("http://user@example.com/", "credentials"),
    ("http:///no-host", "no host"),
    ("http://", "no host"),
    ("http://:8080/", "no host"),
    ("http://example.com:99999/", "port"),
    ("http://example.com:0/", "port"),
    ("http://example.com:80:80/", "port"),
    # parser-differential characters
    ("http://example.com\\@127.0.0.1/", "backslash"),
    ("http://example.com /", "whitespace"),
    ("http://exa\tmple.com/", "whitespace"),
    ("http://%31%32%37.0.0.1/", "not a valid hostname"),
    # private, loopback, link-local, metadata (dotted quad)
    ("http://127.0.0.1/", "loopback"),
    ("http://127.255.255.254:8080/", "loopback"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://172.31.255.255/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://169.254.170.2/v2/credentials", "link-local"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://0.0.0.0/", "this network"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://192.0.2.1/", "documentation"),
    # legacy IPv4 spellings (inet_aton semantics)
    ("http://2130706433/", "127.0.0.1"),
    ("http://0177.0.0.1/", "127.0.0.1"),
    ("http://017700000001/", "127.0.0.1"),
    ("http://0x7f.1/", "127.0.0.1"),
    ("http://0x7f000001/", "127.0.0.1"),
    ("http://127.1/", "127.0.0.1"),
    ("http://127.000.000.001/", "127.0.0.1"),
    ("http://10.1/", "10.0.0.1"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
    ("http://0/", "0.0.0.0"),
    ("http://127.0.0.1.:80/", "127.0.0.1"),
    ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "127.0.0.1"),  # full-width digits
    ("http://999.0.0.1/", "not a valid IPv4 address"),
    ("http://1.2.3.4.5/", "not a valid IPv4 address"),
    ("http://0x/", "not a valid IPv4 address"),
    # IPv6 and IPv4 embedded in IPv6
    ("http://[::1]/", "loopback"),
    ("http://[::]/", "unspecified"),
    ("http://[0:0:0:0:0:0:0:1]:8080/", "loopback"),
    ("http://[fc00::1]/", "unique local"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "unique local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fe80::1%25eth0]/", "zone"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[::ffff:10.0.0.1]/", "10.0.0.1"),
    ("http://[::ffff:a00:1]/", "10.0.0.1"),
    ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
    ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://[::127.0.0.1]/", "reserved"),
    ("http://[64:ff9b::10.0.0.1]/", "10.0.0.1"),
    ("http://[64:ff9b::a9fe:a9fe]/", "metadata"),
    ("http://[2002:c0a8:101::1]/", "192.168.1.1"),
    ("http://[2002:7f00:1::]/", "127.0.0.1"),
    ("http://[1.2.3.4]/", "not a valid"),
    ("http://[::1/", "not a valid"),
    # loopback names
    ("http://localhost/", "loopback name"),
    ("http://LOCALHOST./", "loopback name"),
    ("http://api.localhost:3000/", "loopback name"),
    ("http://ⓛocalhost/", "loopback name"),
]

ALLOWED_STRICT = [
    "https://example.com/hook",
    "http://93.184.216.34/",
    "https://93.184.216.34:8443/x?y=1",
    "http://[2606:2800:220:1:248:1893:25c8:1946]/",
    "http://[::ffff:93.184.216.34]/",
    "http://[2002:5db8:d822::1]/",
    "https://bücher.example/",
    "HTTPS://Example.COM/Path",
    "http://internal-only.example/",  # names pass statically; resolution is checked at execution
]


@pytest.mark.parametrize(("url", "why"), REFUSED, ids=[url for url, _ in REFUSED])
def test_refused_urls_raise_target_error_on_the_url_field(url: str, why: str) -> None:
    # Given a URL that must never be fetched, When it is checked under the strict policy
    with pytest.raises(TargetError) as caught:
        check_url(url, STRICT)
    # Then the error names the field and explains why
    assert caught.value.field == "target.url"
    assert str(caught.value) == f"target.url: {caught.value.reason}"
    assert why.lower() in caught.value.reason.lower()


def test_there_are_at_least_thirty_refused_urls_in_the_table() -> None:
    assert len(REFUSED) >= 30


@pytest.mark.parametrize("url", ALLOWED_STRICT)
def test_public_urls_pass_the_strict_policy(url: str) -> None:
    check_url(url, STRICT)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost:8000/",
        "http://api.localhost/",
        "http://[::1]:9000/",
        "http://0x7f.1/",
        "http://[::ffff:127.0.0.1]/",
    ],
)
def test_loopback_passes_when_the_policy_allows_loopback(url: str) -> None:
    check_url(url, LOCAL)


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/",
        "http://0.0.0.0:8000/",
        "http://[::]/",
        "http://[fd00::1]/",
    ],
)
def test_allowing_loopback_does_not_open_private_or_metadata_addresses(url: str) -> None:
    with pytest.raises(ForbiddenAddressError):
        check_url(url, LOCAL)


@pytest.mark.parametrize(
    ("url", "allow_list"),
    [
        ("http://10.1.2.3/", ("10.0.0.0/8",)),
        ("http://10.1.2.3/", ("10.1.2.3",)),
        ("http://[::ffff:10.1.2.3]/", ("10.0.0.0/8",)),
        ("http://0x0a.1.2.3/", ("10.1.2.3",)),
        ("http://[fd00::5]:8443/", ("fd00::/8",)),
        ("http://[fd00::5]/", ("[fd00::5]",)),
        ("http://localhost/", ("localhost",)),
        ("http://hooks.localhost/", ("Hooks.Localhost.",)),
    ],
)
def test_allow_list_entries_open_matching_private_destinations(url: str, allow_list: tuple[str, ...]) -> None:
    check_url(url, NetworkPolicy(allow_list=allow_list))


def test_allow_list_does_not_open_addresses_outside_its_networks() -> None:
    policy = NetworkPolicy(allow_list=("10.0.0.0/8", "intranet.example"))
    with pytest.raises(ForbiddenAddressError):
        check_url("http://192.168.0.1/", policy)
    with pytest.raises(ForbiddenAddressError):
        check_url("http://localhost/", policy)


def test_target_error_survives_pickling() -> None:
    error = TargetError("target.url", "scheme must be http or https")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.field, copy.reason, str(copy)) == (error.field, error.reason, str(error))


def test_invalid_allow_list_entry_fails_when_the_policy_is_built() -> None:
    with pytest.raises(ValueError, match="allow_list entry"):
        NetworkPolicy(allow_list=("not a host!",))


def test_parsed_url_is_canonical_for_connecting() -> None:
    # Given a legacy spelling of a loopback IP under the local policy
    parsed = parse_target_url("http://0x7f.1:8080/a/b?c=1#frag", LOCAL)
    # Then the host is the canonical IP, the port explicit, and the fragment dropped
    assert (parsed.host, parsed.port, parsed.request_target) == ("127.0.0.1", 8080, "/a/b?c=1")
    assert parsed.host_header == "127.0.0.1:8080"
    assert parse_target_url("https://Bücher.Example/", STRICT).host == "xn--bcher-kva.example"
    assert parse_target_url("https://[2606:4700::1111]:443/", STRICT).host_header == "[2606:4700::1111]"
    assert parse_target_url("http://example.com", STRICT).request_target == "/"


# ------------------------------------------------------------------------------------- resolve_and_check


def _fake_getaddrinfo(answers: dict[str, list[str]], calls: list[str]) -> Any:
    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        calls.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        result: list[Any] = []
        for address in answers[host]:
            if ":" in address:
                result.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                result.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return result

    return getaddrinfo


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, list[str]], list[str]]:
    answers: dict[str, list[str]] = {}
    calls: list[str] = []
    monkeypatch.setattr(socket, "getaddrinfo", _fake_getaddrinfo(answers, calls))
    return answers, calls


def test_public_looking_name_resolving_to_a_private_address_is_refused(dns: Any) -> None:
    # Given a name whose DNS answer is a private address (rebinding or internal DNS)
    answers, _ = dns
    answers["hooks.example.com"] = ["10.0.0.7"]
    # When it is resolved for a delivery, Then it is refused with the address in the reason
    with pytest.raises(ForbiddenAddressError, match=r"hooks\.example\.com resolves to 10\.0\.0\.7"):
        resolve_and_check("hooks.example.com", 443, STRICT)


def test_any_private_answer_among_public_ones_refuses_the_name(dns: Any) -> None:
    answers, _ = dns
    answers["mixed.example.com"] = ["93.184.216.34", "2606:2800:220:1::1", "169.254.169.254"]
    with pytest.raises(ForbiddenAddressError, match="metadata"):
        resolve_and_check("mixed.example.com", 443, STRICT)


def test_link_local_ipv6_answer_with_scope_is_refused(dns: Any) -> None:
    answers, _ = dns
    answers["scoped.example.com"] = ["fe80::1%eth0"]
    with pytest.raises(ForbiddenAddressError, match="link-local"):
        resolve_and_check("scoped.example.com", 80, STRICT)


def test_public_answers_are_returned_deduplicated_in_order(dns: Any) -> None:
    answers, _ = dns
    answers["example.com"] = ["93.184.216.34", "2606:2800:220:1::1", "93.184.216.34"]
    assert resolve_and_check("example.com", 443, STRICT) == ["93.184.216.34", "2606:2800:220:1::1"]


def test_allow_listed_name_may_resolve_to_a_private_address(dns: Any) -> None:
    answers, _ = dns
    answers["billing.internal"] = ["10.20.30.40"]
    policy = NetworkPolicy(allow_list=("billing.internal",))
    assert resolve_and_check("billing.internal", 8080, policy) == ["10.20.30.40"]


def test_allow_listed_network_admits_a_name_resolving_into_it(dns: Any) -> None:
    answers, _ = dns
    answers["svc.example.com"] = ["10.20.30.40"]
    assert resolve_and_check("svc.example.com", 80, NetworkPolicy(allow_list=("10.20.0.0/16",))) == [
        "10.20.30.40"
    ]
    answers["other.example.com"] = ["10.99.0.1"]
    with pytest.raises(ForbiddenAddressError):
        resolve_and_check("other.example.com", 80, NetworkPolicy(allow_list=("10.20.0.0/16",)))


def test_loopback_answers_pass_only_when_loopback_is_allowed(dns: Any) -> None:
    answers, _ = dns
    answers["dev.example.com"] = ["127.0.0.1", "::1"]
    assert resolve_and_check("dev.example.com", 80, LOCAL) == ["127.0.0.1", "::1"]
    with pytest.raises(ForbiddenAddressError):
        resolve_and_check("dev.example.com", 80, STRICT)


def test_ip_literals_are_vetted_without_a_dns_lookup(dns: Any) -> None:
    _, calls = dns
    assert resolve_and_check("93.184.216.34", 80, STRICT) == ["93.184.216.34"]
    assert resolve_and_check("[2606:4700::1111]", 443, STRICT) == ["2606:4700::1111"]
    with pytest.raises(ForbiddenAddressError):
        resolve_and_check("0x7f.1", 80, STRICT)
    assert calls == []


def test_unresolvable_name_raises_gaierror(dns: Any) -> None:
    with pytest.raises(socket.gaierror):
        resolve_and_check("nowhere.invalid", 80, STRICT)


def test_loopback_name_is_refused_before_any_lookup(dns: Any) -> None:
    _, calls = dns
    with pytest.raises(ForbiddenAddressError, match="loopback name"):
        resolve_and_check("localhost", 80, STRICT)
    assert calls == []
