"""Tests of the dataset registry, the vendored data, the split recipes and the NetCDF store."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.datasets import DatasetError, sources, vendored
from bnnsweep.datasets.checksums import sha256_bytes, sha256_file
from bnnsweep.datasets.convert import read_npz, read_raw_bytes, write_npz
from bnnsweep.datasets.download import fetch
from bnnsweep.datasets.generated import robot_arm_function, sine

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DATA = REPO / "src" / "bnnsweep" / "datasets" / "data"
SHARED = REPO.parent / "shared" / "datasets"
needs_shared = pytest.mark.skipif(
    not (SHARED / "SHA256SUMS").is_file(), reason="raw data folder ../shared/datasets absent"
)

UCI_ROWS = {
    "boston_housing": (506, 13, 20),
    "concrete": (1030, 8, 20),
    "energy": (768, 8, 20),
    "kin8nm": (8192, 8, 20),
    "naval": (11934, 16, 20),
    "power_plant": (9568, 4, 20),
    "protein": (45730, 9, 5),
    "wine_red": (1599, 11, 20),
    "yacht": (308, 6, 20),
}
# (split, x_train, y_train, x_test, y_test) shapes of the non-UCI sets
OTHER_SHAPES = {
    "toy_sine": [("default", (30, 1), (30, 1), (281, 1), (281, 1))],
    "toy_sine_gap": [("default", (30, 1), (30, 1), (401, 1), (401, 1))],
    "robot_arm": [
        ("default", (200, 2), (200, 2), (1000, 2), (1000, 2)),
        ("extra400", (200, 2), (200, 2), (400, 2), (400, 2)),
    ],
    "sunspots": [("default", (209, 12), (209, 1), (59, 12), (59, 1))],
    "tecator": [("default", (172, 10), (172, 1), (43, 10), (43, 1))],
    "boston_housing_128": [(str(i), (128, 13), (128, 1), (378, 13), (378, 1)) for i in range(5)],
    "toy_sine_nrd": [
        (f"n{n}r{k}", (n, 1), (n, 1), (201, 1), (201, 1))
        for n in (5, 10, 25, 50, 100, 200)
        for k in range(10)
    ],  # fmt: skip
}
# classification and count sets of the ADF methods (tested in test_adf_datasets.py)
ADF_SETS = ("bike_sharing", "breast_cancer", "digits", "mnist", "synthetic_counts",
            "synthetic_softmax10", "synthetic_softmax100", "toy_two_class", "toy_three_class",
            "news_comp_hw", "news_elec_med", "spam_d0", "spam_d1", "reuters_i8", "reuters_i6",
            "text_standin", "mnist_standin", "bike_sharing_standin",
            "adf_activation_grid")  # fmt: skip
# (the paper 004 text sets and stand-ins are tested in test_adf_paper004.py)
# data of the thesis's other models (chs. 1-4, 6.5), tested beside their methods
THESIS_SETS = ("bars_4x4", "bm_random_10", "bm_two_point", "crabs_ripley", "digits_binary",
               "galland_6bit", "ica_images", "ica_toy", "pima_ripley", "sbn_random_246",
               "thesis_ch1", "g2_range")  # fmt: skip
# paper 002 fig. 1's two-weight regression (a stand-in: the paper prints no data)
PAPER_SETS = ("two_weight_toy",)


@pytest.fixture(scope="module")
def loaded() -> dict[str, datasets.Dataset]:
    skip = (*ADF_SETS, *THESIS_SETS)
    return {name: datasets.load(name) for name in datasets.names() if name not in skip}


@pytest.fixture
def data_copy(tmp_path, monkeypatch) -> Path:
    """A private copy of the vendored folder that the loaders are pointed at."""
    target = tmp_path / "vendored"
    shutil.copytree(PACKAGE_DATA, target)
    monkeypatch.setenv(vendored.VENDORED_DIR_ENV, str(target))
    return target


def _rewrite(directory: Path, file_name: str, arrays: dict[str, np.ndarray]) -> None:
    """Replace a vendored file and record its new checksum in the copy's manifest."""
    write_npz(directory / file_name, arrays)
    manifest_path = directory / vendored.MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][file_name]["sha256"] = sha256_file(directory / file_name)
    manifest_path.write_text(json.dumps(manifest))


def _splits_equal(a: datasets.Dataset, b: datasets.Dataset) -> None:
    assert list(a.splits) == list(b.splits)
    for name in a.splits:
        for field in ("x_train", "y_train", "x_test", "y_test", "y_mean", "y_scale"):
            np.testing.assert_array_equal(
                getattr(a.split(name), field), getattr(b.split(name), field), err_msg=field
            )


