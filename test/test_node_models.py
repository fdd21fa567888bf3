"""The controller node's model and its Cartesian side, in-process with real rclpy: the model
from /robot_description, a payload at run time, Cartesian targets and ee_links, and
~/markers for RViz.

References: the pure functions the nodes wrap (the core's law on arrays, Trajectory), closed
forms for interpolation, to 1e-9.
"""

import os
import subprocess
import time

import numpy as np
import pytest
from conftest import URDF_DIR

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from node_fixtures import (  # noqa: E402
    ARM,
    NAMES,
    Captured,
    Q,
    make_controller,
    pose_msg,
    ros_domain,
    state_msg,
    trajectory_msg,
)
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from dyn_control.nodes import messages  # noqa: E402
from dyn_control.nodes.controller import ComputedTorqueController  # noqa: E402
from harness.processes import executable, ros_args  # noqa: E402

DOMAIN = 149  # and DOMAIN + 1 for the processes a test starts
ros = ros_domain(DOMAIN)


def test_model_from_the_robot_description_topic():
    """No model parameter: the controller configures from /robot_description (latched, as
    robot_state_publisher publishes it), and a bad URDF there stops it through `fatal`.
    """
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    for text, ok in (((URDF_DIR / "default_arm.urdf").read_text(), True),
                     ("<robot name='x'><link name='a'/></robot>", False)):
        peer = rclpy.create_node("description_publisher")
        peer.create_publisher(String, "/robot_description", latched).publish(String(data=text))
        # thread_priority 0: its watchdog ticks in this thread, the test's
        node = ComputedTorqueController(
            parameter_overrides=[Parameter("thread_priority", value=0)])
        executor = rclpy.executors.SingleThreadedExecutor()
        executor.add_node(node)
        executor.add_node(peer)
        try:
            assert node.core is None
            deadline = time.monotonic() + 10
            while node.core is None and node.fatal is None and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            if ok:
                assert node.core is not None and node.names == NAMES
            else:
                assert node.core is None and "no movable joint" in str(node.fatal)
        finally:
            executor.shutdown()
            peer.destroy_node()
            node.destroy_node()


