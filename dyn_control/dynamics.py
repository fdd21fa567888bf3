"""Rigid-body dynamics of a `Chain`, a path or a tree: tau = M(q) qdd + C(q, qd) qd + g(q).

All functions take the chain and arrays of shape (n,) in joint order (`chain.joint_names`):
q in rad or m, qd in rad/s or m/s, qdd in rad/s^2 or m/s^2, tau in N m or N.
inverse_dynamics, bias_forces and gravity_torques also take N states at once, as (N, n) arrays,
and return (N, n) from one compiled loop (a trajectory's torques, say). Gravity, when
given, is a (3,) vector in m/s^2 in the URDF root link's frame, as in `load_chain`.
Every quantity comes from the recursive Newton-Euler pass in `kernels.rnea`, except the M that
forward_dynamics solves with, which the composite-rigid-body pass builds (equal to round-off,
test_trees.py; it is what the simulator steps with).
"""

import numpy as np

from . import kernels

_ZERO6 = np.zeros(6)
_ZERO3 = np.zeros(3)
_F64 = np.dtype(np.float64)  # a singleton: `is` is the cheapest dtype check


def model_arrays(chain):
    """The chain's arrays in the kernels' order: R0, p0, axis, jtype, parent, mass, h, inertia_o."""
    return chain.kernel_arrays


def as_vector(chain, x, name):
    """x as a float64 (n,) array; ValueError names it (`name`) and its shape otherwise."""
    if type(x) is np.ndarray and x.dtype is _F64 and x.shape == chain.vector_shape:
        return x  # the common case in a control loop: no conversion, no copy
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (chain.n,):
        raise ValueError(f"{name} must have shape ({chain.n},), got {x.shape}")
    return x


def _plain(chain, q, qd, x):
    """Whether q, qd and x are float64 arrays of shape (n,), the control loop's case: they go to
    the kernels as they are. One chained test: three as_vector calls cost more than the kernel's
    own work on a small arm."""
    return (type(q) is type(qd) is type(x) is np.ndarray and q.dtype is qd.dtype is x.dtype is _F64
            and q.shape == qd.shape == x.shape == chain.vector_shape)


def _vectors(chain, q, qd, x, name):
    """q, qd and a third (n,) vector `name`, as float64 arrays (as_vector)."""
    if _plain(chain, q, qd, x):
        return q, qd, x
    return as_vector(chain, q, "q"), as_vector(chain, qd, "qd"), as_vector(chain, x, name)


def _rows(chain, x, name, shape):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")
    return x


def _base_acceleration(chain, gravity):
    """Gravity enters Newton-Euler as an upward base acceleration a0 = -g (base frame)."""
    return chain.kernel_a0 if gravity is None else -chain.gravity_in_base(gravity)


def inverse_dynamics(chain, q, qd, qdd, gravity=None, f_tip=None):
    """Joint torques (n,) N m or N (force for prismatic joints) that produce qdd at (q, qd).

    f_tip: optional (6,) wrench [force N (3); moment N m (3), about the tip link origin] that the
    tip exerts on its environment, in the tip link's frame; it adds J^T f_tip to the torques
    (J the tip link's Jacobian in its own frame, rows [linear; angular]).
    """
    if gravity is None and f_tip is None and _plain(chain, q, qd, qdd):  # a control loop's call,
        floats, ints = chain.kernel_pack  # with no conversion and no argument tuple to build
        return kernels.inverse_dynamics_default(floats, ints, q, qd, qdd)
    f = _ZERO6 if f_tip is None else chain.wrench_at_last_body(f_tip)
    if np.ndim(q) == 2:  # N states, one per row; f_tip, if given, applies to each
        shape = (len(q), chain.n)
        return kernels.inverse_dynamics_rows(
            *model_arrays(chain), _rows(chain, q, "q", shape), _rows(chain, qd, "qd", shape),
            _rows(chain, qdd, "qdd", shape), _base_acceleration(chain, gravity), f,
            kernels.row_blocks(shape[0]))
    return kernels.inverse_dynamics_packed(
        *chain.kernel_pack, *_vectors(chain, q, qd, qdd, "qdd"), _base_acceleration(chain, gravity),
        f)


def mass_matrix(chain, q):
    """Joint-space inertia matrix M(q), (n, n) kg m^2 / kg: column j = ID(q, 0, e_j), no gravity."""
    return kernels.mass_matrix_packed(*chain.kernel_pack, as_vector(chain, q, "q"))


def mass_matrix_times_plus_bias(chain, q, qd, v):
    """M(q) v + C(q, qd) qd + g(q), (n,), in one compiled call (the computed-torque law).

    Same numbers as mass_matrix(chain, q) @ v + bias_forces(chain, q, qd): M is built from the
    same inverse-dynamics calls with qdd = e_j, with the joint poses computed once.
    """
    return kernels.mass_matrix_times_plus_bias(
        *model_arrays(chain), *_vectors(chain, q, qd, v, "v"), chain.kernel_a0)


def bias_forces(chain, q, qd, gravity=None):
    """C(q, qd) qd + g(q) = ID(q, qd, 0), (n,) or (N, n) N m or N."""
    return inverse_dynamics(chain, q, qd, np.zeros(np.shape(q)), gravity)


def gravity_torques(chain, q, gravity=None):
    """g(q) = ID(q, 0, 0), (n,) or (N, n) N m or N: the torques that hold the arm still."""
    zero = np.zeros(np.shape(q))
    return inverse_dynamics(chain, q, zero, zero, gravity)


def forward_dynamics(chain, q, qd, tau, gravity=None, f_tip=None):
    """Joint accelerations qdd (n,) = M(q)^-1 (tau - bias), by a Cholesky solve (M by the
    composite-rigid-body pass)."""
    f = _ZERO6 if f_tip is None else chain.wrench_at_last_body(f_tip)
    return kernels.forward_dynamics_packed(
        *chain.kernel_pack, *_vectors(chain, q, qd, tau, "tau"), _base_acceleration(chain, gravity),
        f)


def kinetic_energy(chain, q, qd):
    """Kinetic energy (J) from the link velocities: sum of 1/2 m v_c^2 + 1/2 w^T I_c w."""
    return kernels.energies(*model_arrays(chain), as_vector(chain, q, "q"), as_vector(chain, qd, "qd"),
                            _ZERO3)[0]


def potential_energy(chain, q, gravity=None):
    """Gravitational potential energy (J), zero with every COM at the base frame origin."""
    zero = np.zeros(chain.n)
    return kernels.energies(*model_arrays(chain), as_vector(chain, q, "q"), zero,
                            -_base_acceleration(chain, gravity))[1]
