"""The figure kinds that are tables, written as Markdown and CSV (``<kind>.md`` and
``<kind>.csv`` under ``results/<experiment>/tables/``) rather than as images. A module of its
own so that the workflow can name the files without importing matplotlib;
``bnnsweep.figures.FIGURES`` gives these kinds the suffix ``.md``."""

TABLE_KINDS = frozenset(
    {
        "error_table",
        "chapter_one_checks",
        "evidence_committee",
        "ltu_error_counts",
        "mixture_components",
    }
)
