"""The computed-torque controller without middleware: everything computed_torque_controller does
between reading a message and writing one, driven by plain calls with explicit time.

    core = ControllerCore(settings)               # settings: controller_settings(chain, ...)
    command = core.update(now, (stamp, q, qd))    # a joint state arrived (chain order);
                                                  # effort=: its measured torques, if any;
                                                  # send=: called with the command first
    command = core.update(now)                    # a watchdog tick: no state
    command = core.tick()                         # a rate timer tick (rate > 0)
    goal = core.offer(request)                    # a trajectory goal (goals.Request)
    core.cancel(goal)                             # hold where the arm is; the goal ends
    core.reset_collision()                        # clear a latched collision: (done, message)

`now` is the watchdog's clock (s): simulated time under use_sim_time, steady time otherwise;
`stamp` is the state's own time, the time of the trajectory and of the command. A call returns
a `Command` to publish, or None. What a person should read goes to `events` as (level, text,
throttle) for the node to log; what a program needs to know goes to `diagnostics()`, never only
to a log line. Pure numpy: tests drive it with synthetic time, no ROS needed.

A tick is a pipeline of stages (dyn_control.controller): check (watchdog) -> reference (goals and
their trajectory, or the Cartesian target) -> law -> limits (rate, finite) -> command, then
observe (external torques, contact and collision). The observer needs the torque applied
before this state, not this state's command, so it runs once the command is out (`send`):
it adds nothing to the command's latency, and a collision it finds is reacted to from the next
tick (1 ms at 1 kHz, against the filter's tens of ms to cross a level). The core composes the
stages and keeps the state machine that binds them: waiting for a state, tracking, holding (a
goal ended, or cartesian_impedance refused), stale, collided (the reaction: hold, or comply's
law).
"""

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from dyn_control import kinematics
from dyn_control.controller import barriers
from dyn_control.controller.cartesian import CartesianLaw
from dyn_control.controller.contact import ContactMonitor
from dyn_control.controller.goals import PATH_TOLERANCE_VIOLATED, Request
from dyn_control.controller.guard import Guard, walls_outside
from dyn_control.controller.laws import ControlLaw, TeachLaw, saturate
from dyn_control.controller.limits import OutputLimits, finish
from dyn_control.controller.statistics import Statistics, report
from dyn_control.controller.target import CartesianTarget, too_stiff
from dyn_control.controller.ticks import cartesian_tick, joint_tick, teach_tick
from dyn_control.controller.tracking import GoalTracker
from dyn_control.controller.trajectory import Trajectory
from dyn_control.controller.watchdog import Watchdog
from dyn_control.cores import Events
from dyn_control.dynamics import gravity_torques
from dyn_control.parameters import CARTESIAN_IMPEDANCE, MODES, TEACH
from dyn_control.poses import default_initial_positions, gravity_overloads


class Command(NamedTuple):
    t: float  # s, state time
    tau: np.ndarray  # (n,) chain order
    desired: tuple  # (q_d, qd_d, qdd_d), or None while holding or in cartesian_impedance
    errors: tuple  # (e, ed), or None likewise
    task: np.ndarray = None  # cartesian_impedance: the pose error (6,), m and rad, base axes


def same_inertias(a, b):
    """Whether two models of one chain carry the same bodies (a payload changes them)."""
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("mass", "com", "inertia"))


