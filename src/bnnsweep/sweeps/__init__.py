"""Sweep planning and the workflow's run: the config read and checked (``config``, the axes
it expands, ``axes``), its cells and batch specs and their code versions (``sweep``,
``code_imports``), jobs sized from the methods' cost models (``jobsize``), which cells are
current, stale or damaged (``result_check``), progress lines and the end-of-run summary
(``progress``, ``sweep_progress``), the lock of a results directory (``runlock``), the
Snakemake command line of tests and benchmarks (``workflow_run``) and the figure kinds that
are tables (``table_kinds``).

The Snakefile and ``bnnsweep`` commands call these; no method or engine imports them.
"""
