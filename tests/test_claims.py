"""``bnnsweep claims``: rows computed from merged files, the verdict, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnnsweep.claims import Claim, Ours, metric, verdict
from bnnsweep.claims.registry import outcome, registered
from bnnsweep.claims.table import (
    claims_frame,
    configured_experiments,
    experiments_of,
    published_text,
    swept,
)
from bnnsweep.cli import main


def write_merged(results, experiment, dataset, label, errors, method_name="laplace"):
    """A merged file of one cell per value in ``errors``: split i predicts its two test
    targets 0 with error +-errors[i], so that the cell's test_rmse is errors[i]."""
    from bnnsweep.cells.writer import write_cell_atomic
    from bnnsweep.datasets.generated import unstandardised_split
    from bnnsweep.method_base import FitResult
    from bnnsweep.results import cell_content, merge_cells, write_netcdf_atomic
    from bnnsweep.sweeps.sweep import Cell

    paths = []
    for i, err in enumerate(errors):
        split = unstandardised_split(
            str(i), np.zeros((3, 1)), np.zeros(3), np.zeros((2, 1)), np.zeros(2)
        )
        result = FitResult(pred_mean=np.array([[err], [-err]]), pred_var=np.ones((2, 1)))
        cell = Cell(experiment, dataset, str(i), label, method_name, 0, (("hidden", 3),), {})
        path = results / experiment / "cells" / f"{i}.nc"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cell_atomic(cell_content(result, split, cell), path)
        paths.append(path)
    write_netcdf_atomic(merge_cells(paths), results / experiment / "merged.nc")


def config_dir(tmp_path, experiment, dataset, label):
    configs = tmp_path / "config"
    configs.mkdir()
    (configs / "mine.yaml").write_text(
        f"experiments:\n  {experiment}:\n    datasets: [{dataset}]\n"
        f"    methods:\n      {label}: {{hidden: 3}}\n"
    )
    return configs


@pytest.mark.parametrize(
    ("errors", "kind"),
    [((0.50, 0.60), "reproduced"), ((0.90, 1.00), "not reproduced")],
)
def test_a_published_number_against_a_merged_file(tmp_path, errors, kind):
    """Thesis Table 5.2's Tecator evidence RMSE (0.55) beside two runs of label ``laplace``
    on ``tecator``: ours is their mean +- s.e. (0.55 +- 0.05, or 0.95 +- 0.05, 8 s.e. off)."""
    results = tmp_path / "results"
    write_merged(results, "exp", "tecator", "laplace", errors)
    frame = claims_frame(results, config_dir(tmp_path, "exp", "tecator", "laplace"))
    row = frame[frame["where"] == "thesis Table 5.2 (evidence, Thodberg)"].iloc[0]
    assert row["ours_mean"] == pytest.approx(np.mean(errors))
    assert row["ours_se"] == pytest.approx(0.05)
    assert row["n_runs"] == 2 and row["setting"] == "hidden=3"
    assert row["config"].endswith("mine.yaml") and row["experiment"] == "exp"
    assert outcome(row["verdict"]) == kind
    assert row["data"] == "tecator"


