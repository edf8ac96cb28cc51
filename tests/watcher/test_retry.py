"""The embedder goes away: the watcher backs off, keeps the queue, and drains it when it returns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.support.fakes.ollama import FakeOllama
from tests.watcher.conftest import counters, found, settled


@pytest.mark.slow
def test_queue_survives_an_embedder_outage(
    kb_dir: Path, start_watcher, fake_ollama: FakeOllama
) -> None:
    embedder = {"provider": "ollama", "model": "nomic-embed-text", "dim": 768}
    (kb_dir / "before.md").write_text("Penguins live in the south.")
    watcher = start_watcher(kb_dir, embedder=embedder | {"base_url": fake_ollama.url})
    wait_for(lambda: found(watcher, "penguins") == {"before.md"})
    calls = len(fake_ollama.calls("/api/embed"))
    assert calls == 1

    fake_ollama.stop()
    for n in range(3):
        (kb_dir / f"during{n}.md").write_text(f"Puffins{n} nest on cliffs.")
    (kb_dir / "before.md").unlink()

    def paused() -> dict | None:
        row = watcher.status()["collections"]["notes"]
        return row if row["last_error"] and row["queue"] >= 4 else None

    row = wait_for(paused)
    assert "Ollama at" in row["last_error"]["message"]
    assert row["retry_in_s"] is not None
    assert found(watcher, "penguins") == {"before.md"}  # nothing applied half-way
    failures = counters(watcher)["errors"]
    wait_for(lambda: counters(watcher)["errors"] > failures)  # it keeps retrying

    fake_ollama.start()  # same port
    wait_for(lambda: settled(watcher) and found(watcher, "penguins") == set())
    assert {found(watcher, f"puffins{n}").pop() for n in range(3)} == {
        f"during{n}.md" for n in range(3)
    }
    # the three quiet files went out in one embedding call
    assert len(fake_ollama.calls("/api/embed")) == calls + 1
    assert watcher.status()["collections"]["notes"]["retry_in_s"] is None
