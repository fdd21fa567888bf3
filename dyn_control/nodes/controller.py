"""computed_torque_controller: joint states + desired trajectory -> effort commands.

Subscribes /joint_states (sensor_msgs/JointState) and ~/joint_trajectory
(trajectory_msgs/JointTrajectory); publishes /effort_controller/commands
(std_msgs/Float64MultiArray in `joints` order, for ros2_control's forward_command_controller with
interface_name: effort), ~/reference (JointState: q_d, qd_d, tau) and ~/error (JointState: e, ed).
The control law is in dyn_control.control; this node only moves data. See README for parameters.
"""

import time
from collections import deque

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..control import (DEFAULT_FRICTION_DEADBAND, DEFAULT_INTEGRAL_LIMIT, DEFAULT_KP,
                       DEFAULT_PERIOD, ControlLaw, check_mode, critical_damping, effort_limits,
                       gain_vector, limit_rate, trajectory_violation)
from ..dynamics import gravity_torques
from ..trajectory import Trajectory
from . import messages
from .common import (PAYLOAD_PARAMETERS, StartupError, build_chain, configure_from_model,
                     declare_model_parameters, declare_payload_parameters, payload_chain,
                     payload_summary, reliability, run, unset)

_FIXED = ("robot_description", "urdf_file", "joints", "root_link", "tip_link", "rate",
          "qos_reliability")
_TIMEOUT_ACTIONS = ("hold", "stop")
_CHECKS = ("reject", "warn", "off")


