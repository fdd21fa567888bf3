"""Loop kernels of the dynamics, compiled by numba when it is installed, plain Python otherwise.

Every function here works on the chain's arrays (see `model.Chain`) and plain float64 arrays.
Inside the kernels a 3-vector is a tuple (x, y, z): numba keeps tuples in registers, so a
Newton-Euler pass allocates nothing but its outputs. Frames: everything of body i is expressed in
body i's frame; (R[i], p[i]) is the pose of body i in its parent's frame (body parent[i], the
base for -1) at the current q. Bodies are in topological order, parent[i] < i: a path has
parent[i] = i - 1, a tree branches, and the passes are the same code.
Wrenches are ordered [force (3); moment (3)], the moment taken about the body frame origin.
"""

import math

import numpy as np

try:
    from numba import get_num_threads, njit, prange
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised through .py_func in the tests
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            args[0].py_func = args[0]
            return args[0]

        def wrap(func):
            func.py_func = func
            return func
        return wrap

    prange = range

    def get_num_threads():
        return 1

from . import numba_cache
from .model import PRISMATIC, REVOLUTE  # noqa: F401  (the joint-type codes, stated there)

numba_cache.configure()  # before the first kernel: its cache is chosen where it is decorated
jit = njit(cache=True, fastmath=False, nogil=True)  # how every kernel is compiled


@jit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def _scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@jit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def _vec(arr, i):
    return (arr[i, 0], arr[i, 1], arr[i, 2])


@jit
def _mul(R, i, v):
    """R[i] @ v."""
    return (R[i, 0, 0] * v[0] + R[i, 0, 1] * v[1] + R[i, 0, 2] * v[2],
            R[i, 1, 0] * v[0] + R[i, 1, 1] * v[1] + R[i, 1, 2] * v[2],
            R[i, 2, 0] * v[0] + R[i, 2, 1] * v[1] + R[i, 2, 2] * v[2])


@jit
def _mul_t(R, i, v):
    """R[i].T @ v."""
    return (R[i, 0, 0] * v[0] + R[i, 1, 0] * v[1] + R[i, 2, 0] * v[2],
            R[i, 0, 1] * v[0] + R[i, 1, 1] * v[1] + R[i, 2, 1] * v[2],
            R[i, 0, 2] * v[0] + R[i, 1, 2] * v[1] + R[i, 2, 2] * v[2])


@jit
def joint_poses(R0, p0, axis, jtype, q, R, p):
    """Fill R (n, 3, 3) and p (n, 3) with body i's pose in its parent's frame at q (rad or m)."""
    for i in range(q.shape[0]):
        ax, ay, az = axis[i, 0], axis[i, 1], axis[i, 2]
        if jtype[i] == PRISMATIC:
            for r in range(3):
                for c in range(3):
                    R[i, r, c] = R0[i, r, c]
                p[i, r] = p0[i, r] + q[i] * (R0[i, r, 0] * ax + R0[i, r, 1] * ay + R0[i, r, 2] * az)
        else:
            # Rodrigues: Rq = cI + s[a]x + (1 - c) a a^T; R = R0 Rq
            c, s = math.cos(q[i]), math.sin(q[i])
            t = 1.0 - c
            rq = ((c + t * ax * ax, t * ax * ay - s * az, t * ax * az + s * ay),
                  (t * ax * ay + s * az, c + t * ay * ay, t * ay * az - s * ax),
                  (t * ax * az - s * ay, t * ay * az + s * ax, c + t * az * az))
            for r in range(3):
                for k in range(3):
                    R[i, r, k] = R0[i, r, 0] * rq[0][k] + R0[i, r, 1] * rq[1][k] + R0[i, r, 2] * rq[2][k]
                p[i, r] = p0[i, r]


