"""Trajectory goals as joint_trajectory_controller (JTC) takes them: the checks a goal must pass,
its tolerances and its outcome codes; pure numpy.

A goal reaches the controller as a `Request`, from the ~/joint_trajectory topic or the
~/follow_joint_trajectory action alike. `trajectory_from_request` turns it into a Trajectory or
raises GoalRefused with the code control_msgs/action/FollowJointTrajectory gives it:
- INVALID_JOINTS: a joint the chain does not have, a joint named twice, or a goal naming only some
  of the joints while `allow_partial_joints_goal` is false;
- INVALID_GOAL: no points, arrays of the wrong size, times that do not increase, non-finite
  values, positions outside the limits, a last point that still moves while
  `allow_nonzero_velocity_at_trajectory_end` is false, an invalid tolerance;
- OLD_HEADER_TIMESTAMP: a header stamp (not 0, "start now") that puts the whole trajectory in the
  past.
- INVALID_GOAL too: a header stamp more than MAX_STAMP_AHEAD s ahead of the joint states' time.
  JTC waits for any future stamp; here that far ahead is a clock mismatch (a sender on the wall
  clock beside a simulator's /clock: 1.8e9 s ahead), whose trajectory would never start.
Codes are the result's constant names; the action adapter maps them to their values.

Tolerances (JTC's tolerances.hpp): per joint, a path tolerance (checked until the last point's
time) and a goal tolerance (checked from then on), each on position and velocity error, and
goal_time, how long after the end the goal tolerance may take to hold. 0 means not checked (for
goal_time: no limit). The defaults come from the parameters `constraints.<joint>.trajectory`,
`constraints.<joint>.goal`, `constraints.stopped_velocity_tolerance` (the goal velocity
tolerance) and `constraints.goal_time`; a goal's own tolerances override them field by field: a
value > 0 replaces the default, 0 keeps it, -1 removes it. There is no acceleration measurement,
so acceleration tolerances are accepted and not checked, as JTC does without acceleration state
interfaces.
"""

import math
from typing import NamedTuple

import numpy as np

from dyn_control.controller.trajectory import Trajectory
from dyn_control.kernels.compile import jit

SUCCESSFUL = "SUCCESSFUL"
INVALID_GOAL = "INVALID_GOAL"
INVALID_JOINTS = "INVALID_JOINTS"
OLD_HEADER_TIMESTAMP = "OLD_HEADER_TIMESTAMP"
PATH_TOLERANCE_VIOLATED = "PATH_TOLERANCE_VIOLATED"
GOAL_TOLERANCE_VIOLATED = "GOAL_TOLERANCE_VIOLATED"
CODES = (SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP, PATH_TOLERANCE_VIOLATED,
         GOAL_TOLERANCE_VIOLATED)

POSITION, VELOCITY, ACCELERATION = range(3)  # the columns of a tolerance array
_REMOVED = -1.0  # a goal's tolerance that removes the default


