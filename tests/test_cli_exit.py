"""The ``bnnsweep`` command ends without the interpreter's teardown (``cli.run``): its exit
codes, its output and the files it writes must be exactly those of ``main``."""

import subprocess
import sys

import netCDF4

from bnnsweep.cli import main


def _bnnsweep(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def test_all_output_arrives_through_a_pipe(capsys):
    assert main(["list", "methods"]) == 0
    expected = capsys.readouterr().out
    done = _bnnsweep("list", "methods")
    assert done.returncode == 0
    assert done.stdout == expected and len(expected) > 1000


def test_a_user_error_exits_2_with_one_line(tmp_path):
    done = _bnnsweep("merge", tmp_path / "missing.nc", "--output", tmp_path / "m.nc")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bnnsweep: error:")


def test_a_fit_leaves_its_cell_and_its_whole_log(tmp_path):
    log, out = tmp_path / "fit.log", tmp_path / "cell.nc"
    done = _bnnsweep(
        "fit", "--dataset", "toy_sine", "--method", "exact", "--log", log, "--output", out
    )
    assert done.returncode == 0, done.stderr
    with netCDF4.Dataset(out) as nc:
        assert nc["status"][...] is not None
    lines = log.read_text().splitlines()
    assert any(line.startswith("done in") for line in lines)
    assert lines[-1].endswith(f"-> {out}") and "status ok" in lines[-1]  # the summary, last
    assert done.stdout.strip().endswith(f"-> {out}")


def test_a_closed_pipe_stops_quietly():
    """`bnnsweep list datasets | head -1`: the reader leaves early; no error line."""
    script = (
        "import sys\n"
        "from bnnsweep import cli\n"
        "class Closed:\n"
        "    def write(self, text):\n"
        "        raise BrokenPipeError(32, 'Broken pipe')\n"
        "    def flush(self):\n"
        "        raise BrokenPipeError(32, 'Broken pipe')\n"
        "    def fileno(self):\n"
        "        return sys.__stdout__.fileno()\n"
        "sys.stdout = Closed()\n"
        "cli.run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "list", "datasets"], capture_output=True, text=True
    )
    assert done.returncode == 141 and done.stderr == ""
