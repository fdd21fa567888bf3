"""Identities the dynamics must satisfy on any arm, checked on random states of several arms.

References are identities, not numbers: M symmetric positive definite, ID linear in qdd,
FD(ID) = qdd, Mdot - 2C skew-symmetric with C from Christoffel symbols of M, C qd + g = bias,
K = 1/2 qd^T M qd, g = dP/dq, and the plain-Python kernels equal the compiled ones.
"""

import itertools

import numpy as np
import pytest
from conftest import URDF_DIR, robots_dir
from examples import random_chain_urdf

from dyn_control import (
    bias_forces,
    forward_dynamics,
    gravity_torques,
    inverse_dynamics,
    kinetic_energy,
    load_chain,
    mass_matrix,
    potential_energy,
)
from dyn_control.kernels import frames, newton_euler, views
from dyn_control.kernels.compile import HAVE_NUMBA
from dyn_control.model.layout import Data

ROUND_OFF = 1e-10  # relative, for identities that hold exactly up to floating point
FINITE_DIFF = 1e-6  # relative, for identities checked by central differences (step 1e-6)


def _arms():
    arms = {
        "two_link": lambda: load_chain(URDF_DIR / "two_link.urdf"),
        "random3": lambda: load_chain(random_chain_urdf(3, seed=3)),
        "random7_prismatic": lambda: load_chain(random_chain_urdf(7, seed=11), tip_link="link7"),
        "random12": lambda: load_chain(random_chain_urdf(12, seed=5)),
        "panda": lambda: load_chain(robots_dir() / "panda_description/urdf/panda.urdf",
                                    tip_link="panda_hand"),
        "ur5": lambda: load_chain(robots_dir() / "ur_description/urdf/ur5_robot.urdf"),
    }
    return arms


@pytest.fixture(scope="module", params=list(_arms()))
def arm(request):
    return _arms()[request.param]()


