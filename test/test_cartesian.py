"""The cartesian_impedance mode on the controller core, in a synchronous in-process loop with the
simulated arm at 1 kHz (and pushes from the simulator's external wrench).

References: closed forms. The static stiffness is K exactly (the module docstring of
dyn_control.controller.cartesian): under a wrench w the pose settles at -w/K. With operational_space
and critical damping the error is a unit-mass critically damped spring (no overshoot; bound 2 %).
The dynamically consistent projector moves no task coordinate (bound 1e-4 m). Bounds are
stated at each test with what was measured.
"""

from dataclasses import replace

import numpy as np
import pytest
from arm_sweep import arm_paths, load_arm, real_arms
from conftest import URDF_DIR, read_table

from dyn_control import kinematics, load_chain
from dyn_control.controller.cartesian import CartesianLaw
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import Request
from dyn_control.controller.settings import controller_settings
from dyn_control.model.chain import effort_limits
from dyn_control.parameters import CONTROLLER
from dyn_control.sim.simulation import Simulation

DT = 1e-3
Q0 = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])  # the default arm, bent


@pytest.fixture(scope="module")
def chain():
    return load_chain(URDF_DIR / "default_arm.urdf")


# The law alone: its transients and equilibria, not the start's ramp, the rate limit or the
# barriers, which test_limits.py checks on the same loop
LAW_ONLY = {"max_effort_rate": 0.0, "soft_start": 0.0, "limits.enabled": False}


def make_core(chain, **overrides):
    return ControllerCore(controller_settings(
        chain, read_table(CONTROLLER, chain, **{"mode": "cartesian_impedance", **LAW_ONLY,
                                           **overrides})))


class Loop:
    """A core and a simulated arm, stepped together (synchronous, as the simulator runs)."""

    def __init__(self, chain, q0=Q0, **overrides):
        self.chain = chain
        self.core = make_core(chain, **overrides)
        self.sim = Simulation(chain, q0, DT, effort_limits(chain))
        self.commands = []

    def run(self, seconds):
        for _ in range(int(round(seconds / DT))):
            command = self.core.update(0.0, (self.sim.t, self.sim.q.copy(), self.sim.qd.copy()))
            assert command is not None and np.all(np.isfinite(command.tau))
            self.commands.append(command)
            self.sim.step(command.tau)
        return self

    def pose(self, link=None):
        return kinematics.frame_pose(self.chain, self.sim.q, link)


def displacement(R, p, R0, p0):
    """(dp (3,), dtheta (3,)): a pose relative to another, base axes."""
    return p - p0, kinematics.rotation_log(R @ R0.T)


def test_static_stiffness_is_k_under_a_push(chain):
    # At rest under a constant wrench on the end effector the pose moves by F/K (closed form),
    # within 2 % on every axis, translation and rotation, with the nullspace on (7 joints).
    loop = Loop(chain).run(0.1)
    R0, p0 = loop.pose()
    K = loop.core.cartesian.K
    push = np.array([8.0, -6.0, 5.0, 0.4, -0.3, 0.2])  # N, N m
    loop.sim.push(push)
    loop.run(4.0)
    dp, dth = displacement(*loop.pose(), R0, p0)
    expected = push / K
    print(f"push: displacement / (F/K) = {np.concatenate([dp, dth]) / expected}")
    np.testing.assert_allclose(np.concatenate([dp, dth]), expected, rtol=0.02)
    assert np.abs(loop.sim.qd).max() < 1e-4  # at rest
    loop.sim.push(np.zeros(6))  # released: back to the target
    loop.run(3.0)
    dp, dth = displacement(*loop.pose(), R0, p0)
    assert np.abs(dp).max() < 1e-5 and np.abs(dth).max() < 1e-4


