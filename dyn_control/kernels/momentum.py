"""The momentum observer's kernels (dyn_control.controller.observer): the generalized momentum p =
M(q) qd and C(q, qd)^T qd from one pass, with g(q) beside them; the observer's update; and the
wrench at a frame that explains joint torques.

C^T qd does not depend on how C is factored: with T = 1/2 qd^T M qd, the Lagrange equations give
C qd = M-dot qd - dT/dq, and M-dot = C + C^T for the Christoffel C, so C^T qd = dT/dq. Both come
from the spatial momentum H_k of the subtree that joint k carries, in base axes about the base
origin (Featherstone's notation, S_k joint k's motion axis, v_par the velocity of its parent):
- p_k = S_k . H_k;
- dT/dq_k = -S_k . (v_par x* H_k): turning joint k turns the axes of the joints beyond it
  (dS_j/dq_k = S_k x S_j) and the bodies' inertias with them; what is left of T's change is
  the parent's velocity seen from the turned subtree.
"""

import math

import numpy as np

from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.frames import (
    LOCAL_WORLD_ALIGNED,
    frame_jacobian,
    frame_placement,
    kinematics,
)
from dyn_control.kernels.linalg import cholesky_into, symmetric_eigen
from dyn_control.kernels.newton_euler import NO_WRENCH, rnea
from dyn_control.kernels.so3 import add, cross, dot, mul, mul_t, row, scale
from dyn_control.model.layout import PRISMATIC