class ComputedTorqueController(Node):
    NODE_NAME = "computed_torque_controller"

    def __init__(self, **kwargs):
        super().__init__(self.NODE_NAME, **kwargs)
        self.fatal = None  # a StartupError raised after construction (model from the topic)
        declare_model_parameters(self)
        any_type = ParameterDescriptor(dynamic_typing=True)
        self.declare_parameter("mode", "computed_torque", ParameterDescriptor(
            description="computed_torque, feedforward or gravity_pd"))
        self.declare_parameter("kp", DEFAULT_KP, any_type)
        self.declare_parameter("kd", None, any_type)  # unset: 2 sqrt(kp), critically damped
        self.declare_parameter("ki", 0.0, ParameterDescriptor(
            dynamic_typing=True, description="1/s^3, integral gain (scalar or per joint); 0: off"))
        self.declare_parameter("integral_limit", DEFAULT_INTEGRAL_LIMIT, ParameterDescriptor(
            dynamic_typing=True, description="rad s, clamp on each joint's error integral"))
        declare_payload_parameters(self)
        self.declare_parameter("trajectory_check", "reject", ParameterDescriptor(
            description="reject, warn or off: a trajectory beyond the effort or velocity limits"))
        self.declare_parameter("effort_limits", None, any_type)  # unset: the URDF limits
        self.declare_parameter("friction_compensation", True)
        self.declare_parameter("friction_deadband", DEFAULT_FRICTION_DEADBAND, ParameterDescriptor(
            description="rad: friction compensation fades out within it of the target"))
        self.declare_parameter("control_period", DEFAULT_PERIOD, ParameterDescriptor(
            description="s between commands; the damping compensation models one period"))
        self.declare_parameter("rate", 0.0, ParameterDescriptor(
            description="Hz; 0 computes on every joint state"))
        self.declare_parameter("state_timeout", 0.1, ParameterDescriptor(
            description="s without a good joint state before feedback stops"))
        self.declare_parameter("on_state_timeout", "hold", ParameterDescriptor(
            description="hold: gravity compensation at the last good position; stop: publish nothing"))
        self.declare_parameter("max_effort_rate", 0.0, ParameterDescriptor(
            description="N m/s, bound on the change between commands; 0: off"))

        self.chain = None  # from the URDF
        self.model = None  # the chain with the payload: what the law and the checks use
        self.law = None
        self.trajectory = None
        self.state = None  # (t, q, qd) of the last good joint state
        self.tick_time = None  # time (s, state clock) of the last tick: the integral's step
        self.command = None  # last published effort, chain order
        self.command_time = None  # its time (s, state clock)
        self.last_state_seen = None  # when the last good state came, on the watchdog's clock
        self.stale = False  # no good state for state_timeout: feedback stopped
        self.pending = None  # a trajectory received before the first state
        self._compute_s = deque(maxlen=5000)
        self._next_report = -np.inf

        self.effort_pub = self.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        # A short history on the diagnostics: a subscriber that wants every sample keeps a deep
        # queue of its own (the Recorder keeps 1000). A history of 1000 here costs resends to a
        # lagging subscriber, CPU the loop needs on a loaded machine (over shared memory, the
        # two load tests of test_faults failed in 4 of 14 runs with 1000, in 3 of 41 with 10).
        self.reference_pub = self.create_publisher(JointState, "~/reference", 10)
        self.error_pub = self.create_publisher(JointState, "~/error", 10)

        configure_from_model(self)
        # depth 1: when a tick runs late, the next one uses the newest state, never a backlog
        self.create_subscription(JointState, "/joint_states", self._on_joint_state,
                                 reliability(self))
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self._on_trajectory, 10)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        rate = self.rate = self.get_parameter("rate").value
        if rate < 0:
            raise StartupError(f"parameter rate must be >= 0 Hz, got {rate}")
        if rate > 0:
            self.create_timer(1.0 / rate, self._on_timer)
        # The watchdog measures silence on the clock the node runs on: with use_sim_time, a
        # simulator that waits for a busy machine stops its clock, so a slow CPU is not a
        # stale state (and a dead simulator moves nothing). Without sim time, the steady clock.
        # It looks every 10 ms of wall time either way.
        # (time.monotonic is the steady clock without an rclpy call in every tick)
        clock = self.get_clock()
        self._watchdog_now = (time.monotonic if not self.get_parameter("use_sim_time").value
                              else lambda: clock.now().nanoseconds * 1e-9)
        self.watchdog_period = min(0.01, self.get_parameter("state_timeout").value / 2)
        self.create_timer(self.watchdog_period, self._on_watchdog,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    # ------------------------------------------------------------------ configuration

    def configure(self, source):
        chain, order = build_chain(self, source)
        self.chain, self.order = chain, order
        self.names = [chain.joint_names[i] for i in order]
        self.reader = messages.JointStateReader(chain.joint_names)
        self.reference_msg = messages.JointStateWriter(chain.joint_names)
        self.error_msg = messages.JointStateWriter(chain.joint_names, ("position", "velocity"))
        self.effort_msg = messages.EffortWriter(order)
        try:
            self._apply(self._settings({}))
        except ValueError as err:
            raise StartupError(str(err)) from err
        # compile or load the kernels now, not in the first tick (which would stall ~0.3 s)
        zero = np.zeros(chain.n)
        for mode in ("computed_torque", "feedforward", "gravity_pd"):
            ControlLaw(chain, mode, self.kp, self.kd)(zero, zero, zero, zero, zero)
        gravity_torques(chain, zero)
        trajectory_violation(chain, Trajectory.hold(0.0, zero), self.limits)
        self.get_logger().info(
            f"{chain.n} joints {self.names} from '{chain.root_link}' to '{chain.tip_link}', "
            f"mode {self.mode}, {payload_summary(chain, lambda name: self.get_parameter(name).value)}")

    def _in_chain_order(self, values):
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def _settings(self, changes):
        """Validated settings (a dict, see _apply) from the parameters updated by `changes`;
        ValueError naming the parameter and value otherwise."""
        def value(name):
            return changes[name] if name in changes else self.get_parameter(name).value

        def per_joint(name):
            return self._in_chain_order(gain_vector(value(name), n, name))

        n = self.chain.n
        kp = per_joint("kp")
        override = value("effort_limits")
        settings = dict(
            mode=check_mode(value("mode")), kp=kp,
            kd=critical_damping(kp) if value("kd") is None else per_joint("kd"),
            ki=per_joint("ki"), integral_limit=per_joint("integral_limit"),
            limits=effort_limits(self.chain, () if unset(override) else per_joint("effort_limits")),
            friction_compensation=bool(value("friction_compensation")),
            state_timeout=value("state_timeout"), on_state_timeout=value("on_state_timeout"),
            max_effort_rate=value("max_effort_rate"), friction_deadband=value("friction_deadband"),
            control_period=value("control_period"), trajectory_check=value("trajectory_check"),
            model=payload_chain(self.chain, value))
        timeout, max_rate = settings["state_timeout"], settings["max_effort_rate"]
        deadband, period = settings["friction_deadband"], settings["control_period"]
        if not (np.isfinite(timeout) and timeout > 0):
            raise ValueError(f"state_timeout must be > 0 s, got {timeout}")
        if settings["on_state_timeout"] not in _TIMEOUT_ACTIONS:
            raise ValueError(f"on_state_timeout must be hold or stop, got {settings['on_state_timeout']!r}")
        if settings["trajectory_check"] not in _CHECKS:
            raise ValueError(f"trajectory_check must be one of {', '.join(_CHECKS)}, "
                             f"got {settings['trajectory_check']!r}")
        if not (np.isfinite(max_rate) and max_rate >= 0):
            raise ValueError(f"max_effort_rate must be >= 0 N m/s, got {max_rate}")
        if not (np.isfinite(deadband) and deadband > 0):
            raise ValueError(f"friction_deadband must be > 0 rad, got {deadband}")
        if not (np.isfinite(period) and 0 < period <= 1):
            raise ValueError(f"control_period must be in (0, 1] s, got {period}")
        return settings

    def _apply(self, settings):
        """Take validated settings; the law is rebuilt and keeps the error integral (the
        estimate of the unmodelled load) from the previous one."""
        for name in ("mode", "kp", "kd", "limits", "friction_compensation", "state_timeout",
                     "on_state_timeout", "max_effort_rate", "trajectory_check", "model"):
            setattr(self, name, settings[name])
        self.hold_law = ControlLaw.gravity(self.model, self.limits)
        self.law = ControlLaw(
            self.model, self.mode, self.kp, self.kd, self.limits, self.friction_compensation,
            settings["friction_deadband"], settings["control_period"], settings["ki"],
            settings["integral_limit"], None if self.law is None else self.law.integral)

    def _on_set_parameters(self, params):
        changes = {p.name: p.value for p in params}
        fixed = [name for name in changes if name in _FIXED]
        if fixed:
            return SetParametersResult(successful=False,
                                       reason=f"{fixed[0]} cannot change while the node runs")
        if self.chain is None:
            return SetParametersResult(successful=True)
        try:
            settings = self._settings(changes)
        except ValueError as err:
            return SetParametersResult(successful=False, reason=str(err))
        self._apply(settings)
        if changes.keys() & set(PAYLOAD_PARAMETERS):
            self.get_logger().info(payload_summary(
                self.chain, lambda name: changes.get(name, self.get_parameter(name).value)))
        return SetParametersResult(successful=True)

    def compute_command(self, t, q, qd):
        """One control step at time t (s) for the state q, qd (n,), chain order.

        Returns (tau, (q_d, qd_d, qdd_d), (e, ed)): the saturated effort, the desired state
        and the errors. Before any trajectory the controller holds the first measured position.
        """
        if self.trajectory is None:
            self.trajectory = Trajectory.hold(t, q)
        desired = self.trajectory.sample(t)
        # the integral's step: the time since the last tick, at most state_timeout (a gap)
        dt = 0.0 if self.tick_time is None else min(max(t - self.tick_time, 0.0), self.state_timeout)
        self.tick_time = t
        tau, e, ed = self.law(q, qd, *desired, dt)
        return tau, desired, (e, ed)

    def _tick(self):
        t, q, qd = self.state
        start = time.perf_counter()
        tau, (q_d, qd_d, _), (e, ed) = self.compute_command(t, q, qd)
        self._compute_s.append(time.perf_counter() - start)
        if self._send(t, tau):
            self.reference_pub.publish(self.reference_msg.fill(t, q_d, qd_d, self.command))
            self.error_pub.publish(self.error_msg.fill(t, e, ed))
        if t >= self._next_report:  # build the report only when it is logged
            self._next_report = t + 5.0
            self.get_logger().info(self.compute_report())

    def _send(self, t, tau):
        """Rate-limit and publish an effort (chain order); never a non-finite one."""
        if self.command is not None:
            tau = limit_rate(tau, self.command, self.max_effort_rate, t - self.command_time)
        msg = self.effort_msg.fill(tau)
        if not self.effort_msg.finite():
            self.get_logger().error("non-finite effort computed; command not sent",
                                    throttle_duration_sec=1.0)
            return False
        self.command, self.command_time = tau, t
        self.effort_pub.publish(msg)
        return True

    def _on_watchdog(self):
        """No good state for state_timeout: stop feedback; hold gravity compensation or stop."""
        if self.last_state_seen is None:
            return
        silent = self._watchdog_now() - self.last_state_seen
        if silent <= self.state_timeout:
            return
        if not self.stale:
            self.stale = True
            self.get_logger().warning(
                f"no good joint state for {silent:.3f} s (state_timeout {self.state_timeout} s): "
                + ("holding gravity compensation at the last good position"
                   if self.on_state_timeout == "hold" else "effort commands stopped"))
        if self.on_state_timeout == "hold":
            q = self.state[1]
            zero = np.zeros(self.chain.n)
            tau = self.hold_law(q, zero, q, zero, zero)[0]
            self._send(self.command_time + self.watchdog_period, tau)

    def compute_report(self):
        us = np.array(self._compute_s) * 1e6
        if us.size == 0:
            return "compute time: no ticks yet"
        return (f"compute time over {us.size} ticks: p50 {np.percentile(us, 50):.1f} us, "
                f"p99 {np.percentile(us, 99):.1f} us, max {us.max():.1f} us")

    def _now(self, stamp):
        t = messages.to_seconds(stamp)
        return t if t > 0 else self.get_clock().now().nanoseconds * 1e-9

    def _on_joint_state(self, msg):
        if self.chain is None:
            return
        try:
            q, qd = self.reader.read(msg)
        except messages.BadMessage as err:
            self.get_logger().warning(f"joint state ignored: {err}", throttle_duration_sec=1.0)
            return
        t = self._now(msg.header.stamp)
        self.last_state_seen = self._watchdog_now()
        if self.stale:  # states are back: hold where the arm is now, no torque jump
            self.stale = False
            self.trajectory = Trajectory.hold(t, q)
            self.command_time = t - self.watchdog_period  # the rate limit counts from here
            self.get_logger().warning("joint states are back: holding the current position "
                                      "(the running trajectory was dropped)")
        self.state = (t, q, qd)
        if self.pending is not None:  # a trajectory that came before the first state
            self._on_trajectory(self.pending)
            self.pending = None
        if self.rate == 0:
            self._tick()

    def _on_timer(self):
        if self.state is not None:
            self._tick()

    def _on_trajectory(self, msg):
        if self.chain is None or self.state is None:
            self.pending = msg
            self.get_logger().info("trajectory kept until the first joint state arrives")
            return
        t, q, _ = self.state
        current = (self.trajectory.sample(t) if self.trajectory is not None
                   else (q, np.zeros(self.chain.n), np.zeros(self.chain.n)))
        try:
            trajectory = messages.read_trajectory(msg, self.chain, t, current)
        except messages.BadMessage as err:
            self.get_logger().error(f"trajectory refused: {err}")
            return
        if self.trajectory_check != "off":
            problem = trajectory_violation(self.model, trajectory, self.limits)
            if problem and self.trajectory_check == "reject":
                self.get_logger().error(f"trajectory refused: {problem}; the running one goes on")
                return
            if problem:
                self.get_logger().warning(f"trajectory beyond the arm's limits: {problem}")
        self.trajectory = trajectory
        self.get_logger().info(
            f"new {self.trajectory.kind} trajectory: {len(msg.points)} points, "
            f"{self.trajectory.end_time - t:.3f} s")

    def shutdown(self):
        if self.chain is not None:
            self.get_logger().info(self.compute_report())


def main(args=None):
    return run(ComputedTorqueController, args)


if __name__ == "__main__":
    raise SystemExit(main())
