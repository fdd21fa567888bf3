"""Trajectory goals without ROS: the checks, the tolerances and the outcomes of
dyn_control.controller.goals and of the controller core's goal path, with synthetic time.

References: joint_trajectory_controller's rules (its tolerances.hpp and test_tolerances.cpp:
a goal value > 0 replaces the default, 0 keeps it, -1 removes it; 0 is not checked), its error
codes, and closed forms of the interpolation.
"""

import numpy as np
import pytest
from conftest import BENT_POSE, DEFAULT_ARM, DEFAULT_JOINTS, read_table

from dyn_control import gravity_torques, load_chain
from dyn_control.controller import goals
from dyn_control.controller.core import ControllerCore
from dyn_control.controller.goals import GoalRefused, Request, Tolerances
from dyn_control.controller.settings import controller_settings
from dyn_control.parameters import CONTROLLER

Q, ZERO, NAMES = np.array(BENT_POSE), np.zeros(7), DEFAULT_JOINTS


@pytest.fixture(scope="module")
def chain():
    return load_chain(DEFAULT_ARM)


def settings(chain, **overrides):
    """The controller's defaults (CONTROLLER's table, per-joint entries too) with overrides,
    without the external-torque observer: these states are made up (the arm stays put under
    any torque), which the observer rightly reads as a collision; nor the soft start and the
    rate limit: the commands checked are the law's (test_limits.py checks those).
    """
    return controller_settings(chain, read_table(
        CONTROLLER, chain, **{"external_torque.enabled": False, "max_effort_rate": 0.0,
                       "soft_start": 0.0, **overrides}))


def core_at(chain, q=Q, t=1.0, **overrides):
    core = ControllerCore(settings(chain, **overrides))
    core.update(0.0, (t, q, ZERO))
    return core


def request(positions, times=(1.0,), names=NAMES, stamp=0.0, velocities=None, **tolerances):
    positions = np.atleast_2d(positions)
    points = tuple((t, p, () if velocities is None else velocities[k], ())
                   for k, (t, p) in enumerate(zip(times, positions)))
    return Request(tuple(names), stamp, points, **tolerances)


def refused(core, req):
    goal = core.offer(req)
    assert goal.done and goal.outcome == "aborted", (goal.status, goal.reason)
    return goal.code, goal.reason


# ------------------------------------------------------------------ refusals and their codes


def test_refusals_carry_jtc_codes_and_the_running_goal_goes_on(chain):
    core = core_at(chain)
    running = core.offer(request(Q + 0.1, times=(2.0,)))
    assert running.status == "active"
    cases = [
        (request([0.0, 0.0], names=("joint1", "elbow")), goals.INVALID_JOINTS, "'elbow'"),
        (request([0.0, 0.0], names=("joint1", "joint1")), goals.INVALID_JOINTS, "twice"),
        (request([0.7], names=("joint2",)), goals.INVALID_JOINTS, "allow_partial_joints_goal"),
        (Request(NAMES, 0.0, ()), goals.INVALID_GOAL, "no points"),
        (request([Q, Q], times=(1.0, 1.0)), goals.INVALID_GOAL, "must increase"),
        (request(Q[:6]), goals.INVALID_GOAL, "6 positions for 7 joints"),
        (request(Q + 10.0), goals.INVALID_GOAL, "outside its limits"),
        (request(np.where(np.arange(7) == 3, np.nan, Q)), goals.INVALID_GOAL, "non-finite"),
        (request(Q, velocities=[np.full(7, 0.1)]), goals.INVALID_GOAL,
         "velocity of joint 'joint1'"),
        # stamped t = 0.5 s, its only point 0.4 s later: it ended before the core's t = 1 s
        (request(Q, stamp=0.5, times=(0.4,)), goals.OLD_HEADER_TIMESTAMP, "ends at t = 0.900 s"),
        (request(Q, path_tolerance=(("joint1", -2.0, 0.0, 0.0),)), goals.INVALID_GOAL,
         "path_tolerance position of joint 'joint1' must be > 0, 0"),
        (request(Q, goal_tolerance=(("wrist", 0.1, 0.0, 0.0),)), goals.INVALID_JOINTS, "'wrist'"),
        (request(Q, goal_time_tolerance=-0.5), goals.INVALID_GOAL, "goal_time_tolerance"),
    ]
    for req, code, named in cases:
        got_code, reason = refused(core, req)
        assert got_code == code and named in reason, (code, got_code, reason)
        assert core.goals.goal is running and running.status == "active"
    events = " ".join(text for _, text, _ in core.drain())
    assert "trajectory refused: trajectory names unknown joint 'elbow' (INVALID_JOINTS)" in events


