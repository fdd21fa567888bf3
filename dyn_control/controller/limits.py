"""The limits stage, after the law, in one compiled call (`finish`): the soft start's blend from
g(q) to the law's torque, the guard's barriers (controller.barriers: joint limits, velocity,
walls) within the effort limits, the rate limit, and never a non-finite command. What a tick
decides from its results (the velocity fault's line, the counts, the last command) is Python's:
controller.guard, OutputLimits, the core. The watchdog's hold, which has no law and no guard,
takes the rate limit alone (OutputLimits.apply).
"""

import math

import numpy as np

from dyn_control.controller import barriers
from dyn_control.controller.laws import (
    _bounded_change,
    all_finite,
    at_limit,
    limit_rate,
    saturate,
)
from dyn_control.kernels.compile import jit
from dyn_control.kernels.newton_euler import NO_WRENCH, inverse_dynamics

# the rows of a Stage's (9, n) array and the entries of its values
LIMITS, LOWER, UPPER, MARGIN, STIFFNESS, DAMPING, VELOCITY_LIMIT, RATE, TORQUE = range(9)
(GUARD, WALLS, BOUNDED, FRACTION, VELOCITY_DAMPING, PERIOD, WALL_MARGIN, WALL_STIFFNESS,
 WALL_DAMPING) = range(9)


class Stage:
    """What `finish` reads for one configuration, as a few plain arrays (`args`): numba unboxes
    a NamedTuple field by field, 2.3 us a call for these, where its arrays cost 50 ns each.

    rows (9, n): the effort limits, the joint limits (inf: none), the barriers' margins now,
    stiffness (1/s^2) and damping (1/s), the velocity limits (inf: none), the rate limit
    (N m/s, inf: none), and the barrier torques `finish` fills; `margin` and `torque` are
    views of their rows, which the guard changes and reads. values: whether the guard is on,
    whether any wall is set, whether the rate limit bounds any joint, the velocity damping's
    fraction and gain (1/s), the control period (s), the walls' margin (m), stiffness (N/m)
    and damping (N s/m). Then the walls' frames and boxes, and their scratch.
    """

    def __init__(self, limits, guard, lower, upper, velocity_limit, period, walls, wall_args,
                 scratch, max_rate):
        s, n = guard, len(lower)
        self.rows = np.zeros((9, n))
        for row, value in ((LIMITS, limits), (LOWER, lower), (UPPER, upper),
                           (MARGIN, s.position_margin if s.enabled else 0.0),
                           (STIFFNESS, s.position_stiffness), (DAMPING, s.position_damping),
                           (VELOCITY_LIMIT, velocity_limit), (RATE, max_rate)):
            self.rows[row] = value
        self.margin, self.torque = self.rows[MARGIN], self.rows[TORQUE]
        self.values = np.array([s.enabled, walls, np.isfinite(max_rate).any(),
                                s.velocity_fraction, s.velocity_damping, period,
                                s.workspace_margin, s.workspace_stiffness, s.workspace_damping],
                               dtype=float)
        self.args = (self.rows, self.values, *wall_args, *scratch)


@jit
def finish(mvec, mrot, ints, vecs, rots, mats, rows, values, bodies, R_offs, p_offs, lows,
           highs, Rf, pf, J, force, share, walls, previous, since, tau, q, qd):
    """A law's tau (n,), saturated, at the state (q, qd) -> (command (n,), finite, active,
    fault, saturated), in the order the stages run (rows, values, ..., force: Stage.args):
    - share < 1 (the soft start): g + share (tau - g), g = g(q) saturated, the holding law's;
    - the guard (values[GUARD]): the joint barriers, and the walls where `walls` (the Cartesian
      modes and teach) and values[WALLS], added and saturated; `active`: whether any acted;
      `fault`: the first joint over its velocity limit, -1 none; `saturated`: whether a torque
      is at its effort limit then;
    - the rate limit (values[BOUNDED], `previous` (n,) the last command, None or (0,): none,
      `since` s after it): at most rows[RATE] * since of change, the last command itself when
      no time passed; `finite`: whether the command is (not sent otherwise).
    The model's and a workspace's arrays first, as every kernel takes them, then Stage.args and
    the tick's (share, walls, previous, since): a tick's `limits` (controller.ticks).
    """
    n = q.shape[0]
    limits, torque = rows[LIMITS], rows[TORQUE]
    if share < 1.0:
        g, zero = np.empty(n), np.zeros(n)
        inverse_dynamics(mvec, mrot, ints, vecs, rots, mats, q, zero, zero, NO_WRENCH, g)
        saturate(g, limits)
        s = max(share, 0.0)
        for i in range(n):
            tau[i] = g[i] + s * (tau[i] - g[i])
    active, fault = False, -1
    if values[GUARD] != 0.0:
        active, fault = barriers.joint_barriers(
            mvec, mrot, ints, vecs, rots, mats, q, qd, rows[LOWER], rows[UPPER], rows[MARGIN],
            rows[STIFFNESS], rows[DAMPING], rows[VELOCITY_LIMIT], values[FRACTION],
            values[VELOCITY_DAMPING], values[PERIOD], torque)
        if walls and values[WALLS] != 0.0:
            active = barriers.wall_barriers(
                mvec, mrot, ints, vecs, rots, mats, q, qd, bodies, R_offs, p_offs, lows, highs,
                values[WALL_MARGIN], values[WALL_STIFFNESS], values[WALL_DAMPING], Rf, pf, J,
                force, torque) or active
        if active:
            for i in range(n):
                tau[i] += torque[i]
            saturate(tau, limits)
    saturated = at_limit(tau, limits)
    out = tau.copy()  # the command: it outlives the tick
    if previous is not None:  # (typed apart for None: no check then)
        if previous.shape[0] == n and values[BOUNDED] != 0.0:
            if since <= 0:
                out[:] = previous
            else:
                _bounded_change(tau, previous, rows[RATE], since, out)
    finite = True
    for i in range(n):
        finite = finite and math.isfinite(out[i])
    return out, finite, active, fault, saturated


class OutputLimits:
    """The last command sent (`command`, chain order) and its time; `apply` bounds the next."""

    def __init__(self, say):
        self.say = say
        self.command = self.time = None
        self._rate = self._bounded = None  # the last max_rate seen, and whether it bounds

    def _bounds(self, max_rate):
        """Whether max_rate bounds any joint, asked once per settings, not once a tick."""
        if max_rate is not self._rate:
            self._rate, self._bounded = max_rate, bool(np.isfinite(max_rate).any())
        return self._bounded

    def apply(self, tau, t, max_rate):
        """tau rate-limited to max_rate (N m/s) since the last command, or None when it is not
        finite (nothing is sent then, and it is said).
        """
        if self.command is not None and self._bounds(max_rate):  # off: no bound at all
            tau = limit_rate(tau, self.command, max_rate, t - self.time)
        return self.take(tau, all_finite(tau), t)

    def since(self, t):
        """(the last command or None, s since it): what `finish` bounds the next one by."""
        return self.command, (0.0 if self.time is None else t - self.time)

    def take(self, tau, finite, t):
        """A limited command at t -> tau, the last command now; None (said) if not finite."""
        if not finite:
            self.say("error", "non-finite effort computed; command not sent", throttle=True)
            return None
        self.command, self.time = tau, t
        return tau
