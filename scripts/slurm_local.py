"""A throwaway single-node SLURM cluster on this host, and the smoke sweep run through it.

Used by ``tests/test_slurm.py`` (and runnable by hand) to prove the SLURM workflow profile on a
real SLURM: it installs Debian's ``slurm-wlm`` and ``munge`` when they are missing (root and
``apt-get`` needed), writes a ``slurm.conf`` for this host (no accounting database, so job
status comes from ``squeue``) and a munge key into a temporary directory, starts ``munged``,
``slurmctld`` and ``slurmd`` in the foreground as children of this process, runs
``config/smoke.yaml`` with ``--workflow-profile workflow/profiles/slurm`` and, for
comparison, with the local profile, and stops exactly the daemons it started.

    python scripts/slurm_local.py WORKDIR    # exit 0 when the SLURM and local results agree
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "sinfo", "srun", "munge")
PACKAGES = ("slurm-wlm", "munge")
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
SLURM_RUN = Path("/run/slurm")  # configless slurmd publishes the config here
# sbatch output of the plugin: "Job <n> has been submitted with SLURM jobid <id> (log: ...)"
SUBMITTED = "has been submitted with SLURM jobid"
# a test cluster answers at once: first status check after 5 s instead of the profile's 40 s
QUICK_STATUS = ("--slurm-init-seconds-before-status-checks", "5")


class SlurmUnavailable(RuntimeError):
    """SLURM cannot be installed or started here; the message says why."""


def _binary(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/sbin") / name) if p.exists()), None
    )


def missing_binaries() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if _binary(name) is None]


def install(log=print) -> None:
    """``apt-get update`` and install slurm-wlm and munge, unless every binary is there."""
    if not missing_binaries():
        return
    if os.geteuid() != 0:
        raise SlurmUnavailable(
            f"SLURM is not installed ({missing_binaries()}) and this is not root"
        )
    if shutil.which("apt-get") is None:
        raise SlurmUnavailable("SLURM is not installed and there is no apt-get to install it")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES],
    ):
        log(f"$ {' '.join(cmd)}")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise SlurmUnavailable(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-800:]}")
    if missing_binaries():
        raise SlurmUnavailable(f"installed {PACKAGES} but {missing_binaries()} are still missing")


def munge_answers() -> bool:
    """Whether a munged answers on the default socket (a credential can be made)."""
    munge = _binary("munge")
    if munge is None or not MUNGE_SOCKET.exists():
        return False
    proc = subprocess.run(
        [munge, "--no-input", f"--socket={MUNGE_SOCKET}"], capture_output=True, timeout=10
    )
    return proc.returncode == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 4000


def slurm_conf(root: Path, host: str, cpus: int, memory_mb: int, port: int) -> str:
    """A single-node cluster run as root, without cgroups (containers rarely delegate them)
    and without an accounting database; finished jobs stay in ``squeue`` for 10 minutes
    (``MinJobAge``), which is what the executor's squeue status query relies on.

    Configless (``enable_configless``): slurmd fetches this file from slurmctld and publishes
    it at /run/slurm/conf, where ``srun`` inside a job finds it; the executor's job step
    drops ``SLURM_CONF`` from the environment, as it drops every SLURM_ variable it does not
    know, so a config reachable only through ``SLURM_CONF`` would not do. For the same
    reason munged listens on its default socket (/run/munge/munge.socket.2): slurmd must
    authenticate before it has a config that could name another."""
    return f"""\
