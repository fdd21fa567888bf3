"""The computed-torque controller without middleware: everything computed_torque_controller does
between reading a message and writing one, driven by plain calls with explicit time.

    core = ControllerCore(chain, settings)        # settings: controller_settings(...)
    command = core.update(now, (stamp, q, qd))    # a joint state arrived (chain order)
    command = core.update(now)                    # a watchdog tick: no state
    command = core.tick()                         # a rate timer tick (rate > 0)
    goal = core.offer(request)                    # a trajectory goal (goals.Request)
    core.cancel(goal)                             # hold where the arm is; the goal ends

`now` is the watchdog's clock (s): simulated time under use_sim_time, steady time otherwise;
`stamp` is the state's own time, the time of the trajectory and of the command. A call returns
a `Command` to publish, or None. What a person should read goes to `events` as (level, text,
throttle) for the node to log; what a program needs to know goes to `diagnostics()`, never only
to a log line. Pure numpy: tests drive it with synthetic time, no ROS needed.

Goals come through one door, `offer`, from the topic and the action alike, with JTC's
semantics (dyn_control.goals): the answer is synchronous (the Goal is refused with a code and a
reason, or active, or pending until the first state), a newer goal preempts the running one,
and every goal ends once with an outcome. A path or goal-time violation, a cancel and a state
timeout hold the arm where it is (the measured position); a goal that succeeds holds its last
point.
"""

import time
from collections import deque
from typing import NamedTuple

import numpy as np

from . import goals, kinematics
from .cartesian import CARTESIAN_IMPEDANCE, CartesianLaw, per_frame
from .control import (MODES, ControlLaw, all_finite, at_limit, check_gains, critical_damping,
                      gain_vector, limit_rate, trajectory_violation)
from .cores import REPORT_EVERY, Events, JointSettings
from .parameters import payload_model, unset
from .trajectory import Trajectory


class Command(NamedTuple):
    t: float  # s, state time
    tau: np.ndarray  # (n,) chain order
    desired: tuple  # (q_d, qd_d, qdd_d), or None while holding or in cartesian_impedance
    errors: tuple  # (e, ed), or None likewise
    task: np.ndarray = None  # cartesian_impedance: the pose error (6,), m and rad, base axes


# rad or m: a goal that "succeeds" this far from its last point, with no goal tolerance to
# check, says how far (a one-point goal at time_from_start 0, 1.4 rad away, succeeded at once)
UNCHECKED_GAP = 0.01


def same_inertias(a, b):
    """Whether two models of one chain carry the same bodies (a payload changes them)."""
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("mass", "com", "inertia"))


def controller_settings(chain, value, order=None):
    """Settings for ControllerCore from the controller's parameters, read by value(name) (see
    dyn_control.parameters.CONTROLLER, whose checks the node has run); per-joint values come
    in `joints` order (order[i]: the chain index of the i-th) and go out in chain order.
    ValueError names the parameter and the value."""
    joints = JointSettings(chain, value, order)
    per_joint = joints.gains

    def constraint(kind):  # constraints.<joint>.<kind>, chain order
        return np.array([value(f"constraints.{name}.{kind}") for name in chain.joint_names])

    kp = per_joint("kp")
    ee_links = (tuple(link for link in value("ee_links") if link)
                or (value("ee_link") or chain.tip_link,))
    for link in ee_links:
        chain.frame(link, "ee_link")  # ValueError naming it
    frames = len(ee_links)
    damping = value("cartesian_damping")
    kd = critical_damping(kp) if value("kd") is None else per_joint("kd")
    check_gains(value("mode"), kp, kd, value("control_period"), chain.joint_names)
    return dict(
        mode=value("mode"), kp=kp, kd=kd,
        ki=per_joint("ki"), integral_limit=per_joint("integral_limit"),
        limits=joints.effort_limits(),
        friction_compensation=bool(value("friction_compensation")),
        friction_deadband=value("friction_deadband"), control_period=value("control_period"),
        state_timeout=value("state_timeout"), on_state_timeout=value("on_state_timeout"),
        max_effort_rate=value("max_effort_rate"), trajectory_check=value("trajectory_check"),
        rate=value("rate"),
        interpolate_from_desired_state=bool(value("interpolate_from_desired_state")),
        allow_partial_joints_goal=bool(value("allow_partial_joints_goal")),
        allow_nonzero_velocity_at_trajectory_end=bool(
            value("allow_nonzero_velocity_at_trajectory_end")),
        tolerances=goals.Tolerances.defaults(
            constraint("trajectory"), constraint("goal"),
            value("constraints.stopped_velocity_tolerance"), value("constraints.goal_time")),
        cartesian=dict(
            ee_link=ee_links,
            stiffness=per_frame(value("cartesian_stiffness"), frames, "cartesian_stiffness"),
            damping=None if unset(damping) else per_frame(damping, frames, "cartesian_damping"),
            nullspace_stiffness=per_joint("nullspace_stiffness"),
            nullspace_damping=None if unset(value("nullspace_damping")) else per_joint(
                "nullspace_damping"),
            operational_space=bool(value("operational_space")),
            max_pose_error=gain_vector(value("max_pose_error"), 2, "max_pose_error")),
        nullspace_posture=joints.positions("nullspace_posture"),
        target_filter=value("target_filter"),
        model=payload_model(chain, value))


