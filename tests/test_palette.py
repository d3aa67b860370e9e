"""Issue 35: one colour-blind-safe palette, distinct and visible colours per method, public as
``bnnsweep.figures.palette()``.

Colour-vision deficiencies are simulated with the matrices of Machado, Oliveira & Fernandes
(2009, IEEE TVCG 15(6), severity 1.0, applied to linear RGB); colours are compared by the
CIE76 difference in CIELAB (a Delta E of about 2.3 is just noticeable; markers and lines
need far more). Visibility on white is the WCAG contrast ratio (1.05) / (L + 0.05) of the
relative luminance L."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from bnnsweep.figures import palette
from bnnsweep.figures._common import SPARE_COLOURS
from bnnsweep.methods import names

MACHADO = {
    "none": np.eye(3),
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}  # fmt: skip

GROUPS = {
    "network": ["laplace", "map", "hmc", "vi_gauss", "vi_mixture", "chaining"],
    "adf": ["pbp", "ebp", "relu_map", "relu_hmc"],
    # a config's own labels beside the network methods (occam_laplace_variants.yaml)
    "network_and_labels": ["laplace", "map", "hmc", "vi_gauss", "vi_mixture", "chaining",
                           "laplace_paper", "laplace_paper_gn"],
}  # fmt: skip
MIN_DELTA_E = 15.0
"""Okabe & Ito's set itself comes to 17.0 (laplace and vi_gauss under tritanopia)."""
MIN_CONTRAST = 2.0


def _linear(rgb):
    c = np.asarray(rgb, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb):
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ np.clip(linear_rgb, 0.0, 1.0) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a, b, vision: str) -> float:
    sim = np.asarray(MACHADO[vision])
    return float(np.linalg.norm(_lab(sim @ _linear(a)) - _lab(sim @ _linear(b))))


def contrast_on_white(rgb) -> float:
    luminance = float(np.array([0.2126, 0.7152, 0.0722]) @ _linear(rgb))
    return 1.05 / (luminance + 0.05)


def closest_pair(colours: dict) -> tuple[float, str, str, str]:
    return min(
        (delta_e(colours[a], colours[b], v), a, b, v)
        for a, b in itertools.combinations(sorted(colours), 2)
        for v in MACHADO
    )


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_methods_drawn_together_stay_apart_for_every_colour_vision(group):
    distance, a, b, vision = closest_pair(palette(GROUPS[group]))
    assert distance >= MIN_DELTA_E, (a, b, vision, distance)


def test_every_method_colour_stands_out_on_white():
    colours = {**palette(), **palette(f"label_{i}" for i in range(len(SPARE_COLOURS)))}
    low = {m: round(contrast_on_white(c), 2) for m, c in colours.items()}
    assert min(low.values()) >= MIN_CONTRAST, low


def test_the_checks_reject_seaborns_colorblind_palette_by_sorted_name():
    """The palette before issue 35 (seaborn's colorblind then dark, by sorted method name)
    fails the checks: colorblind's light yellow lands on some method (``map`` then, another
    one as methods are added) and is too light on white, and two network methods are too
    close (chaining and hmc under protanopia then, 12.8)."""
    import seaborn as sns

    colours = sns.color_palette("colorblind") + sns.color_palette("dark")
    old = dict(zip(names(), colours, strict=False))
    assert min(contrast_on_white(c) for c in old.values()) < MIN_CONTRAST
    distance, *_ = closest_pair({m: old[m] for m in GROUPS["network"] if m in old})
    assert distance < MIN_DELTA_E


def test_palette_is_public_and_matches_the_figures():
    from bnnsweep.figures import method_palette

    every = palette()
    assert set(every) == set(names())
    assert palette(["laplace", "mine"]) == method_palette(["mine", "laplace"])
    assert to_rgb(every["laplace"]) == pytest.approx(to_rgb("#0072B2"))
