"""The console with an identity provider's access token in its key field (real Chromium, a real
`rag-hub serve` and a real OpenID provider): the token is a key like any other, scoped by its
claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.access.test_oidc import world
from tests.conftest import free_port
from tests.console.conftest import READER, expect
from tests.support.oidc_provider import make_oidc_provider, oidc_provider, oidc_runtime

__all__ = ["make_oidc_provider", "oidc_provider", "oidc_runtime"]  # the provider's fixtures


@pytest.mark.slow
def test_an_access_token_in_the_key_field_reads_what_its_claims_allow(
    tmp_path: Path, oidc_provider, hub_process, page
) -> None:
    port = free_port()
    config = world(tmp_path, oidc_provider, port)
    hub = hub_process(config, port, RAG_API_KEY=READER)
    hub.wait_sources("support", ["a.md"], READER)
    token = oidc_provider.token("team-b", scope="rag:read:docs")  # groups: sales, read only
    page.goto(hub.url + "/console/keys")
    page.fill("#key-input", token)
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-result")).to_contain_text("Reader key")
    page.goto(hub.url + "/")
    expect(page.locator("article[data-collection=sales]")).to_have_count(1)
    expect(page.locator("article[data-collection=support]")).to_have_count(0)
