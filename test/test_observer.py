"""The momentum observer and the wrench at a frame (dyn_control.controller.observer), in one
process.

References: Pinocchio (p = M qd from crba, C^T qd from computeCoriolisMatrix, g from
computeGeneralizedGravity; 1e-9 relative); the closed form of the observer's filter,
r = tau_ext (1 - e^(-K t)), and of its detection time -ln(1 - eps / A) / K; the truth the
simulator applies (J^T w of a push, -D qd of damping the model lacks, a payload's weight m g).
K_O = 50 1/s at 1 kHz, as the issue asks.
"""

import math

import numpy as np
import pytest
from conftest import BENT_POSE, DEFAULT_ARM, PIN_ARMS, URDF_DIR, require, robots_dir

from dyn_control import gravity_torques, load_chain, mass_matrix
from dyn_control.controller.laws import ControlLaw
from dyn_control.controller.observer import (
    GAP_STEPS,
    SINGULAR_VALUE,
    MomentumObserver,
    momentum_terms,
    wrench_at,
)
from dyn_control.controller.trajectory import Trajectory, sine_waypoints
from dyn_control.kernels.momentum import cholesky_solve_above
from dyn_control.kinematics import frame_jacobian
from dyn_control.sim.simulation import Simulation

K, DT = 50.0, 1e-3


@pytest.fixture(scope="module")
def arm():
    return load_chain(DEFAULT_ARM)


@pytest.fixture(scope="module")
def tree():
    return load_chain(URDF_DIR / "dual_arm.urdf", tip_links=["left_tool", "right_tool"])


@pytest.mark.parametrize("name", [*PIN_ARMS, "dual_arm_tree"])
def test_momentum_terms_match_pinocchio(name, tree):
    """p, C^T qd and g against Pinocchio, on real arms and on a tree."""
    pin = require("pinocchio")
    from pin_reference import PinReference
    if name == "dual_arm_tree":
        path, chain = URDF_DIR / "dual_arm.urdf", tree
    else:
        rel, kwargs = PIN_ARMS[name]
        path = robots_dir() / rel
        chain = load_chain(path, **kwargs)
    ref = PinReference(path, chain)
    m, d = ref.model, ref.data
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3))
        qd = rng.uniform(-2, 2, chain.n)
        p, ctqd, g = momentum_terms(chain, q, qd)
        qp, vp = ref.q_of(m, q), ref.v_of(m, qd)
        C = pin.computeCoriolisMatrix(m, d, qp, vp)
        for mine, theirs in ((p, ref.crba(q) @ qd), (ctqd, ref._pick(m, C.T @ vp)),
                             (g, ref._pick(m, pin.computeGeneralizedGravity(m, d, qp)))):
            np.testing.assert_allclose(mine, theirs, rtol=0,
                                       atol=1e-9 * max(1.0, np.abs(theirs).max()))


def balanced_push(chain, q, wrench, link, seconds):
    """The arm held exactly at rest against a push (tau = g - J^T w, so qdd = 0): the
    observer's (r, t) at every state, fed the torque applied over each step.
    """
    J = frame_jacobian(chain, q, link)
    tau = gravity_torques(chain, q) - J.T @ wrench
    sim, obs = Simulation(chain, q, DT), MomentumObserver(chain, K)
    sim.push(wrench, link)
    rs, ts = [], []
    for _ in range(int(round(seconds / DT))):
        rs.append(obs.update(sim.t, sim.q, sim.qd, tau).copy())
        ts.append(sim.t)
        sim.step(tau)
    return np.array(rs), np.array(ts), J


@pytest.mark.parametrize("name", ["default_arm", "panda"])
def test_a_constant_push_is_recovered_along_the_closed_form(name, arm):
    """A constant wrench at the hand: each joint's residual is J^T w (1 - e^(-K t)) to 1e-6
    relative, and after 10/K the wrench at the hand is w to 1e-3 relative (e^-10 = 4.5e-5).
    """
    if name == "panda":
        chain = load_chain(robots_dir() / PIN_ARMS["panda"][0], tip_link="panda_hand")
        q = np.array([0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8])
    else:
        chain, q = arm, np.array(BENT_POSE)
    w = np.array([12.0, -7.0, 20.0, 1.5, -0.8, 0.6])
    link = chain.tip_link
    rs, ts, J = balanced_push(chain, q, w, link, 10 / K + 0.01)
    truth = np.outer(1.0 - np.exp(-K * ts), J.T @ w)
    assert np.abs(rs - truth).max() <= 1e-6 * np.abs(J.T @ w).max()
    F, singular = wrench_at(chain, q, rs[-1], link)
    assert not singular
    assert np.linalg.norm(F - w) <= 1e-3 * np.linalg.norm(w)


