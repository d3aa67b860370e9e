"""Merged result files of small real fits, shared by each figure's own tests and by
``test_figure_legends`` (which draws every figure kind): session-scoped, so that a test
session fits each of them once. Registered in ``conftest.py``. Heavy imports (JAX engines)
happen inside the fixtures, not when the test session starts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

QUIET = {"log": lambda *a: None}

# --------------------------------------------------------------------------- Boltzmann machines

BM_TOY = np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])
"""The two-unit toy of thesis sec. 4.5 (dataset ``bm_two_point``)."""


def bm_ensemble_split(weights, biases):
    from bnnsweep.datasets.boltzmann_tasks import ensemble_rows
    from bnnsweep.datasets.generated import unstandardised_split

    rows = ensemble_rows(weights, biases)
    return unstandardised_split(
        "default", rows, np.zeros((len(rows), 0)), np.zeros((0, rows.shape[1])), np.zeros((0, 0))
    )


def bm_density_split(x):
    from bnnsweep.datasets.generated import unstandardised_split

    return unstandardised_split(
        "default", x, np.zeros((len(x), 0)), np.zeros((0, x.shape[1])), np.zeros((0, 0))
    )


def _bm_cells(tmp, jobs, dataset=None):
    """Fit ``bm_vi`` per (data, split, label, settings) and write its cell; paths by data."""
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.methods import get_method
    from bnnsweep.results import cell_content
    from bnnsweep.sweeps.sweep import Cell

    method = get_method("bm_vi")
    paths = {}
    for i, (data, split, label, settings) in enumerate(jobs):
        s = method.settings(settings)
        axes = tuple((a, getattr(s, a)) for a in ("q_family", "components", "joint_init"))
        cell = Cell("e", dataset or data, "default", label, "bm_vi", 0, axes, settings)
        result = method.fit(split, s, np.random.default_rng(i), **QUIET)
        path = tmp / f"{data}_{label}.nc"
        write_cell_atomic(cell_content(result, split, cell, dataclasses.asdict(s)), path)
        paths.setdefault(data, []).append(path)
    return paths


@pytest.fixture(scope="session")
def bm_merged_files(tmp_path_factory):
    """Merged files of real bm_vi cells, by experiment: ``ens`` inference M = 1, 2; ``gal``
    Galland-like learning with two starts; ``toy`` the toy with three q families."""
    from bnnsweep.datasets.boltzmann_tasks import galland_pairs
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.models import boltzmann as bm
    from bnnsweep.results import merge_cells, write_netcdf_atomic

    tmp = tmp_path_factory.mktemp("bm_merged")
    rng = np.random.default_rng(0)
    w, b = bm.random_machines(rng, 6, bm.fully_connected_mask(5))
    x, y = galland_pairs()
    sup = unstandardised_split("default", x[:3], y[:3], np.zeros((0, 6)), np.zeros((0, 6)))
    galland = dict(
        hidden_layers=1, anneal_start=20.0, anneal_steps=3, damping=0.5, stop_within=0.2,
        runs=2, iterations=40, learning_rate=0.03,
    )  # fmt: skip
    toy = dict(
        iterations=25, learning_rate=0.25, max_sweeps=20, init_weights="normal", init_scale=0.1,
        runs=2,
    )  # fmt: skip
    ens = bm_ensemble_split(w, b)
    jobs = [
        ("ens", ens, "mf", dict(kind="inference", q_family="mean_field")),
        ("ens", ens, "mix", dict(kind="inference", q_family="mixture", components=2)),
        ("gal", sup, "zero", dict(joint_init="zero", **galland)),
        ("gal", sup, "cond", dict(joint_init="conditional", **galland)),
        ("toy", bm_density_split(BM_TOY), "mf", dict(q_family="mean_field", **toy)),
        ("toy", bm_density_split(BM_TOY), "mix", dict(q_family="mixture", components=2, **toy)),
        ("toy", bm_density_split(BM_TOY), "exact", dict(q_family="exact", **toy)),
    ]
    out = {}
    for data, cell_paths in _bm_cells(tmp, jobs).items():
        out[data] = tmp / f"{data}_merged.nc"
        write_netcdf_atomic(merge_cells(cell_paths), out[data])  # sealed, as `bnnsweep merge`
    return out


@pytest.fixture(scope="session")
def bm_digits_merged(tmp_path_factory):
    """A merged file of real bm_vi cells on 4 x 4 binary images (mean field and a mixture of
    3 on the grid machine with 2 hidden units) plus an unrelated toy cell, sealed."""
    from bnnsweep import datasets
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.results import merge_cells, write_netcdf_atomic

    tmp = tmp_path_factory.mktemp("bm_digits")
    raw = datasets.load("digits_binary").split("default").x_train.reshape(-1, 8, 8)
    small = raw[:40, ::2, ::2].reshape(40, 16)  # every other pixel: 4 x 4 images
    split = unstandardised_split(
        "default", small, np.zeros((40, 0)), np.zeros((0, 16)), np.zeros((0, 0))
    )
    common = dict(
        architecture="grid", grid_hidden=2, joint_init="previous", clamped_init="joint",
        anneal_joint="always", temperatures=[20, 5, 1], max_sweeps=50, learning_rate=0.1 / 40,
        iterations=9, init_weights="normal", init_scale=0.1, runs=2,
    )  # fmt: skip
    toy = bm_density_split(np.array([[1.0, 1.0], [-1.0, -1.0]]))
    jobs = [
        ("digits_mf", split, "digits_mf", dict(q_family="mean_field", **common)),
        ("digits_mix", split, "digits_mix", dict(q_family="mixture", components=3, **common)),
        ("toy", toy, "toy", dict(q_family="mean_field", iterations=3, runs=1)),
    ]
    paths = [p for group in _bm_cells(tmp, jobs, dataset="d").values() for p in group]
    out = tmp / "merged.nc"
    write_netcdf_atomic(merge_cells(paths), out)
    return out


# --------------------------------------------------------------------------- sigmoid belief nets

SBN_K = 15  # networks per test ensemble: one shape, so each JAX fit compiles once


def sbn_small_ensemble(split: str, k: int):
    """The first k nets of a registered split of ``sbn_random_246``, under the split's name."""
    from bnnsweep import datasets
    from bnnsweep.datasets.generated import unstandardised_split

    rows = datasets.load("sbn_random_246").split(split).x_train[:k]
    return unstandardised_split(
        split, rows, np.zeros((k, 0)), np.zeros((0, rows.shape[1])), np.zeros((0, 0))
    )


