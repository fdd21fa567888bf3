"""Where an arm starts: inside its position limits, and where its motors can hold it against
gravity. The simulator starts there unless told otherwise, and the controller checks its first
state against the same figures.
"""

import numpy as np

from dyn_control.dynamics import gravity_torques
from dyn_control.model.chain import effort_limits

HOLD_SHARE = 0.8  # of a joint's effort limit, at most, that a start pose found for it needs


def gravity_overloads(chain, q, limits=None):
    """One line for each joint whose effort limit cannot hold the arm at q against gravity
    (limits: (n,) N m or N, default the URDF's): there the arm sags from the first command,
    into its stops, and the stop's torque would read as a collision.
    """
    limits = effort_limits(chain) if limits is None else np.asarray(limits, float)
    g = gravity_torques(chain, q)
    unit = ["N" if kind == "prismatic" else "N m" for kind in (j.type for j in chain.joints)]
    return [f"joint '{chain.joint_names[i]}' needs {abs(g[i]):.4g} {unit[i]} against gravity "
            f"at {np.round(np.asarray(q, float), 3).tolist()}, over its effort limit of "
            f"{limits[i]:.4g} {unit[i]}" for i in np.flatnonzero(np.abs(g) > limits)]


def _load(chain, q, limits):
    """The largest share of its effort limit that a joint needs to hold q against gravity."""
    return float(np.max(np.abs(gravity_torques(chain, q)) / limits))


def holdable_pose(chain, q, limits, share=HOLD_SHARE, samples=73):
    """q, or where the effort limits cannot hold it against gravity, the pose nearest it that
    needs at most `share` of every limit: the overloaded joints from the root out, each set to
    the value of its range (a turn where unlimited) that needs least, nearest q among those
    under share. Returns q itself when it can be held, or the best pose found.
    """
    q = np.array(q, dtype=float)
    if _load(chain, q, limits) <= 1.0:
        return q
    for _ in range(3):
        over = np.abs(gravity_torques(chain, q)) > share * limits
        if not over.any():
            break
        for i in np.flatnonzero(over):
            low, high = chain.position_min[i], chain.position_max[i]
            room = START_ROOM * (high - low)  # as zero_pose: a start on a stop has no room
            low, high = (low, high) if np.isfinite(room) else (q[i] - np.pi, q[i] + np.pi)
            start, values = q[i], np.linspace(low, high, samples)
            loads = np.full(samples, np.inf)  # none within START_ROOM of a stop
            inside = (values >= low + room) & (values <= high - room) if np.isfinite(room) \
                else np.ones(samples, bool)
            for k in np.flatnonzero(inside):
                q[i] = values[k]
                loads[k] = _load(chain, q, limits)
            fits = loads <= share
            q[i] = values[np.argmin(np.where(fits, np.abs(values - start), np.inf))
                          if fits.any() else np.argmin(loads)]
    return q


START_ROOM = 0.1  # of a joint's range: how far inside each limit the default start is, at least


def zero_pose(chain):
    """Zeros, or the middle of the position limits where zero lies outside them; a zero within
    START_ROOM of the range from a limit is moved that far inside it (the Panda's joint 6 has
    0.0175 rad below zero, Baxter's left_e1 0.05: a start at the stop leaves a motion about it
    no room on that side, and the first sag lands on the stop).
    """
    low, high = chain.position_min, chain.position_max
    outside = (low > 0) | (high < 0)  # (then both are finite)
    with np.errstate(invalid="ignore"):  # -inf + inf where unlimited, not chosen
        room = START_ROOM * (high - low)
        q = np.where(outside, 0.5 * (low + high), 0.0)
        limited = np.isfinite(room)
        return np.where(limited, np.clip(q, low + room, high - room), q)


def default_initial_positions(chain, limits=None):
    """zero_pose, or where the effort limits (default the URDF's) cannot hold it against
    gravity, the nearest pose they can (holdable_pose: Baxter's left_s1 needs 56 N m at zero
    against 50).
    """
    limits = effort_limits(chain) if limits is None else limits
    return holdable_pose(chain, zero_pose(chain), limits)
