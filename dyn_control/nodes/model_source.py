"""Where a node's model comes from: the `robot_description` parameter (URDF text, as launch
files pass it), else the `urdf_file` parameter (a path, .xacro works), else the
robot_description topic in the node's namespace (std_msgs/String, transient local, as
robot_state_publisher publishes it). A bad model stops the node with one line (StartupError).
"""

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from dyn_control.model.chain import URDFError, load_chain, refused_limits
from dyn_control.nodes.params import StartupError, read_parameters
from dyn_control.nodes.process import BUILDING
from dyn_control.parameters import MODEL, Table

SOURCE = Table("model", *MODEL)  # the parameters that every node with a model declares


def model_text(node):
    """URDF text from the parameters, or None when it must come from the topic."""
    p = read_parameters(node, SOURCE)
    if p.robot_description.strip():
        return p.robot_description
    return p.urdf_file if p.urdf_file.strip() else None


def build_chain(node, source, default_joints=()):
    """load_chain from the node's parameters; StartupError with one line on any problem.

    -> (chain, order): the command order is the `joints` parameter's order (default:
    default_joints', else the chain's), and order[i] is the chain index of the i-th commanded
    joint.
    """
    p = read_parameters(node, SOURCE)
    joints = [j for j in p.joints if j] or list(default_joints)
    try:
        chain = load_chain(source, root_link=p.root_link or None, tip_link=p.tip_link or None,
                           joints=joints or None)
    except URDFError as err:
        raise StartupError(f"robot model: {err}") from err
    unlimited = [j for j in p.unlimited_joints if j]
    refused = refused_limits(chain, unlimited)
    if refused:
        raise StartupError(f"robot model: {refused}")
    for joint, line in chain.limit_findings:  # each one named in unlimited_joints: run so, said
        node.get_logger().warning(f"{line}: runs without it (unlimited_joints names '{joint}')")
    if chain.locked_joints:  # a gripper below the arm's tip, say
        node.get_logger().info(
            f"joints {list(chain.locked_joints)} are not controlled: locked at their zero "
            f"position and lumped into the body of '{chain.tip_link}' and the links above it")
    names = joints or chain.joint_names
    return chain, np.array([chain.joint_names.index(name) for name in names])


def configure_from_model(node):
    """node.configure(urdf_text) now from the parameters, or when /robot_description arrives
    (latched, robot_state_publisher's QoS). A StartupError from the topic path stops the node
    through node.fatal, as one from the constructor does.
    """
    source = model_text(node)
    if source is not None:
        node.configure(source)
        return
    node.get_logger().info("waiting for the robot model on /robot_description")
    loaded = []

    def on_description(msg):
        if loaded:
            return
        loaded.append(True)
        BUILDING.set()  # compiling on a first run takes seconds: a signal ends it (see run)
        try:
            node.configure(msg.data)
        except StartupError as err:
            node.fatal = err
        finally:
            BUILDING.clear()

    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(String, "robot_description", on_description, qos)
