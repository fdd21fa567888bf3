"""The computed-torque controller without middleware: everything computed_torque_controller does
between reading a message and writing one, driven by plain calls with explicit time.

    core = ControllerCore(chain, settings)        # settings: controller_settings(...)
    command = core.update(now, (stamp, q, qd))    # a joint state arrived (chain order)
    command = core.update(now)                    # a watchdog tick: no state
    command = core.tick()                         # a rate timer tick (rate > 0)
    core.set_goal(build)                          # a trajectory: build(t, current) -> Trajectory

`now` is the watchdog's clock (s): simulated time under use_sim_time, steady time otherwise;
`stamp` is the state's own time, the time of the trajectory and of the command. A call returns
a `Command` to publish, or None. What a person should read goes to `events` as (level, text,
throttle) for the node to log. Pure numpy: tests drive it with synthetic time, no ROS needed.
"""

import time
from collections import deque
from typing import NamedTuple

import numpy as np

from .control import (ControlLaw, all_finite, at_limit, critical_damping, effort_limits,
                      gain_vector, limit_rate, trajectory_violation)
from .model import to_chain_order
from .parameters import payload_model, unset
from .trajectory import Trajectory

REPORT_EVERY = 5.0  # s of state time between two compute-time reports


class Command(NamedTuple):
    t: float  # s, state time
    tau: np.ndarray  # (n,) chain order
    desired: tuple  # (q_d, qd_d, qdd_d), or None while holding after a state timeout
    errors: tuple  # (e, ed), or None while holding


def controller_settings(chain, value, order=None):
    """Settings for ControllerCore from the controller's parameters, read by value(name) (see
    dyn_control.parameters.CONTROLLER, whose checks the node has run); per-joint values come
    in `joints` order (order[i]: the chain index of the i-th) and go out in chain order.
    ValueError names the parameter and the value."""
    n = chain.n
    order = np.arange(n) if order is None else order

    def per_joint(name):
        return to_chain_order(gain_vector(value(name), n, name), order)

    kp = per_joint("kp")
    override = value("effort_limits")
    return dict(
        mode=value("mode"), kp=kp,
        kd=critical_damping(kp) if value("kd") is None else per_joint("kd"),
        ki=per_joint("ki"), integral_limit=per_joint("integral_limit"),
        limits=effort_limits(chain, () if unset(override) else per_joint("effort_limits")),
        friction_compensation=bool(value("friction_compensation")),
        friction_deadband=value("friction_deadband"), control_period=value("control_period"),
        state_timeout=value("state_timeout"), on_state_timeout=value("on_state_timeout"),
        max_effort_rate=value("max_effort_rate"), trajectory_check=value("trajectory_check"),
        rate=value("rate"),
        model=payload_model(chain, value))


