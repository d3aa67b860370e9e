"""Every input bounded before it is expanded (issue 36): YAML alias bombs (lists, and
mappings through merge keys), deep nesting of brackets and of blocks are refused with one
line by every documented command that reads a config file (`bnnsweep validate`, `plan`,
`check`, and `bnnsweep run`, which checks the files of a Snakemake command line before it
runs Snakemake), each under 1 GB of memory; two config files naming one experiment are
refused instead of being merged key by key."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LIST_BOMB = "experiments: {}\na0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"a{i + 1}: &a{i + 1} [{', '.join([f'*a{i}'] * 10)}]\n" for i in range(8)
)
# the 880-byte bomb: mappings merged into mappings, 8 levels
MERGE_BOMB = (
    "m0: &m0 {"
    + ", ".join(f"k{j}: {j}" for j in range(10))
    + "}\n"
    + "".join(
        f"m{i + 1}: &m{i + 1} {{<<: *m{i}, " + ", ".join(f"j{j}: *m{i}" for j in range(9)) + "}\n"
        for i in range(8)
    )
    + "experiments: {smoke: *m8}\n"
)
BRACKETS = "experiments: " + "[" * 50_000 + "]" * 50_000 + "\n"
BLOCKS = "experiments:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(1_000)) + "\n"
BOMBS = {"list-bomb": LIST_BOMB, "merge-bomb": MERGE_BOMB, "brackets": BRACKETS, "blocks": BLOCKS}
MESSAGES = {
    "list-bomb": "more than 100000 values once its YAML aliases are expanded",
    "merge-bomb": "more than 100000 values once its YAML aliases are expanded",
    "brackets": "lists and mappings nest deeper than 40",
    "blocks": "lists and mappings nest deeper than 40",
}
LIMIT_MB = 1024


# The command runs as the grandchild of a small launcher that reports its peak RSS: a child
# forked straight from pytest counts pytest's own resident pages (gigabytes late in the
# suite) in its ru_maxrss until it execs.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measured(argv, cwd) -> tuple[int, str, float, float]:
    """(exit code, stderr, peak resident memory in MB, wall seconds) of a child process."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, *argv], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = start + 300
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"{argv} still running after 300 s")
        time.sleep(0.01)
    stderr = proc.stderr.read().decode()
    peak_kb = float(proc.stdout.read().decode().split()[-1])
    proc.stderr.close()
    proc.stdout.close()
    return (
        os.waitstatus_to_exitcode(status),
        stderr,
        peak_kb / 1024,
        time.monotonic() - start,
    )


def commands(path: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "bnnsweep.cli"]
    snakemake = ["--snakefile", str(ROOT / "Snakefile"), "--cores", "1", "-n"]
    return {
        "validate": [*cli, "validate", str(path)],
        "plan": [*cli, "plan", str(path)],
        "check": [*cli, "check", "--config", str(path)],
        "run": [*cli, "run", *snakemake, "--configfile", str(path)],
    }


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_bombs_are_refused_in_one_line_by_every_command(tmp_path, bomb):
    path = tmp_path / f"{bomb}.yaml"
    path.write_text(BOMBS[bomb])
    assert path.stat().st_size < 1_000_000
    for name, argv in commands(path).items():
        code, stderr, peak_mb, _ = measured(argv, tmp_path)
        assert code == 2, (name, stderr[-2000:])
        assert stderr.count("\n") == 1 and MESSAGES[bomb] in stderr, (name, stderr[-2000:])
        assert f"config file {str(path)!r}" in stderr and "Traceback" not in stderr
        assert peak_mb < LIMIT_MB, (name, peak_mb)


def test_the_merge_bomb_is_small():
    assert len(MERGE_BOMB) < 1000


def test_two_config_files_naming_one_experiment_are_refused(tmp_path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text("experiments: {x: {datasets: [toy_sine], methods: {map: {hidden: 1}}}}\n")
    b.write_text("experiments: {x: {datasets: [toy_sine], methods: {exact: {hidden: 0}}}}\n")
    snakemake = ["--snakefile", str(ROOT / "Snakefile"), "--cores", "1", "-n"]
    for argv in (
        [sys.executable, "-m", "bnnsweep.cli", "run", *snakemake, "--configfile", str(a), str(b)],
        [sys.executable, "-m", "snakemake", *snakemake, "--configfile", str(a), str(b)],
    ):
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0
        assert f"experiment 'x' is in both {str(a)!r} and {str(b)!r}" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "results").exists()


def test_run_passes_every_argument_to_snakemake(tmp_path):
    """`bnnsweep run` with a good config is Snakemake with the same arguments."""
    config = tmp_path / "c.yaml"
    config.write_text("experiments: {x: {datasets: [toy_sine], methods: {exact: {hidden: 0}}}}\n")
    argv = ["--snakefile", str(ROOT / "Snakefile"), "--cores", "1", "-n", "--configfile"]
    ours = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "run", *argv, str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    theirs = subprocess.run(
        [sys.executable, "-m", "snakemake", *argv, str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ours.returncode == theirs.returncode == 0, ours.stderr[-2000:]
    assert "fit_x__exact" in ours.stdout and "fit_x__exact" in theirs.stdout


def test_a_bomb_given_as_a_config_value_is_refused(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("experiments: {x: {datasets: [toy_sine], methods: {exact: {hidden: 0}}}}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "run", "-n", "--configfile", str(config),
         "--config", "x=" + "[" * 100 + "]" * 100],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "--config x: lists and mappings nest deeper" in proc.stderr