def test_in_operational_space_the_static_stiffness_is_lambda_k(chain):
    # With inertia shaping F = Lambda K e + ..., so at rest under a wrench w: Lambda K e = -w
    # (closed form, Lambda at the pose where it settles), within 2 %
    loop = Loop(chain, operational_space=True).run(0.1)
    push = np.array([2.0, -1.5, 1.0, 0.02, -0.015, 0.01])
    loop.sim.push(push)
    loop.run(4.0)
    e = loop.commands[-1].task
    Lam = kinematics.operational_space_inertia(chain, loop.sim.q)
    np.testing.assert_allclose(Lam @ (loop.core.cartesian.K * e), -push, rtol=0.02,
                               atol=0.02 * np.abs(push).min())


def test_a_target_step_converges_without_overshoot_in_operational_space(chain):
    # 5 cm / 0.2 rad step: within 0.5 mm / 5 mrad after 2 s; unit-mass critically damped, so
    # the overshoot along the step is below 2 % (measured: printed)
    loop = Loop(chain, operational_space=True).run(0.1)
    R0, p0 = loop.pose()
    step_p, step_r = np.array([0.03, -0.03, 0.0286]), np.array([0.1, 0.1, -0.1155])
    from scipy.spatial.transform import Rotation
    R_t = Rotation.from_rotvec(step_r).as_matrix() @ R0
    loop.core.set_target_pose(R_t, p0 + step_p)
    start = len(loop.commands)
    loop.run(2.0)
    dp, dth = displacement(*loop.pose(), R_t, p0 + step_p)
    assert np.linalg.norm(dp) < 5e-4 and np.linalg.norm(dth) < 5e-3
    # overshoot per axis: how far past the target it went, as a share of the step
    errors = np.array([c.task for c in loop.commands[start:]])  # e = target - pose
    steps = np.concatenate([step_p, step_r])
    overshoot = np.max(-errors * np.sign(steps), axis=0) / np.abs(steps)
    print(f"overshoot per axis: {np.round(overshoot, 4)}")
    assert np.all(overshoot < 0.02)


@pytest.mark.parametrize("operational_space, bound", [(True, (1e-4, 1e-4)), (False, (3e-4, 3e-3))])
def test_the_nullspace_moves_the_elbow_and_not_the_hand(chain, operational_space, bound):
    # A posture with the same hand pose (found by walking the self-motion, kinematic
    # projector): the posture converges to it while the hand stays within `bound` (m, rad).
    # operational_space: 1e-4 m, 1e-4 rad (measured 3.9e-7 m, 4.5e-5 rad: the projector and
    # J-dot qd decouple the task exactly, the URDF damping compensated). The impedance law
    # leaves the joints' own damping in, which the self-motion turns into a push on the hand:
    # 3e-4 m, 3e-3 rad (measured 1.5e-4 m, 1.2e-3 rad).
    q_goal = Q0.copy()
    R0, p0 = kinematics.frame_pose(chain, Q0)
    for _ in range(300):
        J = kinematics.frame_jacobian(chain, q_goal)
        null = np.eye(7) - np.linalg.pinv(J) @ J
        q_goal = q_goal + 1e-3 * null[:, 0] / np.linalg.norm(null[:, 0])
        dp, dth = displacement(*kinematics.frame_pose(chain, q_goal), R0, p0)  # back on the pose
        q_goal = q_goal + np.linalg.pinv(J) @ np.concatenate([-dp, -dth])
    assert np.abs(q_goal - Q0).max() > 0.1
    loop = Loop(chain, nullspace_stiffness=20.0, operational_space=operational_space).run(0.1)
    R_start, p_start = loop.pose()
    loop.core.set_target_joint(np.arange(7), q_goal)
    worst = np.zeros(2)
    for _ in range(40):
        loop.run(0.1)
        dp, dth = displacement(*loop.pose(), R_start, p_start)
        worst = np.maximum(worst, [np.abs(dp).max(), np.abs(dth).max()])
    print(f"hand moved at most {worst[0]:.2e} m, {worst[1]:.2e} rad; posture error "
          f"{np.abs(loop.sim.q - q_goal).max():.2e} rad")
    assert worst[0] < bound[0] and worst[1] < bound[1]
    assert np.abs(loop.sim.q - q_goal).max() < 0.01


