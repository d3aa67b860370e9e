# Helpers that map wildcards to the validated cells; no science here.


def merged_file(experiment):
    return f"{RESULTS}/{experiment}/merged.nc"


def cell_files(experiment):
    return [f"{RESULTS}/{key}.nc" for key, c in CELLS.items() if c.experiment == experiment]


def figure_files(experiment):
    out = []
    for kind in EXPERIMENTS[experiment]["figures"]:
        if kind == "error_table":
            out += [f"{RESULTS}/{experiment}/tables/error_table.md"]
        else:
            out += [f"{RESULTS}/{experiment}/figures/{kind}.png"]
    return out


def path_id_of(wildcards):
    return f"{wildcards.experiment}/cells/{wildcards.dataset}/{wildcards.method}/{wildcards.cell}"


def cell_of(wildcards):
    key = path_id_of(wildcards)
    try:
        return CELLS[key]
    except KeyError:
        raise ValueError(f"no cell {key} in the configuration") from None


def fit_resources(wildcards, attempt):
    """mem_mb and runtime of a fit job, from the cell's settings and data (bnnsweep.jobsize)."""
    return resources(cell_of(wildcards), attempt, grouped=path_id_of(wildcards) in GROUPS)