def test_payload_at_run_time_changes_the_model_and_a_bad_one_is_refused():
    from dyn_control import gravity_torques
    node, effort, *_ = make_controller()
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))  # at rest on target: tau = g(q)
        np.testing.assert_allclose(effort.messages[-1].data, gravity_torques(node.chain, Q),
                                   atol=1e-9)
        assert node.set_parameters([Parameter("payload_mass", value=2),  # an integer works too
                                    Parameter("payload_com", value=[0.0, 0.0, 0.1])])[0].successful
        node.on_joint_state(state_msg(1.001, NAMES, Q))
        # the next tick holds with the loaded model: reference, g(q) of with_payload (static)
        heavy = node.chain.with_payload(2.0, (0.0, 0.0, 0.1))
        np.testing.assert_allclose(effort.messages[-1].data, gravity_torques(heavy, Q), atol=1e-9)
        model = node.core.model
        for name, value, reason in (
                ("payload_mass", -1.0, "payload_mass must be finite and >= 0 kg, got -1.0"),
                ("payload_com", [0.0, float("nan"), 0.0],
                 "payload_com must be a finite number or a list of them, got [0.0, nan, 0.0] "
                 "(item 1: nan, float)"),
                ("payload_inertia", [0.01, 0.01, 0.05, 0.0, 0.0, 0.0], "triangle inequality"),
                ("payload_inertia", [0.01, 0.01, 0.01, 0.05, 0.0, 0.0],
                 "not positive semi-definite"),
                ("payload_link", "gripper",
                 "payload_link 'gripper' is not a link the chain moves")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and reason in result.reason, result.reason
            assert node.core.model is model  # the old payload stays
        assert node.set_parameters([Parameter("payload_mass", value=0.0)])[0].successful
        np.testing.assert_array_equal(node.core.model.mass, node.chain.mass)  # mass 0: no payload
    finally:
        node.destroy_node()


def test_cartesian_targets_are_taken_and_bad_ones_refused_naming_the_field(capfd):
    from geometry_msgs.msg import WrenchStamped

    from dyn_control import kinematics
    node, effort, *_ = make_controller(mode="cartesian_impedance")
    poses = Captured(node.topics.pose_pubs[0])
    try:
        node.on_joint_state(state_msg(1.0, NAMES, Q))  # enters the mode: the target is here
        R, p = kinematics.frame_pose(node.chain, Q)
        np.testing.assert_allclose(node.core.target.task.target[1], p, atol=1e-12)
        assert poses.messages and poses.messages[-1].header.frame_id == "base_link"
        np.testing.assert_allclose([poses.messages[-1].pose.position.x,
                                    poses.messages[-1].pose.position.y,
                                    poses.messages[-1].pose.position.z], p, atol=1e-12)
        node.targets.on_pose(pose_msg(R, p + [0.02, 0.0, 0.0]))
        np.testing.assert_allclose(node.core.target.task.target[1], p + [0.02, 0.0, 0.0])
        good = node.core.target.task.target
        for bad, reason in ((pose_msg(R, [np.nan, 0, 0]), "target_pose position has a non-finite"),
                            (pose_msg(R, p, quaternion=(0, 0, 0, 0)),
                             r"not a unit quaternion \(norm 0\)"),
                            (pose_msg(R, p, quaternion=(0, 0, 0, 1.2)),
                             r"not a unit quaternion \(norm 1.2\)"),
                            (pose_msg(R, p, frame="world"),
                             "frame_id 'world' is not the chain's root link")):
            with pytest.raises(messages.BadMessage, match=reason):
                messages.read_pose(bad, "base_link")
            node.targets.on_pose(bad)  # (logged, throttled to one line a second)
            assert node.core.target.task.target is good  # the last good target stays
        assert "target_pose position has a non-finite" in capfd.readouterr().err
        wrench = WrenchStamped()
        wrench.wrench.force.x = 3.0
        node.targets.on_wrench(wrench)
        np.testing.assert_array_equal(node.core.target.task.wrench, [3.0, 0, 0, 0, 0, 0])
        node.targets.on_joint(JointState(name=["joint4"], position=[-1.0]))
        assert node.core.target.task.posture[3] == -1.0 and node.core.target.task.posture[0] == Q[0]
        node.targets.on_joint(JointState(name=["elbow"], position=[0.0]))
        assert "target_joint names unknown joint 'elbow'" in capfd.readouterr().err
        assert node.core.target.task.posture[3] == -1.0
        for name, value, reason in (("cartesian_stiffness", [-1.0] * 6,
                                     "cartesian_stiffness must be finite and >= 0"),
                                    ("cartesian_stiffness", [1.0] * 5,
                                     "cartesian_stiffness must be a scalar or 6"),
                                    ("ee_link", "nowhere",
                                     "ee_link 'nowhere' is not a link the chain moves"),
                                    ("max_pose_error", [0.1, 0.2, 0.3],
                                     "max_pose_error must be a scalar or 2"),
                                    ("target_filter", -1.0, "target_filter must be >= 0")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and reason in result.reason, result.reason
        # back to a joint mode: the targets are refused, the arm holds where it is
        assert node.set_parameters([Parameter("mode", value="computed_torque")])[0].successful
        with pytest.raises(ValueError, match="target_pose ignored: the controller is in "
                                             "computed_torque mode"):
            node.core.set_target_pose(R, p)
    finally:
        node.destroy_node()


@pytest.mark.parametrize("links, named", [({"ee_link": "gripper"}, "ee_link 'gripper'"),
                                          ({"ee_links": ["link7", "gripper"]},
                                           "ee_link 'gripper'")])
def test_a_cartesian_mode_with_an_unknown_ee_link_stops_the_node_with_one_line(links, named):
    res = subprocess.run([executable("computed_torque_controller"), *ros_args(params={
        "urdf_file": ARM, "mode": "cartesian_impedance", **links})],
        capture_output=True, text=True, timeout=60, env={**os.environ,
                                                         "ROS_DOMAIN_ID": str(DOMAIN + 1)})
    lines = [line for line in (res.stdout + res.stderr).splitlines() if "error" in line.lower()]
    assert res.returncode == 1 and len(lines) == 1 and named in lines[0], res.stderr


def test_markers_show_the_walls_and_delete_them_with_the_limits_off():
    """~/markers' "walls": the box of limits.workspace_min/max as a cube centred in it with its
    size (1e-12 m), a side further out than WALL_SHOWN_M drawn there; deleted when the
    limits are off.
    """
    from visualization_msgs.msg import Marker

    from dyn_control.nodes.markers import WALL_SHOWN_M
    node, *_ = make_controller(**{"limits.workspace_min": [-0.4, -0.5, 0.1],
                                  "limits.workspace_max": [0.6, 0.5, 10.0]})
    markers = Captured(node.markers.pub)
    try:
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        node.markers.publish()
        wall = {m.ns: m for m in markers.messages[-1].markers}["walls"]
        assert wall.type == Marker.CUBE and wall.action == Marker.ADD
        assert wall.header.frame_id == "base_link" and 0 < wall.color.a < 1
        centre = [wall.pose.position.x, wall.pose.position.y, wall.pose.position.z]
        np.testing.assert_allclose(centre, [0.1, 0.0, (0.1 + WALL_SHOWN_M) / 2], atol=1e-12)
        np.testing.assert_allclose([wall.scale.x, wall.scale.y, wall.scale.z],
                                   [1.0, 1.0, WALL_SHOWN_M - 0.1], atol=1e-12)
        assert node.set_parameters([Parameter("limits.enabled", value=False)])[0].successful
        node.markers.publish()
        assert {m.ns: m for m in markers.messages[-1].markers}["walls"].action == Marker.DELETE
    finally:
        node.destroy_node()


def test_markers_show_the_desired_hand_path_the_target_pose_and_a_push():
    """~/markers: the desired path's points are the hand's forward kinematics along the
    trajectory (ends: the held start and the goal, 1e-9 m); in cartesian_impedance the target
    arrow sits at the target pose; an external wrench above PUSH_SHOWN_N is an arrow ending at
    the hand, 1 cm per N; what no longer applies is deleted.
    """
    from visualization_msgs.msg import Marker

    from dyn_control import kinematics
    from dyn_control.nodes.markers import METRES_PER_NEWTON
    node, *_ = make_controller()
    markers = Captured(node.markers.pub)
    try:
        # the topic the shipped RViz view shows
        from conftest import rviz_displays
        shown = rviz_displays()["rviz_default_plugins/MarkerArray"]["Topic"]["Value"]
        assert node.markers.pub.topic_name == shown
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        node.on_trajectory(trajectory_msg(NAMES, [1.0], [Q + 0.2]))
        node.markers.publish()
        by_ns = {m.ns: m for m in markers.messages[-1].markers}
        path = by_ns["desired_path"]
        assert path.type == Marker.LINE_STRIP and path.action == Marker.ADD
        assert path.header.frame_id == "base_link"
        ends = np.array([[p.x, p.y, p.z] for p in (path.points[0], path.points[-1])])
        for q, end in zip((Q, Q + 0.2), ends):
            np.testing.assert_allclose(end, kinematics.frame_pose(node.chain, q)[1], atol=1e-9)
        # joint mode, no observer
        assert by_ns["target"].action == by_ns["push"].action == Marker.DELETE
        assert node.set_parameters([Parameter("mode", value="cartesian_impedance")])[0].successful
        node.on_joint_state(state_msg(2.1, NAMES, Q))  # enters the mode: the target is here
        R, p = kinematics.frame_pose(node.chain, Q)
        node.targets.on_pose(pose_msg(R, p + [0.05, 0.0, 0.0]))
        node.markers.publish()
        target = {m.ns: m for m in markers.messages[-1].markers}["target"]
        assert target.type == Marker.ARROW and target.action == Marker.ADD
        np.testing.assert_allclose([target.pose.position.x, target.pose.position.y,
                                    target.pose.position.z], p + [0.05, 0.0, 0.0], atol=1e-12)
    finally:
        node.destroy_node()
    # no force levels: the marker computes the wrench from the residual (with them, the observe
    # stage has computed it that tick)
    node, *_ = make_controller(**{"external_torque.enabled": True, "collision.force_contact": 0.0,
                                  "collision.force_collision": 0.0})
    markers = Captured(node.markers.pub)
    try:
        node.on_joint_state(state_msg(2.0, NAMES, Q))
        force = np.array([0.0, 10.0, -10.0])
        # the external torques of that force at the hand (J^T F: the observer's convention)
        node.core.contact.observer.felt[:] = kinematics.frame_jacobian(node.chain, Q)[:3].T @ force
        node.markers.publish()
        push = {m.ns: m for m in markers.messages[-1].markers}["push"]
        assert push.type == Marker.ARROW and push.action == Marker.ADD
        start, end = (np.array([q.x, q.y, q.z]) for q in push.points)
        hand = kinematics.frame_pose(node.chain, Q)[1]
        np.testing.assert_allclose(end, hand, atol=1e-9)
        np.testing.assert_allclose(end - start, METRES_PER_NEWTON * force, atol=1e-6)
    finally:
        node.destroy_node()

