"""
meridian_client: the Python client of the Meridian metrics-and-files service.

    from meridian_client import Client
    with Client() as client:                       # MERIDIAN_URL / MERIDIAN_API_KEY or the CLI's config
        df = client.download("cpu.", pattern="starts_with", start="2024-01-01")
        client.upload(df, on_error="fail")          # waits for the task, raises with the row errors

See README.md for more.
"""

__version__ = "0.1.0"

from ._http import RetryPolicy  # noqa: E402
from .aio import AsyncClient  # noqa: E402
from .client import Client  # noqa: E402
from .config import Connection, config_path, resolve_connection  # noqa: E402
from .download import SCHEMA, DownloadResult, PageInfo, read_file  # noqa: E402
from .errors import ApiError, ConfigError, ConnectionFailed, MeridianError, TaskFailed, TaskTimeout  # noqa: E402
from .files import FileInfo, Grant  # noqa: E402
from .tasks import RowError, Task  # noqa: E402

__all__ = [
    "__version__",
    "Client",
    "AsyncClient",
    "RetryPolicy",
    "Connection",
    "config_path",
    "resolve_connection",
    "SCHEMA",
    "DownloadResult",
    "PageInfo",
    "read_file",
    "MeridianError",
    "ApiError",
    "ConfigError",
    "ConnectionFailed",
    "TaskFailed",
    "TaskTimeout",
    "FileInfo",
    "Grant",
    "RowError",
    "Task",
]
