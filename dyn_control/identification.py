"""Identification of an arm's inertial and friction parameters (issue 31), pure numpy over the
compiled kernels. What is here so far: the joint torque regressor and the parameter vector.

    tau = Y(q, qd, qdd) pi,   pi = (pi_1 ... pi_n, viscous (n), Coulomb (n), offset (n))

pi_i, body i's 10 inertial parameters in its own frame (the joint's), in Pinocchio's order:
m, m c (3), then the inertia about the frame origin xx, xy, yy, xz, yz, zz. The friction
columns are those the simulator and the controller use: viscous qd, Coulomb sign(qd) (the
URDF's <dynamics damping friction>), and a constant offset per joint.
"""

import numpy as np

from .dynamics import as_vector
from .kernels import regressor as kernel

INERTIAL = 10  # parameters per body
FRICTION = ("viscous", "coulomb", "offset")  # columns per joint, after the inertial ones
NAMES = ("m", "mx", "my", "mz", "ixx", "ixy", "iyy", "ixz", "iyz", "izz")


def regressor(chain, q, qd, qdd, friction=True):
    """Y (n, 10 n [+ 3 n]) with tau = Y pi at (q, qd, qdd): the inverse dynamics' torques with
    the model's gravity, plus, with friction, viscous, Coulomb and offset columns."""
    n = chain.n
    q, qd, qdd = (as_vector(chain, x, name) for x, name in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
    Y = np.zeros((n, (INERTIAL + (len(FRICTION) if friction else 0)) * n))
    kernel.joint_torque_regressor(*chain.workspace().args, q, qd, qdd, Y[:, :INERTIAL * n])
    if friction:
        k = np.arange(n)
        Y[k, INERTIAL * n + k] = qd
        Y[k, (INERTIAL + 1) * n + k] = np.sign(qd)
        Y[k, (INERTIAL + 2) * n + k] = 1.0
    return Y


def parameters(chain, friction=True):
    """pi (10 n [+ 3 n]) of a chain: each body's inertial parameters, then the joints' damping
    as viscous, friction as Coulomb, and a zero offset."""
    I = chain.inertia_origin
    inertial = np.column_stack([chain.mass, chain.h, I[:, 0, 0], I[:, 0, 1], I[:, 1, 1],
                                I[:, 0, 2], I[:, 1, 2], I[:, 2, 2]]).ravel()
    if not friction:
        return inertial
    return np.concatenate([inertial, chain.damping, chain.friction, np.zeros(chain.n)])


def parameter_names(chain, friction=True):
    """A name per entry of pi: "<joint>.<m|mx|...|izz>", then "<joint>.<viscous|...>"."""
    names = [f"{joint}.{p}" for joint in chain.joint_names for p in NAMES]
    if friction:
        names += [f"{joint}.{kind}" for kind in FRICTION for joint in chain.joint_names]
    return names
