"""Progress of a fit: a bar with an estimated time left in a terminal, ETA lines in a log.

Methods report progress as plain log lines that count units, ``"epoch 12/40: ..."``,
``"restart 2/5"``, ``"hmc iteration 700/1400: ..."`` (``COUNTED``). ``ProgressLog`` wraps the
logger a fit is given and reads those counts:

- writing to a terminal, the latest count is drawn as one bar line, redrawn in place, with
  the time left estimated from the time spent so far (other lines are printed above it);
- writing to a file, each counted line gets `` [ETA 1m 05s]`` appended.

A unit counted at its start (``restart k/K``: k - 1 are done) is told from one counted when
done (``epoch k/K``) by its name (``STARTED``).
"""

from __future__ import annotations

import re
import sys
import time

COUNTED = re.compile(r"^\s*(?P<label>[a-z][a-z -]*?) (?P<k>\d+)/(?P<n>\d+)\b")
STARTED = ("restart",)
BAR = 24


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3m 05s``, ``2h 10m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


class ProgressLog:
    """A logger (``log(message)``) that reads counted lines. ``write`` receives the lines
    (counted ones with their ETA); ``terminal`` (a text stream that is a TTY, or None) gets
    the bar; ``lines_on_terminal`` says that ``write`` prints to that terminal too, where a
    line that is only a count is left to the bar; ``clock`` gives seconds."""

    def __init__(self, write, terminal=None, lines_on_terminal=False, clock=time.monotonic):
        self.write, self.terminal, self.clock = write, terminal, clock
        self.lines_on_terminal = lines_on_terminal and terminal is not None
        self.starts: dict[str, float] = {}
        self.bar_shown = False

    def eta(self, label: str, k: int, n: int) -> float | None:
        """Seconds left for ``label`` at count k of n, from the time since its first count
        (None until some time has passed with some units done)."""
        now = self.clock()
        start = self.starts.setdefault(label, now)
        done = (k - 1) / n if label.endswith(STARTED) else k / n
        if done <= 0 or now <= start:
            return None
        return (now - start) / done * (1.0 - done)

    def __call__(self, message: str) -> None:
        match = COUNTED.match(message)
        left = None
        if match and int(match["n"]) > 0:
            left = self.eta(match["label"].strip(), int(match["k"]), int(match["n"]))
        if self.terminal is not None:
            self._clear_bar()
        if self.lines_on_terminal:
            if match is None or COUNTED.fullmatch(message.strip()) is None:
                self.write(message)
        else:
            self.write(message + (f" [ETA {format_seconds(left)}]" if left is not None else ""))
        if self.terminal is not None and match is not None and int(match["n"]) > 0:
            self._draw_bar(match["label"].strip(), int(match["k"]), int(match["n"]), left)

    def _draw_bar(self, label: str, k: int, n: int, left: float | None) -> None:
        filled = int(BAR * min(k, n) / n)
        eta = f"  ETA {format_seconds(left)}" if left is not None else ""
        self.terminal.write(f"\r[{'#' * filled}{'.' * (BAR - filled)}] {label} {k}/{n}{eta}")
        self.terminal.flush()
        self.bar_shown = True

    def _clear_bar(self) -> None:
        if self.bar_shown:
            self.terminal.write("\r\033[K")
            self.terminal.flush()
            self.bar_shown = False

    def close(self) -> None:
        """Remove the bar (before the summary line)."""
        if self.terminal is not None:
            self._clear_bar()


def progress_log(write, stream=None, lines_on_terminal=False) -> ProgressLog:
    """``ProgressLog`` for ``write``, with a bar on ``stream`` (default stdout) when it is a
    terminal."""
    stream = sys.stdout if stream is None else stream
    terminal = stream if hasattr(stream, "isatty") and stream.isatty() else None
    return ProgressLog(write, terminal, lines_on_terminal)
