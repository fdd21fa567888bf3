"""Contact over DDS: the simulator and the controller as processes (synchronous, on simulation
time), pushed through the simulator's ~/external_wrench, judged from the controller's topics,
/diagnostics, the action's results and ~/reset_collision, as a user would.

References: the push itself, and the simulator's truth ~/applied_external_joint_torques (J^T w);
the controller publishes franka_ros2's sign, what the robot applies: minus both. Tolerance 1 %
(docs/contact.md's), 0.4 s of simulated time after the push starts (20 observer time constants).
"""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
import rclpy  # noqa: E402
from conftest import BENT_POSE, require  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from dyn_control.nodes import messages  # noqa: E402
from dyn_control.nodes.diagnostics import read_diagnostics  # noqa: E402
from harness.background import BackgroundNode  # noqa: E402

require("control_msgs")
from action_loop import goal_to, start_loop, wait  # noqa: E402
from control_msgs.action import FollowJointTrajectory  # noqa: E402

DOMAIN = 51
CONTROLLER, SIMULATOR = "/computed_torque_controller", "/dynamics_simulator"
Q = np.array(BENT_POSE)
PUSH = [60.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # N at the hand, base axes: 44 N m on joint2
STATUS_SUCCEEDED, STATUS_ABORTED = 4, 6


class User(BackgroundNode):
    def __init__(self):
        super().__init__("contact_test_user")
        self.got = {"states": [], "torques": [], "wrench": [], "truth": [], "diagnostics": []}

        def keep(key):
            def callback(msg):
                with self.lock:
                    self.got[key].append(msg)
            return callback

        for key, kind, topic in (
                ("states", JointState, "/joint_states"),
                ("torques", JointState, f"{CONTROLLER}/external_joint_torques"),
                ("wrench", WrenchStamped, f"{CONTROLLER}/external_wrench_in_base_frame"),
                ("truth", JointState, f"{SIMULATOR}/applied_external_joint_torques"),
                ("diagnostics", DiagnosticArray, "/diagnostics")):
            self.create_subscription(kind, topic, keep(key), 1000)
        self.push_pub = self.create_publisher(WrenchStamped, f"{SIMULATOR}/external_wrench", 10)
        self.reset = self.create_client(Trigger, f"{CONTROLLER}/reset_collision")
        self.params = AsyncParameterClient(self, CONTROLLER)
        self.action = ActionClient(self, FollowJointTrajectory,
                                   f"{CONTROLLER}/follow_joint_trajectory")
        self.start()

    def now(self):
        with self.lock:
            return messages.to_seconds(self.got["states"][-1].header.stamp)

    def last(self, key):
        with self.lock:
            return self.got[key][-1]

    def wait_sim(self, seconds, since=None):
        start = self.now() if since is None else since
        deadline = time.monotonic() + 20 * seconds + 20
        while self.now() < start + seconds:
            assert time.monotonic() < deadline, "simulated time stopped"
            time.sleep(0.01)

    def at(self, key, t, timeout=60.0):
        """The first message of `key` stamped t or later, once it is recorded."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [m for m in self.got[key] if messages.to_seconds(m.header.stamp) >= t]
            if found:
                return found[0]
            assert time.monotonic() < deadline, f"no {key} stamped {t} s or later"
            time.sleep(0.01)

    def position_before(self, t):
        """The recorded joint positions at the last state stamped before t (a loaded machine's
        recording has gaps: the first one stamped t or later can be much later).
        """
        with self.lock:
            found = [m for m in self.got["states"] if messages.to_seconds(m.header.stamp) < t]
        return np.array(found[-1].position)

    def position_at(self, t):
        """The recorded joint positions at the first state stamped t or later."""
        return np.array(self.at("states", t).position)

    def push_and_wait_for_it(self, wrench, timeout=30.0):
        """Push (zeros: stop pushing), and return the simulated time it began: the stamp of the
        first truth message (~/applied_external_joint_torques) that carries it. A message can
        reach the simulator late on a loaded machine, so what follows counts from there.
        """
        with self.lock:
            seen = len(self.got["truth"])
        self.push(wrench)
        pushing = bool(np.any(wrench))
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                new = [m for m in self.got["truth"][seen:] if any(m.effort) == pushing]
            if new:
                return messages.to_seconds(new[0].header.stamp)
            assert time.monotonic() < deadline, f"the push {list(wrench)} never showed in the truth"
            time.sleep(0.01)

    def push(self, wrench):
        msg = WrenchStamped()
        (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) = wrench[:3]
        (msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = wrench[3:]
        self.push_pub.publish(msg)

    def call_reset(self):
        response = wait(self.call_in_spin(lambda: self.reset.call_async(Trigger.Request())), 30)
        return wait(response, 30) if hasattr(response, "done") else response

    def set(self, **values):
        params = [Parameter(name.replace("__", "."), value=v) for name, v in values.items()]
        result = wait(self.call_in_spin(lambda: self.params.set_parameters(params)), 30)
        result = wait(result, 30) if hasattr(result, "done") else result
        assert all(r.successful for r in result.results), result

    def run_goal(self, q_target, duration=2.0, timeout=60.0):
        """Send a goal and return its handle (results come through result())."""
        sent = wait(self.call_in_spin(lambda: self.action.send_goal_async(
            goal_to(q_target, duration))), timeout)
        handle = wait(sent, timeout) if hasattr(sent, "done") else sent
        assert handle.accepted
        return handle

    def result(self, handle, timeout=60.0):
        # asked in the spinning thread: a result that is out at once (a refused goal) could
        # otherwise come before rclpy registers the future it returns (BackgroundNode)
        future = wait(self.call_in_spin(handle.get_result_async), timeout)
        response = wait(future, timeout)
        return response.status, response.result.error_code, response.result.error_string

    def controller_diagnostics(self, timeout=30.0):
        """The controller's next /diagnostics values (it reports once a second)."""
        name, deadline = CONTROLLER[1:], time.monotonic() + timeout
        with self.lock:
            seen = len(self.got["diagnostics"])
        while True:
            with self.lock:
                found = [read_diagnostics(m) for m in self.got["diagnostics"][seen:]]
            found = [d[name] for d in found if name in d]
            if found:
                return found[-1]
            assert time.monotonic() < deadline, "no /diagnostics from the controller"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    nodes = start_loop(tmp_path_factory.mktemp("contact"), DOMAIN)
    rclpy.init(domain_id=DOMAIN)
    client = User()
    try:
        assert client.action.wait_for_server(timeout_sec=90), nodes[1].log()
        assert client.reset.wait_for_service(timeout_sec=30)
        deadline = time.monotonic() + 30
        while not (client.got["states"] and client.got["torques"]):
            assert time.monotonic() < deadline, "no joint states or external torques"
            time.sleep(0.05)
        yield client
    finally:
        client.close()
        rclpy.try_shutdown()
        codes = {node.name: node.stop() for node in reversed(nodes)}
        assert codes == {"dynamics_simulator": 0, "computed_torque_controller": 0}, codes


def test_a_push_on_the_hand_is_estimated_within_one_percent(user):
    push = np.array([0.0, 12.0, -8.0, 0.0, 0.0, 0.0])  # 14 N: contact (10 N), no collision
    onset = user.push_and_wait_for_it(push)
    wrench, torques, truth = (user.at(key, onset + 0.4) for key in ("wrench", "torques", "truth"))
    released = user.push_and_wait_for_it(np.zeros(6))
    w = wrench.wrench
    F = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
    assert wrench.header.frame_id == "base_link"
    assert np.linalg.norm(F + push) <= 0.01 * np.linalg.norm(push)  # the robot applies -push
    assert list(torques.name) == list(truth.name)
    assert np.abs(np.array(torques.effort) + np.array(truth.effort)).max() <= \
        0.01 * np.abs(truth.effort).max()
    values = user.controller_diagnostics()
    assert values["collision"] == "none"
    user.wait_sim(0.4, since=released)
    assert user.controller_diagnostics()["contact"] == "none"


def test_a_collision_aborts_the_goal_and_goals_wait_for_a_reset(user):
    q0 = np.array(user.last("states").position)
    handle = user.run_goal(q0 + 0.3, duration=3.0)
    user.wait_sim(0.5)
    user.push(PUSH)
    status, code, text = user.result(handle)
    assert status == STATUS_ABORTED
    assert code == FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
    assert text.startswith("collision on joint2: ") and "N·m over 20.0" in text, text
    refused = user.run_goal(q0, duration=2.0)
    status, code, reason = user.result(refused)
    assert status == STATUS_ABORTED and code == FollowJointTrajectory.Result.INVALID_GOAL
    assert reason.startswith("collision on joint2") and "reset_collision" in reason
    answer = user.call_reset()  # still pushed
    assert not answer.success and answer.message.startswith("refused: still in contact")
    user.wait_sim(0.4, since=user.push_and_wait_for_it(np.zeros(6)))
    answer = user.call_reset()
    assert answer.success and answer.message.startswith("cleared: collision on joint2")
    status, code, _ = user.result(user.run_goal(q0, duration=2.0))
    assert status == STATUS_SUCCEEDED, code


@pytest.mark.parametrize("reaction", ["comply", "none"])
def test_comply_lets_the_push_move_the_arm_and_none_only_reports(user, reaction):
    # from the same pose each time (the comply case leaves the arm where the push took it)
    status, code, text = user.result(user.run_goal(Q, duration=6.0))  # slow: within the limits
    assert status == STATUS_SUCCEEDED, (code, text)
    user.set(collision__reaction=reaction)
    q0 = np.array(user.last("states").position)
    handle = user.run_goal(q0 + 0.1, duration=2.0) if reaction == "none" else None
    onset = user.push_and_wait_for_it(PUSH)
    user.wait_sim(0.5, since=onset)  # in simulated time from the push: a loaded machine's
    # recording lags the loop, so its newest state is no clock of when the push came
    moved = np.abs(user.position_at(onset + 0.5) - user.position_before(onset)).max()
    # hold and the joint law settle within 0.25 s (poles at -20 rad/s); comply keeps giving way
    late = np.abs(user.position_at(onset + 0.5) - user.position_at(onset + 0.25)).max()
    values = user.controller_diagnostics()
    assert values["collision"].startswith("collision ")  # on joint2, or at link7 (force)
    # the reset below counts from the push's end in the simulator: once refused after 0.4 s
    # counted from when the test sent it, still in contact (13 N m), with two workers busy
    released = user.push_and_wait_for_it(np.zeros(6))
    try:
        if reaction == "comply":
            assert late > 0.01, (moved, late)  # the arm still gives way
        else:
            assert moved < 0.2  # it held its goal's path, deflected
            status, _, _ = user.result(handle)
            assert status == STATUS_SUCCEEDED
    finally:
        user.wait_sim(0.4, since=released)
        assert user.call_reset().success
        user.set(collision__reaction="hold")
