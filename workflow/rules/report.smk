# Merge, figure and report steps are cheap and read many files: run them where Snakemake runs.
localrules:
    merge,
    figure,
    error_table,
    prepare_data,
