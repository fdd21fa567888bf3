"""Where a node's model comes from: the `robot_description` parameter (URDF text, as launch
files pass it), else the `urdf_file` parameter (a path, .xacro works), else the
/robot_description topic (std_msgs/String, transient local, as robot_state_publisher publishes
it). A bad model stops the node with one line (StartupError).
"""

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from dyn_control.model.chain import URDFError, load_chain
from dyn_control.nodes.params import StartupError
from dyn_control.nodes.process import BUILDING


def model_text(node):
    """URDF text from the parameters, or None when it must come from the topic."""
    description = node.get_parameter("robot_description").value
    if description.strip():
        return description
    path = node.get_parameter("urdf_file").value
    return path if path.strip() else None


def build_chain(node, source):
    """load_chain from the node's parameters; StartupError with one line on any problem.

    -> (chain, order): the command order is the `joints` parameter's order (default: the
    chain's), and order[i] is the chain index of the i-th commanded joint.
    """
    joints = [j for j in node.get_parameter("joints").value if j]
    root = node.get_parameter("root_link").value or None
    tip = node.get_parameter("tip_link").value or None
    try:
        chain = load_chain(source, root_link=root, tip_link=tip, joints=joints or None)
    except URDFError as err:
        raise StartupError(f"robot model: {err}") from err
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
    node.create_subscription(String, "/robot_description", on_description, qos)
