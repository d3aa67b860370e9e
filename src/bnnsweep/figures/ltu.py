"""Linear threshold unit networks (thesis ch. 3): Table 3.1 with the Table 3.2 protocol, and
test errors against hidden units (figs. 3.6-3.7).

Runs are cells of method ``ltu``, grouped by method label. Labels whose runs have
``diag_n_validation`` = 0 follow the Table 3.1 protocol (trained on the whole training set):
their average and best test-error counts over the grid of C, H and initialisations. Labels
with held-out validation points (``validation`` > 0) follow the Table 3.2 protocol: the single network of least validation
error (ties: least training error, then merged-file order), and the unweighted committee of
the five networks of least validation error (majority vote of their test predictions, read
from ``class_probs``). The thesis applied that protocol to the private FISH data only
(Table 3.2); here it is applied to Pima and crabs, so those rows have no published values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note, note_figure, runs_frame, style

COMMITTEE = 5

PUBLISHED_LTU = {  # thesis Table 3.1: test-error counts (Pima of 332, crabs of 120)
    "pima_ripley": {"average": 73.97, "best": 63},
    "crabs_ripley": {"average": 6.08, "best": 2},
}
STAND_IN_DATA = {  # datasets whose split is not the thesis's (shown on the table and figure)
    "crabs_ripley": (
        "STAND-IN split: seeded stratified 80/120 (20 per species x sex); Ripley's (1994) "
        "partition ships neither with MASS crabs nor with this project"
    ),
}
REFERENCE_ROWS = (  # thesis Table 3.1 (Ripley 1996; Barber & Williams 1997): (Pima, crabs)
    ("Neural network", "75+", "3"),
    ("Linear discriminant", "67", "8"),
    ("Logistic regression", "66", "4"),
    ("MARS (degree 1)", "75", "4"),
    ("PP (4 ridge functions)", "75", "6"),
    ("2-Gaussian mixture", "64", "–"),
    ("Gaussian process classifier", "68", "3"),
)
REFERENCE_COLUMN = {"pima_ripley": 1, "crabs_ripley": 2}
FISH_PUBLISHED = (  # thesis Table 3.2, FISH error %: private data, not reproducible
    "FISH (private, Lerner & Lawrence 1999; not reproduced), thesis Table 3.2 error %: "
    "LTU best 12.9, average 14.6, validation-selected 13.9, committee of 5 13.2"
)


def ltu_runs(ds: xr.Dataset) -> pd.DataFrame:
    """Runs of method ``ltu`` that finished, with their test-error counts and protocol."""
    runs = runs_frame(ds)
    if "diag_test_errors" not in runs:
        return runs.iloc[0:0]
    if "method_name" in runs:
        runs = runs[runs["method_name"] == "ltu"]
    runs = runs[(runs["status"] != "diverged") & np.isfinite(runs["diag_test_errors"])]
    runs = runs.copy()
    runs["validated"] = runs.get("diag_n_validation", 0) > 0
    return runs


def _select(group: pd.DataFrame, n: int) -> pd.DataFrame:
    """The ``n`` runs of least validation error (then training error, then order)."""
    return group.sort_values(["diag_validation_errors", "diag_train_errors", "run"]).head(n)


def committee_errors(ds: xr.Dataset, members: pd.DataFrame) -> int:
    """Test errors of the majority vote of ``members``' hard test predictions."""
    probs = ds["class_probs"].transpose("run", "test_point", "class").values[members["run"]]
    y = ds["y_test"].transpose("run", "test_point", ...).values[members["run"][:1]]
    valid = np.all(np.isfinite(probs), axis=(0, 2))
    votes = np.sum(probs[:, valid, 1] > 0.5, axis=0)
    predicted = (2 * votes > len(members)).astype(float)
    return int(np.sum(predicted != y.reshape(-1)[valid]))


def _count(value: float) -> str:
    return "–" if value != value else f"{value:.4g}"


def standard_error(errors: np.ndarray) -> float:
    """s.e. of the mean test-error count over the networks of the grid: the s.d. over every
    network (initialisations and settings) / sqrt(n), which covers the spread over seeds."""
    return float(errors.std(ddof=1) / np.sqrt(errors.size)) if errors.size > 1 else np.nan


def _versus(errors: np.ndarray, published: float) -> str:
    """``"s.e. 0.41; -10.2 s.e."``: our mean's s.e. and its distance from ``published``."""
    se = standard_error(errors)
    if published != published or not se > 0:
        return f"s.e. {se:.2g}"
    return f"s.e. {se:.2g}; {(errors.mean() - published) / se:+.1f} s.e."


