"""The webhook form asks for https and means it (issue 28): plain http is refused on the page as
through the API (one check, agents/targets.py), except to a network WEBHOOK_ALLOW_NETWORKS lets in
(the demo's receiver on 127.0.0.1)."""

import pytest

from memory_review.agents.models import WebhookEndpoint
from memory_review.tenancy.models import Role
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, acme, settings):
    settings.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.1:8766"]
    client.force_login(make_user("acme-admin", acme, Role.ADMIN))
    return client


def test_the_page_refuses_plain_http_to_the_internet_naming_why(admin_client):
    answer = admin_client.post("/t/acme/webhooks/new/", {"url": "http://93.184.215.14/hook"})

    assert answer.status_code == 400
    page = answer.content.decode()
    assert "The URL must start with https://: plain http:// goes only to a network and port" in page
    assert not WebhookEndpoint.objects.exists()


def test_plain_http_to_a_port_the_allow_list_lets_in_is_registered(admin_client):
    answer = admin_client.post("/t/acme/webhooks/new/", {"url": "http://127.0.0.1:8766/hook"})

    assert answer.status_code == 200
    assert WebhookEndpoint.objects.get().url == "http://127.0.0.1:8766/hook"


def test_plain_http_to_another_port_on_an_allowed_address_is_refused(admin_client):
    answer = admin_client.post("/t/acme/webhooks/new/", {"url": "http://127.0.0.1:6379/"})

    assert answer.status_code == 400 and not WebhookEndpoint.objects.exists()
