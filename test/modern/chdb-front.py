"""A test-only HTTP front over chDB (ClickHouse 26.9 in-process, PyPI chdb-core), for the
conformance tier `make test-modern`. It is NOT a ClickHouse server: it implements the subset of
ClickHouse's HTTP interface that Meridian's adapter uses, and nothing more:

  - GET/POST `/` with the query in the `query` URL parameter and/or the body, `database`,
    `query_id`, `default_format`; every other URL parameter is a setting, applied with SET for
    that query alone (then reset to the server profile)
  - insert bodies (Native, TabSeparated, JSONEachRow, ...) after an `INSERT ... FORMAT x` query
    in the URL, read by the engine with `FROM INFILE`
  - external data: multipart/form-data parts named as tables, with `<name>_structure` and
    `<name>_format` parameters, held as temporary tables for that query
  - gzip answers (`enable_http_compression=1` and `Accept-Encoding: gzip`), gzip request bodies
  - the X-ClickHouse-* answer headers the client reads, and `Code: N. DB::Exception` errors
  - the profile's one user, `default` without a password (a wrong password gets code 516)
  - `/ping`, and `/chdb-front/inserts` (test-only: async_insert and the token every INSERT ran with)

What it cannot do (tests that need it skip and say so): one query at a time (a single chDB
session under a lock), answers are buffered whole (no streaming, so no cancellation mid-stream),
`system.processes` shows only the query asking, `KILL QUERY` finds nothing, and the engine
(clickhouse-local) has no asynchronous insert queue: `async_insert=1` changes nothing inside it,
so the front records the effective value each INSERT ran with instead.

Usage: python chdb-front.py <port> <data dir>. Prints `ready <port>` when it answers.
"""

import base64
import gzip
import json
import os
import re
import sys
import tempfile
import threading
import uuid
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from chdb import session

# The server profile of the tier: what a current release does by default (26.2+ buffers
# inserts), stated here so the tier does not depend on the engine's defaults.
PROFILE = {"async_insert": "1", "wait_for_async_insert": "1"}

# URL parameters that are not settings.
NOT_SETTINGS = {"query", "database", "query_id", "default_format", "user", "password", "session_id",
                "session_timeout", "session_check", "compress", "decompress", "buffer_size", "wait_end_of_query"}

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INSERT_FORMAT = re.compile(r"^(\s*INSERT\s+INTO\s.*?)\s+FORMAT\s+(\w+)\s*$", re.IGNORECASE | re.DOTALL)
# As ClickHouse answers them: unknown table or database 404, syntax error 400, the rest 500.
STATUS_BY_CODE = {"60": 404, "81": 404, "62": 400}
ERROR_CODE = re.compile(r"Code: (\d+)")

lock = threading.Lock()
inserts = []  # (query_id, database, async_insert and insert_deduplication_token as the engine had them), newest last; bounded below
MAX_RECORDED_INSERTS = 10_000


