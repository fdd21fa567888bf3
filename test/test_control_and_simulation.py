"""Control laws and the forward-dynamics simulation, without ROS.

References: the error dynamics each law must produce (closed form, through forward dynamics,
to 1e-9), forward dynamics itself for the first simulated step (Taylor, O(dt^3)), a tight
scipy DOP853 integration for a longer fall (1e-6 rad), and energy for the integrator choice.
"""

import dataclasses

import numpy as np
import pytest
from conftest import URDF_DIR, require
from examples import inertial, joint, link, robot

from dyn_control import (
    forward_dynamics,
    gravity_torques,
    inverse_dynamics,
    kinetic_energy,
    load_chain,
    mass_matrix,
    potential_energy,
)
from dyn_control.controller.laws import (
    ControlLaw,
    check_gains,
    check_mode,
    control_torque,
    critical_damping,
    gain_vector,
    saturate,
)
from dyn_control.kernels.passive import STAGED_DAMPING_MAX
from dyn_control.model.chain import effort_limits
from dyn_control.sim.simulation import Simulation

Q0 = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])


@pytest.fixture(scope="module")
def arm():
    return load_chain(URDF_DIR / "default_arm.urdf")


@pytest.fixture(scope="module")
def two_link():
    return load_chain(URDF_DIR / "two_link.urdf")


def test_computed_torque_imposes_the_linear_error_dynamics(arm):
    # With the model exact, FD(q, qd, tau) = qdd_d + Kd ed + Kp e for any state.
    rng = np.random.default_rng(0)
    kp, kd = np.full(7, 400.0), critical_damping(np.full(7, 400.0))
    for _ in range(5):
        q, qd, q_d, qd_d, qdd_d = rng.uniform(-1, 1, (5, 7))
        tau = control_torque(arm, "computed_torque", q, qd, q_d, qd_d, qdd_d, kp, kd)
        np.testing.assert_allclose(forward_dynamics(arm, q, qd, tau),
                                   qdd_d + kd * (qd_d - qd) + kp * (q_d - q), atol=1e-9)


def test_feedforward_and_gravity_pd_at_zero_error(arm):
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.uniform(-1, 1, (3, 7))
    kp, kd = np.full(7, 100.0), np.full(7, 20.0)
    np.testing.assert_allclose(control_torque(arm, "feedforward", q, qd, q, qd, qdd, kp, kd),
                               inverse_dynamics(arm, q, qd, qdd), atol=1e-12)
    np.testing.assert_allclose(control_torque(arm, "gravity_pd", q, qd, q, qd, qdd, kp, kd),
                               gravity_torques(arm, q), atol=1e-12)
    # the PD is scaled by each joint's inertia with the others free, 1 / (M^-1)_jj (closed
    # form from numpy's inverse of our M)
    inertia = 1.0 / np.diag(np.linalg.inv(mass_matrix(arm, q)))
    e = np.full(7, 0.01)
    np.testing.assert_allclose(control_torque(arm, "gravity_pd", q, qd, q + e, qd, qdd, kp, kd)
                               - gravity_torques(arm, q), inertia * kp * e, rtol=1e-12)


@pytest.mark.parametrize("mode", ["gravity_pd", "feedforward"])
def test_a_joint_alone_answers_its_error_at_kp_in_every_mode(arm, mode):
    # Identity: at rest, with an error on joint j only, the PD's torque accelerates joint j by
    # exactly kp e_j (q'' = M^-1 tau, and tau_j = kp e_j / (M^-1)_jj), as computed_torque does
    # on every joint; the wrist no faster than the shoulder. Tolerance 1e-9 (forward dynamics'
    # Cholesky solve).
    q = np.random.default_rng(2).uniform(-1, 1, 7)
    zero, kp = np.zeros(7), np.full(7, 400.0)
    for j in range(7):
        e = np.zeros(7)
        e[j] = 0.01
        tau = control_torque(arm, mode, q, zero, q + e, zero, zero, kp, 2 * np.sqrt(kp))
        qdd = forward_dynamics(arm, q, zero, tau)
        assert qdd[j] == pytest.approx(kp[j] * e[j], rel=1e-9)


def test_gains_the_sampled_loop_cannot_hold_are_refused_naming_joint_gain_and_limit():
    names = ["a", "b", "c"]
    check_gains("computed_torque", [400.0] * 3, [40.0] * 3, 1e-3, names)  # the defaults
    check_gains("gravity_pd", [400.0] * 3, [40.0] * 3, 1e-3, names)
    with pytest.raises(ValueError, match=r"kd on b: 2000 1/s is not below 2000, .*computed_torque"):
        check_gains("computed_torque", [400.0] * 3, [40.0, 2000.0, 40.0], 1e-3, names)
    # the inertia-scaled modes: the joints' loop gains sum to n, so the bound is 2 / (n T)
    with pytest.raises(ValueError, match=r"kd on c: 700 1/s is not below 666.667, .*gravity_pd"):
        check_gains("gravity_pd", [400.0] * 3, [40.0, 40.0, 700.0], 1e-3, names)
    with pytest.raises(ValueError, match=r"kp on a: 1e\+06 1/s\^2 is not below 80000 "):
        check_gains("feedforward", [1e6, 400.0, 400.0], [40.0] * 3, 1e-3, names)


