"""Fitting log sizes from pairwise "larger than" labels: a Bradley-Terry fit from a least-squares start.

Both linear systems (the grounded graph-Laplacian least-squares system and each Newton step) are solved by
Jacobi-preconditioned conjugate gradients in numpy, deterministic and without an n x n matrix; the connected
components of the pair graph tell which objects reach an anchor. The model, its params and how the defaults
were chosen: the docstring of :mod:`probekit.sources.loaders.object_sizes` ("Fitting sizes from pairs").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probekit.sources.loaders._object_size_params import ObjectSizeParams


def _laplacian_mv(n: int, i: np.ndarray, j: np.ndarray, w: np.ndarray, free: np.ndarray, lam: float):
    """``v -> (L_w + lam I)[free, free] @ v`` for the weighted graph Laplacian ``L_w`` of edges ``(i, j)``, and
    its diagonal (the Jacobi preconditioner)."""
    full = np.zeros(n)

    def mv(v):
        full[free] = v
        d = w * (full[i] - full[j])
        return (np.bincount(i, d, n) - np.bincount(j, d, n))[free] + lam * v

    diag = (np.bincount(i, w, n) + np.bincount(j, w, n))[free] + lam
    return mv, diag


def _cg(mv, b: np.ndarray, diag: np.ndarray, tol: float = 1e-12, maxiter: int = 20000) -> np.ndarray:
    """Preconditioned conjugate gradients for a symmetric positive definite system (deterministic)."""
    x = np.zeros_like(b)
    r = b.copy()
    z = r / diag
    d = z.copy()
    rz = r @ z
    stop = tol * max(np.linalg.norm(b), 1e-300)
    for _ in range(maxiter):
        if np.linalg.norm(r) <= stop:
            break
        ad = mv(d)
        alpha = rz / (d @ ad)
        x += alpha * d
        r -= alpha * ad
        z = r / diag
        rz, rz_old = r @ z, rz
        d = z + (rz / rz_old) * d
    return x


def fit_log_sizes(n: int, i: np.ndarray, j: np.ndarray, y: np.ndarray, anchors: dict[int, float],
                  p: ObjectSizeParams) -> tuple[np.ndarray, dict[str, Any]]:
    """Log sizes of ``n`` objects from labels ``y[k] = +1`` (object ``i[k]`` larger than ``j[k]``) or -1,
    ``anchors`` (index -> fixed log size). Every object must be connected to an anchor. See the module doc."""
    x = np.zeros(n)
    fixed = np.zeros(n, dtype=bool)
    for k, v in anchors.items():
        x[k], fixed[k] = v, True
    free = np.flatnonzero(~fixed)
    info: dict[str, Any] = {"method": p.fit, "free_objects": int(free.size), "anchored_objects": int(fixed.sum())}
    if free.size == 0 or len(y) == 0:
        return x, info
    y = y.astype(float)
    # least squares: minimise sum_k (x_i - x_j - gap * y_k)^2 over the free objects, i.e. solve the grounded
    # Laplacian system L_ff x_f = b_f - L_fa x_a
    ones = np.ones(len(y))
    d = p.ls_gap * y - (x[i] - x[j])  # x is 0 on free objects here: this moves the anchors to the right side
    rhs = (np.bincount(i, d, n) - np.bincount(j, d, n))[free]
    mv, diag = _laplacian_mv(n, i, j, ones, free, 0.0)
    x[free] = _cg(mv, rhs, diag)
    if p.fit == "least_squares":
        return x, info
    start, s, lam = x.copy(), p.bt_scale, p.bt_ridge

    def loss(v):
        return float(np.logaddexp(0.0, -y * (v[i] - v[j]) / s).sum() + 0.5 * lam * ((v[free] - start[free]) ** 2).sum())

    cur, it = loss(x), 0
    for it in range(1, 101):
        z = y * (x[i] - x[j]) / s
        q = np.exp(-np.logaddexp(0.0, z))  # sigmoid(-z)
        grad = (np.bincount(i, -q * y / s, n) - np.bincount(j, -q * y / s, n))[free] + lam * (x - start)[free]
        mv, diag = _laplacian_mv(n, i, j, q * (1 - q) / s ** 2, free, lam)
        step = _cg(mv, grad, diag)
        t, trial, new = 1.0, x, cur
        while t >= 1e-6:  # backtracking: halve the step until the objective does not increase
            trial = x.copy()
            trial[free] -= t * step
            new = loss(trial)
            if new <= cur:
                break
            t /= 2
        if new > cur:  # no step helps: converged as far as floating point goes
            break
        x, prev, cur = trial, cur, new
        if prev - cur <= 1e-10 * max(1.0, abs(cur)):
            break
    info.update(iterations=it, negative_log_likelihood=round(cur, 6))
    return x, info


def _components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    parent = np.arange(n)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in zip(i, j):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(a) for a in range(n)])
