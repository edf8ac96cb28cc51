"""A PNG of each console page, so a reviewer can look at it without running a browser.

Starts `rag-hub serve --watch` on copies of the shipped kb folders (with the repo's
collections.yaml, a temporary data dir, and no LLM: answers are extractive), waits until it has
indexed them, then drives Debian's `chromium` through Playwright and writes into `--out`
(git-ignored `screenshots/` by default): the collections overview (desktop and phone width), a
collection with a file's chunks open and an upload done, the Ask page with an answer and its
sources, the Keys page, Swagger UI and ReDoc. `--url` photographs a hub that already runs instead.

    PYTHONPATH=. .venv/bin/python scripts/screenshots.py
    PYTHONPATH=. .venv/bin/python scripts/screenshots.py --url http://127.0.0.1:8000 --key $RAG_API_KEY
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_api.config import read_yaml, yaml_text  # noqa: E402
from scripts.evallib.server import free_port  # noqa: E402

QUESTION = "How many days do I have to ask for a refund?"
UPLOAD = "# Office plants\n\nThe ficus by the window is watered every Tuesday by the front desk.\n"
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "screenshots")
    parser.add_argument("--url", help="a running hub (default: start one on copies of kb/)")
    parser.add_argument("--key", default="", help="the key the console uses (admin to upload)")
    parser.add_argument("--collection", default="docs")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("no chromium executable: apt-get install chromium", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with hub(args.url) as url:
        written = photograph(url, args.key, args.collection, args.out, chromium)
    for path in written:
        print(path.relative_to(args.out.parent) if path.is_relative_to(REPO) else path)
    return 0


@contextmanager
def hub(url: str | None) -> Iterator[str]:
    """The hub to photograph: `url`, or a fresh `rag-hub serve --watch` on copies of kb/."""
    if url:
        yield url.rstrip("/")
        return
    with tempfile.TemporaryDirectory(prefix="rag-hub-screens-") as tmp:
        root = Path(tmp)
        config = read_yaml(
            (REPO / "collections.yaml").read_text(encoding="utf-8"), REPO / "collections.yaml"
        )
        for name, entry in config["collections"].items():
            if entry.get("kb"):
                shutil.copytree(REPO / entry["kb"], root / "kb" / name)
                entry["kb"] = str(root / "kb" / name)
        (root / "collections.yaml").write_text(yaml_text(config))
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "RAG_CONFIG": str(root / "collections.yaml"),
            "RAG_DATA_DIR": str(root / "data"),
            "RAG_PORT": str(port),
            "RAG_OLLAMA_URL": f"http://127.0.0.1:{free_port()}",  # nothing there: extractive
            "RAG_MODEL_CACHE": os.environ.get("RAG_MODEL_CACHE", str(REPO / "data" / "models")),
            "HF_HUB_OFFLINE": "1",
        }
        with (root / "serve.log").open("w") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "rag_api", "serve", "--watch"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_indexed(base, server, root / "serve.log")
            yield base
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)


def photograph(url: str, key: str, collection: str, out: Path, chromium: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    written: list[Path] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport=DESKTOP)
        page.set_default_timeout(120_000)

        def shot(name: str, full_page: bool = True) -> None:
            path = out / f"{name}.png"
            page.screenshot(path=str(path), full_page=full_page)
            written.append(path)

        page.goto(url + "/console/keys")
        if key:
            page.fill("#key-input", key)
            page.click("#key-form button[type=submit]")
        page.wait_for_selector("#key-result:not(:empty)")
        shot("keys")

        headers = {"Authorization": f"Bearer {key}"} if key else {}
        checked = httpx.post(
            url + "/v1/ops/check", json={"sample": 0}, headers=headers, timeout=600
        )
        checked.raise_for_status()  # the overview shows the last check's result
        page.goto(url + "/")
        page.wait_for_selector("article[data-collection]")
        shot("collections")
        page.set_viewport_size(PHONE)
        shot("collections-phone")
        page.set_viewport_size(DESKTOP)

        page.goto(f"{url}/console/collections/{collection}")
        page.wait_for_selector("#files tbody tr, #files-status:not(:empty)")
        upload = out / "office-plants.md"
        upload.write_text(UPLOAD, encoding="utf-8")
        try:
            page.set_input_files("#file-input", str(upload))
            page.wait_for_selector(".upload[data-status]")
        finally:
            upload.unlink()
        first = page.locator("#files tbody tr button.link").first
        if first.count():
            first.click()
            page.wait_for_selector("#chunks li")
        shot("collection")

        page.goto(f"{url}/console/ask?collection={collection}")
        page.wait_for_selector(f"#ask-collection option[value='{collection}']", state="attached")
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        page.wait_for_selector("#answer-meta[data-done]")
        shot("ask")

        for name in ("docs", "redoc"):
            page.goto(f"{url}/{name}")
            page.wait_for_load_state("networkidle")
            time.sleep(1)  # the viewers render after loading the schema
            shot(name, full_page=False)
        browser.close()
    return written


def _wait_indexed(base: str, server: subprocess.Popen, log: Path) -> None:
    """Until every collection with a kb folder holds chunks (the watcher's first reconcile)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"rag-hub serve exited:\n{log.read_text()}")
        try:
            rows = httpx.get(base + "/v1/overview", timeout=10).json()["collections"]
            if all(row["points"] > 0 for row in rows if row["files"]):
                return
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"the hub did not index its kb folders in time:\n{log.read_text()}")


if __name__ == "__main__":
    sys.exit(main())