def sbn_fit(split, seed: int = 0, **settings):
    from bnnsweep.methods import get_method

    method = get_method("sbn_vi")
    return method.fit(split, method.settings(settings), np.random.default_rng(seed), **QUIET)


def sbn_cell(experiment, dataset, split, label, axes, settings):
    from bnnsweep.sweeps.sweep import Cell

    return Cell(experiment, dataset, split, label, "sbn_vi", 0, axes, settings)


def sbn_write(tmp_path, cell, split, result):
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.methods import get_method
    from bnnsweep.results import cell_content

    path = tmp_path / f"{cell.method}_{cell.cell_id}.nc"
    settings = get_method("sbn_vi").settings(cell.settings)
    write_cell_atomic(cell_content(result, split, cell, vars(settings)), path)
    return path


@pytest.fixture(scope="session")
def sbn_inference_merged(tmp_path_factory):
    """A sealed merged file of a tiny run: mean field, M = 2 and the chain at two spans;
    (merged path, cell paths)."""
    from bnnsweep.results import merge_cells, write_netcdf_atomic

    tmp = tmp_path_factory.mktemp("sbn_inference")
    paths = []
    for split_name in ("span_0p5", "span_1p0"):
        split = sbn_small_ensemble(split_name, SBN_K)
        for label, q, m in (
            ("mf", "mean_field", None),
            ("mix", "mixture", 2),
            ("ch", "chain", None),
        ):
            axes = (("q_family", q),) + ((("components", m),) if m else ())
            cell = sbn_cell("e", "sbn_random_246", split_name, label, axes, dict(axes))
            result = sbn_fit(split, q_family=q, components=m or 1, chain_max_iter=100)
            paths.append(sbn_write(tmp, cell, split, result))
    path = tmp / "merged.nc"
    write_netcdf_atomic(merge_cells(paths), path)  # sealed, as `bnnsweep merge` writes it
    return path, paths