def test_at_a_singular_pose_the_command_stays_bounded(chain):
    # Straight up (q = 0) the default arm is singular; a target 5 cm off sideways: every
    # command finite and within the effort limits, and the arm does not run away
    loop = Loop(chain, q0=np.zeros(7)).run(0.1)
    R0, p0 = loop.pose()
    loop.core.set_target_pose(R0, p0 + np.array([0.05, 0.0, 0.0]))
    loop.run(2.0)
    taus = np.array([c.tau for c in loop.commands])
    assert np.all(np.isfinite(taus)) and np.all(np.abs(taus) <= loop.core.limits + 1e-9)
    assert np.abs(loop.sim.qd).max() < 5.0


def test_a_target_1_m_away_is_approached_through_the_clipped_error(chain):
    loop = Loop(chain).run(0.1)
    R0, p0 = loop.pose()
    far = p0 + np.array([-0.6, 0.5, -0.6])  # about 1 m, beyond reach
    loop.core.set_target_pose(R0, far)
    start = len(loop.commands)
    loop.run(1.0)
    errors = np.array([c.task for c in loop.commands[start:]])
    assert np.linalg.norm(errors[:, :3], axis=1).max() <= 0.1 + 1e-12  # max_pose_error, m
    steps = np.abs(np.diff([c.tau for c in loop.commands[start - 1:]], axis=0)).max(axis=0)
    # the largest step: J^T of the clipped force, 500 N/m x 0.1 m (the damping adds little)
    J = kinematics.frame_jacobian(chain, loop.sim.q)
    bound = np.abs(J[:3]).sum(axis=0) * 500.0 * 0.1
    print(f"largest torque step {steps.max():.2f} N m (bound {bound.max():.2f})")
    assert np.all(steps <= 1.2 * bound + 0.1)
    assert np.linalg.norm(loop.pose()[1] - far) < np.linalg.norm(p0 - far) - 0.05


def test_switching_modes_while_moving_steps_the_torque_only_by_the_new_law(chain):
    # computed_torque on a trajectory -> cartesian_impedance -> computed_torque, while the arm
    # moves. At each switch the command is the new law at the state with the current state as
    # its reference (reference: the law on arrays); nothing else (no stale target).
    loop = Loop(chain, mode="computed_torque").run(0.1)
    loop.core.offer(Request(tuple(chain.joint_names), 0.0, ((2.0, Q0 + 0.3, (), ()),)))
    loop.run(0.8)
    q, qd = loop.sim.q.copy(), loop.sim.qd.copy()
    before = loop.commands[-1].tau
    settings = replace(loop.core.settings, mode="cartesian_impedance")
    loop.core.configure(settings)
    loop.run(0.001)
    R, p = kinematics.frame_pose(chain, q)
    law = CartesianLaw(chain, limits=loop.core.limits)
    expected = law(q, qd, R, p, np.zeros(6), q)[0]
    np.testing.assert_allclose(loop.commands[-1].tau, expected, atol=1e-9)
    print(f"into cartesian: step {np.abs(expected - before).max():.3f} N m at "
          f"{np.abs(qd).max():.2f} rad/s")
    loop.run(0.3)
    q, qd = loop.sim.q.copy(), loop.sim.qd.copy()
    loop.core.configure(replace(loop.core.settings, mode="computed_torque"))
    loop.run(0.001)
    zero = np.zeros(7)  # the hold of the measured position: q_d = q, at rest
    np.testing.assert_allclose(loop.commands[-1].tau, loop.core.law(q, qd, q, zero, zero)[0],
                               atol=1e-9)


SIX_PLUS = [rel for rel in arm_paths() if load_arm(rel).n >= 6]
# the Talos arm's tip is a gripper finger whose joint cannot be driven (its friction is its
# effort limit, 1 N m): its Cartesian frame is the wrist
EE_LINK = {"talos_data/robots/talos_left_arm.urdf": "arm_left_7_link"}