def _too_stiff(cartesian, q, period):
    """Why the Cartesian stiffness is beyond what `period` holds at q, or None. Its stiffest
    mode at critical damping asks kd = 2 w: the sampled loop's kd T < 2 (control.py) is w T < 1."""
    fastest = cartesian.fastest_mode(q)
    if fastest * period <= 1.0:
        return None
    return (f"cartesian_stiffness: the stiffest mode of the arm at this pose is {fastest:.0f} "
            f"rad/s, beyond 1/control_period ({1 / period:.0f} rad/s): the loop can oscillate; "
            "lower the stiffness, or set operational_space")


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

    def _end(self, outcome, code, reason):
        self.status, self.outcome, self.code, self.reason = "done", outcome, code, reason


class Task:
    """What cartesian_impedance reads, per ee_link k: the target pose targets[k] (R (3, 3), p
    (3,) m, base frame) and the filtered target the law tracks; the feed-forward wrenches w
    (6 f,) and the posture q_n (n,); and the last pose error (6 f,)."""

    def __init__(self, poses, posture):
        self.targets, self.filtered = list(poses), list(poses)
        self.wrench = np.zeros(6 * len(poses))
        self.posture = posture
        self.error = np.zeros(6 * len(poses))

    @property
    def target(self):
        """The first (or only) ee_link's target pose."""
        return self.targets[0]

    def step(self, dt, time_constant):
        """The filtered targets after dt s, (R (f, 3, 3), p (f, 3)): first order toward each
        target with time_constant (s; 0: the target itself), position and rotation (along the
        geodesic) alike."""
        for k, ((R_f, p_f), (R_t, p_t)) in enumerate(zip(self.filtered, self.targets)):
            if time_constant <= 0:
                self.filtered[k] = (R_t, p_t)
            else:
                share = dt / (time_constant + dt)
                turn = kinematics.rotation_exp(share * kinematics.rotation_log(R_f.T @ R_t))
                self.filtered[k] = (R_f @ turn, p_f + share * (p_t - p_f))
        return (np.array([R for R, _ in self.filtered]), np.array([p for _, p in self.filtered]))


