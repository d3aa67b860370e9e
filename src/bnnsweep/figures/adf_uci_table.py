"""``adf_uci_table``: PBP beside EBP on the UCI benchmark, as a rendered table.

One row per dataset; for each method label the test RMSE and test log-likelihood (original
units), mean +- standard error over the splits (runs not ``diverged``, finite values), the
better mean of each metric in bold, and the published 40-epoch PBP numbers of Hernandez-Lobato
& Adams (2015, Table 1; the same protocol and splits) for reference. Paper 004 Fig. 2 reports
PBP and EBP after 100 epochs as bar charts only; its supplement's Table 3 (two and five
layers) is shown under our value of each such label. :func:`adf_uci_frame` gives the numbers
as a DataFrame.

Beside them, each other label's paired difference to the dataset's first PBP label (the
reference; :mod:`._paired`): mean ± s.e. over the splits of (label - reference) per split,
seed and hidden size, which leaves out the split-to-split spread the two methods share.

Under the table, paper 004's own summary (sec. 6: RMSE and log-likelihood averaged over all
datasets and splits, mean ± s.d.) beside ours over the same pool (:func:`paper004_summary`).
"""

from __future__ import annotations

import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._common import mean_se, new_figure, note_figure, runs_frame, style, usable
from ._paired import paired_columns
from .adf_classification import mark_stand_ins
from .published import PAPER004_SUMMARY, references

METRICS = ("test_rmse", "test_loglik")
HIGHER_IS_BETTER = {"test_rmse": False, "test_loglik": True}

PBP_PUBLISHED = {  # HL&A 2015 Table 1 (PBP, 40 epochs): (RMSE, s.e.), (test LL, s.e.)
    "boston_housing": ((3.014, 0.18), (-2.574, 0.089)),
    "concrete": ((5.667, 0.0933), (-3.161, 0.019)),
    "energy": ((1.804, 0.0481), (-2.042, 0.019)),
    "kin8nm": ((0.098, 0.0007), (0.896, 0.006)),
    "naval": ((0.006, 0.0), (3.731, 0.006)),
    "power_plant": ((4.124, 0.0345), (-2.837, 0.009)),
    "protein": ((4.732, 0.013), (-2.973, 0.003)),
    "wine_red": ((0.635, 0.0079), (-0.968, 0.014)),
    "yacht": ((1.015, 0.0542), (-1.634, 0.016)),
}


def method_order(methods) -> list[str]:
    """PBP labels first (the first is the reference of the paired differences), then sorted."""
    return sorted(set(methods), key=lambda m: (not m.startswith("pbp"), m))


def adf_uci_frame(ds: xr.Dataset) -> pd.DataFrame:
    """Long table: dataset, method, n_runs, and mean/se of each metric; ``paired_with``,
    ``n_pairs`` and ``{metric}_diff_mean``/``_se`` against the dataset's reference label
    (blank for the reference itself and for a label without runs paired with it)."""
    runs = usable(runs_frame(ds))
    rows = []
    for dataset, runs_of_dataset in runs.groupby("dataset", sort=True):
        reference = method_order(runs_of_dataset["method"])[0]
        partner = runs_of_dataset[runs_of_dataset["method"] == reference]
        for method, group in runs_of_dataset.groupby("method", sort=True):
            row = {"dataset": dataset, "method": method, "n_runs": len(group)}
            for metric in METRICS:
                values = group[metric] if metric in group else pd.Series(dtype=float)
                row[f"{metric}_mean"], row[f"{metric}_se"], _ = mean_se(values)
            paired = paired_columns(group, None if method == reference else partner, METRICS)
            row["paired_with"] = pd.NA if paired["n_pairs"] is pd.NA else reference
            rows.append({**row, **paired})
    return pd.DataFrame(rows)


def paper004_summary(ds: xr.Dataset) -> pd.DataFrame:
    """Our counterpart of paper 004 sec. 6's summary: per label with a published value, the
    mean and s.d. of each metric over every usable run (all datasets and splits), beside the
    paper's mean and s.d. (``PAPER004_SUMMARY``, over its ten sets after 100 epochs)."""
    runs = usable(runs_frame(ds))
    rows = []
    for (group, label, metric), (value, spread) in PAPER004_SUMMARY.items():
        chosen = runs[runs["method"] == label] if group == "uci" else runs.iloc[:0]
        if chosen.empty or metric not in chosen:
            continue
        values = chosen[metric].to_numpy(float)
        values = values[values == values]
        rows.append(
            {
                "method": label,
                "metric": metric,
                "n_runs": len(values),
                "n_datasets": chosen["dataset"].nunique(),
                "mean": values.mean(),
                "sd": values.std(ddof=1) if len(values) > 1 else float("nan"),
                "paper004_mean": value,
                "paper004_sd": spread,
            }  # fmt: skip
        )
    return pd.DataFrame(rows)


