"""Each stage of a controller tick on its own (dyn_control.controller), without the core that
composes them: the watchdog's timing, the limits' rate bound, the goal tracker's door, the Cartesian
target's entry and filter, the statistics, and settings that are the laws' keyword arguments.
References: closed forms (the rate bound, the first-order filter), and the stages' rules.
"""

import dataclasses

import numpy as np
import pytest
from conftest import URDF_DIR, read_table

from dyn_control import load_chain
from dyn_control.controller.cartesian import CartesianLaw
from dyn_control.controller.goals import INVALID_GOAL, Request
from dyn_control.controller.laws import ControlLaw, at_limit
from dyn_control.controller.limits import OutputLimits
from dyn_control.controller.settings import controller_settings
from dyn_control.controller.statistics import Statistics
from dyn_control.controller.target import CartesianTarget
from dyn_control.controller.tracking import GoalTracker
from dyn_control.controller.watchdog import Watchdog
from dyn_control.kinematics import frame_pose, rotation_log
from dyn_control.parameters import CONTROLLER

Q = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])


class Said:
    """A stage's `say`: keeps (level, text)."""

    def __init__(self):
        self.lines = []

    def __call__(self, level, text, throttle=False):
        self.lines.append((level, text))


@pytest.fixture(scope="module")
def chain():
    return load_chain(URDF_DIR / "default_arm.urdf")


def settings(chain, **overrides):
    return controller_settings(chain, read_table(CONTROLLER, chain, **overrides))


def test_the_watchdog_goes_stale_after_state_timeout_once_per_spell():
    said = Said()
    watchdog = Watchdog(said)
    watchdog.configure(0.1)
    assert watchdog.period == 0.01  # twice per timeout, at least every 10 ms
    assert watchdog.check(5.0, hold=True) is None  # no state yet: nothing to miss
    assert not watchdog.seen(0.0)
    assert watchdog.check(0.1, hold=True) is None  # exactly state_timeout: still fine
    assert watchdog.check(0.15, hold=True) == pytest.approx(0.15) and watchdog.began
    assert watchdog.stale and watchdog.events == 1 and watchdog.silence == pytest.approx(0.15)
    assert watchdog.check(0.2, hold=True) == pytest.approx(0.2) and not watchdog.began
    assert watchdog.events == 1 and len(said.lines) == 1 and "holding gravity" in said.lines[0][1]
    assert watchdog.seen(0.3) and not watchdog.stale  # back: the spell ends, said
    assert "joint states are back" in said.lines[-1][1]


def test_the_limits_bound_the_rate_and_never_send_a_non_finite_command():
    said = Said()
    limits = OutputLimits(said)
    first = limits.apply(np.array([1.0, -1.0]), 0.0, max_rate=100.0)
    np.testing.assert_array_equal(first, [1.0, -1.0])  # nothing before it to bound against
    # closed form: at most max_rate * dt = 100 N m/s * 0.01 s = 1 N m of change per joint
    np.testing.assert_allclose(limits.apply(np.array([5.0, -1.5]), 0.01, 100.0), [2.0, -1.5])
    assert limits.apply(np.array([np.nan, 0.0]), 0.02, 100.0) is None
    np.testing.assert_allclose(limits.command, [2.0, -1.5])  # the last good one stays
    assert said.lines == [("error", "non-finite effort computed; command not sent")]
    # no bound on a joint: inf (settings.rate_limits makes the parameter's 0 that)
    np.testing.assert_array_equal(limits.apply(np.array([9.0, 9.0]), 0.03, np.inf), [9.0, 9.0])


def test_the_goal_tracker_keeps_a_goal_for_the_first_state_and_refuses_in_cartesian_mode(chain):
    s = settings(chain)
    tracker = GoalTracker(Said())
    tracker.configure(s.model, s.limits, s.goals, "computed_torque")
    request = Request(tuple(chain.joint_names), 0.0, ((1.0, Q + 0.1, (), ()),))
    goal = tracker.offer(request, None)
    assert goal.status == "pending" and tracker.pending is goal and tracker.trajectory is None
    state = (2.0, Q, np.zeros(7))
    tracker.start_pending(state)
    assert goal.status == "active" and tracker.goal is goal
    np.testing.assert_allclose(tracker.reference(3.0, Q)[0], Q + 0.1)  # the last point
    assert tracker.cancel(goal, state) and goal.outcome == "canceled"
    np.testing.assert_array_equal(tracker.reference(3.0, Q + 1.0)[0], Q)  # holds the measured
    tracker.configure(s.model, s.limits, s.goals, "cartesian_impedance")
    refused = tracker.offer(request, state)
    assert refused.done and refused.code == INVALID_GOAL and "cartesian_impedance" in refused.reason


