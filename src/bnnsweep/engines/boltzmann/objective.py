"""The learning objective of a Boltzmann machine under two variational approximations
(thesis eqs. 1.40-1.42, 4.12-4.15, 4.25, 4.27).

F = L+ - L- (4.12) approximates ln P(V) (or ln P(O | I) in the supervised case): L+ is the
bound of the clamped phase on ln sum_H exp(-E(H, V)), L- that of the joint phase on ln Z.
It is NOT a bound: F - ln P(V) = KL(Q- || P(H, V)) - KL(Q+ || P(H | V)). The thesis prints
1.41-1.42 with the opposite sign (KL+ - KL-); since L+ = ln Z(V) - KL+ and L- = ln Z - KL-,
the sign here is the right one (checked by enumeration in the tests), and it agrees with the
thesis' own remark that F is maximised over Q+ and minimised over Q-. F can exceed 0, an
approximation to P(V) above one: the symptom of an inconsistent joint (fig. 4.1), flagged
by ``inconsistent_joint``.
"""

from __future__ import annotations

import numpy as np

from .phases import PhaseResult, phase_moments


def approximate_log_likelihood(plus: PhaseResult, minus: PhaseResult) -> np.ndarray:
    """Eq. 4.12 per pattern, (K, P): F_n = L+_n - L-_n (the joint's L- is shared by all
    patterns when it clamps nothing)."""
    return plus.bound - minus.bound


def inconsistent_joint(per_pattern_f: np.ndarray) -> np.ndarray:
    """True where F > 0 (fig. 4.1b): the joint approximation sits in a worse mode than the
    conditional, so F claims a probability above one."""
    return per_pattern_f > 0.0


def variational_gradient(plus: PhaseResult, minus: PhaseResult, mask: np.ndarray):
    """Eqs. 4.15 / 4.25 summed over patterns: dF/dw_ij = sum_n [<s_i s_j>+_n - <s_i s_j>-_n]
    with <s_i s_j> = sum_m Q(m) mu_mi mu_mj, and dF/db_i likewise with <s_i>. This is the
    explicit derivative of L+ - L- at fixed variational parameters, hence the total derivative
    at their optimum. Returns (weights (K, n, n) masked and symmetric, biases (K, n))."""
    p = plus.bound.shape[1]
    m_plus, c_plus = phase_moments(plus)
    m_minus, c_minus = phase_moments(minus)
    scale = p / minus.bound.shape[1]  # a shared joint counts once per pattern
    grad_w = c_plus.sum(1) - scale * c_minus.sum(1)
    grad_b = m_plus.sum(1) - scale * m_minus.sum(1)
    return np.where(mask, grad_w, 0.0), grad_b


def output_cross_entropy(output_means: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Galland's error, eq. 4.27 corrected (the printed form swaps v_i and <s_i>, taking logs
    of negative numbers): F_obs = -sum_{i in O} [(1 + v_i)/2 ln((1 + <s_i>-)/2)
    + (1 - v_i)/2 ln((1 - <s_i>-)/2)], i.e. -ln of the targets' probability under the
    factorised joint marginals. ``output_means`` (..., P, |O|), targets (P, |O|); summed over
    patterns, (...,)."""
    up = 0.5 * (1.0 + targets)
    with np.errstate(divide="ignore"):
        lp = np.log(0.5 * (1.0 + output_means))
        lm = np.log(0.5 * (1.0 - output_means))
    terms = np.where(up > 0, up * lp, 0.0) + np.where(up < 1, (1.0 - up) * lm, 0.0)
    return -terms.sum(axis=(-1, -2))
