"""One simulator step: the dynamics by RK4 with the passive torques that are not stiff, then
the rest of them (stiff damping, friction where a joint stops or turns, position stops)
implicitly, as MuJoCo does. Why this scheme, and what it guarantees:
dyn_control.sim.simulation's docstring.
"""

import math

import numpy as np

from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.linalg import (
    cholesky_apply,
    cholesky_factor,
    cholesky_solve,
    inverse_diagonal,
)
from dyn_control.kernels.mass_matrix import bias_and_factor, crba, forward_dynamics, poses
from dyn_control.kernels.newton_euler import NO_WRENCH


@jit
def passive_velocity(M, v_free, damping, friction, dt, v_min, v_max, v0, split):
    """Velocity after one step of joint damping, Coulomb friction and position limits, all
    taken implicitly (as impulses over the step).

    Solves (M + dt B) v = M v_free - dt f + mu: |f_i| <= friction_i with f_i = friction_i
    sign(v_i) where v_i != 0 (a joint inside its band sticks), and mu the impulse of
    a joint stop, which keeps v_i within [v_min_i, v_max_i] (0 on the side of a limit the joint
    is at, infinite otherwise). That is the minimum over the box of the strictly convex
    1/2 v^T (M + dt B) v - v^T M v_free + dt sum friction_i |v_i|, found exactly by active
    sets (active_set), or where they do not settle by coordinate descent (soft thresholding,
    then clipping), which converges for any positive definite M.
    At the minimum v^T M v <= v_free^T M v_free: the solve only takes kinetic energy out.
    With `split`, a joint moving at the start (v0_i != 0) keeps its friction's sign,
    friction_i sign(v0_i), for the share of the step before its velocity reaches zero (from
    the velocity it would end with if that sign held the whole step: all of it when that
    keeps its direction, else a linear crossing), and only the rest is the bounded f above:
    exact for a joint that stops or turns under a constant torque, where taking the whole
    step's friction at its end velocity is off by up to twice its impulse. That share is a
    known impulse against the start's motion, outside the bound above; the energy of arms
    with no input is checked over the step instead (test_passive_physics.py).
    M: (n, n); v_free, damping (N m s/rad), friction (N m), v_min, v_max, v0: (n,). Returns v.
    """
    n = v_free.shape[0]
    A = M.copy()
    b = np.empty(n)
    band = np.empty(n)
    for i in range(n):
        A[i, i] += dt * damping[i]
        s = 0.0
        for j in range(n):
            s += M[i, j] * v_free[j]
        b[i] = s
        band[i] = dt * friction[i]
    L = cholesky_factor(A, np.empty((n, n)))  # once, for both solves
    if split:
        held = b.copy()
        for i in range(n):
            if v0[i] != 0.0:
                held[i] -= band[i] * math.copysign(1.0, v0[i])
        v_held = cholesky_apply(L, held, np.empty(n))
        for i in range(n):
            if v0[i] != 0.0 and band[i] > 0.0:
                before = 1.0 if v_held[i] * v0[i] >= 0.0 else v0[i] / (v0[i] - v_held[i])
                b[i] -= before * band[i] * math.copysign(1.0, v0[i])
                band[i] *= 1.0 - before
    v = cholesky_apply(L, b, np.empty(n))  # the answer when no joint has friction left or is
    smooth = True  # at a stop
    for i in range(n):
        smooth = smooth and band[i] == 0.0 and v_min[i] <= v[i] <= v_max[i]
    if smooth or active_set(A, b, band, v_min, v_max, v):
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
            new = ((r - band[i]) / A[i, i] if r > band[i]
                   else ((r + band[i]) / A[i, i] if r < -band[i] else 0.0))
            new = min(max(new, v_min[i]), v_max[i])
            change = max(change, abs(new - v[i]))
            v[i] = new
        if change <= 1e-14 * largest:
            break
    return v


