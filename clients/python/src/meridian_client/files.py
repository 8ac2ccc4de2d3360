"""
Defined files: list, look up, fetch, put (upload and wait for the definition task), share,
unshare, describe and delete. ``client.files`` (and ``AsyncClient.files``) hold these.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, List, Mapping, Optional, Union
from urllib.parse import quote

from ._http import Call, Flow
from .tasks import wait_flow

if TYPE_CHECKING:
    from ._http import AsyncTransport, Transport

FILES_PATH = "/api/v1/files"
Source = Union[str, "os.PathLike[str]", bytes]


@dataclass(frozen=True)
class Grant:
    """Another user's access to a file: r (list, download) or rw (also describe)."""

    user_name: str
    access: str


@dataclass(frozen=True)
class FileInfo:
    """
    A file as the service lists it. ``size``, ``sha256`` and ``content_type`` are filled by
    ``get_info`` (and put, share, describe); ``shared_with`` only for the owner and admins.
    """

    file_id: str
    file_name: str
    file_description: str
    user_name: str
    created_at: str
    entitlement: str
    size: Optional[int] = None
    sha256: Optional[str] = None
    content_type: Optional[str] = None
    shared_with: Optional[tuple[Grant, ...]] = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "FileInfo":
        shared = body.get("shared_with")
        return cls(
            file_id=str(body["file_id"]),
            file_name=str(body.get("file_name", "")),
            file_description=str(body.get("file_description", "")),
            user_name=str(body.get("user_name", "")),
            created_at=str(body.get("created_at", "")),
            entitlement=str(body.get("entitlement", "")),
            size=body.get("size"),
            sha256=body.get("sha256"),
            content_type=body.get("content_type"),
            shared_with=None if shared is None else tuple(Grant(str(g["user_name"]), str(g["access"])) for g in shared),
        )


def _file_path(file_id: str) -> str:
    return f"{FILES_PATH}/{quote(file_id, safe='')}"


def list_flow(name_contains: Optional[str] = None, limit: Optional[int] = None) -> Flow[list[FileInfo]]:
    """The files the caller may see, newest first, following next_cursor until ``limit`` (None: all)."""
    out: list[FileInfo] = []
    cursor: Optional[str] = None
    while True:
        params = {"limit": str(1000 if limit is None else max(1, min(1000, limit - len(out))))}
        if name_contains:
            params["name_contains"] = name_contains
        if cursor:
            params["cursor"] = cursor
        reply = yield Call("GET", FILES_PATH, params=params)
        body = reply.json()
        out.extend(FileInfo.from_json(f) for f in body["files_list"])
        cursor = body.get("next_cursor")
        if not cursor or (limit is not None and len(out) >= limit):
            return out[:limit] if limit is not None else out


def info_flow(file_id: str) -> Flow[FileInfo]:
    reply = yield Call("GET", _file_path(file_id))
    return FileInfo.from_json(reply.json())


def get_flow(file_id: str, sink: BinaryIO) -> Flow[None]:
    """The file's bytes into ``sink`` (a retried download starts the sink over)."""
    yield Call("GET", f"/api/v1/file/download/{quote(file_id, safe='')}", sink=sink)


def put_flow(path: Path, file_name: str, description: str, enforce_schema: bool, size_limit: Optional[int], content_type: str, wait: bool, timeout: Optional[float]) -> Flow[Union[FileInfo, str]]:
    """
    POST /api/v1/files (multipart), then, with ``wait``, follows the definition task and returns
    the file's entry (TaskFailed when the task failed); without, returns the task id.
    """
    form = {"file_description": description, "enforce_schema": "true" if enforce_schema else "false"}
    if size_limit is not None:
        form["file_size_limit"] = str(size_limit)
    # No Idempotency-Key on this route: a cut connection is not retried (it could define the file twice).
    reply = yield Call("POST", FILES_PATH, form=form, form_file=("file", path, file_name, content_type), repeatable=False)
    accepted = reply.json()
    if not wait:
        return str(accepted["task_id"])
    yield from wait_flow(str(accepted["task_id"]), timeout)
    return (yield from info_flow(str(accepted["file_id"])))


def share_flow(file_id: str, user_name: str, access: str) -> Flow[FileInfo]:
    if access not in ("r", "rw"):
        raise ValueError("access is 'r' or 'rw'")
    reply = yield Call("PUT", f"{_file_path(file_id)}/entitlements/{quote(user_name, safe='')}", json={"access": access})
    return FileInfo.from_json(reply.json())


def unshare_flow(file_id: str, user_name: str) -> Flow[None]:
    yield Call("DELETE", f"{_file_path(file_id)}/entitlements/{quote(user_name, safe='')}")


def describe_flow(file_id: str, description: str) -> Flow[FileInfo]:
    reply = yield Call("PATCH", _file_path(file_id), json={"file_description": description})
    return FileInfo.from_json(reply.json())


def delete_flow(file_id: str) -> Flow[None]:
    yield Call("DELETE", _file_path(file_id))