# --- registry ------------------------------------------------------------------------


def test_names_sorted_and_complete():
    expected = sorted([*UCI_ROWS, *OTHER_SHAPES, *ADF_SETS, *THESIS_SETS, *PAPER_SETS])
    assert datasets.names() == expected


def test_unknown_name_lists_valid_names():
    with pytest.raises(DatasetError, match="valid names: .*boston_housing.*yacht"):
        datasets.load("no_such_set")
    with pytest.raises(DatasetError, match="unknown dataset"):
        datasets.describe("no_such_set")


def test_describe_does_not_load(monkeypatch):
    def refuse(key):
        raise AssertionError(f"describe loaded {key}")

    for module in ("uci", "tecator", "robot_arm", "timeseries"):
        monkeypatch.setattr(getattr(datasets, module), "load_arrays", refuse)
    info = datasets.describe("protein")
    assert info["n_splits"] == 5 and info["split_names"] == ["0", "1", "2", "3", "4"]
    assert info["original_file"] == "protein-tertiary-structure.txt.gz"
    assert datasets.describe("robot_arm")["split_names"] == ["default", "extra400"]


@pytest.mark.parametrize("name", sorted([*UCI_ROWS, *OTHER_SHAPES]))
def test_every_dataset_loads_finite_with_metadata(name, loaded):
    ds = loaded[name]
    info = datasets.describe(name)
    assert ds.name == name
    assert list(ds.splits) == info["split_names"]
    assert ds.metadata == info
    for key in ("source", "licence", "preprocessing", "task", "error_measure"):
        assert ds.metadata[key], key
    assert ds.metadata["task"] == "regression"
    assert ds.metadata["error_measure"] in ("rmse", "nmse")
    json.dumps(ds.metadata)  # must be storable as a JSON attribute
    for split_name, split in ds.splits.items():
        assert split.name == split_name
        for field in ("x_train", "y_train", "x_test", "y_test", "y_mean", "y_scale"):
            arr = getattr(split, field)
            assert arr.dtype == np.float64 and np.all(np.isfinite(arr)), field
        assert split.y_train.ndim == 2 and split.y_mean.shape == (split.n_outputs,)
        assert np.all(split.y_scale > 0)


@pytest.mark.parametrize("name", sorted(OTHER_SHAPES))
def test_shapes_of_non_uci_sets(name, loaded):
    ds = loaded[name]
    assert list(ds.splits) == [row[0] for row in OTHER_SHAPES[name]]
    for split_name, *shapes in OTHER_SHAPES[name]:
        split = ds.split(split_name)
        got = [split.x_train.shape, split.y_train.shape, split.x_test.shape, split.y_test.shape]
        assert got == shapes


@pytest.mark.parametrize("name", sorted(UCI_ROWS))
def test_uci_shapes(name, loaded):
    n, n_inputs, n_splits = UCI_ROWS[name]
    ds = loaded[name]
    assert list(ds.splits) == [str(i) for i in range(n_splits)]
    n_train = round(n * 0.9)
    for split in ds.splits.values():
        assert split.x_train.shape == (n_train, n_inputs)
        assert split.x_test.shape == (n - n_train, n_inputs)
        assert split.y_train.shape == (n_train, 1) and split.y_test.shape == (n - n_train, 1)
    assert ds.metadata["error_measure"] == "rmse"


@pytest.mark.parametrize("name", sorted([*UCI_ROWS, *OTHER_SHAPES]))
def test_load_is_deterministic(name, loaded):
    _splits_equal(loaded[name], datasets.load(name))


def test_split_lookup_error_names_valid_splits(loaded):
    with pytest.raises(DatasetError, match="valid splits: default, extra400"):
        loaded["robot_arm"].split("7")


# --- UCI recipe and standardisation -----------------------------------------------------


def test_uci_split_recipe_matches_legacy_global_stream():
    state = np.random.get_state()  # noqa: NPY002  (the recipe's own legacy API)
    try:
        np.random.seed(1)  # noqa: NPY002  (the recipe's own legacy API)
        expected = []
        for _ in range(2):
            perm = np.random.choice(range(506), 506, replace=False)  # noqa: NPY002  (the recipe's own legacy API)
            expected.append((perm[:455], perm[455:]))
    finally:
        np.random.set_state(state)  # noqa: NPY002  (the recipe's own legacy API)
    got = datasets.uci_split_indices(506, 20)
    assert len(got) == 20
    for (train, test), (exp_train, exp_test) in zip(got[:2], expected, strict=True):
        np.testing.assert_array_equal(train, exp_train)
        np.testing.assert_array_equal(test, exp_test)
        assert sorted(np.concatenate([train, test])) == list(range(506))
    assert not np.array_equal(got[0][0], got[1][0])