@jit
def active_set(A, b, band, v_min, v_max, v):
    """passive_velocity's minimum exactly, by active sets: guess which joints end the step
    at zero velocity (stuck in their friction, or held at a stop) and the direction of the
    others, solve (A v)_i = b_i - band_i sign(v_i) on the moving ones, and correct the guess
    where the answer breaks it (a moving joint that changed direction stops; a stopped one
    whose residual b - A v exceeds its friction in a direction it may move in moves), until
    nothing breaks it: then v (n,) holds the minimum and it returns True. The start is the
    solve without friction and stops, v on entry. Coordinate descent, which passive_velocity
    falls back on when this has not settled in 4 n rounds, cost 10 us of a 30 us step
    iterating to 1e-14 where a light joint stops within it (xArm7's wrist).
    """
    n = b.shape[0]
    direction = np.empty(n)  # +1, -1, or 0: at zero velocity
    for i in range(n):
        direction[i] = (1.0 if v[i] > 0.0 and v_max[i] > 0.0 else
                        -1.0 if v[i] < 0.0 and v_min[i] < 0.0 else 0.0)
    scale = 1e-300
    for i in range(n):
        scale = max(scale, abs(b[i]), band[i])
    tolerance = 1e-12 * scale
    moving, sub, rhs, solved = np.empty(n, np.int64), np.empty((n, n)), np.empty(n), np.empty(n)
    for _ in range(4 * n):
        m = 0
        for i in range(n):
            if direction[i] != 0.0:
                moving[m] = i
                m += 1
        for r in range(m):
            i = moving[r]
            rhs[r] = b[i] - band[i] * direction[i]
            for c in range(m):
                sub[r, c] = A[i, moving[c]]
        for i in range(n):
            v[i] = 0.0
        if m > 0:
            L = cholesky_factor(sub[:m, :m], np.empty((m, m)))
            x = cholesky_apply(L, rhs[:m], solved[:m])
            for r in range(m):
                v[moving[r]] = x[r]
        settled = True
        for i in range(n):  # a moving joint on the wrong side of zero: friction would stop it
            if v[i] * direction[i] < 0.0:
                if band[i] == 0.0 and v_min[i] < v[i] < v_max[i]:
                    direction[i] = -direction[i]  # no friction to turn against: same answer
                else:
                    direction[i], settled = 0.0, False
        if not settled:
            continue
        for i in range(n):  # a stopped joint that its residual would move
            if direction[i] == 0.0:
                g = b[i]
                for j in range(n):
                    g -= A[i, j] * v[j]
                if g > band[i] + tolerance and v_max[i] > 0.0:
                    direction[i], settled = 1.0, False
                elif g < -band[i] - tolerance and v_min[i] < 0.0:
                    direction[i], settled = -1.0, False
        if settled:
            return True
    return False


# dt B_i (M^-1)_ii, a joint's damping over one step against its effective inertia, up to which
# the RK4 stages take the damping: RK4 decays a damped joint alone by its Taylor polynomial of
# exp(-z), within 3e-4 of it here (stable up to 2.79), and beyond it the step takes it implicitly
STAGED_DAMPING_MAX = 0.5


@jit
def staged(dt, damping, inertia):
    """Whether the RK4 stages take a joint's damping (N m s/rad) over a step dt (s), given the
    joint's inertia with the others free: dt B / I at most STAGED_DAMPING_MAX. The laws ask it
    too, to cancel the damping as the step takes it.
    """
    return dt * damping <= STAGED_DAMPING_MAX * inertia


@jit
def staged_passive(model, q, qd, tau, damping, friction, dt, staged_damping, implicit_damping,
                   held, bias):
    """What the RK4 stages take of the passive torques: staged_damping (n,) gets the damping of
    each joint where dt B_i (M^-1)_ii is at most STAGED_DAMPING_MAX (implicit_damping the
    others'), which the stages integrate at their own velocities; held (n,) the rest, friction
    and stiff damping, as the torque an implicit step from the start predicts (its impulse
    over dt), which the stages hold. Without it, a joint whose friction or damping only the
    end's solve takes runs away within the stages under the torque that compensates them, and
    the joints it drags take their staged damping at velocities they never reach.
    Returns whether there is any passive torque; then bias (n,) holds ID(q, qd, 0) and the
    workspace M(q) and its factor, which the first RK4 stage reuses (_first_stage).
    """
    n = q.shape[0]
    passive = False
    for i in range(n):
        staged_damping[i], implicit_damping[i], held[i] = 0.0, damping[i], 0.0
        passive = passive or damping[i] > 0.0 or friction[i] > 0.0
    if not passive:
        return False
    m, d = views.model(model[0], model[1], model[2]), views.data(model[3], model[4], model[5])
    free = np.empty(n)
    bias_and_factor(m, d, q, qd, NO_WRENCH, bias)  # forward dynamics, its bias kept
    for i in range(n):
        free[i] = tau[i] - bias[i]
    cholesky_apply(d.L, free, free)
    inverse = np.empty(n)
    inverse_diagonal(d.L, np.empty(n), inverse)
    for i in range(n):
        free[i] = qd[i] + dt * free[i]
        if damping[i] > 0.0 and staged(dt, damping[i], 1.0 / inverse[i]):
            staged_damping[i], implicit_damping[i] = damping[i], 0.0
    unbounded = np.full(n, np.inf)
    predicted = passive_velocity(d.M, free, damping, friction, dt, -unbounded, unbounded, qd, True)
    for i in range(n):
        impulse = 0.0
        for j in range(n):
            impulse += d.M[i, j] * (free[j] - predicted[j])
        held[i] = -(impulse / dt - staged_damping[i] * predicted[i])
    return True


