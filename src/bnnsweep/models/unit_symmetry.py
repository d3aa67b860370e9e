"""The symmetry group of a hidden layer, as it acts on a flat coordinate vector.

A network with H interchangeable hidden units is unchanged by the H! permutations of the
units and, for an odd activation (tanh, erf), by the sign flip of any one unit, which
negates every coordinate the unit owns (paper 001 sec. 5, eq. 11's ln h! + h ln 2; Bishop
1995 sec. 10.10): |G| = 2^H H! (H! for other activations). Which coordinates a unit owns
depends on the parametrisation:

- the full weight vector [W1 (H, I), b1 (H), W2 (P, H), b2 (P)]: unit j owns W1[j], b1[j]
  and W2[:, j] (``models.jax_network.network_symmetry``);
- the target with the output layer integrated out (``models.collapsed``): unit j owns W1[j]
  and b1[j] alone (its output weights are integrated over a symmetric prior).

The coordinates no unit owns (the output biases, log-precisions) are left as they are.
A ``UnitSymmetry`` names the coordinates of each unit (a block of the same length m per
unit) and one column of the block, the key: the canonical representative of an orbit has
every unit's key >= 0 (odd activations) and the units sorted by it, largest first. The
engines that fold a posterior onto one image of the group (``engines.evidence.valleys``,
``valley_tempering``, ``nested``) read nothing else of the architecture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations, product

import numpy as np

from ..runtime.jax_runtime import jnp


@dataclass(frozen=True)
class UnitSymmetry:
    """Signed permutations of H units' coordinate blocks in a vector of n coordinates
    (module docstring). Hashable, so compiled programs can be cached by it."""

    n: int
    units: tuple[tuple[int, ...], ...]  # (H, m): the coordinates unit j owns
    key: int  # column of a block: its sign is made >= 0, the units sorted by it
    odd: bool  # sign flips are symmetries (odd activation)

    @property
    def index(self) -> np.ndarray:
        return np.asarray(self.units, dtype=int)

    @property
    def n_hidden(self) -> int:
        return len(self.units)

    @property
    def order(self) -> int:
        """|G| = 2^H H! (odd activations) or H!."""
        H = self.n_hidden
        return (2**H if self.odd else 1) * math.factorial(H)

    def padded(self, n: int) -> UnitSymmetry:
        """The same group on a longer vector whose extra coordinates no unit owns."""
        return UnitSymmetry(n, self.units, self.key, self.odd)

    def blocks(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each unit's coordinates (H, m) and the rest, of a numpy vector."""
        w = np.asarray(w)
        owned = np.zeros(self.n, dtype=bool)
        owned[self.index.ravel()] = True
        return w[self.index], w[~owned]

    def canonical(self, u):
        """The representative of u's orbit (JAX, one vector): each unit's block negated where
        its key is negative (odd activations), then the blocks sorted by the key, largest
        first."""
        index = jnp.asarray(self.index)
        block = u[index]
        if self.odd:
            block = block * jnp.where(block[:, self.key] < 0, -1.0, 1.0)[:, None]
        order = jnp.argsort(-block[:, self.key], stable=True)
        return u.at[index].set(block[order])

    def signed_permutation(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index, sign) over the n coordinates with canonical(w) = sign * w[index]."""
        w = np.asarray(w)
        units = self.index
        first = w[units[:, self.key]]
        flip = np.where(self.odd & (first < 0), -1.0, 1.0)
        order = np.argsort(-(flip * first), kind="stable")
        index, sign = np.arange(self.n), np.ones(self.n)
        index[units] = units[order]
        sign[units] = flip[order][:, None]
        return index, sign

    def elements(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every element of the group as (index, sign): g w = sign * w[index]. Only for small
        H (|G| = 384 at H = 4, 10^7 at H = 8)."""
        units, H = self.index, self.n_hidden
        flips = product((1.0, -1.0), repeat=H) if self.odd else [(1.0,) * H]
        out = []
        for perm, signs in product(permutations(range(H)), list(flips)):
            index, sign = np.arange(self.n), np.ones(self.n)
            index[units] = units[list(perm)]
            sign[units] = np.asarray(signs)[:, None]
            out.append((index, sign))
        return out
