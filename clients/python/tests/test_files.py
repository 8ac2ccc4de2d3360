"""Defined files: put, list, info, get, describe, share, unshare, delete."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from meridian_client import ApiError, Client, FileInfo, TaskFailed


def test_a_file_from_put_to_delete(client: Client, prefix: str, peer: str, tmp_path: Path) -> None:
    body = ("a,b\n" + "".join(f"{i},{i * i}\n" for i in range(10_000))).encode()
    source = tmp_path / f"{prefix}report.csv"
    source.write_bytes(body)
    info = client.files.put(source, description="squares", enforce_schema=True, content_type="text/csv")
    assert isinstance(info, FileInfo)
    assert (info.file_name, info.size, info.sha256) == (source.name, len(body), hashlib.sha256(body).hexdigest())
    assert info.file_id in {f.file_id for f in client.files.list(name_contains=prefix)}
    assert client.files.get(info.file_id) == body
    copy = client.files.get(info.file_id, to=tmp_path / "copy.csv")
    assert Path(copy).read_bytes() == body
    assert client.files.describe(info.file_id, "squares, again").file_description == "squares, again"
    shared = client.files.share(info.file_id, peer, "r")
    assert [(g.user_name, g.access) for g in shared.shared_with or ()] == [(peer, "r")]
    client.files.unshare(info.file_id, peer)
    assert client.files.info(info.file_id).shared_with == ()
    client.files.delete(info.file_id)
    with pytest.raises(ApiError) as caught:
        client.files.info(info.file_id)
    assert caught.value.status == 404


def test_bytes_need_a_name_and_a_refused_file_raises_the_reason(client: Client, prefix: str) -> None:
    with pytest.raises(ValueError):
        client.files.put(b"x")
    with pytest.raises(TaskFailed):
        client.files.put(b"a,b\n1,2,3\n", name=f"{prefix}ragged.csv", enforce_schema=True)
    task_id = client.files.put(b"hello", name=f"{prefix}later.txt", wait=False)
    assert isinstance(task_id, str)
    assert client.wait(task_id).kind == "file_definition"
