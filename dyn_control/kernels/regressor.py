"""The joint torque regressor's kernel (dyn_control.identification.fit): Y (n, 10 n) with
tau = Y pi for the inertial parameters pi, built from one Newton-Euler forward pass.

Body i's wrench about its frame origin, in its frame, is linear in its parameters
pi_i = (m, h = m c, the inertia about the origin I_o as xx, xy, yy, xz, yz, zz):
    f = m dv + (dw x + w x w x) h
    n = I_o dw + w x (I_o w) - dv x h
with w, dw its angular velocity and acceleration and dv the acceleration of its origin (gravity
in it). That is a 6 x 10 block A_i. The joints that carry body i are its ancestors j; each
feels the block carried to its frame, projected on its axis, as the backward pass of
Newton-Euler carries a wrench: Y[j, 10 i : 10 i + 10] = S_j . (X_j<-i A_i).
"""

import numpy as np

from dyn_control.kernels import views
from dyn_control.kernels.compile import jit
from dyn_control.kernels.frames import kinematics
from dyn_control.kernels.newton_euler import NO_WRENCH, rnea
from dyn_control.kernels.so3 import add, cross, dot, mul, row
from dyn_control.model.layout import PRISMATIC


@jit
def _set_column(A, c, f, n):
    for k in range(3):
        A[k, c], A[3 + k, c] = f[k], n[k]


@jit
def body_block(w, dw, dv, A):
    """Fill A (6, 10): the body's wrench [f; n] about its origin, its frame, per parameter."""
    zero = (0.0, 0.0, 0.0)
    _set_column(A, 0, dv, zero)  # m: f = m dv
    for c in range(3):  # h: f = (dw x + w x w x) h, n = h x dv
        e = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0)
        _set_column(A, 1 + c, add(cross(dw, e), cross(w, cross(w, e))), cross(e, dv))
    # the inertia (xx, xy, yy, xz, yz, zz): n = I dw + w x (I w); column k of I x is the part
    # of I x that entry k makes, E_k x (E_k the symmetric unit matrix of entry k)
    for c, (r, s) in enumerate(((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))):
        Ew, Edw = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
        Ew[r] += w[s]
        Edw[r] += dw[s]
        if r != s:
            Ew[s] += w[r]
            Edw[s] += dw[r]
        Ew_, Edw_ = (Ew[0], Ew[1], Ew[2]), (Edw[0], Edw[1], Edw[2])
        _set_column(A, 4 + c, zero, add(Edw_, cross(w, Ew_)))


@jit
def joint_torque_regressor(mvec, mrot, ints, vecs, rots, mats, q, qd, qdd, Y):
    """Fill Y (n, 10 n) at (q, qd, qdd), the model's gravity in it (module docstring)."""
    m, d = views.model(mvec, mrot, ints), views.data(vecs, rots, mats)
    kinematics(m, d, q)
    rnea(m, d, qd, qdd, m.a0, NO_WRENCH, d.vectors[0])  # its forward pass's w, dw, dv stay in d
    n = q.shape[0]
    A = np.empty((6, 10))
    Y[:, :] = 0.0
    for i in range(n):
        body_block(row(d.w, i), row(d.dw, i), row(d.dv, i), A)
        j = i
        while j >= 0:  # the joints that carry body i, each in its own frame
            a = row(m.axis, j)
            for c in range(10):
                f, n_ = (A[0, c], A[1, c], A[2, c]), (A[3, c], A[4, c], A[5, c])
                Y[j, 10 * i + c] = dot(a, f) if m.jtype[j] == PRISMATIC else dot(a, n_)
                f = mul(d.R, j, f)  # to the parent's frame, as Newton-Euler's backward pass
                _set_column(A, c, f, add(mul(d.R, j, n_), cross(row(d.p, j), f)))
            j = m.parent[j]