@jit
def rnea(R, p, axis, jtype, parent, mass, h, inertia_o, qd, qdd, a0, f_tip, tau, work):
    """One recursive Newton-Euler pass over the bodies' parent index; writes tau (n,) N m or N.

    parent: (n,) body i's parent body (< i), -1 for the base: a chain is i - 1, a tree
    branches. work: (5, n, 3) scratch for the bodies' w, dw, dv (forward pass) and the wrench
    [force, moment] their children pass down (backward pass), allocated once by the caller (an
    allocation per pass cost as much as the pass itself in a batch).
    a0: (3,) linear acceleration of the base (minus gravity), base frame.
    f_tip: (6,) wrench [force; moment about the frame origin] that the last body (n - 1, the
    tip) exerts on the environment, in its frame. Bodies: mass (n,), h = mass * com (n, 3),
    inertia_o (n, 3, 3) about the body frame origin.
    """
    n = qd.shape[0]
    w_all, dw_all, dv_all, f_all, m_all = work[0], work[1], work[2], work[3], work[4]
    for i in range(n):  # forward: velocities and accelerations, parents first
        j = parent[i]
        if j < 0:
            w, dw, dv = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (a0[0], a0[1], a0[2])
        else:
            w, dw, dv = _vec(w_all, j), _vec(dw_all, j), _vec(dv_all, j)
        a = _vec(axis, i)
        pi = _vec(p, i)
        dv = _mul_t(R, i, _add(_add(dv, _cross(dw, pi)), _cross(w, _cross(w, pi))))
        w = _mul_t(R, i, w)
        dw = _mul_t(R, i, dw)
        if jtype[i] == PRISMATIC:
            dv = _add(dv, _add(_scale(_cross(w, a), 2.0 * qd[i]), _scale(a, qdd[i])))
        else:
            wj = _scale(a, qd[i])
            dw = _add(dw, _add(_cross(w, wj), _scale(a, qdd[i])))
            w = _add(w, wj)
        for k in range(3):
            w_all[i, k], dw_all[i, k], dv_all[i, k] = w[k], dw[k], dv[k]
            f_all[i, k], m_all[i, k] = 0.0, 0.0
    for k in range(3):
        f_all[n - 1, k], m_all[n - 1, k] = f_tip[k], f_tip[3 + k]
    for i in range(n - 1, -1, -1):  # backward: wrenches, children first
        w, dw, dv, hi = _vec(w_all, i), _vec(dw_all, i), _vec(dv_all, i), _vec(h, i)
        iw = _mul(inertia_o, i, w)
        idw = _mul(inertia_o, i, dw)
        # body wrench about its frame origin: f = m dv + dw x h + w x (w x h),
        # n = I_o dw + w x I_o w + h x dv, plus what the children pass down
        f = _add(_vec(f_all, i),
                 _add(_scale(dv, mass[i]), _add(_cross(dw, hi), _cross(w, _cross(w, hi)))))
        m = _add(_vec(m_all, i), _add(idw, _add(_cross(w, iw), _cross(hi, dv))))
        a = _vec(axis, i)
        tau[i] = _dot(a, f) if jtype[i] == PRISMATIC else _dot(a, m)
        j = parent[i]
        if j >= 0:  # carry the wrench to the parent's frame origin
            pi = _vec(p, i)
            f = _mul(R, i, f)
            m = _add(_mul(R, i, m), _cross(pi, f))
            for k in range(3):
                f_all[j, k] += f[k]
                m_all[j, k] += m[k]


@jit
def unpack(floats, ints):
    """model.Chain.kernel_pack -> the eight model arrays (views, no copies), in the kernels'
    order: R0, p0, axis, jtype, parent, mass, h, inertia_o. floats is (n, 11, 3), a block of
    rows per body: R0 (3), p0, axis, h, inertia_o (3), [mass, 0, 0], and the chain's base
    acceleration in body 0's last row. Slices, not reshapes: numba reshapes through a C helper
    call, five of which cost a quarter of a 7-joint arm's inverse dynamics."""
    return (floats[:, 0:3], floats[:, 3], floats[:, 4], ints[0], ints[1], floats[:, 9, 0],
            floats[:, 5], floats[:, 6:9])


