"""The reference stage of the joint modes: goals come through one door, `offer`, from the topic
and the action alike, with JTC's semantics (dyn_control.controller.goals): the answer is synchronous
(the Goal is refused with a code and a reason, or active, or pending until the first state), a newer
goal preempts the running one, and every goal ends once with an outcome. A path or goal-time
violation, a cancel and a state timeout hold the arm where it is (the measured position); a
goal that succeeds holds its last point. `reference(t, q)` is what the law tracks at t.
"""

import numpy as np

from dyn_control.controller import goals
from dyn_control.controller.laws import trajectory_violation
from dyn_control.controller.trajectory import Trajectory
from dyn_control.parameters import MODES

# rad or m: a goal that "succeeds" this far from its last point, with no goal tolerance to
# check, says how far (a one-point goal at time_from_start 0, 1.4 rad away, succeeded at once)
UNCHECKED_GAP = 0.01


class Goal:
    """One trajectory goal, from its offer to its outcome.

    status: "pending" (kept until the first joint state), "active" or "done". Once done,
    outcome is "succeeded", "aborted" or "canceled", code a goals result code (SUCCESSFUL ...)
    and reason one line. trajectory and tolerances are set while it is active.
    """

    def __init__(self, request):
        self.request = request
        self.status = "pending"
        self.outcome = self.code = None
        self.reason = ""
        self.trajectory = self.tolerances = None

    @property
    def done(self):
        return self.status == "done"

    def end(self, outcome, code, reason):
        self.status, self.outcome, self.code, self.reason = "done", outcome, code, reason