class ControllerCore:
    """Trajectory, pending goal, stale-state hold, rate limit and the law, for one chain."""

    def __init__(self, chain, settings):
        self.chain = chain  # from the URDF; settings["model"] adds the payload
        self.law = None
        self.trajectory = None
        self.pending = None  # a goal that came before the first state
        self.state = None  # (stamp, q, qd) of the last good joint state
        self.tick_time = None  # stamp of the last tick: the integral's step
        self.command = None  # last command sent, chain order, and its time
        self.command_time = None
        self.last_seen = None  # `now` of the last good state
        self.stale = False
        self.events = deque()  # appended and drained from different threads
        self.compute_s = deque(maxlen=5000)
        self.ticks = self.saturated = self.stale_events = 0
        self._next_report = -np.inf
        self.configure(settings)

    def configure(self, settings):
        """Take validated settings (controller_settings); the rebuilt law keeps the error
        integral, the estimate of the unmodelled load."""
        self.settings = settings
        self.model, self.limits = settings["model"], settings["limits"]
        self.state_timeout = settings["state_timeout"]
        # the watchdog looks twice per timeout, at least every 10 ms
        self.watchdog_period = min(0.01, self.state_timeout / 2)
        self.hold_law = ControlLaw.gravity(self.model, self.limits)
        self.law = ControlLaw(
            self.model, settings["mode"], settings["kp"], settings["kd"], self.limits,
            settings["friction_compensation"], settings["friction_deadband"],
            settings["control_period"], settings["ki"], settings["integral_limit"],
            None if self.law is None else self.law.integral)

    def _say(self, level, text, throttle=False):
        self.events.append((level, text, throttle))

    def drain(self):
        """The events since the last drain, oldest first."""
        return [self.events.popleft() for _ in range(len(self.events))]

    # ------------------------------------------------------------------ goals

    def set_goal(self, build):
        """A new goal: build(t, current) -> Trajectory from the desired state `current`
        (q, qd, qdd) at state time t, or ValueError. Kept until the first state; checked
        against the limits (trajectory_check); on refusal the running trajectory continues."""
        if self.state is None:
            self.pending = build
            self._say("info", "trajectory kept until the first joint state arrives")
            return
        t, q, _ = self.state
        zero = np.zeros(self.chain.n)
        current = self.trajectory.sample(t) if self.trajectory is not None else (q, zero, zero)
        try:
            trajectory = build(t, current)
        except ValueError as err:
            self._say("error", f"trajectory refused: {err}")
            return
        check = self.settings["trajectory_check"]
        problem = (None if check == "off" else
                   trajectory_violation(self.model, trajectory, self.limits))
        if problem and check == "reject":
            self._say("error", f"trajectory refused: {problem}; the running one goes on")
            return
        if problem:
            self._say("warning", f"trajectory beyond the arm's limits: {problem}")
        self.trajectory = trajectory
        self._say("info", f"new {trajectory.kind} trajectory, {trajectory.end_time - t:.3f} s")

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
            self.trajectory = Trajectory.hold(stamp, q)
            self.command_time = stamp - self.watchdog_period  # the rate limit counts from here
            self._say("warning", "joint states are back: holding the current position "
                                 "(the running trajectory was dropped)")
        self.state = state
        if self.pending is not None:
            build, self.pending = self.pending, None
            self.set_goal(build)
        return self.tick() if self.settings["rate"] == 0 else None

    def tick(self):
        """One control step on the last good state (the rate timer's tick, or update's)."""
        if self.state is None or self.stale:
            return None
        t, q, qd = self.state
        start = time.perf_counter()
        if self.trajectory is None:  # before any trajectory: hold the first measured position
            self.trajectory = Trajectory.hold(t, q)
        desired = self.trajectory.sample(t)
        # the integral's step: the time since the last tick, at most state_timeout (a gap)
        dt = (0.0 if self.tick_time is None
              else min(max(t - self.tick_time, 0.0), self.state_timeout))
        self.tick_time = t
        tau, e, ed = self.law(q, qd, *desired, dt)
        self.compute_s.append(time.perf_counter() - start)
        self.ticks += 1
        self.saturated += at_limit(tau, self.limits)
        if t >= self._next_report:
            self._next_report = t + REPORT_EVERY
            self._say("info", self.compute_report())
        return self._send(Command(t, tau, desired, (e, ed)))

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
            self._say("warning", f"no good joint state for {silent:.3f} s (state_timeout "
                      f"{self.state_timeout} s): " + ("holding gravity compensation at the "
                      "last good position" if hold else "effort commands stopped"))
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
        return command._replace(tau=tau)

    def compute_times(self):
        """(p50, p99, max) us of the law's compute time over the last 5000 ticks (zeros: none)."""
        us = np.array(self.compute_s) * 1e6 if self.compute_s else np.zeros(1)
        return tuple(round(float(x), 1) for x in np.percentile(us, (50, 99, 100)))

    def diagnostics(self):
        """(level "OK" | "WARN", message, {key: value}): what /diagnostics reports."""
        p50, p99, worst = self.compute_times()
        mode = ("waiting for joint states" if self.state is None else
                "holding: no good joint state" if self.stale else "tracking")
        return ("WARN" if self.stale else "OK", mode, {
            "mode": self.settings["mode"], "ticks": self.ticks, "compute_p50_us": p50,
            "compute_p99_us": p99, "compute_max_us": worst,
            "compute_window_ticks": len(self.compute_s),
            "saturated_ticks": self.saturated, "stale_state_events": self.stale_events})

    def compute_report(self):
        """The compute time, for the log."""
        if not self.compute_s:
            return "compute time: no ticks yet"
        p50, p99, worst = self.compute_times()
        return (f"compute time over {len(self.compute_s)} ticks: p50 {p50:.1f} us, "
                f"p99 {p99:.1f} us, max {worst:.1f} us")
