"""One simulator step: the smooth dynamics by RK4 (or explicit Euler), then the passive joints
(damping, Coulomb friction, position stops) implicitly, as MuJoCo does. Why this scheme, and
what it guarantees: dyn_control.sim.simulation's docstring.
"""

import numpy as np

from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.linalg import cholesky_solve
from dyn_control.kernels.mass_matrix import crba, forward_dynamics, poses
from dyn_control.kernels.newton_euler import NO_WRENCH


@jit
def passive_velocity(M, v_free, damping, friction, dt, v_min, v_max):
    """Velocity after one step of joint damping, Coulomb friction and position limits, all
    taken implicitly (as impulses over the step).

    Solves (M + dt B) v = M v_free - dt f + mu: |f_i| <= friction_i with f_i = friction_i
    sign(v_i) where v_i != 0 (a joint inside its friction band sticks), and mu the impulse of
    a joint stop, which keeps v_i within [v_min_i, v_max_i] (0 on the side of a limit the joint
    is at, infinite otherwise). That is the minimum over the box of the strictly convex
    1/2 v^T (M + dt B) v - v^T M v_free + dt sum friction_i |v_i|, found by exact coordinate
    descent (soft thresholding, then clipping), which converges for any positive definite M.
    At the minimum v^T M v <= v_free^T M v_free: the step only takes kinetic energy out.
    M: (n, n); v_free, damping (N m s/rad), friction (N m), v_min, v_max: (n,). Returns v (n,).
    """
    n = v_free.shape[0]
    A = M.copy()
    b = np.empty(n)
    for i in range(n):
        A[i, i] += dt * damping[i]
        s = 0.0
        for j in range(n):
            s += M[i, j] * v_free[j]
        b[i] = s
    v = cholesky_solve(A, b)  # the answer when no joint has friction or is at a stop
    smooth = True
    for i in range(n):
        smooth = smooth and friction[i] == 0.0 and v_min[i] <= v[i] <= v_max[i]
    if smooth:
        return v
    largest = 1e-300
    for i in range(n):
        largest = max(largest, abs(v[i]), abs(v_free[i]))
    for _ in range(10000):
        change = 0.0
        for i in range(n):
            r = b[i]
            for j in range(n):
                if j != i:
                    r -= A[i, j] * v[j]
            band = dt * friction[i]
            new = (r - band) / A[i, i] if r > band else ((r + band) / A[i, i] if r < -band else 0.0)
            new = min(max(new, v_min[i]), v_max[i])
            change = max(change, abs(new - v[i]))
            v[i] = new
        if change <= 1e-14 * largest:
            break
    return v


@jit
def simulation_step(mvec, mrot, ints, vecs, rots, mats, q, qd, tau, damping, friction, lower, upper,
                    dt,
                    rk4):
    """One step of the arm under joint torques tau -> (q, qd) after dt.

    The smooth dynamics (tau, gravity, Coriolis) is integrated by RK4 (rk4 true) or explicit
    Euler in velocity; damping, friction and the stops of joints that reached a position limit
    (lower, upper: (n,), infinite for none) then act implicitly through passive_velocity with M
    at the new position. After RK4 the position takes half the step's passive velocity change,
    as if that change grew linearly over the step (RK4's position already holds dt^2/2 of the
    free acceleration); after Euler it takes all of it (q += dt v, semi-implicit). Either way
    a joint that sticks stays exactly where it was, and a joint at its damping-limited speed
    tau/B moves dt tau/B. A joint past a limit is put back on it.
    """
    n = q.shape[0]
    model = (mvec, mrot, ints, vecs, rots, mats)
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    if rk4:
        k1a, k2a, k3a, k4a = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        k1v = qd
        forward_dynamics(*model, q, k1v, tau, NO_WRENCH, k1a)
        k2v = qd + 0.5 * dt * k1a
        forward_dynamics(*model, q + 0.5 * dt * k1v, k2v, tau, NO_WRENCH, k2a)
        k3v = qd + 0.5 * dt * k2a
        forward_dynamics(*model, q + 0.5 * dt * k2v, k3v, tau, NO_WRENCH, k3a)
        k4v = qd + dt * k3a
        forward_dynamics(*model, q + dt * k3v, k4v, tau, NO_WRENCH, k4a)
        q_free = q + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        v_free = qd + dt / 6.0 * (k1a + 2.0 * k2a + 2.0 * k3a + k4a)
        share = 0.5
    else:
        qdd = np.empty(n)
        forward_dynamics(*model, q, qd, tau, NO_WRENCH, qdd)
        v_free = qd + dt * qdd
        q_free = q + dt * v_free
        share = 1.0
    v_min, v_max = np.full(n, -np.inf), np.full(n, np.inf)
    for i in range(n):
        if q_free[i] <= lower[i]:
            v_min[i] = 0.0
        if q_free[i] >= upper[i]:
            v_max[i] = 0.0
    poses(m, d, q_free)
    crba(m, d, d.M)
    v = passive_velocity(d.M, v_free, damping, friction, dt, v_min, v_max)
    q_next = q_free + share * dt * (v - v_free)
    for i in range(n):
        q_next[i] = min(max(q_next[i], lower[i]), upper[i])
    return q_next, v
