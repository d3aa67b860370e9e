"""The workflow and the package use Snakemake's public interface only (issue 37, item 2):
no module of Snakemake imported for a private name, no private attribute reached through
one, so that a Snakemake release cannot change the workflow's behaviour silently."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    ROOT / "Snakefile",
    *sorted((ROOT / "workflow").rglob("*.smk")),
    *sorted((ROOT / "src").rglob("*.py")),
]
# `from snakemake.x import _name`, `snakemake.x._name`, and a private name of a Snakemake class
# reached as `Class._name`
PRIVATE = [
    re.compile(r"from\s+snakemake[\w.]*\s+import\s+[^\n]*\b_\w+"),
    re.compile(r"\bsnakemake(\.\w+)*\._\w+"),
    re.compile(r"\b(JobScheduler|Workflow|DAG|Persistence)\._\w+"),
]


def test_no_private_snakemake_names():
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in SOURCES
        for pattern in PRIVATE
        for match in pattern.finditer(path.read_text())
    ]
    assert found == []


def test_the_patterns_find_what_they_look_for():
    text = (
        "from snakemake.scheduling.job_scheduler import _x\n"
        "JobScheduler._schedule_reevalutation = f\n"
        "snakemake.dag._stuff\n"
    )
    assert sum(len(p.findall(text)) > 0 for p in PRIVATE) >= 3
