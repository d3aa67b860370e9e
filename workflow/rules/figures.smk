rule figure:
    """A figure of an experiment, drawn from its merged file only, in one of the config's
    `figure_format`s."""
    input:
        f"{RESULTS}/{{experiment}}/merged.nc",
    output:
        report(
            f"{RESULTS}/{{experiment}}/figures/{{kind}}.{{ext}}",
            caption="../report/figure.rst",
            category="{experiment}",
        ),
    log:
        f"{RESULTS}/logs/{{experiment}}/figure_{{kind}}_{{ext}}.log",
    wildcard_constraints:
        ext="png|pdf|svg",
    conda:
        CONDA_ENV
    params:
        code=lambda wildcards: figure_code(wildcards.kind),
    shell:
        "bnnsweep figure {wildcards.kind:q} --merged {input:q} --output {output:q} > {log:q} 2>&1"


rule error_table:
    """Test errors per dataset and method, as Markdown and CSV, with published values."""
    input:
        f"{RESULTS}/{{experiment}}/merged.nc",
    output:
        md=report(
            f"{RESULTS}/{{experiment}}/tables/error_table.md",
            caption="../report/error_table.rst",
            category="{experiment}",
        ),
        csv=f"{RESULTS}/{{experiment}}/tables/error_table.csv",
    log:
        f"{RESULTS}/logs/{{experiment}}/error_table.log",
    conda:
        CONDA_ENV
    params:
        code=figure_code("error_table"),
    shell:
        "bnnsweep figure error_table --merged {input:q} --output {output.md:q} > {log:q} 2>&1"
