"""dynamics_simulator: integrates the arm's forward dynamics under the last effort command.

Subscribes /effort_controller/commands (std_msgs/Float64MultiArray, `joints` order) and holds
the last one; publishes /joint_states (every chain joint: position, velocity, effort = applied
torque) stamped with the simulation time, and /clock when publish_clock is true.

A thread steps the simulation, at most real_time_factor times as fast as the wall clock (0: as
fast as it can). Two ways to meet the controller:
- synchronous (default), as Gazebo and MuJoCo run ros2_control: after publishing a state it
  waits for the command that answers it, then steps. A slow machine lowers the real-time
  factor; no deadline is missed. After sync_timeout s of wall time without an answer it steps
  on the last command and counts a miss, so a dead controller still lets time run, one step
  per sync_timeout. It never runs ahead of a stalled controller. command_timeout counts
  simulated time here.
- free running (synchronous false), like hardware: it steps on the wall clock and never
  waits; command_timeout counts wall time. For deadline and watchdog tests.
With wait_for_command (default) the joints stay braked, time running, until the first effort
command, so the arm does not fall while the controller starts.
"""

import threading
import time

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..control import effort_limits, gain_vector
from ..simulation import INTEGRATORS, Simulation, default_initial_positions
from . import messages
from .common import (PAYLOAD_PARAMETERS, StartupError, build_chain, configure_from_model,
                     declare_model_parameters, declare_payload_parameters, payload_chain,
                     payload_summary, reliability, run, unset)


