"""Every `bnnsweep` subcommand, driven by hypothesis with random and mutated input (mutated
real configs, cells, merged and prepared files, batch specs, CSV files, option values): it
either succeeds or exits non-zero with one line that names the file, key or value at fault;
never a traceback, and never a file created, changed or left behind outside its output
(issue 14). Each command runs in-process (``cli.main``) in a sandbox directory of its own,
for ``FUZZ_EXAMPLES`` examples (default 500), derandomised: every run of the test command
draws the same examples, so it passes or fails the same way on every clone. The examples
that once found bugs are kept as explicit ``@example`` cases. ``scripts/fuzz.sh`` runs the
same tests with fresh random examples, many more of them, and reports what it finds
(``BNNSWEEP_FUZZ_RANDOM=1``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bnnsweep.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "500"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not os.environ.get("BNNSWEEP_FUZZ_RANDOM"),
    # `sandbox` is a factory: each example makes (and so cleans up after) its own directory
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
CONFIGS = sorted(ROOT.glob("config/*.yaml"))
MAP_SETTINGS = {"hidden": 2, "restarts": 1, "max_iter": 5}


# --- inputs: real files, made once ----------------------------------------------------------


@functools.cache
def real_files() -> dict[str, bytes]:
    """Real files of every kind a command reads: cells of map and laplace, their merged
    file, a prepared dataset, a batch spec, the user-dataset CSV and its spec. (Not a
    fixture: hypothesis would print these bytes with every failing example.)"""
    from bnnsweep.results import merge_cells, write_netcdf_atomic
    from bnnsweep.runner import fit_cell, write_result
    from bnnsweep.sweeps.sweep import Cell, batch_spec

    base = Path(tempfile.mkdtemp(prefix="fuzz-pool-"))
    quiet = {"log": lambda m: None}
    cells = []
    for method, settings_ in (("map", MAP_SETTINGS), ("laplace", {**MAP_SETTINGS, "cycles": 1})):
        cell = Cell("e", "toy_sine", "default", method, method, 0, (("hidden", 2),), settings_)
        cells.append(write_result(fit_cell(cell, **quiet), base / f"{method}.nc"))
    merged = write_netcdf_atomic(merge_cells(cells), base / "merged.nc")
    assert main(["prepare", "--dataset", "toy_sine", "--output", str(base / "data.nc")]) == 0
    cell = Cell("e", "toy_sine", "default", "map", "map", 0, (("hidden", 2),), MAP_SETTINGS)
    spec = batch_spec([cell], False, "results", True)
    user = {
        "mine": {
            "file": "mine.csv",
            "targets": ["residuary_resistance"],
            "task": "regression",
            "splits": {"holdout": 0.2, "repeats": 2, "seed": 0},
        }
    }
    csv = (ROOT / "config" / "data" / "yacht.csv").read_text().splitlines()[:40]
    out = {
        "map.nc": cells[0].read_bytes(),
        "laplace.nc": cells[1].read_bytes(),
        "merged.nc": merged.read_bytes(),
        "data.nc": (base / "data.nc").read_bytes(),
        "spec.json": json.dumps(spec).encode(),
        "mine.csv": ("\n".join(csv) + "\n").encode(),
        "user.json": json.dumps(user).encode(),
    }
    shutil.rmtree(base)
    return out


# --- mutations --------------------------------------------------------------------------------

YAML_TOKENS = [b"&a ", b"*a", b"<<: *a", b"!!python/object:os.system", b"- ", b": ", b"\t"]
YAML_TOKENS += [b"{", b"}", b"[", b"]", b"'", b'"', b"\xff\xfe", b"1e999", b".nan", b"-1"]
YAML_TOKENS += [b"\n", b"#", b"null", b"~", b"hidden", b"experiments", b"0x10", b"99999"]


@st.composite
def mutated(draw, data: bytes, tokens=YAML_TOKENS) -> bytes:
    """``data`` with a few random edits: bit flips, truncation, a range deleted or doubled,
    random bytes or a token inserted."""
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "cut", "delete", "double", "insert", "token"]))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del data[at:]
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "double":
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            data[at:at] = draw(st.sampled_from(tokens))
    return bytes(data)


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
NAMES = st.one_of(TEXT, st.sampled_from(["toy_sine", "map", "laplace", "exact", "../x", "a b"]))


# --- running a command in a sandbox -------------------------------------------------------


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class Sandbox:
    """A fresh directory, the working directory while a command runs."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="fuzz-"))

    def write(self, name: str, data: bytes) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return name

    def run(self, argv: list[str], outputs: set[str], report_code=None) -> tuple[int, str]:
        """Run ``bnnsweep argv``; assert the outcome and that only ``outputs`` (relative
        paths, or anything under a listed directory) were created or changed.
        ``report_code`` is an exit code that reports a finding, not an error (`check`
        exits 1 when it lists problems)."""
        from bnnsweep.datasets.registry import _REGISTRY

        before, registry = snapshot(self.root), dict(_REGISTRY)
        err, cwd = io.StringIO(), os.getcwd()
        os.chdir(self.root)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as exit_:  # argparse: usage and one error line, exit 2
                    code = exit_.code
        finally:
            os.chdir(cwd)
            _REGISTRY.clear()
            _REGISTRY.update(registry)
        message = err.getvalue()
        assert "Traceback" not in message, message
        if code == 0 or code == report_code:
            assert message == "", message
        else:
            lines = [line for line in message.splitlines() if line.strip()]
            errors = [line for line in lines if re.match(r"(usage: )?bnnsweep[\w -]*: error", line)]
            assert len(errors) == 1 and lines[-1] == errors[0], message
            assert len(errors[0]) > len("bnnsweep: error: ") + 5, message
        after = snapshot(self.root)
        changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
        allowed = {p for p in changed if any(p == o or p.startswith(o + "/") for o in outputs)}
        assert changed == allowed, (argv, changed - allowed, message)
        return code, message

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def sandbox():
    boxes = []

    def make():
        while boxes:  # the previous example's
            boxes.pop().close()
        boxes.append(Sandbox())
        return boxes[-1]

    yield make
    for box in boxes:
        box.close()