def test_gains_and_mode_validation():
    np.testing.assert_array_equal(gain_vector(5.0, 3, "kp"), [5.0, 5.0, 5.0])
    np.testing.assert_array_equal(gain_vector([1, 2, 3], 3, "kp"), [1.0, 2.0, 3.0])
    for bad in ([1, 2], -1.0, float("nan"), [[1, 2, 3]]):
        with pytest.raises(ValueError, match="kd"):
            gain_vector(bad, 3, "kd")
    assert critical_damping(400.0) == 40.0
    with pytest.raises(ValueError, match="mode must be one of.*'fast'"):
        check_mode("fast")


def test_continuous_joint_error_wraps():
    chain = load_chain(robot("c", link("b"), joint("j", "continuous", "b", "l"),
                             link("l", inertial(1.0, (0.1, 0, 0), np.eye(3) * 1e-3))))
    law = ControlLaw(chain, "gravity_pd", np.ones(1), np.ones(1))
    _, e, _ = law([-np.pi + 0.1], [0.0], [np.pi - 0.1], [0.0], [0.0])
    np.testing.assert_allclose(e, [-0.2], atol=1e-12)


def test_law_saturates_and_compensates_friction(arm):
    # ControlLaw = control_torque + B (qd + s period v) + friction * clip((kp e + kd qd_d) /
    # (kp deadband), -1, 1), clipped to the limits; v = qdd_d + kd ed + kp e, s = 1/2 where
    # period B is at most STAGED_DAMPING_MAX of the joint's inertia with the others free, 1
    # where the damping is stiffer (laws.period_damping)
    rng = np.random.default_rng(2)
    q, qd, q_d, qd_d, qdd_d = rng.uniform(-1, 1, (5, 7))
    q_d[:3] = q[:3] + rng.uniform(-2e-4, 2e-4, 3)  # some joints inside the deadband
    qd_d[:3] = 0.0
    kp, kd = np.full(7, 400.0), np.full(7, 40.0)
    limits = np.array([176, 176, 110, 110, 110, 40, 40], dtype=float) / 20
    raw = control_torque(arm, "computed_torque", q, qd, q_d, qd_d, qdd_d, kp, kd)
    damping, friction = np.full(7, 0.05), np.full(7, 0.5)  # the default arm has no friction
    damping[6] = 2.0  # stiff on the light wrist: 2e-3 * 2 against its 3.1e-3 kg m^2
    chain = dataclasses.replace(arm, joints=tuple(
        dataclasses.replace(j, damping=b, friction=f) for j, b, f in zip(arm.joints, damping,
                                                                         friction)))
    law = ControlLaw(chain, "computed_torque", kp, kd, limits, True, friction_deadband=1e-4,
                     period=2e-3)
    tau, e, ed = law(q, qd, q_d, qd_d, qdd_d)
    v = qdd_d + kd * (qd_d - qd) + kp * (q_d - q)
    share = np.clip((kp * (q_d - q) + kd * qd_d) / (kp * 1e-4), -1, 1)
    inertia = 1.0 / np.diag(np.linalg.inv(mass_matrix(chain, q)))
    s = np.where(2e-3 * damping <= STAGED_DAMPING_MAX * inertia, 0.5, 1.0)
    assert set(s) == {0.5, 1.0}  # both kinds of joint
    expected = np.clip(raw + damping * (qd + s * 2e-3 * v) + friction * share, -limits, limits)
    np.testing.assert_allclose(tau, expected, atol=1e-12)
    assert np.any(np.abs(share) < 1)  # the deadband was exercised
    np.testing.assert_allclose(e, q_d - q, atol=1e-15)
    np.testing.assert_allclose(ed, qd_d - qd, atol=1e-15)
    assert np.any(np.abs(tau) == limits)  # some joints saturated


def test_effort_limits_and_saturation(arm):
    limits = effort_limits(arm)
    np.testing.assert_array_equal(limits, [176, 176, 110, 110, 110, 40, 40])
    np.testing.assert_array_equal(saturate(np.full(7, 500.0), limits), limits)
    np.testing.assert_array_equal(effort_limits(arm, np.full(7, 5.0)), np.full(7, 5.0))
    with pytest.raises(ValueError, match="effort_limits"):
        effort_limits(arm, [1.0, 2.0])


def test_first_step_of_a_fall_follows_forward_dynamics(two_link):
    # From rest with zero effort: q(dt) = q0 + qdd0 dt^2 / 2 + O(dt^3).
    dt = 1e-3
    sim = Simulation(two_link, [0.5, -1.0], dt)
    qdd0 = forward_dynamics(two_link, sim.q, np.zeros(2), np.zeros(2))
    sim.step(np.zeros(2))
    np.testing.assert_allclose(sim.q, [0.5, -1.0] + 0.5 * qdd0 * dt**2, atol=10 * dt**3)
    np.testing.assert_allclose(sim.qd, qdd0 * dt, atol=10 * dt**2)
    assert sim.t == dt


