"""Issue 35: the documentation site builds in strict mode (a broken link, a missing page or
an unresolved API reference fails), and every `bash` and `python` code block of the
tutorials runs, page by page in the order of the site's navigation, in a sandbox holding the
workflow's files (so that `snakemake` and relative paths work as in a checkout). `console`
blocks are shown only: the cluster command needs a cluster (tests/test_slurm.py runs it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
RUN = {"bash", "python"}
SHOWN = {"console"}


def tutorials() -> list[Path]:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages = next(
        item["Tutorials"] for item in nav if isinstance(item, dict) and "Tutorials" in item
    )
    return [ROOT / "docs" / next(iter(page.values())) for page in pages]


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]


def test_every_tutorial_block_is_run_or_declared_shown():
    pages = tutorials()
    assert [p.stem for p in pages] == ["first-sweep", "reading-results", "your-own-data",
                                       "a-new-method", "a-cluster-run"]  # fmt: skip
    for page in pages:
        kinds = {kind for kind, _ in blocks(page)}
        assert kinds <= RUN | SHOWN, (page.name, kinds)
        assert kinds & RUN, page.name


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    """A folder with the workflow's files, as a checkout has them."""
    root = tmp_path_factory.mktemp("checkout")
    for name in ("Snakefile", "requirements-lock.txt"):
        shutil.copy(ROOT / name, root / name)
    for folder in ("workflow", "config", "profiles", "envs"):
        shutil.copytree(ROOT / folder, root / folder, symlinks=True)
    return root


@pytest.mark.parametrize("page", tutorials(), ids=lambda p: p.stem)
def test_tutorial_code_blocks_run(page, sandbox, monkeypatch):
    """The blocks of one page in order, its python blocks in one namespace."""
    monkeypatch.chdir(sandbox)
    # the commands of the environment running the tests, activated or not
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    namespace: dict = {"__name__": "__tutorial__"}
    for kind, code in blocks(page):
        if kind == "bash":
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=sandbox,
                                  capture_output=True, text=True)  # fmt: skip
            assert proc.returncode == 0, f"{page.name}:\n{code}\n{proc.stdout}\n{proc.stderr}"
        elif kind == "python":
            # dont_inherit: not this module's `from __future__ import annotations`
            exec(compile(code, page.name, "exec", dont_inherit=True), namespace)  # noqa: S102
    from bnnsweep.methods import _REGISTERED

    _REGISTERED.pop("bayes_linear", None)  # registered by a-new-method for its process only


def test_the_docs_build_in_strict_mode(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module)
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    config_page = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "results_dir" in config_page and "target_minutes" in config_page
    api_page = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    assert "pred_mean" in api_page and "palette" in api_page