@pytest.mark.parametrize("split_name", ["0", "1"])
def test_boston_loader_uses_recipe_indices(split_name, loaded):
    raw = vendored.load_arrays("uci-bostonHousing")["data"]
    train, test = datasets.uci_split_indices(506, 2)[int(split_name)]
    split = loaded["boston_housing"].split(split_name)
    x, y = raw[:, :13], raw[:, 13:]
    mean, sd = x[train].mean(0), x[train].std(0)
    np.testing.assert_allclose(split.x_train, (x[train] - mean) / sd, rtol=0, atol=1e-12)
    np.testing.assert_allclose(split.x_test, (x[test] - mean) / sd, rtol=0, atol=1e-12)
    np.testing.assert_allclose(split.y_test * split.y_scale + split.y_mean, y[test], atol=1e-10)
    np.testing.assert_allclose(split.y_mean, y[train].mean(0), rtol=1e-14)
    np.testing.assert_allclose(split.y_scale, y[train].std(0), rtol=1e-14)


@pytest.mark.parametrize("name", ["concrete", "naval", "yacht", "tecator"])
def test_standardisation_uses_training_statistics(name, loaded):
    for split in list(loaded[name].splits.values())[:3]:
        np.testing.assert_allclose(split.x_train.mean(0), 0.0, atol=1e-10)
        np.testing.assert_allclose(split.y_train.mean(0), 0.0, atol=1e-10)
        np.testing.assert_allclose(split.y_train.std(0), 1.0, rtol=1e-10)
        sd = split.x_train.std(0)
        varying = sd > 1e-6
        np.testing.assert_allclose(sd[varying], 1.0, rtol=1e-10)
        # test-set statistics are not forced to 0/1
        assert np.max(np.abs(split.x_test.mean(0))) > 1e-3
        assert abs(float(split.y_test.mean())) > 1e-6


def test_constant_naval_columns_are_only_centred(loaded):
    split = loaded["naval"].split("0")
    raw = vendored.load_arrays("uci-naval-propulsion-plant")["data"]
    constant = np.ptp(raw[:, :16], axis=0) == 0
    assert constant.sum() == 2  # columns 8 and 11
    assert np.max(np.abs(split.x_train[:, constant])) < 1e-9
    assert np.max(np.abs(split.x_test[:, constant])) < 1e-9


# --- tecator, robot arm, sunspots, toy sets ------------------------------------------------


