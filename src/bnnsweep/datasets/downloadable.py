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
from .uci import n_train_of

MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/{name}"
MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


def parse_idx(gzipped: bytes, where) -> np.ndarray:
    """An IDX array (the MNIST format: big-endian dims after a magic number) from the bytes of
    a gzipped IDX file; ``where`` names the source in errors."""
    try:
        raw = gzip.decompress(gzipped)
    except (OSError, EOFError) as err:
        raise DatasetError(f"{where}: not a gzipped IDX file ({err})") from None
    if len(raw) < 4 or raw[:2] != b"\0\0":
        raise DatasetError(f"{where}: not an IDX file (bad magic number)")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if raw[2] != 0x08 or data.size != int(np.prod(shape)):
        raise DatasetError(f"{where}: not an unsigned-byte IDX file of shape {shape}")
    return data.reshape(shape)


def read_idx(path) -> np.ndarray:
    """:func:`parse_idx` of the file at ``path``."""
    return parse_idx(path.read_bytes(), path)


def mnist_arrays(images: np.ndarray, labels: np.ndarray, where) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (pixels / 255, one row per image) and labels (one column) of an IDX image array
    (n, rows, cols) and its IDX label vector (n,)."""
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels) or labels.max() > 9:
        raise DatasetError(
            f"{where}: images {images.shape} and labels {labels.shape} do not make MNIST "
            "pairs (n x rows x cols images, n digit labels)"
        )
    return images.reshape(len(images), -1) / 255.0, labels[:, None].astype(float)


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
    return mnist_arrays(x, y, f"MNIST {prefix}")


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
        "split_shape": [60000, 784, 1, 10000],
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


def parse_bike_csv(text: str, where, rows: int | None = BIKE_ROWS) -> dict[str, np.ndarray]:
    """Inputs ``x`` (the columns ``BIKE_INPUTS``) and counts ``y`` (``cnt``, one column) of
    the text of a bike-sharing ``hour.csv``; ``rows`` the expected number of rows (None: any)."""
    header, _, body = text.partition("\n")
    names = [n.strip() for n in header.split(",")]
    missing = [n for n in (*BIKE_INPUTS, "cnt") if n not in names]
    if missing:
        raise DatasetError(f"{where}: not the bike-sharing hour.csv (columns {missing} missing)")
    columns = [names.index(n) for n in (*BIKE_INPUTS, "cnt")]
    try:
        table = np.loadtxt(io.StringIO(body), delimiter=",", usecols=columns, ndmin=2)
    except ValueError as err:
        raise DatasetError(f"{where}: unreadable row ({err})") from None
    if rows is not None and table.shape[0] != rows:
        raise DatasetError(f"{where}: expected {rows} rows, got {table.shape[0]}")
    counts = table[:, -1:]
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise DatasetError(f"{where}: cnt must hold non-negative whole counts")
    return {"x": table[:, :-1], "y": counts}


def _bike_table() -> dict[str, np.ndarray]:
    path = cache_path(BIKE_FILE)
    if not path.exists():
        raise DatasetError(
            f"bike_sharing needs hour.csv from the UCI archive {BIKE_URL}: unzip it and save "
            f"hour.csv as {path} (or set BNNSWEEP_DATA_DIR to a folder holding {BIKE_FILE})"
        )
    return parse_bike_csv(path.read_text(encoding="ascii"), path)


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
        "split_shape": [
            n_train_of(BIKE_ROWS),
            len(BIKE_INPUTS),
            1,
            BIKE_ROWS - n_train_of(BIKE_ROWS),
        ],
    },
    split_names=[str(i) for i in range(BIKE_SPLITS)],
)
def bike_sharing() -> dict[str, Split]:
    table = _bike_table()
    return random_splits(table["x"], table["y"], BIKE_SPLITS)
