"""Kinematics over the parent index (parent[i] < i, -1 for the base), so that a path
(parent = i - 1) and a tree are the same code: the bodies' poses, a frame's pose, its Jacobian
and J-dot qd. (R[i], p[i]) is body i's pose in its parent's frame at q, (Rw[i], pw[i]) in the
base frame; a frame is fixed to a body at (R_off, p_off) in that body's frame (Chain.frame).
Spatial vectors are [linear (3); angular (3)], as Pinocchio's.
"""

import math

from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.so3 import add, cross, mul, row, scale
from dyn_control.model.layout import PRISMATIC

WORLD, LOCAL, LOCAL_WORLD_ALIGNED = range(3)  # Pinocchio's ReferenceFrame, by its order


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
                    R[i, r, k] = (R0[i, r, 0] * rq[0][k] + R0[i, r, 1] * rq[1][k]
                                  + R0[i, r, 2] * rq[2][k])
                p[i, r] = p0[i, r]


@jit
def body_poses(R, p, parent, Rw, pw):
    """Bodies' poses in their parents' frames (joint_poses' R, p) -> in the base frame: fills
    Rw (n, 3, 3), pw (n, 3).
    """
    for i in range(p.shape[0]):
        j = parent[i]
        for r in range(3):
            if j < 0:
                for c in range(3):
                    Rw[i, r, c] = R[i, r, c]
                pw[i, r] = p[i, r]
            else:
                for c in range(3):
                    Rw[i, r, c] = (Rw[j, r, 0] * R[i, 0, c] + Rw[j, r, 1] * R[i, 1, c]
                                   + Rw[j, r, 2] * R[i, 2, c])
                pw[i, r] = (Rw[j, r, 0] * p[i, 0] + Rw[j, r, 1] * p[i, 1] + Rw[j, r, 2] * p[i, 2]
                            + pw[j, r])


@jit
def kinematics(m, d, q):
    """The one kinematics pass of a tick: fills the workspace's R, p and Rw, pw at q, which the
    passes of Newton-Euler, the mass matrix and the frames then read (m, d: views.model,
    views.data).
    """
    joint_poses(m.R0, m.p0, m.axis, m.jtype, q, d.R, d.p)
    body_poses(d.R, d.p, m.parent, d.Rw, d.pw)


@jit
def frame_placement(d, body, R_off, p_off, Rf, pf):
    """The pose (Rf (3, 3), pf (3,), filled) in the base frame of a frame fixed to `body` at
    (R_off, p_off) in that body's frame.
    """
    Rw, pw = d.Rw, d.pw
    for r in range(3):
        for c in range(3):
            Rf[r, c] = (Rw[body, r, 0] * R_off[0, c] + Rw[body, r, 1] * R_off[1, c]
                        + Rw[body, r, 2] * R_off[2, c])
        pf[r] = (Rw[body, r, 0] * p_off[0] + Rw[body, r, 1] * p_off[1] + Rw[body, r, 2] * p_off[2]
                 + pw[body, r])


@jit
def frame_jacobian(m, d, body, Rf, pf, reference, J):
    """Fill J (6, n): the frame's spatial velocity per joint rate, in `reference`:
    LOCAL_WORLD_ALIGNED, the velocity of the frame origin pf and the angular velocity, in base
    axes; LOCAL, the same in the frame's own axes (Rf); WORLD, the velocity of the point at the
    base origin moving with the frame, in base axes. A joint that does not move the body (not
    one of its ancestors) has a zero column.
    """
    Rw, pw, axis, jtype, parent = d.Rw, d.pw, m.axis, m.jtype, m.parent
    n = J.shape[1]
    for r in range(6):
        for c in range(n):
            J[r, c] = 0.0
    j = body
    while j >= 0:
        z = mul(Rw, j, row(axis, j))
        if jtype[j] == PRISMATIC:
            lin, ang = z, (0.0, 0.0, 0.0)
        else:
            at = (0.0, 0.0, 0.0) if reference == WORLD else (pf[0], pf[1], pf[2])
            lin, ang = cross(z, (at[0] - pw[j, 0], at[1] - pw[j, 1], at[2] - pw[j, 2])), z
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
def frame_bias_acceleration(m, d, qd, body, pf, out):
    """Fill out (6,): J-dot qd of the frame at pf on `body`, in base axes: the classical
    acceleration of its origin and its angular acceleration when qdd = 0 and gravity is off
    (the workspace's poses at q filled; its w, dw, dv blocks hold the bodies' w, dw, a).
    Forward over the bodies (parents first), each body's angular velocity w, angular
    acceleration dw and the acceleration a of its origin:
      revolute i:  w = w_p + z qd, dw = dw_p + w_p x z qd, a = a_p + dw_p x r + w_p x (w_p x r)
      prismatic i: w = w_p, dw = dw_p, a = a_p + dw_p x r + w_p x (w_p x r) + 2 w_p x z qd
    with z the joint axis and r = pw[i] - pw[parent] in base axes.
    """
    Rw, pw, axis, jtype, parent = d.Rw, d.pw, m.axis, m.jtype, m.parent
    w_all, dw_all, a_all = d.w, d.dw, d.dv
    for i in range(body + 1):
        j = parent[i]
        w, dw, a, o = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if j >= 0:
            w, dw, a, o = row(w_all, j), row(dw_all, j), row(a_all, j), row(pw, j)
        r = (pw[i, 0] - o[0], pw[i, 1] - o[1], pw[i, 2] - o[2])
        a = add(a, add(cross(dw, r), cross(w, cross(w, r))))
        z = mul(Rw, i, row(axis, i))
        if jtype[i] == PRISMATIC:
            a = add(a, scale(cross(w, z), 2.0 * qd[i]))
        else:
            wz = scale(z, qd[i])
            dw = add(dw, cross(w, wz))
            w = add(w, wz)
        for k in range(3):
            w_all[i, k], dw_all[i, k], a_all[i, k] = w[k], dw[k], a[k]
    w, dw, a = row(w_all, body), row(dw_all, body), row(a_all, body)
    r = (pf[0] - pw[body, 0], pf[1] - pw[body, 1], pf[2] - pw[body, 2])
    a = add(a, add(cross(dw, r), cross(w, cross(w, r))))
    for k in range(3):
        out[k], out[3 + k] = a[k], dw[k]


@jit
def frame_pose_and_jacobian(mvec, mrot, ints, vecs, rots, mats, q, body, R_off, p_off, reference,
                            Rf,
                            pf, J):
    """Fill Rf (3, 3), pf (3,): the pose in the base frame of a frame fixed to `body`, and J
    (6, n) its Jacobian in `reference`, from one kinematics pass.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    frame_placement(d, body, R_off, p_off, Rf, pf)
    frame_jacobian(m, d, body, Rf, pf, reference, J)


@jit
def frame_acceleration(mvec, mrot, ints, vecs, rots, mats, q, qd, body, R_off, p_off, Rf, pf, out):
    """Fill out (6,) with J-dot qd of a frame, base axes (frame_bias_acceleration), and Rf, pf
    with its pose.
    """
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    frame_placement(d, body, R_off, p_off, Rf, pf)
    frame_bias_acceleration(m, d, qd, body, pf, out)