def test_detection_latency_matches_the_closed_form(arm):
    """A step of A on one joint crosses a threshold eps at -ln(1 - eps/A)/K, within 2 samples."""
    q = np.array(BENT_POSE)
    A, eps = 8.0, 3.0
    J = frame_jacobian(arm, q)
    # a force at the hand whose joint torques are largest on joint 2 (index 1)
    force = np.linalg.lstsq(J.T, np.eye(7)[1] * A, rcond=None)[0]
    rs, ts, J = balanced_push(arm, q, force, arm.tip_link, 0.1)
    truth = J.T @ force
    k = int(np.argmax(np.abs(truth)))
    first = ts[np.argmax(np.abs(rs[:, k]) >= eps)]
    expected = -math.log(1 - eps / abs(truth[k])) / K
    assert abs(first - expected) <= 2 * DT, (first, expected)


def hold_with_push(chain, q0, wrench, link, seconds, sim_chain=None, damped=True):
    """The arm held at q0 by computed torque while `wrench` pushes `link` from t = 0.05 s: the
    observer's residuals at every state, and the simulation. damped False: no joint damping in
    the simulator, the law or the observer. The simulator takes damping implicitly, -B qd(t1)
    dt over a step where the continuous truth is -B (q1 - q0): first order in dt, 2.5e-5 qdd
    on the default arm, above the isolation's 1e-6; without it both sides agree.
    """
    n = chain.n
    zero = np.zeros(n)
    law = ControlLaw(chain, "computed_torque", np.full(n, 400.0), np.full(n, 40.0),
                     friction_compensation=damped)
    obs = MomentumObserver(chain, K, damping=None if damped else zero)
    sim = Simulation(sim_chain or chain, q0, DT)
    if not damped:
        sim.damping[:] = 0.0
    rs, tau = [], None
    for k in range(int(round(seconds / DT))):
        if k == 50:
            sim.push(wrench, link)
        command = law(sim.q, sim.qd, q0, zero, zero, DT)[0]
        rs.append(obs.update(sim.t, sim.q, sim.qd, command if tau is None else tau).copy())
        tau = command
        sim.step(tau)
    return np.array(rs), sim


def test_a_push_on_a_link_leaves_the_joints_beyond_it_alone(arm):
    """Isolation: a push on link3 moves the arm, but the residuals of joints 4 to 7 stay
    within 1e-6 N m, while those of joints 1 to 3 read it.
    """
    rs, sim = hold_with_push(arm, np.array(BENT_POSE), [15.0, -10.0, 5.0, 0, 0, 0], "link3",
                             0.5, damped=False)
    assert np.abs(rs[:, 3:]).max() <= 1e-6
    assert np.abs(rs[-1, :3]).max() > 1.0
    assert np.abs(sim.q - np.array(BENT_POSE)).max() > 1e-4  # it did move


def test_on_a_tree_only_the_pushed_links_ancestors_respond(tree):
    """A push on the left arm's link4: the torso and left joints 1 to 4 respond; left joints 5
    to 7 and the whole right arm stay within 1e-6 N m.
    """
    chain = tree
    q0 = np.array([0.2, 0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0, 0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])
    rs, _ = hold_with_push(chain, q0, [0.0, 20.0, -10.0, 0, 0, 0], "left_link4", 0.5,
                           damped=False)
    names = chain.joint_names
    quiet = [i for i, name in enumerate(names)
             if name.startswith("right") or name in ("left_joint5", "left_joint6", "left_joint7")]
    loud = [names.index(j) for j in ("torso_lift_joint", "left_joint1", "left_joint2")]
    assert np.abs(rs[:, quiet]).max() <= 1e-6
    assert np.abs(rs[-1, loud]).max() > 1.0


