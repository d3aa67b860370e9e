"""Larger data of paper 004 that the package does not ship: MNIST and the UCI bike-sharing
counts. Both are fetched into the download cache (:mod:`bnnsweep.datasets.download`) on
first use; offline, the error says which file to place where.

MNIST (LeCun, Cortes & Burges; CC BY-SA 3.0): the four IDX files, verified by their
published MD5 sums; 60000 training and 10000 test images, pixels scaled to [0, 1], label
the digit (paper 004 sec. 6: two hidden layers of 400 ReLU units, 100 epochs).

Bike sharing (Fanaee-T & Gama 2013, UCI id 275, CC BY 4.0): ``hour.csv`` from the UCI
archive. No checksum of it could be recorded (no network when this was written), so the
file is placed by hand and checked for its shape and header instead; 12 inputs (season,
yr, mnth, hr, holiday, weekday, workingday, weathersit, temp, atemp, hum, windspeed), the
hourly count ``cnt`` as target, ten 90/10 splits (paper 004 sec. 6).
"""

from __future__ import annotations

import gzip
import io

import numpy as np

from .base import DatasetError, Split
from .classes import random_splits
from .download import cache_path, fetch
from .generated import unstandardised_split
from .registry import register

MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/{name}"
MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


def read_idx(path) -> np.ndarray:
    """An IDX array (the MNIST format: big-endian dims after a magic number), gunzipped."""
    raw = gzip.decompress(path.read_bytes())
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if raw[2] != 0x08 or data.size != int(np.prod(shape)):
        raise DatasetError(f"{path}: not an unsigned-byte IDX file of shape {shape}")
    return data.reshape(shape)


def _mnist_part(prefix: str) -> tuple[np.ndarray, np.ndarray]:
    images, labels = (
        f"{prefix}-{kind}" for kind in ("images-idx3-ubyte.gz", "labels-idx1-ubyte.gz")
    )
    x = read_idx(
        fetch(MNIST_URL.format(name=images), MNIST_MD5[images], f"mnist/{images}", algorithm="md5")
    )
    y = read_idx(
        fetch(MNIST_URL.format(name=labels), MNIST_MD5[labels], f"mnist/{labels}", algorithm="md5")
    )
    return x.reshape(len(x), -1) / 255.0, y[:, None].astype(float)


@register(
    "mnist",
    metadata={
        "source": "MNIST handwritten digits (LeCun, Cortes & Burges), IDX files from a public mirror",
        "licence": "CC BY-SA 3.0",
        "download_files": list(MNIST_MD5),
        "preprocessing": "pixels / 255, 784 inputs; the standard 60000/10000 split; label the digit",
        "task": "multiclass",
        "n_classes": 10,
        "error_measure": "error_rate",
        "download": True,
    },
    split_names=["default"],
)
def mnist() -> dict[str, Split]:
    x_train, y_train = _mnist_part("train")
    x_test, y_test = _mnist_part("t10k")
    return {"default": unstandardised_split("default", x_train, y_train, x_test, y_test)}


BIKE_URL = "https://archive.ics.uci.edu/static/public/275/bike+sharing+dataset.zip"
BIKE_FILE = "bike_sharing/hour.csv"
BIKE_ROWS = 17379
BIKE_INPUTS = ("season", "yr", "mnth", "hr", "holiday", "weekday", "workingday", "weathersit",
               "temp", "atemp", "hum", "windspeed")  # fmt: skip
BIKE_SPLITS = 10


def _bike_table() -> dict[str, np.ndarray]:
    path = cache_path(BIKE_FILE)
    if not path.exists():
        raise DatasetError(
            f"bike_sharing needs hour.csv from the UCI archive {BIKE_URL}: unzip it and save "
            f"hour.csv as {path} (or set BNNSWEEP_DATA_DIR to a folder holding {BIKE_FILE})"
        )
    header, _, body = path.read_text(encoding="ascii").partition("\n")
    names = [n.strip() for n in header.split(",")]
    missing = [n for n in (*BIKE_INPUTS, "cnt") if n not in names]
    if missing:
        raise DatasetError(f"{path}: not the bike-sharing hour.csv (columns {missing} missing)")
    columns = [names.index(n) for n in (*BIKE_INPUTS, "cnt")]
    table = np.loadtxt(io.StringIO(body), delimiter=",", usecols=columns, ndmin=2)
    if table.shape[0] != BIKE_ROWS:
        raise DatasetError(f"{path}: expected {BIKE_ROWS} rows, got {table.shape[0]}")
    return {"x": table[:, :-1], "y": table[:, -1:]}


@register(
    "bike_sharing",
    metadata={
        "source": f"UCI Bike Sharing (Fanaee-T & Gama 2013), hour.csv of {BIKE_URL}",
        "licence": "CC BY 4.0 (UCI Machine Learning Repository)",
        "download_files": [BIKE_FILE],
        "preprocessing": (
            f"inputs {', '.join(BIKE_INPUTS)}; target cnt (hourly rentals). {BIKE_SPLITS} splits by "
            "the UCI benchmark recipe; inputs standardised per split, counts untouched"
        ),
        "task": "count",
        "error_measure": "mad",
        "download": True,
    },
    split_names=[str(i) for i in range(BIKE_SPLITS)],
)
def bike_sharing() -> dict[str, Split]:
    table = _bike_table()
    return random_splits(table["x"], table["y"], BIKE_SPLITS)
