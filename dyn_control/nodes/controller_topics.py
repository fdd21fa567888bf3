"""computed_torque_controller's topics besides its input: what it publishes for each command,
and the cartesian_impedance targets it takes (crisp_controllers' names). With several ee_links
each has its own ~/<link>/target_pose, target_wrench and current_pose; the posture is shared.
"""

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control import kinematics
from dyn_control.nodes import messages, trajectory_action
from dyn_control.nodes.diagnostics import warn_throttled
from dyn_control.nodes.params import StartupError


class CommandTopics:
    """/effort_controller/commands, ~/reference, ~/error, and at state_publish_rate
    ~/controller_state (joint modes) or ~/current_pose (cartesian_impedance).
    """

    def __init__(self, node):
        self.effort_pub = node.create_publisher(Float64MultiArray, "effort_controller/commands",
                                                10)
        # history 10: a subscriber that wants every sample keeps a deep queue of its own (the
        # recorder keeps 1000); resending a long history to a lagging one costs the loop CPU
        self.reference_pub = node.create_publisher(JointState, "~/reference", 10)
        self.error_pub = node.create_publisher(JointState, "~/error", 10)
        self.state_pub = (node.create_publisher(trajectory_action.JointTrajectoryControllerState,
                                                "~/controller_state", 10)
                          if trajectory_action.AVAILABLE else None)
        self.pose_pubs = []  # ~/current_pose of each ee_link (CartesianTargets makes them)

    def configure(self, chain, order, state_rate):
        # as bytes (messages.Serialized): after the command, each tick, where they take CPU
        # from whatever receives the command on the same host
        self.reference_msg = messages.JointStateWriter(chain.joint_names, raw=True)
        self.error_msg = messages.JointStateWriter(chain.joint_names, ("position", "velocity"),
                                                   raw=True)
        self.effort_msg = messages.EffortWriter(order)
        self.state_msg = trajectory_action.controller_state_writer(chain.joint_names)
        self.pose_msg = messages.PoseWriter(PoseStamped, chain.root_link)
        self.state_period = 1.0 / state_rate
        self.state_time = -np.inf  # stamp of the last ~/controller_state or ~/current_pose

    def publish(self, command, core):
        """A command from the core -> the effort message, and reference, error and, a period of
        state time after the last (either way: a simulator restarts), the state or pose.
        """
        self.effort_pub.publish(self.effort_msg.fill(command.tau))
        if command.desired is not None:
            q_d, qd_d, _ = command.desired
            self.reference_pub.publish(self.reference_msg.fill(command.t, q_d, qd_d, command.tau))
            self.error_pub.publish(self.error_msg.fill(command.t, *command.errors))
        if abs(command.t - self.state_time) < self.state_period - 1e-6:
            return
        self.state_time = command.t
        _, q, qd = core.state
        if command.task is not None:
            for link, pub in zip(core.settings.cartesian.ee_link, self.pose_pubs):
                R, p = kinematics.frame_pose(core.model, q, link)
                pub.publish(self.pose_msg.fill(command.t, R, p))
        elif command.desired is not None and self.state_msg is not None:
            self.state_pub.publish(self.state_msg.fill(
                command.t, command.desired, (q, qd), command.errors, command.tau))


class CartesianTargets:
    """~/target_pose, ~/target_wrench, ~/target_joint -> the node's core; in the joint modes, or
    bad, a target is refused (said, throttled) and the last good one stays. It makes each
    ee_link's ~/current_pose publisher too, into topics.pose_pubs.
    """

    def __init__(self, node, topics, ee_links):
        self.node = node
        links = [link for link in ee_links if link]
        for k, prefix in enumerate([f"~/{link}/" for link in links] or ["~/"]):
            try:
                node.create_subscription(PoseStamped, prefix + "target_pose",
                                         lambda msg, k=k: self.on_pose(msg, k), 10)
                node.create_subscription(WrenchStamped, prefix + "target_wrench",
                                         lambda msg, k=k: self.on_wrench(msg, k), 10)
                topics.pose_pubs.append(node.create_publisher(PoseStamped, prefix + "current_pose",
                                                              10))
            except Exception as err:  # rclpy's InvalidTopicNameException
                raise StartupError(f"parameter ee_links: '{links[k]}' makes no topic name "
                                   f"({prefix}target_pose): {err}") from err
        node.create_subscription(JointState, "~/target_joint", self.on_joint, 10)

    def on_pose(self, msg, frame=0):
        self._take("target_pose", lambda core, chain: core.set_target_pose(
            *messages.read_pose(msg, chain.root_link), frame))

    def on_wrench(self, msg, frame=0):
        self._take("target_wrench", lambda core, chain: core.set_target_wrench(
            messages.read_wrench(msg, "target_wrench", chain.root_link), frame))

    def on_joint(self, msg):
        self._take("target_joint", lambda core, chain: core.set_target_joint(
            *messages.read_posture(msg, chain.joint_names)))

    def _take(self, what, take):
        node = self.node
        if node.core is None:
            return
        try:
            take(node.core, node.chain)
        except ValueError as err:  # BadMessage too
            warn_throttled(node, what, str(err) if str(err).startswith(what) else
                           f"{what} refused: {err}")


class ContactTopics:
    """The observe stage's topics, with franka_ros2's names (franka_robot_state_broadcaster),
    and its sign: what the robot applies to the world, the opposite of the observer's r.
    At external_torque.publish_rate (state time): ~/external_joint_torques (JointState: name,
    effort N m or N), and ~/external_wrench_in_base_frame (WrenchStamped, frame_id the root
    link) at ee_link, or ~/<link>/external_wrench_in_base_frame for each of several.
    """

    def __init__(self, node, ee_links, chain, rate):
        self.node = node
        self.torque_pub = node.create_publisher(JointState, "~/external_joint_torques", 10)
        self.torque_msg = messages.JointStateWriter(chain.joint_names, ("effort",))
        prefixes = [f"~/{link}/" for link in ee_links] if len(ee_links) > 1 else ["~/"]
        self.wrench_pubs = [node.create_publisher(WrenchStamped,
                                                  prefix + "external_wrench_in_base_frame", 10)
                            for prefix in prefixes]
        self.wrench_msg = WrenchStamped()
        self.wrench_msg.header.frame_id = chain.root_link
        self.period, self.time = 1.0 / rate, -np.inf

    def publish(self, t, core):
        """The estimate at state time t, a period after the last (either way: a restart)."""
        if abs(t - self.time) < self.period - 1e-6 or not core.observing:
            return
        self.time = t
        self.torque_pub.publish(self.torque_msg.fill(t, -core.external_torques()))
        forces = core.contact_wrenches(core.state[1])
        messages.set_stamp(self.wrench_msg.header.stamp, t)
        w = self.wrench_msg.wrench
        for pub, F in zip(self.wrench_pubs, -forces):
            (w.force.x, w.force.y, w.force.z), (w.torque.x, w.torque.y, w.torque.z) = F[:3], F[3:]
            pub.publish(self.wrench_msg)
