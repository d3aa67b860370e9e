"""Devices (issue 37): JAX chooses the platform (the package sets no JAX_PLATFORMS), and the
config key ``devices`` gives a method's fit jobs GPUs, which the SLURM executor requests.

On this machine (no CUDA jaxlib) every fit still runs on the CPU in float64; the GPU
request is checked in the ``sbatch`` command lines the SLURM executor plugin builds from the
workflow's jobs under the SLURM profile (stand-ins for SLURM's commands record them;
nothing is fitted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bnnsweep.sweeps import jobsize
from bnnsweep.sweeps.config import ConfigError, expand, validate
from bnnsweep.sweeps.workflow_run import snakemake_command

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, os
before = os.environ.get("JAX_PLATFORMS")
import bnnsweep.cli, bnnsweep.runner, bnnsweep.methods
from bnnsweep.runtime.jax_runtime import jax, jnp
from bnnsweep.methods import get_method
get_method("hmc")
x = jnp.ones(3) / 3
print(json.dumps({
    "before": before,
    "after": os.environ.get("JAX_PLATFORMS"),
    "backend": jax.default_backend(),
    "dtype": str(x.dtype),
    "x64": bool(jax.config.jax_enable_x64),
}))
"""


def _clean_env() -> dict:
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "XDG_CACHE_HOME", "BNNSWEEP_JAX_CACHE")
    return {k: os.environ[k] for k in keep if k in os.environ}


def test_the_package_sets_no_jax_platform_and_computes_in_float64():
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["before"] is None
    assert report["after"] is None  # not set by importing the package, JAX or a method
    assert report["x64"] and report["dtype"] == "float64"
    try:
        import jax_cuda12_plugin  # noqa: F401
    except ImportError:  # no CUDA build of jaxlib: the CPU, as before
        assert report["backend"] == "cpu"


def test_a_users_jax_platforms_is_kept():
    env = {**_clean_env(), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["before"] == report["after"] == "cpu"
    assert report["backend"] == "cpu"


def _config(devices=None) -> dict:
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    if devices is not None:
        config["devices"] = devices
    return validate(config)


def test_gpu_cells_are_batched_apart_and_their_jobs_ask_for_gpus():
    cpu_only = _config()
    config = _config({"map": {"gpu": 2}})
    cells = expand(config)
    before = jobsize.plan_batches(expand(cpu_only), jobsize.batching_settings(cpu_only))
    batches = jobsize.plan_batches(cells, jobsize.batching_settings(config), config["devices"])
    assert any({c.method for c in b.cells} == {"laplace", "map"} for b in before)
    for batch in batches:
        methods = {c.method for c in batch.cells}
        assert methods in ({"laplace"}, {"map"})
        resources = batch.resources(attempt=2)
        if methods == {"map"}:
            assert batch.gpus == 2 and resources["gpu"] == 2
        else:
            assert batch.gpus == 0 and "gpu" not in resources
        assert {"runtime", "mem_mb"} <= set(resources)
    assert sorted(c.path_id for b in batches for c in b.cells) == sorted(c.path_id for c in cells)


def test_the_plan_shows_the_gpus(tmp_path):
    config = _config({"map": {"gpu": 1}})
    rows = jobsize.plan_table(config, expand(config), tmp_path).splitlines()
    (map_row,) = [r for r in rows if r.startswith("| smoke / map |")]
    (laplace_row,) = [r for r in rows if r.startswith("| smoke / laplace |")]
    assert "time, 1 GPU |" in map_row and "GPU" not in laplace_row


def test_without_devices_the_batches_are_unchanged():
    config = _config()
    cells = expand(config)
    plain = jobsize.plan_batches(cells, jobsize.batching_settings(config))
    empty = jobsize.plan_batches(cells, jobsize.batching_settings(config), {})
    zero = jobsize.plan_batches(
        cells, jobsize.batching_settings(config), {"map": {"gpu": 0}, "laplace": {"gpu": 0}}
    )
    for other in (empty, zero):
        assert [(b.batch_id, b.resources(), [c.path_id for c in b.cells]) for b in other] == [
            (b.batch_id, b.resources(), [c.path_id for c in b.cells]) for b in plain
        ]
    assert all("gpu" not in b.resources() for b in plain)


@pytest.mark.parametrize(
    "devices, says",
    [
        ({"mapp": {"gpu": 1}}, "config key 'devices.mapp': no method or label 'mapp'"),
        ({"map": {"gpu": -1}}, "devices"),
        ({"map": {"gpu": "one"}}, "devices"),
        ({"map": {"gpus": 1}}, "devices"),
        ({"map": 1}, "devices"),
    ],
)
def test_bad_devices_are_one_line_naming_the_key(devices, says):
    with pytest.raises(ConfigError) as err:
        expand(_config(devices))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_bad_devices_from_the_command_line(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    config["devices"] = {"map": {"gpu": 0.5}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run(
        [sys.executable, "-m", "bnnsweep.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "devices" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


STAND_IN = """#!/bin/sh
# a stand-in for SLURM's {name}: records its arguments, answers like the real one
printf '%s\\n' "$*" >> "{log}"
{answer}
"""


def _stand_ins(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir()
    answers = {"sbatch": 'cat > /dev/null\necho "4242"', "squeue": "", "scancel": ""}
    for name in ("sacct", "sinfo", "sacctmgr", "sshare", "scontrol"):
        answers[name] = "exit 1"
    for name, answer in answers.items():
        path = bin_dir / name
        path.write_text(STAND_IN.format(name=name, log=log.with_suffix(f".{name}"), answer=answer))
        path.chmod(0o755)


@pytest.mark.workflow
def test_the_slurm_submission_of_a_gpu_methods_job_requests_the_gpu(tmp_path):
    workdir = tmp_path / "w"
    workdir.mkdir()
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    config["devices"] = {"map": {"gpu": 1}}
    (workdir / "gpu.yaml").write_text(yaml.safe_dump(config))
    profile = ROOT / "workflow" / "profiles" / "slurm"
    command = snakemake_command(ROOT, workdir, workdir / "gpu.yaml")
    at = command.index("--configfile")
    command[at:at] = ["--workflow-profile", str(profile)]

    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    _stand_ins(bin_dir, log)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = [*command[:at], "--default-resources", "slurm_partition=gpu"]
    run += command[at:]
    sbatch = log.with_suffix(".sbatch")
    proc = subprocess.Popen(run, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            calls = sbatch.read_text() if sbatch.exists() else ""
            if "rule_fit_smoke__map__" in calls and "rule_fit_smoke__laplace__" in calls:
                break
            time.sleep(1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    calls = sbatch.read_text().splitlines() if sbatch.exists() else []
    gpu_calls = [c for c in calls if "rule_fit_smoke__map__" in c]
    cpu_calls = [c for c in calls if "rule_fit_" in c and c not in gpu_calls]
    assert gpu_calls and cpu_calls, stderr[-3000:]
    assert all("--gpus=1" in c.split() for c in gpu_calls)
    assert not any("--gpus" in c or "--gres" in c for c in cpu_calls)