def test_the_cartesian_target_enters_at_the_current_pose_and_filters_to_first_order(chain):
    s = settings(chain, mode="cartesian_impedance", target_filter=0.05)
    target = CartesianTarget(Said())
    target.configure(s, CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits))
    with pytest.raises(ValueError, match="no joint state yet"):
        target.running("target_pose", None)
    R0, p0 = frame_pose(s.model, Q, s.cartesian.ee_link[0])
    R_d, p_d = target.reference(Q, 0.0)  # entered: the target is the current pose
    np.testing.assert_allclose(p_d[0], p0, atol=1e-15)
    task = target.running("target_pose", (0.0, Q, np.zeros(7)))
    task.targets[0] = (R0, p0 + [0.1, 0.0, 0.0])
    dt = 0.01
    _, p_d = target.reference(Q, dt)
    share = dt / (0.05 + dt)  # closed form of one step of the first-order filter
    np.testing.assert_allclose(p_d[0], p0 + [0.1 * share, 0.0, 0.0], atol=1e-15)
    assert np.linalg.norm(rotation_log(R_d[0].T @ R0)) < 1e-12
    joint = settings(chain)
    target.configure(joint, None)
    with pytest.raises(ValueError, match="in computed_torque mode"):
        target.running("target_pose", (0.0, Q, np.zeros(7)))


def test_the_cartesian_target_is_not_entered_when_too_stiff_for_the_period(chain):
    # reference: the sampled loop's bound w T < 1 (controller.target.too_stiff), w 1e7 N/m's mode
    s = settings(chain, mode="cartesian_impedance", cartesian_stiffness=[1e7] * 6)
    said = Said()
    target = CartesianTarget(said)
    target.configure(s, CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits))
    assert target.reference(Q, 0.0) is None and target.task is None
    assert target.refused.startswith("cartesian_impedance not entered") and len(said.lines) == 1
    assert target.reference(Q, 0.001) is None and len(said.lines) == 1  # said once


def test_statistics_count_ticks_and_saturation():
    stats, said = Statistics(), Said()
    assert stats.compute_times() == (0.0, 0.0,
                                     0.0) and stats.report() == "compute time: no ticks yet"
    limits = np.array([1.0, 1.0])
    for tau in ([0.5, 0.5], [1.0, 0.0], [0.0, -2.0]):
        stats.timing()
        stats.tick(at_limit(np.array(tau), limits), 0.0, said)
    assert stats.ticks == 3 and stats.saturated == 2 and len(stats.compute_s) == 3
    p50, p99, worst = stats.compute_times()
    assert 0 < p50 <= p99 <= worst
    assert len(said.lines) == 1 and said.lines[0][1].startswith("compute time over 1 ticks")


def test_settings_are_frozen_and_are_the_laws_keyword_arguments(chain):
    s = settings(chain, mode="gravity_pd", kp=100.0, kd=10.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.mode = "computed_torque"
    law = ControlLaw(s.model, **vars(s.joint), limits=s.limits)
    assert law.mode == "gravity_pd" and np.all(law.kp == 100.0) and np.all(law.kd == 10.0)
    cartesian = CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits)
    assert cartesian.ee_links == s.cartesian.ee_link
    switched = dataclasses.replace(s, mode="cartesian_impedance")
    assert switched.joint is s.joint and s.mode == "gravity_pd"


