"""The simulated arm without middleware: what dynamics_simulator does between a command and a
joint state, driven by plain calls with explicit time.

    core = SimulatorCore(chain, settings)          # settings: simulator_settings(...)
    core.on_command(now, tau)                      # an effort command (chain order)
    publish = core.step(now)                       # one dt; True when a state is due
    core.published(now)                            # a state went out: deadline accounting

`now` is the wall clock (s, steady): free running counts command_timeout on it, synchronous
on simulated time; the real-time factor is simulated s per `now` s since the first command. The
simulator node owns the thread, the pacing and the waiting for an answer. What a person should read
goes to `events` as (level, text, throttle).
"""

import threading
from dataclasses import dataclass

import numpy as np

from dyn_control.cores import REPORT_EVERY, Events
from dyn_control.model.chain import Chain, effort_limits
from dyn_control.parameters import payload_model
from dyn_control.poses import default_initial_positions, gravity_overloads
from dyn_control.sim.simulation import Simulation


@dataclass(frozen=True, eq=False)
class SimulatorSettings:
    model: Chain  # the URDF's chain with the simulated payload
    q0: np.ndarray  # the start pose, chain order
    dt: float  # s
    integrator: str
    substeps: int
    limits: np.ndarray  # N m or N, the applied effort's saturation
    publish_every: int  # steps between two published states
    synchronous: bool
    braked: bool  # until the first command
    command_timeout: float  # s
    arm_compensates_gravity: bool
    noise: np.ndarray  # sigma of q, qd and effort, on what is published
    seed: int
    # (topic, chain indices of its joints in its command order) of each command source
    sources: tuple = ()
    # (namespace, chain indices of its joints in its state order) of each robot of a world;
    # () for one robot, whose states are every joint's
    robots: tuple = ()


DEFAULT_SOURCE = "effort_controller/commands"


def command_sources(chain, entries, order):
    """The `command_sources` parameter -> ((topic, chain indices in its order), ...); no entry:
    one source, DEFAULT_SOURCE over `order` (the `joints` order). ValueError, naming the entry
    or the joint, for an entry that is not `TOPIC: JOINT, ...`, an unknown joint, a joint
    claimed twice, or a simulated joint that no source claims.
    """
    sources = claims(chain, entries, "command_sources", "source", "TOPIC")
    return sources or ((DEFAULT_SOURCE, np.asarray(order, dtype=np.int64)),)


def split_entry(entry):
    """'NAME: JOINT, JOINT, ...' -> (NAME, [JOINT, ...]), stripped; empty parts left out."""
    name, _, joints = entry.partition(":")
    return name.strip(), [joint.strip() for joint in joints.split(",") if joint.strip()]


def claims(chain, entries, parameter, what, key):
    """Entries `KEY: JOINT, JOINT, ...` (each a `what`, KEY its topic or namespace) that share
    the simulated joints, each joint claimed once -> ((KEY, chain indices in its order), ...),
    () for none. ValueError, in one line naming `parameter` and the entry or the joint, as
    command_sources says.
    """
    entries = [entry for entry in entries if entry.strip()]
    if not entries:
        return ()
    found, owner = [], {}
    for entry in entries:
        name, joints = split_entry(entry)
        if not name or not joints:
            raise ValueError(f"{parameter}: '{entry}' is not '{key}: JOINT, JOINT, ...'")
        for joint in joints:
            if joint not in chain.joint_names:
                raise ValueError(f"{parameter}: '{name}' claims joint '{joint}', which the "
                                 f"simulated model does not have ({', '.join(chain.joint_names)})")
            if joint in owner:
                raise ValueError(f"{parameter}: joint '{joint}' is claimed by both "
                                 f"'{owner[joint]}' and '{name}'")
            owner[joint] = name
        found.append((name, np.array([chain.joint_names.index(j) for j in joints])))
    free = [joint for joint in chain.joint_names if joint not in owner]
    if free:
        raise ValueError(f"{parameter}: no {what} claims joint '{free[0]}' (every simulated "
                         f"joint needs one)")
    return tuple(found)