def test_fall_matches_a_tight_reference_integration(two_link):
    integrate = require("scipy.integrate")
    sim = Simulation(two_link, [0.5, -1.0], 1e-3)
    for _ in range(500):
        sim.step(np.zeros(2))
    sol = integrate.solve_ivp(
        lambda _, x: np.concatenate([x[2:], forward_dynamics(two_link, x[:2], x[2:], np.zeros(2))]),
        (0, 0.5), [0.5, -1.0, 0, 0], method="DOP853", rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(sim.q, sol.y[:2, -1], atol=1e-6)


@pytest.mark.parametrize("arm_name, q0, bound", [("two_link", [0.5, -1.0], 1e-6),
                                                 ("default_arm", Q0, 1e-2)])
def test_rk4_energy_drift_in_free_motion(arm_name, q0, bound):
    # 10 s of undamped free fall at dt = 1 ms. Measured: 4e-7 J (2R), 1e-3 J (default arm,
    # kinetic energy up to 125 J); semi-implicit Euler drifts 2.3 J on the 2R (checked below).
    chain = load_chain(URDF_DIR / f"{arm_name}.urdf")
    sim = Simulation(chain, q0, 1e-3)
    sim.damping = np.zeros(chain.n)
    sim.position_min[:], sim.position_max[:] = -np.inf, np.inf

    def energy():
        return kinetic_energy(chain, sim.q, sim.qd) + potential_energy(chain, sim.q)

    e0, drift = energy(), 0.0
    for _ in range(10000):
        sim.step(np.zeros(chain.n))
        drift = max(drift, abs(energy() - e0))
    assert drift < bound
    assert np.ptp(sim.q) > 0.5  # it really moved


def test_semi_implicit_euler_drifts_more(two_link):
    sim = Simulation(two_link, [0.5, -1.0], 1e-3, integrator="semi_implicit_euler")
    sim.damping = np.zeros(2)
    e0 = potential_energy(two_link, sim.q)
    drift = 0.0
    for _ in range(10000):
        sim.step(np.zeros(2))
        drift = max(drift, abs(kinetic_energy(two_link, sim.q, sim.qd)
                               + potential_energy(two_link, sim.q) - e0))
    assert drift > 1e-2


def test_damping_dissipates_and_effort_saturates(two_link):
    sim = Simulation(two_link, [0.5, -1.0], 1e-3, effort_limits=np.array([1.0, 1.0]))
    sim.damping = np.array([0.5, 0.5])
    sim.step(np.array([100.0, -100.0]))
    np.testing.assert_array_equal(sim.tau, [1.0, -1.0])
    e0 = potential_energy(two_link, sim.q) + kinetic_energy(two_link, sim.q, sim.qd)
    for _ in range(3000):
        sim.step(np.zeros(2))
    assert potential_energy(two_link, sim.q) + kinetic_energy(two_link, sim.q, sim.qd) < e0 - 0.5


def test_position_limits_stop_the_joint(two_link):
    sim = Simulation(two_link, [0.0, 0.0], 1e-3)
    sim.position_min, sim.position_max = np.array([-0.2, -3.0]), np.array([3.0, 3.0])
    for _ in range(2000):  # the arm falls onto joint 1's lower limit
        sim.step(np.zeros(2))
        assert sim.q[0] >= -0.2
    # the stop is an impulse within the step: the joint rests on it, or joint 2's swing lifts
    # it off a little; it never goes through
    assert sim.q[0] == pytest.approx(-0.2, abs=1e-6) and sim.qd[0] >= 0


def test_bad_start_is_refused_not_integrated(two_link):
    # a NaN start would make every step a blow-up; say so at once instead
    for q0, dt in (([0.5, np.nan], 1e-3), ([0.5], 1e-3), ([0.5, -1.0], 0.0)):
        with pytest.raises(ValueError, match="q0|dt"):
            Simulation(two_link, q0, dt)


def test_hold_brakes_the_arm(two_link):
    sim = Simulation(two_link, [0.5, -1.0], 1e-3)
    for _ in range(100):
        sim.hold()
    np.testing.assert_array_equal(sim.q, [0.5, -1.0])
    assert sim.t == pytest.approx(0.1)


def test_blow_up_resets_to_the_last_finite_state(two_link):
    sim = Simulation(two_link, [0.5, -1.0], 1e-3)
    sim.step(np.zeros(2))
    q_before = sim.q.copy()
    with np.errstate(invalid="ignore"):
        assert sim.step(np.array([np.inf, 0.0])) is False  # effort limits are +-inf here
    np.testing.assert_array_equal(sim.q, q_before)
    np.testing.assert_array_equal(sim.qd, [0.0, 0.0])
    np.testing.assert_array_equal(sim.tau, [0.0, 0.0])  # nothing non-finite is published
    assert sim.blowups == 1 and sim.step(np.zeros(2)) is True
