"""A real `rag-hub serve --watch` subprocess on loopback, and headless Chromium to drive the console.

The browser is Debian's `chromium` driven through Playwright's Python API (no browser download);
tests that need it skip, with one line saying why, when either is missing.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port, serve_process, wait_for

READER, ADMIN = "reader-secret", "admin-secret"
FAQ = "## Refunds\n\nRefunds are possible within 30 days of purchase, with the receipt.\n"
HANDBOOK = "## Parking\n\nStaff park on level two of the garage; visitors use level one.\n"


def kb_folder(tmp_path: Path) -> Path:
    """A kb folder with two small policies (two chunks)."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text(FAQ)
    (kb / "handbook.md").write_text(HANDBOOK)
    return kb


def expect(locator: Any) -> Any:
    """Playwright's expect with room for indexing on a loaded machine (imported late: the tests
    are collected without playwright installed too, and then skip)."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=60_000)
    return playwright_expect(locator)


def ask(page: Any, url: str, collection: str, question: str) -> None:
    """Ask `question` of `collection` on the console's ask page, and wait for the whole answer."""
    page.goto(f"{url}/console/ask?collection={collection}")
    page.fill("#question", question)
    page.click("#ask-button")
    expect(page.locator("#answer-meta")).to_have_attribute("data-done", "true")


@dataclass
class HubProcess:
    url: str
    process: subprocess.Popen
    log: Path

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def sources(self, collection: str, key: str | None = None) -> list[str]:
        """The sources the collection holds chunks of now."""
        with self.client(key) as http:
            listing = http.get("/v1/rag/sources", params={"collection": collection})
        assert listing.status_code == 200, listing.text
        return [item["source"] for item in listing.json()["items"]]

    def wait_sources(self, collection: str, expected: list[str], key: str | None = None) -> None:
        """Wait until the watcher has indexed exactly `expected` (sorted source names)."""
        wait_for(lambda: self.sources(collection, key) == expected, timeout=120, interval=0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _ready(url: str, process: subprocess.Popen, log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"rag-hub serve exited with {process.returncode}:\n{log.read_text()}")
    try:
        return httpx.get(url + "/ready", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture
def hub_process(tmp_path: Path) -> Iterator[Callable[..., HubProcess]]:
    """start(config, port=None, **env) -> a `rag-hub serve --watch` answering /ready; stopped
    at the end."""
    started: list[HubProcess] = []

    def start(config: Path, port: int | None = None, **env: str) -> HubProcess:
        port = port or free_port()
        log = tmp_path / f"serve-{port}.log"
        environment = {
            "RAG_CONFIG": str(config),
            "RAG_DATA_DIR": str(tmp_path / "data"),
            "RAG_PORT": str(port),
            "RAG_WATCH_DEBOUNCE_S": "0.2",
            **env,
        }
        with log.open("w") as output:
            process = serve_process(environment, "--watch", stdout=output, stderr=subprocess.STDOUT)
        hub = HubProcess(f"http://127.0.0.1:{port}", process, log)
        started.append(hub)
        # the first start of a fresh checkout exports MiniLM to ONNX (minutes on a busy machine)
        wait_for(lambda: _ready(hub.url, process, log), timeout=600, interval=0.2)
        return hub

    yield start
    for hub in started:
        hub.stop()


def _browser_missing() -> str | None:
    if shutil.which("chromium") is None:
        return "no chromium executable (Debian package chromium): browser tests skipped"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed: browser tests skipped"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian chromium under Playwright, one per module: Playwright's sync API runs an
    event loop in this thread while it is open, and tests elsewhere call asyncio.run."""
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=["--no-sandbox"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab (its own sessionStorage) that fails the test on any script error."""
    context = browser.new_context()
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.set_default_timeout(60_000)
    yield tab
    context.close()
    assert not errors, f"script errors in the console: {errors}"