def _states(chain, count=8, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield rng.uniform(-2, 2, chain.n), rng.uniform(-2, 2, chain.n), rng.uniform(-3, 3, chain.n)


def _close(a, b, rtol):
    scale = max(1.0, np.abs(b).max())
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def test_mass_matrix_symmetric_positive_definite(arm):
    for q, _, _ in _states(arm):
        M = mass_matrix(arm, q)
        _close(M, M.T, ROUND_OFF)
        assert np.linalg.eigvalsh(M).min() > 0


def test_mass_matrix_columns_are_inverse_dynamics_calls(arm):
    for q, _, _ in _states(arm, 3):
        M = mass_matrix(arm, q)
        for j in range(arm.n):
            e = np.zeros(arm.n)
            e[j] = 1.0
            col = inverse_dynamics(arm, q, np.zeros(arm.n), e, gravity=(0, 0, 0))
            np.testing.assert_array_equal(M[:, j], col)


def test_inverse_dynamics_is_linear_in_acceleration(arm):
    for q, qd, qdd in _states(arm):
        tau = inverse_dynamics(arm, q, qd, qdd)
        _close(tau, mass_matrix(arm, q) @ qdd + bias_forces(arm, q, qd), ROUND_OFF)
        a, b = 2.5 * qdd, -0.7 * qdd[::-1]
        lhs = inverse_dynamics(arm, q, qd, a + b) - bias_forces(arm, q, qd)
        rhs = (inverse_dynamics(arm, q, qd, a) - bias_forces(arm, q, qd)
               + inverse_dynamics(arm, q, qd, b) - bias_forces(arm, q, qd))
        _close(lhs, rhs, ROUND_OFF)


def test_fused_computed_torque_kernel_equals_its_parts(arm):
    from dyn_control.dynamics import mass_matrix_times_plus_bias
    for q, qd, v in _states(arm):
        _close(mass_matrix_times_plus_bias(arm, q, qd, v),
               mass_matrix(arm, q) @ v + bias_forces(arm, q, qd), ROUND_OFF)
        _close(mass_matrix_times_plus_bias(arm, q, qd, v), inverse_dynamics(arm, q, qd, v),
               ROUND_OFF)  # by linearity of ID in qdd


def test_forward_dynamics_inverts_inverse_dynamics(arm):
    for q, qd, qdd in _states(arm):
        _close(forward_dynamics(arm, q, qd, inverse_dynamics(arm, q, qd, qdd)), qdd, 1e-9)


def test_gravity_and_bias_definitions(arm):
    for q, qd, _ in _states(arm):
        zero = np.zeros(arm.n)
        np.testing.assert_array_equal(gravity_torques(arm, q), inverse_dynamics(arm, q, zero, zero))
        np.testing.assert_array_equal(bias_forces(arm, q, qd), inverse_dynamics(arm, q, qd, zero))


def _dM(chain, q, h=1e-6):
    """dM/dq_k by central differences -> (n, n, n) with [:, :, k]."""
    out = np.empty((chain.n, chain.n, chain.n))
    for k in range(chain.n):
        e = np.zeros(chain.n)
        e[k] = h
        out[:, :, k] = (mass_matrix(chain, q + e) - mass_matrix(chain, q - e)) / (2 * h)
    return out


def test_christoffel_coriolis_and_skew_symmetry(arm):
    for q, qd, _ in _states(arm, 3):
        dM = _dM(arm, q)
        # c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i); C_ij = sum_k c_ijk qd_k
        christoffel = 0.5 * (dM + np.einsum("ikj->ijk", dM) - np.einsum("jki->ijk", dM))
        C = christoffel @ qd
        Mdot = dM @ qd
        S = Mdot - 2 * C
        _close(S, -S.T, FINITE_DIFF)
        _close(C @ qd + gravity_torques(arm, q), bias_forces(arm, q, qd), FINITE_DIFF)


def test_energies(arm):
    for q, qd, _ in _states(arm, 4):
        _close(kinetic_energy(arm, q, qd), 0.5 * qd @ mass_matrix(arm, q) @ qd, ROUND_OFF)
        # g(q) = dP/dq: gravity torques are the gradient of the potential energy
        h = 1e-6
        grad = [(potential_energy(arm, q + h * e) - potential_energy(arm, q - h * e)) / (2 * h)
                for e in np.eye(arm.n)]
        _close(np.array(grad), gravity_torques(arm, q), FINITE_DIFF)


def test_gravity_argument_overrides_the_chain_gravity(arm):
    q = np.linspace(-1, 1, arm.n)
    zero = np.zeros(arm.n)
    assert np.all(inverse_dynamics(arm, q, zero, zero, gravity=(0, 0, 0)) == 0)
    _close(gravity_torques(arm, q, gravity=(0, 0, -2 * 9.81)), 2 * gravity_torques(arm, q),
           ROUND_OFF)


def test_the_control_loops_fast_path_equals_the_general_one(arm):
    # three float64 vectors, no gravity or wrench given: no conversion and the model's own
    # gravity; a list or a zero wrench takes the general path: the same numbers to the bit
    for q, qd, qdd in itertools.islice(_states(arm), 3):
        fast = inverse_dynamics(arm, q, qd, qdd)
        assert np.array_equal(fast, inverse_dynamics(arm, q.tolist(), qd, qdd))
        assert np.array_equal(fast, inverse_dynamics(arm, q, qd, qdd, f_tip=np.zeros(6)))


def test_plain_python_kernels_equal_compiled(arm):
    """Without numba the same kernel source runs as Python (kernels.compile's fallback)."""
    if not HAVE_NUMBA:
        pytest.skip("numba not installed: the plain-Python kernels are the only ones")
    q, qd, qdd = next(_states(arm))
    compiled = inverse_dynamics(arm, q, qd, qdd)
    mvec, mrot, ints, vecs, rots, mats = Data(arm.pack).args
    m, d = views.model.py_func(mvec, mrot, ints), views.data.py_func(vecs, rots, mats)
    frames.joint_poses.py_func(m.R0, m.p0, m.axis, m.jtype, q, d.R, d.p)
    tau = np.empty(arm.n)
    newton_euler.rnea.py_func(m, d, qd, qdd, m.a0, np.zeros(6), tau)
    _close(tau, compiled, 1e-13)


def test_shape_errors_name_the_argument():
    chain = load_chain(URDF_DIR / "two_link.urdf")
    with pytest.raises(ValueError, match=r"qd must have shape \(2,\)"):
        inverse_dynamics(chain, [0, 0], [0, 0, 0], [0, 0])


def test_batched_dynamics_equal_row_by_row():
    # (N, n) states in one call give exactly the rows of N single calls (identity, bit for bit);
    # 101 rows: split over the threads (odd, so the blocks differ in size)
    chain = load_chain(URDF_DIR / "default_arm.urdf")
    rng = np.random.default_rng(7)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 101, chain.n))
    rows = [(inverse_dynamics(chain, *x), bias_forces(chain, x[0], x[1]), gravity_torques(chain,
                                                                                          x[0]))
            for x in zip(q, qd, qdd)]
    for batched, single in zip((inverse_dynamics(chain, q, qd, qdd), bias_forces(chain, q, qd),
                                gravity_torques(chain, q)), zip(*rows)):
        assert batched.shape == (101, chain.n)
        np.testing.assert_array_equal(batched, np.array(single))
    f = rng.normal(size=6)
    np.testing.assert_array_equal(inverse_dynamics(chain, q[:3], qd[:3], qdd[:3], f_tip=f)[2],
                                  inverse_dynamics(chain, q[2], qd[2], qdd[2], f_tip=f))
    with pytest.raises(ValueError, match="qd must have shape"):
        inverse_dynamics(chain, q, qd[:10], qdd)
