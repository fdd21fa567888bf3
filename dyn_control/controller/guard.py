"""The guard, between the law and the rate limit, in every mode: the barriers of
dyn_control.controller.barriers at the joint limits, the velocity damping and its fault, and the
walls of the Cartesian modes and teach; the walls also clamp the Cartesian targets. Its torque is
added to the law's, within the effort limits, by the compiled limits stage
(controller.limits.finish), which reads the arrays configured here; the core reacts to a
velocity fault (a hold, as on a collision).
"""

import numpy as np

from dyn_control import kinematics
from dyn_control.controller import barriers
from dyn_control.controller.limits import WALL_MARGIN, WALLS, Stage


class Guard:
    """configure(model, settings.Limits, effort limits, control period, ee_links, rate limit):
    the limits stage's arguments (`stage`, controller.limits.Stage); `start(t, q)`
    at the first state; `before(t)` and `after(...)` around each tick's limits stage. What it
    reports: `torque` (the last barrier torques), `ticks` (ticks with a barrier on), `fault`
    (the velocity fault, one line, until `clear`), `faults`, `clamped` (targets moved inside a
    wall), `walls_refused` (why the walls are set aside, or None).

    Walls must contain the hand. A wall the hand is already past is not a barrier but a
    spring wound up beyond its design: 0.15 m past one, its push drove the default arm's
    wrist over its velocity limit in 30 ms, and the hand never moved toward the wall. So walls
    that leave a hand outside are refused (configure's check) or, at the first state, set
    aside in one line; a hand inside a wall's margin has the margin grow back around it, as
    a joint inside its margin does.
    """

    def __init__(self, say):
        self.say = say
        self.settings = None
        self.fault = None
        self.faults = self.ticks = self.clamped = 0
        # (t0, joint margins at t0, wall margin at t0) while a joint or a hand gets its
        # margin back
        self.recovering = None
        self.walls_refused = None

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
        self.walls_refused, self.recovering = None, None

    def wall_rooms(self, q):
        """(frames, 6) m: each ee_link's distance to its walls at q (wall_rooms)."""
        s = self.settings
        return wall_rooms(self.model, self.ee_links, s.workspace_min, s.workspace_max, q)

    def walls_outside(self, q):
        """One line naming the first wall that leaves a hand outside at q, or None."""
        return walls_outside(self.model, self.settings, self.ee_links, q) if self.walls else None

    def wall_report(self, q, qd):
        """{ee_link: (m to its nearest wall, N of the walls' push now)} at (q, qd)."""
        if not self.walls:
            return {}
        s, force = self.settings, np.empty(3)
        rooms = self.wall_rooms(q)
        found = {}
        for k, link in enumerate(self.ee_links):
            _, p = kinematics.frame_pose(self.model, q, link)
            v = kinematics.frame_jacobian(self.model, q, link)[:3] @ qd
            barriers.wall_force(p, v, s.workspace_min[k], s.workspace_max[k],
                                self.stage.values[WALL_MARGIN], s.workspace_stiffness,
                                s.workspace_damping, force)
            found[link] = (float(rooms[k].min()), float(np.linalg.norm(force)))
        return found

    def enter(self, t, q):
        """The walls were configured with the arm at q, at state time t, and contain the hand
        (the core refused them otherwise): a hand inside their margin gets it back gently.
        """
        self._recover_from(t, q, joints=False)

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
        outside = self.walls_outside(q)
        if outside is not None:  # nothing to refuse at the first state: set aside, said
            self.walls_refused, self.walls = outside, False
            self.stage.values[WALLS] = 0.0
            self.say("error", f"walls set aside: {outside}; set them again to take them")
        inside = barriers.room(q, self.lower, self.upper)
        full = self.settings.position_margin
        for i in np.flatnonzero(inside < full):
            self.say("warning", f"joint '{self.model.joint_names[i]}' starts "
                                f"{max(inside[i], 0.0):.4g} from its limit, inside its margin "
                                f"{full[i]:.4g}: pushed back over {barriers.RECOVERY_TIME:g} s")
        self._recover_from(t, q)
        return None if not np.any(inside < full) else self.outside(q)

    def _recover_from(self, t, q, joints=True):
        """Margins that q is inside (a hand's walls', and with `joints` a joint's) grow from
        where q is to the whole over barriers.RECOVERY_TIME.
        """
        full = self.settings.position_margin
        joints = (np.clip(barriers.room(q, self.lower, self.upper), 0.0, full) if joints
                  else np.broadcast_to(full, self.margin.shape).astype(float))
        wall = self.settings.workspace_margin
        if self.walls and self.walls_refused is None:
            wall = float(np.clip(self.wall_rooms(q).min(), 0.0, wall))
            if wall < self.settings.workspace_margin:
                self.say("warning", f"the hand starts {wall:.4g} m from a wall, inside its "
                                    f"margin: pushed back over {barriers.RECOVERY_TIME:g} s")
        if np.any(joints < full) or wall < self.settings.workspace_margin:
            self.recovering = (t, joints, wall)
            self._recover(t)

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
        t0, start, wall = self.recovering
        share = min(max((t - t0) / barriers.RECOVERY_TIME, 0.0), 1.0)
        s = self.settings
        self.margin[:] = start + share * (s.position_margin - start)  # in place: the stage's
        self.stage.values[WALL_MARGIN] = wall + share * (s.workspace_margin - wall)
        if share >= 1.0:
            self.recovering = None
            self.margin[:] = s.position_margin  # exactly, not start + (full - start)
            self.stage.values[WALL_MARGIN] = s.workspace_margin

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


def wall_rooms(model, ee_links, low, high, q):
    """(frames, 6) m: each ee_link's distance at q to its walls low, high (frames, 3), as (low
    x, y, z, high x, y, z), negative past a wall, inf where there is none.
    """
    p = np.array([kinematics.frame_pose(model, q, link)[1] for link in ee_links])
    return np.hstack([p - low, high - p])


def walls_outside(model, settings, ee_links, q):
    """One line naming the first wall of settings (settings.Limits) that leaves a hand
    (ee_links) outside at q, or None: none does, or the walls are off.
    """
    low, high = settings.workspace_min, settings.workspace_max
    if not settings.enabled or not (np.isfinite(low).any() or np.isfinite(high).any()):
        return None
    rooms = wall_rooms(model, ee_links, low, high, q)
    k, side = np.unravel_index(np.argmin(rooms), rooms.shape)
    if rooms[k, side] >= 0.0:
        return None
    name, wall = (("limits.workspace_min", low), ("limits.workspace_max", high))[side // 3]
    return (f"{name} {'xyz'[side % 3]} = {wall[k, side % 3]:.4g} m leaves the hand "
            f"({ee_links[k]}) {-rooms[k, side]:.4g} m outside: walls must contain the hand")
