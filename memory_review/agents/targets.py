"""Where a webhook may be sent: http or https to a host on the public internet. A URL whose host is,
or resolves to, a loopback, link-local, private, shared, multicast or reserved address is refused
(it would let a tenant's endpoint reach into the network this server runs in), unless the
address is inside one of WEBHOOK_ALLOW_NETWORKS.

The check runs when an endpoint is registered and again at every delivery, and the delivery is
sent to the very address the check passed (the name is not looked up twice), so a name that
later resolves inward is refused too."""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

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


def _allowed_networks() -> list:
    return [ipaddress.ip_network(network, strict=False) for network in settings.WEBHOOK_ALLOW_NETWORKS]


def _inward(address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def parse(url: str) -> tuple[str, int]:
    """(host, port) of a well-formed webhook URL; TargetRefused naming what is wrong otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"is not a URL ({exc})") from exc
    if parts.scheme not in SCHEMES:
        raise TargetRefused("must start with https:// (or http://)")
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
    allowed = _allowed_networks()
    for address in addresses:
        if _inward(address) and not any(address in network for network in allowed):
            raise TargetRefused(
                f"host {host} is at {address}, a loopback, private, link-local or reserved address: "
                "webhooks go to the public internet unless WEBHOOK_ALLOW_NETWORKS lets that network in"
            )
    return Target(url=url, host=host, port=port, address=str(addresses[0]))
