"""Batch specs (issue 36): named by the hash of their text, written by the workflow's
batch_spec job (never while the workflow is parsed); a spec damaged on disk is refused by
fit-batch and written anew, under a fresh name, by the next run."""

import pytest

from bnnsweep.cli import main
from bnnsweep.sweeps.sweep import check_spec_name, spec_file, spec_text, write_spec_file

SPEC = {"vectorise": False, "code_reruns": True, "cells": []}


def test_a_spec_is_found_under_its_hash_and_reading_writes_nothing(tmp_path):
    text, digest = spec_text(SPEC)
    path = spec_file(tmp_path / "batches", text, digest)
    assert path.name == f"{digest}.json" and not (tmp_path / "batches").exists()
    write_spec_file(path, text)
    assert spec_file(tmp_path / "batches", text, digest) == path
    check_spec_name(path, path.read_text())


def test_a_damaged_spec_gets_a_fresh_name_and_is_refused(tmp_path, capsys):
    text, digest = spec_text(SPEC)
    damaged = write_spec_file(tmp_path / f"{digest}.json", text)
    damaged.write_text(text[:-3] + "}}}")
    with pytest.raises(ValueError, match="is damaged"):
        check_spec_name(damaged, damaged.read_text())
    assert main(["fit-batch", str(damaged)]) == 2
    assert f"batch spec {damaged} is damaged" in capsys.readouterr().err
    fresh = spec_file(tmp_path, text, digest)
    assert fresh.name == f"{digest}-2.json" and not fresh.exists()
    write_spec_file(fresh, text)
    assert spec_file(tmp_path, text, digest) == fresh
    check_spec_name(fresh, fresh.read_text())
