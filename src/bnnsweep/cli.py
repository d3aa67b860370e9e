"""The ``bnnsweep`` command line: fit one cell or a batch, prepare data, list, merge, draw
figures, validate and plan a sweep, check a results directory.

The Snakemake rules call these same commands, so a cell run by hand and a cell run by the
workflow are the same computation. Every command imports only what it needs (the method
registry for fits, matplotlib for figures), inside its function.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import re
import sys
import time
from pathlib import Path

# One fit is one core: multithreaded BLAS on small matrices only adds contention (DESIGN.md
# 'Execution'). Set before numpy is first imported; a user's explicit setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import yaml  # noqa: E402

_IMPORTED = time.time()  # the process's start, where /proc cannot tell it


def _parse_set(items: list[str]) -> dict:
    """``key=value`` pairs; values are parsed as YAML (numbers, lists, mappings)."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as err:
            from .sweeps.config import yaml_problem

            raise ValueError(
                f"--set {item!r}: the value is not valid YAML ({yaml_problem(err)})"
            ) from None
    return out


def _parse_settings_json(text: str | None) -> dict:
    """``--settings-json``: one JSON object."""
    if not text:
        return {}
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"--settings-json is not valid JSON: {err}") from None
    if not isinstance(settings, dict):
        raise ValueError(f"--settings-json must be a JSON object, got {type(settings).__name__}")
    return settings


def _logger(path: str | None):
    """Progress lines to stdout, or appended to the file ``path``: with a bar and the time
    left when stdout is a terminal, with ``[ETA ...]`` on counted lines otherwise
    (``bnnsweep.sweeps.progress``)."""
    from .sweeps.progress import progress_log

    if not path:
        return progress_log(lambda msg: print(msg, flush=True), lines_on_terminal=True)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a", buffering=1)  # noqa: SIM115 - closed at exit
    return progress_log(lambda msg: fh.write(f"{msg}\n"))


def _reporter(log_path, log):
    """Where a fit's one-line summary goes: the terminal (the progress bar removed first),
    and the log file when there is one."""

    def report(msg):
        log.close()
        print(msg, flush=True)
        if log_path:
            log.write(msg)

    return report


def cmd_fit(args) -> int:
    from .methods import get_method
    from .runner import fit_cell_to_file
    from .sweeps.sweep import Cell

    if not 0 <= args.seed < 2**32:
        raise ValueError(f"--seed must be a non-negative integer below 2^32, got {args.seed}")
    settings = _parse_settings_json(args.settings_json)
    settings.update(_parse_set(args.set or []))
    method = get_method(args.method)
    axes = []
    for axis in method.axes:
        value = getattr(args, axis, None)
        if value is None:
            value = settings.get(axis)
        if value is None:
            value = method.defaults()[axis]
        settings[axis] = value
        axes.append((axis, value))
    cell = Cell(
        args.experiment,
        args.dataset,
        args.split or _default_split(args.dataset),
        args.label or args.method,
        args.method,
        args.seed,
        tuple(axes),
        settings,
    )
    log = _logger(args.log)
    fit_cell_to_file(cell, args.output, args.data, log, report=_reporter(args.log, log))
    return 0


def _default_split(dataset: str) -> str:
    """``default``, or the first split of a registered dataset that has no split of that name."""
    from .datasets.registry import entry

    try:
        split_names = entry(dataset).split_names
    except ValueError:  # not registered: the fit names the problem
        return "default"
    return "default" if "default" in split_names or not split_names else split_names[0]


def cmd_prepare(args) -> int:
    from . import datasets

    if args.spec or args.spec_json is not None:
        from .datasets.user import register_user_datasets
        from .sweeps.config import ConfigError, validate_datasets

        where = f"dataset spec {args.spec!r}" if args.spec else "--spec-json"
        try:
            text = Path(args.spec).read_text() if args.spec else args.spec_json
            specs = validate_datasets(json.loads(text))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{where} is not readable JSON: {err}") from None
        except ConfigError as err:
            raise ValueError(f"{where}: {err}") from None
        register_user_datasets(specs)
    datasets.save_netcdf(datasets.load(args.dataset), args.output)
    return 0