@jit
def inverse_dynamics_packed(floats, ints, q, qd, qdd, a0, f_tip):
    """inverse_dynamics on a packed model (fewer arguments to dispatch)."""
    R0, p0, axis, jtype, parent, mass, h, inertia_o = unpack(floats, ints)
    return inverse_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, qdd, a0, f_tip)


_NO_WRENCH = np.zeros(6)  # a global: numba compiles it in as a constant, no allocation a call


@jit
def inverse_dynamics_default(floats, ints, q, qd, qdd):
    """inverse_dynamics on a packed model with the chain's own gravity (packed with the model)
    and no tip wrench: the control loop's call, with two arguments fewer to dispatch."""
    R0, p0, axis, jtype, parent, mass, h, inertia_o = unpack(floats, ints)
    return inverse_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, qdd,
                            floats[0, 10], _NO_WRENCH)


@jit
def mass_matrix_packed(floats, ints, q):
    R0, p0, axis, jtype, parent, mass, h, inertia_o = unpack(floats, ints)
    return mass_matrix(R0, p0, axis, jtype, parent, mass, h, inertia_o, q)


@jit
def forward_dynamics_packed(floats, ints, q, qd, tau, a0, f_tip):
    R0, p0, axis, jtype, parent, mass, h, inertia_o = unpack(floats, ints)
    return forward_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, tau, a0, f_tip)


@jit
def inverse_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, qdd, a0, f_tip):
    n = q.shape[0]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    tau = np.empty(n)
    rnea(R, p, axis, jtype, parent, mass, h, inertia_o, qd, qdd, a0, f_tip, tau,
         np.empty((5, n, 3)))
    return tau


def row_blocks(N):
    """Blocks to split N rows in: one per thread (numba's, as many as cores), or one below 64
    rows, where a second thread costs more than it saves."""
    return get_num_threads() if N >= 64 else 1


@njit(cache=True, fastmath=False, nogil=True, parallel=True)
def inverse_dynamics_rows(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, qdd, a0, f_tip, blocks):
    """inverse_dynamics for each row of q, qd, qdd (N, n) -> tau (N, n), in one compiled loop.

    The rows are split in `blocks` blocks (row_blocks), run by numba's threads, each with its
    own scratch arrays; a row's numbers do not depend on the split.
    """
    N, n = q.shape
    tau = np.empty((N, n))
    size = (N + blocks - 1) // blocks
    for b in prange(blocks):
        R, p, work = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((5, n, 3))
        for k in range(b * size, min(N, (b + 1) * size)):
            joint_poses(R0, p0, axis, jtype, q[k], R, p)
            rnea(R, p, axis, jtype, parent, mass, h, inertia_o, qd[k], qdd[k], a0, f_tip, tau[k], work)
    return tau


@jit
def _mass_matrix_at(R, p, axis, jtype, parent, mass, h, inertia_o, M):
    """Column j of M = ID(q, qd=0, qdd=e_j) with gravity and tip wrench off."""
    n = M.shape[0]
    zero_n, e = np.zeros(n), np.zeros(n)
    zero3, zero6 = np.zeros(3), np.zeros(6)
    col, work = np.empty(n), np.empty((5, n, 3))
    for j in range(n):
        e[j] = 1.0
        rnea(R, p, axis, jtype, parent, mass, h, inertia_o, zero_n, e, zero3, zero6, col, work)
        e[j] = 0.0
        for i in range(n):
            M[i, j] = col[i]