def _summary_line(ds: xr.Dataset) -> str:
    summary = paper004_summary(ds)
    if summary.empty:
        return ""
    parts = [
        f"{r.method} {r.metric.removeprefix('test_')} {r.mean:.3g} ± {r.sd:.3g} "
        f"(paper 004: {r.paper004_mean:g} ± {r.paper004_sd:g})"
        for r in summary.itertuples()
    ]
    n_sets = int(summary["n_datasets"].max())
    return (
        f"Over all datasets and splits, mean ± s.d. ({n_sets} set{'s' * (n_sets != 1)} here; "
        "paper 004 sec. 6: ten "
        "sets, 100 epochs): " + "; ".join(parts)
    )


def _cell(mean: float, se: float) -> str:
    return "–" if mean != mean else (f"{mean:.4g} ± {se:.2g}" if se == se else f"{mean:.4g}")


def _published_line(dataset: str, label: str, metric: str) -> str:
    """A second line under our value with the published one for this label, where
    :mod:`.published` knows it (paper 004 suppl. Table 3 for the two- and five-layer labels
    of ``uci_adf_deep.yaml``); empty otherwise."""
    refs = references(dataset, label).get(metric, ())
    return "".join(f"\n{ref.short.split(',')[0]}: {ref.value:g}" for ref in refs)


def adf_uci_table(ds: xr.Dataset) -> Figure:
    frame = adf_uci_frame(ds)
    if frame.empty:
        return note_figure("no runs to tabulate", "PBP vs EBP")
    methods = method_order(frame["method"])
    header = ["dataset"] + [
        f"{m}\n{metric.removeprefix('test_')}" for metric in METRICS for m in methods
    ]
    compared = methods[1:]
    header += [
        f"{m} − {methods[0]}\n{metric.removeprefix('test_')} (paired)"
        for metric in METRICS
        for m in compared
    ]
    header += ["PBP (HL&A 2015)\nrmse", "PBP (HL&A 2015)\nloglik"]
    body, bold = [], []
    for dataset, group in frame.groupby("dataset", sort=True):
        by_method = group.set_index("method")
        row, row_bold = [dataset], []
        for metric in METRICS:
            means = {m: by_method[f"{metric}_mean"].get(m, float("nan")) for m in methods}
            finite = {m: v for m, v in means.items() if v == v}
            best = (
                (max if HIGHER_IS_BETTER[metric] else min)(finite, key=finite.get)
                if finite
                else None
            )
            for m in methods:
                text = _cell(means[m], by_method[f"{metric}_se"].get(m, float("nan")))
                row.append(text + _published_line(str(dataset), m, metric))
                row_bold.append(m == best)
        for metric in METRICS:
            for m in compared:
                partner = by_method["paired_with"].get(m, pd.NA)
                if pd.notna(partner) and partner == methods[0]:
                    row.append(
                        _cell(
                            by_method.at[m, f"{metric}_diff_mean"],
                            by_method.at[m, f"{metric}_diff_se"],
                        )
                    )
                else:
                    row.append("")
                row_bold.append(False)
        published = PBP_PUBLISHED.get(dataset)
        row += [_cell(*published[0]), _cell(*published[1])] if published else ["", ""]
        body.append(row)
        bold.append([False, *row_bold, False, False])
    row_scale = 3.0 if any("\n" in text for line in body for text in line) else 2.0
    with style():
        fig = new_figure(2.0 + 1.7 * (len(header) - 1), 1.2 + 0.19 * row_scale * (len(body) + 2))
        ax = fig.add_subplot()
        ax.set_axis_off()
        table = ax.table(cellText=body, colLabels=header, loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(8)
        table.scale(1.0, row_scale)
        for (r, c), cell in table.get_celld().items():
            if r == 0:
                cell.set_text_props(weight="bold")
            elif bold[r - 1][c]:
                cell.set_text_props(weight="bold", color="#1a5e1a")
        ax.set_title(
            "Test RMSE and log-likelihood (original units), mean ± s.e. over splits; better mean"
            " in bold; under a value, the published one for that label where known;"
            "\npaired: mean ± s.e. of the per-split difference",
            fontsize=9,
        )
        if line := _summary_line(ds):
            import textwrap

            fig.text(0.5, 0.03, textwrap.fill(line, 160), ha="center", va="bottom", fontsize=8)
        mark_stand_ins(fig, list(frame["dataset"]))
    return fig
