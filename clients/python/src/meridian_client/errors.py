"""The exceptions the client raises: one base class, so ``except MeridianError`` catches them all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

if TYPE_CHECKING:
    from .tasks import RowError, Task


class MeridianError(Exception):
    """Anything the client could not do: a refused request, an unreachable service, a failed task."""


class ConfigError(MeridianError):
    """No api address or key could be found, or the config file is not readable JSON."""


class ConnectionFailed(MeridianError):
    """The service could not be reached (or the connection broke) after every retry."""


class ApiError(MeridianError):
    """
    The service answered with an error: its RFC 9457 problem+json body, field by field.

    ``errors`` lists the field problems of a 400 (``{"field": ..., "reason": ...}``).
    """

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        type: str = "about:blank",
        title: str = "",
        errors: Sequence[Mapping[str, Any]] = (),
        request_id: Optional[str] = None,
        method: str = "",
        path: str = "",
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.errors = list(errors)
        self.request_id = request_id
        self.method = method
        self.path = path
        where = f"{method} {path}: " if method else ""
        super().__init__(f"{where}{status} {title or 'error'}: {detail}")


class TaskFailed(MeridianError):
    """A background task (an upload, a file definition) ended as failed; ``task`` holds its reason and row errors."""

    def __init__(self, task: "Task") -> None:
        self.task = task
        lines = [f"task {task.task_id} ({task.kind}) failed: {task.reason or 'no reason given'}"]
        for error in task.errors[:10]:
            lines.append(f"  row {error.row}, {error.column}: {error.reason}")
        if len(task.errors) > 10:
            lines.append(f"  ... {len(task.errors) - 10} more in .errors")
        super().__init__("\n".join(lines))

    @property
    def errors(self) -> "list[RowError]":
        """The rows the service refused (at most the first 100), with their row numbers."""
        return list(self.task.errors)


class TaskTimeout(MeridianError):
    """A task had not ended when the wait's timeout ran out; ``task`` is its last state (it goes on running)."""

    def __init__(self, task: "Task", waited: float) -> None:
        self.task = task
        super().__init__(f"task {task.task_id} is still {task.status} after {waited:.0f} s (it goes on running; wait again with its id)")
