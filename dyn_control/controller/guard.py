"""The guard stage, between the law and the rate limit, in every mode: the barriers of
dyn_control.controller.barriers at the joint limits, the velocity damping and its fault, and the
walls of the Cartesian modes and teach; the walls also clamp the Cartesian targets. It adds its
torque to the law's, within the effort limits; the core reacts to a velocity fault (a hold, as on a
collision).
"""

import numpy as np

from dyn_control.controller import barriers
from dyn_control.controller.laws import saturate


class Guard:
    """configure(model, settings.Limits, effort limits, control period, ee_links); `start(t, q)`
    at the first state; `add(tau, t, q, qd, walls)` adds the barriers to a law's tau. What it
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

    def configure(self, model, settings, limits, period, ee_links):
        self.model, self.settings, self.limits, self.ee_links = model, settings, limits, ee_links
        self.lower, self.upper = model.position_min, model.position_max
        self.velocity_limit = np.where(model.velocity_limits > 0, model.velocity_limits, np.inf)
        self.period = period
        self.data = model.workspace()
        self.torque = np.zeros(model.n)
        self.margin = settings.position_margin.copy() if settings.enabled else np.zeros(model.n)
        self.walls = settings.enabled and (np.isfinite(settings.workspace_min).any() or
                                           np.isfinite(settings.workspace_max).any())
        # the compiled walls' arguments: each ee_link's frame and box, and scratch
        self.wall_args = (
            *model.frame_arrays(ee_links),
            np.asarray(settings.workspace_min, float).reshape(-1, 3),
            np.asarray(settings.workspace_max, float).reshape(-1, 3))
        self.scratch = (np.empty((3, 3)), np.empty(3), np.empty((6, model.n)), np.empty(3))

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
        self.margin = start + share * (full - start)
        if share >= 1.0:
            self.recovering, self.margin = None, full.copy()

    def add(self, tau, t, q, qd, walls):
        """tau (n,) plus the barriers at (q, qd), saturated, in place -> tau. walls: whether the
        Cartesian walls act (the Cartesian modes and teach). A joint over its velocity limit
        sets `fault` (once, until cleared).
        """
        s = self.settings
        if not s.enabled:
            return tau
        if self.recovering is not None:
            self._recover(t)
        active, over = barriers.joint_barriers(
            *self.data.args, q, qd, self.lower, self.upper, self.margin, s.position_stiffness,
            s.position_damping, self.velocity_limit, s.velocity_fraction, s.velocity_damping,
            self.period, self.torque)
        if walls and self.walls:
            active = self._walls(q, qd) or active
        if over >= 0 and self.fault is None:
            self.faults += 1
            name, limit = self.model.joint_names[over], self.velocity_limit[over]
            self.fault = (f"velocity fault: joint '{name}' at {abs(qd[over]):.4g} over its "
                          f"velocity limit {limit:.4g}")
        if not active:
            return tau
        self.ticks += 1
        tau += self.torque
        return saturate(tau, self.limits)

    def _walls(self, q, qd):
        """The walls' J^T F on each ee_link, into self.torque -> whether any acts."""
        s = self.settings
        return barriers.wall_barriers(*self.data.args, q, qd, *self.wall_args,
                                      s.workspace_margin, s.workspace_stiffness,
                                      s.workspace_damping, *self.scratch, self.torque)

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
