"""The generated sweeps of ``benchmarks/bench_dag.py`` stay valid configs: its 100,000-cell
dry run (issue 13's scale target) once stopped at the config limits added later (a list of
100,000 seeds is over ``MAX_CONFIG_BYTES`` and ``MAX_CONFIG_NODES``)."""

import sys
from pathlib import Path

import yaml

from bnnsweep.sweeps.config import expand, read_yaml, validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_dag import generated_config  # noqa: E402


def test_the_100000_cell_sweep_is_a_valid_config_of_100000_cells(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(generated_config(100_000)))
    cells = expand(validate(read_yaml(path)))
    assert len(cells) == 100_000
    assert len({c.path_id for c in cells}) == 100_000
