# Helpers that map wildcards and batches to the validated cells; no science here.


def merged_file(experiment):
    return f"{RESULTS}/{experiment}/merged.nc"


def cell_files(experiment):
    return [
        f"{RESULTS}/{key}.nc" for key, c in CELLS.items() if c.experiment == experiment
    ]


def repair_log(experiment):
    """The experiment's repair log, if cells were ever moved aside or found missing."""
    path = Path(RESULTS) / experiment / REPAIR_LOG
    return [str(path)] if path.exists() else []


def figure_files(experiment):
    out = []
    for kind in EXPERIMENTS[experiment]["figures"]:
        if kind == "error_table":
            out += [f"{RESULTS}/{experiment}/tables/error_table.md"]
        else:
            out += [
                f"{RESULTS}/{experiment}/figures/{kind}.{ext}" for ext in FIGURE_FORMATS
            ]
    return out


def batch_outputs(batch):
    return [f"{RESULTS}/{cell.path_id}.nc" for cell in batch.cells]


def batch_data(batch):
    return sorted({f"{RESULTS}/data/{cell.dataset}.nc" for cell in batch.cells})


def batch_spec_file(batch):
    """The batch's spec (bnnsweep.sweep.batch_spec), written once under a name that is the
    hash of its content."""
    spec = batch_spec(batch.cells, batch.vectorised, RESULTS, CODE_RERUNS)
    path, _ = write_spec(spec, f"{RESULTS}/batches")
    return str(path)


def batch_resource(batch, name):
    """A resource of a batch job as a function of the attempt (bnnsweep.jobsize)."""
    return lambda wildcards, attempt: batch.resources(attempt)[name]


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
    """`--spec FILE` for a dataset of the user's own: its config entry, written once under a
    name that is the hash of its content."""
    spec = CONFIG.get("datasets", {}).get(dataset)
    if not spec:
        return ""
    path, _ = write_spec({dataset: spec}, f"{RESULTS}/datasets")
    return f"--spec {shlex.quote(str(path))}"
