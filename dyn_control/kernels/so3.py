"""3-vectors and rotations inside the kernels. A 3-vector is a tuple (x, y, z): numba keeps
tuples in registers, so a pass allocates nothing for them. `row(a, i)` reads row i of an
(m, 3) array, `mul(R, i, v)` is R[i] @ v and `mul_t(R, i, v)` is R[i].T @ v for a stack of
rotations R (m, 3, 3).
"""

import math

import numpy as np

from dyn_control.kernels.compile import jit


@jit
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@jit
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def row(arr, i):
    return (arr[i, 0], arr[i, 1], arr[i, 2])


@jit
def mul(R, i, v):
    """R[i] @ v."""
    return (R[i, 0, 0] * v[0] + R[i, 0, 1] * v[1] + R[i, 0, 2] * v[2],
            R[i, 1, 0] * v[0] + R[i, 1, 1] * v[1] + R[i, 1, 2] * v[2],
            R[i, 2, 0] * v[0] + R[i, 2, 1] * v[1] + R[i, 2, 2] * v[2])


@jit
def mul_t(R, i, v):
    """R[i].T @ v."""
    return (R[i, 0, 0] * v[0] + R[i, 1, 0] * v[1] + R[i, 2, 0] * v[2],
            R[i, 0, 1] * v[0] + R[i, 1, 1] * v[1] + R[i, 2, 1] * v[2],
            R[i, 0, 2] * v[0] + R[i, 1, 2] * v[1] + R[i, 2, 2] * v[2])


@jit
def rotation_log(R):
    """Rotation matrix (3, 3) -> rotation vector (3,), angle in [0, pi] times unit axis (the
    log map of SO(3)); near pi the axis comes from the symmetric part, its sign from the skew
    part.
    """
    cos = min(max(0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0), -1.0), 1.0)
    angle = math.acos(cos)
    skew = (R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1])
    if angle < 1e-6:  # sin(angle) / angle -> 1
        return scale(skew, 0.5 + angle * angle / 12.0)
    if angle < math.pi - 1e-3:
        return scale(skew, 0.5 * angle / math.sin(angle))
    # near pi: the symmetric part is cos I + (1 - cos) a a^T, exactly; a from its largest column
    B = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            B[r, c] = (0.5 * (R[r, c] + R[c, r]) - (cos if r == c else 0.0)) / (1.0 - cos)
    k = 0
    for i in range(1, 3):
        if B[i, i] > B[k, k]:
            k = i
    axis = scale((B[0, k], B[1, k], B[2, k]), 1.0 / math.sqrt(B[k, k]))
    if dot(axis, skew) < 0:
        axis = scale(axis, -1.0)
    return scale(axis, angle)
