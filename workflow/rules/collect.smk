rule merge:
    """All cells of an experiment along a `run` dimension, in one NetCDF file."""
    input:
        lambda wc: cell_files(wc.experiment),
    output:
        f"{RESULTS}/{{experiment}}/merged.nc",
    log:
        f"{RESULTS}/logs/{{experiment}}/merge.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "bnnsweep merge {input:q} --output {output:q} > {log:q} 2>&1"
