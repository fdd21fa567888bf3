"""Teach and replay, without ROS: what mode `teach` records (the joint states of a motion shown
by hand) and the FollowJointTrajectory goal that plays it back.

A recording is a rosbag2 folder of /joint_states (dyn_control.recording), so any ROS tool opens
it and `replay_points` reads it back with no ROS install. The replay's waypoints:
- smoothed: a centred moving average over SMOOTH s (a hand's tremor, a sensor's noise; in
  simulation it changes a slow motion by micro-radians);
- thinned: one waypoint every STEP s, the last sample kept, with velocities and accelerations
  from the smoothed positions (central differences), so the controller's quintic segments
  pass through the motion, not just its points;
- led in: the first waypoint at LEAD_IN s (at least; longer when the arm is far from it, at
  most LEAD_IN_SPEED): the arm goes from where it is to where the motion began.
The goal is then checked against the limits as any goal is (trajectory_check).
"""

import datetime
import pathlib

import numpy as np

from dyn_control.recording import read_states, write_states

SMOOTH = 0.02  # s
STEP = 0.05  # s between waypoints
LEAD_IN = 2.0  # s
LEAD_IN_SPEED = 0.25  # rad/s or m/s, at most, on the way to the motion's start


class Recording:
    """The joint states of a taught motion, in the order of `names`: add() each, save() them."""

    def __init__(self, names):
        self.names = list(names)
        self.rows = []

    def add(self, t, q, qd, effort):
        self.rows.append((t, np.array(q, float), np.array(qd, float), np.array(effort, float)))

    def __len__(self):
        return len(self.rows)

    def save(self, folder, now=None):
        """Write a new rosbag2 folder under `folder` (teach_<UTC time>) -> its path.
        ValueError when nothing was recorded.
        """
        if not self.rows:
            raise ValueError("nothing recorded: no joint state came while recording")
        now = now or datetime.datetime.now(datetime.timezone.utc)
        path = pathlib.Path(folder) / f"teach_{now:%Y%m%d_%H%M%S_%f}"
        path.parent.mkdir(parents=True, exist_ok=True)
        t, q, qd, effort = (np.array([row[k] for row in self.rows]) for k in range(4))
        write_states(path, t, self.names, q, qd, effort)
        return path


def smooth(t, q, window=SMOOTH):
    """q (m, n) averaged over a centred window of `window` s (fewer samples at the ends)."""
    if len(t) < 3 or window <= 0:
        return q.copy()
    dt = float(np.median(np.diff(t)))
    half = max(int(round(window / (2 * dt))), 0)
    if half == 0:
        return q.copy()
    padded = np.concatenate([np.repeat(q[:1], half, 0), q, np.repeat(q[-1:], half, 0)])
    kernel = np.ones(2 * half + 1) / (2 * half + 1)
    return np.column_stack([np.convolve(padded[:, j], kernel, mode="valid")
                            for j in range(q.shape[1])])


def waypoints(t, q, step=STEP, window=SMOOTH):
    """(times (k,) s from the motion's start, positions, velocities, accelerations (k, n)):
    the motion smoothed and thinned (module docstring). ValueError when it is too short or not
    in time order.
    """
    t = np.asarray(t, float)
    if len(t) < 2 or not np.all(np.diff(t) > 0):
        raise ValueError(f"a recording needs at least two joint states in time order, got "
                         f"{len(t)}")
    qs = smooth(t, np.asarray(q, float), window)
    keep = np.unique(np.concatenate([np.searchsorted(t, np.arange(t[0], t[-1], step)),
                                     [len(t) - 1]]))
    times, positions = t[keep] - t[0], qs[keep]
    velocities = np.gradient(positions, times, axis=0)
    accelerations = np.gradient(velocities, times, axis=0)
    velocities[[0, -1]] = accelerations[[0, -1]] = 0.0  # it began and ended at rest
    return times, positions, velocities, accelerations


def replay_points(t, q, start, step=STEP, window=SMOOTH):
    """A FollowJointTrajectory goal's points (time from start s, positions, velocities,
    accelerations) playing the motion (t (m,), q (m, n)) back from the arm's position `start`
    (n,): led in, then the motion's waypoints, shifted by the lead-in.
    """
    times, positions, velocities, accelerations = waypoints(t, q, step, window)
    far = float(np.max(np.abs(positions[0] - np.asarray(start, float))))
    lead = max(LEAD_IN, far / LEAD_IN_SPEED)
    return tuple((lead + tk, p, v, a) for tk, p, v, a in
                 zip(times, positions, velocities, accelerations))


def read_motion(path, names):
    """(t, q) of a recording (recording.read_states); ValueError in one line."""
    t, q, _, _ = read_states(path, names)
    return t, q
