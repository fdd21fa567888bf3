"""The joint-space inertia M(q): by columns, M e_j = ID(q, 0, e_j) with gravity off (what the
package promises, and what the controller uses), or by the composite-rigid-body pass
(Featherstone's CRBA: equal to round-off, one pass instead of n; what forward dynamics and the
simulator use). With it: forward dynamics, each joint's inertia with the others free, and the
computed-torque law's M v + ID(q, qd, 0).
"""


from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.frames import joint_poses
from dyn_control.kernels.linalg import cholesky_apply, cholesky_factor, inverse_diagonal
from dyn_control.kernels.newton_euler import NO_WRENCH, rnea
from dyn_control.kernels.so3 import add, cross, dot, mul, mul_t, row, scale
from dyn_control.model.layout import PRISMATIC


@jit
def columns(m, d, M):
    """Fill M (n, n) column by column, M e_j = ID(q, 0, e_j) with gravity and tip wrench off,
    at the workspace's joint poses. Leaves d.vectors[1] zero.

    Each column is the Newton-Euler pass of rnea with its zero terms left out, the same sums in
    the same order: at qd = 0 every body's angular velocity is zero, so only joint j's subtree
    accelerates, and only the subtree and j's ancestors carry a wrench. A body outside both
    contributes exactly zero; skipping it changes no bit (test_pinocchio, make equality).
    """
    axis, jtype, parent, mass, h, inertia_o = m.axis, m.jtype, m.parent, m.mass, m.h, m.inertia_o
    R, p = d.R, d.p
    dw_all, dv_all, f_all, m_all = d.dw, d.dv, d.f, d.mo
    n = M.shape[0]
    zero = d.vectors[1]
    moving, loaded = d.vectors[0], d.vectors[2]  # flags (1.0 / 0.0) per body, this column's
    for i in range(n):
        zero[i] = 0.0
    for j in range(n):
        for i in range(n):
            moving[i] = 1.0 if i == j or (i > j and parent[i] >= 0 and moving[parent[i]] > 0) \
                else 0.0
            loaded[i] = moving[i]
        for i in range(j, n):  # forward: the subtree's accelerations, parents first
            if moving[i] == 0.0:
                continue
            a = row(axis, i)
            if i == j:
                dw, dv = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
                if jtype[i] == PRISMATIC:
                    dv = a
                else:
                    dw = a
            else:
                k = parent[i]
                dwp, dvp = row(dw_all, k), row(dv_all, k)
                dv = mul_t(R, i, add(dvp, cross(dwp, row(p, i))))
                dw = mul_t(R, i, dwp)
            for c in range(3):
                dw_all[i, c], dv_all[i, c] = dw[c], dv[c]
                f_all[i, c], m_all[i, c] = 0.0, 0.0
        for i in range(j):
            for c in range(3):
                f_all[i, c], m_all[i, c] = 0.0, 0.0
        for i in range(n - 1, -1, -1):  # backward: wrenches, children first
            if loaded[i] == 0.0:
                M[i, j] = 0.0
                continue
            f, mo = row(f_all, i), row(m_all, i)
            if moving[i] > 0:
                dw, dv, hi = row(dw_all, i), row(dv_all, i), row(h, i)
                f = add(f, add(scale(dv, mass[i]), cross(dw, hi)))
                mo = add(mo, add(mul(inertia_o, i, dw), cross(hi, dv)))
            a = row(axis, i)
            M[i, j] = dot(a, f) if jtype[i] == PRISMATIC else dot(a, mo)
            k = parent[i]
            if k >= 0:  # carry the wrench to the parent's frame origin
                f = mul(R, i, f)
                mo = add(mul(R, i, mo), cross(row(p, i), f))
                for c in range(3):
                    f_all[k, c] += f[c]
                    m_all[k, c] += mo[c]
                loaded[k] = 1.0


