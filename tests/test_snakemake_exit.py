"""snakemake_exit: Snakemake's re-evaluation timers become daemon threads that still wake the
scheduler, and a scheduler of another shape is left as Snakemake made it."""

from __future__ import annotations

import threading

import pytest

from bnnsweep import snakemake_exit


@pytest.fixture
def scheduler_class(monkeypatch):
    from snakemake.scheduling.job_scheduler import JobScheduler

    # the patch is undone after each test (Snakemake's own method restored)
    monkeypatch.setattr(
        JobScheduler, "_schedule_reevalutation", JobScheduler._schedule_reevalutation
    )
    return JobScheduler


class Waiting:
    """What the scheduler's wake-up touches: the semaphore its main loop waits on."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)


def timers_started(call) -> list[threading.Thread]:
    before = set(threading.enumerate())
    call()
    return [t for t in threading.enumerate() if t not in before]


def test_snakemake_wakes_its_scheduler_from_a_thread_that_holds_the_exit(scheduler_class):
    """The behaviour this module works around (if Snakemake changes it, this fails)."""
    waiting = Waiting()
    started = timers_started(lambda: scheduler_class._schedule_reevalutation(waiting, 0.05))
    assert [t.daemon for t in started] == [False]
    assert waiting._open_jobs.acquire(timeout=5)


def test_its_wake_ups_run_in_daemon_threads_and_still_wake_it(scheduler_class):
    assert snakemake_exit.daemon_reevaluation_timers()
    assert snakemake_exit.daemon_reevaluation_timers()  # a second call changes nothing
    waiting = Waiting()
    started = timers_started(lambda: scheduler_class._schedule_reevalutation(waiting, 0.05))
    assert [t.daemon for t in started] == [True]
    assert waiting._open_jobs.acquire(timeout=5)


def test_a_scheduler_of_another_shape_keeps_snakemakes_wake_up(scheduler_class):
    calls = []
    scheduler_class._schedule_reevalutation = lambda self, delay: calls.append(delay)
    assert snakemake_exit.daemon_reevaluation_timers()
    scheduler_class._schedule_reevalutation(object(), 0.5)  # no _open_jobs
    assert calls == [0.5]
