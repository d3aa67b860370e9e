#!/usr/bin/env python
"""Convert the shared raw data files into the package's vendored copies.

Usage: ``python scripts/vendor_datasets.py [RAW_DIR] [--out DIR]``

RAW_DIR (default ``../shared/datasets`` next to the repository) must hold the raw files
listed in ``bnnsweep.datasets.sources`` and a ``SHA256SUMS`` file. Every raw file is checked
against SHA256SUMS and against the checksum recorded in ``sources.py`` before anything is
written. Each file is then parsed once and saved as a deterministic compressed ``.npz`` in
``src/bnnsweep/datasets/data/``, next to ``MANIFEST.json`` (checksums, sources, URLs,
licences, shapes), ``PROVENANCE.md`` and the licence notes that must travel with the data.
Running it twice on the same input produces identical files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from bnnsweep.datasets import describe, names  # noqa: E402
from bnnsweep.datasets.base import DatasetError  # noqa: E402
from bnnsweep.datasets.checksums import sha256_bytes, sha256_file, verify_sha256  # noqa: E402
from bnnsweep.datasets.convert import parse_raw, read_raw_bytes, write_npz  # noqa: E402
from bnnsweep.datasets.sources import PERMISSION_NOTES, SOURCES, RawSource  # noqa: E402
from bnnsweep.datasets.vendored import MANIFEST_FORMAT, MANIFEST_NAME  # noqa: E402

DEFAULT_RAW = REPO.parent / "shared" / "datasets"
DEFAULT_OUT = REPO / "src" / "bnnsweep" / "datasets" / "data"


def read_sha256sums(path: Path) -> dict[str, str]:
    """``{relative file name: sha256}`` from a ``sha256sum``-style listing."""
    if not path.is_file():
        raise DatasetError(f"checksum list {path} not found")
    sums = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        digest, _, name = line.strip().partition(" ")
        sums[name.strip().lstrip("*")] = digest.lower()
    return sums


def check_raw(raw_dir: Path, sums: dict[str, str], src: RawSource) -> Path:
    """Verify one raw file against SHA256SUMS and ``sources.py``; return its path."""
    path = raw_dir / src.raw_file
    if not path.is_file():
        raise DatasetError(f"raw file {src.raw_file} not found in {raw_dir}")
    if src.raw_file not in sums:
        raise DatasetError(f"raw file {src.raw_file} has no entry in SHA256SUMS")
    verify_sha256(path, sums[src.raw_file], what=f"raw file {src.raw_file}")
    if sums[src.raw_file] != src.raw_sha256:
        raise DatasetError(
            f"raw file {src.raw_file}: SHA256SUMS says {sums[src.raw_file]} but sources.py "
            f"records {src.raw_sha256}; update sources.py deliberately if the data changed"
        )
    content = sha256_bytes(read_raw_bytes(path))
    if content != src.content_sha256:
        raise DatasetError(
            f"raw file {src.raw_file}: uncompressed content sha256 {content} differs from "
            f"sources.py ({src.content_sha256})"
        )
    return path


def _write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _array_shapes(arrays) -> dict[str, list[int]]:
    return {name: list(value.shape) for name, value in sorted(arrays.items())}


def provenance_text(manifest: dict) -> str:
    """PROVENANCE.md: per vendored file and per dataset, source, licence and conversion."""
    lines = [
        "# Provenance of the vendored data",
        "",
        "Written by `scripts/vendor_datasets.py`; do not edit by hand. Each raw file was",
        "checked against the SHA-256 list that came with it, parsed once with NumPy",
        "(whitespace- or comma-separated numbers, gzip removed) and stored as a compressed",
        "`.npz` holding `data` (float64, same rows and columns as the raw file) and, for the",
        "CSV, `columns` (the header). Read them with `numpy.load(path, allow_pickle=False)`.",
        "",
        "The URLs below are the canonical sources as far as known; none could be checked",
        "(no network when the files were vendored). A download is only accepted if its",
        "SHA-256 equals `content_sha256` (the raw file's uncompressed bytes); otherwise the",
        "loader explains where to place the file by hand.",
        "",
        "## Vendored files",
        "",
    ]
    for name, item in manifest["files"].items():
        lines += [
            f"### `{name}`",
            "",
            f"- from: `{item['source_file']}` (sha256 `{item['source_sha256']}`)",
            f"- what: {item['origin']}",
            f"- licence: {item['licence']}",
            f"- canonical URL (unverified): <{item['url']}>",
            f"- content sha256: `{item['content_sha256']}`",
            f"- shape: {item['rows']} rows x {item['cols']} columns; "
            f"vendored sha256 `{item['sha256']}`",
            "",
        ]
    for note in PERMISSION_NOTES:
        lines += [
            f"`{note}` is the data owner's permission note, copied unchanged; it must stay",
            "with any copy of the Tecator data.",
            "",
        ]
    lines += ["## Datasets built from these files", ""]
    for dataset in names():
        info = describe(dataset)
        if not info.get("files"):
            continue
        lines += [
            f"### `{dataset}`",
            "",
            f"- source: {info['source']}",
            f"- licence: {info['licence']}",
            f"- preprocessing: {info['preprocessing']}",
            f"- splits: {info['n_splits']}; error measure: {info['error_measure']}",
            "",
        ]
    return "\n".join(lines)


def vendor(raw_dir: Path, out_dir: Path) -> dict:
    """Verify, convert and describe every raw source; return the manifest written."""
    sums = read_sha256sums(raw_dir / "SHA256SUMS")
    raw_paths = {key: check_raw(raw_dir, sums, src) for key, src in SOURCES.items()}
    for note in PERMISSION_NOTES:
        if not (raw_dir / note).is_file():
            raise DatasetError(f"licence note {note} not found in {raw_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for key, src in SOURCES.items():
        arrays = parse_raw(raw_paths[key], src)
        target = out_dir / src.vendored_name
        write_npz(target, arrays)
        files[src.vendored_name] = {
            "sha256": sha256_file(target),
            "bytes": target.stat().st_size,
            "source_file": src.raw_file,
            "source_sha256": src.raw_sha256,
            "content_sha256": src.content_sha256,
            "url": src.url,
            "url_verified": False,
            "licence": src.licence,
            "origin": src.origin,
            "rows": src.rows,
            "cols": src.cols,
            "arrays": _array_shapes(arrays),
        }
    notes = {}
    for note in PERMISSION_NOTES:
        shutil.copyfile(raw_dir / note, out_dir / note)
        notes[note] = {"sha256": sha256_file(out_dir / note), "applies_to": ["tecator.npz"]}
    manifest = {
        "format": MANIFEST_FORMAT,
        "generated_by": "scripts/vendor_datasets.py",
        "files": files,
        "notes": notes,
    }
    _write_text(out_dir / MANIFEST_NAME, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    _write_text(out_dir / "PROVENANCE.md", provenance_text(manifest))
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw_dir", nargs="?", type=Path, default=DEFAULT_RAW)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    manifest = vendor(args.raw_dir, args.out)
    total = sum(item["bytes"] for item in manifest["files"].values())
    print(f"vendored {len(manifest['files'])} files, {total / 1e6:.2f} MB, into {args.out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DatasetError as exc:
        sys.exit(f"vendor_datasets: error: {exc}")