class DynamicsSimulator(Node):
    NODE_NAME = "dynamics_simulator"

    def __init__(self, **kwargs):
        super().__init__(self.NODE_NAME, **kwargs)
        self.fatal = None
        declare_model_parameters(self)
        optional = ParameterDescriptor(dynamic_typing=True)  # unset: derived from the URDF
        self.declare_parameter("initial_positions", None, optional)
        self.declare_parameter("dt", 0.001, ParameterDescriptor(description="integration step, s"))
        self.declare_parameter("publish_rate", 1000.0, ParameterDescriptor(description="Hz"))
        self.declare_parameter("publish_clock", False)
        self.declare_parameter("real_time_factor", 1.0, ParameterDescriptor(
            description="upper bound on simulated s per wall s; 0: as fast as possible"))
        self.declare_parameter("synchronous", True, ParameterDescriptor(
            description="wait for the command answering each state (false: free running)"))
        self.declare_parameter("sync_timeout", 0.1, ParameterDescriptor(
            description="wall s to wait for an answer before stepping on the last command"))
        self.declare_parameter("integrator", "rk4")
        self.declare_parameter("wait_for_command", True, ParameterDescriptor(
            description="hold the joints (brakes) until the first effort command"))
        self.declare_parameter("effort_limits", None, optional)
        self.declare_parameter("command_timeout", 0.2, ParameterDescriptor(
            description="s without a command before the effort drops to zero; 0: never"))
        declare_payload_parameters(self)  # a load the arm carries, known to the controller or not

        self.sim = None
        self.command = None
        self._answered = threading.Event()  # a command arrived since the last published state
        self._running = True
        self._thread = None
        self.state_pub = self.create_publisher(JointState, "/joint_states", 10)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        configure_from_model(self)
        self.create_subscription(Float64MultiArray, "/effort_controller/commands",
                                 self._on_command, reliability(self))
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def _param(self, name):
        return self.get_parameter(name).value

    def configure(self, source):
        urdf_chain, order = build_chain(self, source)
        try:
            chain = payload_chain(urdf_chain, self._param)
        except ValueError as err:
            raise StartupError(f"parameter {err}") from err
        n = chain.n
        dt, rate, rtf = self._param("dt"), self._param("publish_rate"), self._param("real_time_factor")
        timeout, sync_timeout = self._param("command_timeout"), self._param("sync_timeout")
        for name, value, ok in (("dt", dt, 0 < dt <= 0.1), ("publish_rate", rate, rate > 0),
                                ("real_time_factor", rtf, rtf >= 0),
                                ("command_timeout", timeout, timeout >= 0),
                                ("sync_timeout", sync_timeout, sync_timeout > 0)):
            if not ok or not np.isfinite(value):
                raise StartupError(f"parameter {name} out of range: {value}")
        integrator = self._param("integrator")
        if integrator not in INTEGRATORS:
            raise StartupError(f"parameter integrator must be one of {INTEGRATORS}, got {integrator!r}")
        q0, override = self._param("initial_positions"), self._param("effort_limits")
        to_chain = np.argsort(order)  # `joints` order -> chain order
        try:
            if unset(q0):
                q0 = default_initial_positions(chain)
            else:
                q0 = np.atleast_1d(np.asarray(q0, dtype=float))
                if q0.shape != (n,) or not np.all(np.isfinite(q0)):
                    raise ValueError(f"initial_positions must be {n} finite values, got {q0.tolist()}")
                q0 = q0[to_chain]
            limits = effort_limits(chain, () if unset(override) else
                                   gain_vector(override, n, "effort_limits")[to_chain])
        except (ValueError, TypeError) as err:
            raise StartupError(f"parameter {err}") from err
        self.order = order
        self.publish_every = max(1, int(round(1.0 / (rate * dt))))
        self.real_time_factor = rtf
        self.publish_clock = bool(self._param("publish_clock"))
        self.synchronous = bool(self._param("synchronous"))
        self.sync_timeout = sync_timeout
        self.braked = bool(self._param("wait_for_command"))  # released by the first command
        self.command_timeout = timeout
        self.command_seen = None  # when the last good command came: sim time if synchronous
        self.timed_out = False
        self.published = 0  # states published while commands were expected
        self.missed = 0  # of those, states after which no new command had arrived in time
        self._next_report = 5.0
        self._pace = None  # (wall s, sim s) where the real-time factor is measured from
        self.urdf_chain = urdf_chain
        self.sim = Simulation(chain, q0, dt, limits, integrator)
        self.state_msg = messages.JointStateWriter(chain.joint_names)
        # load (or on a first run compile) the step's kernel now, not in the first step
        Simulation(chain, q0, dt, limits, integrator).step(np.zeros(n))
        self.command = np.zeros(n)
        self.get_logger().info(
            f"{n} joints {chain.joint_names}, dt {dt} s, {integrator}, publishing every "
            f"{self.publish_every} steps, {'synchronous' if self.synchronous else 'free running'}, "
            f"{payload_summary(urdf_chain, self._param)}, "
            + (f"real-time factor at most {rtf:g}" if rtf > 0 else "as fast as possible"))
        self._publish()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_set_parameters(self, params):
        """The payload changes at run time (the next step carries it); it is the only setting
        that does."""
        changes = {p.name: p.value for p in params}
        if self.sim is None or not changes.keys() & set(PAYLOAD_PARAMETERS):
            return SetParametersResult(successful=True)
        def value(name):
            return changes.get(name, self._param(name))
        try:
            chain = payload_chain(self.urdf_chain, value)
        except ValueError as err:
            return SetParametersResult(successful=False, reason=str(err))
        self.sim.chain = chain
        self.get_logger().info(payload_summary(chain, value))
        return SetParametersResult(successful=True)

    def _on_command(self, msg):
        if self.sim is None:
            return
        try:
            tau = messages.read_effort_command(msg, self.sim.chain.n)
        except messages.BadMessage as err:
            self.get_logger().warning(f"command dropped: {err}", throttle_duration_sec=1.0)
            return
        command = np.empty_like(tau)
        command[self.order] = tau
        self.command = command
        self.command_seen = self.sim.t if self.synchronous else time.monotonic()
        self._answered.set()
        if self._pace is None:  # the real-time factor counts from the first command
            self._pace = (time.monotonic(), self.sim.t)
        if self.timed_out:
            self.timed_out = False
            self.get_logger().warning(f"effort commands are back at t = {self.sim.t:.3f} s")
        if self.braked:
            self.braked = False
            self.get_logger().info(f"first command at t = {self.sim.t:.3f} s: brakes released")

    def _step(self):
        if not self.sim.step(self.command):
            self.get_logger().warning(
                f"numerical blow-up at t = {self.sim.t:.3f} s: reset to the last finite state "
                f"({self.sim.blowups} so far)", throttle_duration_sec=1.0)

    def _publish(self):
        sim = self.sim
        if self.command_seen is not None:
            self.published += 1
            self.missed += not self._answered.is_set()
        self._answered.clear()
        self.state_pub.publish(self.state_msg.fill(sim.t, sim.q, sim.qd, sim.tau))
        if self.publish_clock:
            self.clock_pub.publish(Clock(clock=messages.to_stamp(sim.t)))
        if sim.t >= self._next_report and self.published:
            self._next_report = sim.t + 5.0
            self.get_logger().info(self.deadline_report())

    def real_time_factor_achieved(self):
        """Simulated s per wall s since the first command; None before it."""
        if self._pace is None:
            return None
        wall = time.monotonic() - self._pace[0]
        return (self.sim.t - self._pace[1]) / wall if wall > 0 else None

    def deadline_report(self):
        """States published since the first command, how many got no new command in time, and
        the real-time factor achieved."""
        share = 100.0 * (1 - self.missed / self.published) if self.published else 100.0
        rtf = self.real_time_factor_achieved()
        return (f"deadlines: {self.published} states, {self.missed} missed (no new command "
                f"before the next state), {share:.2f} % met; real-time factor "
                + ("-" if rtf is None else f"{rtf:.3f}"))

    def _check_command_timeout(self):
        if self.command_timeout <= 0 or self.command_seen is None or self.timed_out:
            return
        now = self.sim.t if self.synchronous else time.monotonic()
        silent = now - self.command_seen
        if silent > self.command_timeout:
            self.timed_out = True
            self.command = np.zeros(self.sim.chain.n)
            self.get_logger().warning(
                f"no effort command for {silent:.3f} s (command_timeout {self.command_timeout} s): "
                "zero effort, the arm falls as hardware would")

    def _wait_for_answer(self):
        """Synchronous: wait for the command answering the state just published."""
        if self._answered.wait(self.sync_timeout) or not self._running:
            return
        if self.command_seen is not None:  # (before the first command, silence is expected)
            self.get_logger().warning(
                f"no command answered the state of t = {self.sim.t:.3f} s within "
                f"{self.sync_timeout} s: stepping on the last one", throttle_duration_sec=1.0)

    def _run(self):
        """Step, publish every publish_every steps, keep at most real_time_factor."""
        next_wall = time.monotonic()
        published = True  # configure() published the initial state
        while self._running and rclpy.ok():
            if self.synchronous and published:
                self._wait_for_answer()
            self._check_command_timeout()
            published = False
            if self.braked:
                self.sim.hold()
            else:
                self._step()
            if self.sim.steps % self.publish_every == 0:
                published = True
                try:
                    self._publish()
                except Exception:  # noqa: BLE001 - rclpy raises RCLError once shut down
                    if rclpy.ok():
                        raise
                    break  # the context went down under us (Ctrl-C): stop quietly
            if self.real_time_factor > 0:
                next_wall += self.sim.dt / self.real_time_factor
                delay = next_wall - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                elif delay < -0.1:  # far behind (machine busy, or waiting): do not race
                    next_wall = time.monotonic()

    def shutdown(self):
        self._running = False
        self._answered.set()  # wake a synchronous wait
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self.sim is not None and self.published:
            self.get_logger().info(self.deadline_report())


def main(args=None):
    return run(DynamicsSimulator, args)


if __name__ == "__main__":
    raise SystemExit(main())
