"""Progress people can see: a bar with the time left in a terminal, ETA on counted log
lines, and the one-line summary at the end of `bnnsweep fit`."""

import io
import os
import pty
import subprocess
import sys

from bnnsweep.sweeps.progress import ProgressLog, format_seconds


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_counted_lines_get_the_time_left_from_the_time_so_far():
    lines, clock = [], Clock()
    log = ProgressLog(lines.append, clock=clock)
    log("epoch 1/4: test error 0.3")  # starts the clock of 'epoch'
    clock.now = 10.0
    log("epoch 2/4: test error 0.2")  # 2 of 4 done in 10 s: 10 s left
    log("restart 1/5")  # counted at its start: nothing done yet
    clock.now = 40.0
    log("restart 3/5")  # 2 of 5 done in 30 s: 45 s left
    log("a line without a count")
    assert lines == [
        "epoch 1/4: test error 0.3",
        "epoch 2/4: test error 0.2 [ETA 10 s]",
        "restart 1/5",
        "restart 3/5 [ETA 45 s]",
        "a line without a count",
    ]
    assert format_seconds(65) == "1m 05s" and format_seconds(7800) == "2h 10m"


def test_a_terminal_gets_one_bar_redrawn_in_place():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, clock = Tty(), Clock()
    log = ProgressLog(lambda m: tty.write(m + "\n"), tty, lines_on_terminal=True, clock=clock)
    log("fitting a cell")
    log("hmc iteration 100/400")
    clock.now = 5.0
    log("hmc iteration 200/400: mean acceptance 0.91")
    log.close()
    out = tty.getvalue()
    assert out.startswith("fitting a cell\n")
    assert "\r[######..................] hmc iteration 100/400" in out
    assert "hmc iteration 200/400: mean acceptance 0.91\n" in out  # the line, above the bar
    assert "] hmc iteration 200/400  ETA 5 s" in out
    assert out.endswith("\r\033[K")  # the bar removed at the end


def test_bnnsweep_fit_in_a_pseudo_terminal_shows_a_bar_and_ends_with_its_summary(tmp_path):
    out = tmp_path / "cell.nc"
    args = ["fit", "--dataset", "toy_sine", "--method", "pbp", "--hidden", "5"]
    args += ["--set", "epochs=8", "--output", str(out)]
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bnnsweep.cli", *args], stdout=slave, stderr=slave, close_fds=True
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=300) == 0
    text = b"".join(chunks).decode()
    assert "\r[" in text and "] epoch 8/8" in text and "ETA" in text
    last = text.replace("\r\n", "\n").strip().splitlines()[-1]
    assert last.startswith("adhoc/cells/toy_sine/pbp/h5_split-default_seed-0: status ok")
    assert last.endswith(f"-> {out}")
