"""The plan figures quoted in README.md and the configs' headers are ``bnnsweep plan``'s
(issue 35: README times from ``plan``, in one unit): ``benchmarks/quoted_plans.py --write``
regenerates them after a cost model changes."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import quoted_plans  # noqa: E402


def test_every_quoted_plan_is_the_plans_own():
    quoted = set()
    for path in quoted_plans.quoting_files():
        text = path.read_text()
        _, changes = quoted_plans.requote(text)
        assert not changes, f"{path.name}: {changes}; run python benchmarks/quoted_plans.py --write"
        quoted |= {m["config"] for m in quoted_plans.QUOTE.finditer(text)}
    # the configs issue 35 asks the plan of (the default sweep's in README.md as well)
    assert {"config/config.yaml", "config/variational.yaml", "config/thesis_ltu.yaml"} <= quoted
    readme = (quoted_plans.ROOT / "README.md").read_text()
    assert any(m["config"] == "config/config.yaml" for m in quoted_plans.QUOTE.finditer(readme))


def test_a_stale_quote_is_rewritten_across_a_comment_line_break():
    planned = quoted_plans.planned(str(quoted_plans.ROOT / "config/smoke.yaml"))
    text = "# `bnnsweep plan config/smoke.yaml`: 1 cells in 999\n# jobs, 12.5 core-h. More.\n"
    new, changes = quoted_plans.requote(text)
    assert len(changes) == 3 - (planned["cells"] == "1")
    expected = (
        f"# `bnnsweep plan config/smoke.yaml`: {planned['cells']} cells in {planned['jobs']}\n"
        f"# jobs, {planned['hours']} core-h. More.\n"
    )
    assert new == expected
    assert quoted_plans.requote(new) == (new, [])
