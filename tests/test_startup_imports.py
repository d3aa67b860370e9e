"""What a job's start-up imports: figure and merge jobs read a merged file and need neither the
datasets package (importing it registers every dataset and so loads the models and
scipy.special, about 0.6 s) nor jax."""

import json
import subprocess
import sys

HEAVY = ("bnnsweep.datasets", "bnnsweep.models", "scipy.special", "jax")


def _heavy_imports_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\n"
         f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1])


def test_the_figure_and_merge_commands_import_no_datasets_models_or_jax():
    assert _heavy_imports_after("import bnnsweep.cli\nfrom bnnsweep.figures import draw") == []
    assert (
        _heavy_imports_after("import bnnsweep.cli\nfrom bnnsweep.results import merge_cells") == []
    )
