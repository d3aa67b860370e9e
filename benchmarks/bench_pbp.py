"""Benchmark: CPU time of PBP per split on Boston housing and kin8nm (the settings of each
dataset's ``benchmark_protocol``: 50 hidden units, 40 epochs), one split at a time and all 20
splits as one batch, side by side with the authors' C implementation
(HIPS/Probabilistic-Backpropagation, ``c/PBP_net``) run interleaved in the same process.

Times are ``time.process_time()`` (CPU seconds of this process; XLA and OpenBLAS one thread).
The first call of each compiled program includes its compilation: that time is reported on
its own line and charged once, and the per-split times are of calls after it. The persistent
compilation cache is off unless ``--cache`` (so the compile time is the real one).

The peer is not part of this project: build it outside it from a checkout of
HIPS/Probabilistic-Backpropagation you obtained (``scripts/build_pbp_peer.sh SOURCE OUTPUT``;
nothing is fetched) and point ``--peer`` at OUTPUT, the directory holding the built ``pbp``
module. Without it the run says so in a banner at its start and again at its end, and has no
peer columns; ``--require-peer`` makes that an error (exit status 1).

Run: python benchmarks/bench_pbp.py [--datasets boston_housing kin8nm] [--splits 20]
     [--peer /work/peers/pbp/c/PBP_net] [--require-peer] [--cache]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
if "--cache" not in sys.argv:
    os.environ["BNNSWEEP_JAX_CACHE"] = ""  # real compile times

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.methods.adf import PBPSettings, fit, fit_many  # noqa: E402
from bnnsweep.results import regression_metrics, to_original_units  # noqa: E402

DEFAULT_PEER = "/work/peers/pbp/c/PBP_net"


def quiet(*_):
    pass


def cpu(fn):
    """(CPU seconds, result) of fn()."""
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


@contextlib.contextmanager
def stdout_silenced():
    """The peer's C code prints progress dots with printf: send fd 1 to /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def load_peer(path: str):
    """The peer's compiled ``pbp`` module, or (None, reason)."""
    if not Path(path).is_dir():
        return (
            None,
            f"no directory {path} (build HIPS/Probabilistic-Backpropagation c/PBP_net there)",
        )
    sys.path.insert(0, path)
    try:
        import pbp  # type: ignore[import-not-found]
    except ImportError as err:
        return None, f"cannot import the peer's pbp module from {path}: {err}"
    finally:
        sys.path.remove(path)
    return pbp, ""


def peer_absent(reason: str) -> str:
    """The banner of a run without the peer."""
    line = "=" * 78
    return (
        f"{line}\nPEER ABSENT: the authors' C PBP is NOT in this run; no peer columns, no "
        f"ratios.\n  {reason}\n  Build it: scripts/build_pbp_peer.sh SOURCE OUTPUT (SOURCE: a "
        f"checkout of\n  HIPS/Probabilistic-Backpropagation), then --peer OUTPUT.\n{line}"
    )


def peer_fit(pbp, split, hidden: int, epochs: int, seed: int):
    """The authors' C PBP on one split (already standardised, as their normalize=True does),
    predictions in original units. Their initial noise comes from numpy's global generator;
    the epoch permutations from a Generator seeded by ``seed``."""
    np.random.seed(seed)  # noqa: NPY002 (the peer draws its initial noise from it)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(split.x_train, dtype=np.float64)
    y = np.ascontiguousarray(split.y_train[:, 0], dtype=np.float64)
    with stdout_silenced():
        net = pbp.construct_PBP_network([hidden], x.shape[1])
        for _ in range(epochs):
            net.train_adf(x, y, rng.permutation(x.shape[0]).astype(np.int32))
    m, v, v_noise = pbp.predict_PBP_network(net, np.ascontiguousarray(split.x_test))
    return m[:, None], (v + v_noise[0])[:, None]


def scores(split, mean, var) -> tuple[float, float]:
    mean, var = to_original_units(split, mean, var)
    s = regression_metrics(split.y_test * split.y_scale + split.y_mean, mean, var)
    return s["test_rmse"], s["test_loglik"]


def mean_se(values) -> str:
    values = np.asarray(values)
    return f"{values.mean():.4f} +- {values.std(ddof=1) / np.sqrt(len(values)):.4f}"


