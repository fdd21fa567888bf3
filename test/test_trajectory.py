"""Trajectory sampling at known times, each spline type, holds and replacement.

References: the boundary conditions each polynomial must meet (closed form), checked to 1e-12;
derivatives against central differences (step 1e-6 s, tolerance 1e-6).
"""

import numpy as np
import pytest

from dyn_control.controller.trajectory import Trajectory, sine_waypoints

EXACT = 1e-12
ZERO2 = np.zeros(2)


def numeric_derivatives(traj, t, h=1e-6):
    qp, qm = traj.sample(t + h)[0], traj.sample(t - h)[0]
    vp, vm = traj.sample(t + h)[1], traj.sample(t - h)[1]
    return (qp - qm) / (2 * h), (vp - vm) / (2 * h)


def test_linear_positions_only():
    traj = Trajectory(10.0, (np.array([0.0, 1.0]), ZERO2, ZERO2), [1.0, 3.0],
                      [[1.0, 1.0], [2.0, -1.0]])
    assert traj.kind == "linear"
    np.testing.assert_allclose(traj.sample(10.5)[0], [0.5, 1.0], atol=EXACT)  # from the start state
    q, qd, qdd = traj.sample(12.0)  # halfway between the waypoints
    np.testing.assert_allclose(q, [1.5, 0.0], atol=EXACT)
    np.testing.assert_allclose(qd, [0.5, -1.0], atol=EXACT)
    np.testing.assert_allclose(qdd, ZERO2, atol=EXACT)


def test_cubic_meets_positions_and_velocities():
    p = np.array([[1.0, 0.0], [0.0, 2.0]])
    v = np.array([[0.5, -1.0], [0.0, 0.0]])
    traj = Trajectory(0.0, (ZERO2, ZERO2, ZERO2), [1.0, 2.5], p, v)
    assert traj.kind == "cubic"
    for t, k in ((1.0, 0), (2.5, 1)):
        q, qd, _ = traj.sample(t - 1e-13)
        np.testing.assert_allclose(q, p[k], atol=1e-9)
        np.testing.assert_allclose(qd, v[k], atol=1e-9)
    dq, ddq = numeric_derivatives(traj, 1.7)
    q, qd, qdd = traj.sample(1.7)
    np.testing.assert_allclose(qd, dq, atol=1e-6)
    np.testing.assert_allclose(qdd, ddq, atol=1e-6)


def test_quintic_meets_positions_velocities_accelerations():
    p = np.array([[0.3, -0.2], [1.0, 0.5]])
    v = np.array([[1.0, 0.0], [-0.5, 0.2]])
    a = np.array([[0.0, 2.0], [1.0, -1.0]])
    start = (np.array([0.1, 0.1]), np.array([0.2, -0.3]), np.array([0.5, 0.0]))
    traj = Trajectory(5.0, start, [0.5, 1.5], p, v, a)
    assert traj.kind == "quintic"
    for s, expected in ((0.0, start), (0.5, (p[0], v[0], a[0])), (1.5, (p[1], v[1], a[1]))):
        got = traj.sample(5.0 + s - 1e-13) if s > 0 else traj.sample(5.0)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, atol=1e-9)
    dq, ddq = numeric_derivatives(traj, 5.9)
    q, qd, qdd = traj.sample(5.9)
    np.testing.assert_allclose(qd, dq, atol=1e-6)
    np.testing.assert_allclose(qdd, ddq, atol=1e-6)


def test_after_last_point_hold_it():
    traj = Trajectory(0.0, (ZERO2, ZERO2, ZERO2), [1.0], [[0.4, -0.4]], [[1.0, 1.0]], [[1.0, 1.0]])
    for t in (1.0, 3.0, 100.0):
        q, qd, qdd = traj.sample(t)
        np.testing.assert_array_equal(q, [0.4, -0.4])
        np.testing.assert_array_equal(qd, ZERO2)
        np.testing.assert_array_equal(qdd, ZERO2)


def test_streaming_set_point_applies_at_once():
    traj = Trajectory(2.0, (ZERO2, ZERO2, ZERO2), [0.0], [[0.7, 0.1]])
    np.testing.assert_array_equal(traj.sample(2.0)[0], [0.7, 0.1])
    np.testing.assert_array_equal(traj.sample(2.001)[0], [0.7, 0.1])


def test_future_start_waits_at_the_start_position():
    traj = Trajectory(5.0, (np.array([0.2, 0.3]), ZERO2, ZERO2), [1.0], [[1.0, 1.0]])
    np.testing.assert_array_equal(traj.sample(4.0)[0], [0.2, 0.3])


