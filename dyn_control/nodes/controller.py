"""computed_torque_controller: joint states + desired trajectory -> effort commands.

Subscribes /joint_states (sensor_msgs/JointState) and ~/joint_trajectory
(trajectory_msgs/JointTrajectory); serves ~/follow_joint_trajectory
(control_msgs/action/FollowJointTrajectory, as joint_trajectory_controller: the way MoveIt
drives an arm); publishes /effort_controller/commands (std_msgs/Float64MultiArray in `joints`
order, for ros2_control's forward_command_controller with interface_name: effort), ~/reference
(JointState: q_d, qd_d, tau), ~/error (JointState: e, ed) and ~/controller_state
(control_msgs/msg/JointTrajectoryControllerState). The controller itself is
dyn_control.controller_core; this node declares its parameters (dyn_control.parameters.
CONTROLLER), turns messages into calls and commands into messages.
"""

import time

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from .. import kinematics
from ..controller_core import ControllerCore, controller_settings
from ..goals import Request
from ..parameters import CONTROLLER
from ..simulation import default_initial_positions
from . import messages, trajectory_action
from .diagnostics import log_events, publish_diagnostics, warn_throttled
from .model_source import build_chain, configure_from_model
from .params import (StartupError, declare_parameters, parameter_reader, reliability,
                     set_parameters_callback)
from .process import run


