rule merge:
    """All cells of an experiment along a `run` dimension, in one NetCDF file."""
    input:
        cells=lambda wc: cell_files(wc.experiment),
        # cells moved aside or found missing (bnnsweep.result_check): a new line reruns
        # the merge, and so first refits them
        repairs=lambda wc: repair_log(wc.experiment),
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
        "bnnsweep merge {input.cells:q} --quarantine-corrupt --output {output:q} > {log:q} 2>&1"