ClusterName=bnnsweep_test
SlurmctldHost={host}(127.0.0.1)
SlurmctldParameters=enable_configless
SlurmUser=root
SlurmdUser=root
SlurmctldPort={port}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=600
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class LocalSlurm:
    """Start munged, slurmctld and slurmd for a config in ``root``; ``stop()`` ends them."""

    def __init__(self, root: str | Path, log=print):
        self.root = Path(root).resolve()
        self.log = log
        self.procs: dict[str, subprocess.Popen] = {}
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.created: list[Path] = []  # directories outside root made here, removed by stop()
        self.foreign_munged = False  # a munged already answered and was used, not started

    def env(self) -> dict:
        """The environment in which sbatch, squeue and srun find this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _spawn(self, name: str, args: list[str]) -> None:
        out = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [_binary(name), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=self.env(),
            start_new_session=True,  # a signal to the test's process group does not reach it
        )
        out.close()
        self.procs[name] = proc
        self.log(f"started {name} (pid {proc.pid})")

    def _wait(self, what: str, ready, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SlurmUnavailable(
                        f"{name} exited with {proc.returncode}: {self.tail(name)}"
                    )
            if ready():
                return
            time.sleep(0.5)
        raise SlurmUnavailable(f"{what} not ready after {timeout:.0f} s: {self.tail('slurmd')}")

    def tail(self, name: str, chars: int = 1500) -> str:
        text = ""
        for path in (self.root / "log" / f"{name}.out", self.root / "log" / f"{name}.log"):
            if path.exists():
                text += path.read_text(errors="replace")[-chars:]
        return text

    def _query(self, *cmd: str) -> str:
        proc = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=30)
        return proc.stdout if proc.returncode == 0 else ""

    def _start_munged(self, key: Path) -> None:
        """Start munged on the default socket, unless one already answers there.

        A munged that answers (Debian's package starts one where services may start) is
        used as it is and left running: slurmctld and slurmd on this one host only need to
        share it, not a key. A socket nobody answers on is left over from a killed run;
        ``--force`` makes the new munged replace it."""
        self.foreign_munged = munge_answers()
        if self.foreign_munged:
            self.log(f"using the munged already answering on {MUNGE_SOCKET}")
            return
        munge = self.root / "munge"
        if not MUNGE_SOCKET.parent.exists():
            MUNGE_SOCKET.parent.mkdir(mode=0o755, parents=True)
            self.created.append(MUNGE_SOCKET.parent)
        self._spawn(
            "munged",
            [
                "--foreground",
                "--force",
                f"--socket={MUNGE_SOCKET}",
                f"--key-file={key}",
                f"--pid-file={munge}/munged.pid",
                f"--seed-file={munge}/munged.seed",
                f"--log-file={self.root}/log/munged.log",
            ],
        )
        self._wait("munged", munge_answers, 30)

    def start(self) -> LocalSlurm:
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        port = _free_port()
        self.conf.write_text(
            slurm_conf(self.root, self.host, os.cpu_count() or 1, _memory_mb(), port)
        )
        self._start_munged(key)
        self._spawn("slurmctld", ["-D", "-i", "-f", str(self.conf)])
        self._wait("slurmctld", lambda: "UP" in self._query("scontrol", "ping"))
        if not SLURM_RUN.exists():
            self.created.append(SLURM_RUN)
        self._spawn("slurmd", ["-D", "--conf-server", f"127.0.0.1:{port}", "-N", self.host])
        self._wait(
            "slurmd",
            lambda: self._query("sinfo", "-h", "-o", "%T").strip() in ("idle", "mixed"),
        )
        self.log(f"SLURM up: {self._query('sinfo').strip()}")
        return self

    def stop(self) -> None:
        """Stop the daemons started here (slurmd first), by their process ids only."""
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
            self.log(f"stopped {name} (pid {proc.pid})")
        for directory in reversed(self.created):
            shutil.rmtree(directory, ignore_errors=True)
        self.created.clear()

    def __enter__(self) -> LocalSlurm:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def snakemake_command(workdir: Path, config: Path, *extra: str) -> list[str]:
    from bnnsweep.sweeps.workflow_run import snakemake_command as command

    return command(ROOT, workdir, config, *extra)


def profile_dir(profile: str) -> Path:
    """A workflow profile's folder: the local ``default`` next to the Snakefile, where
    Snakemake finds it by itself, the others under ``workflow/profiles``."""
    return (
        ROOT / "profiles" / "default"
        if profile == "default"
        else ROOT / "workflow" / "profiles" / profile
    )


def run_sweep(workdir: Path, profile: str, *extra: str, env: dict | None = None, log=print) -> str:
    """Run the smoke sweep in ``workdir`` under a workflow profile; returns its output."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "smoke.yaml"
    shutil.copy(ROOT / "config" / "smoke.yaml", config)
    cmd = snakemake_command(
        workdir, config, "--workflow-profile", str(profile_dir(profile)), *extra
    )
    log(f"$ {' '.join(cmd)}")
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
    )
    output = proc.stdout + proc.stderr
    (workdir / f"snakemake_{profile}.log").write_text(output)
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake with profile {profile} failed:\n{output[-4000:]}")
    return output


def submitted_job_ids(output: str) -> list[str]:
    """SLURM job ids the executor reported submitting."""
    ids = []
    for line in output.splitlines():
        if SUBMITTED in line:
            ids.append(line.split(SUBMITTED, 1)[1].split()[0])
    return ids


GROUPED = ("--config", "grouping={mode: group}")


def result_files(workdir: Path) -> list[Path]:
    """Cell and merged files of a run, relative to its working directory."""
    results = workdir / "results"
    return sorted(
        p.relative_to(workdir) for p in results.glob("*/**/*.nc") if "data" not in p.parts
    )


def compare_runs(a: Path, b: Path) -> dict[str, list[str]]:
    """Per result file, the data variables that differ between two runs (empty: identical)."""
    from bnnsweep.cells.compare import differing_variables

    files_a, files_b = result_files(a), result_files(b)
    if files_a != files_b:
        return {"<file list>": sorted(set(map(str, files_a)) ^ set(map(str, files_b)))}
    return {str(f): d for f in files_a if (d := differing_variables(a / f, b / f))}


def main(argv: list[str]) -> int:
    """Smoke sweep on SLURM one job per cell, on SLURM with grouping, and locally."""
    workdir = Path(argv[0] if argv else "slurm_test").resolve()
    install()
    runs = {}
    with LocalSlurm(workdir / "cluster") as cluster:
        for name, extra in (("slurm", QUICK_STATUS), ("slurm_grouped", QUICK_STATUS + GROUPED)):
            output = run_sweep(workdir / name, "slurm", *extra, env=cluster.env())
            runs[name] = submitted_job_ids(output)
            print(f"{name}: SLURM job ids {', '.join(runs[name])}")
    run_sweep(workdir / "local", "default")
    failed = not all(runs.values())
    for name in runs:
        diffs = compare_runs(workdir / name, workdir / "local")
        print(f"{name} vs local: {'identical data variables' if not diffs else diffs}")
        failed |= bool(diffs)
    return int(failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
