"""Side-effect-free parsing (issue 36): a Snakemake invocation that runs no job (`-n`,
`--summary`, `--lint`, `--report`) writes and moves nothing under results_dir, whatever
the state of the cells there (damaged, stale, missing) or of the merged file (damaged) and
whatever else the directory holds; the next real run then refits exactly the damaged cells
and merges again."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_faults import cell_files, command, fits_run, fresh, run  # noqa: E402

pytestmark = pytest.mark.workflow


def tree(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` with its content's hash (directories: '/')."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = "/" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_invocations_that_run_no_job_touch_nothing(tmp_path):
    workdir = fresh(tmp_path / "w")
    run(workdir)
    results = workdir / "results"
    cells = sorted(cell_files(workdir))
    truncated, copied_over, deleted = cells
    truncated.write_bytes(truncated.read_bytes()[:3000])
    copied_over.write_bytes(deleted.read_bytes())  # intact, but another cell's file
    deleted.unlink()
    merged = results / "smoke" / "merged.nc"  # one bit flipped: merged again
    damaged = bytearray(merged.read_bytes())
    damaged[len(damaged) // 3] ^= 8
    merged.write_bytes(bytes(damaged))
    (results / "exports").mkdir()
    (results / "exports" / "someone_elses.nc").write_bytes(b"not ours")
    before = tree(results)

    for extra in (["-n"], ["--summary"], ["--lint"], ["--report", str(tmp_path / "r.html")]):
        proc = subprocess.run(
            [*command(workdir), *extra], capture_output=True, text=True, timeout=600
        )
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert tree(results) == before, f"{extra} changed {results}"
    dry = subprocess.run([*command(workdir), "-n"], capture_output=True, text=True, timeout=600)
    assert "fit_smoke__" in dry.stdout  # the dry run plans the refit it does not do
    assert f"{copied_over.relative_to(workdir)} is stale" in dry.stderr

    fits = fits_run(workdir)
    run(workdir)  # the same command: the three cells refitted, nothing else touched
    after = fits_run(workdir)
    assert {k for k in after if after[k] != fits.get(k)} == {
        f"{p.parent.name}/{p.stem}" for p in cells
    }
    assert (results / "exports" / "someone_elses.nc").read_bytes() == b"not ours"
    assert Path(str(truncated) + ".corrupt").is_file()
    check = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "check", "results", "--config", "smoke.yaml"],
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
    rerun = subprocess.run([*command(workdir), "-n"], capture_output=True, text=True)
    assert "Nothing to be done" in rerun.stdout + rerun.stderr
