"""The circuit breaker's states, on a clock the test moves."""

from __future__ import annotations

from rag_api.llm.breaker import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def opened(clock: Clock) -> CircuitBreaker:
    breaker = CircuitBreaker("test", failures=3, cooldown=30, clock=clock)
    for _ in range(3):
        assert breaker.allow()
        breaker.failed()
    return breaker


def test_failures_in_a_row_open_the_circuit_and_a_success_resets_the_count() -> None:
    breaker = CircuitBreaker("test", failures=3, cooldown=30, clock=Clock())
    for _ in range(5):  # two failures, then a success: never three in a row
        breaker.failed()
        breaker.failed()
        breaker.succeeded()
    assert breaker.state == "closed" and breaker.allow()
    breaker.failed(), breaker.failed(), breaker.failed()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.describe() == {"state": "open", "failures": 3, "retry_in_s": 30.0}


def test_after_the_cooldown_one_probe_goes_through_and_its_success_closes() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 29
    assert not breaker.allow() and breaker.retry_in() == 1
    clock.now += 1
    assert breaker.state == "half-open"
    assert breaker.allow()  # the probe
    assert not breaker.allow() and not breaker.allow()  # nobody else while it runs
    breaker.succeeded()
    assert breaker.state == "closed" and breaker.allow() and breaker.retry_in() == 0


def test_a_failed_probe_opens_for_another_cooldown() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 30
    assert breaker.allow()
    breaker.failed()
    assert breaker.state == "open" and breaker.retry_in() == 30
    clock.now += 30
    assert breaker.allow()


def test_an_abandoned_probe_lets_the_next_call_probe() -> None:
    clock = Clock()
    breaker = opened(clock)
    clock.now += 30
    assert breaker.allow()
    breaker.abandoned()  # the client went away before the LLM said anything
    assert breaker.state == "half-open" and breaker.allow()
