"""dynamics_simulator: integrates the arm's forward dynamics under the last effort command.

Subscribes effort_controller/commands (std_msgs/Float64MultiArray, `joints` order), or the
topic of each of command_sources (its joints, in its order), and holds the last one, and
~/external_wrench (geometry_msgs/WrenchStamped: a push on the link named by frame_id, empty for
the tip link, in base axes at the link's origin, until the next one; a zero wrench ends it; a
stamp ahead of the simulated time holds it until then); publishes joint_states (every chain
joint: position, velocity, effort = applied torque) stamped with the simulation time,
~/applied_external_joint_torques (JointState: name and effort, the joint torques J^T w that the
push applied over the step before the state, with the state's stamp) with each state while a
push acts and once more when it ends (zeros), and /clock when publish_clock is true. The
simulated arm is dyn_control.sim.core; this node declares its parameters
(dyn_control.parameters.SIMULATOR), runs the stepping thread and moves messages.

The thread steps at most real_time_factor times as fast as the wall clock (0: as fast as it
can; its thread is stepper.py). Two ways to meet the controller:
- synchronous (default), as Gazebo and MuJoCo run ros2_control: after publishing a state it
  waits for the command that answers it (from every command source), then steps. A slow
  machine lowers the real-time factor instead of missing deadlines. After sync_timeout s of
  wall time without an answer (a dead controller, or a stall of its process on a busy
  machine) it steps on the last command and counts a miss, so a dead controller still lets
  time run, one step per sync_timeout. It never runs ahead of a stalled controller.
- free running (synchronous false), like hardware: it steps on the wall clock and never waits.
With wait_for_command (default) the joints stay braked, time running, until the first effort
command (from every source), so the arm does not fall while the controller starts.
"""

import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.exceptions import InvalidTopicNameException
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control.nodes import messages
from dyn_control.nodes.diagnostics import log_events, publish_diagnostics
from dyn_control.nodes.model_source import build_chain, configure_from_model
from dyn_control.nodes.params import (
    StartupError,
    declare_parameters,
    read_parameters,
    reliability,
    set_parameters_callback,
)
from dyn_control.nodes.process import ProcessNode, run
from dyn_control.nodes.stepper import Stepper
from dyn_control.parameters import SIMULATOR, payload_model
from dyn_control.sim.core import SimulatorCore, simulator_settings, split_entry