def test_an_infeasible_trajectory_is_invalid_goal_with_the_check_message(chain):
    core = core_at(chain)
    too_fast = Q + np.where(np.arange(7) == 1, 1.0, 0.0)  # joint2 by 1 rad in 0.2 s
    code, reason = refused(core, request(too_fast, times=(0.2,), velocities=[ZERO]))
    assert code == goals.INVALID_GOAL
    assert reason.startswith("joint 'joint2' needs torque") and "limit 176 N m" in reason


def test_partial_goals_and_moving_ends_when_allowed(chain):
    core = core_at(chain, allow_partial_joints_goal=True,
                   allow_nonzero_velocity_at_trajectory_end=True)
    goal = core.offer(request([0.7], names=("joint2",), velocities=[[0.1]]))
    assert goal.status == "active"
    # the joints left out hold their current desired position (here the held start, Q)
    np.testing.assert_allclose(core.goals.trajectory.sample(5.0)[0], np.where(np.arange(7) == 1,
                                                                              0.7, Q))


# ------------------------------------------------------------------ tolerances, JTC's rules


def test_goal_tolerances_override_as_jtc():
    defaults = Tolerances.defaults(np.full(2, 0.1), np.full(2, 0.2), 0.01, 1.5)
    got = goals.goal_tolerances(defaults, Request(("a", "b"), 0.0, (), path_tolerance=(
        ("a", 0.5, 0.0, 0.0),    # > 0 replaces
        ("b", -1.0, 0.3, 0.0)),  # -1 removes (0: not checked); velocity given
        goal_tolerance=(("b", 0.0, -1.0, 0.0),),  # 0 keeps, -1 removes the stopped velocity
        goal_time_tolerance=0.0), ("a", "b"))
    np.testing.assert_array_equal(got.path, [[0.5, 0.0, 0.0], [0.0, 0.3, 0.0]])
    np.testing.assert_array_equal(got.goal, [[0.2, 0.01, 0.0], [0.2, 0.0, 0.0]])
    assert got.goal_time == 1.5  # 0 keeps the default
    assert goals.goal_tolerances(defaults, Request(("a",), 0.0, (), goal_time_tolerance=-1.0),
                                 ("a", "b")).goal_time == 0.0  # -1: no limit
    np.testing.assert_array_equal(defaults.path[:, 0], 0.1)  # the defaults are not changed


@pytest.mark.parametrize("value", [-0.5, -2.0, float("nan"), float("inf")])
def test_illegal_tolerance_values_are_refused(value):
    defaults = Tolerances.defaults(np.zeros(1), np.zeros(1), 0.01, 0.0)
    with pytest.raises(GoalRefused) as err:
        goals.goal_tolerances(defaults, Request(("a",), 0.0, (), goal_tolerance=(
            ("a", 0.0, value, 0.0),)), ("a",))
    assert err.value.code == goals.INVALID_GOAL and "velocity of joint 'a'" in err.value.reason


def test_first_violation_checks_only_positive_tolerances():
    tolerance = np.array([[0.1, 0.0, 5.0], [0.0, 0.2, 0.0]])
    assert goals.first_violation(tolerance, np.array([0.1, 9.0]), np.array([9.0, 0.2])) == -1
    assert goals.first_violation(tolerance, np.array([0.1001, 0.0]), np.zeros(2)) == 0
    hit = goals.first_violation(tolerance, np.zeros(2), np.array([0.0, -0.3]))
    assert hit == 3  # joint 1, velocity
    text = goals.describe_violation(hit, tolerance, np.zeros(2), np.array([0.0, -0.3]),
                                    ["a", "b"], "path")
    assert text == "joint 'b' velocity error -0.3 rad/s beyond its path tolerance 0.2 rad/s"


# ------------------------------------------------------------------ outcomes on the core


def run(core, q_of_t, t0, t1, dt=1e-3, until=None):
    """Ticks with the measured position q_of_t(t) from t0 to t1 (at rest), until until()."""
    command = None
    for t in np.arange(t0, t1, dt):
        command = core.update(0.0, (t, q_of_t(t), ZERO))
        if until is not None and until():
            break
    return command


