# One rule per batch of cells (bnnsweep.sweeps.jobsize.plan_batches: by dataset for methods with a
# vectorised fit_many, packed up to `batching.target_minutes` for short cells, else one cell
# per job). A batch job runs `bnnsweep fit-batch`, which writes every cell's own file
# atomically as soon as it is done and skips cells whose file is already current, so:
# - outputs are `update()`: Snakemake does not delete the finished cells of a batch it
#   reruns (after a kill, or because one of its cells is missing or changed);
# - the spec file is named by the hash of every cell's settings and (with `code_reruns`)
#   its method's code version; as an input it makes Snakemake rerun exactly the batches
#   whose cells changed, and fit-batch refits only the changed cells in them;
# - a batch with a cell that is missing, corrupt or stale when the workflow starts
#   (`STATES`, Snakefile) has a marker output that `all` asks for, so it runs.
# Usage record (results/benchmarks/...tsv, the columns of Snakemake's `benchmark:`): the
# job's own wall time, CPU time and peak memory, written by fit-batch from getrusage when it
# is done; Snakemake's benchmark directive would sample the job with psutil twice a
# second for its first 15 s, about 0.2 s of CPU per job (benchmarks/bench_dag.py).
# Priority: the batch's typical time in seconds, so that the longest batches start first.
# Resources: the sum of the cells' estimated times, the largest cell's memory (all cells'
# for a vectorised batch), scaled up on each retry; `gpu` for the batches of a method the
# config's `devices` gives GPUs (the SLURM executor submits it as `sbatch --gpus=N`).
for batch in BATCHES:

    rule:
        name:
            batch.rule_name
        input:
            data=batch_data(batch),
            spec=batch_spec_file(batch),
        output:
            [update(f) for f in batch_outputs(batch)],
            [touch(redo_marker(batch))] if batch_needs_refit(batch) else [],
        log:
            log=f"{RESULTS}/logs/{batch.cells[0].experiment}/batches/{batch.batch_id}.log",
            usage=f"{RESULTS}/benchmarks/{batch.cells[0].experiment}/batches/{batch.batch_id}.tsv",
        priority: batch.priority()
        conda:
            CONDA_ENV
        threads: 1
        resources:
            **batch_gpu(batch),
            mem_mb=batch_resource(batch, "mem_mb"),
            runtime=batch_resource(batch, "runtime"),
        shell:
            "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
            "bnnsweep fit-batch {input.spec:q} --log {log.log:q} --usage {log.usage:q}"


# A batch's spec, or the spec of the cells a merge checks (common.smk), written when the
# job that reads it runs (and removed once it is done).
rule batch_spec:
    output:
        temp(f"{RESULTS}/batches/{{spec}}.json"),
    log:
        f"{RESULTS}/logs/batches/{{spec}}.log",
    localrule: True
    run:
        Path(log[0]).write_text(
            f"{write_spec_file(output[0], spec_text_of(wildcards.spec))}\n"
        )
