"""When a request to an embedding server is tried again, and after how long.

Retried, as OpenAI's own SDK does: 408, 409, 429 and any 5xx, a connection reset or cut, a request
that timed out, and a refused connection twice (a server restarting; nobody listens after that).
A pause is exponential with jitter (half fixed, half random), at
least what the server asked in `Retry-After` (seconds or an HTTP date) or `retry-after-ms`; a
batch gives up once its next pause would end past its budget (`RetryRules.budget_s`, counted
from its first attempt), so it takes at most the budget and one request's timeout. A query gets
one quick retry at most: its caller is waiting.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

RETRIED_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
SHEDDING_STATUS = frozenset({429, 503})  # the server sheds load: fewer requests in flight
REFUSED_STATUS = frozenset({400, 413, 422})  # the inputs themselves: no retry, find which one
FIRST_PAUSE_S = 0.5
MAX_PAUSE_S = 8.0
QUERY_BUDGET_S = 10.0  # a question's embedding, its one retry included
_RNG = random.Random()


@dataclass(frozen=True)
class RetryRules:
    budget_s: float  # no retry starts later than this after the first attempt
    retries: int | None = None  # at most this many retries (None: as the budget allows)
    max_pause_s: float | None = None  # a longer pause (a server's Retry-After) is not waited


def indexing_rules(budget_s: float) -> RetryRules:
    """A batch of documents: retried until `budget_s` is spent."""
    return RetryRules(budget_s)


QUERY_RULES = RetryRules(QUERY_BUDGET_S, retries=1, max_pause_s=1.0)


def pause_s(attempt: int, asked_s: float | None, rng: random.Random = _RNG) -> float:
    """The pause before retry number `attempt` (1, 2, ...): FIRST_PAUSE_S doubling up to
    MAX_PAUSE_S, half of it random; never shorter than the server asked (plus up to 10%, so
    the batches it turned away do not all come back at the same instant)."""
    ceiling = min(MAX_PAUSE_S, FIRST_PAUSE_S * 2 ** (attempt - 1))
    backoff = ceiling / 2 + rng.uniform(0, ceiling / 2)
    if asked_s is None:
        return backoff
    return max(backoff, asked_s * (1 + rng.uniform(0, 0.1)))


def asked_pause_s(response: httpx.Response, now: float | None = None) -> float | None:
    """The pause the server asked for (`retry-after-ms`, else `Retry-After`), None if none."""
    millis = response.headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))
