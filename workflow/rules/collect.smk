# One job per experiment merges its cells along a `run` dimension into one NetCDF file and
# then draws every figure and table of it from that merged file (bnnsweep merge --draw): one
# interpreter start, one import of matplotlib and one read of the merged file for all of
# them. Each figure is in the report with its kind's own caption,
# workflow/report/figures/<kind>.rst (workflow/report/figure.rst for a kind that has none).
# Editing the code of one figure reruns this job for the experiments that draw it, and
# refits nothing.
for experiment in EXPERIMENTS:

    rule:
        name:
            f"merge_and_draw_{experiment}"
        input:
            cells=cell_files(experiment),
            # each cell file is checked against its cell in the config before it is merged
            spec=merge_spec_file(experiment),
            # and against the checksum of the prepared data it was to be fitted on; as an
            # input, a deleted prepared file is prepared again even when every cell is current
            data=sorted(
                {
                    f"{RESULTS}/data/{c.dataset}.nc"
                    for c in CELLS.values()
                    if c.experiment == experiment
                }
            ),
        # update(): kept until the merge replaces them (each is written atomically), so a
        # merge that fails leaves the last good results in place
        output:
            merged=update(merged_file(experiment)),
            figures=[
                update(report(path, caption=figure_caption(kind), category=experiment))
                for kind, path in figure_outputs(experiment)
            ],
            tables_csv=[update(path) for path in table_csv_files(experiment)],
            # made when the merge is done, when a merged file was there and not current
            remerged=[touch(path) for path in remerge_outputs(experiment)],
        log:
            f"{RESULTS}/logs/{experiment}/merge.log",
        localrule: True
        conda:
            CONDA_ENV
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            experiment=experiment,
            kinds=", ".join(EXPERIMENTS[experiment]["figures"]),
            draws=figure_draw_options(experiment),
            code={
                kind: figure_code(kind) for kind in EXPERIMENTS[experiment]["figures"]
            },
        shell:
            "bnnsweep merge --spec {input.spec:q} --output {output.merged:q} "
            "{params.draws} > {log:q} 2>&1"
