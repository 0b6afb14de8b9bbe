"""Mutual information between a layer's (mean) activation and the labels, for Figure 2.

The estimator is Ross (2014), "Mutual information between discrete and continuous data sets"
(PLoS ONE): the k-nearest-neighbour estimator of Kraskov et al. (2004) for a continuous X and a
discrete Y, I = ψ(N) − <ψ(N_y)> + ψ(k) − <ψ(m)>, where for each point d is the distance (max
norm) to its k-th neighbour of the same label and m the number of points of any label within
d. It is the estimator scikit-learn's `mutual_info_classif` uses, there for one feature at a
time; here for the whole (reduced) vector, with scikit-learn's KD-trees for the neighbour
search. The paper used EDGE (Noshad et al. 2019); this one is chosen because it is published,
consistent, has no bandwidth to tune, and its neighbour search comes from a well-kept library.
High dimension biases kNN estimates, so activations are standardised and reduced to their
first `dims` principal components first (both the same for every layer and encoder).
"""

from __future__ import annotations

import numpy as np


def _sklearn():
    try:
        from sklearn.decomposition import PCA
        from sklearn.neighbors import KDTree, NearestNeighbors
    except ImportError as err:
        raise RuntimeError(
            "the mi analysis needs scikit-learn: pip install -e '.[analysis]'"
        ) from err
    return PCA, KDTree, NearestNeighbors


def mi_knn(x: np.ndarray, y: np.ndarray, k: int = 3) -> float:
    """I(X; Y) in nats for X (n, d) continuous, Y (n,) discrete labels (Ross 2014)."""
    from scipy.special import digamma

    _, KDTree, NearestNeighbors = _sklearn()
    x = np.asarray(x, dtype=np.float64).reshape(len(y), -1)
    y = np.asarray(y)
    n = len(y)
    radius = np.empty(n)
    label_counts = np.empty(n)
    keep = np.ones(n, dtype=bool)
    for label in np.unique(y):
        idx = np.flatnonzero(y == label)
        if len(idx) <= k:
            keep[idx] = False  # too few neighbours of its own label: left out, as sklearn does
            continue
        nn = NearestNeighbors(n_neighbors=k + 1, metric="chebyshev").fit(x[idx])
        dist, _ = nn.kneighbors(x[idx])
        radius[idx] = np.nextafter(dist[:, -1], 0)  # strictly inside the k-th neighbour
        label_counts[idx] = len(idx)
    x, radius, label_counts = x[keep], radius[keep], label_counts[keep]
    if len(x) == 0:
        return 0.0
    tree = KDTree(x, metric="chebyshev")
    m = tree.query_radius(x, radius, count_only=True) - 1  # others within the radius
    value = digamma(len(x)) - np.mean(digamma(label_counts)) + digamma(k) - np.mean(digamma(m + 1))
    return max(float(value), 0.0)


def reduce(layers: list[np.ndarray], dims: int = 16, seed: int = 0) -> list[np.ndarray]:
    """Each (n, D) matrix standardised and projected on its first `dims` principal axes."""
    PCA, _, _ = _sklearn()
    out = []
    for x in layers:
        z = (x - x.mean(0)) / (x.std(0) + 1e-8)
        out.append(PCA(n_components=min(dims, *z.shape), random_state=seed).fit_transform(z))
    return out


def discretise(values: np.ndarray, bins: int = 5) -> np.ndarray:
    """Regression targets as `bins` equal-frequency classes (STS-B, SICK-R)."""
    edges = np.quantile(values, np.linspace(0, 1, bins + 1)[1:-1])
    return np.searchsorted(edges, values, side="right")