def test_no_contact_along_the_demo_motion(arm):
    """No contact along the demo's sines at twice the demo's frequency (0.4 Hz, 0.3 rad), the
    damping compensated: |r| <= 5e-3 N m throughout, under a 1 N m contact level.
    """
    q0 = np.array(BENT_POSE)
    times, q, qd, qdd = sine_waypoints(q0, arm.lower, arm.upper, duration=4.0, frequency=0.4,
                                       ramp=1.0)
    trajectory = Trajectory(0.0, (q0, np.zeros(7), np.zeros(7)), times, q, qd, qdd)
    n = arm.n
    law = ControlLaw(arm, "computed_torque", np.full(n, 400.0), np.full(n, 40.0),
                     friction_compensation=True)
    sim, obs = Simulation(arm, q0, DT), MomentumObserver(arm, K)
    tau, worst, speed = None, 0.0, 0.0
    for _ in range(4000):
        command = law(sim.q, sim.qd, *trajectory.sample(sim.t), DT)[0]
        worst = max(worst, np.abs(obs.update(sim.t, sim.q, sim.qd,
                                             command if tau is None else tau)).max())
        speed = max(speed, np.abs(sim.qd).max())
        tau = command
        sim.step(tau)
    assert speed > 0.3  # it moved
    assert worst <= 5e-3


def test_lost_states_restart_the_integral_instead_of_reading_as_contact(arm):
    """The demo's motion under computed torque, no push, with stretches of states lost: the
    observer sees 20 ms with only the last step's torque, while the torque over the gap was
    another one (the command before the gap, 1.5x). The integral starts again after a gap
    longer than GAP_STEPS steps, so |r| stays under 5e-3 N m (2.1e-3 seen; reference: no
    external torque). Without the restart the same gaps read over 1 N m (4.8 seen); a single
    lost state (2 ms) is still integrated.
    """
    q0 = np.array(BENT_POSE)
    times, q, qd, qdd = sine_waypoints(q0, arm.lower, arm.upper, duration=4.0, frequency=0.4,
                                       ramp=1.0)
    trajectory = Trajectory(0.0, (q0, np.zeros(7), np.zeros(7)), times, q, qd, qdd)
    law = ControlLaw(arm, "computed_torque", np.full(7, 400.0), np.full(7, 40.0),
                     friction_compensation=True)

    def run(gap_steps):
        sim, obs = Simulation(arm, q0, DT), MomentumObserver(arm, K)
        obs.gap_steps = gap_steps
        worst = 0.0
        for k in range(4000):
            gap = k % 500 in range(480, 500)  # 20 ms lost every 0.5 s
            command = law(sim.q, sim.qd, *trajectory.sample(sim.t), DT)[0]
            sim.step(1.5 * command if gap else command)
            if k % 500 == 499 or not gap:
                worst = max(worst, np.abs(obs.update(sim.t, sim.q, sim.qd, sim.tau)).max())
        return worst

    assert run(GAP_STEPS) <= 5e-3
    assert run(1e9) > 1.0  # the same gaps, never restarted: the reason for the rule
    obs = MomentumObserver(arm, K)
    for t in (0.0, 1e-3, 2e-3, 4e-3):  # one lost state: integrated
        dt, _, started = obs.step(t)
    assert started and dt == pytest.approx(2e-3)
    dt, _, started = obs.step(4e-3 + 20e-3)  # a stretch lost: started again
    assert not started and dt == 0.0


def test_a_payload_reads_as_its_weight_then_vanishes_once_declared(arm):
    """An unmodelled 1 kg payload 5 cm beyond the tip: at rest the hand's estimated force is
    m g to 1 %; with the payload declared (model and observer), r falls under 5e-3 N m.
    """
    q0, n = np.array(BENT_POSE), arm.n
    heavy = arm.with_payload(1.0, com=(0.0, 0.0, 0.05))
    rs, sim = hold_with_push(arm, q0, np.zeros(6), arm.tip_link, 1.5, sim_chain=heavy)
    F, _ = wrench_at(arm, sim.q, rs[-1])
    weight = 1.0 * arm.gravity  # the base frame's gravity (m/s^2) times 1 kg
    assert np.linalg.norm(F[:3] - weight) <= 0.01 * np.linalg.norm(weight)
    # declared: the law and the observer take the payload's model, r decays from where it was
    obs = MomentumObserver(heavy, K, r=rs[-1])
    law = ControlLaw(heavy, "computed_torque", np.full(n, 400.0), np.full(n, 40.0),
                     friction_compensation=True)
    zero, tau = np.zeros(n), None
    for _ in range(400):
        command = law(sim.q, sim.qd, q0, zero, zero, DT)[0]
        r = obs.update(sim.t, sim.q, sim.qd, command if tau is None else tau)
        tau = command
        sim.step(tau)
    assert np.abs(r).max() <= 5e-3