def test_a_moveit_style_goal_succeeds_at_its_end_and_holds_its_last_point(chain):
    # no tolerances, stamp 0: the default goal tolerance is the stopped velocity only
    core = core_at(chain)
    goal = core.offer(request(Q + 0.1))
    run(core, lambda t: Q, 1.001, 1.999)
    assert goal.status == "active"
    run(core, lambda t: Q, 2.0, 2.01)
    assert goal.outcome == "succeeded" and goal.code == goals.SUCCESSFUL
    np.testing.assert_array_equal(core.goals.trajectory.sample(10.0)[0], Q + 0.1)  # the last point


def test_a_path_violation_aborts_and_holds_the_measured_position(chain):
    core = core_at(chain, **{"constraints.joint3.trajectory": 0.01})
    goal = core.offer(request(Q + 0.1, times=(1.0,)))
    stuck = Q.copy()  # the arm does not move: the error grows to 0.01 rad on joint 3
    command = run(core, lambda t: stuck, 1.001, 2.0, until=lambda: goal.done)
    assert goal.code == goals.PATH_TOLERANCE_VIOLATED and goal.outcome == "aborted"
    assert "joint 'joint3' position error" in goal.reason
    assert "path tolerance 0.01 rad" in goal.reason
    # the command of the aborting tick is already the hold: the measured position, at rest
    np.testing.assert_allclose(command.desired[0], stuck)
    np.testing.assert_allclose(command.tau, gravity_torques(chain, stuck), atol=1e-9)
    assert core.goals.goal is None


def test_the_goal_time_limit_aborts_with_goal_tolerance_violated(chain):
    core = core_at(chain, **{"constraints.goal_time": 0.5, "constraints.joint2.goal": 0.01})
    goal = core.offer(request(Q + 0.1))
    short = Q + 0.05  # never within 0.01 rad of the goal
    run(core, lambda t: short, 1.001, 2.5)
    assert goal.status == "active"  # up to 0.5 s after the end: still within goal_time
    run(core, lambda t: short, 2.5, 2.6, until=lambda: goal.done)
    assert goal.code == goals.GOAL_TOLERANCE_VIOLATED
    assert "joint 'joint1' position error" not in goal.reason  # joint1 has no goal tolerance
    assert "joint 'joint2' position error 0.05" in goal.reason and "goal_time 0.5 s" in goal.reason
    np.testing.assert_allclose(core.goals.trajectory.sample(9.0)[0], short)  # holds where it is


def test_without_goal_time_the_goal_waits_for_its_tolerance(chain):
    core = core_at(chain, **{"constraints.joint2.goal": 0.01})
    goal = core.offer(request(Q + 0.1))
    run(core, lambda t: Q + 0.05, 1.001, 5.0)
    assert goal.status == "active"  # goal_time 0: no limit, as JTC
    run(core, lambda t: Q + 0.095, 5.0, 5.01)
    assert goal.outcome == "succeeded"


def test_a_goals_own_tolerances_apply_and_the_defaults_stay(chain):
    core = core_at(chain, **{"constraints.joint3.trajectory": 0.01})
    # -1 removes joint3's default path tolerance for this goal: it runs to its end
    goal = core.offer(request(Q + 0.1, path_tolerance=(("joint3", -1.0, 0.0, 0.0),)))
    run(core, lambda t: Q, 1.001, 2.01)
    assert goal.outcome == "succeeded"
    assert core.settings.goals.tolerances.path[2, 0] == 0.01


def test_preemption_by_a_new_goal_or_a_topic_trajectory_ends_the_old_one(chain):
    core = core_at(chain)
    first = core.offer(request(Q + 0.1, times=(2.0,)))
    second = core.offer(request(Q - 0.1, times=(2.0,))._replace(source="action"))
    assert first.outcome == "aborted" and first.code == goals.INVALID_GOAL
    assert "preempted by a new goal from the action" in first.reason
    third = core.offer(request(Q, times=(2.0,)))  # the topic's
    assert second.code == goals.INVALID_GOAL and "from the topic" in second.reason
    assert core.goals.goal is third


def test_cancel_holds_where_the_arm_is(chain):
    core = core_at(chain)
    goal = core.offer(request(Q + 0.2, times=(2.0,)))
    run(core, lambda t: Q + 0.01, 1.001, 1.5)
    assert core.cancel(goal) and goal.outcome == "canceled" and goal.code == goals.SUCCESSFUL
    np.testing.assert_allclose(core.goals.trajectory.sample(1.6)[0],
                               Q + 0.01)  # measured, not desired
    assert not core.cancel(goal)  # nothing left to cancel


def test_start_state_measured_by_default_desired_when_asked(chain):
    sag = Q - 0.05  # the arm sagged away from its held first position (an unknown payload)
    for from_desired, start in ((False, sag), (True, Q)):
        core = core_at(chain, interpolate_from_desired_state=from_desired)
        core.update(0.0, (1.5, sag, ZERO))
        core.offer(request(sag + 0.1))
        np.testing.assert_allclose(core.goals.trajectory.sample(1.5)[0], start)