class GoalTracker:
    """The active goal, a pending one, the trajectory the law tracks, and the span of the newest
    trajectory started (`started`, state time s). configure() gives it the model, the effort
    limits, the goal settings (settings.Goals) and the controller's mode (goals run in MODES).
    """

    def __init__(self, say):
        self.say = say
        self.goal = self.pending = self.trajectory = self.started = None

    def configure(self, model, limits, settings, mode):
        self.model, self.limits, self.settings, self.mode = model, limits, settings, mode

    def offer(self, request, state, refusal=None):
        """A new goal (goals.Request) at the last good state (None before the first) -> its
        Goal, refused (done), active or pending. `refusal`: a reason to refuse any goal now
        (INVALID_GOAL; the running one goes on).

        Checked at once against the model, the tolerances and the limits (trajectory_check);
        on refusal the running goal goes on. An accepted goal preempts the running one, which
        ends aborted with INVALID_GOAL, as JTC ends a preempted goal. Before the first joint
        state a goal is kept (a newer one replaces it) and checked when that state comes.
        """
        goal = Goal(request)
        if refusal:
            goal.end("aborted", goals.INVALID_GOAL, refusal)
            self.say("error", f"trajectory refused: {refusal}", throttle=True)
            return goal
        if state is None:
            if self.pending is not None:
                self.finish(self.pending, "aborted", goals.INVALID_GOAL,
                            f"preempted by a newer goal from the {request.source}")
            self.pending = goal
            self.say("info", "trajectory kept until the first joint state arrives")
            return goal
        self.start(goal, state)
        return goal

    def start_pending(self, state):
        """The first state came: check and start the goal kept for it."""
        if self.pending is not None:
            goal, self.pending = self.pending, None
            self.start(goal, state)

    def start(self, goal, state):
        t, q, qd = state
        s, request = self.settings, goal.request
        if self.mode not in MODES:
            goal.end("aborted", goals.INVALID_GOAL, f"the controller is in {self.mode} "
                                                    "mode: trajectories need a joint mode")
            self.say("error", f"trajectory refused: {goal.reason}", throttle=True)
            return
        desired = self.trajectory.sample(t) if self.trajectory is not None else None
        zero = np.zeros(self.model.n)
        if desired is None:
            desired = (q, zero, zero)
        start = desired if s.interpolate_from_desired_state else (q, qd, zero)
        try:
            trajectory = goals.trajectory_from_request(
                request, self.model, t, start, desired[0], s.allow_partial_joints_goal,
                s.allow_nonzero_velocity_at_trajectory_end)
            tolerances = goals.goal_tolerances(s.tolerances, request, self.model.joint_names)
            check = s.trajectory_check
            problem = (None if check == "off" else
                       trajectory_violation(self.model, trajectory, self.limits))
            if problem and check == "reject":
                raise goals.GoalRefused(goals.INVALID_GOAL, problem)
        except goals.GoalRefused as refusal:
            goal.end("aborted", refusal.code, refusal.reason)
            self.say("error", f"trajectory refused: {refusal.reason} ({refusal.code}); the "
                              "running one goes on")
            return
        if problem:
            self.say("warning", f"trajectory beyond the arm's limits: {problem}")
        if self.goal is not None:
            self.finish(self.goal, "aborted", goals.INVALID_GOAL,
                        f"preempted by a new goal from the {request.source}", quiet=True)
        goal.status, goal.trajectory, goal.tolerances = "active", trajectory, tolerances
        self.goal, self.trajectory = goal, trajectory
        self.started = (trajectory.start_time, trajectory.end_time)
        self.say("info", f"new {trajectory.kind} trajectory from the {request.source}: "
                         f"t = {trajectory.start_time:.3f} s to {trajectory.end_time:.3f} s")

    def cancel(self, goal, state):
        """End `goal` (pending or active) as canceled; an active one leaves the arm holding
        where it is. Returns whether there was anything to cancel.
        """
        if goal is self.pending:
            self.pending = None
        elif goal is self.goal:
            self.hold_here(state)
        else:
            return False
        self.finish(goal, "canceled", goals.SUCCESSFUL, "canceled")
        return True

    def finish(self, goal, outcome, code, reason, quiet=False):
        """End a goal; say so, unless `quiet` and it is a streamed set-point (one point at
        time 0 on the topic, as teleoperation sends them: saying each would fill the log).
        """
        goal.end(outcome, code, reason)
        if goal is self.goal:
            self.goal = None
        points = goal.request.points
        streamed = goal.request.source == "topic" and len(points) == 1 and points[0][0] == 0.0
        if not (quiet and streamed):
            level = "info" if outcome != "aborted" else "warning"
            self.say(level, f"goal from the {goal.request.source} {outcome} ({code}): {reason}")

    def abort(self, reason):
        """End the active goal aborted (INVALID_GOAL), as JTC ends a goal when it is
        deactivated; the arm holds what the core decides.
        """
        if self.goal is not None:
            self.finish(self.goal, "aborted", goals.INVALID_GOAL, reason)

    def hold_here(self, state):
        """Hold the measured position from `state` on (JTC's set_hold_position)."""
        t, q, _ = state
        self.trajectory = Trajectory.hold(t, q)

    def reference(self, t, q):
        """(q_d, qd_d, qdd_d) at state time t; before any trajectory, the first measured q."""
        if self.trajectory is None:
            self.trajectory = Trajectory.hold(t, q)
        return self.trajectory.sample(t)

    def monitor(self, state, e, ed):
        """The active goal's tolerances at the state's time; True when it aborted (the arm
        holds where it is).
        """
        goal, t = self.goal, state[0]
        if goal is None:
            return False
        tolerances, end = goal.tolerances, goal.trajectory.end_time
        names = self.model.joint_names
        if t < end:
            hit = goals.first_violation(tolerances.path, e, ed)
            if hit < 0:
                return False
            code = goals.PATH_TOLERANCE_VIOLATED
            reason = (goals.describe_violation(hit, tolerances.path, e, ed, names, "path")
                      + f" at t = {t - goal.trajectory.start_time:.3f} s from the start")
        else:
            hit = goals.first_violation(tolerances.goal, e, ed)
            if hit < 0:
                reason = f"goal reached {t - end:.3f} s after the trajectory's end"
                far = int(np.argmax(np.abs(e)))
                if not tolerances.goal[:, goals.POSITION].any() and abs(e[far]) > UNCHECKED_GAP:
                    # as JTC: with no goal tolerance the end of the time is the success; say so
                    reason += (f", with no goal tolerance set (constraints.<joint>.goal 0): "
                               f"'{names[far]}' is still {abs(e[far]):.3g} from the last point")
                self.finish(goal, "succeeded", goals.SUCCESSFUL, reason, quiet=True)
                return False
            if tolerances.goal_time == 0 or t - end <= tolerances.goal_time:
                return False
            code = goals.GOAL_TOLERANCE_VIOLATED
            reason = (goals.describe_violation(hit, tolerances.goal, e, ed, names, "goal")
                      + f" {t - end:.3f} s after the end (goal_time {tolerances.goal_time:g} s)")
        self.hold_here(state)
        self.finish(goal, "aborted", code, reason + "; holding where the arm is")
        return True

    def stop(self, state, code, reason):
        """End the active goal aborted with `code` and hold where the arm is (a collision)."""
        if self.goal is not None:
            self.finish(self.goal, "aborted", code, reason)
        self.hold_here(state)

    def feedback(self, goal, last, state):
        """What the action's feedback reports on the active `goal`, from the last Command
        sent and the last state: (t, desired (q, qd, qdd), actual (q, qd), errors (e, ed),
        index of the waypoint it heads for), or None before a tick of it.
        """
        if goal is not self.goal or last is None or last.desired is None:
            return None
        _, q, qd = state
        return (last.t, last.desired, (q, qd), last.errors, self.next_point(goal, last.t))

    def next_point(self, goal, t):
        """For the action's feedback: the index of the waypoint `goal` heads for at t."""
        return goals.next_point(goal.request, goal.trajectory, t)
