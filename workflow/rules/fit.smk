rule fit:
    """Fit one cell (dataset x split x method x axis values x seed) and write its NetCDF file.
    The settings are a params entry, so a changed setting reruns exactly the cells it affects.
    Cluster resources come from the cell's settings and data size (bnnsweep.jobsize); a retry
    (profile `retries`) asks for proportionally more time and memory. With `grouping.mode:
    group` short cells share a group and go to the cluster as one job."""
    input:
        data=f"{RESULTS}/data/{{dataset}}.nc",
    output:
        f"{RESULTS}/{{experiment}}/cells/{{dataset}}/{{method}}/{{cell}}.nc",
    log:
        f"{RESULTS}/logs/{{experiment}}/{{dataset}}/{{method}}/{{cell}}.log",
    params:
        args=lambda wc: fit_arguments(cell_of(wc)),
    threads: 1
    resources:
        mem_mb=lambda wc, attempt: fit_resources(wc, attempt)["mem_mb"],
        runtime=lambda wc, attempt: fit_resources(wc, attempt)["runtime"],
    group:
        lambda wc: GROUPS.get(path_id_of(wc))
    conda:
        "../../envs/bnnsweep.yaml"
    shell:
        "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
        "bnnsweep fit {params.args} --data {input.data} --output {output} --log {log}"
