# Merge, data and figure steps are cheap and read many files: run them where Snakemake runs
# (the figure rules are generated per experiment and say so with `localrule: True`).
localrules:
    merge,
    prepare_data,
