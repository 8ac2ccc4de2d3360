"""
Fixtures against a real Meridian api: MERIDIAN_URL and MERIDIAN_API_KEY name it and a key with
rw access to the metrics under MERIDIAN_TEST_PREFIX (default ``pyclient.``); MERIDIAN_TEST_PEER
names another user to share files with. Without them the tests that need the service fail
(they are never skipped: a run that tested nothing must not look green).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from typing import Iterator

import pytest

from meridian_client import AsyncClient, Client, RetryPolicy


def _service() -> tuple[str, str]:
    url, key = os.environ.get("MERIDIAN_URL"), os.environ.get("MERIDIAN_API_KEY")
    if not url or not key:
        pytest.fail("MERIDIAN_URL and MERIDIAN_API_KEY must name a running api and a key with rw on MERIDIAN_TEST_PREFIX")
    return url, key


@pytest.fixture(scope="session")
def client() -> Iterator[Client]:
    url, key = _service()
    with Client(url, key, retry=RetryPolicy(attempts=20)) as c:
        yield c


@pytest.fixture
def async_client() -> AsyncClient:
    url, key = _service()
    return AsyncClient(url, key)


@pytest.fixture(scope="session")
def run_prefix() -> str:
    """A prefix of this run's metrics: the test user's prefix and a run id, so reruns on one service never meet."""
    return f"{os.environ.get('MERIDIAN_TEST_PREFIX', 'pyclient.')}{uuid.uuid4().hex[:8]}."


@pytest.fixture
def prefix(run_prefix: str, request: pytest.FixtureRequest) -> str:
    """A prefix of one test's metrics."""
    digest = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:8]
    return f"{run_prefix}{request.node.originalname[:32]}.{digest}."


@pytest.fixture(scope="session")
def peer() -> str:
    return os.environ.get("MERIDIAN_TEST_PEER", "pyclient-peer")