@jit
def _stage(model, q, v, tau, staged_damping, held, a):
    """One RK4 stage's acceleration a (n,) at (q, v): tau plus the staged passive torques."""
    forward_dynamics(*model, q, v, tau - staged_damping * v + held, NO_WRENCH, a)


@jit
def _first_stage(d, qd, tau, staged_damping, held, bias, a):
    """_stage at the step's start from what staged_passive left (bias, M's factor in d.L):
    the same operations on the same numbers, without a second forward dynamics.
    """
    pushed = tau - staged_damping * qd + held
    for i in range(qd.shape[0]):
        pushed[i] -= bias[i]
    cholesky_apply(d.L, pushed, a)


@jit
def simulation_step(mvec, mrot, ints, vecs, rots, mats, q, qd, tau, damping, friction, lower, upper,
                    dt,
                    rk4):
    """One step of the arm under joint torques tau -> (q, qd) after dt.

    RK4 (rk4 true): the stages integrate tau, gravity and Coriolis together with the passive
    torques that are smooth over the step (staged_passive: damping that is not stiff, and the
    friction of a joint that keeps moving, held at its start's sign); passive_velocity then
    takes, with M at the new position, the stiff damping implicitly, the friction of the
    joints that stop or turn within the step (split at the stop) and the stops of joints that
    reached a position limit (lower, upper: (n,), infinite for none), after taking the held
    friction back out, so that it decides where each joint stops. The position takes half
    of that solve's velocity change, as if it grew linearly over the step (RK4's position
    already holds dt^2/2 of the staged acceleration). Where nothing stops, turns or is stiff,
    the step is RK4's alone.
    Explicit Euler (rk4 false): the smooth dynamics only, then every passive torque implicitly,
    and the position takes all of the velocity change (q += dt v, semi-implicit); first order.
    Either way a joint that sticks stays exactly where it was. A joint past a limit is put back
    on it.
    """
    n = q.shape[0]
    model = (mvec, mrot, ints, vecs, rots, mats)
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    if rk4:
        staged, implicit, held, bias = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        k1a, k2a, k3a, k4a = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        k1v = qd
        if staged_passive(model, q, qd, tau, damping, friction, dt, staged, implicit, held, bias):
            _first_stage(d, qd, tau, staged, held, bias, k1a)
        else:
            _stage(model, q, k1v, tau, staged, held, k1a)
        k2v = qd + 0.5 * dt * k1a
        _stage(model, q + 0.5 * dt * k1v, k2v, tau, staged, held, k2a)
        k3v = qd + 0.5 * dt * k2a
        _stage(model, q + 0.5 * dt * k2v, k3v, tau, staged, held, k3a)
        k4v = qd + dt * k3a
        _stage(model, q + dt * k3v, k4v, tau, staged, held, k4a)
        q_free = q + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        v_staged = qd + dt / 6.0 * (k1a + 2.0 * k2a + 2.0 * k3a + k4a)
        share = 0.5
    else:
        qdd = np.empty(n)
        forward_dynamics(*model, q, qd, tau, NO_WRENCH, qdd)
        v_staged = qd + dt * qdd
        q_free = q + dt * v_staged
        implicit, held = damping, np.zeros(n)
        share = 1.0
    v_min, v_max = np.full(n, -np.inf), np.full(n, np.inf)
    solve = False
    for i in range(n):
        if q_free[i] <= lower[i]:
            v_min[i] = 0.0
        if q_free[i] >= upper[i]:
            v_max[i] = 0.0
        solve = (solve or v_min[i] == 0.0 or v_max[i] == 0.0 or implicit[i] > 0.0
                 or friction[i] > 0.0)
    if not solve:  # only the staged damping, no stop reached: RK4's step alone
        return q_free, v_staged
    poses(m, d, q_free)
    crba(m, d, d.M)
    for i in range(n):  # the held torques' impulse, back out: the solve decides it
        held[i] *= dt
    v_free = v_staged - cholesky_solve(d.M, held)
    v = passive_velocity(d.M, v_free, implicit, friction, dt, v_min, v_max, qd, rk4)
    q_next = q_free + share * dt * (v - v_staged)
    for i in range(n):
        if qd[i] == 0.0 and v[i] == 0.0:  # stuck the whole step: the stages' path was not its
            q_next[i] = q[i]
        q_next[i] = min(max(q_next[i], lower[i]), upper[i])
    return q_next, v


@jit
def at_stop(q, lower, upper):
    """Whether a joint is on one of its stops: q at or beyond lower or upper (each (n,))."""
    for i in range(q.shape[0]):
        if q[i] <= lower[i] or q[i] >= upper[i]:
            return True
    return False
