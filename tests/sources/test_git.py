"""The git source on real repositories made with the `git` CLI, as a local path and served by
`git daemon`: the branch's files under `paths`, and each re-sync reads only the files the new
commits added, changed or renamed, removes the deleted ones, and reuses a renamed file's vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_api.errors import SourceUnavailable
from tests.conftest import LOCAL_ENGINES
from tests.sources.conftest import documents, sync
from tests.support.git_repo import GitDaemon, Repo

FILES = {
    "docs/install.md": "# Install\n\nRun the installer, then sign in with your workspace key.\n",
    "docs/usage/search.md": "# Search\n\nSearch takes quotes for exact phrases and a minus to exclude.\n",
    "docs/usage/export.txt": "Exports are CSV files sent to the owner's address within an hour.\n",
    "docs/.hidden.md": "# Hidden\n\nNot a document.\n",
    "src/app.py": "print('not under paths')\n",
    "README.md": "# Handbook\n\nThe team's handbook.\n",
}


def git_block(repo: str, **settings: object) -> dict[str, object]:
    block = {
        "name": "handbook",
        "kind": "git",
        "repo": repo,
        "branch": "main",
        "paths": ["docs/**", "README.md"],
        "link": "https://git.example.com/team/handbook/blob/{commit}/{path}",
    }
    return {**block, **settings}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path / "repos" / "handbook")
    made.write(FILES).commit("first")
    return made


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_the_first_sync_reads_the_branch_files_under_paths(engine, repo, source_hub) -> None:
    hub = source_hub(git_block(str(repo.path)), engine=engine)
    report = sync(hub)
    held = documents(hub)
    names = {"docs/install.md", "docs/usage/search.md", "docs/usage/export.txt", "README.md"}
    assert set(held) == {f"handbook:{name}" for name in names}
    commit = repo.git("rev-parse", "HEAD").strip()
    install = held["handbook:docs/install.md"][0]
    assert install.url == f"https://git.example.com/team/handbook/blob/{commit}/docs/install.md"
    assert install.title == "# Install" and report.indexed == 4


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_a_resync_reads_only_the_diff(engine, repo, source_hub, monkeypatch) -> None:
    from rag_api.sources.git import Repository

    read: list[list[str]] = []
    original = Repository._read

    def counted(self: Repository, blobs: list) -> object:
        read.append([blob.path for blob in blobs])  # which blobs each sync asked git for
        return original(self, blobs)

    monkeypatch.setattr(Repository, "_read", counted)
    hub = source_hub(git_block(str(repo.path)), engine=engine)
    sync(hub)
    before = documents(hub)
    assert sync(hub).unchanged == 4 and read[-1] == []  # nothing changed: no blob read

    repo.write({"docs/install.md": "# Install\n\nRun the new installer; no key is needed.\n"})
    repo.write({"docs/usage/new.md": "# Badges\n\nBadges are printed at the front desk.\n"})
    repo.move("docs/usage/search.md", "docs/search.md")
    repo.delete("docs/usage/export.txt")
    repo.commit("add, modify, rename, delete")

    report = sync(hub)
    after = documents(hub)
    assert sorted(read[-1]) == ["docs/install.md", "docs/search.md", "docs/usage/new.md"]
    assert sorted(report.removed) == ["docs/usage/export.txt", "docs/usage/search.md"]
    assert set(after) == {
        f"handbook:{name}"
        for name in ("docs/install.md", "docs/search.md", "docs/usage/new.md", "README.md")
    }
    moved = after["handbook:docs/search.md"]
    assert [c.text for c in moved] == [c.text for c in before["handbook:docs/usage/search.md"]]
    assert report.stats.reused == len(moved)  # the renamed file's vectors, not embedded again
    assert after["handbook:README.md"][0].raw == before["handbook:README.md"][0].raw


def test_a_repository_served_by_git_daemon(tmp_path, repo, source_hub) -> None:
    with GitDaemon(tmp_path / "repos") as daemon:
        hub = source_hub(git_block(f"{daemon.url}/handbook"))
        assert sync(hub).indexed == 4
        repo.write({"README.md": "# Handbook\n\nRevised.\n"}).commit()
        again = sync(hub)
    assert again.indexed == 1 and again.unchanged == 3


def test_an_unreachable_repository_fails_and_removes_nothing(tmp_path, repo, source_hub) -> None:
    hub = source_hub(git_block(str(repo.path)))
    sync(hub)
    before = documents(hub)
    repo.path.rename(tmp_path / "moved")
    with pytest.raises(SourceUnavailable, match="git source 'handbook'.*git fetch"):
        sync(hub)
    assert documents(hub) == before


def test_a_missing_branch_is_named(repo, source_hub) -> None:
    hub = source_hub(git_block(str(repo.path), branch="release"))
    with pytest.raises(SourceUnavailable, match="release"):
        sync(hub)
