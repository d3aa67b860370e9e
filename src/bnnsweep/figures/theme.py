"""Seaborn's look for every figure: the ``whitegrid`` style, the ``notebook`` context at
``FONT_SCALE``, and the ``colorblind``, ``dark`` and ``husl`` palettes.

Seaborn computes them; importing seaborn also imports scipy.stats (about 0.6 s of CPU, a
quarter of a merge-and-draw job). So the theme is computed by seaborn once per installed
seaborn and matplotlib version and kept as JSON in the user cache
(``user_cache.user_cache_dir()/figures``); later jobs read it and do not import seaborn.
A cache that cannot be read or written costs the import, never a different figure.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ..runtime.user_cache import cache_path, read_json, write_json

STYLE = "whitegrid"
CONTEXT = "notebook"
FONT_SCALE = 0.9
PALETTES = {"colorblind": 10, "dark": 10, "husl": 36}
"""Seaborn palette name -> number of colours kept."""
LEFT_OUT = ("image.cmap",)
"""Style keys not kept: seaborn's default image colormap ("rocket") is one seaborn registers
with matplotlib when imported, so matplotlib alone would refuse it. Every figure that draws
an image or a colour-mapped scatter names its colormap."""


def _versions() -> str:
    found = []
    for package in ("seaborn", "matplotlib"):
        try:
            found.append(f"{package}-{version(package)}")
        except PackageNotFoundError:
            found.append(f"{package}-unknown")
    return "_".join(found)


def cache_file() -> Path | None:
    """The theme's cache file for the installed seaborn and matplotlib (None: no cache)."""
    return cache_path("figures", f"theme_{_versions()}.json")


def from_seaborn() -> dict:
    """The theme as seaborn gives it: ``rc``, the rcParams that ``sns.axes_style(STYLE)``
    and then ``sns.plotting_context(CONTEXT, font_scale=FONT_SCALE)`` set (but
    ``LEFT_OUT``), and each palette of ``PALETTES`` as a list of RGB triples in [0, 1]."""
    import seaborn as sns

    rc = {**sns.axes_style(STYLE), **sns.plotting_context(CONTEXT, font_scale=FONT_SCALE)}
    palettes = {
        name: [[float(v) for v in colour] for colour in sns.color_palette(name, n)]
        for name, n in PALETTES.items()
    }
    return {"rc": {k: v for k, v in rc.items() if k not in LEFT_OUT}, "palettes": palettes}


def _valid(theme) -> bool:
    return (
        isinstance(theme, dict)
        and isinstance(theme.get("rc"), dict)
        and isinstance(theme.get("palettes"), dict)
        and all(
            isinstance(theme["palettes"].get(name), list) and len(theme["palettes"][name]) == n
            for name, n in PALETTES.items()
        )
    )


@lru_cache(maxsize=1)
def theme() -> dict:
    """The theme from the cache file, else from seaborn (and then into the cache file)."""
    path = cache_file()
    cached = read_json(path)
    if _valid(cached):
        return cached
    fresh = from_seaborn()
    write_json(path, fresh)  # if it cannot be written, the next job imports seaborn again
    return fresh


def rc() -> dict:
    """The rcParams of the style and context (``matplotlib.rc_context(rc())``)."""
    return dict(theme()["rc"])


def palette(name: str) -> list[tuple[float, float, float]]:
    """Seaborn's palette ``name`` (a key of ``PALETTES``) as RGB tuples."""
    return [tuple(c) for c in theme()["palettes"][name]]
