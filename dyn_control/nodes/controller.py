"""computed_torque_controller: joint states + desired trajectory -> effort commands.

Subscribes /joint_states (sensor_msgs/JointState) and ~/joint_trajectory
(trajectory_msgs/JointTrajectory); serves ~/follow_joint_trajectory
(control_msgs/action/FollowJointTrajectory, as joint_trajectory_controller: the way MoveIt
drives an arm); publishes /effort_controller/commands (std_msgs/Float64MultiArray in `joints`
order, for ros2_control's forward_command_controller with interface_name: effort), ~/reference
(JointState: q_d, qd_d, tau), ~/error (JointState: e, ed) and ~/controller_state
(control_msgs/msg/JointTrajectoryControllerState); with the external-torque observer,
~/external_joint_torques and ~/external_wrench_in_base_frame
(controller_topics.ContactTopics); ~/reset_collision (std_srvs/Trigger: clears a latched
collision or velocity fault); ~/teach/record (std_srvs/SetBool: true starts recording the joint
states, false writes them as a rosbag2 folder under teach.folder, its path in the answer's
message: dyn_control.controller.teach); ~/markers for RViz (markers.MarkerTopic). The controller
itself is dyn_control.controller.core; this node declares its parameters (dyn_control.parameters.
CONTROLLER), turns messages into calls and commands into messages. With thread_priority set,
the threads that tick run under SCHED_FIFO from their first tick, as controller_manager's update
loop (dyn_control.nodes.realtime).
"""

import time

from rclpy.clock import Clock, ClockType
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from dyn_control.controller.core import ControllerCore, warm_up
from dyn_control.controller.settings import controller_settings
from dyn_control.controller.teach import Recording
from dyn_control.nodes import messages, trajectory_action
from dyn_control.nodes.clock_check import ClockCheck
from dyn_control.nodes.controller_topics import CartesianTargets, CommandTopics, ContactTopics
from dyn_control.nodes.diagnostics import log_events, publish_diagnostics
from dyn_control.nodes.markers import MarkerTopic
from dyn_control.nodes.model_source import build_chain, configure_from_model
from dyn_control.nodes.params import (
    StartupError,
    declare_parameters,
    read_parameters,
    reliability,
    set_parameters_callback,
)
from dyn_control.nodes.process import ProcessNode, run
from dyn_control.nodes.realtime import Scheduling
from dyn_control.parameters import CONTROLLER