def names_culprit(message: str, culprits: list[str]) -> bool:
    return any(c in message for c in culprits if c)


# --- the commands -------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "plan", "check"])
@FUZZ
@given(data=st.data())
def test_validate_plan_and_check_on_mutated_configs(sandbox, command, data):
    """The config loader under `validate`, `plan` and `check`: mutated shipped configs."""
    # `plan` of the UCI configs reads every split of a dozen datasets (30-50 s the first
    # time): it plans the others
    configs = [c for c in CONFIGS if command != "plan" or not c.name.startswith("uci_adf")]
    source = data.draw(st.sampled_from(configs))
    text = data.draw(mutated(source.read_bytes()))
    box = sandbox()
    name = box.write("c.yaml", text)
    argv = {
        "validate": ["validate", name],
        "plan": ["plan", name, "--results", "nowhere"],
        "check": ["check", "nowhere", "--config", name],
    }[command]
    code, message = box.run(argv, outputs=set(), report_code=1 if command == "check" else None)
    if code != 0 and not (command == "check" and code == 1):
        assert name in message or "config" in message or "--" in message, message


@FUZZ
@given(data=st.data())
def test_merge_on_mutated_cells(sandbox, data):
    pool = real_files()
    box = sandbox()
    names = data.draw(
        st.lists(
            st.sampled_from(["map.nc", "laplace.nc", "merged.nc", "data.nc"]),
            min_size=1,
            max_size=3,
        )
    )
    given_ = []
    for i, name in enumerate(names):
        given_.append(box.write(f"in{i}_{name}", data.draw(mutated(pool[name], tokens=[b"\0"]))))
    if data.draw(st.booleans()):
        given_.append("absent.nc")
    output = data.draw(st.sampled_from(["out.nc", "sub/out.nc", given_[0]]))
    code, message = box.run(["merge", *given_, "--output", output], outputs={output})
    if code != 0:
        assert names_culprit(message, [*given_, output]), message


@FUZZ
@given(data=st.data())
def test_figure_on_mutated_merged_files(sandbox, data):
    pool = real_files()
    box = sandbox()
    source = data.draw(st.sampled_from(["merged.nc", "map.nc"]))
    merged = box.write("m.nc", data.draw(mutated(pool[source], tokens=[b"\0"])))
    kind = data.draw(st.one_of(st.sampled_from(["error_table", "toy_regression"]), NAMES))
    suffix = data.draw(st.sampled_from([".md", ".png", "", ".txt", ".csv"]))
    output = f"out/fig{suffix}"
    code, message = box.run(
        ["figure", kind, "--merged", merged, "--output", output], outputs={"out"}
    )
    if code != 0:
        assert names_culprit(message, [merged, repr(kind), suffix, output]), message