@jit
def _mass_matrix_crba(R, p, axis, jtype, parent, mass, h, inertia_o, M):
    """M by the composite-rigid-body algorithm (Featherstone's CRBA) over the parent index: the
    same matrix as _mass_matrix_at to round-off, in one backward pass instead of n Newton-Euler
    passes (the simulator builds M five times a step). Body i's composite inertia (mass,
    first moment, inertia about its origin, in its frame) gathers its subtree's; the wrench
    that its joint's unit motion needs is carried up the ancestors, and S_j^T of it is M[i, j].
    """
    n = M.shape[0]
    cm, ch, cI = np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3))
    for i in range(n):
        for j in range(n):
            M[i, j] = 0.0  # joints on different branches do not couple through inertia
        cm[i] = mass[i]
        for r in range(3):
            ch[i, r] = h[i, r]
            for c in range(3):
                cI[i, r, c] = inertia_o[i, r, c]
    for i in range(n - 1, -1, -1):  # children (larger indices) are complete
        a, hi = _vec(axis, i), _vec(ch, i)
        if jtype[i] == PRISMATIC:  # S = [a; 0]: F = [m a; h x a]
            f, m = _scale(a, cm[i]), _cross(hi, a)
        else:  # S = [0; a]: F = [a x h; I_o a]
            f, m = _cross(a, hi), _mul(cI, i, a)
        M[i, i] = _dot(a, f) if jtype[i] == PRISMATIC else _dot(a, m)
        j = i
        while parent[j] >= 0:  # carry F to each ancestor's frame: column i above the diagonal
            pj = _vec(p, j)
            f = _mul(R, j, f)
            m = _add(_mul(R, j, m), _cross(pj, f))
            j = parent[j]
            aj = _vec(axis, j)
            M[i, j] = M[j, i] = _dot(aj, f) if jtype[j] == PRISMATIC else _dot(aj, m)
        k = parent[i]
        if k >= 0:  # add body i's composite into its parent's, moved into the parent's frame
            pi = _vec(p, i)
            hr = _mul(R, i, hi)  # first moment, parent axes, about body i's origin
            for r in range(3):
                for c in range(3):  # R I R^T, then the shift of the origin by p
                    total = 0.0
                    for u in range(3):
                        for v in range(3):
                            total += R[i, r, u] * cI[i, u, v] * R[i, c, v]
                    shift = -(pi[r] * hr[c] + hr[r] * pi[c]) - cm[i] * pi[r] * pi[c]
                    if r == c:
                        shift += cm[i] * _dot(pi, pi) + 2.0 * _dot(pi, hr)
                    cI[k, r, c] += total + shift
            cm[k] += cm[i]
            for r in range(3):
                ch[k, r] += hr[r] + cm[i] * pi[r]


@jit
def mass_matrix(R0, p0, axis, jtype, parent, mass, h, inertia_o, q):
    n = q.shape[0]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    M = np.empty((n, n))
    _mass_matrix_at(R, p, axis, jtype, parent, mass, h, inertia_o, M)
    return M


@jit
def cholesky_factor(M):
    """L, lower triangular, with L L^T = M for symmetric positive definite M; raises if M is
    not SPD."""
    n = M.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            raise ValueError("mass matrix is not positive definite")
        L[j, j] = math.sqrt(d)
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    return L