def test_unmodelled_damping_reads_as_minus_d_qd_filtered(arm):
    """The simulated arm has damping D = 2 N m s/rad that the observer does not know: r follows
    the truth -D qd, whose integral over a control period is -D (q1 - q0), through the
    observer's filter, to 1e-3 of its peak. The simulator steps 10 times per period: its
    implicit damping is first order in its step, 0.5 % of the peak at one step per period.
    """
    q0, n = np.array(BENT_POSE), arm.n
    times, q, qd, qdd = sine_waypoints(q0, arm.lower, arm.upper, duration=3.0, frequency=0.4)
    trajectory = Trajectory(0.0, (q0, np.zeros(n), np.zeros(n)), times, q, qd, qdd)
    law = ControlLaw(arm, "computed_torque", np.full(n, 400.0), np.full(n, 40.0))
    sim, obs = Simulation(arm, q0, DT / 10), MomentumObserver(arm, K, damping=np.zeros(n))
    sim.damping[:] = 2.0
    decay, tau, filtered, worst, peak = math.exp(-K * DT), None, np.zeros(n), 0.0, 0.0
    before = sim.q.copy()
    for k in range(3000):
        command = law(sim.q, sim.qd, *trajectory.sample(sim.t), DT)[0]
        r = obs.update(sim.t, sim.q, sim.qd, command if tau is None else tau)
        if k:
            filtered = decay * filtered + (1 - decay) * (-2.0 * (sim.q - before) / DT)
        before = sim.q.copy()
        worst, peak = max(worst, np.abs(r - filtered).max()), max(peak, np.abs(filtered).max())
        tau = command
        for _ in range(10):
            sim.step(tau)
    assert peak > 0.3
    assert worst <= 1e-3 * peak


def test_the_wrench_stays_finite_and_flagged_at_a_singularity(arm):
    """Stretched straight up, the default arm's hand Jacobian loses rank: the wrench is finite,
    flagged, and still explains the torques the joints can feel.
    """
    q = np.zeros(7)
    J = frame_jacobian(arm, q)
    assert np.linalg.svd(J, compute_uv=False).min() < 1e-9
    w = np.array([5.0, -3.0, 2.0, 0.1, 0.2, -0.3])
    F, singular = wrench_at(arm, q, J.T @ w)
    assert singular and np.all(np.isfinite(F))
    np.testing.assert_allclose(J.T @ F, J.T @ w, atol=1e-9)
    F, singular = wrench_at(arm, BENT_POSE, np.zeros(7))
    assert not singular and not F.any()
    # away from it, the wrench against numpy's pseudo-inverse of J^T (SVD), 1e-9 relative
    J = frame_jacobian(arm, np.array(BENT_POSE))
    tau = J.T @ w + np.linspace(-0.3, 0.3, 7)  # with a part no wrench explains
    F, _ = wrench_at(arm, BENT_POSE, tau)
    np.testing.assert_allclose(F, np.linalg.pinv(J.T) @ tau, rtol=0, atol=1e-9 * np.abs(F).max())