@pytest.mark.parametrize("operational_space", [True, False])
@pytest.mark.parametrize("rel", SIX_PLUS)
def test_every_arm_holds_its_pose_and_reaches_a_2_cm_offset(rel, operational_space):
    # Each arm with its own damping, friction and limits, from its bent pose: under gravity the
    # hand holds (within 1e-4 m over 1 s), then it reaches a target 2 cm off. With
    # operational_space (unit-mass response, the URDF damping compensated): within 5e-4 m in
    # 3 s (measured up to 2.6e-4, Tiago's 1000 N s/m torso). The impedance law leaves the
    # damping in (it keeps light wrists stable), and its stiffness is scaled per arm below the
    # control period's limit (fastest_mode): within 2e-3 m in 5 s.
    from arm_sweep import bent_pose
    chain = load_arm(rel)
    q0 = bent_pose(chain)
    ee = {"ee_link": EE_LINK.get(rel, "")}
    stiffness = np.array(CONTROLLER["cartesian_stiffness"].default)
    if not operational_space:  # translation and rotation each scaled to fastest_mode <= 0.5 / DT
        for part in (slice(0, 3), slice(3, 6)):
            alone = np.zeros(6)
            alone[part] = stiffness[part]
            fastest = CartesianLaw(chain, EE_LINK.get(rel), alone).fastest_mode(q0)
            stiffness[part] *= min(1.0, (0.5 / (fastest * DT)) ** 2)
    loop = Loop(chain, q0=q0, operational_space=operational_space,
                cartesian_stiffness=list(stiffness), **ee).run(1.0)
    R0, p0 = loop.pose(ee["ee_link"] or None)
    held = np.linalg.norm(p0 - kinematics.frame_pose(chain, q0, ee["ee_link"] or None)[1])
    target = p0 + np.array([0.0, 0.02, 0.0])
    loop.core.set_target_pose(R0, target)
    loop.run(3.0 if operational_space else 5.0)
    reached = np.linalg.norm(loop.pose(ee["ee_link"] or None)[1] - target)
    print(f"{rel}: drift while holding {held:.2e} m, off the 2 cm target {reached:.2e} m")
    assert held < 1e-4 and reached < (5e-4 if operational_space else 2e-3)


def test_a_stiffness_the_period_cannot_hold_is_refused_at_run_time_and_not_entered_at_start(chain):
    # Reference: the sampled loop's bound for the stiffest mode, w T < 1 (control.py,
    # controller.target.too_stiff), w from CartesianLaw.fastest_mode at the pose.
    core = make_core(chain)
    core.update(0.0, (0.0, Q0, np.zeros(7)))  # in the mode, holding the pose it found
    stiff = controller_settings(chain, read_table(CONTROLLER, chain, mode="cartesian_impedance",
                                                  cartesian_stiffness=[1e7] * 6))
    assert CartesianLaw(chain, stiffness=[1e7] * 6).fastest_mode(Q0) * 1e-3 > 1.0
    before = core.settings
    with pytest.raises(ValueError, match=r"cartesian_stiffness: the stiffest mode .* rad/s, beyond "
                                         r"1/control_period \(1000 rad/s\)"):
        core.configure(stiff)
    assert core.settings is before and core.target.refused is None  # nothing changed
    # given before any state (at start-up), the mode is not entered: the joints hold
    core = ControllerCore(stiff)
    command = core.update(0.0, (0.0, Q0, np.zeros(7)))
    assert core.target.task is None
    assert core.target.refused.startswith("cartesian_impedance not entered")
    np.testing.assert_array_equal(command.desired[0], Q0)  # the joint hold of the first state
    level, message, _ = core.diagnostics()
    assert level == "WARN" and message.startswith("holding: cartesian_impedance not entered")
    with pytest.raises(ValueError, match="target_pose ignored: cartesian_impedance not entered"):
        core.set_target_pose(np.eye(3), np.zeros(3))


@pytest.mark.parametrize("rel", ["panda_description/urdf/panda.urdf",
                                 "ur_description/urdf/ur5_robot.urdf",
                                 "double_pendulum_description/urdf/double_pendulum.urdf"])