@jit
def cholesky_apply(L, b):
    """x with L L^T x = b, by the two triangular solves."""
    n = b.shape[0]
    y = np.empty(n)
    for i in range(n):  # L y = b
        s = b[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    x = np.empty(n)
    for i in range(n - 1, -1, -1):  # L^T x = y
        s = y[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]
    return x


@jit
def cholesky_solve(M, b):
    """Solve M x = b for symmetric positive definite M by Cholesky; raises if M is not SPD."""
    return cholesky_apply(cholesky_factor(M), b)


@jit
def joint_inertias(R0, p0, axis, jtype, parent, mass, h, inertia_o, q):
    """(n,) kg m^2 or kg: each joint's inertia with the other joints free, 1 / (M(q)^-1)_jj,
    the inertia a torque on that joint alone accelerates (M by the composite-rigid-body pass)."""
    n = q.shape[0]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    M = np.empty((n, n))
    _mass_matrix_crba(R, p, axis, jtype, parent, mass, h, inertia_o, M)
    L = cholesky_factor(M)
    unit, out = np.zeros(n), np.empty(n)
    for j in range(n):
        unit[j] = 1.0
        out[j] = 1.0 / cholesky_apply(L, unit)[j]
        unit[j] = 0.0
    return out


@jit
def forward_dynamics(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, tau, a0, f_tip):
    """qdd = M(q)^-1 (tau - ID(q, qd, 0)) by a Cholesky solve, M by the composite-rigid-body
    pass (equal to the n inverse-dynamics columns to round-off, and n times fewer passes)."""
    n = q.shape[0]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    bias = np.empty(n)
    rnea(R, p, axis, jtype, parent, mass, h, inertia_o, qd, np.zeros(n), a0, f_tip, bias,
         np.empty((5, n, 3)))
    M = np.empty((n, n))
    _mass_matrix_crba(R, p, axis, jtype, parent, mass, h, inertia_o, M)
    return cholesky_solve(M, tau - bias)


@jit
def energies(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, g):
    """(kinetic J, potential J) from link velocities and world positions; g (3,) base frame.

    Kinetic: sum over bodies of 1/2 (m v.v + 2 v.(w x h) + w.I_o w), v the frame origin velocity.
    Potential: -sum m g.x_com, zero at the base frame origin.
    """
    n = q.shape[0]
    R, p, Rw, pw = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    body_poses(R, p, parent, Rw, pw)
    velocity = np.empty((2, n, 3))  # w, v of each body, in its frame
    kinetic, potential = 0.0, 0.0
    G = (g[0], g[1], g[2])
    for i in range(n):
        j = parent[i]
        w, v = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if j >= 0:
            w, v = _vec(velocity[0], j), _vec(velocity[1], j)
        a, pi = _vec(axis, i), _vec(p, i)
        v = _mul_t(R, i, _add(v, _cross(w, pi)))
        w = _mul_t(R, i, w)
        if jtype[i] == PRISMATIC:
            v = _add(v, _scale(a, qd[i]))
        else:
            w = _add(w, _scale(a, qd[i]))
        for k in range(3):
            velocity[0, i, k], velocity[1, i, k] = w[k], v[k]
        hi = _vec(h, i)
        kinetic += 0.5 * (mass[i] * _dot(v, v) + 2.0 * _dot(v, _cross(w, hi))
                          + _dot(w, _mul(inertia_o, i, w)))
        # m * COM in the base frame
        potential -= _dot(G, _add(_scale(_vec(pw, i), mass[i]), _mul(Rw, i, hi)))
    return kinetic, potential


@jit
def mass_matrix_times_plus_bias(R0, p0, axis, jtype, parent, mass, h, inertia_o, q, qd, v, a0):
    """M(q) v + ID(q, qd, 0) in one call: poses once, the n columns of M by ID with qdd = e_j,
    the bias by one more pass. The computed-torque law's whole model cost."""
    n = q.shape[0]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    M = np.empty((n, n))
    _mass_matrix_at(R, p, axis, jtype, parent, mass, h, inertia_o, M)
    tau = np.empty(n)
    rnea(R, p, axis, jtype, parent, mass, h, inertia_o, qd, np.zeros(n), a0, np.zeros(6), tau,
         np.empty((5, n, 3)))
    for i in range(n):
        for j in range(n):
            tau[i] += M[i, j] * v[j]
    return tau


# ---------------------------------------------------------------- kinematics (over parent[])
# These walk a parent index per body (parent[i] < i, -1 for the base), so a chain (parent =
# i - 1) and a tree are the same code. Frames: Rw[i], pw[i] are body i's pose in the base
# frame; a link's frame is its body's frame composed with the link's fixed pose in it
# (Chain.frame). Spatial vectors are [linear (3); angular (3)], as Pinocchio's.

WORLD, LOCAL, LOCAL_WORLD_ALIGNED = range(3)  # Pinocchio's ReferenceFrame, by its order


@jit
def body_poses(R, p, parent, Rw, pw):
    """Bodies' poses in their parents' frames (joint_poses' R (n, 3, 3), p (n, 3)) -> in the
    base frame: fills Rw (n, 3, 3), pw (n, 3)."""
    for i in range(p.shape[0]):
        j = parent[i]
        for r in range(3):
            if j < 0:
                for c in range(3):
                    Rw[i, r, c] = R[i, r, c]
                pw[i, r] = p[i, r]
            else:
                for c in range(3):
                    Rw[i, r, c] = Rw[j, r, 0] * R[i, 0, c] + Rw[j, r, 1] * R[i, 1, c] + Rw[j, r, 2] * R[i, 2, c]
                pw[i, r] = Rw[j, r, 0] * p[i, 0] + Rw[j, r, 1] * p[i, 1] + Rw[j, r, 2] * p[i, 2] + pw[j, r]


@jit
def frame_placement(Rw, pw, body, R_off, p_off, Rf, pf):
    """The pose (Rf (3, 3), pf (3,), filled) in the base frame of a frame fixed to `body` at
    (R_off, p_off) in that body's frame."""
    for r in range(3):
        for c in range(3):
            Rf[r, c] = Rw[body, r, 0] * R_off[0, c] + Rw[body, r, 1] * R_off[1, c] + Rw[body, r, 2] * R_off[2, c]
        pf[r] = Rw[body, r, 0] * p_off[0] + Rw[body, r, 1] * p_off[1] + Rw[body, r, 2] * p_off[2] + pw[body, r]


@jit
def frame_jacobian_at(Rw, pw, axis, jtype, parent, body, Rf, pf, reference, J):
    """Fill J (6, n): the frame's spatial velocity per joint rate, in `reference`:
    LOCAL_WORLD_ALIGNED, the velocity of the frame origin pf and the angular velocity, in base
    axes; LOCAL, the same in the frame's own axes (Rf); WORLD, the velocity of the point at the
    base origin moving with the frame, in base axes. A joint that does not move the body (not
    one of its ancestors) has a zero column."""
    n = J.shape[1]
    for r in range(6):
        for c in range(n):
            J[r, c] = 0.0
    j = body
    while j >= 0:
        z = _mul(Rw, j, _vec(axis, j))
        if jtype[j] == PRISMATIC:
            lin, ang = z, (0.0, 0.0, 0.0)
        else:
            at = (0.0, 0.0, 0.0) if reference == WORLD else (pf[0], pf[1], pf[2])
            lin, ang = _cross(z, (at[0] - pw[j, 0], at[1] - pw[j, 1], at[2] - pw[j, 2])), z
        if reference == LOCAL:  # Rf^T (lin, ang)
            lin = (Rf[0, 0] * lin[0] + Rf[1, 0] * lin[1] + Rf[2, 0] * lin[2],
                   Rf[0, 1] * lin[0] + Rf[1, 1] * lin[1] + Rf[2, 1] * lin[2],
                   Rf[0, 2] * lin[0] + Rf[1, 2] * lin[1] + Rf[2, 2] * lin[2])
            ang = (Rf[0, 0] * ang[0] + Rf[1, 0] * ang[1] + Rf[2, 0] * ang[2],
                   Rf[0, 1] * ang[0] + Rf[1, 1] * ang[1] + Rf[2, 1] * ang[2],
                   Rf[0, 2] * ang[0] + Rf[1, 2] * ang[1] + Rf[2, 2] * ang[2])
        for k in range(3):
            J[k, j], J[3 + k, j] = lin[k], ang[k]
        j = parent[j]


@jit
def frame_bias_acceleration(Rw, pw, axis, jtype, parent, qd, body, pf, out):
    """Fill out (6,): J-dot qd of the frame, in base axes: the classical acceleration of its
    origin pf and its angular acceleration when qdd = 0 and gravity is off. Forward over the
    bodies (parents first), each body's angular velocity w, angular acceleration dw and the
    acceleration a of its origin:
      revolute i:  w = w_p + z qd, dw = dw_p + w_p x z qd, a = a_p + dw_p x r + w_p x (w_p x r)
      prismatic i: w = w_p, dw = dw_p, a = a_p + dw_p x r + w_p x (w_p x r) + 2 w_p x z qd
    with z the joint axis and r = pw[i] - pw[parent] in base axes."""
    n = qd.shape[0]
    state = np.zeros((3, n, 3))  # w, dw, a per body, base axes
    for i in range(body + 1):
        j = parent[i]
        w, dw, a, o = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if j >= 0:
            w, dw, a, o = _vec(state[0], j), _vec(state[1], j), _vec(state[2], j), _vec(pw, j)
        r = (pw[i, 0] - o[0], pw[i, 1] - o[1], pw[i, 2] - o[2])
        a = _add(a, _add(_cross(dw, r), _cross(w, _cross(w, r))))
        z = _mul(Rw, i, _vec(axis, i))
        if jtype[i] == PRISMATIC:
            a = _add(a, _scale(_cross(w, z), 2.0 * qd[i]))
        else:
            wz = _scale(z, qd[i])
            dw = _add(dw, _cross(w, wz))
            w = _add(w, wz)
        for k in range(3):
            state[0, i, k], state[1, i, k], state[2, i, k] = w[k], dw[k], a[k]
    w, dw, a = _vec(state[0], body), _vec(state[1], body), _vec(state[2], body)
    r = (pf[0] - pw[body, 0], pf[1] - pw[body, 1], pf[2] - pw[body, 2])
    a = _add(a, _add(_cross(dw, r), _cross(w, _cross(w, r))))
    for k in range(3):
        out[k], out[3 + k] = a[k], dw[k]


@jit
def frame_pass(R0, p0, axis, jtype, parent, q, body, R_off, p_off, reference):
    """One kinematics pass for a frame fixed to `body`: (R, p) the bodies' poses in their
    parents' frames, (Rw, pw) in the base frame, (Rf, pf) the frame's pose in the base frame
    and J (6, n) its Jacobian in `reference`."""
    n = q.shape[0]
    R, p, Rw, pw = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    body_poses(R, p, parent, Rw, pw)
    Rf, pf, J = np.empty((3, 3)), np.empty(3), np.empty((6, n))
    frame_placement(Rw, pw, body, R_off, p_off, Rf, pf)
    frame_jacobian_at(Rw, pw, axis, jtype, parent, body, Rf, pf, reference, J)
    return R, p, Rw, pw, Rf, pf, J


@jit
def frame_kinematics(R0, p0, axis, jtype, parent, q, body, R_off, p_off, reference):
    """Pose (Rf (3, 3), pf (3,)) in the base frame and Jacobian J (6, n) in `reference` of a
    frame fixed to `body`, in one pass."""
    _, _, _, _, Rf, pf, J = frame_pass(R0, p0, axis, jtype, parent, q, body, R_off, p_off,
                                       reference)
    return Rf, pf, J


@jit
def frame_acceleration(R0, p0, axis, jtype, parent, q, qd, body, R_off, p_off):
    """J-dot qd (6,) of a frame, base axes (frame_bias_acceleration), and the frame's Rf."""
    n = q.shape[0]
    R, p, Rw, pw = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((n, 3))
    joint_poses(R0, p0, axis, jtype, q, R, p)
    body_poses(R, p, parent, Rw, pw)
    Rf, pf, out = np.empty((3, 3)), np.empty(3), np.empty(6)
    frame_placement(Rw, pw, body, R_off, p_off, Rf, pf)
    frame_bias_acceleration(Rw, pw, axis, jtype, parent, qd, body, pf, out)
    return out, Rf


@jit
def symmetric_eigen(A):
    """(s (m,), V (m, m)): the eigenvalues and eigenvectors (columns) of a symmetric A, by
    cyclic Jacobi rotations (no LAPACK: numba's needs SciPy)."""
    m = A.shape[0]
    a, V = A.copy(), np.eye(m)
    scale = 0.0
    for i in range(m):
        scale = max(scale, abs(a[i, i]))
    for _ in range(60):
        off = 0.0
        for i in range(m):
            for k in range(i + 1, m):
                off += a[i, k] * a[i, k]
        if off <= (1e-30 * scale) ** 2:
            break
        for i in range(m):
            for k in range(i + 1, m):
                if a[i, k] == 0.0:
                    continue
                theta = (a[k, k] - a[i, i]) / (2.0 * a[i, k])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for r in range(m):  # a <- a P, then P^T a; V <- V P
                    x, y = a[r, i], a[r, k]
                    a[r, i], a[r, k] = c * x - s * y, s * x + c * y
                for r in range(m):
                    x, y = a[i, r], a[k, r]
                    a[i, r], a[k, r] = c * x - s * y, s * x + c * y
                for r in range(m):
                    x, y = V[r, i], V[r, k]
                    V[r, i], V[r, k] = c * x - s * y, s * x + c * y
    s = np.empty(m)
    for i in range(m):
        s[i] = a[i, i]
    return s, V


@jit
def compose_eigen(V, gain, out):
    """Fill out (m, m) with V diag(gain) V^T."""
    m = V.shape[0]
    for r in range(m):
        for c in range(m):
            total = 0.0
            for i in range(m):
                total += V[r, i] * gain[i] * V[c, i]
            out[r, c] = total
    return out


@jit
def damped_gains(s, damping):
    """The eigenvalues of the damped least-squares inverse: s / (s^2 + damping^2), so 1 / s far
    from zero (s >> damping) and falling to 0 towards it instead of growing without bound;
    with damping 0 the pseudo-inverse's (below 1e-12 of the largest: 0)."""
    largest = 0.0
    for i in range(s.shape[0]):
        largest = max(largest, s[i])
    gain = np.empty(s.shape[0])
    for i in range(s.shape[0]):
        if damping > 0.0:
            gain[i] = max(s[i], 0.0) / (s[i] * s[i] + damping * damping)
        else:
            gain[i] = 1.0 / s[i] if s[i] > 1e-12 * largest else 0.0
    return gain


@jit
def damped_inverse(A, damping, out):
    """Fill out (m, m) with the damped least-squares inverse of a symmetric positive
    semi-definite A (damped_gains on its eigenvalues)."""
    s, V = symmetric_eigen(A)
    return compose_eigen(V, damped_gains(s, damping), out)


@jit
def rotation_log(R):
    """Rotation matrix (3, 3) -> rotation vector (3,), angle in [0, pi] times unit axis (the
    log map of SO(3)); near pi the axis comes from the symmetric part, its sign from the skew
    part."""
    cos = min(max(0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0), -1.0), 1.0)
    angle = math.acos(cos)
    skew = (R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1])
    if angle < 1e-6:  # sin(angle) / angle -> 1
        return _scale(skew, 0.5 + angle * angle / 12.0)
    if angle < math.pi - 1e-3:
        return _scale(skew, 0.5 * angle / math.sin(angle))
    # near pi: the symmetric part is cos I + (1 - cos) a a^T, exactly; a from its largest column
    B = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            B[r, c] = (0.5 * (R[r, c] + R[c, r]) - (cos if r == c else 0.0)) / (1.0 - cos)
    k = 0
    for i in range(1, 3):
        if B[i, i] > B[k, k]:
            k = i
    axis = _scale((B[0, k], B[1, k], B[2, k]), 1.0 / math.sqrt(B[k, k]))
    if _dot(axis, skew) < 0:
        axis = _scale(axis, -1.0)
    return _scale(axis, angle)


@jit
def operational_space(L, J, damping):
    """(M^-1 J^T (n, m), Lambda (m, m), its eigenvalues (m,) and eigenvectors V (m, m)) of a
    task Jacobian J (m, n), given L the Cholesky factor of M (cholesky_factor): Lambda =
    (J M^-1 J^T)^-1, the task-space inertia, by the damped inverse (bounded at singular
    poses)."""
    m, n = J.shape
    MinvJt = np.empty((n, m))
    for k in range(m):
        MinvJt[:, k] = cholesky_apply(L, J[k].copy())
    A = np.zeros((m, m))
    for r in range(m):
        for c in range(m):
            total = 0.0
            for i in range(n):
                total += J[r, i] * MinvJt[i, c]
            A[r, c] = total
    for r in range(m):  # symmetric to the last bit, for the eigen-decomposition
        for c in range(r + 1, m):
            A[r, c] = A[c, r] = 0.5 * (A[r, c] + A[c, r])
    s, V = symmetric_eigen(A)
    gain = damped_gains(s, damping)
    return MinvJt, compose_eigen(V, gain, np.empty((m, m))), gain, V
