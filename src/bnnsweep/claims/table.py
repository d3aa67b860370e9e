"""``bnnsweep claims``: every declared claim beside our value from merged results, as a table.

For each claim (:mod:`.registry`) and each experiment that reproduces it, the experiment's
``<results>/<experiment>/merged.nc`` is read and the claim's measure applied to its runs;
every number in the table comes from the declarations (published) or from those files
(ours). An experiment is traced to the shipped config files that define it by reading
``<configs>/*.yaml``; a claim with no such experiment is ``not configured``, one whose
experiment has no merged file ``not run (config X)``. A row computed from a dataset
registered as a stand-in (metadata ``stand_in``) says so in its ``data`` column and gets no
verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from .registry import Claim, Ours, outcome, registered, verdict

COLUMNS = (
    "paper", "where", "quantity", "setting", "published", "ours", "n_runs", "verdict", "data",
    "experiment", "config", "finding", "published_value", "ours_mean", "ours_se",
)  # fmt: skip


@dataclass(frozen=True)
class ConfiguredExperiment:
    """An experiment as a shipped config declares it: its datasets and method labels."""

    name: str
    configs: tuple[str, ...]
    datasets: frozenset[str]
    labels: frozenset[str]


def configured_experiments(config_dir: str | Path) -> dict[str, ConfiguredExperiment]:
    """Experiments of every ``*.yaml`` in ``config_dir`` (read as plain YAML: no validation,
    so that one config with a problem does not hide the others' claims)."""
    found: dict[str, ConfiguredExperiment] = {}
    for path in sorted(Path(config_dir).glob("*.yaml")):
        try:
            config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue
        experiments = config.get("experiments") if isinstance(config, dict) else None
        for name, spec in (experiments or {}).items():
            if not isinstance(spec, dict):
                continue
            datasets = frozenset(str(d) for d in spec.get("datasets") or ())
            labels = frozenset(str(m) for m in spec.get("methods") or ())
            old = found.get(name)
            configs = (*old.configs, str(path)) if old else (str(path),)
            found[name] = ConfiguredExperiment(name, configs, datasets, labels)
    return found


def experiments_of(claim: Claim, configured: dict[str, ConfiguredExperiment]) -> list[str]:
    """The claim's own experiments, or those whose datasets and labels hold its dataset and
    label."""
    if claim.experiments:
        return list(claim.experiments)
    return sorted(
        name
        for name, e in configured.items()
        if claim.dataset in e.datasets and claim.label in e.labels
    )


def is_stand_in(dataset: str) -> bool:
    """Whether ``dataset`` is registered as a stand-in for data the project cannot ship."""
    from ..datasets.registry import entry

    try:
        return bool(entry(dataset).metadata.get("stand_in", False))
    except ValueError:  # not registered (a user's dataset, a test's)
        return False


def published_text(claim: Claim) -> str:
    """The published number as the paper prints it (0.60 keeps its zero: ``decimals``),
    then its note."""
    value = claim.published
    shown = f"{value:.{claim.decimals}f}" if claim.decimals is not None else f"{value:g}"
    return " ".join(filter(None, (shown, claim.published_note)))


def _number(value: float, se: float = math.nan) -> str:
    if not math.isfinite(value):
        return "–"
    return f"{value:.4g} ± {se:.2g}" if math.isfinite(se) else f"{value:.4g}"


def _runs(path: Path, runs_from=None) -> pd.DataFrame:
    """The runs of a merged file: its run columns, or ``runs_from`` of the merged Dataset
    (test data per run, as the figures see it)."""
    from ..figures import load_merged
    from ..results import results_frame, with_run_test_data

    if runs_from is not None:
        return runs_from(with_run_test_data(load_merged(path)))
    return results_frame(load_merged(path))


NOT_SWEPT = "not swept: the experiment runs other settings"
"""The verdict of a claim whose experiment has runs, none of them at the claim's setting (the
paper's hidden size or number of components): not a failure of the runs."""


def swept(claim: Claim, runs: pd.DataFrame) -> bool:
    """Whether ``runs`` hold any run the claim's measure would take if every run were
    ``ok``: False when the experiment never ran the claim's setting, True when it did and
    its runs there all diverged."""
    if "status" not in runs:
        return False
    return bool(claim.measure(runs.assign(status="ok")))


def claim_rows(
    claim: Claim, experiment: str, configs: str, runs: pd.DataFrame | None, missing=()
) -> list:
    """The table rows of one claim in one experiment, or several pooled (``runs`` None: no
    merged file; ``missing``: pooled experiments without one, named in the data column)."""
    base = {
        "paper": claim.paper,
        "where": claim.where,
        "quantity": claim.quantity,
        "published": published_text(claim),
        "published_value": claim.published,
        "experiment": experiment,
        "config": configs,
        "finding": claim.finding,
    }
    if runs is None:
        where = configs or f"none defines experiment {experiment}"
        return [{**base, "setting": "", "ours": f"not run (config {where})", "n_runs": 0,
                 "verdict": "not run", "data": "", "ours_mean": math.nan,
                 "ours_se": math.nan}]  # fmt: skip
    values: list[Ours] = claim.measure(runs)
    if not values:
        if swept(claim, runs):
            ours, kind = "no usable runs", "no usable runs"
        else:
            ours, kind = "none at the paper's setting", NOT_SWEPT
        return [{**base, "setting": "", "ours": ours, "n_runs": 0, "verdict": kind,
                 "data": "", "ours_mean": math.nan, "ours_se": math.nan}]  # fmt: skip
    rows = []
    for ours in values:
        stand_ins = [d for d in ours.datasets if is_stand_in(d)]
        data = ", ".join(ours.datasets)
        if stand_ins:
            data = f"STAND-IN ({', '.join(stand_ins)}): " + data
        if missing:
            data += f" (not run: {', '.join(missing)})"
        shown = _number(ours.mean, ours.se)
        if claim.show_sd and math.isfinite(ours.sd):
            shown += f" (s.d. {ours.sd:.3g})"
        if ours.not_ok:
            shown += f" [{ours.not_ok} of {ours.n} not_converged]"
        rows.append(
            {
                **base,
                "setting": ours.setting,
                "ours": shown,
                "n_runs": ours.n,
                "verdict": verdict(claim, ours, bool(stand_ins)),
                "data": data,
                "ours_mean": ours.mean,
                "ours_se": ours.se,
            }
        )
    return rows


def claims_frame(
    results_dir: str | Path = "results",
    config_dir: str | Path = "config",
    experiments: list[str] | None = None,
) -> pd.DataFrame:
    """The claims table: one row per claim, experiment and configuration of our runs.

    ``experiments`` restricts it to those experiments (each must be an experiment of some
    claim or config: an unknown name is a ValueError). A missing ``results_dir`` is a
    ValueError; a merged file that is corrupt is one too, naming it.
    """
    results_dir, config_dir = Path(results_dir), Path(config_dir)
    if not results_dir.is_dir():
        raise ValueError(f"results directory {results_dir} does not exist")
    if not config_dir.is_dir():
        raise ValueError(f"config directory {config_dir} does not exist")
    configured = configured_experiments(config_dir)
    claims = registered()
    plan = [(claim, e) for claim in claims for e in experiments_of(claim, configured)]
    if experiments:
        known = {e for _, e in plan} | set(configured)
        unknown = [e for e in experiments if e not in known]
        if unknown:
            raise ValueError(
                f"unknown experiment(s) {', '.join(unknown)}; experiments with claims: "
                f"{', '.join(sorted({e for _, e in plan}))}"
            )
        plan = [(c, e) for c, e in plan if e in experiments]
    runs_of: dict[tuple, pd.DataFrame | None] = {}
    rows = []
    for claim in claims:
        mine = [e for c, e in plan if c is claim]
        if not mine and not experiments:
            rows.append(
                {
                    "paper": claim.paper,
                    "where": claim.where,
                    "quantity": claim.quantity,
                    "setting": "",
                    "published": published_text(claim),
                    "ours": "not configured (no shipped config runs it)",
                    "n_runs": 0,
                    "verdict": "not configured",
                    "data": "",
                    "experiment": "",
                    "config": "",
                    "finding": claim.finding,
                    "published_value": claim.published,
                    "ours_mean": math.nan,
                    "ours_se": math.nan,
                }  # fmt: skip
            )
        for group in [mine] if claim.pool_experiments and mine else [[e] for e in mine]:
            for experiment in group:
                if (experiment, claim.runs_from) not in runs_of:
                    path = results_dir / experiment / "merged.nc"
                    runs_of[experiment, claim.runs_from] = (
                        _runs(path, claim.runs_from) if path.is_file() else None
                    )
            found = {e: runs_of[e, claim.runs_from] for e in group}
            present = [r for r in found.values() if r is not None]
            runs = pd.concat(present, ignore_index=True) if present else None
            missing = [e for e, r in found.items() if r is None] if present else []
            configs = " or ".join(
                dict.fromkeys(c for e in group if e in configured for c in configured[e].configs)
            )
            rows.extend(claim_rows(claim, " + ".join(group), configs, runs, missing))
    return pd.DataFrame(rows, columns=list(COLUMNS))


SHOWN = ("paper", "where", "quantity", "setting", "published", "ours", "n_runs", "verdict",
         "data", "config", "finding")  # fmt: skip


def to_markdown(frame: pd.DataFrame) -> str:
    """The table as Markdown, with a header that says how it was made."""
    counts = frame["verdict"].map(outcome).value_counts()
    summary = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    lines = [
        "# Where each claim stands",
        "",
        "Generated by `bnnsweep claims` from the declarations in `bnnsweep.claims.declared` "
        "(published numbers) and `<results>/<experiment>/merged.nc` (ours: mean ± standard "
        "error over runs, i.e. seeds and splits; diverged runs excluded). Verdict: inside "
        "the interval the printed number stands for (half a unit of its last digit either "
        "side), or within k standard errors (ours, the paper's own when printed, and the "
        "rounding's) or not; rows on stand-in data get none.",
        "",
        f"{len(frame)} rows: {summary}.",
        "",
        "| " + " | ".join(SHOWN) + " |",
        "|" + "|".join("---" for _ in SHOWN) + "|",
    ]
    for _, row in frame.iterrows():
        cells = [str(row[c]).replace("|", "/").replace("\n", " ") for c in SHOWN]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_claims(frame: pd.DataFrame, output: str | Path) -> list[Path]:
    """``<output>.md`` and ``<output>.csv`` (atomically); the paths written."""
    from ..cells.atomic_file import write_atomic

    output = Path(output)
    md, csv = output.with_suffix(".md"), output.with_suffix(".csv")
    md.parent.mkdir(parents=True, exist_ok=True)
    text = to_markdown(frame)
    write_atomic(md, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    write_atomic(csv, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))
    return [md, csv]