@jit
def crba(m, d, M):
    """Fill M (n, n) by the composite-rigid-body pass at the workspace's joint poses. Body i's
    composite inertia (mass, first moment, inertia about its origin, in its frame) gathers its
    subtree's; the wrench that its joint's unit motion needs is carried up the ancestors, and
    S_j^T of it is M[i, j].
    """
    axis, jtype, parent, mass, h, inertia_o = m.axis, m.jtype, m.parent, m.mass, m.h, m.inertia_o
    R, p, cI, ch, cm = d.R, d.p, d.cI, d.ch, d.cm
    n = M.shape[0]
    for i in range(n):
        for j in range(n):
            M[i, j] = 0.0  # joints on different branches do not couple through inertia
        cm[i] = mass[i]
        for r in range(3):
            ch[i, r] = h[i, r]
            for c in range(3):
                cI[i, r, c] = inertia_o[i, r, c]
    for i in range(n - 1, -1, -1):  # children (larger indices) are complete
        a, hi = row(axis, i), row(ch, i)
        if jtype[i] == PRISMATIC:  # S = [a; 0]: F = [m a; h x a]
            f, m = scale(a, cm[i]), cross(hi, a)
        else:  # S = [0; a]: F = [a x h; I_o a]
            f, m = cross(a, hi), mul(cI, i, a)
        M[i, i] = dot(a, f) if jtype[i] == PRISMATIC else dot(a, m)
        j = i
        while parent[j] >= 0:  # carry F to each ancestor's frame: column i above the diagonal
            pj = row(p, j)
            f = mul(R, j, f)
            m = add(mul(R, j, m), cross(pj, f))
            j = parent[j]
            aj = row(axis, j)
            M[i, j] = M[j, i] = dot(aj, f) if jtype[j] == PRISMATIC else dot(aj, m)
        k = parent[i]
        if k >= 0:  # add body i's composite into its parent's, moved into the parent's frame
            pi = row(p, i)
            hr = mul(R, i, hi)  # first moment, parent axes, about body i's origin
            for r in range(3):
                for c in range(3):  # R I R^T, then the shift of the origin by p
                    total = 0.0
                    for u in range(3):
                        for v in range(3):
                            total += R[i, r, u] * cI[i, u, v] * R[i, c, v]
                    shift = -(pi[r] * hr[c] + hr[r] * pi[c]) - cm[i] * pi[r] * pi[c]
                    if r == c:
                        shift += cm[i] * dot(pi, pi) + 2.0 * dot(pi, hr)
                    cI[k, r, c] += total + shift
            cm[k] += cm[i]
            for r in range(3):
                ch[k, r] += hr[r] + cm[i] * pi[r]


@jit
def poses(m, d, q):
    """The joint poses at q, into the workspace (what columns and crba read)."""
    joint_poses(m.R0, m.p0, m.axis, m.jtype, q, d.R, d.p)


@jit
def mass_matrix(mvec, mrot, ints, vecs, rots, mats, q, M):
    """Fill M (n, n) = M(q), by columns, and return True; or return False, touching nothing,
    when q is not of length n (the caller then says so). Only the passes' views are made.
    """
    n = vecs.shape[1]
    if q.shape[0] != n or M.shape[0] != n or M.shape[1] != n:
        return False
    m, d = views.model(mvec, mrot, ints), views.newton_euler(vecs, rots, mats)
    poses(m, d, q)
    columns(m, d, M)
    return True


@jit
def mass_matrix_times_plus_bias(mvec, mrot, ints, vecs, rots, mats, q, qd, v, tau):
    """Fill tau (n,) = M(q) v + ID(q, qd, 0): poses once, the n columns of M, the bias by one
    more pass. The computed-torque law's whole model cost.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    n = q.shape[0]
    poses(m, d, q)
    columns(m, d, d.M)
    rnea(m, d, qd, d.vectors[1], m.a0, NO_WRENCH, tau)  # (columns left vectors[1] zero)
    for i in range(n):
        for j in range(n):
            tau[i] += d.M[i, j] * v[j]


@jit
def joint_inertias(mvec, mrot, ints, vecs, rots, mats, q, out):
    """Fill out (n,) kg m^2 or kg: each joint's inertia with the other joints free,
    1 / (M(q)^-1)_jj, the inertia a torque on that joint alone accelerates (M by crba).
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    poses(m, d, q)
    crba(m, d, d.M)
    workspace_inertias(vecs, rots, mats, out)


@jit
def workspace_inertias(vecs, rots, mats, out):
    """joint_inertias of the M the workspace holds already (d.M, by crba or by columns),
    factored into d.L: a law that has built M does not build it again.
    """
    d = views.data(vecs, rots, mats)
    n = out.shape[0]
    L = cholesky_factor(d.M, d.L)
    inverse_diagonal(L, d.vectors[2], out)
    for j in range(n):
        out[j] = 1.0 / out[j]


@jit
def forward_dynamics(mvec, mrot, ints, vecs, rots, mats, q, qd, tau, f_tip, qdd):
    """Fill qdd (n,) = M(q)^-1 (tau - ID(q, qd, 0)) by a Cholesky solve, M by crba."""
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    bias = d.vectors[3]
    bias_and_factor(m, d, q, qd, f_tip, bias)
    for i in range(q.shape[0]):
        bias[i] = tau[i] - bias[i]
    cholesky_apply(d.L, bias, qdd)


@jit
def bias_and_factor(m, d, q, qd, f_tip, bias):
    """What forward dynamics needs at (q, qd): bias (n,) = ID(q, qd, 0), M(q) by crba into d.M
    and its Cholesky factor into d.L (a caller that solves several right-hand sides at one
    state factors once).
    """
    poses(m, d, q)
    zero = d.vectors[1]
    for i in range(q.shape[0]):
        zero[i] = 0.0
    rnea(m, d, qd, zero, m.a0, f_tip, bias)
    crba(m, d, d.M)
    cholesky_factor(d.M, d.L)