def ltu_error_frame(ds: xr.Dataset) -> pd.DataFrame:
    """One row per model, one column per dataset: test-error counts, ours beside the thesis
    (the last row notes the FISH values of Table 3.2)."""
    runs = ltu_runs(ds)
    datasets = sorted(runs["dataset"].unique()) if len(runs) else []
    rows: dict[str, dict[str, str]] = {}

    def put(model: str, dataset: str, text: str) -> None:
        rows.setdefault(model, {})[dataset] = text

    for dataset in datasets:
        group = runs[runs["dataset"] == dataset]
        n_test = _n_test(ds, group)
        published = PUBLISHED_LTU.get(dataset, {})
        published_average = published.get("average", np.nan)
        put("data", dataset, STAND_IN_DATA.get(dataset, "the thesis's split"))
        labels = sorted(group["method"].unique(), key=lambda m: (m != "ltu", m))
        plain = [m for m in labels if not group[group["method"] == m]["validated"].any()]
        for label in plain:
            runs_of = group[group["method"] == label]
            errors = runs_of["diag_test_errors"].to_numpy(float)
            spread = errors.std(ddof=1) if errors.size > 1 else 0.0
            put(
                f"LTU average (ours: {label}, {errors.size} networks, ± s.d.; s.e.; "
                "distance from the thesis in s.e.)",
                dataset,
                f"{errors.mean():.4g} ± {spread:.2g}; {_versus(errors, published_average)}",
            )
            best = runs_of.loc[runs_of["diag_test_errors"].idxmin()]
            put(
                f"LTU best (ours: {label}; its C, H)",
                dataset,
                f"{int(best['diag_test_errors'])} (C={best['penalty']}, H={best['hidden']})",
            )
        put("LTU average (thesis Table 3.1)", dataset, _count(published_average))
        put("LTU best (thesis Table 3.1)", dataset, _count(published.get("best", np.nan)))
        for label in (m for m in labels if m not in plain):
            held = group[(group["method"] == label) & group["validated"]]
            chosen = _select(held, 1).iloc[0]
            put(
                f"LTU validation-selected (ours: {label}, Table 3.2 protocol)",
                dataset,
                f"{int(chosen['diag_test_errors'])} (val {int(chosen['diag_validation_errors'])}"
                f"/{int(chosen['diag_n_validation'])}, C={chosen['penalty']}, "
                f"H={chosen['hidden']})",
            )
            members = _select(held, COMMITTEE)
            put(
                f"LTU committee of {len(members)} (ours: {label}, Table 3.2 protocol)",
                dataset,
                str(committee_errors(ds, members)),
            )
            average = held["diag_test_errors"].to_numpy(float)
            put(
                f"LTU average, validation held out (ours: {label}, {average.size} networks)",
                dataset,
                f"{average.mean():.4g}",
            )
        column = REFERENCE_COLUMN.get(dataset)
        for name, *values in REFERENCE_ROWS:
            put(f"{name} (thesis Table 3.1)", dataset, values[column - 1] if column else "–")
        put("test points", dataset, str(n_test))
    table = pd.DataFrame(
        [{"model": model, **{d: row.get(d, "–") for d in datasets}} for model, row in rows.items()]
    )
    if table.empty:
        table = pd.DataFrame({"model": ["no ltu runs"]})
    note_row = {"model": FISH_PUBLISHED, **dict.fromkeys(datasets, "–")}
    return pd.concat([table, pd.DataFrame([note_row])], ignore_index=True)


def ltu_error_table(ds: xr.Dataset) -> Figure:
    """:func:`ltu_error_frame` drawn as a table (thesis Table 3.1 with the Table 3.2 rows)."""
    frame = ltu_error_frame(ds)
    fish = frame["model"].iloc[-1]
    body = frame.iloc[:-1]
    columns = [c for c in body.columns if c != "model"]
    if not columns:
        return note_figure("no ltu runs to tabulate", "LTU test errors")
    with style():
        fig = new_figure(6.5 + 2.4 * len(columns), 1.4 + 0.3 * (len(body) + 2))
        ax = fig.add_subplot()
        ax.set_axis_off()
        table = ax.table(
            cellText=body[["model", *columns]].to_numpy().tolist(),
            colLabels=["model", *columns],
            loc="center",
            cellLoc="left",
            colWidths=[0.7] + [0.3 / len(columns)] * len(columns),
        )
        table.auto_set_font_size(False)
        table.set_fontsize(8)
        table.scale(1.0, 1.5)
        for (r, _c), cell in table.get_celld().items():
            text = body["model"].iloc[r - 1] if r > 0 else ""
            if r == 0 or "ours" in text:
                cell.set_text_props(weight="bold")
        ax.set_title("LTU test-error counts: ours beside thesis Table 3.1", fontsize=9)
        stand_ins = [f"{d}: {STAND_IN_DATA[d]}." for d in columns if d in STAND_IN_DATA]
        fig.text(0.01, 0.01, " ".join([*stand_ins, fish]), fontsize=7, wrap=True)
    return fig