class DynamicsSimulator(ProcessNode):
    NODE_NAME = "dynamics_simulator"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.core = None
        declare_parameters(self, SIMULATOR)
        start = read_parameters(self, SIMULATOR)  # what the topics need, before the model
        self.stepper = None
        # command_type joint_state: the peer of ros2_control's topic-based hardware, with its
        # default topics (a reliable publisher reaches its best-effort reader too)
        self.by_name = start.command_type == "joint_state"
        self.state_pubs = []  # (publisher, its writer, chain indices), made in configure
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.truth_pub = self.create_publisher(JointState, "~/applied_external_joint_torques", 10)
        self.qos = reliability(start)  # of the commands' subscriptions, made in configure
        configure_from_model(self)
        if self.by_name:
            self.create_subscription(JointState, "robot_joint_commands", self.on_joint_command,
                                     self.qos)
        self.create_subscription(WrenchStamped, "~/external_wrench", self.on_external_wrench, 10)
        set_parameters_callback(self, SIMULATOR, self._apply)
        publish_diagnostics(self, self.status, stamp=lambda: self.core.sim.t)  # as its states

    def status(self):
        """/diagnostics: the core's, and the states the middleware refused (Stepper.failed)."""
        if self.core is None or self.stepper is None:
            return None
        level, message, values = self.core.diagnostics(time.monotonic())
        return level, message, {**values, "publish_failures": self.stepper.failed}

    def configure(self, source):
        # a world's joints, unless `joints` says otherwise: every robot's, in their order
        chain, self.order = build_chain(self, source, [
            joint for entry in read_parameters(self, SIMULATOR).robots
            for joint in split_entry(entry)[1]])
        try:
            p = read_parameters(self, SIMULATOR, chain, self.order)
            core = SimulatorCore(chain, simulator_settings(chain, p, self.order))
        except ValueError as err:
            raise StartupError(f"parameter {err}") from err
        if not self.by_name:  # each command source claims its joints (command_sources)
            for k, (topic, _) in enumerate(core.settings.sources):
                try:
                    self.create_subscription(Float64MultiArray, topic,
                                             lambda msg, k=k: self.on_command(msg, k), self.qos)
                except InvalidTopicNameException as err:
                    raise StartupError(f"parameter command_sources: '{topic}' is no topic name: "
                                       f"{err}") from err
        self.publish_clock = bool(p.publish_clock)
        # one robot: every joint on joint_states; a world: each robot's on its namespace's
        for ns, joints in core.settings.robots or (("", None),):
            topic = ("robot_joint_states" if self.by_name else
                     f"{ns.rstrip('/')}/joint_states" if ns else "joint_states")
            try:
                publisher = self.create_publisher(JointState, topic, 10)
            except InvalidTopicNameException as err:
                raise StartupError(f"parameter robots: '{ns}' is no namespace: {err}") from err
            names = chain.joint_names if joints is None else [chain.joint_names[i] for i in joints]
            self.state_pubs.append((publisher, messages.JointStateWriter(names, raw=True),
                                    joints))
        self.truth_msg = messages.JointStateWriter(chain.joint_names, ("effort",), raw=True)
        self.pushed = False
        # load (or on a first run compile) the step's kernel now, not in the first step
        SimulatorCore(chain, core.settings).sim.step(np.zeros(chain.n))
        self.core = core
        self.stepper = Stepper(self, core, self._publish, p.real_time_factor, p.sync_timeout)
        s, factor = core.settings, self.stepper.real_time_factor
        self.get_logger().info(
            f"{chain.n} joints {chain.joint_names}, dt {s.dt} s, {s.integrator}, publishing "
            f"every {s.publish_every} steps, "
            f"{'synchronous' if s.synchronous else 'free running'}, "
            + (f"real-time factor at most {factor:g}" if factor > 0 else "as fast as possible"))
        self._publish()
        self.stepper.start()

    def _apply(self, changes):
        """The payload is the one setting that changes at run time (the table fixes the rest)."""
        if self.core is not None:
            self.core.set_model(payload_model(self.core.chain, read_parameters(
                self, SIMULATOR, changes=changes)))

    def on_command(self, msg, source=0):
        """An effort command from command source `source`, in its joints' order."""
        if self.core is None:
            return
        topic, joints = self.core.settings.sources[source]
        try:
            tau = messages.read_effort_command(msg, len(joints))
        except messages.BadMessage as err:
            self.get_logger().warning(f"command on {topic} dropped: {err}",
                                      throttle_duration_sec=1.0)
            return
        self._take(tau, source)

    def on_joint_command(self, msg):
        """An effort command by name (command_type joint_state)."""
        if self.core is None:
            return
        try:
            tau = messages.read_joint_command(msg, self.core.chain.joint_names)
        except messages.BadMessage as err:
            self.get_logger().warning(f"command dropped: {err}", throttle_duration_sec=1.0)
            return
        self._take(tau)

    def _take(self, tau, source=None):
        self.core.on_command(time.monotonic(), tau, source)
        if self.core.answered:  # every source answered the state: the synchronous step may go
            self.stepper.answered.set()
        self.log_events()

    def log_events(self):
        log_events(self, self.core)

    def on_external_wrench(self, msg):
        if self.core is None:
            return
        try:
            stamp = messages.to_seconds(msg.header.stamp)  # 0: now; ahead: from then on
            self.core.push(messages.read_wrench(msg, "external_wrench"), msg.header.frame_id,
                           at=stamp if stamp > 0 else None)
        except ValueError as err:  # BadMessage too
            self.get_logger().warning(f"external_wrench dropped: {err}", throttle_duration_sec=1.0)
            return
        self.log_events()

    def _publish(self):
        sim = self.core.sim
        self.core.published(time.monotonic())
        self.stepper.answered.clear()
        # a stamp of 0 means "unstamped" to ROS (the controller takes its own clock for it, on
        # another time base when the two clocks differ), so the state at t = 0 is stamped 1 ns
        measured = self.core.measured()
        for publisher, writer, joints in self.state_pubs:
            publisher.publish(writer.fill(max(sim.t, 1e-9), *(
                measured if joints is None else (x[joints] for x in measured))))
        pushed = sim.external_torques.any()
        if pushed or self.pushed:
            self.truth_pub.publish(self.truth_msg.fill(max(sim.t, 1e-9), sim.external_torques))
        self.pushed = pushed
        if self.publish_clock:
            self.clock_pub.publish(Clock(clock=messages.to_stamp(sim.t)))

    def shutdown(self):
        if self.stepper is not None:
            self.stepper.stop()
        if self.core is not None and self.core.states:
            self.get_logger().info(self.core.deadline_report(time.monotonic()))


def main(args=None):
    return run(DynamicsSimulator, args)


if __name__ == "__main__":
    raise SystemExit(main())