def test_tecator_pca_fitted_on_training_rows_only(loaded):
    arrays = vendored.load_arrays("tecator")
    columns = list(arrays["columns"])
    spectra = arrays["data"][:215, [columns.index(f"absorbance_{i}") for i in range(1, 101)]]
    fat = arrays["data"][:215, columns.index("fat")]
    split = loaded["tecator"].split("default")

    def expected_scores(fit_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        centre = fit_rows.mean(0)
        _, _, vt = np.linalg.svd(fit_rows - centre, full_matrices=False)
        scores = (spectra - centre) @ vt[:10].T
        mu, sd = scores[:172].mean(0), scores[:172].std(0)
        return (scores[:172] - mu) / sd, (scores[172:] - mu) / sd

    def same_up_to_sign(a: np.ndarray, b: np.ndarray) -> bool:
        signs = np.sign(np.sum(a * b, axis=0))
        return np.allclose(a, b * signs, atol=1e-8)

    train, test = expected_scores(spectra[:172])
    assert same_up_to_sign(split.x_train, train) and same_up_to_sign(split.x_test, test)
    _, test_all = expected_scores(spectra)  # PCA fitted on all 215 rows: must differ
    assert not same_up_to_sign(split.x_test, test_all)
    np.testing.assert_allclose(split.y_train.ravel() * split.y_scale + split.y_mean, fat[:172])
    np.testing.assert_allclose(split.y_test.ravel() * split.y_scale + split.y_mean, fat[172:])


def test_tecator_permission_note_travels_with_data():
    note = PACKAGE_DATA / "TECATOR_PERMISSION.txt"
    text = " ".join(note.read_text().split())
    assert "redistributed as long as this permission note is attached" in text
    manifest = vendored.read_manifest(PACKAGE_DATA)
    assert manifest["notes"]["TECATOR_PERMISSION.txt"]["sha256"] == sha256_file(note)


def test_robot_arm_generated_test_set(loaded):
    split = loaded["robot_arm"].split("default")
    x1, x2 = split.x_test[:, 0], split.x_test[:, 1]
    assert np.all((np.abs(x1) >= 0.453) & (np.abs(x1) <= 1.932))
    assert np.all((x2 >= 0.534) & (x2 <= 3.142))
    assert 0.4 < np.mean(x1 < 0) < 0.6
    residual = split.y_test - robot_arm_function(split.x_test)
    assert np.all(np.abs(residual.std(0) / 0.05 - 1) < 0.1)
    assert np.all(np.abs(residual.mean(0)) < 0.01)


def test_robot_arm_uses_mackay_rows(loaded):
    x = vendored.load_arrays("robot_arm_inputs")["data"]
    y = vendored.load_arrays("robot_arm_outputs")["data"]
    ds = loaded["robot_arm"]
    for split in ds.splits.values():
        np.testing.assert_array_equal(split.x_train, x[:200])
        np.testing.assert_array_equal(split.y_train, y[:200])
    np.testing.assert_array_equal(ds.split("extra400").x_test, x[200:])
    np.testing.assert_array_equal(ds.split("extra400").y_test, y[200:])
    # MacKay's cases follow the same function with noise s.d. about 0.05
    residual = y[:200] - robot_arm_function(x[:200])
    assert np.all(np.abs(residual.std(0) / 0.05 - 1) < 0.15)


def test_sunspots_windows_and_normalisation(loaded):
    table = vendored.load_arrays("sunspots_yearly")["data"]
    years, values = table[:, 0].astype(int), table[:, 1]
    train_years = (years >= 1700) & (years <= 1920)
    mean, sd = values[train_years].mean(), values[train_years].std()
    split = loaded["sunspots"].split("default")
    np.testing.assert_allclose([split.y_mean[0], split.y_scale[0]], [mean, sd])
    z = (values - mean) / sd
    index = {year: i for i, year in enumerate(years)}

    def window(target_year: int) -> np.ndarray:
        return np.array([z[index[target_year - k - 1]] for k in range(12)])

    np.testing.assert_allclose(split.x_train[0], window(1712))
    np.testing.assert_allclose(split.y_train[0, 0], z[index[1712]])
    np.testing.assert_allclose(split.y_train[-1, 0], z[index[1920]])
    np.testing.assert_allclose(split.x_test[0], window(1921))
    np.testing.assert_allclose(split.y_test[-1, 0], z[index[1979]])
    np.testing.assert_allclose(split.y_test.ravel() * sd + mean, values[index[1921] : index[1980]])


@pytest.mark.parametrize(("name", "offset"), [("toy_sine", 0.0), ("toy_sine_gap", 0.5)])
def test_toy_sets(name, offset, loaded):
    ds = loaded[name]
    split = ds.split("default")
    assert ds.metadata["noise_sd"] == 0.05
    np.testing.assert_array_equal(split.y_test, sine(split.x_test, offset))
    residual = split.y_train - sine(split.x_train, offset)
    assert 0.025 < residual.std() < 0.08  # 30 draws of N(0, 0.05^2)
    np.testing.assert_array_equal(split.y_mean, [0.0])
    np.testing.assert_array_equal(split.y_scale, [1.0])


def test_toy_sine_inputs_and_grid(loaded):
    sine_split = loaded["toy_sine"].split("default")
    assert np.all((sine_split.x_train >= 0) & (sine_split.x_train <= 1))
    assert sine_split.x_test[0, 0] == -0.2 and sine_split.x_test[-1, 0] == 1.2
    gap_split = loaded["toy_sine_gap"].split("default")
    assert gap_split.x_test[0, 0] == -0.5 and gap_split.x_test[-1, 0] == 1.5
    first, second = gap_split.x_train[:15, 0], gap_split.x_train[15:, 0]
    assert first.mean() < second.mean()


# --- vendored files: manifest, checksums, corrupt data ----------------------------------------


def test_manifest_matches_sources_and_files():
    manifest = vendored.read_manifest(PACKAGE_DATA)
    assert set(manifest["files"]) == {src.vendored_name for src in sources.SOURCES.values()}
    total = 0
    for src in sources.SOURCES.values():
        item = manifest["files"][src.vendored_name]
        path = PACKAGE_DATA / src.vendored_name
        assert item["sha256"] == sha256_file(path)
        assert item["source_sha256"] == src.raw_sha256
        assert item["content_sha256"] == src.content_sha256
        assert item["url"] == src.url and item["licence"] == src.licence
        assert (item["rows"], item["cols"]) == (src.rows, src.cols)
        total += path.stat().st_size
    assert total < 4_000_000
    assert (PACKAGE_DATA / "PROVENANCE.md").is_file()


def test_checksum_mismatch_names_file(data_copy):
    path = data_copy / "uci-yacht.npz"
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(DatasetError, match=r"checksum mismatch for vendored file uci-yacht\.npz"):
        datasets.load("yacht")


def test_nan_in_vendored_file_names_file(data_copy):
    arrays = read_npz(data_copy / "uci-yacht.npz")
    arrays["data"][5, 2] = np.nan
    _rewrite(data_copy, "uci-yacht.npz", arrays)
    with pytest.raises(DatasetError, match=r"uci-yacht\.npz.*NaN"):
        datasets.load("yacht")


def test_wrong_column_count_names_file(data_copy):
    arrays = read_npz(data_copy / "robot_arm_outputs.npz")
    arrays["data"] = arrays["data"][:, :1]
    _rewrite(data_copy, "robot_arm_outputs.npz", arrays)
    with pytest.raises(DatasetError, match=r"robot_arm_outputs\.npz.*expected 2 columns"):
        datasets.load("robot_arm")


def test_file_missing_from_manifest_is_refused(data_copy):
    manifest_path = data_copy / vendored.MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    del manifest["files"]["uci-energy.npz"]
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match=r"uci-energy\.npz has no entry"):
        datasets.load("energy")


