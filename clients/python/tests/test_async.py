"""The async client: the same flows, awaited."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import polars as pl

from meridian_client import AsyncClient, read_file


def test_the_async_client_uploads_downloads_and_keeps_files(async_client: AsyncClient, prefix: str, tmp_path: Path) -> None:
    async def go() -> None:
        async with async_client as client:
            df = pd.DataFrame({"metric_name": f"{prefix}m", "timestamp": pd.date_range("2024-01-01", periods=2500, freq="s", tz="UTC"), "value": [i * 0.5 for i in range(2500)]})
            task = await client.upload(df)
            assert task.succeeded
            frames = await asyncio.gather(
                client.download(f"{prefix}m", output="polars", page_rows=1000),
                client.download(prefix, pattern="starts_with"),
            )
            assert isinstance(frames[0], pl.DataFrame) and len(frames[0]) == 2500
            pd.testing.assert_frame_equal(frames[1].drop(columns="updated_at").astype({"metric_name": "str"}), df.rename(columns={"value": "metric_numeric_value"}), check_dtype=False)
            result = await client.download_to(tmp_path / "m.parquet", f"{prefix}m", page_rows=1000)
            assert result.pages == 3 and read_file(result.path).num_rows == 2500
            assert (await client.task(task.task_id)).succeeded
            assert task.task_id in {t.task_id for t in await client.tasks(limit=1000)}
            info = await client.files.put(b"async bytes", name=f"{prefix}a.txt")
            assert not isinstance(info, str)
            assert await client.files.get(info.file_id) == b"async bytes"
            await client.files.delete(info.file_id)

    asyncio.run(go())