def simulator_settings(chain, p, order=None):
    """SimulatorSettings from the simulator's parameters as SIMULATOR.read gives them for the
    chain's joints (per-joint values in chain order; the node has run the table's checks), and
    order: the command order of `joints` (chain indices; default the chain's). ValueError names
    the parameter.
    """
    q0 = p.initial_positions
    if q0 is not None:
        outside = np.flatnonzero((q0 < chain.position_min) | (q0 > chain.position_max))
        if outside.size:
            i = outside[0]
            raise ValueError(
                f"initial_positions: joint '{chain.joint_names[i]}' at {q0[i]:g} is outside its "
                f"limits [{chain.position_min[i]:g}, {chain.position_max[i]:g}]")
    if p.publish_rate * p.dt > 1.0 + 1e-9:
        raise ValueError(f"publish_rate {p.publish_rate:g} Hz is above 1/dt = "
                         f"{1.0 / p.dt:g} Hz: the simulator publishes a state per step at most")
    if p.command_type == "joint_state" and p.synchronous:
        raise ValueError("synchronous must be false with command_type joint_state: "
                         "controller_manager runs on its own clock, with no lockstep")
    if p.command_type == "joint_state" and any(e.strip() for e in p.command_sources):
        raise ValueError("command_sources must be empty with command_type joint_state: "
                         "the topic-based hardware sends every joint's command by name")
    robots = claims(chain, p.robots, "robots", "robot", "NAMESPACE")
    if robots and p.command_type == "joint_state":
        raise ValueError("robots must be empty with command_type joint_state: the "
                         "topic-based hardware's topics are one robot's")
    sources = command_sources(chain, p.command_sources,
                              np.arange(chain.n) if order is None else order)
    if robots and not any(e.strip() for e in p.command_sources):  # each robot's own controller
        sources = tuple((f"{ns.rstrip('/')}/{DEFAULT_SOURCE}", joints) for ns, joints in robots)
    model = payload_model(chain, p)
    limits = effort_limits(chain, p.effort_limits)
    return SimulatorSettings(
        model=model, q0=default_initial_positions(model, limits) if q0 is None else q0,
        dt=p.dt, integrator=p.integrator, substeps=p.substeps, limits=limits,
        publish_every=max(1, int(round(1.0 / (p.publish_rate * p.dt)))),
        synchronous=bool(p.synchronous), braked=bool(p.wait_for_command),
        command_timeout=p.command_timeout, arm_compensates_gravity=bool(
            p.arm_compensates_gravity),
        noise=np.array([p.noise.position, p.noise.velocity, p.noise.effort], dtype=float),
        seed=int(p.noise.seed), sources=sources, robots=robots)


