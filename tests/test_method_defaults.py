"""Every registered method runs from its defaults (issue 17): ``bnnsweep fit --dataset D
--method M --output x.nc`` with no settings succeeds on a small dataset of each task the
method accepts, and the cell holds a finite result."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep import cli
from bnnsweep.cells.reader import read_cell
from bnnsweep.methods import get_method, names

SMALL_DATASET = {
    "regression": "toy_sine",
    "binary": "toy_two_class",
    "multiclass": "toy_three_class",
    "unsupervised": "ica_toy",
    "analytic": "thesis_ch1",
    "binary_density": "bm_two_point",
    "network_ensemble": "bm_random_10",
}
"""The smallest registered dataset of each task, the one a method's defaults are tried on."""
FOR_METHOD = {
    "sbn_vi": {"network_ensemble": "sbn_random_246", "binary_density": "bars_4x4"},
    "adf_activations": {"analytic": "adf_activation_grid"},
    "g2_approximation": {"analytic": "g2_range"},
}
"""Where a task's data differ between models (sigmoid belief units are 0/1 and a random
net is 50 numbers; a Boltzmann machine's are +-1 and 55), a method's own small dataset."""

SPLIT_FOR_METHOD = {"vi_mixture_target": "kl_asymmetry"}
"""A method tied to one split of its dataset (thesis fig. 5.6's Gaussian)."""

FINITE_RESULT = ("log_evidence", "test_loglik", "test_rmse", "test_error_rate")


def default_tasks(method: str) -> tuple[str, ...]:
    """The dataset tasks ``method`` accepts with its default settings."""
    m = get_method(method)
    return m.accepted_tasks(m.settings({}))


PAIRS = [(m, task) for m in names() for task in default_tasks(m)]


def test_every_task_of_a_method_has_a_small_dataset():
    missing = {(m, task) for m, task in PAIRS if task not in SMALL_DATASET}
    assert not missing, f"add a small dataset of these tasks to SMALL_DATASET: {missing}"


@pytest.mark.parametrize(("method", "task"), PAIRS)
def test_method_fits_from_its_defaults(method, task, tmp_path, capsys):
    if task not in SMALL_DATASET:
        pytest.skip(f"no small {task} dataset (the test above fails)")
    output = tmp_path / "x.nc"
    dataset = FOR_METHOD.get(method, {}).get(task, SMALL_DATASET[task])
    split = ["--split", SPLIT_FOR_METHOD[method]] if method in SPLIT_FOR_METHOD else []
    code = cli.main(["fit", "--dataset", dataset, "--method", method, *split,
                     "--output", str(output)])  # fmt: skip
    assert code in (0, None), capsys.readouterr().err
    cell = read_cell(output)
    assert str(cell["status"].values) != "diverged", str(cell["status_message"].values)
    finite = [n for n in FINITE_RESULT if n in cell and np.isfinite(float(cell[n]))]
    if cell["pred_mean"].size == 0:  # no test predictions: the numbers are diagnostics
        finite += [n for n in cell.data_vars if n.startswith("diag_") and is_finite_number(cell[n])]
    assert finite, f"{method}: none of {FINITE_RESULT} is finite"


def is_finite_number(var) -> bool:
    return var.dtype.kind in "fiu" and bool(np.all(np.isfinite(var.values)))


def test_chaining_defaults_are_sampleable_and_a_vague_role_is_refused_by_name():
    from bnnsweep.methods import SettingsError

    chaining = get_method("chaining")
    assert chaining.settings({}).hyperpriors["hidden_output"]["scale_with_hidden"]
    with pytest.raises(SettingsError, match="'output_bias' has shape 0.0003"):
        chaining.settings({"hyperpriors": {"output_bias": {"shape": 3e-4, "rate": 1e-3}}})
