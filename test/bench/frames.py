"""
One way from a Meridian download to a pandas DataFrame with typed columns, timed in a process of
its own (make bench-download runs one per way, so each peak RSS is its own):

    python frames.py csv|parquet|arrow|arrow_pages URL KEY METRICS PATTERN ROWS

csv      GET format=csv (gzip on the wire), pd.read_csv, then both timestamp columns parsed to
         datetime64[ms, UTC]: the frame the typed formats give, the way analysts build it today.
parquet  GET format=parquet, pd.read_parquet.
arrow    the Python client (clients/python): Client.download(..., wire="arrow"), one page of ROWS
         rows; metric_name comes as a dictionary, so the frame's is a category.
arrow_pages  the same with the client's default page size (1,000,000 rows a page, each its own
         request and query; the next asked as soon as a page's headers name its cursor).

Prints one JSON line: {"way", "rows", "seconds", "pages", "last_page_s", "peak_rss_mb", "cpu_s",
"dtypes"}: last_page_s is when the last page was read and decoded (for csv and parquet, the body
read), the rest of the seconds the conversion to the frame; cpu_s the process's own CPU-seconds
(user and system, all its threads) over those seconds.
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
    cpu_started = time.process_time()
    pages: list[float] = []
    if way == "csv":
        body = fetch(url, key, {**params, "format": "csv"}, True)
        pages.append(time.perf_counter() - started)
        frame = pd.read_csv(io.BytesIO(body))
        for column in ("timestamp", "updated_at"):
            frame[column] = pd.to_datetime(frame[column], format="ISO8601", utc=True).astype("datetime64[ms, UTC]")
    elif way == "parquet":
        body = fetch(url, key, {**params, "format": "parquet"}, False)
        pages.append(time.perf_counter() - started)
        frame = pd.read_parquet(io.BytesIO(body))
    elif way in ("arrow", "arrow_pages"):
        from meridian_client import Client

        page_rows = {"page_rows": int(rows)} if way == "arrow" else {}
        with Client(url, key) as client:
            frame = client.download(metrics, pattern, output="pandas", wire="arrow", on_page=lambda _: pages.append(time.perf_counter() - started), **page_rows)
    else:
        raise SystemExit(f"unknown way {way}")
    seconds = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "way": way,
        "rows": len(frame),
        "seconds": round(seconds, 3),
        "pages": len(pages),
        "last_page_s": round(pages[-1], 3),
        "peak_rss_mb": round(peak_kb / 1024),
        "cpu_s": round(cpu_s, 3),
        "dtypes": {name: str(dtype) for name, dtype in frame.dtypes.items()},
    }))


if __name__ == "__main__":
    main()
