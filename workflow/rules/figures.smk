# One job per experiment draws every figure and table of it, from its merged file only, in
# one process: one interpreter start, one import of matplotlib and one read of the merged
# file for all of them (bnnsweep figures). Each output is in the report with its kind's own
# caption, workflow/report/figures/<kind>.rst (workflow/report/figure.rst for a kind that
# has none). Editing the code of one figure redraws the figures of the experiments that
# draw it, and nothing else.
for experiment in EXPERIMENTS:

    rule:
        name:
            f"figures_{experiment}"
        input:
            merged_file(experiment),
        output:
            [
                report(path, caption=figure_caption(kind), category=experiment)
                for kind, path in figure_outputs(experiment)
            ],
            table_csv_files(experiment),
        log:
            f"{RESULTS}/logs/{experiment}/figures.log",
        localrule: True
        conda:
            CONDA_ENV
        params:
            experiment=experiment,
            kinds=", ".join(EXPERIMENTS[experiment]["figures"]),
            draws=figure_draw_options(experiment),
            code={
                kind: figure_code(kind) for kind in EXPERIMENTS[experiment]["figures"]
            },
        shell:
            "bnnsweep figures --merged {input:q} {params.draws} > {log:q} 2>&1"
