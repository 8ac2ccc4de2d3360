"""
One way from a Meridian download to a pandas DataFrame with typed columns, timed in a process of
its own (make bench-download runs one per way, so each peak RSS is its own):

    python frames.py csv|parquet|arrow URL KEY METRICS PATTERN ROWS

csv      GET format=csv (gzip on the wire), pd.read_csv, then both timestamp columns parsed to
         datetime64[ms, UTC]: the frame the typed formats give, the way analysts build it today.
parquet  GET format=parquet, pd.read_parquet.
arrow    the Python client (clients/python): Client.download(..., wire="arrow"), every page.

Prints one JSON line: {"way", "rows", "seconds", "peak_rss_mb", "dtypes"}.
"""
import io
import json
import resource
import sys
import time
import urllib.parse
import urllib.request
import gzip

import pandas as pd


def fetch(url: str, key: str, params: dict[str, str], gzip_ok: bool) -> bytes:
    request = urllib.request.Request(
        f"{url}/api/v1/metrics/download?{urllib.parse.urlencode(params)}",
        headers={"Authorization": f"Bearer {key}", "Accept-Encoding": "gzip" if gzip_ok else "identity"},
    )
    with urllib.request.urlopen(request) as response:
        body = response.read()
        return gzip.decompress(body) if response.headers.get("Content-Encoding") == "gzip" else body


def main() -> None:
    way, url, key, metrics, pattern, rows = sys.argv[1:7]
    params = {"metrics": metrics, "pattern": pattern, "max_rows": rows}
    started = time.perf_counter()
    if way == "csv":
        frame = pd.read_csv(io.BytesIO(fetch(url, key, {**params, "format": "csv"}, True)))
        for column in ("timestamp", "updated_at"):
            frame[column] = pd.to_datetime(frame[column], format="ISO8601", utc=True).astype("datetime64[ms, UTC]")
    elif way == "parquet":
        frame = pd.read_parquet(io.BytesIO(fetch(url, key, {**params, "format": "parquet"}, False)))
    elif way == "arrow":
        from meridian_client import Client

        with Client(url, key) as client:
            frame = client.download(metrics, pattern, output="pandas", wire="arrow", page_rows=int(rows))
    else:
        raise SystemExit(f"unknown way {way}")
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "way": way,
        "rows": len(frame),
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak_kb / 1024),
        "dtypes": {name: str(dtype) for name, dtype in frame.dtypes.items()},
    }))


if __name__ == "__main__":
    main()
