"""The plan figures quoted in README.md and the shipped configs' headers, from ``bnnsweep plan``.

    python benchmarks/quoted_plans.py            # list the quotes that differ from the plan
    python benchmarks/quoted_plans.py --write    # rewrite them

A quote reads ``\\`bnnsweep plan config/NAME.yaml\\`: C cells in J jobs, E core-h`` (line breaks
and a comment's ``#`` may fall between its words): the config's cells, its batch jobs and
the plan's estimate before any cell exists (``jobsize.plan_rows`` without measured cells:
each method's work-model bound times its typical share, plus a start-up per job), in
core-hours as ``bnnsweep plan`` prints it (three significant digits). Changing a cost model
changes them; this script writes them again, and ``tests/test_quoted_plans.py`` fails
until it has.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from functools import cache
from pathlib import Path

from bnnsweep.sweeps.config import expand, load
from bnnsweep.sweeps.jobsize import plan_rows

ROOT = Path(__file__).resolve().parents[1]
_GAP = r"(?:\s|#)+"
QUOTE = re.compile(
    rf"`bnnsweep plan (?P<config>config/[\w.-]+\.yaml)`:{_GAP}(?P<cells>\d+){_GAP}cells{_GAP}"
    rf"in{_GAP}(?P<jobs>\d+){_GAP}jobs?,{_GAP}(?P<hours>[\d.]+){_GAP}core-h\b"
)


def quoting_files(root: Path = ROOT) -> list[Path]:
    """README.md and the shipped configs."""
    return [root / "README.md", *sorted((root / "config").glob("*.yaml"))]


@cache
def planned(config_path: str) -> dict[str, str]:
    """{cells, jobs, hours} of a config's plan before any cell exists, as quoted."""
    config = load(config_path)
    with tempfile.TemporaryDirectory() as empty:
        plan = plan_rows(config, expand(config), empty)
    cells = sum(len(b.cells) for b in plan.batches)
    return {"cells": str(cells), "jobs": str(len(plan.batches)),
            "hours": f"{plan.estimate_s / 3600:.3g}"}  # fmt: skip


def requote(text: str, root: Path = ROOT) -> tuple[str, list[str]]:
    """``text`` with every quote's numbers set to the plan's, and a line per changed quote."""
    changes = []
    out, last = [], 0
    for match in QUOTE.finditer(text):
        values = planned(str(root / match["config"]))
        for name in ("cells", "jobs", "hours"):
            out.append(text[last : match.start(name)] + values[name])
            last = match.end(name)
            if match[name] != values[name]:
                changes.append(f"{name} of {match['config']}: {match[name]} -> {values[name]}")
    out.append(text[last:])
    return "".join(out), changes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the quotes that differ")
    args = parser.parse_args(argv)
    stale = 0
    for path in quoting_files():
        text = path.read_text()
        new, changes = requote(text)
        for change in changes:
            print(f"{path.relative_to(ROOT)}: {change}")
        stale += len(changes)
        if args.write and new != text:
            path.write_text(new)
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    raise SystemExit(main())