# --- NetCDF round trip -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["robot_arm", "yacht", "sunspots"])
def test_netcdf_round_trip(name, loaded, tmp_path):
    path = tmp_path / f"{name}.nc"
    datasets.save_netcdf(loaded[name], path)
    back = datasets.load_netcdf(path)
    assert back.name == name and back.metadata == loaded[name].metadata
    _splits_equal(back, datasets.load(name))
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.nc"]  # no temp files left


def test_a_split_is_c_contiguous_however_it_was_made():
    """A loader's Fortran-ordered array and a prepared file's C-ordered one hold the same
    numbers; the Split stores both one way, so BLAS sums them in one order."""
    x = np.asfortranarray(np.arange(12.0).reshape(6, 2))
    y = np.asfortranarray(np.ones((6, 1)))
    split = datasets.Split("s", x, y, x[:3], y[:3], np.zeros(1), np.ones(1))
    for key in ("x_train", "y_train", "x_test", "y_test"):
        assert getattr(split, key).flags["C_CONTIGUOUS"], key
    assert np.array_equal(split.x_train, x)


def test_a_cell_from_the_registry_and_from_a_prepared_file_is_the_same_fit(tmp_path):
    """``bnnsweep fit`` without ``--data`` loads from the registry; the workflow passes the
    prepared NetCDF file. An LTU network on Pima (whose threshold decisions turn last-bit
    differences of a matrix product into another local optimum) comes out the same."""
    from bnnsweep.runner import fit_cell
    from bnnsweep.sweeps.sweep import Cell

    path = datasets.save_netcdf(datasets.load("pima_ripley"), tmp_path / "pima_ripley.nc")
    settings = {"hidden": 10, "penalty": 100}  # the defaults: 7 alternations, annealed
    axes = (("hidden", 10), ("penalty", 100))
    cell = Cell("e", "pima_ripley", "default", "ltu", "ltu", 0, axes, settings)
    fits = [fit_cell(cell, data, lambda *_: None).to_dataset() for data in (None, path)]
    for name in ("diag_test_errors", "diag_train_errors"):
        if name in fits[0]:
            assert fits[0][name].values.tolist() == fits[1][name].values.tolist(), name
    assert np.array_equal(fits[0]["pred_mean"].values, fits[1]["pred_mean"].values)


def test_load_netcdf_rejects_foreign_file(tmp_path):
    import xarray as xr

    path = tmp_path / "other.nc"
    xr.Dataset({"a": ("n", np.arange(3.0))}).to_netcdf(path, engine="netcdf4")
    with pytest.raises(DatasetError, match="other.nc"):
        datasets.load_netcdf(path)


