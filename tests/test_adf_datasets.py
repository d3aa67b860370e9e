"""Classification and count datasets of the ADF methods, and the task check of the config."""

import gzip
import hashlib

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.datasets import classes, downloadable
from bnnsweep.sweeps.config import ConfigError, expand, validate

SETS = {  # name: (task, classes or None, n_splits, n_inputs)
    "breast_cancer": ("binary", 2, 20, 30),
    "digits": ("multiclass", 10, 20, 64),
    "synthetic_softmax10": ("multiclass", 10, 10, 10),
    "synthetic_softmax100": ("multiclass", 100, 10, 10),
    "toy_two_class": ("binary", 2, 1, 2),
    "toy_three_class": ("multiclass", 3, 1, 2),
    "synthetic_counts": ("count", None, 10, 5),
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_sets_load_with_task_and_integer_labels(name):
    task, n_classes, n_splits, n_inputs = SETS[name]
    info = datasets.describe(name)
    assert info["task"] == task and info["n_splits"] == n_splits
    ds = datasets.load(name)
    split = ds.split(info["split_names"][-1])
    assert split.n_inputs == n_inputs and split.n_outputs == 1
    labels = np.concatenate([split.y_train, split.y_test])[:, 0]
    assert np.all(labels == np.round(labels)) and labels.min() >= 0
    np.testing.assert_array_equal(split.y_mean, 0.0)
    np.testing.assert_array_equal(split.y_scale, 1.0)
    if n_classes:
        assert labels.max() == n_classes - 1
    again = datasets.load(name).split(info["split_names"][-1])
    np.testing.assert_array_equal(again.x_train, split.x_train)


def test_synthetic_softmax_has_about_100_examples_per_class():
    _, y = classes.synthetic_softmax_data(10, 30010)
    counts = np.bincount(y[:, 0].astype(int), minlength=10)
    assert counts.max() == 100 and counts.min() >= 90


def test_vendored_classification_file_checksum_is_verified(tmp_path, monkeypatch):
    import shutil

    from bnnsweep.datasets import vendored

    target = tmp_path / "vendored"
    shutil.copytree(vendored.vendored_dir(), target)
    monkeypatch.setenv(vendored.VENDORED_DIR_ENV, str(target))
    path = target / "classification" / "sklearn-digits.npz"
    path.write_bytes(path.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(datasets.DatasetError, match="sklearn-digits.npz"):
        datasets.load("digits")


def test_idx_reader_and_offline_messages(tmp_path, monkeypatch):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    header = bytes([0, 0, 0x08, 3]) + b"".join(int(n).to_bytes(4, "big") for n in images.shape)
    path = tmp_path / "x-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(header + images.tobytes()))
    np.testing.assert_array_equal(downloadable.read_idx(path), images)
    monkeypatch.setenv("BNNSWEEP_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(downloadable, "MNIST_URL", "file:///nonexistent/{name}")
    with pytest.raises(datasets.DatasetError, match="save it as .*mnist/train-images"):
        datasets.load("mnist")
    with pytest.raises(datasets.DatasetError, match="hour.csv"):
        datasets.load("bike_sharing")


def test_mnist_files_accepted_by_md5(tmp_path, monkeypatch):
    """A cached file is used when its MD5 matches (here: a fake file and its own MD5)."""
    images = np.zeros((3, 2, 2), dtype=np.uint8)
    labels = np.array([1, 2, 3], dtype=np.uint8)
    cache = tmp_path / "cache" / "mnist"
    cache.mkdir(parents=True)
    md5 = {}
    for prefix in ("train", "t10k"):
        for kind, arr in (("images-idx3-ubyte.gz", images), ("labels-idx1-ubyte.gz", labels)):
            head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(n.to_bytes(4, "big") for n in arr.shape)
            blob = gzip.compress(head + arr.tobytes(), mtime=0)
            (cache / f"{prefix}-{kind}").write_bytes(blob)
            md5[f"{prefix}-{kind}"] = hashlib.md5(blob).hexdigest()
    monkeypatch.setenv("BNNSWEEP_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(downloadable, "MNIST_MD5", md5)
    split = datasets.load("mnist").split("default")
    assert split.x_train.shape == (3, 4) and split.y_test[:, 0].tolist() == [1, 2, 3]


def test_bike_sharing_from_a_placed_file(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    cols = ["instant", "dteday", *downloadable.BIKE_INPUTS, "casual", "registered", "cnt"]
    rows = [",".join(cols)]
    for i in range(downloadable.BIKE_ROWS):
        values = rng.integers(0, 5, len(downloadable.BIKE_INPUTS)).tolist()
        rows.append(",".join(map(str, [i, 0, *values, 1, 2, 3 + i % 7])))
    (tmp_path / "bike_sharing").mkdir()
    (tmp_path / "bike_sharing" / "hour.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("BNNSWEEP_DATA_DIR", str(tmp_path))
    split = datasets.load("bike_sharing").split("3")
    assert split.n_inputs == 12 and set(np.unique(split.y_train)) <= set(range(3, 10))


def _config(dataset, **settings):
    experiment = {"datasets": [dataset], "splits": ["0"], "methods": {"pbp": settings}}
    return {"experiments": {"e": experiment}}


def test_config_refuses_a_likelihood_that_does_not_fit_the_task():
    with pytest.raises(ConfigError, match="'digits' is a multiclass task.*likelihood"):
        expand(validate(_config("digits", hidden=10)))
    with pytest.raises(ConfigError, match="'boston_housing' is a regression task"):
        expand(validate(_config("boston_housing", likelihood="probit")))
    with pytest.raises(ConfigError, match="method 'laplace'.*'breast_cancer' is a binary task"):
        expand(validate({"experiments": {"e": {"datasets": ["breast_cancer"], "splits": ["0"],
                                               "methods": {"laplace": {}}}}}))  # fmt: skip
    assert len(expand(validate(_config("digits", likelihood="softmax")))) == 1
    assert len(expand(validate(_config("breast_cancer", likelihood="softmax")))) == 1