def test_a_goal_before_the_first_state_is_kept_and_a_newer_one_replaces_it(chain):
    core = ControllerCore(settings(chain))
    first = core.offer(request(Q + 0.1))
    second = core.offer(request(Q + 0.2))
    assert first.code == goals.INVALID_GOAL and second.status == "pending"
    core.update(0.0, (5.0, Q, ZERO))
    assert second.status == "active" and core.goals.trajectory.start_time == 5.0


def test_a_state_timeout_aborts_the_goal(chain):
    core = core_at(chain)
    goal = core.offer(request(Q + 0.1))
    core.update(0.2)  # 0.2 s of silence on the watchdog's clock
    assert goal.code == goals.INVALID_GOAL and "no good joint state" in goal.reason


def test_feedback_reports_desired_actual_error_and_the_next_point(chain):
    core = core_at(chain)
    goal = core.offer(request([Q + 0.1, Q + 0.2], times=(1.0, 2.0)))  # points at t = 2 s, 3 s
    for t, index in ((1.5, 0), (2.5, 1)):
        core.update(0.0, (t, Q, ZERO))
        stamp, desired, actual, errors, at = core.feedback(goal)
        assert stamp == t and at == index
        np.testing.assert_allclose(errors[0], desired[0] - actual[0], atol=1e-12)
    assert goals.next_point(goal.request, goal.trajectory, 3.5) == 2  # past the last
    core.update(0.0, (3.5, Q, ZERO))  # at rest past the end: it succeeded
    assert goal.done and core.feedback(goal) is None


def test_streamed_topic_set_points_do_not_fill_the_log(chain):
    # one-point trajectories at 0 s, as a teleoperation node streams them: each preempts the
    # last, quietly; an action goal's end is always said
    core = core_at(chain)
    core.drain()
    for k in range(10):
        core.offer(request(Q + 0.001 * k, times=(0.0,)))
        core.update(0.0, (1.0 + 0.01 * k, Q, ZERO))
    said = [text for _, text, _ in core.drain()]
    assert not any("preempted" in text or "succeeded" in text for text in said), said
    action = core.offer(request(Q, times=(1.0,))._replace(source="action"))
    core.offer(request(Q, times=(1.0,)))
    assert action.code == goals.INVALID_GOAL
    assert any("goal from the action aborted" in text for _, text, _ in core.drain())


def test_a_topic_trajectory_that_is_not_a_set_point_says_its_outcome(chain):
    # as the action's goals do: a newcomer sending one on the topic sees it end
    core = core_at(chain)
    core.drain()
    core.offer(request(Q + 0.01, times=(0.5,)))
    core.update(0.0, (1.6, Q + 0.01, ZERO))  # past its end, on target
    said = [text for _, text, _ in core.drain()]
    assert any(text.startswith("goal from the topic succeeded (SUCCESSFUL)") for text in said), said


def test_a_stamp_far_ahead_of_the_joint_states_is_refused_naming_the_clocks(chain):
    # Reference: goals.MAX_STAMP_AHEAD (5 s). A wall-clock stamp beside simulated time is 1.8e9
    # s ahead: such a trajectory would never start. Within 5 s it waits, as JTC's does.
    core = core_at(chain)  # joint states at t = 1 s
    far = core.offer(request(Q, times=(1.0,))._replace(stamp=1796193377.0))
    assert far.code == goals.INVALID_GOAL and "use_sim_time" in far.reason, far.reason
    assert "t = 1796193377.000 s starts" in far.reason
    near = core.offer(request(Q, times=(1.0,))._replace(stamp=1.0 + goals.MAX_STAMP_AHEAD - 0.1))
    assert near.status == "active"


def test_a_goal_that_succeeds_far_from_its_point_without_a_goal_tolerance_says_how_far(chain):
    # JTC's rule (no goal tolerance: the end of the time is the success), said in the result
    core = core_at(chain)
    far = Q.copy()
    far[1] += 1.4
    far = np.clip(far, chain.lower, chain.upper)
    goal = core.offer(request(far, times=(0.0,))._replace(source="action"))
    core.update(0.0, (1.001, Q, ZERO))
    assert goal.code == goals.SUCCESSFUL, goal.reason
    assert "no goal tolerance set" in goal.reason, goal.reason
    assert "'joint2' is still" in goal.reason, goal.reason
