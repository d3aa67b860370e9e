rule fit:
    """Fit one cell (dataset x split x method x axis values x seed) and write its NetCDF file.
    The settings are a params entry, so a changed setting reruns exactly the cells it affects."""
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
        mem_mb=2000,
        runtime=60,
    conda:
        "../../envs/bnnsweep.yaml"
    shell:
        "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
        "bnnsweep fit {params.args} --data {input.data} --output {output} --log {log}"
