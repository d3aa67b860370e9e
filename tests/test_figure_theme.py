"""The figure theme (bnnsweep.figures.theme): seaborn's style, context and palettes, computed
by seaborn once and then read from the user cache without importing seaborn."""

import json
import subprocess
import sys

import matplotlib
import pytest
import seaborn as sns

from bnnsweep.figures import theme


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    theme.theme.cache_clear()
    yield tmp_path / "cache"
    theme.theme.cache_clear()


def _rc_inside(manager) -> dict:
    with manager:
        return dict(matplotlib.rcParams)


def test_the_style_sets_every_rc_parameter_as_seaborn_does(empty_cache):
    ours = _rc_inside(matplotlib.rc_context(theme.rc()))
    with sns.axes_style(theme.STYLE):
        seaborns = _rc_inside(sns.plotting_context(theme.CONTEXT, font_scale=theme.FONT_SCALE))
    differ = {k for k in seaborns if ours[k] != seaborns[k]}
    assert differ == set(theme.LEFT_OUT)
    assert ours["axes.grid"] is True and ours["font.size"] == pytest.approx(10.8)


def test_the_palettes_are_seaborns(empty_cache):
    for name, n in theme.PALETTES.items():
        assert theme.palette(name) == [tuple(c) for c in sns.color_palette(name, n)]


def test_a_cached_theme_is_read_back_without_importing_seaborn(empty_cache):
    first = theme.theme()
    assert json.loads(theme.cache_file().read_text()) == first
    assert theme.cache_file().is_relative_to(empty_cache)
    script = (
        "import sys\n"
        "from bnnsweep.figures._common import method_palette, style, new_figure\n"
        "with style():\n"
        "    new_figure(2, 2).add_subplot().plot([0, 1])\n"
        "print(method_palette(['laplace', 'not_a_method']))\n"
        "assert 'seaborn' not in sys.modules and 'scipy.stats' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    from bnnsweep.figures._common import method_palette

    assert done.stdout.strip() == str(method_palette(["laplace", "not_a_method"]))


@pytest.mark.parametrize("content", ["", "{not json", '{"rc": {}, "palettes": {"husl": [1]}}'])
def test_a_damaged_cache_file_is_replaced_by_seaborns_theme(empty_cache, content):
    theme.cache_file().parent.mkdir(parents=True)
    theme.cache_file().write_text(content)
    assert theme.theme() == theme.from_seaborn()
    assert json.loads(theme.cache_file().read_text()) == theme.from_seaborn()


def test_an_unwritable_cache_costs_only_the_import(empty_cache):
    empty_cache.mkdir()
    (empty_cache / "bnnsweep").write_text("a file where the cache folder would be")
    assert theme.theme() == theme.from_seaborn()
    assert not theme.cache_file().exists()
