"""The recursive Newton-Euler pass over the parent index, the inverse dynamics built on it (one
state, or N states on numba's threads), and the energies. Everything of body i is expressed in
body i's frame; wrenches are [force (3); moment (3)], the moment about the body frame origin.
"""

import numpy as np

from dyn_control.kernels import views
from dyn_control.kernels.compile import get_num_threads, jit, jit_parallel, prange
from dyn_control.kernels.frames import joint_poses, kinematics
from dyn_control.kernels.so3 import add, cross, dot, mul, mul_t, row, scale
from dyn_control.model.layout import PRISMATIC, ROTS, VECS, VECTORS

NO_WRENCH = np.zeros(6)  # f_tip when nothing acts at the tip (numba compiles it in as a constant)


@jit
def rnea(m, d, qd, qdd, a0, f_tip, tau):
    """One Newton-Euler pass at the workspace's joint poses (d.R, d.p: joint_poses filled
    them); writes tau (n,) N m or N. m, d: views.model, views.data. a0: (3,) linear
    acceleration of the base (minus gravity), base frame. f_tip: (6,) wrench that the last body
    (n - 1, the tip) exerts on the environment, in its frame. The bodies' w, dw, dv (forward
    pass) and the wrenches their children pass down (backward pass) are kept in the workspace.
    """
    axis, jtype, parent, mass, h, inertia_o = m.axis, m.jtype, m.parent, m.mass, m.h, m.inertia_o
    R, p = d.R, d.p
    w_all, dw_all, dv_all, f_all, m_all = d.w, d.dw, d.dv, d.f, d.mo
    n = qd.shape[0]
    for i in range(n):  # forward: velocities and accelerations, parents first
        j = parent[i]
        if j < 0:
            w, dw, dv = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (a0[0], a0[1], a0[2])
        else:
            w, dw, dv = row(w_all, j), row(dw_all, j), row(dv_all, j)
        a = row(axis, i)
        pi = row(p, i)
        dv = mul_t(R, i, add(add(dv, cross(dw, pi)), cross(w, cross(w, pi))))
        w = mul_t(R, i, w)
        dw = mul_t(R, i, dw)
        if jtype[i] == PRISMATIC:
            dv = add(dv, add(scale(cross(w, a), 2.0 * qd[i]), scale(a, qdd[i])))
        else:
            wj = scale(a, qd[i])
            dw = add(dw, add(cross(w, wj), scale(a, qdd[i])))
            w = add(w, wj)
        for k in range(3):
            w_all[i, k], dw_all[i, k], dv_all[i, k] = w[k], dw[k], dv[k]
            f_all[i, k], m_all[i, k] = 0.0, 0.0
    for k in range(3):
        f_all[n - 1, k], m_all[n - 1, k] = f_tip[k], f_tip[3 + k]
    for i in range(n - 1, -1, -1):  # backward: wrenches, children first
        w, dw, dv, hi = row(w_all, i), row(dw_all, i), row(dv_all, i), row(h, i)
        iw = mul(inertia_o, i, w)
        idw = mul(inertia_o, i, dw)
        # body wrench about its frame origin: f = m dv + dw x h + w x (w x h),
        # n = I_o dw + w x I_o w + h x dv, plus what the children pass down
        f = add(row(f_all, i),
                add(scale(dv, mass[i]), add(cross(dw, hi), cross(w, cross(w, hi)))))
        m = add(row(m_all, i), add(idw, add(cross(w, iw), cross(hi, dv))))
        a = row(axis, i)
        tau[i] = dot(a, f) if jtype[i] == PRISMATIC else dot(a, m)
        j = parent[i]
        if j >= 0:  # carry the wrench to the parent's frame origin
            pi = row(p, i)
            f = mul(R, i, f)
            m = add(mul(R, i, m), cross(pi, f))
            for k in range(3):
                f_all[j, k] += f[k]
                m_all[j, k] += m[k]


