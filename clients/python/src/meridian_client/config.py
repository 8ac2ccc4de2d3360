"""
Where the client finds the api and its key: arguments first, then the environment
(``MERIDIAN_URL``, ``MERIDIAN_API_KEY``), then the CLI's config file
(``$XDG_CONFIG_HOME/meridian/config.json``, else ``~/.config/meridian/config.json``,
holding ``{"url": "...", "api_key": "..."}``). The same order as the ``meridian`` CLI.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional
from urllib.parse import urlsplit

from .errors import ConfigError


@dataclass(frozen=True)
class Connection:
    """The api's base URL (no trailing slash) and the API key; the key is kept out of ``repr``."""

    url: str
    api_key: str = field(repr=False)


def config_path(env: Optional[Mapping[str, str]] = None) -> Path:
    """The CLI's config file: ``$XDG_CONFIG_HOME/meridian/config.json`` (an absolute XDG_CONFIG_HOME only), else ``~/.config/...``."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg.startswith("/") else Path(env.get("HOME") or Path.home()) / ".config"
    return base / "meridian" / "config.json"


def _read_config(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e})") from e
    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{path}: not JSON ({e})") from e
    if not isinstance(parsed, dict):
        raise ConfigError(f"{path}: must hold a JSON object with url and api_key")
    out: dict[str, str] = {}
    for key in ("url", "api_key"):
        value = parsed.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{path}: {key} must be a string")
        if value:
            out[key] = value
    return out


def resolve_connection(
    url: Optional[str] = None,
    api_key: Optional[str] = None,
    *,
    env: Optional[Mapping[str, str]] = None,
    path: Optional[Path] = None,
) -> Connection:
    """
    The connection from the first source that has each value: the arguments, the environment,
    the config file (read only when something is still missing).

    Raises ConfigError naming every place it looked when the url or the key is missing, or
    when the url is not http(s).
    """
    env = os.environ if env is None else env
    path = config_path(env) if path is None else path
    url = url or env.get("MERIDIAN_URL") or None
    api_key = api_key or env.get("MERIDIAN_API_KEY") or None
    if not url or not api_key:
        found = _read_config(path)
        url = url or found.get("url")
        api_key = api_key or found.get("api_key")
    if not url:
        raise ConfigError(f"no api address: pass url=, set MERIDIAN_URL or put \"url\" in {path}")
    if not api_key:
        raise ConfigError(f"no API key: pass api_key=, set MERIDIAN_API_KEY or put \"api_key\" in {path}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"the api address must be an http(s) URL: {url}")
    return Connection(url=url.rstrip("/"), api_key=api_key)