class _Source:
    """A put's bytes as a path: the file itself, or a temporary copy of bytes (removed after)."""

    def __init__(self, source: Source, name: Optional[str]) -> None:
        self.temporary = isinstance(source, (bytes, bytearray))
        if self.temporary:
            fd, tmp = tempfile.mkstemp(prefix="meridian-file-")
            with os.fdopen(fd, "wb") as f:
                f.write(source)  # type: ignore[arg-type]
            self.path = Path(tmp)
            if not name:
                raise ValueError("name= is needed when the file is given as bytes")
        else:
            self.path = Path(source)  # type: ignore[arg-type]
        self.name = name or self.path.name

    def close(self) -> None:
        if self.temporary:
            self.path.unlink(missing_ok=True)


class Files:
    """``client.files``: the defined files the caller may see."""

    def __init__(self, transport: "Transport") -> None:
        self._t = transport

    def list(self, name_contains: Optional[str] = None, limit: Optional[int] = None) -> List[FileInfo]:
        """The caller's files and those shared with them (every file for an admin), newest first, every page."""
        return self._t.run(list_flow(name_contains, limit))

    def info(self, file_id: str) -> FileInfo:
        """One file's entry with its size, SHA-256, content type and (for its owner) grants."""
        return self._t.run(info_flow(file_id))

    def get(self, file_id: str, to: Union[str, "os.PathLike[str]", None] = None) -> Union[bytes, Path]:
        """The file's bytes; with ``to``, written to that path (streamed, not held in memory) and the path returned."""
        if to is None:
            import io

            buffer = io.BytesIO()
            self._t.run(get_flow(file_id, buffer))
            return buffer.getvalue()
        target = Path(to)
        with open(target, "wb") as f:
            self._t.run(get_flow(file_id, f))
        return target

    def put(self, source: Source, *, name: Optional[str] = None, description: str = "", enforce_schema: bool = False, size_limit: Optional[int] = None, content_type: str = "application/octet-stream", wait: bool = True, timeout: Optional[float] = None) -> Union[FileInfo, str]:
        """
        Defines a file from a path or bytes and, with ``wait`` (the default), waits for its task and
        returns its entry (raises TaskFailed when the service refused it); ``wait=False`` returns the task id.
        """
        src = _Source(source, name)
        try:
            return self._t.run(put_flow(src.path, src.name, description, enforce_schema, size_limit, content_type, wait, timeout))
        finally:
            src.close()

    def share(self, file_id: str, user_name: str, access: str = "r") -> FileInfo:
        """Gives ``user_name`` r or rw access (owner or admin); granting again replaces the access."""
        return self._t.run(share_flow(file_id, user_name, access))

    def unshare(self, file_id: str, user_name: str) -> None:
        """Takes ``user_name``'s access away."""
        self._t.run(unshare_flow(file_id, user_name))

    def describe(self, file_id: str, description: str) -> FileInfo:
        """Replaces the file's description (rw access)."""
        return self._t.run(describe_flow(file_id, description))

    def delete(self, file_id: str) -> None:
        """Deletes the file (owner or admin)."""
        self._t.run(delete_flow(file_id))


class AsyncFiles:
    """``AsyncClient.files``: as Files, awaited."""

    def __init__(self, transport: "AsyncTransport") -> None:
        self._t = transport

    async def list(self, name_contains: Optional[str] = None, limit: Optional[int] = None) -> List[FileInfo]:
        return await self._t.run(list_flow(name_contains, limit))

    async def info(self, file_id: str) -> FileInfo:
        return await self._t.run(info_flow(file_id))

    async def get(self, file_id: str, to: Union[str, "os.PathLike[str]", None] = None) -> Union[bytes, Path]:
        if to is None:
            import io

            buffer = io.BytesIO()
            await self._t.run(get_flow(file_id, buffer))
            return buffer.getvalue()
        target = Path(to)
        with open(target, "wb") as f:
            await self._t.run(get_flow(file_id, f))
        return target

    async def put(self, source: Source, *, name: Optional[str] = None, description: str = "", enforce_schema: bool = False, size_limit: Optional[int] = None, content_type: str = "application/octet-stream", wait: bool = True, timeout: Optional[float] = None) -> Union[FileInfo, str]:
        src = _Source(source, name)
        try:
            return await self._t.run(put_flow(src.path, src.name, description, enforce_schema, size_limit, content_type, wait, timeout))
        finally:
            src.close()

    async def share(self, file_id: str, user_name: str, access: str = "r") -> FileInfo:
        return await self._t.run(share_flow(file_id, user_name, access))

    async def unshare(self, file_id: str, user_name: str) -> None:
        await self._t.run(unshare_flow(file_id, user_name))

    async def describe(self, file_id: str, description: str) -> FileInfo:
        return await self._t.run(describe_flow(file_id, description))

    async def delete(self, file_id: str) -> None:
        await self._t.run(delete_flow(file_id))
