"""Safe by default (issue 8): no debug pages, no public key, the documented production settings
pass `check --deploy`, static files are served without DEBUG, every page has a CSP."""

import base64
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client, override_settings

ROOT = Path(settings.BASE_DIR)
TEMPLATES = ROOT / "templates"


def django_process(code: str, env: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    """`code` run in a fresh Python with the production settings module and exactly this env
    (plus PATH), so nothing this test process set leaks in."""
    base = {
        "PATH": os.environ["PATH"],
        "VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "memory_review.settings",
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + code],
        env={**base, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_debug_is_off_unless_asked_for(tmp_path):
    result = django_process(
        "from django.conf import settings; print(settings.DEBUG)", {"SECRET_KEY": "k" * 50}, tmp_path
    )
    assert result.stdout.strip() == "False", result.stderr


def test_without_a_secret_key_start_up_stops_naming_it(tmp_path):
    result = django_process("print('started')", {}, tmp_path)

    assert result.returncode != 0 and "started" not in result.stdout
    assert "SECRET_KEY is not set" in result.stderr and "SECRET_KEY_FILE" in result.stderr


def test_the_key_can_come_from_a_file_as_a_docker_secret_is_mounted(tmp_path):
    (tmp_path / "key").write_text("from-a-file-" + "x" * 40 + "\n")
    result = django_process(
        "from django.conf import settings; print(settings.SECRET_KEY)",
        {"SECRET_KEY_FILE": str(tmp_path / "key")},
        tmp_path,
    )
    assert result.stdout.strip() == "from-a-file-" + "x" * 40, result.stderr


def documented_production_env() -> dict[str, str]:
    """The `env` block of docs/deploy.md, as an operator would paste it."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    block = re.search(r"```env\n(.*?)```", text, re.S).group(1)
    return dict(line.split("=", 1) for line in block.splitlines() if line.strip())


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    env = documented_production_env()
    (tmp_path / "secret").write_text(os.urandom(40).hex())
    env["SECRET_KEY_FILE"] = str(tmp_path / "secret")  # where the docs mount it, here

    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env={"PATH": os.environ["PATH"], "VAR_DIR": str(tmp_path), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_does_complain_about_the_laptop_defaults(tmp_path):
    """The check above can fail: without the production settings it lists what is missing."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env={"PATH": os.environ["PATH"], "VAR_DIR": str(tmp_path), "SECRET_KEY": os.urandom(40).hex()},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stderr


@pytest.mark.django_db
def test_an_unknown_page_is_the_apps_404_not_a_list_of_url_patterns(client, lead):
    client.force_login(lead)
    response = client.get("/no/such/page/")

    assert response.status_code == 404
    assert b"URLconf" not in response.content and b"api/v1" not in response.content
    assert b"There is nothing here for you" in response.content


@pytest.mark.django_db
def test_an_oversized_anonymous_post_to_the_login_page_is_a_plain_400():
    client = Client(enforce_csrf_checks=True)
    oversized = "username=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    form = "application/x-www-form-urlencoded"

    response = client.post("/accounts/login/", data=oversized, content_type=form)
    assert response.status_code == 403  # no CSRF cookie: refused before the body is read
    assert b"SECRET_KEY" not in response.content and b"Traceback" not in response.content

    client.get("/accounts/login/")  # now with a CSRF cookie, so the body is read, and is too big
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/accounts/login/", data=f"csrfmiddlewaretoken={token}&{oversized}", content_type=form
    )
    assert response.status_code == 400
    assert b"Bad request" in response.content
    assert b"SECRET_KEY" not in response.content and b"Traceback" not in response.content


def inline_scripts(html: str) -> list[str]:
    scripts = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", html)
    handlers = re.findall(r"""\s(on[a-z]+)=["']""", html)
    return scripts + handlers + re.findall(r"javascript:", html)


def test_no_template_has_an_inline_script_or_event_handler():
    found = {t.name: inline_scripts(t.read_text()) for t in TEMPLATES.rglob("*.html")}
    assert {name: hits for name, hits in found.items() if hits} == {}
    # the check finds what it looks for
    assert inline_scripts('<script>alert(1)</script><a onclick="x()" href="javascript:y()">') != []
    assert (
        inline_scripts('<script src="/static/a.js"></script><script type="application/json">{}</script>')
        == []
    )


@pytest.mark.django_db
def test_every_page_carries_a_content_security_policy_without_inline_scripts(client, lead):
    client.force_login(lead)
    for path in ("/t/acme/", "/t/acme/review/", "/accounts/login/", "/no/such/page/"):
        policy = client.get(path)["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        assert directives["script-src"] == "'self'", path
        assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"


@pytest.mark.django_db
def test_styles_come_from_this_origin_and_the_500_pages_own_block_alone(client, lead):
    """No inline style but the 500 page's, allowed by its hash: a `style=` attribute or another
    <style> block would be refused by the browser, so none may be in a template."""
    client.force_login(lead)
    directives = dict(
        part.strip().split(" ", 1) for part in client.get("/t/acme/")["Content-Security-Policy"].split(";")
    )
    sources = directives["style-src"].split()
    assert "'unsafe-inline'" not in sources and sources[0] == "'self'"
    block = re.search(r"<style>(.*?)</style>", (TEMPLATES / "500.html").read_text(), flags=re.S).group(1)
    assert sources[1:] == [f"'sha256-{base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()}'"]
    inline = {
        t.relative_to(TEMPLATES).as_posix(): re.findall(r"<style\b|\sstyle=", t.read_text())
        for t in TEMPLATES.rglob("*.html")
    }
    assert {name: hits for name, hits in inline.items() if hits} == {"500.html": ["<style"]}


def test_htmx_is_configured_without_eval_or_injected_styles():
    head = (TEMPLATES / "base.html").read_text()
    config = re.search(r"""name="htmx-config" content='([^']+)'""", head).group(1)
    assert '"allowEval": false' in config and '"includeIndicatorStyles": false' in config


def test_passwords_are_validated():
    for weak in ("demo", "password123", "12345678901"):
        with pytest.raises(ValidationError):
            validate_password(weak)
    validate_password("a pass phrase people remember")


@pytest.mark.django_db
def test_htmx_fragments_and_pages_say_they_vary_on_hx_request(client, lead):
    client.force_login(lead)
    page = client.get("/t/acme/review/")
    fragment = client.get("/t/acme/review/", HTTP_HX_REQUEST="true")

    assert page.status_code == fragment.status_code == 200
    assert len(fragment.content) < len(page.content)  # a fragment, not the page
    for response in (page, fragment):
        assert "HX-Request" in response["Vary"]
    assert "HX-Request" not in client.get("/api/v1/openapi.json").get("Vary", "")


@pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="static files do not depend on the database: the SQLite pass of make test collects them once",
)
def test_collected_static_files_are_served_hashed_compressed_and_cached_without_debug(tmp_path):
    production = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}
    with override_settings(
        STATIC_ROOT=tmp_path,
        STORAGES={**settings.STORAGES, "staticfiles": production},
        WHITENOISE_USE_FINDERS=False,
    ):
        call_command("collectstatic", interactive=False, verbosity=0)
        client = Client()  # a new handler: WhiteNoise reads STATIC_ROOT when it starts
        page = client.get("/accounts/login/").content.decode()
        script = re.search(r'src="(/static/js/keys\.[0-9a-f]{12}\.js)"', page).group(1)
        response = client.get(script, HTTP_ACCEPT_ENCODING="br, gzip")

        assert response.status_code == 200
        assert response["Content-Encoding"] == "br"
        assert "immutable" in response["Cache-Control"] and "max-age=315360000" in response["Cache-Control"]
        assert client.get("/static/js/keys.js").status_code == 200  # the unhashed name still works
