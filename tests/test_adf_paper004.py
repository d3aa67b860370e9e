"""Paper 004 on its own data: the text sets', MNIST's and bike sharing's parsers (on the
stand-ins made in their formats), the checksummed downloads offline, the Gaussian-rounded
baseline, and config/adf_paper004_standin.yaml run by Snakemake (shrunk) into figures and
claims rows marked as stand-in."""

from __future__ import annotations

import io
import shutil
import subprocess
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import norm

from bnnsweep import datasets
from bnnsweep.datasets.base import DatasetError
from bnnsweep.datasets.checksums import GIT_BLOB_SHA1, file_digest
from bnnsweep.datasets.downloadable import parse_bike_csv, parse_idx
from bnnsweep.datasets.stand_ins import bike_standin_csv, idx_bytes, text_standin_mat
from bnnsweep.datasets.text_sets import EBP_URL, TEXT_SETS, parse_text_set

ROOT = Path(__file__).resolve().parents[1]


# ---- parsers, on files in the real formats -------------------------------------------------


def test_text_set_parser_reads_the_ebp_mat_format():
    x, y = parse_text_set(io.BytesIO(text_standin_mat()), "stand-in", 500, 400)
    assert x.shape == (500, 400) and y.shape == (500, 1)
    assert set(np.unique(y)) == {0.0, 1.0} and 0.4 < y.mean() < 0.6
    assert (x >= 0).all() and 20 <= (x > 0).sum(axis=1).mean() <= 25  # ~25 words a document
    with pytest.raises(DatasetError, match="expected 500 documents x 401 features"):
        parse_text_set(io.BytesIO(text_standin_mat()), "stand-in", 500, 401)
    with pytest.raises(DatasetError, match="not a MATLAB 5 file"):
        parse_text_set(io.BytesIO(b"not a mat file" * 20), "junk")


def test_text_standin_is_learnable_and_labelled():
    meta = datasets.describe("text_standin")
    assert meta["stand_in"] and "news_comp_hw" in meta["stands_in_for"]
    assert meta["source"].startswith("STAND-IN")
    split = datasets.load("text_standin").split("0")
    assert split.x_train.shape == (450, 400) and split.x_test.shape == (50, 400)


def test_idx_round_trip_and_bad_magic():
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    assert np.array_equal(parse_idx(idx_bytes(images), "x"), images)
    import gzip

    with pytest.raises(DatasetError, match="bad magic"):
        parse_idx(gzip.compress(b"\x01\x02\x08\x01" + bytes(8)), "x")
    with pytest.raises(DatasetError, match="not a gzipped IDX"):
        parse_idx(b"plain", "x")
    split = datasets.load("mnist_standin").split("default")
    assert split.x_train.shape == (1000, 64) and split.x_test.shape == (400, 64)
    assert split.x_train.max() <= 1.0 and set(np.unique(split.y_train)) == set(range(10))


def test_bike_parser_reads_hour_csv():
    text = bike_standin_csv()
    table = parse_bike_csv(text, "stand-in", rows=2000)
    assert table["x"].shape == (2000, 12) and table["y"].shape == (2000, 1)
    counts = table["y"][:, 0]
    assert counts.var() > 3 * counts.mean()  # over-dispersed, as the real counts
    with pytest.raises(DatasetError, match="expected 17379 rows"):
        parse_bike_csv(text, "stand-in")
    with pytest.raises(DatasetError, match=r"columns \['cnt'\] missing"):
        parse_bike_csv(text.replace(",cnt\n", ",count\n", 1), "stand-in", rows=None)


# ---- downloads, offline -------------------------------------------------------------------


def test_git_blob_digest():
    """The id git gives 'hello\\n' (``git hash-object``)."""
    path = Path(__file__).parent / "_blob.txt"
    try:
        path.write_bytes(b"hello\n")
        assert file_digest(path, GIT_BLOB_SHA1) == "ce013625030ba8dba906f756967f9e9ca394464a"
    finally:
        path.unlink()