class GoalRefused(ValueError):
    """A goal the controller does not take: `code` (a result code name) and the reason."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code, self.reason = code, reason


class Request(NamedTuple):
    """A joint trajectory goal, as plain data (messages.trajectory_request fills it).

    joint_names: the goal's joints; stamp: s, its start time (0: start now). points: per
    waypoint (time from start s, positions, velocities, accelerations), each a sequence (empty
    when not given). path_tolerance, goal_tolerance: (joint name, position, velocity,
    acceleration) overrides; goal_time_tolerance: s (see the module docstring). source: who sent
    it ("topic" or "action"), for the log.
    """

    joint_names: tuple
    stamp: float
    points: tuple
    path_tolerance: tuple = ()
    goal_tolerance: tuple = ()
    goal_time_tolerance: float = 0.0
    source: str = "topic"


class Tolerances(NamedTuple):
    """path, goal: (n, 3) per joint, columns POSITION, VELOCITY, ACCELERATION (rad, rad/s,
    rad/s^2 or m ...), 0 = not checked; goal_time: s, 0 = no limit.
    """

    path: np.ndarray
    goal: np.ndarray
    goal_time: float

    @classmethod
    def defaults(cls, trajectory, goal, stopped_velocity, goal_time):
        """From the parameters: trajectory, goal (n,) position tolerances, the stopped-velocity
        tolerance (the goal's velocity tolerance on every joint) and goal_time (s).
        """
        n = len(trajectory)
        path, final = np.zeros((n, 3)), np.zeros((n, 3))
        path[:, POSITION] = trajectory
        final[:, POSITION], final[:, VELOCITY] = goal, stopped_velocity
        return cls(path, final, float(goal_time))


def _override(default, value, what):
    """JTC's rule for one tolerance value of a goal: > 0 replaces, 0 keeps, -1 removes."""
    if not math.isfinite(value) or (value < 0 and value != _REMOVED):
        raise GoalRefused(INVALID_GOAL, f"{what} must be > 0, 0 (keep the default) or -1 "
                                        f"(not checked), got {value:g}")
    return value if value > 0 else (default if value == 0 else 0.0)


def goal_tolerances(defaults, request, joint_names):
    """The tolerances of one goal: `defaults` (Tolerances) with the request's overrides.
    GoalRefused names an unknown joint (INVALID_JOINTS) or an invalid value (INVALID_GOAL).
    """
    index = {name: i for i, name in enumerate(joint_names)}
    path, goal = defaults.path.copy(), defaults.goal.copy()
    for kind, given, table in (("path_tolerance", request.path_tolerance, path),
                               ("goal_tolerance", request.goal_tolerance, goal)):
        for name, *values in given:
            if name not in index:
                raise GoalRefused(INVALID_JOINTS, f"{kind} names unknown joint '{name}'")
            row = table[index[name]]
            for k, field in enumerate(("position", "velocity", "acceleration")):
                row[k] = _override(row[k], float(values[k]), f"{kind} {field} of joint '{name}'")
    goal_time = _override(defaults.goal_time, float(request.goal_time_tolerance),
                          "goal_time_tolerance (s)")
    return Tolerances(path, goal, goal_time)


@jit
def first_violation(tolerance, e, ed):
    """The first joint whose |e| or |ed| (n,) exceeds its tolerance (n, 3) (0: not checked),
    as joint * 2 + (POSITION or VELOCITY); -1 if none. One compiled call per control tick.
    """
    for i in range(e.shape[0]):
        if 0.0 < tolerance[i, 0] < abs(e[i]):
            return 2 * i
        if 0.0 < tolerance[i, 1] < abs(ed[i]):
            return 2 * i + 1
    return -1


def describe_violation(hit, tolerance, e, ed, joint_names, what):
    """first_violation's answer as one line naming the joint, the error and the tolerance."""
    i, kind = divmod(hit, 2)
    error = (e, ed)[kind][i]
    field, unit = (("position", "rad"), ("velocity", "rad/s"))[kind]
    return (f"joint '{joint_names[i]}' {field} error {error:.4g} {unit} beyond its {what} "
            f"tolerance {tolerance[i, kind]:.4g} {unit}")


def next_point(request, trajectory, t):
    """Index of the waypoint the trajectory is heading for at time t: 0 before the first,
    len(points) after the last (the action feedback's `index`, as JTC counts it).
    """
    times = [point[0] for point in request.points]
    return int(np.searchsorted(times, t - trajectory.start_time, side="right"))


MAX_STAMP_AHEAD = 5.0  # s


def trajectory_from_request(request, chain, now, start, fill, allow_partial=False,
                            allow_moving_end=False):
    """Request -> Trajectory over all chain joints, or GoalRefused naming the problem.

    now: the controller's time (s); a stamp of 0 starts the trajectory now. start: (q, qd, qdd)
    (n,) each, the state it starts from (measured or desired: interpolate_from_desired_state).
    fill: (n,) positions held by the joints a partial goal leaves out. allow_partial: take a goal
    naming only some joints (allow_partial_joints_goal); allow_moving_end: take a last point
    with a velocity (allow_nonzero_velocity_at_trajectory_end).
    """
    names, n = list(request.joint_names), chain.n
    index = {name: i for i, name in enumerate(chain.joint_names)}
    for k, name in enumerate(names):
        if name not in index:
            raise GoalRefused(INVALID_JOINTS, f"trajectory names unknown joint '{name}'")
        if name in names[:k]:
            raise GoalRefused(INVALID_JOINTS, f"trajectory names joint '{name}' twice")
    if not names:
        raise GoalRefused(INVALID_JOINTS, "trajectory names no joints")
    if len(names) < n and not allow_partial:
        missing = next(name for name in chain.joint_names if name not in names)
        raise GoalRefused(INVALID_JOINTS, f"trajectory names {len(names)} of the {n} joints "
                          f"(not '{missing}'), and allow_partial_joints_goal is false")
    if not request.points:
        raise GoalRefused(INVALID_GOAL, "trajectory has no points")
    m, cols = len(names), [index[name] for name in names]
    times = np.array([point[0] for point in request.points], dtype=float)
    for k, (_, positions, velocities, accelerations) in enumerate(request.points):
        if len(positions) != m:
            raise GoalRefused(INVALID_GOAL, f"trajectory point {k} has {len(positions)} "
                                            f"positions for {m} joints")
        for label, values in (("velocities", velocities), ("accelerations", accelerations)):
            if len(values) not in (0, m):
                raise GoalRefused(INVALID_GOAL, f"trajectory point {k} has {len(values)} "
                                                f"{label} for {m} joints")
    if times[0] < 0 or np.any(np.diff(times) <= 0):
        raise GoalRefused(INVALID_GOAL, "trajectory time_from_start must increase from >= 0, "
                                        f"got {times.tolist()}")

    def full(field, base):
        rows = [point[field] for point in request.points]
        if not all(len(row) == m for row in rows):
            return None
        out = np.tile(base, (len(rows), 1))
        out[:, cols] = np.array(rows, dtype=float)
        return out

    zero = np.zeros(n)
    positions = full(1, fill)
    velocities = full(2, zero)
    accelerations = full(3, zero) if velocities is not None else None
    for label, values in (("positions", positions), ("velocities", velocities),
                          ("accelerations", accelerations)):
        if values is not None and not np.all(np.isfinite(values)):
            raise GoalRefused(INVALID_GOAL, f"trajectory has non-finite {label}")
    lower, upper = chain.position_min, chain.position_max
    outside = ((positions < lower) | (positions > upper)).any(axis=0)
    if outside.any():
        j = int(np.argmax(outside))
        column = positions[:, j]
        worst = column[np.argmax(np.maximum(lower[j] - column, column - upper[j]))]
        raise GoalRefused(INVALID_GOAL, f"trajectory position {worst:.4g} of joint "
                          f"'{chain.joint_names[j]}' is outside its limits [{lower[j]:.4g}, "
                          f"{upper[j]:.4g}]")
    if velocities is not None and not allow_moving_end and np.any(velocities[-1] != 0):
        j = int(np.argmax(velocities[-1] != 0))
        raise GoalRefused(INVALID_GOAL, f"the last point's velocity of joint "
                          f"'{chain.joint_names[j]}' is {velocities[-1, j]:.4g}, not 0, and "
                          "allow_nonzero_velocity_at_trajectory_end is false")
    start_time = now if request.stamp == 0.0 else request.stamp
    if start_time + times[-1] < now:
        raise GoalRefused(OLD_HEADER_TIMESTAMP, f"trajectory stamped t = {request.stamp:.3f} s "
                          f"ends at t = {start_time + times[-1]:.3f} s, before now "
                          f"(t = {now:.3f} s)")
    if start_time - now > MAX_STAMP_AHEAD:
        raise GoalRefused(INVALID_GOAL, f"trajectory stamped t = {request.stamp:.3f} s starts "
                          f"{start_time - now:.3f} s after the joint states' time (t = {now:.3f} "
                          f"s), more than {MAX_STAMP_AHEAD:g} s ahead: are the sender and the "
                          "controller on one clock (use_sim_time)? Stamp 0 starts now")
    return Trajectory(start_time, start, times, positions, velocities, accelerations)
