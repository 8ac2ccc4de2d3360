"""A burst past the service's rate limit: every call ends well, after waiting out the 429s' Retry-After."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from meridian_client import Client, RetryPolicy


def test_a_burst_past_the_rate_limit_is_retried_after_retry_after() -> None:
    rate = float(os.environ.get("MERIDIAN_TEST_RATE_PER_SECOND", "20"))
    burst = int(os.environ.get("MERIDIAN_TEST_RATE_BURST", "40"))
    calls = burst + int(rate * 3)
    statuses: list[int] = []
    waits: list[str] = []

    def seen(response: httpx.Response) -> None:
        statuses.append(response.status_code)
        if response.status_code == 429:
            waits.append(response.headers.get("Retry-After", ""))

    http = httpx.Client(base_url=os.environ["MERIDIAN_URL"], headers={"Authorization": f"Bearer {os.environ['MERIDIAN_API_KEY']}"}, event_hooks={"response": [seen]})
    with Client(retry=RetryPolicy(attempts=30), http=http) as client, ThreadPoolExecutor(8) as pool:
        started = time.monotonic()
        results = list(pool.map(lambda _: client.tasks(limit=1), range(calls)))
        took = time.monotonic() - started
    assert len(results) == calls
    assert statuses.count(200) == calls
    assert statuses.count(429) > 0, "the burst never met the rate limit: the retry was not exercised"
    assert all(w.isdigit() and int(w) >= 1 for w in waits)
    # Past the burst the calls can go no faster than the rate: the client waited, not hammered.
    assert took >= (calls - burst) / rate * 0.8
    assert statuses.count(429) < calls * 3, f"{statuses.count(429)} refusals for {calls} calls: Retry-After was not honoured"
