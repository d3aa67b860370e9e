"""The E-step of LTU learning: per-pattern hidden states by annealed coordinate updates (thesis
§3.3-3.4, §3.7 'Simulated annealing').

With every other unit fixed, the exact conditional of hidden unit j of the ±1 sigmoid belief
network at temperature T (``models.threshold_network``) has log-odds L_j with

    T L_j = a_j + sum_o T [ln sigma(t_o (c_o + v_oj) / T) - ln sigma(t_o (c_o - v_oj) / T)],

c_o = b_o - v_oj h_j being the output's input without unit j: the parent term gives a_j
(E_j(1) - E_j(-1) = a_j / T, eq. 3.3) and each child contributes the exact term
ln(1 + e^{(c + v s_j)/T}) of its normaliser. As T -> 0, T ln sigma(z / T) -> -max(0, -z), so

    T L_j -> a_j - sum_o [max(0, -t_o (c_o + v_oj)) - max(0, -t_o (c_o - v_oj))],

and the zero-temperature update h_j = sign(T L_j) maximises the energy F(h) of
``threshold_network.zero_temperature_energy`` over h_j with the others fixed. This replaces
the printed eqs. 3.18-3.24 (garbled: indices swapped, a dropped s_j-dependent constant); it
is checked against enumeration of the exact posterior in tests/test_ltu.py.

During annealing (T > 0) the other hidden units enter c through their current expectations
(mean field: <h_j> = tanh(L_j / 2) with c from the <h_k>), as in eq. 3.23; at T = 0 they are
±1 and the update is exact coordinate ascent of F. Units are visited in a fresh random order
each pass; all patterns are updated at once (the patterns are independent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.threshold_network import (
    ThresholdNetwork,
    hard_sign,
    hidden_input,
    log_sigmoid,
    output_input,
)


def annealing_temperatures(start: float = 1000.0, rate: float = 0.8, stop: float = 1e-3):
    """T_k = start * rate^(k-1) for k = 1, 2, ... while T_k >= stop (thesis §3.8: 62
    temperatures from 1000 down to 1.2e-3 with rate 0.8); empty when ``start`` < ``stop``."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"annealing rate must lie in (0, 1), got {rate}")
    temps = []
    temp = start
    while temp >= stop:
        temps.append(temp)
        temp *= rate
    return np.array(temps)


def scaled_log_odds(
    a_j: np.ndarray, c: np.ndarray, v_j: np.ndarray, t: np.ndarray, temperature: float
) -> np.ndarray:
    """T L_j for every pattern (module docstring): ``a_j`` (N,), ``c`` (N, O) the outputs'
    inputs without unit j, ``v_j`` (O,) unit j's outgoing weights, ``t`` (N, O) ±1 targets.
    ``temperature`` 0 gives the T -> 0 limit."""
    up, down = t * (c + v_j), t * (c - v_j)
    if temperature == 0.0:
        child = np.maximum(0.0, -down) - np.maximum(0.0, -up)
    else:
        child = temperature * (log_sigmoid(up / temperature) - log_sigmoid(down / temperature))
    return a_j + np.sum(child, axis=-1)


def printed_log_odds(a_j, c, v_j, t, temperature):
    """The thesis's printed T = 0 update (eqs. 3.23-3.24) read literally, for comparison:
    a_j + sum_o (v_oj / 2)(t_o - phi_oj), phi = [sign(c + v) - sign(c - v)] / 2. Unlike the
    exact limit it pulls unit j towards t_o sign(v_oj) by |v_oj| / 2 even where the output is
    already right and j cannot change it. At T > 0 it is :func:`scaled_log_odds`."""
    if temperature != 0.0:
        return scaled_log_odds(a_j, c, v_j, t, temperature)
    phi = 0.5 * (np.sign(c + v_j) - np.sign(c - v_j))
    return a_j + np.sum(0.5 * v_j * (t - phi), axis=-1)


UPDATE_RULES = {"exact": scaled_log_odds, "printed": printed_log_odds}


@dataclass(frozen=True)
class EStepResult:
    """Hidden states (N, H) ±1; ``zero_passes`` used at T = 0; ``settled`` whether the last
    of them changed no unit."""

    hidden: np.ndarray
    zero_passes: int
    settled: bool


def _sweep(net, a, m, t, temperature, order, log_odds=scaled_log_odds) -> int:
    """One pass of coordinate updates over the units in ``order``, in place on ``m``;
    returns how many (pattern, unit) states changed sign."""
    changed = 0
    b = output_input(net, m)
    for j in order:
        v_j = net.w_out[:, j]
        c = b - m[:, j, None] * v_j
        tl = log_odds(a[:, j], c, v_j, t, temperature)
        if temperature == 0.0:
            new = np.where(tl > 0, 1.0, np.where(tl < 0, -1.0, m[:, j]))
        else:
            new = np.tanh(tl / (2.0 * temperature))
        changed += int(np.sum(np.sign(new) != np.sign(m[:, j])))
        b = c + new[:, None] * v_j
        m[:, j] = new
    return changed


def infer_hidden(
    net: ThresholdNetwork,
    x: np.ndarray,
    t: np.ndarray,
    start: np.ndarray,
    rng: np.random.Generator,
    temperatures: np.ndarray,
    zero_passes: int = 70,
    rule: str = "exact",
) -> EStepResult:
    """Hidden states for every pattern: one pass per temperature of ``temperatures`` (may be
    empty) from ``start`` (N, H) (the forward pass, §3.7), then at most ``zero_passes``
    passes at T = 0, stopping after a pass that changes nothing. ``rule``: ``exact`` (the
    T -> 0 limit, module docstring) or ``printed`` (:func:`printed_log_odds`)."""
    log_odds = UPDATE_RULES[rule]
    a = hidden_input(net, x)
    m = np.array(start, dtype=float)
    n_hidden = net.n_hidden
    for temp in temperatures:
        _sweep(net, a, m, t, float(temp), rng.permutation(n_hidden), log_odds)
    m = hard_sign(m)
    passes, settled = 0, False
    while passes < zero_passes:
        passes += 1
        if _sweep(net, a, m, t, 0.0, rng.permutation(n_hidden), log_odds) == 0:
            settled = True
            break
    return EStepResult(m, passes, settled)