class ComputedTorqueController(Node):
    NODE_NAME = "computed_torque_controller"

    def __init__(self, **kwargs):
        super().__init__(self.NODE_NAME, **kwargs)
        self.fatal = None  # a StartupError raised after construction (model from the topic)
        self.core = None
        self.clock_offset = None  # s the joint states' stamps are ahead of this node's clock
        self._next_clock_check = -float("inf")
        declare_parameters(self, CONTROLLER)
        self.effort_pub = self.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        # history 10: a subscriber that wants every sample keeps a deep queue of its own (the
        # recorder keeps 1000); resending a long history to a lagging one costs the loop CPU
        self.reference_pub = self.create_publisher(JointState, "~/reference", 10)
        self.error_pub = self.create_publisher(JointState, "~/error", 10)
        if trajectory_action.AVAILABLE:
            self.controller_state_pub = self.create_publisher(
                trajectory_action.JointTrajectoryControllerState, "~/controller_state", 10)
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
        # cartesian_impedance's targets (crisp_controllers' names); refused in the joint modes.
        # With several ee_links, each has its own under ~/<link>/; the posture is shared.
        links = [link for link in self.get_parameter("ee_links").value if link]
        self.current_pose_pubs = []
        for k, prefix in enumerate([f"~/{link}/" for link in links] or ["~/"]):
            try:
                self.create_subscription(PoseStamped, prefix + "target_pose",
                                         lambda msg, k=k: self.on_target_pose(msg, k), 10)
                self.create_subscription(WrenchStamped, prefix + "target_wrench",
                                         lambda msg, k=k: self.on_target_wrench(msg, k), 10)
                self.current_pose_pubs.append(
                    self.create_publisher(PoseStamped, prefix + "current_pose", 10))
            except Exception as err:  # rclpy's InvalidTopicNameException
                raise StartupError(f"parameter ee_links: '{links[k]}' makes no topic name "
                                   f"({prefix}target_pose): {err}") from err
        self.create_subscription(JointState, "~/target_joint", self.on_target_joint, 10)
        set_parameters_callback(self, CONTROLLER, self._apply)
        publish_diagnostics(self, self.status)

    def status(self):
        """/diagnostics: the core's, and whether ~/follow_joint_trajectory is served."""
        if self.core is None:
            return None
        level, message, values = self.core.diagnostics()
        action = "served" if trajectory_action.AVAILABLE else "off: control_msgs not installed"
        values = {**values, "follow_joint_trajectory": action}
        if self.clock_offset is not None:
            values["clock_offset_s"] = round(self.clock_offset, 3)
        return level, message, values

    def configure(self, source):
        chain, self.order = build_chain(self, source)
        declare_parameters(self, CONTROLLER.for_joints(chain.joint_names))  # constraints.<joint>
        try:
            core = ControllerCore(controller_settings(chain, parameter_reader(self), self.order))
        except ValueError as err:
            raise StartupError(f"parameter {err}") from err
        self.chain, self.names = chain, [chain.joint_names[i] for i in self.order]
        self.reader = messages.JointStateReader(chain.joint_names)
        self.reference_msg = messages.JointStateWriter(chain.joint_names)
        self.error_msg = messages.JointStateWriter(chain.joint_names, ("position", "velocity"))
        self.effort_msg = messages.EffortWriter(self.order)
        self.state_msg = trajectory_action.controller_state_writer(chain.joint_names)
        self.pose_msg = messages.PoseWriter(PoseStamped, chain.root_link)
        self.state_period = 1.0 / self.get_parameter("state_publish_rate").value
        self.state_time = -np.inf  # stamp of the last ~/controller_state
        # compile or load the kernels now, not in the first tick (which would stall ~0.3 s):
        # a tick, a goal (its checks and tolerances), and a watchdog hold on a throwaway core
        q, zero = default_initial_positions(chain), np.zeros(chain.n)  # (inside the limits)
        warm = ControllerCore(core.settings)
        warm.update(0.0, (0.0, q, zero))
        warm.offer(Request(tuple(chain.joint_names), 0.0, ((1.0, q, (), ()),)))
        warm.update(0.0, (0.5, q, zero))
        warm.update(1.0)
        self.core = core
        if trajectory_action.AVAILABLE:
            self.action = trajectory_action.TrajectoryAction(
                self, self.get_parameter("action_monitor_rate").value)
        else:
            self.get_logger().info(trajectory_action.MISSING)
        rate = core.settings.rate
        if rate > 0:
            self.create_timer(1.0 / rate, lambda: self._send(self.core.tick()))
        self.create_timer(core.watchdog.period, lambda: self.on_watchdog(),  # (no TimerInfo)
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"{chain.n} joints {self.names} from '{chain.root_link}' to "
            f"{', '.join(repr(t) for t in chain.tip_links)}, "
            f"mode {core.settings.mode}")

    def _apply(self, changes):
        """Parameters changed at run time (already checked by the table) -> the core."""
        if self.core is not None:
            self.core.configure(controller_settings(
                self.chain, parameter_reader(self, changes), self.order))

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
        elif self.clock_offset is None:
            self._check_clock(stamp)
        self._send(self.core.update(self._now(), (stamp, q, qd)))

    def _check_clock(self, stamp):
        """Once a second of steady time until it finds one: joint states stamped on another
        clock than this node's. Trajectories run on the states' time whatever this says."""
        if time.monotonic() < self._next_clock_check:
            return
        self._next_clock_check = time.monotonic() + 1.0
        ours = self.get_clock().now().nanoseconds * 1e-9
        if ours == 0.0 or abs(stamp - ours) <= 1.0:  # (0: use_sim_time, no /clock yet)
            return
        self.clock_offset = stamp - ours
        sim = self.get_parameter("use_sim_time").value
        self.get_logger().warning(
            f"joint states are stamped t = {stamp:.3f} s, this node's clock reads t = {ours:.3f}"
            f" s ({'/clock' if sim else 'wall time'}, use_sim_time {str(sim).lower()}): the loop's "
            "nodes must share one clock. Beside a simulator that publishes /clock, set "
            "use_sim_time:=true on the controller and on what sends it trajectories.")

    def on_trajectory(self, msg):
        if self.core is not None:
            self.offer(messages.trajectory_request(msg))

    def on_target_pose(self, msg, frame=0):
        self._target("target_pose", lambda: self.core.set_target_pose(
            *messages.read_pose(msg, self.chain.root_link), frame))

    def on_target_wrench(self, msg, frame=0):
        self._target("target_wrench", lambda: self.core.set_target_wrench(
            messages.read_wrench(msg, "target_wrench", self.chain.root_link), frame))

    def on_target_joint(self, msg):
        self._target("target_joint", lambda: self.core.set_target_joint(
            *messages.read_posture(msg, self.chain.joint_names)))

    def _target(self, what, take):
        """A cartesian_impedance target; a bad or untimely one is refused, the last good stays."""
        if self.core is None:
            return
        try:
            take()
        except ValueError as err:  # BadMessage too
            warn_throttled(self, what, str(err) if str(err).startswith(what) else
                           f"{what} refused: {err}")

    def offer(self, request):
        """A goal (goals.Request) from the topic or the action -> the core's Goal."""
        goal = self.core.offer(request)
        self.log_core_events()
        return goal

    def log_core_events(self):
        if self.core.events:
            log_events(self, self.core)

    def _send(self, command):
        """A command from the core -> the effort message (and reference, error and, at
        state_publish_rate, the controller state or the current pose)."""
        if command is not None:
            self.effort_pub.publish(self.effort_msg.fill(command.tau))
            if command.desired is not None:
                q_d, qd_d, _ = command.desired
                self.reference_pub.publish(self.reference_msg.fill(command.t, q_d, qd_d, command.tau))
                self.error_pub.publish(self.error_msg.fill(command.t, *command.errors))
            # a period of state time since the last (either way: a simulator restarts)
            if abs(command.t - self.state_time) >= self.state_period - 1e-6:
                self._publish_state(command)
        self.log_core_events()

    def _publish_state(self, command):
        """~/controller_state in the joint modes, ~/current_pose in cartesian_impedance."""
        self.state_time = command.t
        _, q, qd = self.core.state
        if command.task is not None:
            for link, pub in zip(self.core.settings.cartesian.ee_link, self.current_pose_pubs):
                R, p = kinematics.frame_pose(self.core.model, q, link)
                pub.publish(self.pose_msg.fill(command.t, R, p))
        elif command.desired is not None and self.state_msg is not None:
            self.controller_state_pub.publish(self.state_msg.fill(
                command.t, command.desired, (q, qd), command.errors, command.tau))

    def shutdown(self):
        if self.core is not None:
            self.get_logger().info(self.core.compute_report())


def main(args=None):
    return run(ComputedTorqueController, args)


if __name__ == "__main__":
    raise SystemExit(main())