class SimulatorCore(Events):
    """The simulation, the last command of each command source, brakes, the command timeout
    and deadline accounting. With several sources, each writes its own joints; the brakes hold
    the arm until every source has sent a command (a joint whose controller has not started
    would fall); a state counts as answered once every source has answered it; a source silent
    for command_timeout gets its joints' effort zeroed, alone.
    """

    def __init__(self, chain, settings):
        super().__init__()
        self.chain = chain  # from the URDF; the simulation runs settings.model (payload)
        s = self.settings = settings
        self.sim = Simulation(s.model, s.q0, s.dt, s.limits, s.integrator,
                              s.substeps, s.arm_compensates_gravity)
        self.command = np.zeros(chain.n)  # replaced whole, never written in place: the stepping
        # thread reads it while the message thread takes a command
        self.braked = s.braked  # released once every source has commanded
        self.command_seen = None  # when the last command came: sim time if synchronous
        k = len(s.sources)
        self.source_seen = [None] * k  # when each source last commanded
        self.heard = np.zeros(k, dtype=bool)  # each source's answer to the last state
        self.silent = np.zeros(k, dtype=bool)  # each source past command_timeout
        self.source_missed = np.zeros(k, dtype=np.int64)  # states each one left unanswered
        self.states = 0  # states published while commands were expected
        self.missed = 0  # of those, states no new command answered in time
        self.timeouts = 0
        self.pace = None  # (now, sim t) at the first command: the real-time factor counts from it
        self.noise = s.noise  # sigma of q, qd and effort, on what is published
        self.rng = np.random.default_rng(s.seed)
        self._next_report = REPORT_EVERY
        self.scheduled = []  # (simulated s, wrench, link) of pushes stamped ahead, soonest first
        self.lock = threading.Lock()  # the message thread schedules, the stepping thread takes
        self.overloads = gravity_overloads(s.model, s.q0, s.limits)
        for line in self.overloads:  # initial_positions the limits cannot hold
            self._say("warning", f"the start pose cannot be held: {line}")

    def measured(self):
        """(q, qd, effort) as the arm's sensors give them: the true state and applied effort,
        with the noise the parameters ask for (the same arrays when there is none).
        """
        sim = self.sim
        true = (sim.q, sim.qd, sim.effort)
        if not self.noise.any():
            return true
        return tuple(x + sigma * self.rng.standard_normal(x.shape) if sigma else x
                     for x, sigma in zip(true, self.noise))

    def set_model(self, model):
        """A new payload: the next step carries it."""
        self.sim.chain = model

    def push(self, wrench, link="", at=None):
        """An external wrench (6,) [force N; moment N m], base axes, on `link`'s origin (""
        the tip link) from the next step on, or from the simulated time `at` (s) when that is
        still to come (a wrench stamped ahead: a scenario keeps its times whatever the load on
        whoever sent it); zero ends it. ValueError names a bad link.
        """
        self.chain.frame(link or self.chain.tip_link)  # a bad link is refused now, not later
        if at is not None and at > self.sim.t:
            with self.lock:
                self.scheduled.append((at, np.array(wrench, dtype=float), link))
                self.scheduled.sort(key=lambda item: item[0])
            return
        self._apply_push(wrench, link)

    def _apply_push(self, wrench, link):
        self.sim.push(wrench, link or None)
        self._say("info", f"push on '{link or self.chain.tip_link}': force "
                          f"{np.round(wrench[:3], 3).tolist()} N, moment "
                          f"{np.round(wrench[3:], 3).tolist()} N m" if np.any(wrench) else
                          "push ended")

    def _clock(self, now):
        return self.sim.t if self.settings.synchronous else now

    def on_command(self, now, tau, source=None):
        """A good effort command: from command source `source` (an index of
        settings.sources), in its joints' order; None: every joint's, chain order, standing for
        every source (the topic-based hardware's command by name).
        """
        sources = range(len(self.heard)) if source is None else (source,)
        if source is None:
            self.command = tau
        else:
            command = self.command.copy()
            command[self.settings.sources[source][1]] = tau
            self.command = command
        clock = self._clock(now)
        for k in sources:
            self.source_seen[k] = clock
            self.heard[k] = True
            if self.silent[k]:
                self.silent[k] = False
                self._say("warning", f"effort commands{self._from(k)} are back at t = "
                          f"{self.sim.t:.3f} s")
        self.command_seen = clock
        if self.pace is None:
            self.pace = (now, self.sim.t)
        if self.braked and all(seen is not None for seen in self.source_seen):
            self.braked = False
            self._say("info", f"first command at t = {self.sim.t:.3f} s: brakes released")

    @property
    def answered(self):
        """Whether every source answered since the last published state."""
        return bool(self.heard.all())

    @property
    def timed_out(self):
        """Whether a source is silent past command_timeout."""
        return bool(self.silent.any())

    def _from(self, k):
        """' from TOPIC' when there are several sources, else nothing."""
        return f" from {self.settings.sources[k][0]}" if len(self.heard) > 1 else ""

    def step(self, now):
        """One dt: braked, or under the last command (zero after command_timeout), with the
        pushes due by now. Returns whether a state is due now (every publish_every steps).
        """
        self._check_command_timeout(now)
        while self.scheduled and self.scheduled[0][0] <= self.sim.t + 0.5 * self.sim.dt:
            with self.lock:
                _, wrench, link = self.scheduled.pop(0)
            self._apply_push(wrench, link)
        if self.braked:
            self.sim.hold()
        elif not self.sim.step(self.command):
            self._say("warning", f"numerical blow-up at t = {self.sim.t:.3f} s: reset to the "
                      f"last finite state ({self.sim.blowups} so far)", throttle=True)
        return self.sim.steps % self.settings.publish_every == 0

    def _check_command_timeout(self, now):
        timeout = self.settings.command_timeout
        if timeout <= 0 or self.command_seen is None:
            return
        for k, seen in enumerate(self.source_seen):
            if seen is None or self.silent[k]:
                continue
            silent = self._clock(now) - seen
            if silent > timeout:
                self.silent[k] = True
                self.timeouts += 1
                command = self.command.copy()
                command[self.settings.sources[k][1]] = 0.0
                self.command = command
                self._say("warning", f"no effort command{self._from(k)} for {silent:.3f} s "
                          f"(command_timeout {timeout} s): zero effort, the arm falls as "
                          f"hardware would")

    def published(self, now):
        """A state went out: count it, and whether the one before got its answer."""
        if self.command_seen is not None:
            self.states += 1
            self.missed += not self.answered
            self.source_missed += ~self.heard
        self.heard[:] = False
        if self.sim.t >= self._next_report and self.states:
            self._next_report = self.sim.t + REPORT_EVERY
            self._say("info", self.deadline_report(now))

    def diagnostics(self, now):
        """(level "OK" | "WARN", message, {key: value}): what /diagnostics reports."""
        rtf = self.real_time_factor(now)
        met = 100.0 * (1 - self.missed / self.states) if self.states else 100.0
        message = ("braked until the first command" if self.braked else
                   "no effort command: zero effort" if self.timed_out else "running")
        values = {
            "time": round(self.sim.t, 3), "states": self.states, "missed": self.missed,
            "deadlines_met_percent": round(met, 2),
            "real_time_factor": "-" if rtf is None else round(rtf, 3),
            "blowups": self.sim.blowups, "command_timeouts": self.timeouts,
            "stop_steps": self.sim.stop_steps}
        if self.overloads:
            values["start_pose_not_held"] = "; ".join(self.overloads)
        if len(self.heard) > 1:  # which controller leaves states unanswered
            values["missed_by_source"] = "; ".join(
                f"{topic}: {int(n)}" for (topic, _), n in zip(self.settings.sources,
                                                              self.source_missed))
        return ("WARN" if self.timed_out or self.sim.blowups or self.overloads else "OK",
                message, values)

    def real_time_factor(self, now):
        """Simulated s per wall s since the first command; None before it."""
        if self.pace is None or now <= self.pace[0]:
            return None
        return (self.sim.t - self.pace[1]) / (now - self.pace[0])

    def deadline_report(self, now):
        """States published since the first command, how many got no new command in time, and
        the real-time factor achieved.
        """
        share = 100.0 * (1 - self.missed / self.states) if self.states else 100.0
        rtf = self.real_time_factor(now)
        return (f"deadlines: {self.states} states, {self.missed} missed (no new command "
                f"before the next state), {share:.2f} % met; real-time factor "
                + ("-" if rtf is None else f"{rtf:.3f}"))