def cmd_list(args) -> int:
    if args.what == "datasets":
        from . import datasets

        for name in datasets.names():
            meta = datasets.describe(name)
            splits = meta.get("split_names", [])
            print(
                f"{name}: {meta.get('task', '')}, {len(splits)} split(s); {meta.get('source', '')}"
            )
    else:
        from .methods import REGISTRY

        for name, method in sorted(REGISTRY.items()):
            print(f"{name}: {method.description}")
            print(f"  axes: {', '.join(method.axes)}")
            for key, value in method.defaults().items():
                print(f"  {key}: {json.dumps(value)}")
    return 0


def cmd_merge(args) -> int:
    from .results import merge_cells, write_netcdf_atomic
    from .sweeps.result_check import spec_expectations
    from .sweeps.sweep import read_batch_spec

    paths = list(args.inputs)
    if args.list_file:
        paths += [p for p in Path(args.list_file).read_text().split() if p]
    expected = {}
    if args.spec:
        # the config's cells (the workflow's spec of the experiment): each file must hold its
        # cell, on its data, by its code (result_check.judge_cell), or nothing is merged
        _, check_code, entries = read_batch_spec(_read_spec(args.spec), args.spec)
        expected = spec_expectations(entries, check_code)
    merged = write_netcdf_atomic(merge_cells(paths, args.quarantine_corrupt, expected), args.output)
    # the figures, from the merged file as written, in this same process (the workflow's
    # one job per experiment)
    return _draw_figures(merged, args.draw) if args.draw else 0


def cmd_figure(args) -> int:
    from .figures import draw

    draw(args.kind, args.merged, args.output)
    return 0


def cmd_figures(args) -> int:
    return _draw_figures(args.merged, args.draw)


