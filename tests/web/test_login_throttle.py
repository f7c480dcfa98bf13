"""Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one user from one
address, even the right password is refused for LOGIN_LOCKOUT_MINUTES, on the app's login and
the admin's alike. Another address, or another user, is not locked out by it."""

from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from tests.factories import make_user

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"


def attempt(client: Client, url: str, username: str, password: str, ip: str = "10.0.0.1"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.fixture
def alice(acme):
    return make_user("alice", acme, "lead")


def test_the_right_password_logs_in_after_a_few_wrong_ones(alice):
    client = Client()
    for _ in range(4):
        assert attempt(client, LOGIN, "alice", "wrong").status_code == 200  # the form again

    response = attempt(client, LOGIN, "alice", "demo")

    assert response.status_code == 302


def test_five_wrong_passwords_lock_the_account_even_against_the_right_one(alice):
    client = Client()
    for _ in range(5):
        attempt(client, LOGIN, "alice", "wrong")

    response = attempt(client, LOGIN, "alice", "demo")

    assert response.status_code == 429
    assert response["Retry-After"] == str(15 * 60)
    assert b"Too many wrong passwords" in response.content
    assert "_auth_user_id" not in client.session


def test_the_lock_is_per_address_and_per_user(alice, acme):
    make_user("bob", acme, "reviewer")
    for _ in range(5):
        attempt(Client(), LOGIN, "alice", "wrong", ip="10.0.0.1")

    assert attempt(Client(), LOGIN, "alice", "demo", ip="10.0.0.2").status_code == 302
    assert attempt(Client(), LOGIN, "bob", "demo", ip="10.0.0.1").status_code == 302


def test_the_lock_lifts_after_the_cool_off(alice):
    for _ in range(5):
        attempt(Client(), LOGIN, "alice", "wrong")
    assert attempt(Client(), LOGIN, "alice", "demo").status_code == 429

    with time_machine.travel(timezone.now() + timedelta(minutes=16)):
        assert attempt(Client(), LOGIN, "alice", "demo").status_code == 302


def test_the_admin_login_is_throttled_too():
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("root", password="demo")
    for _ in range(5):
        attempt(Client(), ADMIN_LOGIN, "root", "wrong")

    response = attempt(Client(), ADMIN_LOGIN, "root", "demo")

    assert response.status_code == 429


def test_a_forged_forwarded_for_header_does_not_dodge_the_lock(alice):
    """With no trusted proxy configured, X-Forwarded-For is the client's own claim: ignored."""
    for n in range(5):
        Client().post(
            LOGIN,
            {"username": "alice", "password": "wrong"},
            REMOTE_ADDR="10.0.0.1",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}",
        )

    response = Client().post(
        LOGIN,
        {"username": "alice", "password": "demo"},
        REMOTE_ADDR="10.0.0.1",
        HTTP_X_FORWARDED_FOR="192.0.2.99",
    )

    assert response.status_code == 429
