"""Import statements parsed once per file content (bnnsweep.sweeps.code_imports), and the code
versions built on them (bnnsweep.sweeps.sweep.code_files)."""

import ast
import json

import pytest

from bnnsweep.sweeps import code_imports, sweep

SOURCE = """
import os, bnnsweep.metrics
from . import axes
from ..models.network import Network as N
from bnnsweep.datasets import load

def later():
    from .engines import optimise  # a lazy import counts too
"""


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(code_imports, "_cache", None)
    monkeypatch.setattr(code_imports, "_new", {})
    sweep._imports.cache_clear()
    sweep.code_files.cache_clear()
    yield tmp_path
    sweep._imports.cache_clear()
    sweep.code_files.cache_clear()


def test_every_statement_is_found_at_any_depth():
    assert sorted(code_imports.parse(SOURCE), key=str) == sorted(
        [
            (None, "", ("os", "bnnsweep.metrics")),
            (1, "", ("axes",)),
            (2, "models.network", ("Network",)),
            (0, "bnnsweep.datasets", ("load",)),
            (1, "engines", ("optimise",)),
        ],
        key=str,
    )


def test_a_second_process_reads_the_statements_instead_of_parsing(fresh_cache, monkeypatch):
    path = fresh_cache / "module.py"
    path.write_text(SOURCE)
    first = code_imports.import_statements(path)
    code_imports.save()
    assert code_imports.cache_file().is_file()
    monkeypatch.setattr(code_imports, "_cache", None)  # as a new process
    monkeypatch.setattr(ast, "parse", lambda *a, **k: pytest.fail("parsed again"))
    assert code_imports.import_statements(path) == first


def test_an_edited_file_is_parsed_again(fresh_cache):
    path = fresh_cache / "module.py"
    path.write_text(SOURCE)
    code_imports.import_statements(path)
    code_imports.save()
    path.write_text(SOURCE + "from .results import merge_cells\n")
    assert (1, "results", ("merge_cells",)) in code_imports.import_statements(path)


@pytest.mark.parametrize("content", ["", "[1, 2]", '{"%s": [[1, "x"]]}', '{"%s": 7}'])
def test_a_damaged_cache_file_only_costs_a_parse(fresh_cache, content):
    path = fresh_cache / "module.py"
    path.write_text(SOURCE)
    key = __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    code_imports.cache_file().parent.mkdir(parents=True)
    code_imports.cache_file().write_text(content.replace("%s", key))
    assert code_imports.import_statements(path) == code_imports.parse(SOURCE)


def test_code_versions_are_the_same_from_a_cold_and_a_warm_cache(fresh_cache, monkeypatch):
    from bnnsweep.methods import names

    cold = {n: sweep.files_version(sweep.code_files(_module(n))) for n in names()}
    assert json.loads(code_imports.cache_file().read_text())
    monkeypatch.setattr(code_imports, "_cache", None)
    sweep._imports.cache_clear()
    sweep.code_files.cache_clear()
    monkeypatch.setattr(ast, "parse", lambda *a, **k: pytest.fail("parsed again"))
    warm = {n: sweep.files_version(sweep.code_files(_module(n))) for n in names()}
    assert warm == cold


def _module(method: str) -> str:
    from bnnsweep.methods import module_of

    return module_of(method).removeprefix("bnnsweep.")
