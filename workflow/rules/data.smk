rule prepare_data:
    """Materialise a dataset (all splits, standardised) as NetCDF: a registered one, or one
    of the user's own from the config's `datasets:` section."""
    input:
        lambda wc: user_dataset_file(wc.dataset),
    output:
        f"{RESULTS}/data/{{dataset}}.nc",
    log:
        f"{RESULTS}/logs/data/{{dataset}}.log",
    # before every fit job (whose priority is its length in seconds): a fit can only start
    # once its data is there, and a long fit waiting for its data would start last
    priority: DATA_PRIORITY
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        spec=lambda wc: user_dataset_option(wc.dataset),
        # the preparing code's version: editing a loader or the preprocessing prepares
        # the data again (and refits the cells whose data then differs)
        code=data_code_version() if CODE_RERUNS else "",
    shell:
        "bnnsweep prepare --dataset {wildcards.dataset:q} {params.spec} --output {output:q} > {log:q} 2>&1"
