"""Background tasks (uploads, file definitions): reading one, waiting for one with long-polls, listing them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional
from urllib.parse import quote

from ._http import Call, Flow
from .errors import TaskFailed, TaskTimeout

ENDED = ("succeeded", "failed")
#: The longest single long-poll asked of the server (it shortens longer ones to its own cap).
LONG_POLL_SECONDS = 30


@dataclass(frozen=True)
class RowError:
    """
    One row the service refused. ``row`` is 1-based: the line of a CSV or NDJSON upload (the
    header is line 1), the element of a JSON one; 0 is the upload as a whole, -1 counts errors
    not shown. ``frame_row`` is the 0-based row of the uploaded frame, when it is one.
    """

    row: int
    column: str
    reason: str
    frame_row: Optional[int] = None


@dataclass(frozen=True)
class Task:
    """A background task as the service shows it (GET /api/v1/tasks/{id})."""

    task_id: str
    kind: str
    status: str
    created_at: str
    updated_at: str
    rows_done: int
    rows_total: Optional[int]
    result: Optional[Mapping[str, Any]]
    errors: tuple[RowError, ...] = field(default_factory=tuple)
    reason: Optional[str] = None

    @property
    def ended(self) -> bool:
        """True once the task has succeeded or failed."""
        return self.status in ENDED

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @classmethod
    def from_json(cls, body: Mapping[str, Any], header_rows: Optional[int] = None) -> "Task":
        """The task of an answer; with ``header_rows`` (lines before the first row of an uploaded frame) each error gets its frame_row."""
        progress = body.get("progress") or {}
        errors = tuple(
            RowError(
                row=int(e["row"]),
                column=str(e.get("column", "")),
                reason=str(e.get("reason", "")),
                frame_row=(int(e["row"]) - header_rows - 1) if header_rows is not None and int(e["row"]) > header_rows else None,
            )
            for e in body.get("errors") or []
        )
        return cls(
            task_id=str(body["task_id"]),
            kind=str(body.get("kind", "")),
            status=str(body["status"]),
            created_at=str(body.get("created_at", "")),
            updated_at=str(body.get("updated_at", "")),
            rows_done=int(progress.get("rows_done") or 0),
            rows_total=progress.get("rows_total"),
            result=body.get("result"),
            errors=errors,
            reason=body.get("reason"),
        )


def task_call(task_id: str, wait: int = 0) -> Call:
    """GET /api/v1/tasks/{id}, with a long-poll of ``wait`` seconds."""
    return Call(
        "GET",
        f"/api/v1/tasks/{quote(task_id, safe='')}",
        params={"wait": str(wait)} if wait > 0 else None,
        read_timeout=wait + 30.0 if wait > 0 else None,
    )


def wait_flow(task_id: str, timeout: Optional[float] = None, *, raise_on_failure: bool = True, header_rows: Optional[int] = None) -> Flow[Task]:
    """
    Follows a task with long-polls until it ends, and returns it; raises TaskFailed when it
    failed (unless ``raise_on_failure`` is False) and TaskTimeout when ``timeout`` seconds pass
    first (None: no limit).
    """
    started = time.monotonic()
    while True:
        left = None if timeout is None else timeout - (time.monotonic() - started)
        wait = LONG_POLL_SECONDS if left is None else max(1, min(LONG_POLL_SECONDS, int(left)))
        reply = yield task_call(task_id, wait)
        task = Task.from_json(reply.json(), header_rows)
        if task.ended:
            if raise_on_failure and task.status == "failed":
                raise TaskFailed(task)
            return task
        if left is not None and time.monotonic() - started >= timeout:  # type: ignore[operator]
            raise TaskTimeout(task, time.monotonic() - started)


def list_flow(status: Optional[str] = None, kind: Optional[str] = None, limit: Optional[int] = None) -> Flow[list[Task]]:
    """The caller's tasks, newest first, following X-Next-Cursor until ``limit`` tasks (None: all)."""
    out: list[Task] = []
    cursor: Optional[str] = None
    while True:
        page = 1000 if limit is None else max(1, min(1000, limit - len(out)))
        params = {"limit": str(page)}
        if status:
            params["status"] = status
        if kind:
            params["kind"] = kind
        if cursor:
            params["cursor"] = cursor
        reply = yield Call("GET", "/api/v1/tasks", params=params)
        out.extend(Task.from_json(t) for t in reply.json()["tasks"])
        cursor = reply.headers.get("X-Next-Cursor")
        if not cursor or (limit is not None and len(out) >= limit):
            return out[:limit] if limit is not None else out
