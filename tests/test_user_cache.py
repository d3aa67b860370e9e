"""The user cache folder (bnnsweep.runtime.user_cache) and what happens without one."""

from pathlib import Path

import pytest

from bnnsweep.figures import theme
from bnnsweep.runtime import user_cache
from bnnsweep.sweeps import code_imports


def test_the_folder_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache.user_cache_dir() == tmp_path / "bnnsweep"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache.user_cache_dir() == Path.home() / ".cache" / "bnnsweep"


@pytest.fixture
def no_home(monkeypatch):
    def no_home_directory():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home_directory))
    monkeypatch.setattr(code_imports, "_cache", None)
    monkeypatch.setattr(code_imports, "_new", {})
    theme.theme.cache_clear()
    yield
    theme.theme.cache_clear()


def test_without_a_home_directory_nothing_is_cached_and_nothing_fails(no_home, tmp_path):
    from bnnsweep.runtime.jax_runtime import cache_dir

    assert user_cache.user_cache_dir() is None and cache_dir() is None
    assert theme.cache_file() is None and theme.theme() == theme.from_seaborn()
    source = tmp_path / "m.py"
    source.write_text("from . import axes\n")
    assert code_imports.import_statements(source) == [(1, "", ("axes",))]
    code_imports.save()
    assert code_imports.cache_file() is None