def test_the_wrench_is_flagged_exactly_where_a_singular_value_drops(arm):
    """Towards the stretched pose, the flag is set exactly where numpy's smallest singular
    value of J goes below SINGULAR_VALUE, and F is the SVD pseudo-inverse with those values
    dropped (a Cholesky solve above it, the eigen-decomposition below: the same answer), to
    1e-6 relative (J J^T's condition is the square of J's at the threshold).
    """
    w = np.array([5.0, -3.0, 2.0, 0.1, 0.2, -0.3])
    seen = set()
    for s in np.linspace(0.0, 0.3, 61):
        q = s * np.array(BENT_POSE)
        J = frame_jacobian(arm, q)
        U, sv, Vt = np.linalg.svd(J.T, full_matrices=False)  # J^T = U diag(sv) Vt
        tau = J.T @ w + np.linspace(-0.3, 0.3, 7)
        kept = sv > SINGULAR_VALUE
        expected = Vt[kept].T @ ((U[:, kept].T @ tau) / sv[kept])
        F, singular = wrench_at(arm, q, tau)
        assert singular == (not kept.all()), (s, sv.min())
        np.testing.assert_allclose(F, expected, rtol=0, atol=1e-6 * np.abs(expected).max())
        seen.add(singular)
    assert seen == {True, False}  # the sweep crossed the threshold


def test_the_cholesky_shortcut_is_taken_only_above_the_smallest_eigenvalue():
    """cholesky_solve_above on random symmetric 6 x 6 matrices with eigenvalues around the
    level: it solves (numpy's solve, to 1e-12 times A's condition, relative) only where
    numpy's smallest eigenvalue is above the level; it says no where that is below 1/6 of
    the level (the trace bound), and leaves x untouched then.
    """
    rng = np.random.default_rng(3)
    level, taken = 1e-6, 0
    for _ in range(300):
        V, _ = np.linalg.qr(rng.normal(size=(6, 6)))
        s = 10.0 ** rng.uniform(-8, 1, 6)
        A = (V * s) @ V.T
        b, x = rng.normal(size=6), np.full(6, np.nan)
        if cholesky_solve_above(A, b, level, x):
            taken += 1
            assert np.linalg.eigvalsh(A).min() > level
            expected = np.linalg.solve(A, b)
            np.testing.assert_allclose(x, expected, rtol=0, atol=1e-12 * np.linalg.cond(A)
                                       * np.abs(expected).max())
        else:
            assert np.isnan(x).all()  # untouched
            assert s.min() <= 6 * level  # no by the trace bound: within a factor 6 of the level
    assert 50 < taken < 250


def test_mass_times_velocity_is_the_momentum(arm):
    """p = M qd (crba of the same package, an identity) on the default arm."""
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-1, 1, (2, 7))
    np.testing.assert_allclose(momentum_terms(arm, q, qd)[0], mass_matrix(arm, q) @ qd,
                               atol=1e-12)


def test_a_joint_that_sticks_in_its_friction_reads_no_contact_and_a_push_beyond_it_does():
    """The seeds' 2R arm with 1 N m of Coulomb friction per joint, held by g(q) plus 0.6 N m
    on joint 1: the simulator's friction sticks and holds that 0.6 N m, which the residual r
    reads as a torque against it (its filter's closed form -0.6 (1 - e^(-K t))), while felt,
    what the observer gives as the world's, stays 0: it cannot be told from friction. At rest the
    filtered band is 1 - e^(-K t) of the friction, so a 3 N m residual is felt as 3 - 1 once it has
    settled.
    """
    from dataclasses import replace
    two = load_chain(URDF_DIR / "two_link.urdf")
    chain = replace(two, joints=tuple(replace(j, friction=1.0) for j in two.joints))
    q0 = np.array([0.4, -0.3])
    sim = Simulation(chain, q0, DT)
    observer = MomentumObserver(chain, K)
    extra = np.array([0.6, 0.0])
    for _ in range(200):
        tau = gravity_torques(chain, sim.q) + extra
        observer.update(sim.t, sim.q, sim.qd, tau)
        sim.step(tau)
    t = sim.t - DT  # the last update's time
    assert np.abs(sim.qd).max() == 0.0  # stuck: friction holds it
    assert observer.r[0] == pytest.approx(-0.6 * (1 - math.exp(-K * t)), rel=1e-3)
    assert np.all(observer.felt == 0.0)
    observer.r[:] = (3.0, -3.0)  # a residual far beyond the friction, the arm at rest
    observer.update(sim.t, sim.q, sim.qd, gravity_torques(chain, sim.q) + extra)
    band = 1.0 - math.exp(-K * (sim.t))
    np.testing.assert_allclose(np.abs(observer.felt), np.abs(observer.r) - band, atol=0.02)