@jit
def momentum_terms(mvec, mrot, ints, vecs, rots, mats, q, qd, p, ctqd, g):
    """Fill p = M(q) qd, ctqd = C(q, qd)^T qd and g (n,) (the model's gravity torques) at
    (q, qd). The workspace's w and dw blocks hold each body's spatial velocity (angular; the
    velocity of the body point at the base origin), f and mo its subtree's momentum (linear;
    angular about the base origin), all in base axes, until g's Newton-Euler pass reuses them.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    axis, jtype, parent, mass, h, inertia_o = m.axis, m.jtype, m.parent, m.mass, m.h, m.inertia_o
    Rw, pw, w_all, v_all, P_all, L_all = d.Rw, d.pw, d.w, d.dw, d.f, d.mo
    n = q.shape[0]
    zero = (0.0, 0.0, 0.0)
    for i in range(n):  # forward: velocities, and each body's own momentum
        j = parent[i]
        w, v = (zero, zero) if j < 0 else (row(w_all, j), row(v_all, j))
        a, o = mul(Rw, i, row(axis, i)), row(pw, i)
        if jtype[i] == PRISMATIC:
            v = add(v, scale(a, qd[i]))
        else:
            w = add(w, scale(a, qd[i]))
            v = add(v, scale(cross(o, a), qd[i]))
        wb = mul_t(Rw, i, w)  # body axes: the angular velocity, the body origin's velocity
        vb = mul_t(Rw, i, add(v, cross(w, o)))
        hi = row(h, i)
        P = mul(Rw, i, add(scale(vb, mass[i]), cross(wb, hi)))
        L = add(mul(Rw, i, add(mul(inertia_o, i, wb), cross(hi, vb))), cross(o, P))
        for k in range(3):
            w_all[i, k], v_all[i, k], P_all[i, k], L_all[i, k] = w[k], v[k], P[k], L[k]
    for i in range(n - 1, -1, -1):  # backward: children first, so H_i is the whole subtree's
        j = parent[i]
        P, L = row(P_all, i), row(L_all, i)
        wp, vp = (zero, zero) if j < 0 else (row(w_all, j), row(v_all, j))
        a, o = mul(Rw, i, row(axis, i)), row(pw, i)
        moment, force = add(cross(wp, L), cross(vp, P)), cross(wp, P)  # v_par x* H
        if jtype[i] == PRISMATIC:
            p[i], ctqd[i] = dot(a, P), -dot(a, force)
        else:
            oa = cross(o, a)
            p[i] = dot(a, L) + dot(oa, P)
            ctqd[i] = -(dot(a, moment) + dot(oa, force))
        if j >= 0:
            for k in range(3):
                P_all[j, k] += P[k]
                L_all[j, k] += L[k]
    zeros = d.vectors[0]
    zeros[:] = 0.0
    rnea(m, d, zeros, zeros, m.a0, NO_WRENCH, g)


@jit
def observer_update(mvec, mrot, ints, vecs, rots, mats, q, qd, tau, damping, friction,
                    friction_velocity, dt, decay, started, memory, r):
    """One state of the momentum observer (dyn_control.controller.observer says what and why): r
    (n,) in place, when `started` (memory holds the previous state's) and dt > 0. memory (3, n): p,
    the known part of p-dot besides tau and damping (C^T qd - g - friction) and qd of the
    previous state, then of this one. The damping's impulse over the interval is dt B times the
    mean of qd at both ends (the trapezoid), as a continuous damper gives it and the simulator's
    RK4 stages integrate it (dyn_control.sim.simulation); taking it at the end velocity alone read
    0.5 B qd-dot dt as a push, 0.76 N on Tiago's torso (1000 N s/m) sagging at 1.5 m/s^2.
    """
    d = views.data(vecs, rots, mats)
    p, ctqd, g = d.vectors[1], d.vectors[2], d.vectors[3]
    momentum_terms(mvec, mrot, ints, vecs, rots, mats, q, qd, p, ctqd, g)
    for i in range(q.shape[0]):
        slip = min(max(qd[i] / friction_velocity, -1.0), 1.0)
        known = ctqd[i] - g[i] - friction[i] * slip
        if started and dt > 0:
            y = p[i] - memory[0, i] - dt * (tau[i] + 0.5 * (known + memory[1, i])
                                            - 0.5 * damping[i] * (qd[i] + memory[2, i]))
            r[i] = decay * r[i] + (1.0 - decay) / dt * y
        memory[0, i], memory[1, i], memory[2, i] = p[i], known, qd[i]


@jit
def frame_wrench(mvec, mrot, ints, vecs, rots, mats, q, body, R_off, p_off, torques,
                 singular_value, F):
    """Fill F (6,) [force; moment] at the frame fixed to `body` at (R_off, p_off), base axes,
    with (J^T)^+ torques, J its Jacobian (LOCAL_WORLD_ALIGNED) at q, the singular values of J
    below `singular_value` dropped; returns whether any was.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    return _wrench(m, d, body, R_off, p_off, torques, singular_value, F)


@jit
def _wrench(m, d, body, R_off, p_off, torques, singular_value, F):
    """frame_wrench at the workspace's poses (kinematics has filled them). (J^T)^+ =
    (J J^T)^+ J, J J^T (6 x 6) having the squares of J's singular values as eigenvalues. Their
    smallest is at least 1 / trace((J J^T)^-1), which its Cholesky factor gives: above
    singular_value^2 nothing is dropped and the Cholesky solve is the answer; else (rarely: near
    a singularity, or fewer than 6 joints) the eigen-decomposition drops what is below.
    """
    Rf, pf, J = np.empty((3, 3)), np.empty(3), d.J
    frame_placement(d, body, R_off, p_off, Rf, pf)
    frame_jacobian(m, d, body, Rf, pf, LOCAL_WORLD_ALIGNED, J)
    n = J.shape[1]
    A, b = np.zeros((6, 6)), np.zeros(6)
    for i in range(6):
        for k in range(n):
            b[i] += J[i, k] * torques[k]
        for j in range(i + 1):
            for k in range(n):
                A[i, j] += J[i, k] * J[j, k]
            A[j, i] = A[i, j]
    if cholesky_solve_above(A, b, singular_value * singular_value, F):
        return False
    s, V = symmetric_eigen(A)
    singular = False
    for i in range(6):
        F[i] = 0.0
    for e in range(6):
        if s[e] <= singular_value * singular_value:
            singular = True
            continue
        along = 0.0
        for i in range(6):
            along += V[i, e] * b[i]
        for i in range(6):
            F[i] += V[i, e] * along / s[e]
    return singular


@jit
def cholesky_solve_above(A, b, smallest, x):
    """If the smallest eigenvalue of the symmetric A (6 x 6) is surely above `smallest` (its
    Cholesky factor L exists and 1 / |L^-1|_F^2 = 1 / trace(A^-1) is above), fill x with
    A^-1 b and return True; else False, x untouched.
    """
    L, Li = np.empty((6, 6)), np.empty((6, 6))
    if not cholesky_into(A, L):
        return False
    trace = 0.0  # |L^-1|_F^2, column by column of L^-1 (lower triangular)
    for c in range(6):
        for i in range(c, 6):
            s = 1.0 if i == c else 0.0
            for k in range(c, i):
                s -= L[i, k] * Li[k, c]
            Li[i, c] = s / L[i, i]
            trace += Li[i, c] * Li[i, c]
    if not trace * smallest < 1.0:
        return False
    y = np.empty(6)  # A^-1 b = L^-T (L^-1 b)
    for i in range(6):
        y[i] = 0.0
        for k in range(i + 1):
            y[i] += Li[i, k] * b[k]
    for i in range(6):
        x[i] = 0.0
        for k in range(i, 6):
            x[i] += Li[k, i] * y[k]
    return True


@jit
def beyond_friction(qd, friction, friction_velocity, decay, band, r, felt):
    """felt (n,): r less what friction may be holding. Inside a joint's friction band the
    modelled friction is friction * qd / friction_velocity, while the real one may be anything
    up to friction (a joint that sticks): up to friction * (1 - |slip|) of what r filtered
    cannot be told from it. r is a first-order filter, so that bound goes through the same
    filter: band (2, n) holds the filtered bound and the last state's, the larger of the two
    ends of the step taken as the step's (the filter's weights are positive, so the filtered
    bound bounds the filtered friction).
    """
    for i in range(r.shape[0]):
        slip = min(max(qd[i] / friction_velocity, -1.0), 1.0)
        now = friction[i] * (1.0 - abs(slip))
        band[0, i] = decay * band[0, i] + (1.0 - decay) * max(now, band[1, i])
        band[1, i] = now
        b = band[0, i]
        felt[i] = r[i] - b if r[i] > b else r[i] + b if r[i] < -b else 0.0


@jit
def first_over(values, levels):
    """The index of the first |value| over its level (levels > 0 only), or -1."""
    for i in range(values.shape[0]):
        if 0 < levels[i] < abs(values[i]):
            return i
    return -1


@jit
def observe(mvec, mrot, ints, vecs, rots, mats, q, qd, tau, damping, friction,
            friction_velocity, dt, decay, started, memory, r, band, felt, bodies, R_offs, p_offs,
            singular_value, forces, singular, joint_levels, force_levels, found):
    """The observe stage's tick in one call (controller.contact): observer_update, then, for each
    frame k (bodies, R_offs, p_offs; none: no wrench), the wrench of felt (r beyond friction:
    beyond_friction, which fills it) there into forces[k] and whether J was singular into
    singular[k]; then for each level (0: contact, 1: collision) the first joint whose |felt| is
    over joint_levels[level], else the first frame whose force's norm is over
    force_levels[level] (a level at 0 is off): found[level] = (1, joint) or (2, frame), (0, -1)
    for none. Returns how many frames were singular.
    """
    observer_update(mvec, mrot, ints, vecs, rots, mats, q, qd, tau, damping, friction,
                    friction_velocity, dt, decay, started, memory, r)
    beyond_friction(qd, friction, friction_velocity, decay, band, r, felt)
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    k, count = bodies.shape[0], 0
    for f in range(k):  # (observer_update's kinematics are still in the workspace)
        singular[f] = _wrench(m, d, bodies[f], R_offs[f], p_offs[f], felt, singular_value,
                              forces[f])
        count += singular[f]
    for level in range(2):
        found[level, 0], found[level, 1] = 0, -1
        i = first_over(felt, joint_levels[level])
        if i >= 0:
            found[level, 0], found[level, 1] = 1, i
            continue
        for f in range(k):
            norm = math.sqrt(forces[f, 0] ** 2 + forces[f, 1] ** 2 + forces[f, 2] ** 2)
            if 0 < force_levels[level] < norm:
                found[level, 0], found[level, 1] = 2, f
                break
    return count