class ControllerCore(Events):
    """Goals, trajectory, stale-state hold, rate limit and the law, for one chain."""

    def __init__(self, chain, settings):
        super().__init__()
        self.chain = chain  # from the URDF; settings["model"] adds the payload
        self.law = None
        self.trajectory = None
        self.task = None  # cartesian_impedance: its target, wrench, posture (Task)
        self.goal = None  # the active goal, whose trajectory runs
        self.pending = None  # a goal that came before the first state
        self.state = None  # (stamp, q, qd) of the last good joint state
        self.tick_time = None  # stamp of the last tick: the integral's step
        self.command = None  # last command sent, chain order, and its time
        self.command_time = None
        self.last = None  # the last Command sent (feedback and controller state read it)
        self.last_seen = None  # `now` of the last good state
        self.stale = False
        self.compute_s = deque(maxlen=5000)
        self.ticks = self.saturated = self.stale_events = 0
        # what /diagnostics tells programs, so that none reads it from the log: the span of the
        # newest trajectory started (state time, s), the silence at the newest stale-state
        # report (s), and the state time after which the newest payload took effect
        self.started = self.stale_silence = self.payload_since = None
        self.refused = None  # why cartesian_impedance was not entered (the arm holds its joints)
        self._next_report = -np.inf
        self.configure(settings)

    def configure(self, settings):
        """Take validated settings (controller_settings); the rebuilt law keeps the error
        integral, the estimate of the unmodelled load. New default tolerances apply from the
        next goal on (the active one keeps its own, as JTC). A mode switch hands the new law
        the current state as its reference: entering cartesian_impedance (or a new ee_link)
        takes the current pose as the target and the current posture as q_n; leaving it, the
        joint law holds the measured position. ValueError, and nothing changes, when the
        Cartesian stiffness is beyond what the control period holds at the arm's pose."""
        s = settings
        cartesian = CartesianLaw(s["model"], **s["cartesian"], limits=s["limits"],
                                 friction_compensation=s["friction_compensation"],
                                 friction_deadband=s["friction_deadband"],
                                 period=s["control_period"])
        if s["mode"] == CARTESIAN_IMPEDANCE and self.state is not None:
            stiffness_problem = _too_stiff(cartesian, self.state[1], s["control_period"])
            if stiffness_problem:
                raise ValueError(stiffness_problem)
        before = getattr(self, "settings", None)
        self.settings = settings
        self.refused = None  # the next tick tries the mode again with these settings
        if before is not None and not same_inertias(before["model"], s["model"]):
            self.payload_since = None if self.state is None else self.state[0]
        self.model, self.limits = s["model"], s["limits"]
        self.state_timeout = s["state_timeout"]
        # the watchdog looks twice per timeout, at least every 10 ms
        self.watchdog_period = min(0.01, self.state_timeout / 2)
        self.hold_law = ControlLaw.gravity(self.model, self.limits)
        joint_mode = s["mode"] if s["mode"] in MODES else "computed_torque"
        self.law = ControlLaw(
            self.model, joint_mode, s["kp"], s["kd"], self.limits,
            s["friction_compensation"], s["friction_deadband"],
            s["control_period"], s["ki"], s["integral_limit"],
            None if self.law is None else self.law.integral)
        self.cartesian = cartesian
        was = before is not None and before["mode"] == CARTESIAN_IMPEDANCE
        if s["mode"] == CARTESIAN_IMPEDANCE:
            if not was or before["cartesian"]["ee_link"] != s["cartesian"]["ee_link"]:
                self.task = None  # (re)entered at the next tick
            if self.goal is not None:
                self._finish(self.goal, "aborted", goals.INVALID_GOAL,
                             "the controller switched to cartesian_impedance")
        elif was:
            self.trajectory = None  # the next tick holds the position it measures

    # ------------------------------------------------------------------ goals

    def offer(self, request):
        """A new goal (goals.Request) -> its Goal, refused (done), active or pending.

        Checked at once against the chain, the tolerances and the limits (trajectory_check);
        on refusal the running goal goes on. An accepted goal preempts the running one, which
        ends aborted with INVALID_GOAL, as JTC ends a preempted goal. Before the first joint
        state a goal is kept (a newer one replaces it) and checked when that state comes."""
        goal = Goal(request)
        if self.state is None:
            if self.pending is not None:
                self._finish(self.pending, "aborted", goals.INVALID_GOAL,
                             f"preempted by a newer goal from the {request.source}")
            self.pending = goal
            self._say("info", "trajectory kept until the first joint state arrives")
            return goal
        self._start(goal)
        return goal

    def _start(self, goal):
        t, q, qd = self.state
        s, request = self.settings, goal.request
        if s["mode"] == CARTESIAN_IMPEDANCE:
            goal._end("aborted", goals.INVALID_GOAL, "the controller is in cartesian_impedance "
                                                     "mode: trajectories need a joint mode")
            self._say("error", f"trajectory refused: {goal.reason}", throttle=True)
            return
        desired = self.trajectory.sample(t) if self.trajectory is not None else None
        zero = np.zeros(self.chain.n)
        if desired is None:
            desired = (q, zero, zero)
        start = desired if s["interpolate_from_desired_state"] else (q, qd, zero)
        try:
            trajectory = goals.trajectory_from_request(
                request, self.chain, t, start, desired[0], s["allow_partial_joints_goal"],
                s["allow_nonzero_velocity_at_trajectory_end"])
            tolerances = goals.goal_tolerances(s["tolerances"], request, self.chain.joint_names)
            check = s["trajectory_check"]
            problem = (None if check == "off" else
                       trajectory_violation(self.model, trajectory, self.limits))
            if problem and check == "reject":
                raise goals.GoalRefused(goals.INVALID_GOAL, problem)
        except goals.GoalRefused as refusal:
            goal._end("aborted", refusal.code, refusal.reason)
            self._say("error", f"trajectory refused: {refusal.reason} ({refusal.code}); the "
                               "running one goes on")
            return
        if problem:
            self._say("warning", f"trajectory beyond the arm's limits: {problem}")
        if self.goal is not None:
            self._finish(self.goal, "aborted", goals.INVALID_GOAL,
                         f"preempted by a new goal from the {request.source}", quiet=True)
        goal.status, goal.trajectory, goal.tolerances = "active", trajectory, tolerances
        self.goal, self.trajectory = goal, trajectory
        self.started = (trajectory.start_time, trajectory.end_time)
        self._say("info", f"new {trajectory.kind} trajectory from the {request.source}: "
                          f"t = {trajectory.start_time:.3f} s to {trajectory.end_time:.3f} s")

    def cancel(self, goal):
        """End `goal` (pending or active) as canceled; an active one leaves the arm holding
        where it is. Returns whether there was anything to cancel."""
        if goal is self.pending:
            self.pending = None
        elif goal is self.goal:
            self._hold_here()
        else:
            return False
        self._finish(goal, "canceled", goals.SUCCESSFUL, "canceled")
        return True

    def _finish(self, goal, outcome, code, reason, quiet=False):
        """End a goal; say so, unless `quiet` and it is a streamed set-point (one point at
        time 0 on the topic, as teleoperation sends them: saying each would fill the log)."""
        goal._end(outcome, code, reason)
        if goal is self.goal:
            self.goal = None
        points = goal.request.points
        streamed = goal.request.source == "topic" and len(points) == 1 and points[0][0] == 0.0
        if not (quiet and streamed):
            level = "info" if outcome != "aborted" else "warning"
            self._say(level, f"goal from the {goal.request.source} {outcome} ({code}): {reason}")

    def _hold_here(self):
        """Hold the measured position from the last state on (JTC's set_hold_position)."""
        t, q, _ = self.state
        self.trajectory = Trajectory.hold(t, q)

    def _monitor(self, t, e, ed):
        """The active goal's tolerances at state time t; True when it aborted (the arm holds)."""
        goal = self.goal
        tolerances, end = goal.tolerances, goal.trajectory.end_time
        if t < end:
            hit = goals.first_violation(tolerances.path, e, ed)
            if hit < 0:
                return False
            code = goals.PATH_TOLERANCE_VIOLATED
            reason = (goals.describe_violation(hit, tolerances.path, e, ed,
                                               self.chain.joint_names, "path")
                      + f" at t = {t - goal.trajectory.start_time:.3f} s from the start")
        else:
            hit = goals.first_violation(tolerances.goal, e, ed)
            if hit < 0:
                reason = f"goal reached {t - end:.3f} s after the trajectory's end"
                far = int(np.argmax(np.abs(e)))
                if not tolerances.goal[:, goals.POSITION].any() and abs(e[far]) > UNCHECKED_GAP:
                    # as JTC: with no goal tolerance the end of the time is the success; say so
                    reason += (f", with no goal tolerance set (constraints.<joint>.goal 0): "
                               f"'{self.chain.joint_names[far]}' is still {abs(e[far]):.3g} from "
                               "the last point")
                self._finish(goal, "succeeded", goals.SUCCESSFUL, reason, quiet=True)
                return False
            if tolerances.goal_time == 0 or t - end <= tolerances.goal_time:
                return False
            code = goals.GOAL_TOLERANCE_VIOLATED
            reason = (goals.describe_violation(hit, tolerances.goal, e, ed,
                                               self.chain.joint_names, "goal")
                      + f" {t - end:.3f} s after the end (goal_time {tolerances.goal_time:g} s)")
        self._hold_here()
        self._finish(goal, "aborted", code, reason + "; holding where the arm is")
        return True

    # ------------------------------------------------------------------ cartesian targets

    def _enter_task(self, q):
        """Take the current pose as the target and the posture (or nullspace_posture) as q_n.
        Not when the stiffness is beyond what the control period holds at this pose (settings
        given before any state, so not refused then): the arm holds its joints where they are
        instead, `refused` says why, until new settings come. Returns whether it entered."""
        s = self.settings
        problem = _too_stiff(self.cartesian, q, s["control_period"])
        if problem:
            if self.refused is None:
                self.refused = f"cartesian_impedance not entered, the joints hold: {problem}"
                self._say("error", self.refused)
            return False
        poses = [kinematics.frame_pose(self.model, q, link) for link in s["cartesian"]["ee_link"]]
        posture = s["nullspace_posture"]
        self.task = Task(poses, np.array(q if posture is None else posture, dtype=float))
        return True

    def _task(self, what):
        """The running Task, entered now if the mode just switched; ValueError otherwise."""
        mode = self.settings["mode"]
        if mode != CARTESIAN_IMPEDANCE:
            raise ValueError(f"{what} ignored: the controller is in {mode} mode (set mode to "
                             f"{CARTESIAN_IMPEDANCE})")
        if self.task is None:
            if self.state is None:
                raise ValueError(f"{what} ignored: no joint state yet")
            if not self._enter_task(self.state[1]):
                raise ValueError(f"{what} ignored: {self.refused}")
        return self.task

    def set_target_pose(self, R, p, frame=0):
        """The target pose of ee_link number `frame`: R (3, 3), p (3,) m in the base frame."""
        self._task("target_pose").targets[frame] = (np.array(R, dtype=float),
                                                   np.array(p, dtype=float))

    def set_target_wrench(self, wrench, frame=0):
        """The feed-forward wrench (6,) [force N; moment N m], base axes, on ee_link number
        `frame`."""
        task = self._task("target_wrench")
        w = task.wrench.copy()
        w[6 * frame:6 * frame + 6] = wrench
        task.wrench = w

    def set_target_joint(self, index, positions):
        """Posture positions (rad or m) for the chain joints `index`; the others keep theirs."""
        task = self._task("target_joint")
        posture = task.posture.copy()
        posture[np.asarray(index)] = positions
        task.posture = posture

    # ------------------------------------------------------------------ ticks

    def update(self, now, state=None):
        """A good joint state (stamp, q, qd) at `now`, or None for a watchdog tick. Returns the
        Command to send: on a state when rate is 0, on a watchdog tick while holding."""
        if state is None:
            return self._watchdog(now)
        self.last_seen = now
        stamp, q, _ = state
        if self.stale:  # states are back: hold where the arm is now, no torque jump
            self.stale = False
            self.trajectory, self.task = Trajectory.hold(stamp, q), None
            self.command_time = stamp - self.watchdog_period  # the rate limit counts from here
            self._say("warning", "joint states are back: holding the current position "
                                 "(the running trajectory was dropped)")
        self.state = state
        if self.pending is not None:
            goal, self.pending = self.pending, None
            self._start(goal)
        return self.tick() if self.settings["rate"] == 0 else None

    def tick(self):
        """One control step on the last good state (the rate timer's tick, or update's)."""
        if self.state is None or self.stale:
            return None
        t, q, qd = self.state
        start = time.perf_counter()
        # the integral's (and the target filter's) step: the time since the last tick, at most
        # state_timeout (a gap)
        dt = (0.0 if self.tick_time is None
              else min(max(t - self.tick_time, 0.0), self.state_timeout))
        self.tick_time = t
        task = None
        if self.settings["mode"] == CARTESIAN_IMPEDANCE and (self.task is not None or
                                                             self._enter_task(q)):
            R_d, p_d = self.task.step(dt, self.settings["target_filter"])
            tau, task = self.cartesian(q, qd, R_d, p_d, self.task.wrench, self.task.posture)
            desired = errors = None
            self.task.error = task
        else:
            if self.trajectory is None:  # before any trajectory: hold the first measured position
                self.trajectory = Trajectory.hold(t, q)
            desired = self.trajectory.sample(t)
            tau, e, ed = self.law(q, qd, *desired, dt)
            if self.goal is not None and self._monitor(t, e, ed):  # aborted: the hold's command
                desired = self.trajectory.sample(t)
                tau, e, ed = self.law(q, qd, *desired, 0.0)
            errors = (e, ed)
        self.compute_s.append(time.perf_counter() - start)
        self.ticks += 1
        self.saturated += at_limit(tau, self.limits)
        if t >= self._next_report:
            self._next_report = t + REPORT_EVERY
            self._say("info", self.compute_report())
        return self._send(Command(t, tau, desired, errors, task))

    def _watchdog(self, now):
        """No good state for state_timeout: stop feedback; hold gravity compensation or stop."""
        if self.last_seen is None:
            return None
        silent = now - self.last_seen
        if silent <= self.state_timeout:
            return None
        hold = self.settings["on_state_timeout"] == "hold"
        if not self.stale:
            self.stale = True
            self.stale_events += 1
            self.stale_silence = silent
            self._say("warning", f"no good joint state for {silent:.3f} s (state_timeout "
                      f"{self.state_timeout} s): " + ("holding gravity compensation at the "
                      "last good position" if hold else "effort commands stopped"))
            if self.goal is not None:  # as JTC ends a goal when it is deactivated
                self._finish(self.goal, "aborted", goals.INVALID_GOAL,
                             f"no good joint state for {silent:.3f} s: the arm holds")
        if not hold:
            return None
        q, zero = self.state[1], np.zeros(self.chain.n)
        tau = self.hold_law(q, zero, q, zero, zero)[0]
        last = self.state[0] if self.command_time is None else self.command_time
        return self._send(Command(last + self.watchdog_period, tau, None, None))

    def _send(self, command):
        """Rate-limit a command; never a non-finite one (None then)."""
        tau = command.tau
        if self.command is not None:
            tau = limit_rate(tau, self.command, self.settings["max_effort_rate"],
                             command.t - self.command_time)
        if not all_finite(tau):
            self._say("error", "non-finite effort computed; command not sent", throttle=True)
            return None
        self.command, self.command_time = tau, command.t
        self.last = command._replace(tau=tau)
        return self.last

    def feedback(self, goal):
        """What the action's feedback reports on an active goal: (t, desired (q, qd, qdd),
        actual (q, qd), errors (e, ed), index of the waypoint it heads for), or None before
        a tick of it."""
        last = self.last
        if goal is not self.goal or last is None or last.desired is None:
            return None
        _, q, qd = self.state
        return (last.t, last.desired, (q, qd), last.errors,
                goals.next_point(goal.request, goal.trajectory, last.t))

    def compute_times(self):
        """(p50, p99, max) us of the law's compute time over the last 5000 ticks (zeros: none)."""
        us = np.array(self.compute_s) * 1e6 if self.compute_s else np.zeros(1)
        return tuple(round(float(x), 1) for x in np.percentile(us, (50, 99, 100)))

    def diagnostics(self):
        """(level "OK" | "WARN", message, {key: value}): what /diagnostics reports."""
        p50, p99, worst = self.compute_times()
        mode = ("waiting for joint states" if self.state is None else
                "holding: no good joint state" if self.stale else
                "holding: " + self.refused if self.refused else "tracking")
        values = {
            "mode": self.settings["mode"], "ticks": self.ticks, "compute_p50_us": p50,
            "compute_p99_us": p99, "compute_max_us": worst,
            "compute_window_ticks": len(self.compute_s),
            "saturated_ticks": self.saturated, "stale_state_events": self.stale_events,
            "payload_kg": round(float(self.model.mass.sum() - self.chain.mass.sum()), 9)}
        for key, value in (("trajectory_start_s", self.started and self.started[0]),
                           ("trajectory_end_s", self.started and self.started[1]),
                           ("stale_silence_s", self.stale_silence),
                           ("payload_since_s", self.payload_since)):
            if value is not None:
                values[key] = round(float(value), 6)
        if self.task is not None and self.state is not None:
            q = self.state[1]
            links = self.settings["cartesian"]["ee_link"]
            e = self.task.error.reshape(len(links), 6)
            J = self.cartesian.jacobian(q)
            # the worst frame's errors; with several ee_links each frame's, by name
            values.update({
                "pose_error_m": float(np.linalg.norm(e[:, :3], axis=1).max()),
                "pose_error_rad": float(np.linalg.norm(e[:, 3:], axis=1).max()),
                "nullspace_error_rad": float(np.linalg.norm(self.task.posture - q)),
                "manipulability": kinematics.manipulability(J)})
            if len(links) > 1:
                for link, ek in zip(links, e):
                    values[f"{link}.pose_error_m"] = float(np.linalg.norm(ek[:3]))
        return ("WARN" if self.stale or self.refused else "OK", mode, values)

    def compute_report(self):
        """The compute time, for the log."""
        if not self.compute_s:
            return "compute time: no ticks yet"
        p50, p99, worst = self.compute_times()
        return (f"compute time over {len(self.compute_s)} ticks: p50 {p50:.1f} us, "
                f"p99 {p99:.1f} us, max {worst:.1f} us")