@jit
def inverse_dynamics(mvec, mrot, ints, vecs, rots, mats, q, qd, qdd, f_tip, tau):
    """Fill tau (n,): the torques that produce qdd at (q, qd) under the model's gravity, with
    the tip wrench f_tip (6,).
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    joint_poses(m.R0, m.p0, m.axis, m.jtype, q, d.R, d.p)
    rnea(m, d, qd, qdd, m.a0, f_tip, tau)


@jit
def inverse_dynamics_plain(mvec, mrot, ints, vecs, rots, mats, q, qd, qdd, tau):
    """inverse_dynamics under the model's gravity with no tip wrench, the call a control loop
    makes: fills tau and returns True, or returns False, touching nothing, when q, qd and qdd
    are not all of length n (the caller then says which). Its checks are here, not in Python,
    and it makes only the pass's views: what a call costs around the pass is most of it.
    """
    n = vecs.shape[1]
    if q.shape[0] != n or qd.shape[0] != n or qdd.shape[0] != n or tau.shape[0] != n:
        return False
    m, d = views.model(mvec, mrot, ints), views.newton_euler(vecs, rots, mats)
    joint_poses(m.R0, m.p0, m.axis, m.jtype, q, d.R, d.p)
    rnea(m, d, qd, qdd, m.a0, NO_WRENCH, tau)
    return True


def row_blocks(N):
    """Blocks to split N rows in: one per thread (numba's, as many as cores), or one below 64
    rows, where a second thread costs more than it saves.
    """
    return get_num_threads() if N >= 64 else 1


@jit_parallel
def inverse_dynamics_rows(mvec, mrot, ints, q, qd, qdd, f_tip, blocks, tau):
    """inverse_dynamics for each row of q, qd, qdd (N, n), filling tau (N, n), in one compiled
    loop. The rows are split in `blocks` blocks (row_blocks), run by numba's threads, each
    with a workspace of its own; a row's numbers do not depend on the split.
    """
    N, n = q.shape
    size = (N + blocks - 1) // blocks
    for b in prange(blocks):
        vecs, rots = np.empty((VECS, n, 3)), np.empty((ROTS, n, 3, 3))
        m = views.model(mvec, mrot, ints)
        d = views.data(vecs, rots, np.empty((2 * n + 6 + VECTORS, n)))  # views once a block
        for k in range(b * size, min(N, (b + 1) * size)):
            joint_poses(m.R0, m.p0, m.axis, m.jtype, q[k], d.R, d.p)
            rnea(m, d, qd[k], qdd[k], m.a0, f_tip, tau[k])


@jit
def energies(mvec, mrot, ints, vecs, rots, mats, q, qd, g):
    """(kinetic J, potential J) from link velocities and world positions; g (3,) base frame.

    Kinetic: sum over bodies of 1/2 (m v.v + 2 v.(w x h) + w.I_o w), v the frame origin velocity.
    Potential: -sum m g.x_com, zero at the base frame origin.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    axis, parent, jtype, mass, h, inertia_o = m.axis, m.parent, m.jtype, m.mass, m.h, m.inertia_o
    R, p, Rw, pw = d.R, d.p, d.Rw, d.pw
    w_all, v_all = d.w, d.dw  # w, v of each body, in its frame
    kinetic, potential = 0.0, 0.0
    G = (g[0], g[1], g[2])
    for i in range(q.shape[0]):
        j = parent[i]
        w, v = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if j >= 0:
            w, v = row(w_all, j), row(v_all, j)
        a, pi = row(axis, i), row(p, i)
        v = mul_t(R, i, add(v, cross(w, pi)))
        w = mul_t(R, i, w)
        if jtype[i] == PRISMATIC:
            v = add(v, scale(a, qd[i]))
        else:
            w = add(w, scale(a, qd[i]))
        for k in range(3):
            w_all[i, k], v_all[i, k] = w[k], v[k]
        hi = row(h, i)
        kinetic += 0.5 * (mass[i] * dot(v, v) + 2.0 * dot(v, cross(w, hi))
                          + dot(w, mul(inertia_o, i, w)))
        # m * COM in the base frame
        potential -= dot(G, add(scale(row(pw, i), mass[i]), mul(Rw, i, hi)))
    return kinetic, potential