def test_an_experiment_without_results_is_not_run(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    frame = claims_frame(results, config_dir(tmp_path, "exp", "tecator", "laplace"))
    mine = frame[frame["experiment"] == "exp"]
    assert len(mine) == 2 and (mine["verdict"] == "not run").all()  # thesis + paper 000
    row = mine.iloc[0]
    assert row["ours"] == f"not run (config {tmp_path / 'config' / 'mine.yaml'})"
    assert math.isnan(row["ours_mean"])


def test_the_shipped_configs_run_every_claim_and_no_number_is_typed(tmp_path):
    """On an empty results directory every row of the shipped configs is 'not run (config
    X)': no claim lacks a config, and no value of ours exists without a merged file."""
    from pathlib import Path

    config = Path(__file__).resolve().parents[1] / "config"
    (tmp_path / "results").mkdir()
    frame = claims_frame(tmp_path / "results", config)
    assert len(frame) >= len(registered())
    assert set(frame["verdict"]) == {"not run"}, frame[frame["verdict"] != "not run"]
    assert frame["ours"].str.startswith(f"not run (config {config}/").all()
    assert frame["ours_mean"].isna().all()


def test_every_declared_experiment_is_in_a_shipped_config():
    from pathlib import Path

    configured = configured_experiments(Path(__file__).resolve().parents[1] / "config")
    missing = [
        (c.paper, c.where, e) for c in registered() for e in c.experiments if e not in configured
    ]
    assert not missing
    assert all(experiments_of(c, configured) for c in registered())


def test_verdicts():
    # printed as 1.00 (a bare 1 would stand for [0.5, 1.5])
    claim = Claim("paper x", "T1", "q", 1.0, metric("test_rmse"), experiments=("e",), decimals=2)
    assert outcome(verdict(claim, Ours(1.2, 0.1, 4, ("d",)), False)) == "reproduced"
    assert outcome(verdict(claim, Ours(1.4, 0.1, 4, ("d",)), False)) == "not reproduced"
    assert outcome(verdict(claim, Ours(1.4, 0.1, 4, ("d",)), True)) == "stand-in"
    assert outcome(verdict(claim, Ours(1.4, math.nan, 1, ("d",)), False)) == "undecided"
    tolerant = Claim("p", "T", "q", 1.0, metric("x"), experiments=("e",), tolerance=0.5)
    assert outcome(verdict(tolerant, Ours(1.4, math.nan, 1, ("d",)), False)) == "reproduced"
    # the paper's own s.e. widens the band: 0.4 off, s.e. hypot(0.1, 0.2) = 0.22 -> 1.8 s.e.
    printed = Claim(
        "p", "T", "q", 1.0, metric("x"), experiments=("e",), published_se=0.2, decimals=2
    )
    assert verdict(printed, Ours(1.4, 0.1, 4, ("d",)), False) == "within 3 s.e. (1.8)"
    # a deterministic method (every run the same number) is judged by the tolerance
    exact = Claim("p", "T", "q", 2.78, metric("x"), experiments=("e",), tolerance=0.005)
    assert outcome(verdict(exact, Ours(2.779, 0.0, 5, ("d",)), False)) == "reproduced"
    assert outcome(verdict(exact, Ours(1.089, 0.0, 5, ("d",)), False)) == "not reproduced"
    # seeds ending in one optimum differ by the optimiser's tolerance: the same as equal
    assert outcome(verdict(exact, Ours(2.779, 3e-8, 5, ("d",)), False)) == "reproduced"
    assert verdict(claim, Ours(1.2, 3e-8, 5, ("d",)), False).startswith("every run the same")
    assert outcome(verdict(claim, Ours(1.2, 3e-8, 5, ("d",)), False)) == "undecided"
    assert outcome(verdict(claim, Ours(1.2, 1e-3, 5, ("d",)), False)) == "not reproduced"


def test_metric_groups_by_axes_and_pools_on_request():
    import pandas as pd

    runs = pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "b"],
            "method": ["m"] * 4,
            "status": ["ok", "ok", "ok", "diverged"],
            "hidden": [1, 2, 1, 1],
            "test_rmse": [1.0, 2.0, 3.0, 100.0],
        }
    )
    by_size = metric("test_rmse")(runs)
    assert [(o.setting, o.mean, o.n) for o in by_size] == [
        ("hidden=1", 2.0, 2),
        ("hidden=2", 2.0, 1),
    ]
    (pooled,) = metric("test_rmse", pooled=True)(runs)
    assert pooled.mean == pytest.approx(2.0) and pooled.n == 3  # the diverged run left out
    assert pooled.se == pytest.approx(np.std([1.0, 2.0, 3.0], ddof=1) / np.sqrt(3))
    runs.loc[0, "status"] = "not_converged"  # counted, and said
    assert [o.not_ok for o in metric("test_rmse")(runs)] == [1, 0]


def test_a_paper_number_of_m_components_is_compared_with_m_component_runs():
    """Paper 000's committee of 3 components against our 3-component runs only: a sweep of
    5-component runs does not sweep its setting, and the thesis's 5 components take them."""
    import pandas as pd

    runs = pd.DataFrame(
        {
            "dataset": ["sunspots"] * 3,
            "method": ["vi_mixture"] * 3,
            "status": ["ok"] * 3,
            "hidden": [8, 8, 8],
            "components": [5, 5, 3],
            "test_nmse": [0.22, 0.24, 0.30],
        }
    )
    claims = {
        c.where: c for c in registered() if c.dataset == "sunspots" and c.label == "vi_mixture"
    }
    paper = claims["paper 000 Table 1 (variational committee, 3 components)"]
    thesis = claims["thesis Table 5.1 (variational mixture, 5 components)"]
    assert [(o.setting, o.mean) for o in paper.measure(runs)] == [("hidden=8, components=3", 0.30)]
    (ours,) = thesis.measure(runs)
    assert ours.setting == "hidden=8, components=5" and ours.mean == pytest.approx(0.23)
    assert paper.measure(runs[runs["components"] == 5]) == []
    assert not swept(paper, runs[runs["components"] == 5])  # "not swept", not a failure
    assert paper.measure(runs.assign(status="diverged")) == []
    assert swept(paper, runs.assign(status="diverged"))  # "no usable runs"
    assert metric("test_nmse", axes={"absent": 1})(runs) == []


