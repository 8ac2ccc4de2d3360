"""Where the client finds the api and key: arguments, then the environment, then the CLI's config file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meridian_client import ConfigError, config_path, resolve_connection


def test_config_file_is_under_xdg_config_home_else_home() -> None:
    assert config_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}) == Path("/x/meridian/config.json")
    assert config_path({"HOME": "/h"}) == Path("/h/.config/meridian/config.json")
    assert config_path({"XDG_CONFIG_HOME": "relative", "HOME": "/h"}) == Path("/h/.config/meridian/config.json")


def test_arguments_then_environment_then_file(tmp_path: Path) -> None:
    cfg = tmp_path / "meridian" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"url": "http://file:1/", "api_key": "from-file"}))
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert resolve_connection(env=env).url == "http://file:1"
    assert resolve_connection(env=env).api_key == "from-file"
    env_set = {**env, "MERIDIAN_URL": "http://env:2", "MERIDIAN_API_KEY": "from-env"}
    assert (resolve_connection(env=env_set).url, resolve_connection(env=env_set).api_key) == ("http://env:2", "from-env")
    both = resolve_connection("http://arg:3", "from-arg", env=env_set)
    assert (both.url, both.api_key) == ("http://arg:3", "from-arg")
    # Each value on its own: the key from the file, the url from the environment.
    mixed = resolve_connection(env={**env, "MERIDIAN_URL": "http://env:2"})
    assert (mixed.url, mixed.api_key) == ("http://env:2", "from-file")
    assert "from-file" not in repr(mixed)


def test_missing_or_bad_values_say_where_they_were_looked_for(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    with pytest.raises(ConfigError, match="MERIDIAN_URL"):
        resolve_connection(env=env)
    with pytest.raises(ConfigError, match="MERIDIAN_API_KEY"):
        resolve_connection("http://a:1", env=env)
    with pytest.raises(ConfigError, match="http"):
        resolve_connection("ftp://a", "k", env=env)
    cfg = tmp_path / "meridian" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        resolve_connection(env=env)
