"""The binary text classification sets of paper 004 sec. 6 (supplement Table 2), as Soudry,
Hubara & Meir (2014) distributed them with their EBP code: one MATLAB 5 file per set,
``processed_data.mat``, holding ``data`` (documents x features, double), ``labels`` (+-1, one
column), ``T`` (documents), ``M`` (features), ``N`` (outputs, 1) and ``default_Test_ratio``.

Each file is downloaded from the EBP repository at a fixed commit and accepted only if its
git blob id (SHA-1 of the content, as the commit's tree records it) matches; offline, the
error names the URL and where to place the file. Labels become 0/1 (+1 -> 1); ten 90/10
splits by the UCI benchmark recipe, inputs standardised with each split's training mean and
s.d. (paper 004: "we then follow the experimental protocol used for regression"). The
parser :func:`parse_text_set` is the one the stand-in (:mod:`.stand_ins`) goes through too.
"""

from __future__ import annotations

import io
from functools import partial

import numpy as np

from .base import DatasetError, Split
from .checksums import GIT_BLOB_SHA1
from .classes import random_splits
from .download import fetch
from .registry import register
from .uci import n_train_of

EBP_COMMIT = "449a261e92300c26f3a17dd22ce6c599c064961b"
EBP_URL = (
    "https://raw.githubusercontent.com/ExpectationBackpropagation/EBP_Matlab_Code/"
    f"{EBP_COMMIT}/Datasets/Classification/{{folder}}/processed_data.mat"
)
TEXT_SPLITS = 10

# name: (folder in the EBP repository, git blob id at EBP_COMMIT, documents, features, what)
TEXT_SETS = {
    "news_comp_hw": ("20News_comp", "d88840f91d5f766da7d80bb4f16c0a70d6172167", 1943, 29409,
                     "20 Newsgroups, comp (IBM PC vs Mac hardware)"),
    "news_elec_med": ("20News_elec", "48f4f7c242de515e4e92f0e91906713d8aae3d81", 1971, 38699,
                      "20 Newsgroups, sci.electronics vs sci.med"),
    "spam_d0": ("domain0", "068b18ec42473226dfa02344c9a8c53f04f6ba30", 2500, 26580,
                "spam or ham, user d0 (ECML/PKDD 2006 discovery challenge)"),
    "spam_d1": ("domain1", "ccce12e15702bf00d1d1159134b284c6d5117758", 2500, 27523,
                "spam or ham, user d1 (ECML/PKDD 2006 discovery challenge)"),
    "reuters_i8": ("reuters_I81_I83", "fcad4877a877fc7953d7d0d1b1358d1c7aa645f3", 2000, 12167,
                   "Reuters RCV1, I81 vs I83"),
    "reuters_i6": ("reuters_I654_I65", "071458a86dfadbfb120a063b7c607444ea42bc6c", 2000, 11463,
                   "Reuters RCV1, I654 vs I65"),
}  # fmt: skip
"""Paper 004 supplement Table 2 (N x d), in its order; the blob ids of three files (20News_comp,
reuters_I81_I83, reuters_I654_I65) were checked against their content, the other three are
those the commit's tree records."""


def parse_text_set(source, where: str, rows: int | None = None, cols: int | None = None):
    """``(x, y)`` of an EBP ``processed_data.mat`` (a path or a binary file object): x the
    ``data`` matrix (T x M), y the labels as 0/1 in one column. ``where`` names the source in
    errors; ``rows``/``cols`` the expected shape, when known."""
    from scipy.io import loadmat  # scipy only when the data are read

    try:
        mat = loadmat(source)
    except (ValueError, TypeError, OSError, NotImplementedError) as err:
        raise DatasetError(f"{where}: not a MATLAB 5 file of the EBP text sets ({err})") from None
    missing = [k for k in ("data", "labels", "T", "M") if k not in mat]
    if missing:
        raise DatasetError(f"{where}: not an EBP text set (variables {missing} missing)")
    x = np.asarray(mat["data"], dtype=float)
    labels = np.asarray(mat["labels"], dtype=float).reshape(-1)
    T, M = int(np.ravel(mat["T"])[0]), int(np.ravel(mat["M"])[0])
    expected = (rows if rows is not None else T, cols if cols is not None else M)
    if x.shape != expected or labels.shape != (expected[0],) or (T, M) != expected:
        raise DatasetError(
            f"{where}: expected {expected[0]} documents x {expected[1]} features, got data "
            f"{x.shape}, labels {labels.shape}, T={T}, M={M}"
        )
    if not set(np.unique(labels)) <= {-1.0, 1.0}:
        raise DatasetError(f"{where}: labels must be +-1, got {sorted(set(np.unique(labels)))}")
    return x, (labels > 0).astype(float)[:, None]


def text_set_bytes(name: str) -> bytes:
    """The downloaded (or hand-placed) file of text set ``name``, checked by its blob id."""
    folder, blob, *_ = TEXT_SETS[name]
    path = fetch(
        EBP_URL.format(folder=folder), blob, f"ebp_text/{folder}.mat", algorithm=GIT_BLOB_SHA1
    )
    return path.read_bytes()


def _text_splits(name: str) -> dict[str, Split]:
    _, _, rows, cols, _ = TEXT_SETS[name]
    x, y = parse_text_set(io.BytesIO(text_set_bytes(name)), f"text set {name}", rows, cols)
    return random_splits(x, y, TEXT_SPLITS)


for _name, (_folder, _blob, _rows, _cols, _what) in TEXT_SETS.items():
    register(
        _name,
        metadata={
            "source": (
                f"{_what}; {_rows} documents x {_cols} features, processed_data.mat of "
                f"folder {_folder} of the EBP code of Soudry, Hubara & Meir (2014), {EBP_URL.format(folder=_folder)}"
            ),
            "licence": "as distributed with the EBP code (no licence file in the repository)",
            "download_files": [f"ebp_text/{_folder}.mat"],
            "preprocessing": (
                f"labels +1 -> 1, -1 -> 0. {TEXT_SPLITS} splits by the UCI benchmark recipe "
                "(90/10); inputs standardised with each split's training mean and s.d."
            ),
            "task": "binary",
            "n_classes": 2,
            "error_measure": "error_rate",
            "download": True,
            "split_shape": [n_train_of(_rows), _cols, 1, _rows - n_train_of(_rows)],
            "paper": "paper 004 sec. 6, Fig. 2 (bottom, second panel); supplement Table 2",
        },
        split_names=[str(i) for i in range(TEXT_SPLITS)],
    )(partial(_text_splits, _name))