@pytest.fixture(scope="session")
def sbn_bars_merged(tmp_path_factory):
    """A sealed merged file of a tiny learning run: M = 1 and M = 2, two restarts;
    (merged path, split, fit results)."""
    from bnnsweep import datasets
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.results import merge_cells, write_netcdf_atomic

    tmp = tmp_path_factory.mktemp("sbn_bars")
    full = datasets.load("bars_4x4").split("default")
    split = unstandardised_split(
        "default", full.x_train[:10], np.zeros((10, 0)), full.x_test[:8], np.zeros((8, 0))
    )
    paths, results = [], []
    for label, q, m in (("mf", "mean_field", None), ("mix", "mixture", 2)):
        axes = (("q_family", q),) + ((("components", m),) if m else ())
        settings = {**dict(axes), "layers": "1-8-16", "restarts": 2, "epochs": 2, "batch": 5}
        cell = sbn_cell("b", "bars_4x4", "default", label, axes, settings)
        result = sbn_fit(split, **{**settings, "components": m or 1})
        results.append(result)
        paths.append(sbn_write(tmp, cell, split, result))
    path = tmp / "merged.nc"
    write_netcdf_atomic(merge_cells(paths), path)
    return path, split, results


# --------------------------------------------------------------------------- variational ICA

ICA_QUICK = {"outer": 8, "inner": 30, "collapsed": True}


def ica_fit(dataset, split, seed=0, **settings):
    from bnnsweep import datasets
    from bnnsweep.methods import get_method

    method = get_method("vb_ica")
    s = datasets.load(dataset).split(split)
    return s, method.fit(s, method.settings(settings), np.random.default_rng(seed), **QUIET)


@pytest.fixture(scope="session")
def ica_toy_fits():
    return {k: ica_fit("ica_toy", f"draw{k}", seed=k, sources=3, **ICA_QUICK) for k in range(3)}


@pytest.fixture(scope="session")
def ica_merged(ica_toy_fits, tmp_path_factory):
    """Cells of toy runs (I = 3 from ``ica_toy_fits``, one with I = 2: ragged along
    ``source``) and one image run, merged and written sealed; (merged path, cell paths)."""
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    root = tmp_path_factory.mktemp("ica_cells")
    runs = [("ica_toy", f"draw{k}", 3, k, *ica_toy_fits[k]) for k in ica_toy_fits]
    runs.append(
        ("ica_toy", "draw0", 2, 0, *ica_fit("ica_toy", "draw0", sources=2, outer=3, inner=20))
    )
    runs.append(
        ("ica_images", "draw0", 3, 0,
         *ica_fit("ica_images", "draw0", sources=3, source_density="location_mixture", outer=3, inner=20))
    )  # fmt: skip
    paths = []
    for dataset, split_name, sources, seed, split, result in runs:
        cell = Cell(
            "ica", dataset, split_name, "vb_ica", "vb_ica", seed, (("sources", sources),), {}
        )
        path = root / f"{dataset}_{split_name}_{sources}_{seed}.nc"
        write_cell_atomic(cell_content(result, split, cell), path)
        paths.append(path)
    path = root / "merged.nc"
    write_netcdf_atomic(merge_cells(paths), path)
    return path, paths


# --------------------------------------------------------------------------- threshold units

LTU_SMALL = {"hidden": 4, "outer": 3, "anneal_rate": 0.5}


def ltu_cell(label, settings, seed, split="0"):
    from bnnsweep.sweeps.sweep import Cell

    axes = (("hidden", settings["hidden"]), ("penalty", settings["penalty"]))
    return Cell("t", "crabs_ripley", split, label, "ltu", seed, axes, settings)


def ltu_fit(settings, seed):
    from bnnsweep import datasets
    from bnnsweep.methods import get_method

    method = get_method("ltu")
    split = datasets.load("crabs_ripley").split("0")
    return split, method.fit(split, method.settings(settings), np.random.default_rng(seed), **QUIET)


