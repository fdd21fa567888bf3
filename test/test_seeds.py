"""The worked examples of the seed lessons (shared/seeds), reproduced by our Newton-Euler code.

Tolerances: a printed seed value is matched to half a unit of its last printed digit; a closed
form from the same lesson is matched to 1e-12 (round-off).
"""

import numpy as np
import pytest
from conftest import URDF_DIR, require
from examples import inertial, joint, link, planar_urdf, robot

from dyn_control import (
    forward_dynamics,
    gravity_torques,
    inverse_dynamics,
    kinetic_energy,
    load_chain,
    mass_matrix,
    potential_energy,
)

G = 9.81
ROUND_OFF = 1e-12


@pytest.fixture(scope="module")
def two_link():
    """Seed 002: uniform rods m1 = 3 kg, L1 = 0.5 m, m2 = 2 kg, L2 = 0.4 m (urdf/two_link.urdf)."""
    return load_chain(URDF_DIR / "two_link.urdf")


def test_two_link_mass_matrix_matches_printed_coefficients(two_link):
    # Seed 002: M11 = 0.8567 + 0.4 c2, M12 = 0.1067 + 0.2 c2, M22 = 0.1067 kg m^2 (4 decimals);
    # closed form M11 = m1 lc1^2 + I1 + m2 (L1^2 + lc2^2) + I2 + 2 m2 L1 lc2 c2, etc.
    m1, L1, m2, L2 = 3.0, 0.5, 2.0, 0.4
    I1, I2, lc1, lc2 = m1 * L1**2 / 12, m2 * L2**2 / 12, L1 / 2, L2 / 2
    for q2 in np.linspace(-np.pi, np.pi, 13):
        M = mass_matrix(two_link, np.array([0.3, q2]))
        c2 = np.cos(q2)
        printed = [[0.8567 + 0.4 * c2, 0.1067 + 0.2 * c2], [0.1067 + 0.2 * c2, 0.1067]]
        np.testing.assert_allclose(M, printed, atol=5e-5)
        beta = m2 * L1 * lc2
        closed = [[m1 * lc1**2 + I1 + m2 * (L1**2 + lc2**2) + I2 + 2 * beta * c2,
                   m2 * lc2**2 + I2 + beta * c2],
                  [m2 * lc2**2 + I2 + beta * c2, m2 * lc2**2 + I2]]
        np.testing.assert_allclose(M, closed, atol=ROUND_OFF)


def test_two_link_example_state(two_link):
    # Seed 002, Example 1 / Example 3: tau = (18.51627, 1.75987) N m (5 decimals).
    tau = inverse_dynamics(two_link, np.radians([30.0, 45.0]), [1.0, -0.5], [2.0, 1.0])
    np.testing.assert_allclose(tau, [18.51627, 1.75987], atol=5e-6)


def test_two_link_example_gravity(two_link):
    # Seed 002, Example 1: gravity part (15.8831, 1.0156) N m (4 decimals).
    np.testing.assert_allclose(gravity_torques(two_link, np.radians([30.0, 45.0])),
                               [15.8831, 1.0156], atol=5e-5)


def test_two_link_random_states_table(two_link):
    # Seed 002, Example 3 table: three states from numpy.random.default_rng(1), per state two
    # angles on [-pi, pi], two velocities on [-3, 3], two accelerations on [-5, 5] (6 decimals).
    rng = np.random.default_rng(1)
    table = [(12.734756, -3.459386), (-3.914117, 1.050836), (8.151353, 2.843422)]
    for expected in table:
        q, qd, qdd = rng.uniform(-np.pi, np.pi, 2), rng.uniform(-3, 3, 2), rng.uniform(-5, 5, 2)
        np.testing.assert_allclose(inverse_dynamics(two_link, q, qd, qdd), expected, atol=5e-7)


def test_two_link_energy_is_conserved_in_free_motion(two_link):
    # Seed 002, Example 4: from rest at q = (0, 0), tau = 0, DOP853 rtol 1e-10 atol 1e-12 for 5 s;
    # |E - E0| at 5001 times stays below 1e-7 J (the seed saw 2e-8 J).
    integrate = require("scipy.integrate")

    def rhs(_, x):
        return np.concatenate([x[2:], forward_dynamics(two_link, x[:2], x[2:], np.zeros(2))])

    times = np.linspace(0.0, 5.0, 5001)
    sol = integrate.solve_ivp(rhs, (0, 5), np.zeros(4), method="DOP853", rtol=1e-10, atol=1e-12,
                              t_eval=times)
    assert sol.success
    energy = [kinetic_energy(two_link, x[:2], x[2:]) + potential_energy(two_link, x[:2])
              for x in sol.y.T]
    assert np.max(np.abs(np.array(energy) - energy[0])) < 1e-7
    assert np.ptp(sol.y[0]) > 1.0  # the arm really fell and swung


