"""computed_torque_controller: joint states + desired trajectory -> effort commands.

Subscribes /joint_states (sensor_msgs/JointState) and ~/joint_trajectory
(trajectory_msgs/JointTrajectory); publishes /effort_controller/commands
(std_msgs/Float64MultiArray in `joints` order, for ros2_control's forward_command_controller with
interface_name: effort), ~/reference (JointState: q_d, qd_d, tau) and ~/error (JointState: e, ed).
The controller itself is dyn_control.controller_core; this node declares its parameters
(dyn_control.parameters.CONTROLLER), turns messages into calls and commands into messages.
"""

import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..controller_core import ControllerCore, controller_settings
from ..parameters import CONTROLLER
from ..trajectory import Trajectory
from . import messages
from .common import (StartupError, build_chain, configure_from_model, declare_parameters,
                     log_events, parameter_reader, publish_diagnostics, reliability, run,
                     set_parameters_callback)


class ComputedTorqueController(Node):
    NODE_NAME = "computed_torque_controller"

    def __init__(self, **kwargs):
        super().__init__(self.NODE_NAME, **kwargs)
        self.fatal = None  # a StartupError raised after construction (model from the topic)
        self.core = None
        declare_parameters(self, CONTROLLER)
        self.effort_pub = self.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        # history 10: a subscriber that wants every sample keeps a deep queue of its own (the
        # recorder keeps 1000); resending a long history to a lagging one costs the loop CPU
        self.reference_pub = self.create_publisher(JointState, "~/reference", 10)
        self.error_pub = self.create_publisher(JointState, "~/error", 10)
        # The watchdog's clock: with use_sim_time, a simulator that waits for a busy machine
        # stops its clock, so a slow CPU is not a stale state. Otherwise the steady clock.
        clock = self.get_clock()
        self._now = (time.monotonic if not self.get_parameter("use_sim_time").value
                     else lambda: clock.now().nanoseconds * 1e-9)
        configure_from_model(self)
        # depth 1: when a tick runs late, the next one uses the newest state, never a backlog
        self.create_subscription(JointState, "/joint_states", self.on_joint_state,
                                 reliability(self))
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_trajectory, 10)
        set_parameters_callback(self, CONTROLLER, self._apply)
        publish_diagnostics(self, lambda: None if self.core is None else self.core.diagnostics())

    def configure(self, source):
        chain, self.order = build_chain(self, source)
        try:
            core = ControllerCore(chain, controller_settings(chain, parameter_reader(self), self.order))
        except ValueError as err:
            raise StartupError(f"parameter {err}") from err
        self.names = [chain.joint_names[i] for i in self.order]
        self.reader = messages.JointStateReader(chain.joint_names)
        self.reference_msg = messages.JointStateWriter(chain.joint_names)
        self.error_msg = messages.JointStateWriter(chain.joint_names, ("position", "velocity"))
        self.effort_msg = messages.EffortWriter(self.order)
        # compile or load the kernels now, not in the first tick (which would stall ~0.3 s):
        # a tick, a trajectory check and a watchdog hold on a throwaway core
        zero = np.zeros(chain.n)
        warm = ControllerCore(chain, core.settings)
        warm.update(0.0, (0.0, zero, zero))
        warm.set_goal(lambda t, current: Trajectory(t, current, [1.0], [zero]))
        warm.update(1.0)
        self.core = core
        rate = core.settings["rate"]
        if rate > 0:
            self.create_timer(1.0 / rate, lambda: self._send(self.core.tick()))
        self.create_timer(core.watchdog_period, lambda: self.on_watchdog(),  # (no TimerInfo)
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"{chain.n} joints {self.names} from '{chain.root_link}' to '{chain.tip_link}', "
            f"mode {core.settings['mode']}")

    def _apply(self, changes):
        """Parameters changed at run time (already checked by the table) -> the core."""
        if self.core is not None:
            self.core.configure(controller_settings(
                self.core.chain, parameter_reader(self, changes), self.order))

    def on_watchdog(self, now=None):
        """The watchdog's tick at `now` (default: the watchdog's clock now)."""
        self._send(self.core.update(self._now() if now is None else now))

    def on_joint_state(self, msg):
        if self.core is None:
            return
        try:
            q, qd = self.reader.read(msg)
        except messages.BadMessage as err:
            self.get_logger().warning(f"joint state ignored: {err}", throttle_duration_sec=1.0)
            return
        stamp = messages.to_seconds(msg.header.stamp)
        if stamp <= 0:  # unstamped: the node's clock
            stamp = self.get_clock().now().nanoseconds * 1e-9
        self._send(self.core.update(self._now(), (stamp, q, qd)))

    def on_trajectory(self, msg):
        if self.core is None:
            return
        self.core.set_goal(lambda t, current: messages.read_trajectory(msg, self.core.chain, t, current))
        log_events(self, self.core)

    def _send(self, command):
        """A command from the core -> the effort message (and reference and error)."""
        if command is not None:
            self.effort_pub.publish(self.effort_msg.fill(command.tau))
            if command.desired is not None:
                q_d, qd_d, _ = command.desired
                self.reference_pub.publish(self.reference_msg.fill(command.t, q_d, qd_d, command.tau))
                self.error_pub.publish(self.error_msg.fill(command.t, *command.errors))
        if self.core.events:
            log_events(self, self.core)

    def shutdown(self):
        if self.core is not None:
            self.get_logger().info(self.core.compute_report())


def main(args=None):
    return run(ComputedTorqueController, args)


if __name__ == "__main__":
    raise SystemExit(main())
