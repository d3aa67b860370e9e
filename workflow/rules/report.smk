# Data steps are cheap: run them where Snakemake runs (the merge-and-draw rules, generated per
# experiment in collect.smk, say so with `localrule: True`).
localrules:
    prepare_data,