def test_the_decompositions_started_from_the_last_tick_give_the_cold_starts_command(rel):
    # The law starts its two eigen-decompositions (Lambda's damped inverse, the critical
    # damping) from the last call's eigenvectors. Reference: the same law started from the
    # axes at every call, along a motion through the whole range of every joint, on a 7-joint,
    # a 6-joint and a 2-joint arm (singular in four directions). Bound: 1e-12 of the
    # command's largest torque, or, where the law's own round-off is larger, twice the spread
    # between two cold starts (from the axes, and from the axes in reverse order, which
    # only reorders the Jacobi rotations). Measured: Panda 2.2e-13 (spread 4.2e-13), UR5
    # 1.1e-10 (spread 1.4e-10: its path passes its wrist's singularity), pendulum 4e-16.
    from arm_sweep import bent_pose
    chain = load_arm(rel)
    warm, cold = CartesianLaw(chain), CartesianLaw(chain)
    lower, upper = np.nan_to_num(chain.lower, neginf=-3.0), np.nan_to_num(chain.upper, posinf=3.0)
    q0 = bent_pose(chain)
    R_d, p_d = kinematics.frame_pose(chain, q0)
    worst = spread = 0.0
    for k in range(400):
        s = 0.5 - 0.5 * np.cos(np.pi * k / 100 + np.arange(chain.n))
        q, qd = lower + s * (upper - lower), 0.3 * np.sin(0.1 * k + np.arange(chain.n))
        tau_warm, _ = warm(q, qd, R_d, p_d, np.zeros(6), q0)
        taus = []
        for start in (np.eye(6), np.eye(6)[::-1]):
            cold.bases[:] = start
            taus.append(cold(q, qd, R_d, p_d, np.zeros(6), q0)[0])
        largest = np.abs(taus[0]).max()
        worst = max(worst, np.abs(tau_warm - taus[0]).max() / largest)
        spread = max(spread, np.abs(taus[1] - taus[0]).max() / largest)
    print(f"{rel}: warm against cold start {worst:.2e} of the largest torque, two cold starts "
          f"{spread:.2e}")
    assert worst < max(1e-12, 2.0 * spread)


@pytest.mark.parametrize("rel, keywords", real_arms(), ids=lambda x: str(x).split("/")[-1])
def test_the_command_does_not_jump_under_a_round_off_change_of_q(rel, keywords):
    # The law and the operational-space inertia are continuous in q away from the law's clips:
    # a change of q of 1e-15 rad, the size of round-off, moves them by round-off. Reference:
    # each at q. Bound: 1e-9 of the largest torque (of Lambda's largest entry), on every arm of
    # example-robot-data at 10 random states (measured: at most 8.8e-12, the UR10; on the
    # 3-joint finger, whose task has three directions it cannot move in, the command moved by
    # 3.1e-2 and Lambda by 3.7e-6 while round-off's eigenvalues kept a damped gain).
    from conftest import robots_dir

    chain = load_arm(rel) if not keywords else load_chain(robots_dir() / rel, **keywords)
    rng = np.random.default_rng(1)
    worst = {"command": 0.0, "Lambda": 0.0}
    for _ in range(10):
        q, qd = rng.uniform(-1, 1, (2, chain.n))
        R, p = kinematics.frame_pose(chain, q + 0.05, chain.tip_link)
        w = rng.uniform(-1, 1, 6)
        taus = [CartesianLaw(chain, limits=effort_limits(chain), friction_compensation=True)(
            q + dq, qd, R, p, w, q)[0] for dq in (0.0, 1e-15)]
        worst["command"] = max(worst["command"],
                               np.abs(taus[1] - taus[0]).max() / np.abs(taus[0]).max())
        inertias = [kinematics.operational_space_inertia(chain, q + dq) for dq in (0.0, 1e-15)]
        worst["Lambda"] = max(worst["Lambda"], np.abs(inertias[1] - inertias[0]).max()
                              / np.abs(inertias[0]).max())
    assert worst["command"] < 1e-9 and worst["Lambda"] < 1e-9, worst