class ControllerCore(Events):
    """The stages of a tick for one model (settings.model: the URDF's chain with its payload)."""

    def __init__(self, settings):
        super().__init__()
        self.watchdog, self.goals = Watchdog(self._say), GoalTracker(self._say)
        self.target, self.output = CartesianTarget(self._say), OutputLimits(self._say)
        self.contact = ContactMonitor(self._say)
        self.guard = Guard(self._say)
        self.stats = Statistics()
        self.settings = self.law = None
        self.state = None  # (stamp, q, qd) of the last good joint state
        self.tick_time = None  # stamp of the last tick: the integral's step
        self.last = None  # the last Command sent (feedback and controller state read it)
        self.payload_since = None  # state time after which the newest payload took effect
        self.overloads = []  # gravity_overloads at the first state
        self.ramp_from = None  # state time the soft start began (start-up, a switch of mode)
        self.configure(settings)

    def configure(self, settings):
        """Take validated settings (controller_settings). The rebuilt law keeps the error
        integral, the observer its estimate; new default tolerances apply from the next goal
        (as JTC). Entering cartesian_impedance (or a new ee_link) targets the current pose and
        posture; leaving it, the joint law holds the measured position. ValueError, and no
        change, when the stiffness is beyond what the control period holds at the pose.
        """
        s, before = settings, self.settings
        joint = s.joint
        cartesian = CartesianLaw(s.model, **vars(s.cartesian), limits=s.limits,
                                 friction_compensation=joint.friction_compensation,
                                 friction_deadband=joint.friction_deadband, period=joint.period)
        cartesian_mode = s.mode == CARTESIAN_IMPEDANCE
        if self.state is not None:
            problem = ((cartesian_mode and too_stiff(cartesian, self.state[1], joint.period))
                       or walls_outside(s.model, s.guard, s.cartesian.ee_link, self.state[1]))
            if problem:
                raise ValueError(problem)
        self.settings, self.cartesian = settings, cartesian
        self.target.configure(settings, cartesian)  # the next tick tries the mode again
        if before is not None and not same_inertias(before.model, s.model):
            self.payload_since = None if self.state is None else self.state[0]
        self.model, self.limits = s.model, s.limits
        self.watchdog.configure(s.state_timeout)
        if self.state is None:
            self.watchdog.awaited = ("the first joint state naming "
                                     f"{', '.join(self.model.joint_names)}")
        self.hold_law = ControlLaw.gravity(self.model, self.limits)
        self.law = ControlLaw(self.model, **vars(joint), limits=self.limits,
                              integral=None if self.law is None else self.law.integral)
        self.teach = TeachLaw(self.model, s.teach_damping, self.limits,
                              joint.friction_compensation)
        self.goals.configure(self.model, self.limits, s.goals, s.mode)
        contact = s.contact
        if s.mode == TEACH and contact is not None:  # a person's push is the input: report it
            contact = replace(contact, reaction="none")
        self.contact.configure(self.model, contact, s.cartesian.ee_link, self.limits, joint)
        self.guard.configure(self.model, s.guard, self.limits, joint.period, s.cartesian.ee_link,
                             s.max_effort_rate)
        if self.state is not None:  # a hand inside the new walls' margin gets it back
            self.guard.enter(*self.state[:2])
        was = before is not None and before.mode == CARTESIAN_IMPEDANCE
        if cartesian_mode:
            if not was or before.cartesian.ee_link != s.cartesian.ee_link:
                self.target.task = None  # (re)entered at the next tick
        if s.mode not in MODES:
            self.goals.abort(f"the controller switched to {s.mode}")
        elif before is not None and before.mode not in MODES:
            self.goals.trajectory = None  # the next tick holds the position it measures
        if before is not None and before.mode != s.mode and self.state is not None:
            self.ramp_from = self.state[0]  # the new law's gains ramp in

    # ------------------------------------------------------------------ goals and targets

    def offer(self, request):
        """A new goal (goals.Request) -> its Goal, refused (done), active or pending; refused
        with the collision's reason while one is latched and reacted to.
        """
        refusal = self.contact.refusal or (self.guard.fault and
                                           f"{self.guard.fault}: call ~/reset_collision first")
        return self.goals.offer(request, self.state, refusal)

    def reset_collision(self):
        """Clear a latched collision -> (done, message), refused while in contact; then hold
        where the arm is (cartesian_impedance: its current pose).
        """
        done, message = self.contact.reset()
        if done and self.guard.fault:
            message = f"cleared: {self.guard.fault}" + (
                "" if message == "no collision latched" else f"; {message}")
            self.guard.clear()
        if done and self.state is not None:
            self.goals.hold_here(self.state)
            self.target.task = None
        self._say("info" if done else "warning", f"reset_collision {message}")
        return done, message

    def cancel(self, goal):
        """End `goal` (pending or active) as canceled; whether there was anything to cancel."""
        return self.goals.cancel(goal, self.state)

    # the cartesian_impedance targets (controller.target.CartesianTarget says what each is)
    def set_target_pose(self, R, p, frame=0):
        self.target.set_pose(self.state, R, self.guard.clamp(np.asarray(p, float), frame), frame)

    def set_target_wrench(self, wrench, frame=0):
        self.target.set_wrench(self.state, wrench, frame)

    def set_target_joint(self, index, positions):
        self.target.set_joint(self.state, index, positions)

    # ------------------------------------------------------------------ ticks

    def update(self, now, state=None, effort=None, send=None):
        """A good joint state (stamp, q, qd) at `now` (effort: its measured torques, or None),
        or None for a watchdog tick. -> the Command to send: on a state when rate is 0. send:
        called with it as soon as it is computed, before the observe stage.
        """
        if state is None:
            return self._watchdog(now)
        if self.watchdog.seen(now):  # states are back: hold where the arm is now, no jump
            self.goals.hold_here(state)
            self.target.task = None
            self.output.time = state[0] - self.watchdog.period  # the rate limit counts from here
            self.contact.restart()
        applied = self.output.command  # what the arm got since the last state (None: none)
        if self.state is None:
            self._start(state, effort)
        self.state = state
        self.goals.start_pending(state)
        command = self.tick() if self.settings.rate == 0 else None
        if command is not None and send is not None:
            send(command)
        self.stats.observing()
        if self.contact.observe(state, applied, effort):  # a collision: the next tick reacts
            self._react(self.contact.collision)
        self.stats.observed()
        return command

    def _start(self, state, effort):
        """The first state: the soft start begins. With the effort rate-limited, the limit
        counts from what holds the arm now: the measured effort where a controller before this
        one applies it, else g(q), the model's gravity with its payload, within the effort
        limits. A braked arm reads zero effort, and its brakes let go as the drives take the
        first command: counted from zero, the rate limit let a heavy arm fall for tens of ms
        (1.4 rad on a 320 N m shoulder) before the command reached gravity. The rate limit
        shapes what the law adds on top (libfranka's limiter likewise sees the command without
        gravity). A joint inside its margin gets its margin back gently.
        """
        t, q, _ = state
        self._check_holding(q)
        self.ramp_from = t
        if np.isfinite(self.settings.max_effort_rate).any() and self.output.command is None:
            n = self.model.n
            held = effort is not None and len(effort) == n and np.isfinite(effort).all()
            if held and any(effort):
                self.output.command = np.array(effort, float)
            else:
                self.output.command = saturate(gravity_torques(self.model, q), self.limits)
            self.output.time = t - self.settings.joint.period  # the first step: one period's
        out = self.guard.start(t, q)
        if out is not None:  # the hold goes out of the margins as the barriers come back
            zero = np.zeros(self.model.n)
            self.goals.trajectory = Trajectory(t, (q, zero, zero), [barriers.RECOVERY_TIME],
                                               out[None], zero[None], zero[None])

    def _check_holding(self, q):
        """At the first state: whether the effort limits can hold the arm there against
        gravity. Where they cannot, the arm sags into its stops from the first command, and
        the stop's torque reads as contact: say the cause first.
        """
        self.overloads = gravity_overloads(self.model, q, self.limits)
        for line in self.overloads:
            self._say("warning", f"the start pose cannot be held: {line}")

    def _react(self, reason):
        # the goal ends PATH_TOLERANCE_VIOLATED, JTC's closest code: the path was not followed
        if self.overloads:
            reason += f" (the arm could not be held at its start: {self.overloads[0]})"
        reaction = self.settings.contact.reaction
        self._say("error", f"{reason}; reaction: {reaction}")
        if reaction != "none":
            self.goals.stop(self._holdable(self.state), PATH_TOLERANCE_VIOLATED,
                            f"{reason}; reaction: {reaction}")

    def _holdable(self, state):
        """state with its position moved out of the joints' margins (Guard.outside)."""
        t, q, qd = state
        return t, self.guard.outside(q), qd

    def tick(self):
        """One control step on the last good state (the rate timer's tick, or update's)."""
        if self.state is None or self.watchdog.stale:
            return None
        t, q, qd = self.state
        self.stats.timing()
        # the integral's (and the target filter's) step: the time since the last tick, at most
        # state_timeout (a gap)
        dt = (0.0 if self.tick_time is None
              else min(max(t - self.tick_time, 0.0), self.settings.state_timeout))
        self.tick_time = t
        mode, fault = self.settings.mode, self.guard.fault
        reacting = self.contact.reacting
        target = (self.target.reference(q, dt)
                  if mode == CARTESIAN_IMPEDANCE and not (reacting or fault) else None)
        # the limits stage's arguments (controller.limits): it runs in the law's compiled call
        self.guard.before(t)
        walls = mode in (CARTESIAN_IMPEDANCE, TEACH) and not fault
        stage = self.guard.stage
        limits = (stage, self._soft_start(t), walls, *self.output.since(t))
        desired = errors = None
        if fault:  # a velocity fault: hold where the arm was (controller.tracking's hold)
            desired = self.goals.reference(t, q)
            e, ed, found = joint_tick(self.law, q, qd, desired, 0.0, limits)
            errors = (e, ed)
        elif reacting and self.settings.contact.reaction == "comply":
            found = finish(*self.guard.data.args, *stage.args, *limits[1:],
                           self.contact.comply(q, qd, dt), q, qd)
        elif target is not None:
            task = self.target.task
            task.error, found = cartesian_tick(self.cartesian, q, qd, *target, task.wrench,
                                               task.posture, limits)
        elif mode == TEACH:
            found = teach_tick(self.teach, q, qd, limits)
        else:
            desired = self.goals.reference(t, q)
            e, ed, found = joint_tick(self.law, q, qd, desired, dt, limits)
            if self.goals.monitor(self.state, e, ed):  # aborted: the hold's command
                desired = self.goals.reference(t, q)
                e, ed, found = joint_tick(self.law, q, qd, desired, 0.0, limits)
            errors = (e, ed)
        tau, finite, active, over, saturated = found
        self.guard.after(active, over, qd)
        if self.guard.fault and not fault:
            self._on_fault(self.guard.fault)
        self.stats.tick(saturated, t, self._say)
        if self.output.take(tau, finite, t) is None:
            return None
        return self._out(Command(t, tau, desired, errors, None if target is None else task.error))

    def _soft_start(self, t):
        """The share of the law's gains in the command at state time t: they ramp in over
        soft_start s since ramp_from, on top of gravity compensation g(q) (limits.finish).
        """
        if self.ramp_from is None:
            return 1.0
        share = (t - self.ramp_from) / self.settings.soft_start if self.settings.soft_start else 1
        if share >= 1.0:
            self.ramp_from = None
        return float(share)

    def _on_fault(self, reason):
        """A velocity fault: hold where the arm is, as on a collision; the goal ends."""
        self._say("error", f"{reason}; the arm holds until ~/reset_collision")
        self.goals.stop(self._holdable(self.state), PATH_TOLERANCE_VIOLATED,
                        f"{reason}; the arm holds")
        self.target.task = None

    def _watchdog(self, now):
        """No good state for state_timeout: stop feedback; hold gravity compensation or stop."""
        hold = self.settings.on_state_timeout == "hold"
        silent = self.watchdog.check(now, hold)
        if silent is None:
            return None
        if self.watchdog.began:  # as JTC ends a goal when it is deactivated
            self.goals.abort(f"no good joint state for {silent:.3f} s: the arm holds")
        if not hold:
            return None
        q, zero = self.state[1], np.zeros(self.model.n)
        tau = self.hold_law(q, zero, q, zero, zero)[0]
        last = self.state[0] if self.output.time is None else self.output.time
        return self._send(Command(last + self.watchdog.period, tau, None, None))

    def _send(self, command):
        """The watchdog's hold: rate-limited, never a non-finite command (None then)."""
        tau = self.output.apply(command.tau, command.t, self.settings.max_effort_rate)
        return None if tau is None else self._out(command._replace(tau=tau))

    def _out(self, command):
        """A limited command, sent: without g(q) where the arm adds its own (the stages before
        and the observer keep the whole torque: what the joints get).
        """
        if self.settings.arm_compensates_gravity:
            command = command._replace(tau=command.tau - gravity_torques(self.model,
                                                                         self.state[1]))
        self.last = command
        return command

    # ------------------------------------------------------------------ what it reports

    def feedback(self, goal):
        """The action's feedback on an active goal (GoalTracker.feedback), or None."""
        return self.goals.feedback(goal, self.last, self.state)

    def diagnostics(self):
        """(level "OK" | "WARN", message, {key: value}): what /diagnostics reports."""
        return report(self)

    def compute_report(self):
        """The compute time, for the log."""
        return self.stats.report()

    @property
    def trajectory(self):
        """The trajectory the joint modes follow now (a hold is one too), or None."""
        return self.goals.trajectory

    @property
    def cartesian_task(self):
        """cartesian_impedance's task (its targets, per ee_link), or None in other modes."""
        return self.target.task

    @property
    def observing(self):
        """Whether the external-torque observer runs."""
        return self.contact.observer is not None

    def external_torques(self):
        """(n,) the external joint torques the arm feels, the observer's estimate (observing)."""
        return self.contact.observer.felt

    def contact_wrenches(self, q):
        """(links, 6) the wrench the observer reads at each ee_link at q (observing)."""
        return self.contact.current_wrenches(q)


