"""Inference methods: one module each, each registering itself; one registry.

A module ``methods/<module>.py`` registers one or more methods at import, with
``register(Method(...))``: the method's settings class (defaults + validation), the sweep
axes it uses, ``fit(split, settings, rng, log) -> FitResult`` and its cost model for
``bnnsweep.sweeps.jobsize`` (``work``). Adding a method is adding such a module: nothing else
names it.

Modules are imported only when one of their methods is asked for. ``get_method(name)``
imports the one module that registers ``name``, found by reading (not importing) the
package's sources for ``Method("name", ...)`` records (``index``), so that fitting a numpy
method does not load JAX or the other methods. ``REGISTRY`` (every method) imports every
module on first use.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..method_base import FitResult, SettingsError, build_settings, suggest


@dataclass(frozen=True)
class Work:
    """Upper bounds on what a fit does, the cost model's answer: gradient calls, each over
    ``batch`` networks at once and ``points`` data points (None: every training point; 1
    for a per-point update such as ADF's), Hessians, and floats held at once (samples,
    Jacobians, predictions); ``call_s`` replaces ``jobsize.CALL_S`` as the fixed cost of one
    call where a method's call costs more than a compiled gradient (e.g. numpy Python
    per call). ``bnnsweep.sweeps.jobsize`` prices them in seconds and megabytes.

    ``typical`` is the share of the bound a fit typically uses, measured, for a method whose
    bound is far above its usual time (an optimiser that stops at its tolerance long before
    ``max_iter``): the plan and the packing of cells into jobs use it, and a job asks the
    cluster for three times it (a retried job for its bound). ``fixed_s`` is time a fit
    spends once whatever its size (compiling its programs), not scaled by ``typical``."""

    gradient_calls: float
    batch: int = 1
    hessians: float = 0.0
    floats_held: float = 0.0
    points: float | None = None
    call_s: float | None = None
    typical: float = 1.0
    fixed_s: float = 0.0


def no_work_model(settings, n_train: int, n_test: int, n_out: int, n_weights: int) -> None:
    """The cost model of a method whose work has no bound yet: ``bnnsweep.sweeps.jobsize`` gives
    each of its cells a job of its own with ``jobsize.DEFAULT`` resources (an hour, 2 GB),
    and ``bnnsweep plan`` prices them by the cells measured so far."""
    return None


@dataclass(frozen=True)
class Method:
    """A registered inference method.

    ``work(settings, n_train, n_test, n_out, n_weights) -> Work | None`` is its cost model:
    the work a fit with resolved ``settings`` does at most on data of that size, for a
    network of ``n_weights`` weights (``no_work_model`` when there is no bound).
    """

    name: str
    settings_class: type
    fit: Callable
    axes: tuple[str, ...]
    description: str
    # fit_many(splits, settings, rngs, log) -> list[FitResult]: several cells as one batch
    fit_many: Callable | None = None
    # tasks(settings) -> dataset tasks the method can fit (default: regression only)
    tasks: Callable | None = None
    # the data models it fits (dataset metadata ``model``, where a task is shared by the data
    # of several models, e.g. binary_density by sigmoid belief nets and Boltzmann machines);
    # empty: any
    models: tuple[str, ...] = ()
    work: Callable[..., Work | None] = dataclasses.field(kw_only=True)
    # the libraries its fit imports (the module imports them only where it uses them, so
    # that checking settings does not): ``runner`` loads them before it starts a fit's clock,
    # so that ``runtime_s`` times the fit, not the process's first import of scipy or JAX
    imports: tuple[str, ...] = dataclasses.field(default=(), kw_only=True)

    def accepted_tasks(self, settings) -> tuple[str, ...]:
        return tuple(self.tasks(settings)) if self.tasks else ("regression",)

    def settings(self, values: dict):
        return build_settings(self.settings_class, values, where=f"method {self.name!r}")

    def defaults(self) -> dict:
        return dataclasses.asdict(self.settings_class())


SCIPY = ("scipy.special", "scipy.optimize", "scipy.linalg")
"""``Method.imports`` of the numpy methods that optimise with scipy."""
JAX = ("jax",)
"""``Method.imports`` of the methods with a compiled core (JAX imports parts of scipy)."""

_REGISTERED: dict[str, Method] = {}

# A method record in a module's source: ``Method("name", ...)`` or ``Method(name="name", ...)``.
_RECORD = re.compile(r"\bMethod\(\s*(?:name\s*=\s*)?[\"'](\w+)[\"']")


@cache
def index() -> dict[str, str]:
    """Registered method names -> the module of this package that registers each, read from
    the modules' sources without importing them."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg or info.name.startswith("_"):
            continue
        source = (Path(info.module_finder.path) / f"{info.name}.py").read_text()
        for name in _RECORD.findall(source):
            if found.setdefault(name, info.name) != info.name:
                raise RuntimeError(
                    f"method {name!r} is registered by two modules: {found[name]} and {info.name}"
                )
    return found


def names() -> list[str]:
    """Every registered method's name, sorted (no module is imported)."""
    return sorted(index())


def register(method: Method) -> None:
    """Add ``method`` to the registry; called by its module at import."""
    if not callable(method.work):
        raise TypeError(f"method {method.name!r} declares no cost model (Method.work)")
    _REGISTERED[method.name] = method


def module_of(name: str) -> str:
    """The module that registers method ``name`` (``bnnsweep.methods.<module>``), not
    imported; a SettingsError naming the valid methods if there is none."""
    module = index().get(name)
    if module is None:
        raise SettingsError(
            f"unknown method {name!r}{suggest(name, index())}; valid methods: {', '.join(names())}"
        )
    return f"{__name__}.{module}"


def get_method(name: str) -> Method:
    """The registered method ``name``, importing only the module that registers it."""
    if name not in _REGISTERED:
        module = module_of(name)
        importlib.import_module(module)
        if name not in _REGISTERED:
            raise RuntimeError(f"module {module} names method {name!r} but does not register it")
    return _REGISTERED[name]


def __getattr__(attribute: str):
    """``REGISTRY``: every method by name, every method module imported."""
    if attribute == "REGISTRY":
        for name in names():
            get_method(name)
        return _REGISTERED
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


__all__ = [
    "REGISTRY",
    "FitResult",
    "Method",
    "SettingsError",
    "Work",
    "get_method",
    "index",
    "module_of",
    "names",
    "no_work_model",
    "register",
]
