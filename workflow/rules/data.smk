rule prepare_data:
    """Materialise a dataset (all splits, standardised) as NetCDF: a registered one, or one
    of the user's own from the config's `datasets:` section."""
    input:
        lambda wc: user_dataset_file(wc.dataset),
    output:
        f"{RESULTS}/data/{{dataset}}.nc",
    log:
        f"{RESULTS}/logs/data/{{dataset}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        spec=lambda wc: user_dataset_option(wc.dataset),
    shell:
        "bnnsweep prepare --dataset {wildcards.dataset:q} {params.spec} --output {output:q} > {log:q} 2>&1"