def test_the_compiled_limits_stage_blends_guards_and_bounds_in_that_order(chain):
    # controller.limits.finish against its stages one by one: the holding law's g(q), the
    # barriers' kernel and the rate bound's closed form, bit for bit (the same operations)
    from dyn_control.controller import barriers
    from dyn_control.controller.guard import Guard
    from dyn_control.controller.limits import finish
    from dyn_control.dynamics import gravity_torques
    s = settings(chain)
    guard = Guard(Said())
    rate = np.full(7, 100.0)
    guard.configure(s.model, s.guard, s.limits, 1e-3, s.cartesian.ee_link, rate)
    q = chain.position_max - 0.01  # inside every margin: the barriers act
    qd = np.full(7, 0.1)
    law = np.linspace(-5.0, 5.0, 7)

    def run(share, previous, since):
        return finish(*guard.data.args, *guard.stage.args, share, False, previous, since,
                      law.copy(), q, qd)

    g = np.clip(gravity_torques(chain, q), -s.limits, s.limits)
    blended = g + 0.25 * (law - g)
    barrier = np.empty(7)
    active, fault = barriers.joint_barriers(
        *guard.data.args, q, qd, guard.lower, guard.upper, guard.margin,
        s.guard.position_stiffness, s.guard.position_damping, guard.velocity_limit,
        s.guard.velocity_fraction, s.guard.velocity_damping, 1e-3, barrier)
    assert active and fault == -1
    expected = np.clip(blended + barrier, -s.limits, s.limits)
    out, finite, active, fault, _ = run(0.25, None, 0.0)  # no command before: no bound
    np.testing.assert_array_equal(out, expected)
    assert finite and active and fault == -1
    previous = np.zeros(7)  # closed form: at most 100 N m/s * 0.01 s = 1 N m of change
    out, *_ = run(0.25, previous, 0.01)
    np.testing.assert_array_equal(out, np.clip(expected, -1.0, 1.0))
    out, *_ = run(1.0, previous, 0.0)  # no time since the last command: the last command
    np.testing.assert_array_equal(out, previous)
    law[3] = np.nan
    assert not run(1.0, None, 0.0)[1]  # not finite: the core sends nothing


def test_each_law_with_the_stage_in_one_call_equals_the_two_calls(chain):
    # controller.ticks' joint_tick, cartesian_tick and teach_tick against the law's own call
    # and finish after it (on the guard's workspace), bit for bit: near every joint's upper
    # limit (the barriers act), moving, the soft start half way, walls set, a rate limit
    from dyn_control.controller.guard import Guard
    from dyn_control.controller.laws import TeachLaw
    from dyn_control.controller.limits import finish
    from dyn_control.controller.ticks import cartesian_tick, joint_tick, teach_tick
    s = settings(chain, **{"limits.workspace_min": [-0.3, -0.3, 0.0],
                           "limits.workspace_max": [0.3, 0.3, 2.0]})
    guard = Guard(Said())
    guard.configure(s.model, s.guard, s.limits, 1e-3, s.cartesian.ee_link, np.full(7, 100.0))
    q, qd = chain.position_max - 0.05, np.full(7, 0.2)
    limits = (guard.stage, 0.5, True, np.zeros(7), 1e-3)

    def apart(tau):
        return finish(*guard.data.args, *guard.stage.args, *limits[1:], tau, q, qd)

    def same(found, expected):
        np.testing.assert_array_equal(found[0], expected[0])
        assert found[1:] == expected[1:]

    desired = (Q, np.zeros(7), np.ones(7))
    laws = [ControlLaw(s.model, **vars(s.joint), limits=s.limits) for _ in range(2)]
    e, ed, found = joint_tick(laws[0], q, qd, desired, 1e-3, limits)
    tau, e2, ed2 = laws[1](q, qd, *desired, 1e-3)
    same(found, apart(tau))
    np.testing.assert_array_equal(np.concatenate([e, ed]), np.concatenate([e2, ed2]))
    cartesians = [CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits) for _ in range(2)]
    R, p = frame_pose(chain, Q, s.cartesian.ee_link[0])
    target = (R, p, np.zeros(6), Q)
    error, found = cartesian_tick(cartesians[0], q, qd, *target, limits)
    tau, error2 = cartesians[1](q, qd, *target)
    same(found, apart(tau))
    np.testing.assert_array_equal(error, error2)
    teach = TeachLaw(s.model, s.teach_damping, s.limits)
    same(teach_tick(teach, q, qd, limits), apart(teach(q, qd)))