def warm_up(settings):
    """Compile or load every kernel a controller can run, on throwaway cores: a tick, a goal
    (its checks and tolerances) and a watchdog hold, then ticks in cartesian_impedance (the
    Cartesian law, its stiffness check, the target filter) and teach, and the barriers'
    kernels. Else the first tick would stall 0.3 s, and on a first run a switch of mode at run
    time stalled the loop for the compile (20.7 s measured: the simulator's command timeout
    dropped the arm).
    """
    model = settings.model
    q, zero = default_initial_positions(model), np.zeros(model.n)  # (inside the limits)
    for mode in (settings.joint.mode, CARTESIAN_IMPEDANCE, TEACH):
        warm = ControllerCore(replace(settings, mode=mode, target_filter=0.01))
        warm.update(0.0, (0.0, q, zero))
        warm.offer(Request(tuple(model.joint_names), 0.0, ((1.0, q, (), ()),)))
        warm.update(0.0, (0.5, q, zero))
        warm.update(1.0)
    # comply's command (after a collision) takes the limits stage in a call of its own
    finish(*warm.guard.data.args, *warm.guard.stage.args, 1.0, False, zero, 0.0, zero.copy(), q,
           zero)
    targets = [kinematics.frame_pose(model, q, link) for link in warm.cartesian.ee_links]
    warm.cartesian(q, zero, np.array([R for R, _ in targets]), np.array([p for _, p in targets]),
                   np.zeros(6 * len(targets)), q)  # whatever the stiffness: the law itself
