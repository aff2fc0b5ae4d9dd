"""SSRF guard for HTTP targets.

A job's URL is supplied by a user but fetched from inside the deployment, so without a guard a job could
reach the cloud metadata service (credentials), VPC-internal services or the worker's own loopback. The
guard works in two stages, and both are needed:

* ``check_url`` is static and runs when a job is created or changed: it rejects what can be decided from
  the text alone, including IP literals in every spelling a resolver or an HTTP client would accept
  (decimal ``2130706433``, octal ``0177.0.0.1``, hex ``0x7f.1``, short ``127.1``, IPv4-mapped, NAT64 and
  6to4 IPv6 embedding a private IPv4, full-width digits folded by IDNA). Anything that looks numeric but
  does not parse is refused rather than handed to a resolver that might read it differently.
* ``resolve_and_check`` runs at execution time: a public-looking name may resolve to a private address,
  either from the start or after a DNS rebinding. Every resolved address must pass, and the caller must
  then connect to one of the returned addresses instead of resolving again; a second lookup would reopen
  the rebinding window.

The deployment can widen the policy: ``allow_loopback`` (the local stack, whose targets run on the same
machine) and ``allow_list`` (hostnames matched exactly, or CIDRs / single IPs that contain the address).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

URL_FIELD: Final = "target.url"
MAX_URL_LENGTH: Final = 2048

_HOW_TO_ALLOW: Final = (
    "targets may not reach loopback, private, link-local or metadata addresses "
    "unless the deployment's allow-list names them"
)


class TargetError(ValueError):
    """A target spec that cannot be accepted; ``field`` names the offending field for the API's 422."""

    field: str
    reason: str

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def __reduce__(self) -> tuple[type[TargetError], tuple[str, str]]:
        # The default would call the class with the single formatted message and fail.
        return type(self), (self.field, self.reason)


class ForbiddenAddressError(TargetError):
    """The target points (or resolves) at an address the network policy refuses.

    A subclass so the executor can report a policy refusal differently from a malformed spec.
    """


@dataclass(frozen=True)
class NetworkPolicy:
    """Where HTTP targets may connect to, beyond the public internet."""

    allow_loopback: bool = False
    allow_list: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Accept any iterable but store a tuple, so the policy stays hashable and the parsed form can be
        # cached; parsing here makes a bad entry fail at startup rather than at the first delivery.
        object.__setattr__(self, "allow_list", tuple(self.allow_list))
        _compile_allow_list(self.allow_list)


@dataclass(frozen=True)
class TargetURL:
    """A URL that passed the static checks, in the canonical form the connection must use."""

    scheme: str
    host: str  # lowercase ASCII hostname, or the canonical text of an IP literal (no brackets)
    ip: IPAddress | None  # set when the host is an IP literal
    port: int
    explicit_port: bool
    request_target: str  # path and query, at least "/"

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return f"{host}:{self.port}" if self.explicit_port else host