@pytest.fixture(scope="session")
def ltu_merged_path(tmp_path_factory):
    """``ltu`` and ``ltu_validation`` (12 held out) at H = 3, 5, three seeds each, sealed."""
    from bnnsweep.results import cell_dataset, merge_cells, write_netcdf_atomic

    tmp = tmp_path_factory.mktemp("ltu_merged")
    paths = []
    for label, extra in (("ltu", {}), ("ltu_validation", {"validation": 12})):
        for hidden in (3, 5):
            for seed in range(3):
                settings = {**LTU_SMALL, "hidden": hidden, "penalty": 10, **extra}
                split, result = ltu_fit(settings, seed)
                path = tmp / f"{label}_{hidden}_{seed}.nc"
                write_netcdf_atomic(
                    cell_dataset(result, split, ltu_cell(label, settings, seed)), path
                )
                paths.append(path)
    merged_path = tmp / "merged.nc"
    write_netcdf_atomic(merge_cells(paths), merged_path)  # sealed, as `bnnsweep merge`
    return merged_path


# --------------------------------------------------------------------------- thesis ch. 1


@pytest.fixture(scope="session")
def ch1_merged_path(tmp_path_factory):
    """Every split of ``thesis_ch1`` through ``ch1_checks``, merged and sealed."""
    from bnnsweep import datasets
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.methods import get_method
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    tmp = tmp_path_factory.mktemp("ch1")
    method = get_method("ch1_checks")
    paths = []
    for name, split in datasets.load("thesis_ch1").splits.items():
        result = method.fit(split, method.settings({}), np.random.default_rng(0), **QUIET)
        cell = Cell("ch1", "thesis_ch1", name, "ch1_checks", "ch1_checks", 0, (), {})
        paths.append(tmp / f"{name}.nc")
        write_cell_atomic(cell_content(result, split, cell), paths[-1])
    write_netcdf_atomic(merge_cells(paths), tmp / "merged.nc")
    return tmp / "merged.nc"


@pytest.fixture(scope="session")
def mixture_target_merged_path(tmp_path_factory):
    """Thesis fig. 5.6: ``vi_mixture_target`` on split kl_asymmetry, two seeds, merged."""
    from bnnsweep import datasets
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.methods import get_method
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    tmp = tmp_path_factory.mktemp("mixture_target")
    method = get_method("vi_mixture_target")
    split = datasets.load("thesis_ch1").split("kl_asymmetry")
    paths = []
    for seed in (0, 1):
        settings = method.settings({"reference_starts": 1})
        result = method.fit(split, settings, np.random.default_rng(seed), **QUIET)
        cell = Cell("fig56", "thesis_ch1", "kl_asymmetry", "vi_mixture_target",
                    "vi_mixture_target", seed, (("components", 2),), {})  # fmt: skip
        paths.append(tmp / f"{seed}.nc")
        write_cell_atomic(cell_content(result, split, cell), paths[-1])
    write_netcdf_atomic(merge_cells(paths), tmp / "merged.nc")
    return tmp / "merged.nc"


@pytest.fixture(scope="session")
def gaussian_fits_merged_path(tmp_path_factory):
    """Paper 002 fig. 1: ``gaussian_fits`` on two_weight_toy (a coarser grid), merged."""
    from bnnsweep.results import merge_cells, write_netcdf_atomic
    from bnnsweep.runner import fit_cell_to_file
    from bnnsweep.sweeps.sweep import Cell

    tmp = tmp_path_factory.mktemp("gaussian_fits")
    settings = {"grid_points": 401}
    cell = Cell("fig1", "two_weight_toy", "default", "gaussian_fits", "gaussian_fits", 0, (),
                settings)  # fmt: skip
    path = fit_cell_to_file(cell, tmp / "0.nc", **QUIET)
    write_netcdf_atomic(merge_cells([path]), tmp / "merged.nc")
    return tmp / "merged.nc"


@pytest.fixture(scope="session")
def adf_activations_merged_path(tmp_path_factory):
    """Paper 004 fig. 1: ``adf_activations`` on adf_activation_grid, two seeds, merged."""
    from bnnsweep.results import merge_cells, write_netcdf_atomic
    from bnnsweep.runner import fit_cell_to_file
    from bnnsweep.sweeps.sweep import Cell

    tmp = tmp_path_factory.mktemp("adf_activations")
    paths = [
        fit_cell_to_file(Cell("fig1", "adf_activation_grid", "default", "adf_activations",
                              "adf_activations", seed, (), {"mc_draws": 2000}),
                         tmp / f"{seed}.nc", **QUIET)
        for seed in (0, 1)
    ]  # fmt: skip
    write_netcdf_atomic(merge_cells(paths), tmp / "merged.nc")
    return tmp / "merged.nc"