class ComputedTorqueController(ProcessNode):
    NODE_NAME = "computed_torque_controller"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.core = None
        self.clock = ClockCheck(self)
        declare_parameters(self, CONTROLLER)
        start = read_parameters(self, CONTROLLER)  # what the topics need, before the model
        self.scheduling = Scheduling(start.thread_priority, start.lock_memory)
        self.publish_failures = 0  # commands the middleware refused (_publish)
        self.topics = CommandTopics(self)
        # The watchdog's clock: with use_sim_time, a simulator that waits for a busy machine
        # stops its clock, so a slow CPU is not a stale state. Otherwise the steady clock.
        # Before the first /clock, simulated time reads 0, which is not the simulator's time: a
        # simulator braked while the controller starts is already past state_timeout (0.26 s
        # seen with the kernels compiling), and a first state seen "at 0" read as a stale spell.
        clock = self.get_clock()
        self._now = (time.monotonic if not self.get_parameter("use_sim_time").value
                     else lambda: clock.now().nanoseconds * 1e-9 or None)
        configure_from_model(self)
        # depth 1: when a tick runs late, the next one uses the newest state, never a backlog.
        # Raw: the state's bytes, read without building a message (messages.JointStateBytes)
        self.state_bytes = messages.JointStateBytes()
        self.create_subscription(JointState, "joint_states", self.on_state_bytes,
                                 reliability(start), raw=True)
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_trajectory, 10)
        self.targets = CartesianTargets(self, self.topics, start.ee_links)
        self.recording = None  # teach.Recording while ~/teach/record runs
        self.create_service(Trigger, "~/reset_collision", self.on_reset)
        self.create_service(SetBool, "~/teach/record", self.on_record)
        self.markers = MarkerTopic(self)
        set_parameters_callback(self, CONTROLLER, self._apply)
        publish_diagnostics(self, self.status)

    def status(self):
        """/diagnostics: the core's, and whether ~/follow_joint_trajectory is served."""
        if self.core is None:
            return None
        level, message, values = self.core.diagnostics()
        action = "served" if trajectory_action.AVAILABLE else "off: control_msgs not installed"
        recording = self.recording  # (another thread may end it)
        values = {**values, "follow_joint_trajectory": action,
                  "teach_recording_states": -1 if recording is None else len(recording)}
        if self.clock.offset is not None:
            values["clock_offset_s"] = round(self.clock.offset, 3)
        return level, message, {**values, **self.scheduling.status,
                                "publish_failures": self.publish_failures}

    def configure(self, source):
        chain, self.order = build_chain(self, source)
        declare_parameters(self, CONTROLLER.for_joints(chain.joint_names))  # constraints.<joint>
        try:
            p = read_parameters(self, CONTROLLER, chain, self.order)
            core = ControllerCore(controller_settings(chain, p))
        except ValueError as err:
            raise StartupError(f"parameter {err}") from err
        self.chain, self.names = chain, [chain.joint_names[i] for i in self.order]
        self.teach_folder = p.teach.folder
        self.reader = messages.JointStateReader(chain.joint_names)
        self.topics.configure(chain, self.order, p.state_publish_rate)
        warm_up(core.settings)  # compile or load the kernels now, not in the first tick
        self.contact_topics = (None if core.settings.contact is None else ContactTopics(
            self, core.settings.cartesian.ee_link, chain,
            p.external_torque.publish_rate))
        self.core = core
        if trajectory_action.AVAILABLE:
            port = trajectory_action.GoalPort(self.offer, self.cancel, core.feedback)
            self.action = trajectory_action.TrajectoryAction(
                self, port, chain.joint_names, p.action_monitor_rate)
        else:
            self.get_logger().info(trajectory_action.MISSING)
        if core.settings.rate > 0:
            self.create_timer(1.0 / core.settings.rate, self.on_rate)
        self.create_timer(core.watchdog.period, lambda: self.on_watchdog(),  # (no TimerInfo)
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"{chain.n} joints {self.names} from '{chain.root_link}' to "
            f"{', '.join(repr(t) for t in chain.tip_links)}, mode {core.settings.mode}")

    def _apply(self, changes):
        """Parameters changed at run time (already checked by the table) -> the core."""
        if self.core is not None:
            self.core.configure(controller_settings(self.chain, read_parameters(
                self, CONTROLLER, self.chain, self.order, changes)))

    def on_rate(self):
        self._ticking()
        self._send(self.core.tick())

    def on_watchdog(self, now=None):
        """The watchdog's tick at `now` (default: the watchdog's clock now, none before it
        runs).
        """
        self._ticking()
        now = self._now() if now is None else now
        if now is not None:
            self._send(self.core.update(now))

    def _ticking(self):
        """This thread runs ticks: under the real-time scheduling, from its first
        (nodes.realtime), the kernels compiled by then.
        """
        refused = self.scheduling.enter()
        if refused:
            self.get_logger().warning(refused)

    def on_state_bytes(self, data):
        """A joint state as its serialized bytes: the controlled joints read straight from them
        in the common case (messages.JointStateBytes.state), else parsed in place where it is
        plain CDR (what Fast DDS sends), else deserialized by rclpy.
        """
        state = None if self.core is None else self.state_bytes.state(data, self.reader)
        if state is not None:
            self._on_state(*state)
            return
        msg = self.state_bytes.parse(data)
        if msg is None:
            try:
                msg = deserialize_message(data, JointState)
            except RuntimeError as err:  # rclpy's RMWError
                self.get_logger().warning(f"joint state ignored: not a JointState ({err})",
                                          throttle_duration_sec=1.0)
                return
        self.on_joint_state(msg)

    def on_joint_state(self, msg):
        if self.core is None:
            return
        try:
            q, qd = self.reader.read(msg)
        except messages.BadMessage as err:
            self.get_logger().warning(f"joint state ignored: {err}", throttle_duration_sec=1.0)
            return
        self._on_state(messages.to_seconds(msg.header.stamp), q, qd, self.reader.effort(msg))

    def _on_state(self, stamp, q, qd, effort):
        """A good joint state of the controlled joints (chain order), its measured effort or
        None.
        """
        self._ticking()
        if stamp <= 0:  # unstamped: the node's clock
            stamp = self.get_clock().now().nanoseconds * 1e-9
        else:
            self.clock.check(stamp)
        now = self._now()
        command = self.core.update(stamp if now is None else now, (stamp, q, qd), effort,
                                   send=self._publish)  # out before the observe stage
        self._send(command, published=True)
        if self.recording is not None:
            self.recording.add(stamp, q, qd, 0.0 * q if effort is None else effort)

    def on_reset(self, request, response):
        if self.core is None:
            response.success, response.message = False, "refused: the controller has no model yet"
        else:
            response.success, response.message = self.core.reset_collision()
            self.log_core_events()
        return response

    def on_record(self, request, response):
        """~/teach/record: data true starts a recording (again: it starts over), false saves
        it; the answer's message says where, or why not.
        """
        if self.core is None:
            response.success, response.message = False, "refused: the controller has no model yet"
        elif request.data:
            self.recording = Recording(self.chain.joint_names)
            response.success, response.message = True, "recording the joint states"
        elif self.recording is None:
            response.success, response.message = False, "refused: no recording running"
        else:
            recording, self.recording = self.recording, None
            try:
                path = recording.save(self.teach_folder)
            except (ValueError, OSError) as err:
                response.success, response.message = False, f"not saved: {err}"
            else:
                response.success, response.message = True, str(path.resolve())
                self.get_logger().info(f"{len(recording)} joint states recorded in {path}")
        return response

    def on_trajectory(self, msg):
        if self.core is not None:
            self.offer(messages.trajectory_request(msg))

    def offer(self, request):
        """A goal (goals.Request) from the topic or the action -> the core's Goal."""
        goal = self.core.offer(request)
        self.log_core_events()
        return goal

    def cancel(self, goal):
        """Cancel a goal of the action; whether it was running."""
        canceled = self.core.cancel(goal)
        self.log_core_events()
        return canceled

    def log_core_events(self):
        if self.core.events:
            log_events(self, self.core)

    def _publish(self, command):
        try:
            self.topics.publish(command, self.core)
        except RuntimeError as err:  # rclpy's RCLError: the middleware refused a write (Fast
            # DDS on a starved machine): this tick's messages are lost, the next tick's go out
            self.publish_failures += 1
            self.get_logger().warning(f"a command was not published: {err}",
                                      throttle_duration_sec=1.0)

    def _send(self, command, published=False):
        if command is not None:
            if not published:
                self._publish(command)
            if self.contact_topics is not None:
                self.contact_topics.publish(command.t, self.core)
        self.log_core_events()

    def shutdown(self):
        if self.core is not None:
            self.get_logger().info(self.core.compute_report())


def main(args=None):
    return run(ComputedTorqueController, args)


if __name__ == "__main__":
    raise SystemExit(main())
