"""The guard, between the law and the rate limit, in every mode: the barriers of
dyn_control.controller.barriers at the joint limits, the velocity damping and its fault, and the
walls of the Cartesian modes and teach; the walls also clamp the Cartesian targets. Its torque is
added to the law's, within the effort limits, by the compiled limits stage
(controller.limits.finish), which reads the arrays configured here; the core reacts to a
velocity fault (a hold, as on a collision).
"""

import numpy as np

from dyn_control.controller import barriers
from dyn_control.controller.limits import Stage


class Guard:
    """configure(model, settings.Limits, effort limits, control period, ee_links, rate limit):
    the limits stage's arguments (`stage`, controller.limits.Stage); `start(t, q)`
    at the first state; `before(t)` and `after(...)` around each tick's limits stage. What it
    reports: `torque` (the last barrier torques), `ticks` (ticks with a barrier on), `fault`
    (the velocity fault, one line, until `clear`), `faults`, `clamped` (targets moved inside a
    wall).
    """

    def __init__(self, say):
        self.say = say
        self.settings = None
        self.fault = None
        self.faults = self.ticks = self.clamped = 0
        self.recovering = None  # (t0, margins at t0) while a joint gets its margin back

    def configure(self, model, settings, limits, period, ee_links, max_rate):
        """...and max_rate (n,) N m/s, the rate limit, which the limits stage applies after."""
        self.model, self.settings, self.ee_links = model, settings, ee_links
        self.lower, self.upper = model.position_min, model.position_max
        self.velocity_limit = np.where(model.velocity_limits > 0, model.velocity_limits, np.inf)
        self.data = model.workspace()
        self.walls = settings.enabled and (np.isfinite(settings.workspace_min).any() or
                                           np.isfinite(settings.workspace_max).any())
        # the compiled stage's arguments: each ee_link's frame and box, and scratch; the
        # margins and the barrier torques are views of its rows
        wall_args = (*model.frame_arrays(ee_links),
                     np.asarray(settings.workspace_min, float).reshape(-1, 3),
                     np.asarray(settings.workspace_max, float).reshape(-1, 3))
        scratch = (np.empty((3, 3)), np.empty(3), np.empty((6, model.n)), np.empty(3))
        self.stage = Stage(limits, settings, self.lower, self.upper, self.velocity_limit, period,
                           self.walls, wall_args, scratch, max_rate)
        self.margin, self.torque = self.stage.margin, self.stage.torque

    @property
    def enabled(self):
        return self.settings.enabled

    def start(self, t, q):
        """The first state: a joint already inside its margin is pushed back gently, its
        margin growing from where it is to the whole over barriers.RECOVERY_TIME. -> the
        nearest pose outside every margin, for the hold to go to, or None: q is.
        """
        if not self.enabled:
            return None
        inside = barriers.room(q, self.lower, self.upper)
        full = self.settings.position_margin
        if not np.any(inside < full):
            return None
        self.recovering = (t, np.clip(inside, 0.0, full))
        for i in np.flatnonzero(inside < full):
            self.say("warning", f"joint '{self.model.joint_names[i]}' starts "
                                f"{max(inside[i], 0.0):.4g} from its limit, inside its margin "
                                f"{full[i]:.4g}: pushed back over {barriers.RECOVERY_TIME:g} s")
        self._recover(t)
        return self.outside(q)

    def outside(self, q):
        """The nearest pose to q outside every joint's margin: where a hold goes, so that the
        law and the barriers do not pull against each other.
        """
        full = self.settings.position_margin
        if not self.enabled or not np.any(full > 0):
            return q
        limited = full > 0
        out = np.array(q, dtype=float)
        out[limited] = np.clip(out, self.lower + full, self.upper - full)[limited]
        return out

    def _recover(self, t):
        t0, start = self.recovering
        share = min(max((t - t0) / barriers.RECOVERY_TIME, 0.0), 1.0)
        full = self.settings.position_margin
        self.margin[:] = start + share * (full - start)  # in place: the limits stage reads it
        if share >= 1.0:
            self.recovering = None
            self.margin[:] = full

    def before(self, t):
        """A tick at state time t is coming: a joint getting its margin back gets it."""
        if self.recovering is not None:
            self._recover(t)

    def after(self, active, over, qd):
        """What the limits stage found (controller.limits.finish): whether a barrier acted, and
        the first joint over its velocity limit (-1: none), which sets `fault` (once, until
        cleared).
        """
        if over >= 0 and self.fault is None:
            self.faults += 1
            name, limit = self.model.joint_names[over], self.velocity_limit[over]
            self.fault = (f"velocity fault: joint '{name}' at {abs(qd[over]):.4g} over its "
                          f"velocity limit {limit:.4g}")
        self.ticks += bool(active)

    def clamp(self, p, frame):
        """A target position p (3,) for ee_link `frame`, moved inside its walls' box (their
        margin in); said once per target moved.
        """
        s = self.settings
        if not self.walls:
            return p
        low = s.workspace_min[frame] + s.workspace_margin
        high = s.workspace_max[frame] - s.workspace_margin
        inside = np.minimum(np.maximum(p, low), high)
        if not np.array_equal(inside, p):
            self.clamped += 1
            self.say("warning", f"target of {self.ee_links[frame]} at {np.round(p, 4).tolist()} m "
                                f"is outside its walls: clamped to "
                                f"{np.round(inside, 4).tolist()} m")
        return inside

    def clear(self):
        """The fault is cleared (reset_collision): the arm was held."""
        self.fault = None

    def rooms(self, q):
        """{joint: rad or m} each limited joint's distance to its nearest limit at q (negative:
        past it).
        """
        inside = barriers.room(q, self.lower, self.upper)
        return {name: round(float(r), 6) for name, r in zip(self.model.joint_names, inside)
                if np.isfinite(r)}