def test_hold():
    q, qd, _ = Trajectory.hold(3.0, [0.1, 0.2]).sample(7.0)
    np.testing.assert_array_equal(q, [0.1, 0.2])
    np.testing.assert_array_equal(qd, ZERO2)


def test_replacement_continues_from_the_current_desired_state():
    # A new quintic trajectory started mid-motion starts at the old one's (q, qd, qdd): no jump.
    old = Trajectory(0.0, (ZERO2, ZERO2, ZERO2), [1.0, 2.0], [[1.0, 1.0], [0.0, 2.0]],
                     [[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]])
    current = old.sample(1.3)
    new = Trajectory(1.3, current, [0.5], [[-1.0, 0.0]], [[0.0, 0.0]], [[0.0, 0.0]])
    for got, expected in zip(new.sample(1.3), current):
        np.testing.assert_allclose(got, expected, atol=EXACT)


def test_sine_waypoints_are_consistent_inside_limits_and_rest_at_both_ends():
    q0 = np.array([0.0, 1.8, -0.5])
    lower, upper = np.array([-3.0, -2.0, -1.0]), np.array([3.0, 2.0, 1.0])
    t, q, qd, qdd = sine_waypoints(q0, lower, upper, duration=6.0, rate=2000.0)
    assert np.all(q >= lower) and np.all(q <= upper)
    # derivatives: central differences on the 0.5 ms grid, tolerance from the grid (h^2 f''');
    # the jerk has a corner where the fades end (t = 1 s and 5 s): a difference of qd that
    # straddles it is off by h * (jump in jerk) / 4, so those two samples are left out
    h = t[1] - t[0]
    np.testing.assert_allclose((q[2:] - q[:-2]) / (2 * h), qd[1:-1], atol=1e-5)
    smooth = (np.abs(t[1:-1] - 1.0) > 1.5 * h) & (np.abs(t[1:-1] - 5.0) > 1.5 * h)
    np.testing.assert_allclose(((qd[2:] - qd[:-2]) / (2 * h))[smooth], qdd[1:-1][smooth],
                               atol=1e-4)
    for end in (0, -1):
        np.testing.assert_allclose(qd[end], 0.0, atol=1e-6)
        np.testing.assert_allclose(qdd[end], 0.0, atol=1e-2)
    np.testing.assert_allclose(q[-1], q0, atol=EXACT)
    assert np.ptp(q[:, 0]) > 0.3  # it does move


@pytest.mark.parametrize("kind, vel, acc", [("linear", False, False), ("cubic", True, False),
                                            ("quintic", True, True)])
def test_kind_follows_what_the_points_carry(kind, vel, acc):
    p = np.ones((1, 2))
    traj = Trajectory(0.0, (ZERO2, ZERO2, ZERO2), [1.0], p, p if vel else None, p if acc else None)
    assert traj.kind == kind


@pytest.mark.parametrize("kind", ["linear", "cubic", "quintic", "hold"])
def test_sample_many_equals_sample_at_each_time(kind):
    # reference: sample() one time at a time, to 1e-12 (the same polynomials, summed in
    # another order); times before the start, on every knot and after the end
    rng = np.random.default_rng(3)
    if kind == "hold":
        traj = Trajectory.hold(1.0, [0.2, -0.4])
    else:
        pos = rng.uniform(-1, 1, (4, 2))
        vel = rng.uniform(-1, 1, (4, 2)) if kind != "linear" else None
        acc = rng.uniform(-1, 1, (4, 2)) if kind == "quintic" else None
        traj = Trajectory(1.0, ([0.1, 0.2], [0.3, 0.0], ZERO2), [0.5, 1.0, 1.7, 2.0], pos, vel, acc)
    t = np.concatenate([[0.0, 0.99], traj.check_times(0.05), [3.5, 9.0]])
    many = traj.sample_many(t)
    for j, name in enumerate(("q", "qd", "qdd")):
        one = np.array([traj.sample(s)[j] for s in t])
        np.testing.assert_allclose(many[j], one, rtol=0, atol=EXACT, err_msg=name)


def test_check_times_cover_the_grid_every_waypoint_and_the_end():
    traj = Trajectory(2.0, (ZERO2, ZERO2, ZERO2), [0.123, 0.5], np.ones((2, 2)))
    t = traj.check_times(0.1)
    assert t[0] == 2.0 and t[-1] == traj.end_time == 2.5
    assert {2.123, 2.5} <= set(np.round(t, 12)) and np.all(np.diff(t) > 0)
    assert np.diff(t).max() <= 0.1 + 1e-12
