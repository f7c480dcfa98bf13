"""An id in a URL that no database holds (past 2**63 - 1, PostgreSQL's and SQLite's bigint, which
is inside Oracle's NUMBER(19)) is a 400 naming the parameter, on every route that takes one, in
the API and on the pages; it used to reach the query as a 500 (issue 27, item 7)."""

import re
import sys
from pathlib import Path

import pytest

from memory_review.tenancy.tokens import token_create

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from attack_drill import routes  # noqa: E402  (every URL pattern's route, as the drill walks them)

pytestmark = pytest.mark.django_db

PAST_BIGINT = str(2**63)


ID_ROUTES = [route for route in routes() if "<id:" in route]


def filled(route: str, bad: str, value: str) -> str:
    """The route on acme, the parameter `bad` set to `value`, every other id 1."""
    path = route.replace("<slug:slug>", "acme").replace(f"<id:{bad}>", value)
    return "/" + re.sub(r"<id:\w+>", "1", path)


def sent(client, path: str, **extra):
    """The answer to whichever of GET and POST the route takes."""
    response = client.get(path, **extra)
    return client.post(path, **extra) if response.status_code == 405 else response


def test_no_route_reads_an_id_with_djangos_unbounded_int_converter():
    assert [route for route in routes() if "<int:" in route] == []
    assert len(ID_ROUTES) > 25


@pytest.mark.parametrize(
    ("route", "name"),
    [(route, name) for route in ID_ROUTES for name in re.findall(r"<id:(\w+)>", route)],
)
def test_an_id_past_every_database_is_a_400_naming_it(client, acme, lead, route, name):
    if route.startswith("api/"):
        token = token_create(tenant=acme, name="bot")[1]
        response = sent(client, filled(route, name, PAST_BIGINT), HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 400, response.content
        assert "ids run from 1 to 9223372036854775807" in response.json()["fields"][name]
    else:
        client.force_login(lead)
        response = sent(client, filled(route, name, PAST_BIGINT))
        assert response.status_code == 400, response.content
        assert f"{name}: &#x27;{PAST_BIGINT}&#x27; is not an id" in response.content.decode()


def test_redelivering_a_delivery_past_2_63_is_a_400_naming_delivery_in_the_api_and_on_the_page(
    client, acme, lead
):
    token = token_create(tenant=acme, name="bot")[1]
    api = client.post(
        f"/api/v1/t/acme/webhooks/1/deliveries/{PAST_BIGINT}/redeliver", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    client.force_login(lead)
    page = client.post(f"/t/acme/webhooks/{PAST_BIGINT}/deliveries/1/redeliver/")

    assert api.status_code == 400 and api.json() == {
        "error": "invalid input",
        "fields": {"delivery": f"'{PAST_BIGINT}' is not an id: ids run from 1 to 9223372036854775807"},
    }
    assert page.status_code == 400
    assert f"pk: &#x27;{PAST_BIGINT}&#x27; is not an id" in page.content.decode()


def test_an_id_of_thousands_of_digits_or_zero_is_a_400_too_and_the_largest_is_a_plain_404(client, acme, lead):
    client.force_login(lead)

    assert client.get("/t/acme/memories/" + "9" * 5000 + "/").status_code == 400
    assert client.get("/t/acme/memories/0/").status_code == 400
    assert client.get(f"/t/acme/memories/{2**63 - 1}/").status_code == 404