def bench_dataset(name: str, n_splits: int, peer) -> dict:
    info = datasets.describe(name)
    protocol = info["benchmark_protocol"]
    hidden, epochs = int(protocol["hidden_units"]), int(protocol["epochs"])
    data = datasets.load(name)
    splits = [data.split(s) for s in info["split_names"][:n_splits]]
    settings = PBPSettings(hidden=hidden, epochs=epochs, trace_test=False)
    n_train = splits[0].x_train.shape[0]
    print(f"\n{name}: {len(splits)} splits x {epochs} epochs x {n_train} points, {hidden} units")

    first_s, _ = cpu(lambda: fit(splits[0], settings, np.random.default_rng(0), log=quiet))
    ours, peers, ours_scores, peer_scores, alone_means = [], [], [], [], []
    for i, split in enumerate(splits):
        t, res = cpu(lambda: fit(split, settings, np.random.default_rng(i), log=quiet))  # noqa: B023
        ours.append(t)
        ours_scores.append(scores(split, res.pred_mean, res.pred_var))
        alone_means.append(res.pred_mean)
        if peer is not None:
            t_peer, (m, v) = cpu(lambda: peer_fit(peer, split, hidden, epochs, i))  # noqa: B023
            peers.append(t_peer)
            peer_scores.append(scores(split, m, v))
        ratio = f"  peer {peers[-1]:7.3f} s  ratio {ours[-1] / peers[-1]:6.2f}" if peers else ""
        print(f"  split {i:2d}: ours {ours[-1]:7.3f} s{ratio}")
    compile_one = first_s - ours[0]
    rngs = [np.random.default_rng(i) for i in range(len(splits))]
    batch_first, _ = cpu(lambda: fit_many(splits, settings, rngs, log=quiet))
    rngs = [np.random.default_rng(i) for i in range(len(splits))]
    batch_s, batch = cpu(lambda: fit_many(splits, settings, rngs, log=quiet))
    compile_batch = batch_first - batch_s
    R = len(splits)
    one = float(np.mean(ours))
    print(
        f"  compile (first call): one split {compile_one:.2f} s, batch of {R} {compile_batch:.2f} s"
    )
    print(
        f"  ours one at a time: {one:.3f} s per split ({(one * R + compile_one) / R:.3f} with compile once)"
    )
    print(
        f"  ours batched over {R}: {batch_s / R:.3f} s per split ({batch_first / R:.3f} with compile once)"
    )
    gap = max(
        float(np.max(np.abs(b.pred_mean - a))) for b, a in zip(batch, alone_means, strict=True)
    )
    print(
        f"  batched vs one at a time: largest difference of predictive means {gap:.1e} "
        "(standardised units)"
    )
    rmse, ll = np.array(ours_scores).T
    print(f"  ours: test RMSE {mean_se(rmse)}, test loglik {mean_se(ll)}")
    out = {
        f"{name}_one_s": one,
        f"{name}_batched_s": batch_s / R,
        f"{name}_compile_one_s": compile_one,
        f"{name}_compile_batch_s": compile_batch,
        f"{name}_rmse": ("split", rmse),
        f"{name}_loglik": ("split", ll),
    }
    if peers:
        peer_mean = float(np.mean(peers))
        p_rmse, p_ll = np.array(peer_scores).T
        print(
            f"  peer (C): {peer_mean:.3f} s per split; test RMSE {mean_se(p_rmse)}, test loglik {mean_se(p_ll)}"
        )
        print(
            f"  CPU-time ratio ours/peer: one at a time {one / peer_mean:.2f}, "
            f"batched {batch_s / R / peer_mean:.2f}"
        )
        out.update({f"{name}_peer_s": peer_mean, f"{name}_peer_rmse": ("split", p_rmse),
                    f"{name}_peer_loglik": ("split", p_ll)})  # fmt: skip
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["boston_housing", "kin8nm"])
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--peer", default=DEFAULT_PEER)
    parser.add_argument("--cache", action="store_true", help="use the persistent compile cache")
    parser.add_argument(
        "--require-peer", action="store_true", help="exit with status 1 when the peer is absent"
    )
    args = parser.parse_args()
    peer, reason = load_peer(args.peer)
    if peer is None:
        print(peer_absent(reason), file=sys.stderr, flush=True)
        if args.require_peer:
            sys.exit(1)
    else:
        print(f"peer: HIPS C PBP from {args.peer}")
    results = {}
    for name in args.datasets:
        results.update(bench_dataset(name, args.splits, peer))
    path = Path(__file__).parent / "results" / "bench_pbp.nc"
    path.parent.mkdir(exist_ok=True)
    xr.Dataset(results, attrs={"n_splits": args.splits, "peer": int(peer is not None)}).to_netcdf(
        path
    )
    print(f"wrote {path}")
    if peer is None:
        sys.stdout.flush()
        print(peer_absent(reason), file=sys.stderr)


if __name__ == "__main__":
    main()
