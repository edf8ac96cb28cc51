"""Lanes (rag_api.jobs.lane): one worker runs a lane's jobs in order, one at a time; a bounded
lane refuses with 429 and a Retry-After; a stopped lane leaves its jobs queued for the next start."""

from __future__ import annotations

import threading
import time

import pytest

from rag_api.errors import QueueFull
from rag_api.jobs.book import Jobs
from rag_api.jobs.lane import RETRY_AFTER_DEFAULT_S, RETRY_AFTER_MAX_S, Stopped
from tests.conftest import wait_for


def test_jobs_run_in_order_one_at_a_time() -> None:
    jobs = Jobs()
    lane = jobs.lane("backup")
    assert jobs.lane("backup") is lane
    ran: list[int] = []
    workers: list[threading.Thread] = []
    running = threading.Semaphore(1)

    def work(n: int):
        def run(_):
            assert running.acquire(blocking=False), "two jobs of a lane at once"
            workers.append(threading.current_thread())
            ran.append(n)
            running.release()
            return {"n": n}

        return run

    made = [jobs.create("backup", []) for _ in range(5)]
    for n, job in enumerate(made):
        lane.submit(job, work(n))
    wait_for(lambda: all(jobs.get(job.id)["status"] == "done" for job in made))
    assert ran == [0, 1, 2, 3, 4]
    # its worker is named for the lane (thread dumps, logs) and does not hold the process at exit
    assert {(t.name, t.daemon) for t in workers} == {("rag-backup", True)}
    assert [jobs.get(job.id)["result"] for job in made] == [{"n": n} for n in range(5)]


def test_a_full_lane_refuses_with_retry_after_and_a_failure_does_not_stop_it() -> None:
    jobs = Jobs()
    lane = jobs.lane("upload", capacity=1)
    release = threading.Event()
    first, second, third = (jobs.create("upload", ["docs"], files=[]) for _ in range(3))
    with lane.slot("full"):
        lane.submit(first, lambda _: release.wait(30))
    wait_for(lambda: jobs.get(first.id)["status"] == "indexing")
    with lane.slot("full"):
        lane.submit(second, lambda _: 1 / 0)  # fails: the next job still runs
    with pytest.raises(QueueFull) as refused, lane.slot("the queue is full"):
        pass
    assert refused.value.message == "the queue is full"
    assert int(refused.value.headers["Retry-After"]) >= 1
    release.set()
    wait_for(lambda: jobs.get(second.id)["status"] == "failed")
    with lane.slot("full"):
        lane.submit(third, lambda _: {"ok": True})
    wait_for(lambda: jobs.get(third.id)["status"] == "done")


def test_a_stopped_lane_leaves_its_jobs_queued() -> None:
    jobs = Jobs()
    lane = jobs.lane("upload", capacity=4)
    started = threading.Event()

    def long(_):
        started.set()
        if lane.stopping.wait(30):
            raise Stopped

    cut, waiting = jobs.create("upload", [], files=[]), jobs.create("upload", [], files=[])
    lane.submit(cut, long)
    lane.submit(waiting, lambda _: {})
    assert started.wait(10)
    lane.stop()
    assert [jobs.get(j.id)["status"] for j in (cut, waiting)] == ["queued", "queued"]
    late = jobs.create("upload", [], files=[])
    lane.submit(late, lambda _: {})  # while stopped: left queued, not run
    assert [j.id for j in jobs.unfinished("upload")] == [cut.id, waiting.id, late.id]

    lane.resume()
    for job in jobs.unfinished("upload"):
        lane.submit(job, lambda _: {})
    wait_for(lambda: {jobs.get(j.id)["status"] for j in (cut, waiting, late)} == {"done"})


def test_retry_after_is_the_mean_job_time_times_the_jobs_ahead_within_bounds() -> None:
    jobs = Jobs()
    lane = jobs.lane("backup")
    assert lane.retry_after() == RETRY_AFTER_DEFAULT_S  # no job has run yet
    release = threading.Event()
    lane.submit(jobs.create("backup", []), lambda _: release.wait(30))
    wait_for(lambda: not lane._waiting)  # the first is running: none ahead of a caller
    # the recent job times (the worker records them; set here rather than waited for)
    lane._durations.extend([2.0, 4.0])
    assert lane.retry_after() == 3  # the mean, for the one job running
    lane._durations.clear()
    lane._durations.append(0.1)
    assert lane.retry_after() == 1  # rounded up, never under a second
    for _ in range(4):
        lane.submit(jobs.create("backup", []), lambda _: {})
    lane._durations.extend([2.9, 3.0])  # mean 2.0, four waiting
    assert lane.retry_after() == 8
    lane._durations.append(400.0)
    assert lane.retry_after() == RETRY_AFTER_MAX_S
    lane._durations.extend([1.0] * 20)  # the last 20 jobs: the slow one has left the window
    assert lane.retry_after() == 4
    release.set()


def test_a_stop_returns_on_an_idle_lane_and_after_its_timeout() -> None:
    jobs = Jobs()
    jobs.lane("check").stop()  # never ran a job: nothing to wait for
    lane = jobs.lane("backup")
    release, started = threading.Event(), threading.Event()
    lane.submit(jobs.create("backup", []), lambda _: (started.set(), release.wait(30)))
    assert started.wait(10)
    began = time.monotonic()
    lane.stop(timeout=0.2)  # a job that does not check `stopping` does not hold the stop
    assert time.monotonic() - began < 5
    release.set()
