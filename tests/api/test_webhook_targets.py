"""The webhook address check (agents/targets.py) sees through IPv6 forms that carry an IPv4
address, and an allow-list entry may name the one port it lets in (issue 27, item 7): the demo's
loopback allowance once let a webhook be delivered to Redis on 6379."""

import json
import re
import socket

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from memory_review.agents import targets
from memory_review.agents.models import WebhookEndpoint
from memory_review.tenancy.tokens import token_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def as_in_production(settings):
    settings.WEBHOOK_ALLOW_NETWORKS = []
    return settings


def refusal(url: str) -> str:
    with pytest.raises(targets.TargetRefused) as refused:
        targets.check(url)
    return str(refused.value)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::127.0.0.1]/in", "carries the IPv4 address 127.0.0.1 (IPv4-compatible)"),
        ("http://[64:ff9b::7f00:1]/in", "carries the IPv4 address 127.0.0.1 (NAT64)"),
        ("http://[64:ff9b::a9fe:a9fe]/in", "carries the IPv4 address 169.254.169.254 (NAT64)"),
        ("http://[2002:7f00:1::]/in", "carries the IPv4 address 127.0.0.1 (6to4)"),
        ("http://[2002:a00:1::1]/in", "carries the IPv4 address 10.0.0.1 (6to4)"),
        ("http://[::ffff:127.0.0.1]/in", "is at ::ffff:7f00:1, a loopback"),
        ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/in", "a loopback, private, link-local or reserved"),
        ("http://[64:ff9b:1::a00:1]/in", "a local-use NAT64 address (64:ff9b:1::/48)"),
    ],
)
def test_it_refuses_every_ipv6_form_that_carries_an_inward_ipv4_address_naming_it(url, said):
    assert said in refusal(url)


def test_it_reads_the_ipv4_address_teredo_carries_for_its_server_and_its_client():
    address = targets.ipaddress.ip_address("2001:0:4136:e378:8000:63bf:3fff:fdd2")

    assert [(how, str(ipv4)) for how, ipv4 in targets.carried_ipv4(address)] == [
        ("Teredo server", "65.54.227.120"),
        ("Teredo client", "192.0.2.45"),
    ]


def test_nat64_to_a_public_address_still_passes_for_an_ipv6_only_network():
    assert targets.check("https://[64:ff9b::808:808]/in").address == "64:ff9b::808:808"


def test_an_allow_list_entry_with_a_port_lets_in_that_port_only(as_in_production):
    as_in_production.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.1:8766", "[::1]:9000", "10.0.0.0/8:443"]

    assert targets.check("http://127.0.0.1:8766/hook").address == "127.0.0.1"
    assert targets.check("http://[::1]:9000/hook").address == "::1"
    assert targets.check("https://10.2.3.4/hook").address == "10.2.3.4"
    assert "lets that network and port (6379) in" in refusal("http://127.0.0.1:6379/")
    assert "port (9001)" in refusal("http://[::1]:9001/")
    assert "port (80)" in refusal("http://10.2.3.4/hook")


def test_an_entry_without_a_port_still_lets_in_every_port(as_in_production):
    as_in_production.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.0/8"]

    assert targets.check("http://127.0.0.1:6379/").port == 6379


def test_an_allowed_ipv4_network_does_not_let_in_its_6to4_or_nat64_disguise_on_another_port(as_in_production):
    as_in_production.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.1:8766"]

    assert "(6to4)" in refusal("http://[2002:7f00:1::]:6379/")
    assert "(NAT64)" in refusal("http://[64:ff9b::7f00:1]:6379/")


@pytest.mark.parametrize(
    "entry", ["loopback", "127.0.0.1:0", "127.0.0.1:99999", "[::1]9000", "[::1]:", "[::1", "10.0.0.0/33"]
)
def test_a_misspelt_entry_is_named_when_the_server_starts(as_in_production, entry):
    as_in_production.WEBHOOK_ALLOW_NETWORKS = [entry]

    with pytest.raises(ImproperlyConfigured, match=re.escape(f"WEBHOOK_ALLOW_NETWORKS entry {entry!r}")):
        targets.allowed_entry(entry)
    with pytest.raises(SystemCheckError, match="agents.E001"):
        call_command("check")


def test_the_demo_lets_in_its_agents_receiver_port_and_no_other():
    from memory_review.demo.management.commands.run_demo import agent_command

    allowed, command = agent_command(["manage.py"], free_port())
    receiver = int(command[command.index("--webhook-port") + 1])

    assert targets.allowed_entry(allowed) == targets.Allowed(
        targets.ipaddress.ip_network("127.0.0.1/32"), receiver
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_demo_agents_receiver_follows_the_demos_port_and_two_demos_never_share_one():
    from memory_review.demo.agent import webhook_port

    receiver = free_port()
    web = receiver - 766
    first = webhook_port(web)
    with socket.socket() as first_demos_agent:
        first_demos_agent.bind(("127.0.0.1", first))
        second = webhook_port(web)  # another demo whose PORT + 766 is taken: a free port instead

    assert first == receiver  # PORT + 766: 8766 beside the default 8000
    assert second != first
    assert 0 < webhook_port(65000) <= 65535  # 65766 is past the last port: a free one instead


def test_registering_a_nat64_loopback_url_is_a_400_naming_url_and_nothing_is_written(client, acme):
    token = token_create(tenant=acme, name="support-bot")[1]

    response = client.post(
        "/api/v1/t/acme/webhooks",
        json.dumps({"url": "http://[64:ff9b::7f00:1]:6379/"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )

    assert response.status_code == 400
    assert "carries the IPv4 address 127.0.0.1 (NAT64)" in response.json()["fields"]["url"]
    assert not WebhookEndpoint.objects.exists()


def test_the_demos_jev_standin_follows_the_demos_port_unless_one_is_named(monkeypatch):
    """Two demos on one machine each start their own stand-in (PORT + 765, or a free port when
    that is taken), instead of the second failing to bind the first one's 8765."""
    from memory_review.demo.management.commands.run_demo import standin_url

    monkeypatch.delenv("JEV_STANDIN_URL", raising=False)
    wanted = free_port()
    web = wanted - 765
    first = standin_url(web)
    with socket.socket() as first_demos_standin:
        first_demos_standin.bind(("127.0.0.1", wanted))
        second = standin_url(web)

    assert first == f"http://127.0.0.1:{wanted}"
    assert second != first and second.startswith("http://127.0.0.1:")
    monkeypatch.setenv("JEV_STANDIN_URL", "http://127.0.0.1:9999")
    monkeypatch.setattr("django.conf.settings.JEV_STANDIN_URL", "http://127.0.0.1:9999")
    assert standin_url(web) == "http://127.0.0.1:9999"  # one named is used as it is
