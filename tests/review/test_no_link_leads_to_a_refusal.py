"""A page never offers what its reader may not open (issue 28): every link on every page each demo
role reaches by clicking from their tenant's home answers something other than 403. A link to a
page the role is refused is a dead end that says "Not allowed"; the page should not show it. And a
refusal is one log line, not a traceback: it is the application working. (The same walk reads
each page for "0 minutes ago".)"""

import logging
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.review.test_words_not_ids import ROLES, demo, walk  # noqa: F401 (demo: a fixture)

pytestmark = pytest.mark.django_db


class Refusals(Client):
    """A browser that notes each page it was refused."""

    def __init__(self):
        super().__init__()
        self.refused = []

    def get(self, path, *args, **kwargs):
        response = super().get(path, *args, **kwargs)
        if response.status_code == 403:
            self.refused.append(path)
        return response


@pytest.mark.parametrize("username", ROLES)
def test_no_link_a_role_sees_answers_403(demo, username):  # noqa: F811
    client = Refusals()
    client.force_login(get_user_model().objects.get(username=username))

    pages = list(walk(client, "/t/acme/"))

    assert len(pages) >= (5 if username == "acme-labeler" else 40)
    assert client.refused == []
    # The demo's TTL sweep ran as it was seeded: "just now", never "0 minutes ago".
    assert [path for path, text in pages if re.search(r"\b0\s+minutes", text)] == []


def test_a_refused_page_is_one_log_line_without_a_traceback(client, acme, auditor, caplog):
    client.force_login(auditor)

    with caplog.at_level(logging.INFO, logger="django.request"):
        assert client.get("/t/acme/review/team/").status_code == 403

    refused = [record for record in caplog.records if record.name == "django.request"]
    assert [(r.levelname, r.getMessage()) for r in refused] == [
        ("WARNING", "Forbidden (Permission denied): /t/acme/review/team/")
    ]
    assert refused[0].exc_info is None and "Traceback" not in caplog.text


def test_a_server_error_keeps_its_traceback(caplog):
    try:
        raise RuntimeError("the database went away")
    except RuntimeError:
        logging.getLogger("django.request").error(
            "Internal Server Error: /t/acme/", exc_info=True, extra={"status_code": 500}
        )

    assert caplog.records[-1].exc_info is not None and "Traceback" in caplog.text
