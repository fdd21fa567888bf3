"""Rigid-body dynamics of a `Chain`, a path or a tree: tau = M(q) qdd + C(q, qd) qd + g(q).

All functions take the chain and arrays of shape (n,) in joint order (`chain.joint_names`):
q in rad or m, qd in rad/s or m/s, qdd in rad/s^2 or m/s^2, tau in N m or N.
inverse_dynamics, bias_forces and gravity_torques also take N states at once, as (N, n) arrays,
and return (N, n) from one compiled loop (a trajectory's torques, say). Gravity, when
given, is a (3,) vector in m/s^2 in the URDF root link's frame, as in `load_chain`.
Every quantity comes from the recursive Newton-Euler pass (kernels.newton_euler), except the M
that forward_dynamics solves with, which the composite-rigid-body pass builds (equal to
round-off, test_trees.py; it is what the simulator steps with).

Each call runs the kernels on the chain's packed model and this thread's workspace
(Chain.workspace), and allocates only what it returns: numba returning a new array costs more
than a small arm's whole pass, so the result is allocated here and filled there.
"""

import numpy as np

from dyn_control.kernels import mass_matrix as mass
from dyn_control.kernels import newton_euler
from dyn_control.kernels.newton_euler import NO_WRENCH
from dyn_control.model.layout import plain_vectors, with_gravity

_ZERO3 = np.zeros(3)
_mass_matrix = mass.mass_matrix
_F64 = np.dtype(np.float64)  # a singleton: `is` is the cheapest dtype check


def as_vector(chain, x, name):
    """x as a float64 (n,) array; ValueError names it (`name`) and its shape otherwise."""
    if type(x) is np.ndarray and x.dtype is _F64 and x.shape == chain.vector_shape:
        return x  # the common case in a control loop: no conversion, no copy
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (chain.n,):
        raise ValueError(f"{name} must have shape ({chain.n},), got {x.shape}")
    return x


def _vectors(chain, q, qd, x, name):
    """q, qd and a third (n,) vector `name`, as float64 arrays (as_vector)."""
    if plain_vectors(q, qd, x) and q.shape == qd.shape == x.shape == chain.vector_shape:
        return q, qd, x
    return as_vector(chain, q, "q"), as_vector(chain, qd, "qd"), as_vector(chain, x, name)


def _rows(chain, x, name, shape):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")
    return x


def _model(chain, gravity):
    """The packed model, with another gravity (given in the URDF root frame) when given."""
    if gravity is None:
        return chain.pack
    return with_gravity(chain.pack, -chain.gravity_in_base(gravity))


def inverse_dynamics(chain, q, qd, qdd, gravity=None, f_tip=None):
    """Joint torques (n,) N m or N (force for prismatic joints) that produce qdd at (q, qd).

    f_tip: optional (6,) wrench [force N (3); moment N m (3), about the tip link origin] that the
    tip exerts on its environment, in the tip link's frame; it adds J^T f_tip to the torques
    (J the tip link's Jacobian in its own frame, rows [linear; angular]).
    """
    if gravity is None and f_tip is None:  # a control loop's call: straight to C (None: the
        tau = chain.entry.inverse_dynamics(q, qd, qdd)  # inputs need converting, or naming)
        if tau is not None:
            return tau
    f = NO_WRENCH if f_tip is None else chain.wrench_at_last_body(f_tip)
    model = _model(chain, gravity)
    if np.ndim(q) == 2:  # N states, one per row; f_tip, if given, applies to each
        shape = (len(q), chain.n)
        tau = np.empty(shape)
        newton_euler.inverse_dynamics_rows(
            *model, _rows(chain, q, "q", shape), _rows(chain, qd, "qd", shape),
            _rows(chain, qdd, "qdd", shape), f, newton_euler.row_blocks(shape[0]), tau)
        return tau
    tau = np.empty(chain.n)
    newton_euler.inverse_dynamics(*model, *chain.workspace().arrays,
                                  *_vectors(chain, q, qd, qdd, "qdd"), f, tau)
    return tau


def mass_matrix(chain, q):
    """Joint-space inertia matrix M(q), (n, n) kg m^2 / kg: column j = ID(q, 0, e_j), no gravity."""
    M = chain.entry.mass_matrix(q)  # None: q needs converting, or naming
    if M is None:
        M = np.empty(chain.matrix_shape)
        _mass_matrix(*chain.workspace().args, as_vector(chain, q, "q"), M)
    return M


def mass_matrix_times_plus_bias(chain, q, qd, v):
    """M(q) v + C(q, qd) qd + g(q), (n,), in one compiled call (the computed-torque law).

    Same numbers as mass_matrix(chain, q) @ v + bias_forces(chain, q, qd): M is built from the
    same inverse-dynamics calls with qdd = e_j, with the joint poses computed once.
    """
    tau = np.empty(chain.n)
    mass.mass_matrix_times_plus_bias(*chain.workspace().args,
                                     *_vectors(chain, q, qd, v, "v"), tau)
    return tau


def bias_forces(chain, q, qd, gravity=None):
    """C(q, qd) qd + g(q) = ID(q, qd, 0), (n,) or (N, n) N m or N."""
    return inverse_dynamics(chain, q, qd, np.zeros(np.shape(q)), gravity)


def gravity_torques(chain, q, gravity=None):
    """g(q) = ID(q, 0, 0), (n,) or (N, n) N m or N: the torques that hold the arm still."""
    zero = np.zeros(np.shape(q))
    return inverse_dynamics(chain, q, zero, zero, gravity)


def forward_dynamics(chain, q, qd, tau, gravity=None, f_tip=None):
    """Joint accelerations qdd (n,) = M(q)^-1 (tau - bias), by a Cholesky solve (M by the
    composite-rigid-body pass).
    """
    f = NO_WRENCH if f_tip is None else chain.wrench_at_last_body(f_tip)
    qdd = np.empty(chain.n)
    mass.forward_dynamics(*_model(chain, gravity), *chain.workspace().arrays,
                          *_vectors(chain, q, qd, tau, "tau"), f, qdd)
    return qdd


def kinetic_energy(chain, q, qd):
    """Kinetic energy (J) from the link velocities: sum of 1/2 m v_c^2 + 1/2 w^T I_c w."""
    return newton_euler.energies(*chain.workspace().args, as_vector(chain, q, "q"),
                                 as_vector(chain, qd, "qd"), _ZERO3)[0]


def potential_energy(chain, q, gravity=None):
    """Gravitational potential energy (J), zero with every COM at the base frame origin."""
    g = chain.gravity if gravity is None else chain.gravity_in_base(gravity)
    return newton_euler.energies(*chain.workspace().args, as_vector(chain, q, "q"),
                                 np.zeros(chain.n), np.array(g))[1]
