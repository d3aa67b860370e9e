"""A finished Snakemake run exits when its last job is done, not up to a second later.

Snakemake's job scheduler wakes itself one rate-limit timespan ahead (``--max-jobs-per-
timespan``, 100 jobs per 1 s by default) with a ``threading.Timer`` after every scheduling
pass (``JobScheduler._schedule_reevalutation``). The timer thread is not a daemon, so the
interpreter waits for the last one before it exits: every local run stays alive, its cores
idle, for up to a second after its last job (1.0-1.3 s measured on the default sweep, about
1% of its cores' time). A shorter timespan (``100/100ms``) does not help: the run then hung.

``daemon_reevaluation_timers`` makes those timers daemon threads, called by the Snakefile in
the main Snakemake process. A wake-up matters only while the scheduler waits; at exit there is
nothing left to schedule. Where Snakemake's scheduler does not look as this module expects,
nothing is changed.
"""

from __future__ import annotations

import threading

_MARK = "_bnnsweep_daemon_timer"


def daemon_reevaluation_timers() -> bool:
    """Make Snakemake's re-evaluation timers daemon threads; whether they now are."""
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    original = getattr(JobScheduler, "_schedule_reevalutation", None)
    if original is None:
        return False
    if getattr(original, _MARK, False):
        return True

    def schedule_reevaluation(self, delay) -> None:
        opened = getattr(self, "_open_jobs", None)
        if opened is None:  # not the scheduler this module knows: as Snakemake does it
            original(self, delay)
            return
        timer = threading.Timer(delay, opened.release)
        timer.daemon = True
        timer.start()

    setattr(schedule_reevaluation, _MARK, True)
    JobScheduler._schedule_reevalutation = schedule_reevaluation
    return True
