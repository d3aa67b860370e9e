"""The sweep axes: method settings whose list values in a config expand into one cell per value.

Declared here once. The cell's file name and random stream (``sweep``), the merged file's
run coordinates (``results``), the config checks (``config``), the ``bnnsweep fit`` options
(``cli``), the plan's calibration (``jobsize``) and the figures read them from here; the
config schema (``schemas/config.schema.yaml``, ``method_entry``) spells them for JSON Schema,
and a test checks it against them. A leaf module: nothing of bnnsweep is imported.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Axis:
    """One sweep axis: the type of a value (``int`` or ``str``), the least value of an integer
    axis, the pattern of a string one, the prefix of its value in a cell's file name (``h8``),
    the value a run records when its method does not use the axis, and a valid value in
    words (for error messages)."""

    name: str
    type: type
    prefix: str
    not_applicable: int | str
    valid: str
    minimum: int | None = None
    pattern: str | None = None


AXES: dict[str, Axis] = {
    axis.name: axis
    for axis in (
        Axis("hidden", int, "h", -1, "a non-negative integer", minimum=0),
        Axis("components", int, "m", -1, "a positive integer", minimum=1),
        Axis(
            "schedule",
            str,
            "sched",
            "none",
            "a schedule name (lower-case letters, digits and _)",
            pattern="^[a-z0-9_]+$",
        ),
        # thesis chs. 2-4: the family of the variational distribution Q (mean_field,
        # mixture, chain) and where a Boltzmann machine's free phase starts
        Axis(
            "q_family",
            str,
            "q",
            "none",
            "a distribution family name (lower-case letters, digits and _)",
            pattern="^[a-z0-9_]+$",
        ),
        Axis(
            "joint_init",
            str,
            "init",
            "none",
            "a start name (lower-case letters, digits and _)",
            pattern="^[a-z0-9_]+$",
        ),
        # thesis ch. 3: the soft-margin penalty C of the SVM M-steps
        Axis("penalty", int, "c", -1, "a positive integer", minimum=1),
        # thesis sec. 6.5: the number of fitted ICA sources
        Axis("sources", int, "src", -1, "a positive integer", minimum=1),
    )
}

NOT_APPLICABLE: dict[str, int | str] = {name: axis.not_applicable for name, axis in AXES.items()}
"""Every axis with the value a run records when its method does not use it."""