@pytest.fixture(scope="session")
def g2_approximation_merged_path(tmp_path_factory):
    """Thesis fig. C.1: ``g2_approximation`` on g2_range, merged."""
    from bnnsweep.results import merge_cells, write_netcdf_atomic
    from bnnsweep.runner import fit_cell_to_file
    from bnnsweep.sweeps.sweep import Cell

    tmp = tmp_path_factory.mktemp("g2_approximation")
    cell = Cell("c1", "g2_range", "default", "g2_approximation", "g2_approximation", 0, (), {})
    write_netcdf_atomic(merge_cells([fit_cell_to_file(cell, tmp / "0.nc", **QUIET)]),
                        tmp / "merged.nc")  # fmt: skip
    return tmp / "merged.nc"


@pytest.fixture(scope="session")
def posterior_slices_merged_path(tmp_path_factory):
    """Thesis figs. 5.4-5.5: ``posterior_slices`` on toy_sine_gap at a test's size (3 hidden
    units, one restart, a mixture of 3 after two short sweeps), one seed, merged."""
    from bnnsweep import datasets
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.methods import get_method
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    tmp = tmp_path_factory.mktemp("posterior_slices")
    method = get_method("posterior_slices")
    split = datasets.load("toy_sine_gap").split("default")
    settings = method.settings(POSTERIOR_SLICES_TINY)
    result = method.fit(split, settings, np.random.default_rng(0), **QUIET)
    cell = Cell("fig545", "toy_sine_gap", "default", "posterior_slices", "posterior_slices", 0,
                (("hidden", 3),), {})  # fmt: skip
    write_cell_atomic(cell_content(result, split, cell), tmp / "0.nc")
    write_netcdf_atomic(merge_cells([tmp / "0.nc"]), tmp / "merged.nc")
    return tmp / "merged.nc"


POSTERIOR_SLICES_TINY = {
    "hidden": 3, "restarts": 1, "cycles": 4, "max_iter": 200, "vi_iter": 30, "sweeps": 2,
    "sweep_iter": 15, "components": 3, "points": 15, "mi_samples": 300,
}  # fmt: skip
"""``posterior_slices`` at a test's size: about 4 s of CPU on toy_sine_gap."""


# --------------------------------------------------------------------------- ADF (paper 004)


def adf_merged(tmp_path, dataset, splits, methods):
    """Merged cells of ``methods`` (label -> (method, settings)) on ``splits`` of ``dataset``."""
    from bnnsweep import datasets
    from bnnsweep.methods import get_method
    from bnnsweep.results import cell_dataset, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    paths = []
    for split_name in splits:
        split = datasets.load(dataset).split(split_name)
        for label, (name, settings) in methods.items():
            m = get_method(name)
            result = m.fit(split, m.settings(settings), np.random.default_rng(0), **QUIET)
            axes = (("hidden", settings["hidden"]),)
            cell = Cell("t", dataset, split_name, label, name, 0, axes, settings)
            path = tmp_path / f"{dataset}_{label}_{split_name}.nc"
            write_netcdf_atomic(cell_dataset(result, split, cell), path)
            paths.append(path)
    return merge_cells(paths)


@pytest.fixture(scope="session")
def adf_toy_merged(tmp_path_factory):
    """pbp, ebp and relu_map (softmax, 3 epochs) on the two-class toy."""
    methods = {
        "pbp": ("pbp", {"hidden": 5, "likelihood": "softmax", "epochs": 3}),
        "ebp": ("ebp", {"hidden": 5, "likelihood": "softmax", "epochs": 3}),
        "relu_map": ("relu_map", {"hidden": 5, "likelihood": "softmax", "max_iter": 50}),
    }
    return adf_merged(tmp_path_factory.mktemp("adf_toy"), "toy_two_class", ["default"], methods)


@pytest.fixture(scope="session")
def adf_yacht_merged(tmp_path_factory):
    """pbp and ebp (2 epochs) on two yacht splits."""
    methods = {name: (name, {"hidden": 5, "epochs": 2}) for name in ("pbp", "ebp")}
    return adf_merged(tmp_path_factory.mktemp("adf_yacht"), "yacht", ["0", "1"], methods)