def _single_link():
    # Seed 001, Example 1: uniform link m = 2 kg, L = 0.5 m, I about the centre m L^2 / 12.
    return load_chain(planar_urdf([2.0], [0.5], coms=[0.25], inertias=[2.0 * 0.25 / 12]))


def test_single_uniform_link():
    # Seed 001, Example 1: theta = 30 deg above horizontal, thetadd = 4 rad/s^2 -> 4.915 N m
    # (3 decimals); closed form tau = (m L^2 / 3) thetadd + m g (L / 2) cos theta.
    chain = _single_link()
    theta = np.radians(30.0)
    tau = inverse_dynamics(chain, [theta], [0.0], [4.0])[0]
    assert tau == pytest.approx(4.915, abs=5e-4)
    closed = 2.0 * 0.25 / 3 * 4.0 + 2.0 * G * 0.25 * np.cos(theta)
    assert tau == pytest.approx(closed, abs=ROUND_OFF)
    # "Velocity does not appear for a single link about a fixed axis."
    assert inverse_dynamics(chain, [theta], [3.0], [4.0])[0] == pytest.approx(tau, abs=ROUND_OFF)


def test_point_mass_two_link_example():
    # Seed 001, Example 2: point masses m1 = 2, m2 = 1 kg, L1 = L2 = 0.5 m, at (0, 90 deg),
    # qd = (1, 0), qdd = (2, 0) -> tau = (16.715, 0.750) N m (3 decimals).
    chain = load_chain(planar_urdf([2.0, 1.0], [0.5, 0.5]))
    tau = inverse_dynamics(chain, [0.0, np.pi / 2], [1.0, 0.0], [2.0, 0.0])
    np.testing.assert_allclose(tau, [16.715, 0.750], atol=5e-4)


@pytest.mark.parametrize("q2_deg, printed, atol", [
    (90.0, [[3, 1], [1, 1]], ROUND_OFF),  # seed 002 (Modern Robotics Fig. 8.3)
    (150.0, [[1.27, 0.13], [0.13, 1]], 5e-3),  # seed 002, printed to 2 decimals
    (0.0, [[5, 2], [2, 1]], ROUND_OFF),  # seed 003 (angles from the vertical: M is the same)
])
def test_point_mass_unit_mass_matrix(q2_deg, printed, atol):
    chain = load_chain(planar_urdf([1.0, 1.0], [1.0, 1.0]))
    for q1 in (0.0, 0.7, -2.0):  # M does not depend on q1
        M = mass_matrix(chain, [q1, np.radians(q2_deg)])
        np.testing.assert_allclose(M, printed, atol=atol)


def test_point_mass_two_link_closed_form():
    # Seed 001: the point-mass 2R equations (Modern Robotics Eq. 8.9), at random states.
    m1, m2, L1, L2 = 2.0, 1.0, 0.5, 0.5
    chain = load_chain(planar_urdf([m1, m2], [L1, L2]))
    rng = np.random.default_rng(7)
    for _ in range(20):
        (t1, t2), (v1, v2), (a1, a2) = rng.uniform(-3, 3, (3, 2))
        c2, s2 = np.cos(t2), np.sin(t2)
        M11 = m1 * L1**2 + m2 * (L1**2 + 2 * L1 * L2 * c2 + L2**2)
        M12 = m2 * (L1 * L2 * c2 + L2**2)
        M22 = m2 * L2**2
        tau1 = (M11 * a1 + M12 * a2 - m2 * L1 * L2 * s2 * (2 * v1 * v2 + v2**2)
                + (m1 + m2) * G * L1 * np.cos(t1) + m2 * G * L2 * np.cos(t1 + t2))
        tau2 = M12 * a1 + M22 * a2 + m2 * L1 * L2 * s2 * v1**2 + m2 * G * L2 * np.cos(t1 + t2)
        np.testing.assert_allclose(inverse_dynamics(chain, [t1, t2], [v1, v2], [a1, a2]),
                                   [tau1, tau2], atol=ROUND_OFF)


def test_vertical_prismatic_joint():
    # Seed 001, Quick check 2: a vertical prismatic joint lifts 4 kg at 2 m/s^2:
    # 4 (9.81 + 2) = 47.24 N.
    urdf = robot("lift", link("base"),
                 joint("lift", "prismatic", "base", "carriage", axis=(0, 0, 1)),
                 link("carriage", inertial(4.0, (0.1, 0.2, 0.3), np.eye(3) * 0.01)))
    chain = load_chain(urdf)
    for z in (-1.0, 0.0, 2.5):
        assert inverse_dynamics(chain, [z], [0.7], [2.0])[0] == pytest.approx(47.24, abs=ROUND_OFF)