def _draw_figures(merged_path, draws) -> int:
    """Every ``(kind, file)`` of ``draws`` from one read of the merged file, in one process;
    a figure that fails is reported and the others are still drawn (exit 1 if any failed)."""
    from .figures import FIGURES, draw, load_merged

    unknown = sorted({kind for kind, _ in draws} - set(FIGURES))
    if unknown:
        raise ValueError(
            f"unknown figure kind(s) {', '.join(unknown)}; valid: {', '.join(FIGURES)}"
        )
    merged = load_merged(merged_path)
    failed = []
    for kind, output in draws:
        try:
            for path in draw(kind, merged, output):
                print(f"{kind}: wrote {path}", flush=True)
        except Exception as err:  # noqa: BLE001 - reported, the other figures are still drawn
            print(f"{kind}: failed: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            failed.append(kind)
    if failed:
        print(f"bnnsweep: error: figures failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _read_spec(path: str):
    """The JSON of a batch spec file (``sweep.batch_spec``), checked against its name."""
    from .sweeps.sweep import check_spec_name

    try:
        text = Path(path).read_text(encoding="utf-8")
        check_spec_name(path, text)
        return json.loads(text)
    except FileNotFoundError:
        raise FileNotFoundError(f"batch spec {path!r} does not exist") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"batch spec {path!r} is not UTF-8 text: {err}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"batch spec {path!r} is not valid JSON: {err}") from None


def cmd_fit_batch(args) -> int:
    from .runner import fit_batch

    spec = _read_spec(args.spec)
    log = _logger(args.log)
    counts = fit_batch(spec, log, report=_reporter(args.log, log), name=args.spec)
    log(f"batch done: {counts['fitted']} fitted, {counts['skipped']} kept")
    if args.usage:
        _write_usage(args.usage)
    return 0


def _write_usage(path: str) -> None:
    """This process's wall time (from its start), CPU time and peak memory, as one row under
    the column names of Snakemake's ``benchmark:`` record (``s``, ``h:m:s``, ``max_rss`` in
    MB, ``cpu_time`` in s); exact, from getrusage and the kernel's high-water mark, where
    Snakemake's samples the job."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.time() - _process_start()
    hms = time.strftime("%H:%M:%S", time.gmtime(wall))
    rss_mb = _peak_rss_mb(usage)
    row = [f"{wall:.4f}", hms, f"{rss_mb:.2f}", f"{usage.ru_utime + usage.ru_stime:.2f}"]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("s\th:m:s\tmax_rss\tcpu_time\n" + "\t".join(row) + "\n")


def _peak_rss_mb(usage) -> float:
    """Peak resident memory of this process's own program in MB: ``VmHWM`` of
    /proc/self/status where there is one. ``ru_maxrss`` survives exec, so a job started by
    a large parent (Snakemake, a test session) would report the parent's size instead."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return usage.ru_maxrss / 1024  # kB on Linux


def _process_start() -> float:
    """When this process started (seconds since the epoch): /proc where there is one, else
    when this module was imported."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED


def _config_cells(path):
    from .sweeps.config import expand, load

    config = load(path)
    return config, expand(config)


def cmd_validate(args) -> int:
    from collections import Counter

    config, cells = _config_cells(args.config)
    print(f"{args.config}: valid, {len(cells)} cell(s)")
    counts = Counter((c.experiment, c.method) for c in cells)
    for (experiment, label), n in sorted(counts.items()):
        print(f"  {experiment} / {label}: {n} cell(s)")
    print(f"`bnnsweep plan {args.config}` shows how they batch and what they cost")
    return 0


def cmd_plan(args) -> int:
    from .sweeps.jobsize import plan_table

    config, cells = _config_cells(args.config)
    results_dir = args.results or config["results_dir"]
    print(plan_table(config, cells, results_dir))
    return 0


def _result_files(results_dir: Path) -> list[Path]:
    """The files of a results directory under the workflow's own names: cells
    (``<experiment>/cells/**/*.nc``) and merged files (``<experiment>/merged.nc``), not the
    temporary files of unfinished writes (which start with a dot). Anything else there (a
    user's own NetCDF exports, inputs) is not the workflow's, and never checked or moved."""
    found = [*results_dir.glob("*/cells/**/*.nc"), *results_dir.glob("*/merged.nc")]
    return sorted(p for p in found if not p.name.startswith(".") and p.is_file())


def cmd_check(args) -> int:
    from .sweeps.result_check import CheckReport, check_cells, check_files, check_merged, fix
    from .sweeps.sweep import cell_index

    config_path = args.config
    if config_path is None and Path("config/config.yaml").is_file():
        config_path = "config/config.yaml"
    report, expected = CheckReport(), set()
    if config_path is not None:
        config, cells = _config_cells(config_path)
        results_dir = Path(args.results_dir or config["results_dir"])
        index = {str(results_dir / f"{key}.nc"): c for key, c in cell_index(cells).items()}
        report = check_cells(index, results_dir, check_code=config["code_reruns"])
        # each experiment's merged file, against the cell files it is merged from
        merged = {
            str(results_dir / e / "merged.nc"): [p for p, c in index.items() if c.experiment == e]
            for e in config["experiments"]
        }
        report.extend(check_merged(merged))
        expected = set(index) | set(merged)
        print(f"cells of {config_path} under {results_dir}:")
    elif args.results_dir is None:
        raise ValueError("give a results directory, or --config (no config/config.yaml here)")
    else:
        results_dir = Path(args.results_dir)
        print(f"{results_dir}: no config given, so only corrupt files are found")
    if not results_dir.is_dir() and config_path is None:
        raise ValueError(f"results directory {results_dir} does not exist")
    found = _result_files(results_dir) if results_dir.is_dir() else []
    extra = check_files([p for p in found if str(p) not in expected])
    report.corrupt.update(extra.corrupt)
    report.current += extra.current
    for line in report.lines():
        print(line)
    if args.fix:
        fix(report, print)
    if not report.ok:
        print(
            "the same snakemake command refits (merges) them (`bnnsweep check --fix` moves the corrupt "
            "ones aside for inspection first)"
        )
    return 0 if report.ok else 1


def cmd_claims(args) -> int:
    from .claims.table import claims_frame, to_markdown, write_claims

    frame = claims_frame(args.results, args.configs, args.experiment)
    for path in write_claims(frame, args.output) if args.output else ():
        print(f"claims: wrote {path}", file=sys.stderr)
    print(to_markdown(frame), end="")
    return 0


# Snakemake's options that take the values `bnnsweep run` checks: config files, --config
# key=value pairs, and the working directory a default config file is found in.
_CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")
_CONFIG_OPTIONS = ("--config", "-C")
_DIRECTORY_OPTIONS = ("--directory", "-d")


def _snakemake_values(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """The values Snakemake's command line ``argv`` gives the options ``names`` (each
    takes one or more values, up to the next option; ``--name=value`` too)."""
    values, taking = [], False
    for arg in argv:
        if taking and not arg.startswith("-"):
            values.append(arg)
            continue
        taking = arg in names
        for name in names:
            if arg.startswith(f"{name}="):
                values.append(arg.split("=", 1)[1])
    return values


def cmd_run(args) -> int:
    """Check the config files a Snakemake command line names, then run that command.

    Snakemake reads and merges ``--configfile`` files before the Snakefile runs, so a
    YAML alias bomb or 100 KB of nested brackets exhausts the node before the workflow can
    refuse it. ``bnnsweep run ARGS`` reads each file as ``bnnsweep validate`` does (size,
    nesting, aliases expanded, keys given twice: ``config.read_yaml``), refuses two files
    naming one experiment (Snakemake would merge them key by key) and each ``--config``
    value likewise, and then replaces itself with ``python -m snakemake ARGS``."""
    from .sweeps.config import ConfigError, bounded_yaml, check_config_files

    argv = list(args.snakemake_args)
    files = _snakemake_values(argv, _CONFIGFILE_OPTIONS)
    if not files:  # the Snakefile's default, relative to the working directory
        directory = (_snakemake_values(argv, _DIRECTORY_OPTIONS) or ["."])[-1]
        default = Path(directory) / "config" / "config.yaml"
        files = [str(default)] if default.is_file() else []
    check_config_files(files)
    for item in _snakemake_values(argv, _CONFIG_OPTIONS):
        key, _, value = item.partition("=")
        try:
            bounded_yaml(value, f"--config {key}")
        except ConfigError as err:
            raise ValueError(str(err)) from None
    command = [sys.executable, "-m", "snakemake", *argv]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execv(sys.executable, command)
    return 0  # not reached


def build_parser() -> argparse.ArgumentParser:
    from .sweeps.axes import AXES

    parser = argparse.ArgumentParser(prog="bnnsweep", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser("fit", help="fit one cell and write its NetCDF file")
    fit.add_argument(
        "--dataset", required=True, help="a registered dataset (bnnsweep list datasets)"
    )
    fit.add_argument("--method", required=True, help="a registered method (bnnsweep list methods)")
    for axis in AXES.values():
        fit.add_argument(f"--{axis.name}", type=axis.type, help=f"sweep axis: {axis.valid}")
    fit.add_argument("--seed", type=int, default=0, help="random seed of the fit (default 0)")
    fit.add_argument(
        "--split",
        help="the dataset's split to fit (default: 'default', or the first split of a dataset "
        "that has none of that name)",
    )
    fit.add_argument("--set", action="append", metavar="KEY=VALUE", help="a method setting")
    fit.add_argument("--settings-json", help="method settings as one JSON object")
    fit.add_argument("--experiment", default="adhoc", help="experiment name recorded in the file")
    fit.add_argument("--label", help="method label recorded in the file (default: the method)")
    fit.add_argument("--data", help="prepared dataset file (default: load from the registry)")
    fit.add_argument(
        "--log", help="append progress to this file (the summary line still goes to stdout)"
    )
    fit.add_argument("--output", required=True, help="the cell file (NetCDF) to write")
    fit.set_defaults(func=cmd_fit)

    prep = sub.add_parser("prepare", help="materialise a dataset (splits included) as NetCDF")
    prep.add_argument("--dataset", required=True, help="a registered dataset")
    prep.add_argument("--output", required=True, help="the prepared dataset file (NetCDF)")
    prep.add_argument(
        "--spec", help="JSON file of the config's `datasets:` entries (a dataset of your own)"
    )
    prep.add_argument(
        "--spec-json", help="the config's `datasets:` entries as one JSON object (the workflow's)"
    )
    prep.set_defaults(func=cmd_prepare)

    lst = sub.add_parser("list", help="registered datasets or methods with their settings")
    lst.add_argument("what", choices=["datasets", "methods"])
    lst.set_defaults(func=cmd_list)

    merge = sub.add_parser("merge", help="merge cell files along a run dimension")
    merge.add_argument("inputs", nargs="*", help="cell files to merge")
    merge.add_argument("--list-file", help="file listing cell files, whitespace separated")
    merge.add_argument(
        "--spec",
        help="a batch spec of the cells to merge (the workflow's): each file must be the "
        "current file of its cell, or nothing is merged",
    )
    merge.add_argument("--output", required=True, help="the merged file (NetCDF)")
    merge.add_argument(
        "--quarantine-corrupt",
        action="store_true",
        help="move corrupt cells aside to <cell>.corrupt, so the workflow refits them",
    )
    merge.add_argument(
        "--draw",
        nargs=2,
        action="append",
        metavar=("KIND", "OUTPUT"),
        help="then draw this figure or table from the merged file (repeat for each)",
    )
    merge.set_defaults(func=cmd_merge)

    fig = sub.add_parser("figure", help="draw a figure or table from a merged file")
    fig.add_argument("kind", help="figure or table name (bnnsweep.figures)")
    fig.add_argument("--merged", required=True, help="an experiment's merged file")
    fig.add_argument("--output", required=True, help="the figure (.png) or table (.md) to write")
    fig.set_defaults(func=cmd_figure)

    figs = sub.add_parser(
        "figures", help="draw several figures and tables of one merged file in one process"
    )
    figs.add_argument("--merged", required=True, help="an experiment's merged file")
    figs.add_argument(
        "--draw",
        nargs=2,
        action="append",
        required=True,
        metavar=("KIND", "OUTPUT"),
        help="a figure or table name and the file to write (repeat for each)",
    )
    figs.set_defaults(func=cmd_figures)

    val = sub.add_parser("validate", help="validate a config file and count its cells")
    val.add_argument("config", help="a workflow config file (YAML)")
    val.set_defaults(func=cmd_validate)

    batch = sub.add_parser(
        "fit-batch", help="fit the cells of a batch spec in one process, one file per cell"
    )
    batch.add_argument("spec", help="batch spec (JSON) written by the workflow")
    batch.add_argument("--log", help="append progress to this file instead of stdout")
    batch.add_argument(
        "--usage", help="write the job's wall time, CPU time and peak memory here (TSV)"
    )
    batch.set_defaults(func=cmd_fit_batch)

    plan = sub.add_parser(
        "plan", help="cells, batches, estimated core-hours and memory of a config, per method"
    )
    plan.add_argument("config", help="a workflow config file (YAML)")
    plan.add_argument(
        "--results",
        help="results directory whose cells calibrate the estimate (default: the config's)",
    )
    plan.set_defaults(func=cmd_plan)

    check = sub.add_parser(
        "check",
        help="list missing, corrupt and stale cell files of a config (exit 1 if any)",
    )
    check.add_argument(
        "results_dir", nargs="?", help="results directory (default: the config's results_dir)"
    )
    check.add_argument(
        "--config", help="workflow config whose cells are expected (default: config/config.yaml)"
    )
    check.add_argument(
        "--fix",
        action="store_true",
        help="move corrupt cell and merged files (the workflow's own names only) aside to "
        "<file>.corrupt for inspection; the snakemake command refits every cell that is not "
        "current, with or without it",
    )
    check.set_defaults(func=cmd_check)

    claims = sub.add_parser(
        "claims", help="every published number the project reproduces beside ours, with a verdict"
    )
    claims.add_argument("--results", default="results", help="results directory (default results)")
    claims.add_argument("--configs", default="config", help="folder of the shipped configs")
    claims.add_argument(
        "--experiment", action="append", help="only the claims of this experiment (repeatable)"
    )
    claims.add_argument("--output", help="also write <OUTPUT>.md and <OUTPUT>.csv")
    claims.set_defaults(func=cmd_claims)

    run = sub.add_parser(
        "run",
        help="check the config files of a snakemake command line, then run it: "
        "bnnsweep run --cores 2 --configfile config/smoke.yaml",
        add_help=False,
    )
    run.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="snakemake's arguments")
    run.set_defaults(func=cmd_run)
    return parser


_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _refuse_dash_values(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A ValueError naming a value that starts with ``-`` but is no option of its command
    (a figure kind ``-:``, ``--output -x``): argparse would take it for an option and
    answer that an argument is required, naming no culprit. Negative numbers, values
    after ``--`` and ``--option=value`` pass."""
    command = next((a for a in argv if not a.startswith("-")), None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if command is None or sub is None or command not in sub.choices:
        return
    known = [s for action in sub.choices[command]._actions for s in action.option_strings]
    for arg in argv[argv.index(command) + 1 :]:
        if arg == "--":
            return
        if not arg.startswith("-") or _NUMBER.match(arg):
            continue
        name = arg.split("=", 1)[0]
        if name in known or (name.startswith("--") and any(k.startswith(name) for k in known)):
            continue
        raise ValueError(
            f"{arg!r} is not an option of `bnnsweep {command}`; a value that starts with '-' "
            f"goes after '--' (bnnsweep {command} ... -- {arg}) or as --option={arg}"
        )


def _user_errors() -> tuple[type, ...]:
    """Errors that mean bad input (one line, exit 2), imported only when one occurred."""
    from .cells.atomic_file import WriteError

    # ConfigError, DatasetError and SettingsError are ValueErrors; an OSError (a file that is
    # not NetCDF, truncated or unreadable) names its file in its message
    return (ValueError, OSError, WriteError)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["run"]:  # everything after it is Snakemake's, options included
            args = argparse.Namespace(func=cmd_run, snakemake_args=argv[1:])
        else:
            parser = build_parser()
            _refuse_dash_values(parser, argv)
            args = parser.parse_args(argv)
        return args.func(args)
    except BrokenPipeError:
        # the reader went away (`bnnsweep list datasets | head`): stop quietly, as other
        # command-line tools do, and send nothing more to the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE
    except Exception as err:
        if not isinstance(err, _user_errors()):
            raise
        # one line, whatever the message (a library's may span several)
        message = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
        print(f"bnnsweep: error: {message}", file=sys.stderr)
        return 2


def run() -> None:
    """The ``bnnsweep`` command: ``main``, then an exit without the interpreter's teardown.

    Tearing down the modules a job loaded (JAX, matplotlib, pandas, xarray) costs 0.15-0.2 s
    of CPU a process, a tenth of a merge-and-draw job. Every file bnnsweep writes is closed
    (and fsynced) before ``main`` returns, so after it the exit handlers run (``atexit``:
    logging and the libraries' own) and the standard streams are flushed, and the process
    ends with ``os._exit``. An exception that is not a user error still ends with its
    traceback, the normal way."""
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream: nothing left to deliver
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


if __name__ == "__main__":
    run()