@pytest.fixture
def offline(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr("urllib.request.urlopen", refuse)
    monkeypatch.setenv("BNNSWEEP_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", ["news_comp_hw", "mnist"])
def test_offline_download_names_url_and_place(offline, name, capsys):
    from bnnsweep.cli import main

    assert main(["prepare", "--dataset", name, "--output", str(offline / "x.nc")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "could not download https://" in line and str(offline) in line
    if name == "news_comp_hw":
        url = EBP_URL.format(folder="20News_comp")
        assert url in line and str(offline / "ebp_text" / "20News_comp.mat") in line


def test_a_placed_file_with_other_content_is_refused(offline):
    """A hand-placed file is accepted only with the blob id of the pinned commit's tree."""
    target = offline / "ebp_text" / "reuters_I81_I83.mat"
    target.parent.mkdir()
    target.write_bytes(text_standin_mat())
    with pytest.raises(DatasetError, match="the file already there has a different checksum"):
        datasets.load("reuters_i8")
    assert TEXT_SETS["reuters_i8"][0] == "reuters_I81_I83"


# ---- the Gaussian-rounded baseline ----------------------------------------------------------


def test_rounded_gaussian_is_a_distribution_over_counts():
    from bnnsweep.engines.adf.likelihoods import rounded_count, rounded_gaussian_logpmf

    counts = np.arange(0.0, 400.0)
    for mean, var in ((3.0, 4.0), (-2.0, 1.0), (150.0, 25.0), (40.0, 900.0)):
        logp = np.asarray(rounded_gaussian_logpmf(counts, mean, var))
        sd = np.sqrt(var)
        upper = (counts + 0.5 - mean) / sd
        lower = np.where(counts == 0, -np.inf, (counts - 0.5 - mean) / sd)
        # scipy's Phi differences, taken in the tail where both terms are small
        exact = np.where(
            lower > 0, norm.sf(lower) - norm.sf(upper), norm.cdf(upper) - norm.cdf(lower)
        )
        assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-9)
        big = exact > 1e-12
        assert np.allclose(logp[big], np.log(exact[big]), rtol=1e-9, atol=1e-9)
    # far in the upper tail the difference keeps its digits (log of ~1e-100, not -inf)
    assert np.isfinite(float(rounded_gaussian_logpmf(60.0, 0.0, 1.0)))
    assert np.asarray(rounded_count(np.array([-3.2, 0.4, 2.5, 7.6]))).tolist() == [0, 0, 2, 8]


def test_gaussian_rounded_pbp_predicts_counts():
    from bnnsweep.methods import get_method

    split = datasets.load("bike_sharing_standin").split("0")
    method = get_method("pbp")
    settings = method.settings({"hidden": 10, "likelihood": "gaussian_rounded", "epochs": 2})
    result = method.fit(split, settings, np.random.default_rng(0), log=lambda *a: None)
    assert result.status == "ok" and result.likelihood == "gaussian_rounded"
    pred = result.pred_mean[:, 0]
    assert (pred >= 0).all() and np.array_equal(pred, np.round(pred))
    # better than predicting the training mean count for every hour
    y = split.y_test[:, 0]
    assert np.mean(np.abs(pred - y)) < np.mean(np.abs(split.y_train.mean() - y))
    assert np.isfinite(result.test_logpred).all()


# ---- the stand-in configs under Snakemake ---------------------------------------------------


def shrunk_standin_config(path: Path) -> Path:
    """config/adf_paper004_standin.yaml with one split, one epoch and 8 hidden units."""
    config = yaml.safe_load((ROOT / "config" / "adf_paper004_standin.yaml").read_text())
    for spec in config["experiments"].values():
        if "splits" in spec:
            spec["splits"] = ["0", "1"]
        for settings in spec["methods"].values():
            settings.update(epochs=1, hidden=8)
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.workflow
def test_standin_configs_validate_plan_and_run(tmp_path):
    from bnnsweep.claims.table import claims_frame
    from bnnsweep.cli import main
    from bnnsweep.sweeps.workflow_run import snakemake_command

    for name in ("adf_paper004.yaml", "adf_paper004_standin.yaml", "uci_adf_paper004.yaml"):
        assert main(["validate", str(ROOT / "config" / name)]) == 0
        assert main(["plan", str(ROOT / "config" / name), "--results", str(tmp_path)]) == 0
    config = shrunk_standin_config(tmp_path / "standin.yaml")
    cmd = snakemake_command(ROOT, tmp_path, config, "--cores", "2")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = tmp_path / "results"
    for experiment in ("adf004_text_standin", "adf004_mnist_standin", "adf004_bike_standin"):
        assert (results / experiment / "merged.nc").is_file()
        assert list((results / experiment / "figures").glob("adf_epoch_error*"))
    configs = tmp_path / "config"
    configs.mkdir()
    shutil.copy(config, configs / "adf_paper004_standin.yaml")
    frame = claims_frame(results, configs)
    rows = frame[frame["experiment"].str.endswith("_standin")]
    assert len(rows) == 6  # text: error and loglik of pbp and ebp; bike: two logliks
    assert (rows["verdict"] == "stand-in data: no verdict").all()
    assert rows["data"].str.startswith("STAND-IN (").all()
    assert rows["ours_mean"].notna().all()


def test_uci_table_sets_our_pool_beside_paper004s_summary(adf_yacht_merged):
    """Under the UCI table: mean and s.d. over every run of pbp and ebp, beside sec. 6's."""
    from bnnsweep.figures.adf_uci_table import paper004_summary
    from bnnsweep.figures.published import PAPER004_SUMMARY

    ds = adf_yacht_merged  # a merged Dataset of real pbp and ebp cells
    summary = paper004_summary(ds).set_index(["method", "metric"])
    assert len(summary) == 4
    for (label, metric), row in summary.iterrows():
        values = ds[metric].values[ds["method"].values == label]
        assert row["mean"] == pytest.approx(values.mean())
        assert row["sd"] == pytest.approx(values.std(ddof=1))
        assert (row["paper004_mean"], row["paper004_sd"]) == PAPER004_SUMMARY[
            ("uci", label, metric)
        ]