# Order matters: the first containing network names the reason, so specific entries come first.
_FORBIDDEN_V4: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = tuple(
    (ipaddress.IPv4Network(net), label)
    for net, label in (
        ("169.254.169.254/32", "the cloud metadata service"),
        ("0.0.0.0/8", "a 'this network' address (reaches the local host)"),
        ("10.0.0.0/8", "a private address (10.0.0.0/8)"),
        ("100.64.0.0/10", "a shared carrier-grade NAT address (100.64.0.0/10)"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address (172.16.0.0/12)"),
        ("192.0.0.0/24", "an IETF protocol assignment address"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.88.99.0/24", "a 6to4 relay anycast address"),
        ("192.168.0.0/16", "a private address (192.168.0.0/16)"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "the broadcast address"),
        ("240.0.0.0/4", "a reserved address"),
    )
)

_FORBIDDEN_V6: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = tuple(
    (ipaddress.IPv6Network(net), label)
    for net, label in (
        ("::/128", "the unspecified address"),
        ("::1/128", "a loopback address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("100::/64", "a discard-only address"),
        ("2001::/23", "an IETF special-purpose address (Teredo, ORCHID, benchmarking)"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("fc00::/7", "a unique local (private) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)

# Only 2000::/3 is allocated as global unicast; everything else is reserved or special.
_GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
_NAT64_V6: Final = ipaddress.IPv6Network("64:ff9b::/96")

_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})

_HOSTNAME_CHARS: Final = re.compile(r"[a-z0-9_.-]+")
# WHATWG "ends in a number": such a host is an IPv4 address or an error, never a DNS name.
_NUMERIC_LABEL: Final = re.compile(r"[0-9]+|0x[0-9a-f]*")
_PORT: Final = re.compile(r"[0-9]{1,5}")
# Whitespace, controls and backslashes are where URL parsers disagree (and glibc's inet_aton ignores
# anything after a space), so they are refused outright instead of being normalised.
_UNSAFE_URL_CHARS: Final = re.compile(r"[\x00-\x20\x7f\\]")


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and that a connection to it would effectively reach."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64_V6:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public destination, or None if it is (ignoring any policy)."""
    inner = embedded_ipv4(ip)
    if inner is not None:
        inner_reason = forbidden_reason(inner)
        return None if inner_reason is None else f"an address embedding {inner}, {inner_reason}"
    if isinstance(ip, ipaddress.IPv4Address):
        for net4, label in _FORBIDDEN_V4:
            if ip in net4:
                return label
        # Python's own registry catches special ranges the table does not list.
        return None if ip.is_global else "not a globally routable address"
    for net6, label in _FORBIDDEN_V6:
        if ip in net6:
            return label
    return None if ip in _GLOBAL_UNICAST_V6 else "a reserved address"


def _is_loopback(ip: IPAddress) -> bool:
    inner = embedded_ipv4(ip)
    return (inner or ip).is_loopback


@functools.lru_cache(maxsize=32)
def _compile_allow_list(entries: tuple[str, ...]) -> tuple[frozenset[str], tuple[IPNetwork, ...]]:
    names: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in entries:
        text = entry.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
            continue
        except ValueError:
            pass
        try:
            name, ip = _canonical_host(text)
        except TargetError as exc:
            raise ValueError(f"allow_list entry {entry!r}: {exc.reason}") from None
        if ip is not None:
            networks.append(ipaddress.ip_network(ip))
        else:
            names.add(name)
    return frozenset(names), tuple(networks)


def _host_allowed(host: str, policy: NetworkPolicy) -> bool:
    names, _ = _compile_allow_list(policy.allow_list)
    return host in names


def _ip_allowed(ip: IPAddress, policy: NetworkPolicy) -> bool:
    _, networks = _compile_allow_list(policy.allow_list)
    candidates = [ip]
    inner = embedded_ipv4(ip)
    if inner is not None:
        candidates.append(inner)
    return any(c.version == net.version and c in net for c in candidates for net in networks)


def _refusal(ip: IPAddress, policy: NetworkPolicy) -> str | None:
    reason = forbidden_reason(ip)
    if reason is None or _ip_allowed(ip, policy) or (policy.allow_loopback and _is_loopback(ip)):
        return None
    return reason


def _check_ip(ip: IPAddress, shown_as: str, policy: NetworkPolicy) -> None:
    reason = _refusal(ip, policy)
    if reason is not None:
        subject = shown_as if shown_as == str(ip) else f"{shown_as} ({ip})"
        raise ForbiddenAddressError(URL_FIELD, f"{subject} is {reason}; {_HOW_TO_ALLOW}")


def _canonical_host(raw: str) -> tuple[str, IPAddress | None]:
    """Canonical ASCII form of a host and, if it is an IP literal in any spelling, the address."""
    if raw.startswith("[") and raw.endswith("]"):
        raw = raw[1:-1]
    elif ":" not in raw:
        return _canonical_name(raw)
    if "%" in raw:
        raise TargetError(URL_FIELD, "IPv6 zone identifiers are not allowed")
    try:
        ip6 = ipaddress.IPv6Address(raw)
    except ValueError:
        raise TargetError(URL_FIELD, f"{raw!r} is not a valid IPv6 address") from None
    return str(ip6), ip6


def _canonical_name(raw: str) -> tuple[str, IPAddress | None]:
    host = raw
    if not host.isascii():
        # IDNA folds look-alikes (full-width digits, circled letters) into ASCII, which is what a
        # resolver would see, so the checks below must run on the folded form.
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise TargetError(URL_FIELD, f"{raw!r} is not a valid hostname") from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise TargetError(URL_FIELD, "the URL has no host")
    labels = host.split(".")
    if (
        not _HOSTNAME_CHARS.fullmatch(host)
        or len(host) > 253
        or any(not label or len(label) > 63 for label in labels)
    ):
        raise TargetError(URL_FIELD, f"{raw!r} is not a valid hostname")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        # inet_aton is what resolvers and most HTTP stacks apply to such hosts: 1 to 4 parts, each
        # decimal, octal (leading 0) or hex (0x).
        try:
            ip4 = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            raise TargetError(URL_FIELD, f"{raw!r} is not a valid IPv4 address") from None
        return str(ip4), ip4
    return host, None


def _check_host(raw: str, policy: NetworkPolicy) -> tuple[str, IPAddress | None]:
    host, ip = _canonical_host(raw)
    if ip is not None:
        _check_ip(ip, raw.strip("[]"), policy)
    elif (
        (host in _LOOPBACK_NAMES or host.endswith(".localhost"))
        and not policy.allow_loopback
        and not _host_allowed(host, policy)
    ):
        raise ForbiddenAddressError(URL_FIELD, f"{host} is a loopback name; {_HOW_TO_ALLOW}")
    return host, ip


def parse_target_url(url: str, policy: NetworkPolicy) -> TargetURL:
    """Parse and statically vet an HTTP target URL; raises TargetError (``field="target.url"``)."""
    if not isinstance(url, str) or not url:
        raise TargetError(URL_FIELD, "must be a non-empty string")
    if len(url) > MAX_URL_LENGTH:
        raise TargetError(URL_FIELD, f"must be at most {MAX_URL_LENGTH} characters")
    if _UNSAFE_URL_CHARS.search(url):
        raise TargetError(URL_FIELD, "must not contain whitespace, control characters or backslashes")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise TargetError(URL_FIELD, f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise TargetError(URL_FIELD, "scheme must be http or https")
    netloc = parts.netloc
    if "@" in netloc:
        raise TargetError(URL_FIELD, "credentials (user:password@) are not allowed in the URL")
    if not netloc:
        raise TargetError(URL_FIELD, "the URL has no host")

    # The netloc is split here rather than through SplitResult.hostname/.port, whose leniency differs
    # between Python versions; what is checked must be exactly what is connected to.
    if netloc.startswith("["):
        close = netloc.find("]")
        if close < 0:
            raise TargetError(URL_FIELD, "unterminated IPv6 literal")
        raw_host, rest = netloc[: close + 1], netloc[close + 1 :]
        if rest and not rest.startswith(":"):
            raise TargetError(URL_FIELD, "unexpected text after the IPv6 literal")
        raw_port = rest[1:] if rest else None
    elif ":" in netloc:
        raw_host, _, raw_port = netloc.partition(":")
    else:
        raw_host, raw_port = netloc, None
    if not raw_host or raw_host == "[]":
        raise TargetError(URL_FIELD, "the URL has no host")

    default_port = 443 if scheme == "https" else 80
    if raw_port:
        if not _PORT.fullmatch(raw_port) or not 1 <= int(raw_port) <= 65535:
            raise TargetError(URL_FIELD, f"invalid port {raw_port!r}")
        port = int(raw_port)
    else:
        port = default_port

    host, ip = _check_host(raw_host, policy)
    request_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return TargetURL(
        scheme=scheme,
        host=host,
        ip=ip,
        port=port,
        explicit_port=port != default_port,
        request_target=request_target,
    )


def check_url(url: str, policy: NetworkPolicy) -> None:
    """Refuse URLs that are malformed or point at a forbidden address; no DNS lookups."""
    parse_target_url(url, policy)


def resolve_and_check(host: str, port: int, policy: NetworkPolicy) -> list[str]:
    """Resolve ``host`` and return its addresses, refusing if ANY of them is forbidden.

    Refusing on any (rather than filtering) matters: a name that mixes public and private answers is
    either misconfigured or an attack, and a caller that falls back between addresses must not be able to
    land on the private one. An allow-listed hostname is trusted whatever it resolves to. Raises
    ForbiddenAddressError, TargetError for a malformed host, or socket.gaierror (an OSError) when the name
    does not resolve.
    """
    name, ip = _check_host(host, policy)
    if ip is not None:
        return [str(ip)]
    trusted = _host_allowed(name, policy)
    vetted: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP):
        address = ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])
        reason = None if trusted else _refusal(address, policy)
        if reason is not None:
            raise ForbiddenAddressError(URL_FIELD, f"{name} resolves to {address}, {reason}; {_HOW_TO_ALLOW}")
        if str(address) not in vetted:
            vetted.append(str(address))
    if not vetted:
        raise socket.gaierror(socket.EAI_NONAME, f"{name} has no addresses")
    return vetted
