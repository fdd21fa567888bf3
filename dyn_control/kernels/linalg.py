"""Small dense linear algebra without LAPACK (numba's needs SciPy): Cholesky, a symmetric
eigen-decomposition by Jacobi rotations, the damped least-squares inverse, and the
operational-space inertia built from them.
"""

import math

import numpy as np

from dyn_control.kernels.compile import jit


@jit
def cholesky_into(M, L):
    """Fill L (n, n), lower triangular, with L L^T = M; whether M was positive definite (if
    not, L is left part-filled).
    """
    n = M.shape[0]
    for j in range(n):
        for i in range(j):
            L[i, j] = 0.0
        d = M[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        L[j, j] = math.sqrt(d)
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    return True


@jit
def cholesky_factor(M, L):
    """Fill L (n, n), lower triangular, with L L^T = M for symmetric positive definite M, and
    return it; raises if M is not SPD.
    """
    if not cholesky_into(M, L):
        raise ValueError("mass matrix is not positive definite")
    return L


@jit
def cholesky_apply(L, b, x):
    """Fill x (n,) with the x of L L^T x = b, by the two triangular solves, and return it (x
    may be b).
    """
    n = b.shape[0]
    for i in range(n):  # L y = b, y in x
        s = b[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):  # L^T x = y
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
    return x


@jit
def inverse_diagonal(L, x, out):
    """Fill out (n,) with the diagonal of M^-1, M = L L^T: M^-1 = L^-T L^-1, so its j-th
    diagonal entry is the squared norm of the j-th column of L^-1, which x (n,) holds in turn
    (forward substitution from row j down: a sixth of the arithmetic of a solve per column,
    and a sum of squares, without cancellation).
    """
    n = out.shape[0]
    for j in range(n):
        total = 0.0
        for i in range(j, n):
            s = 1.0 if i == j else 0.0
            for k in range(j, i):
                s -= L[i, k] * x[k]
            x[i] = s / L[i, i]
            total += x[i] * x[i]
        out[j] = total


@jit
def cholesky_solve(M, b):
    """x (new) with M x = b for symmetric positive definite M; raises if M is not SPD."""
    n = b.shape[0]
    return cholesky_apply(cholesky_factor(M, np.empty((n, n))), b, np.empty(n))


@jit
def matvec_into(A, x, out):
    """Fill out with A @ x (out is not x), and return it: small arrays, without BLAS (numba's
    np.dot needs SciPy's).
    """
    for r in range(A.shape[0]):
        out[r] = 0.0
        for c in range(A.shape[1]):
            out[r] += A[r, c] * x[c]
    return out


@jit
def matmul_into(A, B, out):
    """Fill out with A @ B (out is neither), and return it."""
    out[:] = 0.0
    for r in range(A.shape[0]):
        for k in range(A.shape[1]):
            for c in range(B.shape[1]):
                out[r, c] += A[r, k] * B[k, c]
    return out


@jit
def symmetric_eigen(A):
    """(s (m,), V (m, m)): the eigenvalues and eigenvectors (columns) of a symmetric A, by
    cyclic Jacobi rotations.
    """
    m = A.shape[0]
    return symmetric_eigen_into(A, np.eye(m), np.empty((m, m)), np.empty((m, m)), np.empty(m))


@jit
def symmetric_eigen_into(A, V, a, scratch, s):
    """symmetric_eigen, the rotations starting from the basis V (m, m) instead of the axes: a
    control tick passes the last tick's eigenvectors, in which A is nearly diagonal already
    (one sweep fewer to converge). V is made orthonormal first (its round-off would otherwise
    grow from tick to tick) and holds the eigenvectors after; from the axes (np.eye) it is
    symmetric_eigen's cold start, bit for bit. a and scratch (m, m): its workspace; s (m,):
    the eigenvalues.
    """
    m = A.shape[0]
    orthonormalize(V)
    a = matmul_into(V.T, matmul_into(A, V, scratch), a)  # A in the basis V
    largest = 0.0
    for i in range(m):
        largest = max(largest, abs(a[i, i]))
    for _ in range(60):
        off = 0.0
        for i in range(m):
            for k in range(i + 1, m):
                off += a[i, k] * a[i, k]
        # converged: off-diagonals under 1e-22 of the largest eigenvalue rotate no eigenvector
        # past round-off (the convergence is quadratic: a sweep takes them from about 1e-13
        # to 1e-26, and the one after that changed nothing)
        if off <= (1e-22 * largest) ** 2:
            break
        for i in range(m):
            for k in range(i + 1, m):
                if a[i, k] == 0.0:
                    continue
                theta = (a[k, k] - a[i, i]) / (2.0 * a[i, k])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                sn = t * c
                for r in range(m):  # a <- a P, then P^T a; V <- V P
                    x, y = a[r, i], a[r, k]
                    a[r, i], a[r, k] = c * x - sn * y, sn * x + c * y
                for r in range(m):
                    x, y = a[i, r], a[k, r]
                    a[i, r], a[k, r] = c * x - sn * y, sn * x + c * y
                for r in range(m):
                    x, y = V[r, i], V[r, k]
                    V[r, i], V[r, k] = c * x - sn * y, sn * x + c * y
    for i in range(m):
        s[i] = a[i, i]
    return s, V


@jit
def orthonormalize(V):
    """Make the columns of V (m, m) orthonormal in place, by modified Gram-Schmidt; the axes
    stay exactly the axes.
    """
    m = V.shape[0]
    for c in range(m):
        for p in range(c):
            dot = 0.0
            for r in range(m):
                dot += V[r, p] * V[r, c]
            if dot != 0.0:
                for r in range(m):
                    V[r, c] -= dot * V[r, p]
        norm = 0.0
        for r in range(m):
            norm += V[r, c] * V[r, c]
        norm = math.sqrt(norm)
        if norm != 1.0:
            for r in range(m):
                V[r, c] /= norm


@jit
def compose_eigen(V, gain, out):
    """Fill out (m, m) with V diag(gain) V^T."""
    return scaled_product(V, gain, V, out)


@jit
def scaled_product(A, gain, B, out):
    """Fill out with A diag(gain) B^T (A (r, m), B (c, m)), and return it."""
    for r in range(A.shape[0]):
        for c in range(B.shape[0]):
            total = 0.0
            for i in range(A.shape[1]):
                total += A[r, i] * gain[i] * B[c, i]
            out[r, c] = total
    return out


# an eigenvalue under this share of the largest is round-off: a direction the arm cannot move in
ROUND_OFF = 1e-12


@jit
def damped_gains(s, damping):
    """The eigenvalues of the damped least-squares inverse: s / (s^2 + damping^2), so 1 / s far
    from zero (s >> damping) and falling to 0 towards it instead of growing without bound;
    with damping 0 the pseudo-inverse's. An eigenvalue under ROUND_OFF of the largest gets 0:
    round-off's own gain, s / damping^2, is no inertia (on example-robot-data's 3-joint finger
    it made Lambda move by 3.7e-6 of its largest entry under a change of q of 1e-15 rad).
    """
    return damped_gains_into(s, damping, np.empty(s.shape[0]))


@jit
def damped_gains_into(s, damping, gain):
    """damped_gains into gain (m,)."""
    largest = 0.0
    for i in range(s.shape[0]):
        largest = max(largest, s[i])
    for i in range(s.shape[0]):
        if not s[i] > ROUND_OFF * largest:
            gain[i] = 0.0
        elif damping > 0.0:
            gain[i] = s[i] / (s[i] * s[i] + damping * damping)
        else:
            gain[i] = 1.0 / s[i]
    return gain


@jit
def damped_inverse(A, damping, out):
    """Fill out (m, m) with the damped least-squares inverse of a symmetric positive
    semi-definite A (damped_gains on its eigenvalues).
    """
    s, V = symmetric_eigen(A)
    return compose_eigen(V, damped_gains(s, damping), out)


@jit
def operational_space(L, J, damping):
    """(M^-1 J^T (n, m), Lambda (m, m), its eigenvalues (m,) and eigenvectors V (m, m)) of a
    task Jacobian J (m, n), given L the Cholesky factor of M (cholesky_factor): Lambda =
    (J M^-1 J^T)^-1, the task-space inertia, by the damped inverse (bounded at singular
    poses).
    """
    m, n = J.shape
    return operational_space_into(L, J, damping, np.eye(m), np.empty((n, m)),
                                  np.empty((4, m, m)), np.empty((2, m)))


@jit
def operational_space_into(L, J, damping, V, MinvJt, squares, vectors):
    """operational_space with its eigen-decomposition started from V (symmetric_eigen_into),
    which then holds the eigenvectors, over given arrays: MinvJt (n, m), squares (4, m, m):
    J M^-1 J^T, two for the decomposition, Lambda; vectors (2, m): the eigenvalues, the gains.
    The same tuple. With X = L^-1 J^T, J M^-1 J^T = X^T X: symmetric to the last bit, and half
    of it computed; then M^-1 J^T = L^-T X.
    """
    m, n = J.shape
    A, Lam = squares[0], squares[3]
    for k in range(m):  # X into MinvJt, column by column (forward substitution)
        for i in range(n):
            total = J[k, i]
            for j in range(i):
                total -= L[i, j] * MinvJt[j, k]
            MinvJt[i, k] = total / L[i, i]
    for r in range(m):
        for c in range(r + 1):
            total = 0.0
            for i in range(n):
                total += MinvJt[i, r] * MinvJt[i, c]
            A[r, c] = A[c, r] = total
    for k in range(m):  # L^-T X in place (back substitution)
        for i in range(n - 1, -1, -1):
            total = MinvJt[i, k]
            for j in range(i + 1, n):
                total -= L[j, i] * MinvJt[j, k]
            MinvJt[i, k] = total / L[i, i]
    s, V = symmetric_eigen_into(A, V, squares[1], squares[2], vectors[0])
    gain = damped_gains_into(s, damping, vectors[1])
    return MinvJt, compose_eigen(V, gain, Lam), gain, V