# --- download fallback ---------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("BNNSWEEP_DATA_DIR", str(directory))
    return directory


def test_fetch_file_url_good_checksum(tmp_path, cache):
    source = tmp_path / "remote.txt"
    source.write_bytes(b"1 2 3\n")
    digest = sha256_bytes(b"1 2 3\n")
    got = fetch(source.as_uri(), digest, "copy.txt")
    assert got == cache / "copy.txt" and got.read_bytes() == b"1 2 3\n"
    source.unlink()  # a cached file with the right checksum needs no network
    assert fetch(source.as_uri(), digest, "copy.txt") == got


def test_fetch_bad_checksum_raises_and_saves_nothing(tmp_path, cache):
    source = tmp_path / "remote.txt"
    source.write_bytes(b"tampered\n")
    with pytest.raises(DatasetError, match="checksum mismatch"):
        fetch(source.as_uri(), sha256_bytes(b"original\n"), "copy.txt")
    assert not (cache / "copy.txt").exists()
    assert list(cache.iterdir()) == []


def test_fetch_unreachable_url_mentions_cache_path(tmp_path, cache):
    url = (tmp_path / "does-not-exist.txt").as_uri()
    with pytest.raises(DatasetError) as info:
        fetch(url, "0" * 64, "wanted.txt")
    message = str(info.value)
    assert str(cache / "wanted.txt") in message and url in message
    assert "BNNSWEEP_DATA_DIR" in message


def test_missing_vendored_file_falls_back_to_download(tmp_path, data_copy, cache, monkeypatch):
    rng = np.random.default_rng(0)
    table = rng.normal(size=(308, 7))
    raw = tmp_path / "yacht-remote.txt"
    np.savetxt(raw, table, fmt="%.6f")
    spec = dataclasses.replace(
        sources.SOURCES["uci-yacht"], url=raw.as_uri(), content_sha256=sha256_file(raw)
    )
    monkeypatch.setitem(sources.SOURCES, "uci-yacht", spec)
    (data_copy / "uci-yacht.npz").unlink()
    with pytest.warns(UserWarning, match="uci-yacht.npz is missing"):
        ds = datasets.load("yacht")
    assert (cache / spec.cache_name).is_file()
    table = np.loadtxt(raw)
    train, test = datasets.uci_split_indices(308, 1)[0]
    split = ds.split("0")
    np.testing.assert_allclose(split.y_test * split.y_scale + split.y_mean, table[test, 6:])
    np.testing.assert_allclose(split.y_mean, table[train, 6:].mean(0))


@needs_shared
def test_download_of_real_raw_file_reproduces_vendored_arrays(tmp_path, data_copy, cache):
    src = sources.SOURCES["uci-yacht"]
    plain = tmp_path / "data.txt"
    plain.write_bytes(read_raw_bytes(SHARED / src.raw_file))
    (data_copy / src.vendored_name).unlink()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sources.SOURCES, src.key, dataclasses.replace(src, url=plain.as_uri()))
        with pytest.warns(UserWarning):
            fallback = vendored.load_arrays(src.key)
    np.testing.assert_array_equal(
        fallback["data"], read_npz(PACKAGE_DATA / src.vendored_name)["data"]
    )


# --- vendoring script ---------------------------------------------------------------------


def _vendor_script():
    spec = importlib.util.spec_from_file_location(
        "vendor_datasets", REPO / "scripts" / "vendor_datasets.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_shared
def test_vendor_script_reproduces_committed_files(tmp_path):
    manifest = _vendor_script().vendor(SHARED, tmp_path / "out")
    committed = vendored.read_manifest(PACKAGE_DATA)
    assert manifest == committed
    assert (tmp_path / "out" / "PROVENANCE.md").read_text() == (
        PACKAGE_DATA / "PROVENANCE.md"
    ).read_text()


@needs_shared
def test_vendor_script_rejects_corrupt_raw_file(tmp_path):
    raw = tmp_path / "raw"
    for path in SHARED.rglob("*"):
        if path.is_file():
            copy = raw / path.relative_to(SHARED)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
    target = raw / "uci" / "yacht.txt.gz"
    blob = bytearray(target.read_bytes())
    blob[-10] ^= 0xFF
    target.write_bytes(bytes(blob))
    out = tmp_path / "out"
    with pytest.raises(DatasetError, match=r"raw file uci/yacht\.txt\.gz"):
        _vendor_script().vendor(raw, out)
    assert not out.exists()  # nothing written before every checksum passed
