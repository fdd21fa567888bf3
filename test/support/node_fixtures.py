"""What the in-process node tests share: the default arm's names and pose, a controller
node made with the tests' overrides, captured publishers, and the messages they feed.
"""

import copy
import time

import numpy as np
import pytest
from conftest import CONFIG_DIR, URDF_DIR

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from dyn_control.nodes import messages  # noqa: E402
from dyn_control.nodes.controller import ComputedTorqueController  # noqa: E402
from harness.processes import node_parameters  # noqa: E402

ARM = str(URDF_DIR / "default_arm.urdf")


NAMES = [f"joint{i}" for i in range(1, 8)]


Q = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])


def config_overrides(name, node):
    params = node_parameters(CONFIG_DIR / f"{name}.yaml", node)
    assert params, f"config/{name}.yaml gives {node} nothing"
    return [Parameter(k, value=v) for k, v in params.items()]


class Captured:
    """Replaces a publisher's publish() to keep copies of what the node sends (a real publish
    serializes at once, so the node refills the same message objects tick after tick).
    """

    def __init__(self, publisher):
        self.messages = []
        publisher.publish = lambda msg: self.messages.append(
            deserialize_message(msg, publisher.msg_type) if isinstance(msg, bytes)
            else copy.deepcopy(msg))  # bytes: what rclpy's publish_raw sends, read as rclpy does


def make_controller(**params):
    """The controller node on the default arm, with params. The states these tests feed are
    made up (the arm does not follow the torques), which the external-torque observer rightly
    reads as a collision: it is off here (test_contact_loop runs it over DDS). These tests
    check the law's torques from the first state on, so the soft start and the rate limit are
    off unless a test sets them (test_limits.py checks them on the defaults). The ticks run
    in the test's own thread: under the default scheduling (thread_priority 0).
    """
    params = {"external_torque.enabled": False, "max_effort_rate": 0.0, "soft_start": 0.0,
              "thread_priority": 0, **params}
    overrides = config_overrides("controller", "computed_torque_controller")
    overrides += [Parameter("urdf_file", value=ARM)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    node = ComputedTorqueController(parameter_overrides=overrides)
    topics = node.topics
    return (node, Captured(topics.effort_pub), Captured(topics.reference_pub),
            Captured(topics.error_pub))


def expected_command(node, t, q, qd):
    """Reference: the node's law on its trajectory at t, as a tick computes it (no tick)."""
    return node.core.law(q, qd, *node.core.goals.trajectory.sample(t))[0]


def state_msg(t, names, q, qd=None):
    return messages.joint_state(names, t, q, np.zeros(len(q)) if qd is None else qd)


def trajectory_msg(names, times, positions, velocities=None, accelerations=None, stamp=0.0):
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = messages.to_stamp(stamp)
    for k, t in enumerate(times):
        point = JointTrajectoryPoint(positions=list(map(float, positions[k])),
                                     time_from_start=messages.to_duration(t))
        if velocities is not None:
            point.velocities = list(map(float, velocities[k]))
        if accelerations is not None:
            point.accelerations = list(map(float, accelerations[k]))
        msg.points.append(point)
    return msg


def wait_until(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def go_stale(node, q):
    """A good state, then silence longer than state_timeout, then one watchdog tick."""
    node.on_joint_state(state_msg(1.0, NAMES, q))
    node.on_watchdog(node.core.watchdog.last_seen + node.core.watchdog.timeout + 0.05)


def pose_msg(R, p, frame="", quaternion=None):
    from geometry_msgs.msg import PoseStamped

    from dyn_control.kinematics import matrix_quaternion
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = quaternion if quaternion is not None else matrix_quaternion(R)
    return msg


def ros_domain(domain):
    """A module-scoped autouse fixture: rclpy on its own domain for a test module's nodes."""
    @pytest.fixture(scope="module", autouse=True)
    def ros():
        rclpy.init(domain_id=domain)
        yield
        rclpy.shutdown()
    return ros
