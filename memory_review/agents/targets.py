"""Where a webhook may be sent: https to a host on the public internet. A URL whose host is, or
resolves to, a loopback, link-local, private, shared, multicast or reserved address is refused
(it would let a tenant's endpoint reach into the network this server runs in), unless the
address and port are inside one of WEBHOOK_ALLOW_NETWORKS. Plain http is refused too (a change
and its signature would cross the internet readable by anyone on the way), except to an address
and port WEBHOOK_ALLOW_NETWORKS lets in (the demo's receiver on 127.0.0.1, a network of one's own).
The page and the API register endpoints through the same check.

An IPv6 address that carries an IPv4 one (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d,
NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::, Teredo 2001:0::) is judged by that IPv4 address
too: a translator or tunnel delivers to it, so [64:ff9b::7f00:1] is 127.0.0.1. One that is public
both ways (NAT64 to a public address, for an IPv6-only network) passes. Local-use NAT64
(64:ff9b:1::/48, RFC 8215) is refused outright: it is a translator inside someone's own network,
and where it puts the IPv4 address depends on a prefix length only that network knows.

An allow-list entry is an address or a network, with or without a port: `127.0.0.1:8766`,
`[::1]:9000`, `10.0.0.0/8:443`, `[fd00::/8]:443`. With a port it lets in that port only (the demo's
names its receiver's); without one, every port, as before entries could name one.

The check runs when an endpoint is registered and again at every delivery, and the delivery is
sent to the very address the check passed (the name is not looked up twice), so a name that
later resolves inward is refused too."""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

SCHEMES = {"http": 80, "https": 443}


class TargetRefused(ValueError):
    """The URL cannot be a webhook target; the message says why."""


@dataclass(frozen=True)
class Target:
    url: str  # as given
    host: str
    port: int
    address: str  # the checked address the delivery connects to

    @property
    def pinned_url(self) -> str:
        """The URL with its host replaced by the checked address (Host and SNI keep the name)."""
        parts = urlsplit(self.url)
        address = f"[{self.address}]" if ":" in self.address else self.address
        return parts._replace(netloc=f"{address}:{self.port}").geturl()

    @property
    def host_header(self) -> str:
        default = SCHEMES[urlsplit(self.url).scheme]
        return self.host if self.port == default else f"{self.host}:{self.port}"


# Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the network's prefix length.
LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
WELL_KNOWN_NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


@dataclass(frozen=True)
class Allowed:
    """One WEBHOOK_ALLOW_NETWORKS entry: a network and the one port it lets in (None: every port)."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    port: int | None

    def admits(self, address, port: int) -> bool:
        return address in self.network and self.port in (None, port)


def allowed_entry(entry: str) -> Allowed:
    """`10.0.0.0/8`, `10.0.0.0/8:443`, `::1`, `[::1]`, `[::1]:9000`, `[fd00::/8]:443`."""
    text, port = entry.strip(), None
    if text.startswith("["):
        text, closed, rest = text[1:].partition("]")
        if not closed or rest[:1] not in ("", ":"):
            text = entry  # not an address: refused just below
        port = rest[1:] if rest else None
    elif text.count(":") == 1:  # an IPv4 address or network and a port (a bare IPv6 one has 2 or more)
        text, port = text.split(":")
    try:
        network = ipaddress.ip_network(text, strict=False)
        port = None if port is None else int(port)
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"WEBHOOK_ALLOW_NETWORKS entry {entry!r} is not an address or network with an optional "
            "port (127.0.0.1:8766, [::1]:9000, 10.0.0.0/8:443)"
        ) from exc
    if port is not None and not 0 < port < 65536:
        raise ImproperlyConfigured(f"WEBHOOK_ALLOW_NETWORKS entry {entry!r} names no port (1 to 65535)")
    return Allowed(network, port)


def _allowed() -> list[Allowed]:
    return [allowed_entry(entry) for entry in settings.WEBHOOK_ALLOW_NETWORKS]


@checks.register(checks.Tags.security)
def allow_list_check(app_configs, **kwargs) -> list[checks.Error]:
    """A misspelt entry is named when the server starts, not at a tenant's first registration."""
    try:
        _allowed()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="agents.E001")]
    return []


def carried_ipv4(address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """(how, IPv4 address) for each IPv4 address an IPv6 address carries."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    if address.ipv4_mapped is not None:
        return [("IPv4-mapped", address.ipv4_mapped)]
    if address.sixtofour is not None:
        return [("6to4", address.sixtofour)]
    if address.teredo is not None:
        server, client = address.teredo
        return [("Teredo server", server), ("Teredo client", client)]
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in WELL_KNOWN_NAT64:
        return [("NAT64", low32)]
    if address in IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are IPv6's own
        return [("IPv4-compatible", low32)]
    return []


def _inward(address) -> bool:
    return not address.is_global or address.is_multicast


def _refusal(address, port: int, allowed: list[Allowed]) -> str | None:
    """Why `address`:`port` may not be a webhook's target (its words follow "host h is at "), or None."""
    if address in LOCAL_NAT64:
        return f"{address}, a local-use NAT64 address (64:ff9b:1::/48), which only its own network can read"
    seen = [(address, f"{address}")]
    seen += [
        (ipv4, f"{address}, which carries the IPv4 address {ipv4} ({how})")
        for how, ipv4 in carried_ipv4(address)
    ]
    for checked, where in seen:
        if _inward(checked) and not any(entry.admits(checked, port) for entry in allowed):
            return f"{where}, a loopback, private, link-local or reserved address"
    return None


def parse(url: str) -> tuple[str, int]:
    """(host, port) of a well-formed webhook URL; TargetRefused naming what is wrong otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"is not a URL ({exc})") from exc
    if parts.scheme not in SCHEMES:
        raise TargetRefused("must start with https://")
    if not parts.hostname:
        raise TargetRefused("names no host")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("must not carry a user name or password: the signature authenticates us")
    if parts.fragment:
        raise TargetRefused("must not have a #fragment")
    return parts.hostname, port or SCHEMES[parts.scheme]


def check(url: str) -> Target:
    """The target to connect to, once every address the host resolves to has passed."""
    host, port = parse(url)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetRefused(f"host {host} does not resolve ({exc})") from exc
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in found))
    allowed = _allowed()
    for address in addresses:
        if problem := _refusal(address, port, allowed):
            raise TargetRefused(
                f"host {host} is at {problem}: webhooks go to the public internet unless "
                f"WEBHOOK_ALLOW_NETWORKS lets that network and port ({port}) in"
            )
    plain = urlsplit(url).scheme == "http"
    if plain and not all(any(entry.admits(address, port) for entry in allowed) for address in addresses):
        raise TargetRefused(
            "must start with https://: plain http:// goes only to a network and port "
            f"WEBHOOK_ALLOW_NETWORKS lets in, and host {host} ({addresses[0]}, port {port}) is not in one"
        )
    return Target(url=url, host=host, port=port, address=str(addresses[0]))