def test_bad_input_is_one_line_and_nonzero(tmp_path, capsys):
    assert main(["claims", "--results", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bnnsweep: error: results directory {tmp_path / 'nowhere'} does not exist"]
    (tmp_path / "results").mkdir()
    assert main(["claims", "--results", str(tmp_path / "results"), "--experiment", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown experiment(s) nope" in err[0]


def test_cli_writes_markdown_and_csv(tmp_path, capsys):
    results = tmp_path / "results"
    write_merged(results, "exp", "tecator", "laplace", (0.5, 0.6))
    configs = config_dir(tmp_path, "exp", "tecator", "laplace")
    out = tmp_path / "claims"
    args = ["claims", "--results", str(results), "--configs", str(configs)]
    assert main([*args, "--experiment", "exp", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "0.55 ± 0.05" in printed and "within 3 s.e." in printed
    assert (tmp_path / "claims.md").read_text() == printed
    import pandas as pd

    csv = pd.read_csv(tmp_path / "claims.csv")
    assert set(csv["experiment"]) == {"exp"} and len(csv) == 2


def test_pooled_experiments_make_one_row(tmp_path, monkeypatch):
    """A claim over several experiments (a paper's average over datasets our configs split
    into experiments) pools their runs; an experiment without results is named."""
    from bnnsweep.claims import registry

    claim = Claim(
        "paper t", "sec. 9", "test_rmse pooled", 2.0, metric("test_rmse", pooled=True),
        experiments=("e1", "e2"), pool_experiments=True, show_sd=True,
    )  # fmt: skip
    monkeypatch.setattr(registry, "_REGISTRY", [claim])
    monkeypatch.setattr(registry, "registered", lambda: [claim])
    import bnnsweep.claims.table as table

    monkeypatch.setattr(table, "registered", lambda: [claim])
    results = tmp_path / "results"
    write_merged(results, "e1", "tecator", "laplace", (1.0, 2.0))
    configs = tmp_path / "config"
    configs.mkdir()
    (configs / "c.yaml").write_text(
        "experiments:\n  e1: {datasets: [tecator], methods: {laplace: {}}}\n"
        "  e2: {datasets: [yacht], methods: {laplace: {}}}\n"
    )
    (row,) = claims_frame(results, configs).to_dict("records")
    assert row["experiment"] == "e1 + e2" and row["n_runs"] == 2
    assert row["data"] == "tecator (not run: e2)" and row["ours_mean"] == pytest.approx(1.5)
    write_merged(results, "e2", "yacht", "laplace", (3.0,))
    (row,) = claims_frame(results, configs).to_dict("records")
    assert row["n_runs"] == 3 and row["ours_mean"] == pytest.approx(2.0)
    assert row["ours"] == "2 ± 0.58 (s.d. 1)" and row["data"] == "tecator, yacht"
    assert outcome(row["verdict"]) == "reproduced"


def test_paper004_claims_take_their_numbers_from_published():
    from bnnsweep.figures.published import PAPER004_SUMMARY

    mine = [c for c in registered() if c.paper == "paper 004" and c.where.startswith("sec. 6")]
    assert sorted(c.published for c in mine) == sorted(v for v, _ in PAPER004_SUMMARY.values())
    text = [c for c in mine if "text sets" in c.quantity]
    assert all(c.experiments == ("adf004_text", "adf004_text_standin") for c in text)


def test_a_paper_number_of_h_hidden_units_is_compared_with_h_unit_runs():
    """The thesis's diagonal Gaussian of 8 hidden units on Tecator against our 8-unit runs
    only, paper 000's of 3 units against 3-unit runs; a reference naming no size takes all."""
    import pandas as pd

    runs = pd.DataFrame(
        {
            "dataset": ["tecator"] * 4,
            "method": ["vi_gauss"] * 2 + ["map"] * 2,
            "status": ["ok"] * 4,
            "hidden": [3, 8, 3, 8],
            "test_rmse": [0.54, 0.55, 0.53, 0.72],
        }
    )
    claims = {c.where: c for c in registered() if c.dataset == "tecator"}
    thesis = claims["thesis Table 5.2 (variational, diagonal, 8 hidden units)"]
    paper = claims["paper 000 Table 2 (variational, diagonal, 3 hidden units)"]
    assert [(o.setting, o.mean) for o in thesis.measure(runs)] == [("hidden=8", 0.55)]
    assert [(o.setting, o.mean) for o in paper.measure(runs)] == [("hidden=3", 0.54)]
    stopping = claims["thesis Table 5.2 (early stopping)"]
    assert [o.setting for o in stopping.measure(runs)] == ["hidden=3", "hidden=8"]


def test_paper004_table3_spread_enters_the_verdict_as_the_s_e_of_ten_splits():
    """Suppl. Table 3's +- read as the s.d. over the 10 splits (sec. 6 says so of fig. 2):
    EBP 5 layers on yacht, 5.58 +- 5.77, has s.e. 1.82, so ours 2.46 +- 0.23 is 1.7
    combined s.e. away; the same mean against our s.e. alone would be 13.6 off."""
    (claim,) = [c for c in registered() if c.dataset == "yacht" and c.label == "ebp_5layer"]
    assert claim.published_se == pytest.approx(5.77 / math.sqrt(10))
    assert "(s.e. 1.8)" in claim.published_note
    ours = Ours(2.457, 0.23, 3, ("yacht",))
    assert verdict(claim, ours, False) == "within 3 s.e. (1.7)"
    (thesis,) = [c for c in registered() if c.where == "thesis Table 5.1 (evidence)"]
    assert math.isnan(thesis.published_se)  # one printed run: no s.e.


def test_no_finding_types_a_number_of_ours():
    """A finding says what was found and the command that measures it; a number of ours in
    it would go stale with the code (the crabs finding once quoted 7.983 and 6.683 of an old
    run). Every decimal in a finding is a reference (Table 6.1, fig. 5.6, eq. 5.48) or a
    published value."""
    import re

    from bnnsweep.figures.published import PUBLISHED

    published = {c.published for c in registered()}
    published |= {ref.value for refs in PUBLISHED.values() for ref in refs}
    reference = re.compile(r"(?:Tables?|figs?\.|secs?\.|eqs?\.|Appendix|appendix) $")
    for claim in registered():
        for m in re.finditer(r"(?<![\w.])\d+\.\d+(?:\.\d+)*", claim.finding):
            if reference.search(claim.finding[: m.start()][-12:]):
                continue
            assert float(m.group()) in published, (claim.where, m.group())


def _literal_decimals(source: str, node) -> int:
    import ast

    return len(ast.get_source_segment(source, node).lstrip("-").partition(".")[2])


def test_every_published_number_knows_how_many_decimals_were_printed():
    """0.60 is 0.6 to Python: a Reference typed with a trailing zero says ``decimals``, so
    that the verdict's printed interval is the paper's (+- 0.005, not +- 0.05). Read from
    the source: every literal's decimals are the ones its claim uses."""
    import ast
    from pathlib import Path

    from bnnsweep.claims.registry import printed_half_unit
    from bnnsweep.figures import published

    root = Path(published.__file__).parent
    for name in ("published.py", "evidence_committee.py"):
        source = (root / name).read_text()
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Reference"):
                continue
            value = node.args[0]
            if not isinstance(value, ast.Constant | ast.UnaryOp):
                continue  # a computed value (suppl. Table 3): checked below
            given = {k.arg: k.value.value for k in node.keywords if k.arg == "decimals"}
            number = float(ast.literal_eval(value))
            want = 0.5 * 10.0 ** -_literal_decimals(source, value)
            assert printed_half_unit(number, given.get("decimals")) == want, (name, number)
    source = (root / "published.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in (
            "DEEP_ADF_TABLE3",
            "PAPER004_SUMMARY",
        ):
            for key, row in zip(node.value.keys, node.value.values, strict=True):
                firsts = (
                    [row.elts[0]]
                    if not isinstance(row.elts[0], ast.Tuple)
                    else [cell.elts[0] for cell in row.elts]
                )
                for cell in firsts:
                    number = float(ast.literal_eval(cell))
                    printed = _literal_decimals(source, cell)
                    claims = [c for c in registered() if c.published == number]
                    assert claims, number
                    for claim in claims:
                        half = printed_half_unit(claim.published, claim.decimals)
                        assert half == 0.5 * 10.0**-printed, (ast.literal_eval(key), number)


def test_a_number_inside_its_printed_interval_is_within_and_rounding_enters_the_s_e():
    """Thesis Table 6.2 prints 0.54 (grouped prior): ours 0.5401 +- 2e-6 is inside
    [0.535, 0.545], whatever our s.e.; 0.549 (single prior) against ours 0.5512 +- 1.2e-5 is
    outside [0.5485, 0.5495] and off by 0.0022 / hypot(1.2e-5, 0.0005 / sqrt 3) = 7.6 s.e.,
    not the 190 our s.e. alone would say."""
    grouped = Claim("thesis", "T6.2", "q", 0.54, metric("x"), experiments=("e",))
    assert verdict(grouped, Ours(0.5401, 2e-6, 3, ("d",)), False) == (
        "within the printed precision (± 0.005)"
    )
    single = Claim("thesis", "T6.2", "q", 0.549, metric("x"), experiments=("e",))
    assert verdict(single, Ours(0.5512, 1.2e-5, 3, ("d",)), False) == "off by 7.6 s.e."
    sixty = Claim("p", "T2", "q", 0.60, metric("x"), experiments=("e",), decimals=2)
    assert published_text(sixty) == "0.60" and published_text(single) == "0.549"
    assert outcome(verdict(sixty, Ours(0.64, 0.001, 3, ("d",)), False)) == "not reproduced"
