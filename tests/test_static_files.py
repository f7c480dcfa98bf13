"""Everything the pages load is served from this server: htmx from django-htmx, our own CSS and
JavaScript (charts are SVG in the page itself). No CDN."""

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def test_a_missing_file_is_not_found_rather_than_an_error():
    assert finders.find("js/nothing-here.js") is None
    assert finders.find("plotly/plotly.min.js") is None  # no chart library: charts come drawn
    assert finders.find("django-htmx/htmx.min.js") is None


@pytest.mark.django_db
def test_no_page_loads_anything_from_another_host(client, lead):
    client.force_login(lead)
    for template in TEMPLATES.rglob("*.html"):
        assert not re.search(r"""(src|href)=["']https?://""", template.read_text()), template
    page = client.get("/t/acme/").content.decode()
    for url in re.findall(r'(?:src|href)="(/static/[^"]+)"', page):
        assert finders.find(url.removeprefix("/static/")), url
