"""The 'bars' images of Hinton et al. (1995), thesis §2.5.2: binary size x size images with
all bars horizontal or all vertical (p = 1/2 each), every one of the size bars on with
p = 1/2. Plain generators; nothing is registered here.
"""

from __future__ import annotations

import numpy as np


def bars_images(rng: np.random.Generator, n: int, size: int = 4) -> np.ndarray:
    """n images drawn from the generating process, flattened row-major: (n, size*size)."""
    on = rng.random((n, size)) < 0.5
    vertical = rng.random(n) < 0.5
    img = np.where(vertical[:, None, None], on[:, None, :], on[:, :, None])
    return np.broadcast_to(img, (n, size, size)).reshape(n, size * size).astype(float)


def bars_distribution(size: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """The distinct images and their probabilities: 2^(size+1) - 2 images (30 for 4x4),
    the blank and the full image twice as likely as the others."""
    from ..models.binary_states import all_states  # models only when the data are made

    on = all_states(size).astype(bool)
    horiz = np.broadcast_to(on[:, :, None], (len(on), size, size)).reshape(len(on), -1)
    vert = np.broadcast_to(on[:, None, :], (len(on), size, size)).reshape(len(on), -1)
    imgs, inverse = np.unique(
        np.concatenate([horiz, vert]).astype(float), axis=0, return_inverse=True
    )
    probs = np.bincount(inverse.ravel(), minlength=len(imgs)) / (2 * len(on))
    return imgs, probs


def bars_entropy(size: int = 4) -> float:
    """The entropy of the generating process in nats (3.379 for 4x4): minus the best
    achievable expected log-likelihood per pattern."""
    _, p = bars_distribution(size)
    return float(-np.sum(p * np.log(p)))
