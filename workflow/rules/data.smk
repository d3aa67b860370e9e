rule prepare_data:
    """Materialise a registered dataset (all splits, standardised) as NetCDF."""
    output:
        f"{RESULTS}/data/{{dataset}}.nc",
    log:
        f"{RESULTS}/logs/data/{{dataset}}.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/bnnsweep.yaml"
    shell:
        "bnnsweep prepare --dataset {wildcards.dataset} --output {output} > {log} 2>&1"
