# Helpers that map wildcards and batches to the validated cells; no science here.

# Scheduling priority of data preparation: above every fit job's (its typical length in
# seconds, bnnsweep.sweeps.jobsize.Batch.priority), so datasets are ready before fits compete.
DATA_PRIORITY = 10**9


def merged_file(experiment):
    return f"{RESULTS}/{experiment}/merged.nc"


def cell_files(experiment):
    return [
        f"{RESULTS}/{key}.nc" for key, c in CELLS.items() if c.experiment == experiment
    ]


# What is current of each experiment's merged file, read as STATES is (Snakefile): a merged
# file there whose seal or key does not verify (bnnsweep.sweeps.result_check.merged_state:
# damaged, replaced, or not merged from the cell files there now) is merged again, by the
# same command; the merge's outputs are update(), so the old figures and tables stay until
# the new merge has succeeded.
MERGED_STATES = {e: merged_state(merged_file(e), cell_files(e)) for e in EXPERIMENTS}
if workflow.is_main_process:
    for experiment, (state, why) in MERGED_STATES.items():
        refits = any(STATES[path][0] != "current" for path in cell_files(experiment))
        if state != "current" and state != "missing" and not refits:
            # (a merged file whose cells are refitted is merged again anyway)
            print(
                f"bnnsweep: {merged_file(experiment)} is {state}: {why}; merging it again",
                file=sys.stderr,
            )


def remerge_outputs(experiment):
    """The marker (bnnsweep.sweeps.result_check.remerge_marker) the merge of an experiment
    outputs, and `all` asks for, when its merged file is there and not current
    (``MERGED_STATES``); none otherwise."""
    state = MERGED_STATES[experiment][0]
    if state in ("current", "missing"):
        return []
    return [str(remerge_marker(RESULTS, experiment))]


def figure_outputs(experiment):
    """(kind, file) of every figure and table an experiment draws: a table's Markdown file
    (its CSV is written beside it), a figure in each of the config's `figure_format`s.
    """
    out = []
    for kind in EXPERIMENTS[experiment]["figures"]:
        if kind in TABLE_KINDS:
            out.append((kind, f"{RESULTS}/{experiment}/tables/{kind}.md"))
        else:
            out += [
                (kind, f"{RESULTS}/{experiment}/figures/{kind}.{ext}")
                for ext in FIGURE_FORMATS
            ]
    return out


def figure_files(experiment):
    return [path for _, path in figure_outputs(experiment)]


def table_csv_files(experiment):
    """The CSV file written beside each table's Markdown file."""
    return [
        path.removesuffix(".md") + ".csv"
        for _, path in figure_outputs(experiment)
        if path.endswith(".md")
    ]


def figure_caption(kind):
    """The report caption of a figure kind (relative to workflow/rules/): its own file
    workflow/report/figures/<kind>.rst, else the generic workflow/report/figure.rst."""
    own = Path(workflow.basedir) / "workflow" / "report" / "figures" / f"{kind}.rst"
    return f"../report/figures/{kind}.rst" if own.is_file() else "../report/figure.rst"


def figure_draw_options(experiment):
    """`--draw KIND FILE` for each of an experiment's figure and table files."""
    return " ".join(
        f"--draw {kind} {shlex.quote(path)}"
        for kind, path in figure_outputs(experiment)
    )


def batch_outputs(batch):
    return [f"{RESULTS}/{cell.path_id}.nc" for cell in batch.cells]


def batch_data(batch):
    return sorted({f"{RESULTS}/data/{cell.dataset}.nc" for cell in batch.cells})


# Batch specs (bnnsweep.sweeps.sweep.batch_spec) by the hash of their text; each is written by
# the batch_spec rule (fit.smk) when its batch runs, not while the workflow is parsed.
SPEC_TEXTS = {}


def cells_spec_file(cells, vectorised=False, prefix=""):
    """The spec file of ``cells`` (bnnsweep.sweep.batch_spec), named by the hash of its
    content (a changed cell, setting or code version gives another file, so Snakemake reruns
    exactly the jobs that read it), after ``prefix``."""
    text, digest = spec_text(batch_spec(cells, vectorised, RESULTS, CODE_RERUNS))
    path = spec_file(f"{RESULTS}/batches", text, prefix + digest)
    SPEC_TEXTS[path.name.removesuffix(".json")] = text
    return str(path)


def spec_text_of(name):
    """The text of the batch spec ``name``; a name this run did not make (the package's
    code or the config changed while the workflow ran, and the job's re-parse names its
    cells' specs by the new code version) is one line that says so."""
    if name not in SPEC_TEXTS:
        raise ValueError(
            f"batch spec {name} is not one of this run's batches: the bnnsweep code or the "
            "config changed while the workflow ran; run the same snakemake command again"
        )
    return SPEC_TEXTS[name]


def batch_spec_file(batch):
    """The spec a batch job fits."""
    return cells_spec_file(batch.cells, batch.vectorised)


def merge_spec_file(experiment):
    """The spec of an experiment's cells that its merge checks every cell file against
    (``bnnsweep merge --spec``: a file that holds another cell is not merged). Named apart
    from the batches' specs: an experiment fitted in one batch has the same spec text, and
    a shared (temporary) file written again for a redrawn figure made its batch job rerun.
    """
    return cells_spec_file(
        [c for c in CELLS.values() if c.experiment == experiment], prefix="merge-"
    )


def batch_needs_refit(batch):
    """Whether a cell of the batch is missing, corrupt or stale (``STATES``)."""
    return any(STATES[path][0] != "current" for path in batch_outputs(batch))


def redo_marker(batch):
    """The marker a batch with cells to refit outputs (``batch_needs_refit``;
    bnnsweep.sweeps.result_check.refit_marker)."""
    return str(refit_marker(RESULTS, batch.cells[0].experiment, batch.batch_id))


def batch_resource(batch, name):
    """A resource of a batch job as a function of the attempt (bnnsweep.sweeps.jobsize)."""
    return lambda wildcards, attempt: batch.resources(attempt)[name]


def batch_gpu(batch):
    """The `gpu` resource of a batch whose cells ask for GPUs (config key `devices`); no
    resource at all for the others, so that CPU jobs are submitted as before."""
    return {"gpu": batch.gpus} if batch.gpus else {}


def figure_code(kind):
    """Version of the code that draws a figure (a params value): editing it reruns that
    figure only."""
    return figure_code_version(kind) if CODE_RERUNS else ""


def user_dataset_file(dataset):
    """The file of a dataset of the user's own (config `datasets:`), so that changing it
    prepares the dataset again; nothing for a registered one."""
    spec = CONFIG.get("datasets", {}).get(dataset)
    return [spec["file"]] if spec else []


def user_dataset_option(dataset):
    """`--spec-json JSON` for a dataset of the user's own: its config entry."""
    spec = CONFIG.get("datasets", {}).get(dataset)
    if not spec:
        return ""
    text = json.dumps({dataset: spec}, sort_keys=True, separators=(",", ":"))
    return f"--spec-json {shlex.quote(text)}"