def literal(value):
    if re.fullmatch(r"-?\d+(\.\d+)?", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Front:
    def __init__(self, path):
        self.session = session.Session(path)
        self.spool = tempfile.mkdtemp(prefix="chdb-front-")
        for k, v in PROFILE.items():
            self.session.query(f"SET {k} = {v}")

    def run(self, sql, fmt="TSV"):
        return self.session.query(sql, fmt).bytes()

    def spool_file(self, data):
        path = os.path.join(self.spool, uuid.uuid4().hex)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def execute(self, params, body, tables):
        """Runs one request's query; returns (answer bytes, format name). Raises on an engine error."""
        query = params.get("query", "")
        data = b""
        if query:
            data = body
        else:
            query = body.decode("utf-8")
        settings = {k: v for k, v in params.items() if k not in NOT_SETTINGS and not k.endswith(("_structure", "_format", "_types"))}
        for k in settings:
            if not IDENTIFIER.match(k):
                raise ValueError(f"Code: 115. DB::Exception: Unknown setting {k}. (UNKNOWN_SETTING)")
        files = []
        temporary = []
        try:
            self.run(f"USE `{params.get('database', 'default')}`")
            for k, v in settings.items():
                self.run(f"SET {k} = {literal(v)}")
            for name, (structure, fmt, content) in tables.items():
                self.run(f"CREATE TEMPORARY TABLE `{name}` ({structure}) ENGINE = Memory")
                temporary.append(name)
                path = self.spool_file(content)
                files.append(path)
                self.run(f"INSERT INTO `{name}` FROM INFILE '{path}' FORMAT {fmt}")
            is_insert = query.lstrip().upper().startswith("INSERT")
            if is_insert:
                effective = self.run("SELECT getSetting('async_insert'), getSetting('insert_deduplication_token')", "JSONCompactEachRow")
                async_insert, token = json.loads(effective)
                inserts.append({"query_id": params.get("query_id", ""), "database": params.get("database", "default"),
                                "async_insert": str(async_insert).lower(), "insert_deduplication_token": token})
                del inserts[:-MAX_RECORDED_INSERTS]
            if data:
                m = INSERT_FORMAT.match(query)
                head, fmt = (m.group(1), m.group(2)) if m else (query, "TabSeparated")
                path = self.spool_file(data)
                files.append(path)
                return self.run(f"{head} FROM INFILE '{path}' FORMAT {fmt}"), fmt
            fmt = params.get("default_format", "TabSeparated")
            m = re.search(r"\sFORMAT\s+(\w+)\s*;?\s*$", query, re.IGNORECASE)
            return self.run(query, fmt), (m.group(1) if m else fmt)
        finally:
            for name in temporary:
                self.run(f"DROP TEMPORARY TABLE IF EXISTS `{name}`")
            for k in settings:
                self.run(f"SET {k} = {PROFILE[k]}" if k in PROFILE else f"SET {k} = DEFAULT")
            for path in files:
                os.unlink(path)


CONTENT_TYPES = {"TabSeparated": "text/tab-separated-values; charset=UTF-8", "JSONEachRow": "application/x-ndjson; charset=UTF-8",
                 "JSON": "application/json; charset=UTF-8", "CSV": "text/csv; charset=UTF-8"}


def make_handler(front):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, body, headers, gzip_ok):
            if gzip_ok:
                body = gzip.compress(body, 1)
                headers["Content-Encoding"] = "gzip"
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def handle_any(self):
            url = urlsplit(self.path)
            if url.path == "/ping":
                return self.answer(200, b"Ok.\n", {"Content-Type": "text/html; charset=UTF-8"}, False)
            if url.path == "/chdb-front/inserts":
                with lock:
                    body = json.dumps(inserts).encode()
                return self.answer(200, body, {"Content-Type": "application/json"}, False)
            params = dict(parse_qsl(url.query, keep_blank_values=True))
            if self.credentials(params) != ("default", ""):
                return self.answer(403, b"Code: 516. DB::Exception: default: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED)\n",
                                   {"Content-Type": "text/plain; charset=UTF-8", "X-ClickHouse-Exception-Code": "516"}, False)
            length = int(self.headers.get("Content-Length") or 0)
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                body = self.read_chunked()
            else:
                body = self.rfile.read(length) if length else b""
                if len(body) < length:
                    raise ConnectionError("request body cut short")
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            tables = {}
            ctype = self.headers.get("Content-Type", "")
            if ctype.startswith("multipart/form-data"):
                message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
                for part in message.iter_parts():
                    name = part.get_param("name", header="content-disposition")
                    if not name or not IDENTIFIER.match(name):
                        continue
                    structure = params.get(f"{name}_structure", "")
                    fmt = params.get(f"{name}_format", "TabSeparated")
                    tables[name] = (structure, fmt, part.get_payload(decode=True) or b"")
                body = b""
            query_id = params.setdefault("query_id", str(uuid.uuid4()))
            gzip_ok = params.get("enable_http_compression") == "1" and "gzip" in self.headers.get("Accept-Encoding", "")
            headers = {"X-ClickHouse-Query-Id": query_id, "X-ClickHouse-Server-Display-Name": "chdb-front",
                       "X-ClickHouse-Timezone": "UTC", "Connection": "close"}
            try:
                with lock:
                    result, fmt = front.execute(params, body, tables)
            except Exception as error:  # an engine error (or one of ours, worded as ClickHouse words them)
                text = str(error)
                code = ERROR_CODE.search(text)
                headers["X-ClickHouse-Exception-Code"] = code.group(1) if code else "1001"
                headers["Content-Type"] = "text/plain; charset=UTF-8"
                status = STATUS_BY_CODE.get(code.group(1) if code else "", 500)
                return self.answer(status, (text.rstrip() + "\n").encode(), headers, gzip_ok)
            headers["X-ClickHouse-Format"] = fmt
            headers["Content-Type"] = CONTENT_TYPES.get(fmt, "application/octet-stream")
            headers["X-ClickHouse-Summary"] = json.dumps({"read_rows": "0", "read_bytes": "0", "written_rows": "0", "written_bytes": "0",
                                                          "total_rows_to_read": "0", "result_rows": "0", "result_bytes": str(len(result))})
            return self.answer(200, result, headers, gzip_ok)

        def credentials(self, params):
            """The one user of the profile: `default` with no password, as a fresh server has."""
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Basic "):
                user, _, password = base64.b64decode(auth[6:]).decode("utf-8").partition(":")
                return user, password
            return (self.headers.get("X-ClickHouse-User") or params.get("user") or "default",
                    self.headers.get("X-ClickHouse-Key") or params.get("password") or "")

        def read_chunked(self):
            out = bytearray()
            while True:
                line = self.rfile.readline()
                if not line:  # the client went away mid-body: nothing of it is inserted
                    raise ConnectionError("request body cut short")
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()

        do_GET = handle_any
        do_POST = handle_any

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that went away (a test cutting its request on purpose) is no error of the front's."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            super().handle_error(request, client_address)


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    front = Front(path)
    server = Server(("127.0.0.1", port), make_handler(front))
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