def _n_test(ds: xr.Dataset, group: pd.DataFrame) -> int:
    y = ds["y_test"].transpose("run", "test_point", ...).values[group["run"].iloc[0]]
    return int(np.sum(np.all(np.isfinite(y.reshape(y.shape[0], -1)), axis=1)))


def ltu_error_vs_hidden(ds: xr.Dataset) -> Figure:
    """Test errors against H, one panel per dataset and method label, one colour per C: each initialisation a
    dot, mean ± 1 s.d. per setting, the best network marked + (figs. 3.6-3.7); the thesis's
    average and best as horizontal lines. Table 3.1-protocol runs only (no validation)."""
    runs = ltu_runs(ds)
    runs = runs[~runs["validated"]] if len(runs) else runs
    if runs.empty:
        return note_figure("no ltu runs without validation to draw", "LTU test errors")
    panels = sorted(
        {(d, m) for d, m in zip(runs["dataset"], runs["method"], strict=True)},
        key=lambda p: (p[0], p[1] != "ltu", p[1]),
    )
    penalties = sorted(runs["penalty"].unique())
    with style():
        fig = new_figure(4.8 * len(panels), 3.8)
        colours = dict(zip(penalties, ["C0", "C1", "C2", "C3", "C4", "C5"], strict=False))
        for i, (dataset, label) in enumerate(panels):
            ax = fig.add_subplot(1, len(panels), i + 1)
            group = runs[(runs["dataset"] == dataset) & (runs["method"] == label)]
            hiddens = sorted(group["hidden"].unique())
            step = min(np.diff(hiddens)) if len(hiddens) > 1 else 1.0
            spread = 0.2 * step if len(penalties) > 1 else 0.0
            offsets = np.linspace(-spread, spread, len(penalties))
            offset_of = dict(zip(penalties, offsets, strict=True))
            for penalty, offset in offset_of.items():
                sub = group[group["penalty"] == penalty]
                if sub.empty:
                    continue
                colour = colours.get(penalty, "k")
                ax.plot(
                    sub["hidden"] + offset, sub["diag_test_errors"], ".", color=colour, alpha=0.5
                )
                stats = sub.groupby("hidden")["diag_test_errors"].agg(["mean", "std"])
                ax.errorbar(
                    stats.index + offset,
                    stats["mean"],
                    yerr=stats["std"].fillna(0.0),
                    color=colour,
                    marker="o",
                    capsize=3,
                    label=f"C = {penalty}",
                )
            best = group.loc[group["diag_test_errors"].idxmin()]
            ax.plot(
                best["hidden"] + offset_of[best["penalty"]],
                best["diag_test_errors"],
                "k+",
                ms=14,
                mew=2,
                label="best",
            )
            published = PUBLISHED_LTU.get(dataset)
            if published:
                ax.axhline(published["average"], color="0.4", ls="--", lw=1, label="thesis average")
                ax.axhline(published["best"], color="0.4", ls=":", lw=1, label="thesis best")
            else:
                note(ax, "no published values")
            ax.set_xticks(hiddens)
            ax.set_xlabel("hidden units H")
            ax.set_ylabel(f"test errors (of {_n_test(ds, group)})")
            mean = group["diag_test_errors"].mean()
            stand_in = "\n(stand-in split, not Ripley's)" if dataset in STAND_IN_DATA else ""
            ax.set_title(
                f"{dataset} ({label}): ours mean {mean:.4g}, best {int(best['diag_test_errors'])}"
                + stand_in,
                fontsize="small",
            )
            ax.legend(fontsize="xx-small", loc="upper right", ncols=2, framealpha=0.6)
    return fig


def ltu_markdown(frame: pd.DataFrame) -> str:
    """:func:`ltu_error_frame` as Markdown (table ``ltu_error_counts``): one row per model,
    one column per dataset, the FISH note last."""
    columns = list(frame.columns)
    lines = [
        "# LTU test-error counts beside thesis Table 3.1",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.to_numpy()]
    return "\n".join(lines) + "\n"