@FUZZ
@given(data=st.data())
def test_fit_with_random_options_and_mutated_data(sandbox, data):
    pool = real_files()
    box = sandbox()
    method = data.draw(st.one_of(st.sampled_from(["map", "exact", "laplace"]), NAMES))
    argv = ["fit", "--dataset", data.draw(NAMES), "--method", method, "--output", "o.nc"]
    if data.draw(st.booleans()):
        argv += ["--data", box.write("d.nc", data.draw(mutated(pool["data.nc"], [b"\0"])))]
    if data.draw(st.booleans()):
        # small (a fit in milliseconds) or far too large (refused before fitting)
        hidden = st.one_of(st.integers(-3, 8), st.sampled_from([10**6, 10**9, 2**63]))
        argv += ["--hidden", str(data.draw(hidden))]
    if data.draw(st.booleans()):
        argv += ["--seed", str(data.draw(st.integers(-(2**40), 2**40)))]
    if data.draw(st.booleans()):
        argv += ["--split", data.draw(NAMES)]
    keys = st.sampled_from(["tol", "init_scale", "weight_decay", "activation", "hidden", "x"])
    values = st.one_of(TEXT, st.sampled_from(["[1, 2]", "{a: 1}", ".inf", "-1", "1e400", ""]))
    for _ in range(data.draw(st.integers(0, 2))):
        argv += ["--set", f"{data.draw(keys)}={data.draw(values)}"]
    if data.draw(st.booleans()):
        argv += ["--settings-json", data.draw(st.one_of(TEXT, st.just('{"tol": 1}')))]
    # cheap fits whatever was drawn: these settings come last and win
    argv += ["--set", "max_iter=5", "--set", "restarts=1", "--set", "cycles=1"]
    code, message = box.run(argv, outputs={"o.nc"})
    if code != 0:
        assert len(message.strip()) > 20, message


@FUZZ
@given(data=st.data())
def test_prepare_with_random_names_and_mutated_user_data(sandbox, data):
    pool = real_files()
    box = sandbox()
    argv = ["prepare", "--output", "p.nc"]
    if data.draw(st.booleans()):
        box.write("mine.csv", data.draw(mutated(pool["mine.csv"], [b",", b"\n", b"nan", b'"'])))
        spec = box.write("user.json", data.draw(mutated(pool["user.json"], [b'"', b"{", b"0"])))
        argv += ["--spec", spec, "--dataset", data.draw(st.one_of(st.just("mine"), NAMES))]
    else:
        dataset = data.draw(st.one_of(st.sampled_from(["toy_sine", "toy_sine_gap"]), NAMES))
        argv += ["--dataset", dataset]
    code, message = box.run(argv, outputs={"p.nc"})
    if code != 0:
        assert len(message.strip()) > 20, message


@FUZZ
@given(data=st.data())
def test_fit_batch_on_mutated_specs(sandbox, data):
    pool = real_files()
    box = sandbox()
    box.write("results/data/toy_sine.nc", data.draw(mutated(pool["data.nc"], [b"\0"])))
    spec = box.write("spec.json", data.draw(mutated(pool["spec.json"], [b'"', b"{", b"-1"])))
    try:
        cells = json.loads((box.root / spec).read_text())["cells"]
        outputs = {e.get(k) for e in cells for k in ("output", "log")}
        outputs = {str(Path(o)) for o in outputs if isinstance(o, str)}
    except Exception:
        outputs = set()
    # a damaged prepared file is moved aside (the workflow then prepares it again)
    outputs |= {"b.log", "results/data"}
    code, message = box.run(["fit-batch", spec, "--log", "b.log"], outputs=outputs)
    if code != 0:
        assert names_culprit(message, [spec, "spec", "results/data"]) or len(message) > 30


@pytest.mark.parametrize("command", ["check", "list"])
@FUZZ
@given(data=st.data())
def test_check_and_list_on_mutated_results(sandbox, command, data):
    pool = real_files()
    box = sandbox()
    for i in range(data.draw(st.integers(0, 3))):
        name = data.draw(st.sampled_from(["map.nc", "laplace.nc", "merged.nc"]))
        box.write(f"r/e/cells/x{i}.nc", data.draw(mutated(pool[name], [b"\0"])))
    if command == "check":
        fix = data.draw(st.booleans())
        argv = ["check", data.draw(st.sampled_from(["r", "r/e", "none"]))] + (["--fix"] * fix)
        outputs = {"r"} if fix else set()  # --fix moves corrupt cells aside and logs it
    else:
        argv, outputs = ["list", data.draw(st.one_of(st.sampled_from(["methods"]), NAMES))], set()
    box.run(argv, outputs=outputs, report_code=1 if command == "check" else None)


# --- examples the fuzzing found, kept as explicit cases ------------------------------------


@pytest.mark.parametrize(
    "argv, culprit",
    [
        (["figure", "-:", "--merged", "m.nc", "--output", "o.md"], "'-:'"),
        (["figure", "error_table", "--merged", "m.nc", "--output", "-x"], "'-x'"),
        (["fit", "--dataset", "-toy", "--method", "map", "--output", "o.nc"], "'-toy'"),
        (["validate", "-c.yaml"], "'-c.yaml'"),
    ],
)
def test_values_that_start_with_a_dash_are_named(tmp_path, argv, culprit):
    """A value that starts with '-' (test_figure_on_mutated_merged_files drew the figure kind
    '-:') is named in one line, where argparse said only that an argument was required."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.chdir(tmp_path):
        code = main(argv)
    assert code == 2 and culprit in err.getvalue() and err.getvalue().count("\n") == 1
    assert list(tmp_path.iterdir()) == []
