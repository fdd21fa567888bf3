"""The heavy arm's brake release over DDS (issue 60): dynamics_simulator (synchronous, from its
braked start at the heavy arm's start pose, where its shoulder needs 264 N m) and
computed_torque_controller as processes on simulated time, a fresh pair for each mode. What is
read: /joint_states (the first state whose measured effort is not zero is the release) and the
controller's /diagnostics. The loop is synchronous, so the figures do not depend on the load.

Within the first second after the release no joint moves more than 1e-3 rad (0.64 rad and a
velocity fault before the first command held gravity: test_brake_release has the lockstep
sweep), and the controller reports no velocity fault, no contact and no collision.
"""

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from test_brake_release import HEAVY, HEAVY_START, STILL  # noqa: E402

from dyn_control.nodes.diagnostics import read_diagnostics  # noqa: E402
from harness import processes  # noqa: E402
from harness.background import BackgroundNode  # noqa: E402

DOMAIN = 155


class Watch(BackgroundNode):
    """/joint_states (t, q, effort) and the controller's latest /diagnostics values."""

    def __init__(self):
        super().__init__("brake_release_watch")
        self.states, self.status = [], {}
        self.create_subscription(JointState, "/joint_states", self.on_state, 100)
        self.create_subscription(DiagnosticArray, "/diagnostics", self.on_diagnostics, 10)
        self.start()

    def on_state(self, msg):
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        with self.lock:
            self.states.append((t, np.array(msg.position), np.array(msg.effort)))

    def on_diagnostics(self, msg):
        found = read_diagnostics(msg).get("computed_torque_controller")
        if found:
            with self.lock:
                self.status = found

    def released(self, seconds, timeout=120.0):
        """The states from the release to `seconds` of simulated time after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                states = list(self.states)
            moving = [k for k, (_, _, e) in enumerate(states) if np.any(e != 0.0)]
            if moving and states[-1][0] >= states[moving[0]][0] + seconds:
                return states[moving[0]:]
            time.sleep(0.1)
        raise AssertionError(f"no {seconds} s of states after a release within {timeout} s")


@pytest.mark.parametrize("mode", ("computed_torque", "cartesian_impedance", "teach"))
def test_the_heavy_arm_holds_at_brake_release_over_dds(tmp_path, mode):
    env = processes.loop_env()
    common = {"urdf_file": str(HEAVY)}
    nodes = processes.ProcessSet()
    rclpy.init(domain_id=DOMAIN)
    watch = Watch()
    try:
        nodes.start("dynamics_simulator", [processes.config("simulator")],
                    {**common, "initial_positions": HEAVY_START}, log_dir=tmp_path, env=env,
                    domain_id=DOMAIN)
        nodes.start("computed_torque_controller", [processes.config("controller")],
                    {**common, "use_sim_time": True, "mode": mode}, log_dir=tmp_path, env=env,
                    domain_id=DOMAIN)
        states = watch.released(1.0)
        q = np.array([s[1] for s in states])
        t0 = states[0][0]
        first = q[[k for k, s in enumerate(states) if s[0] <= t0 + 1.0]]
        assert np.abs(first - first[0]).max() <= STILL, np.abs(first - first[0]).max(axis=0)
        assert abs(states[0][2][1]) > 250.0  # the shoulder's first effort: gravity, at once
        time.sleep(1.5)  # a /diagnostics after that second
        with watch.lock:
            status = dict(watch.status)
        assert status.get("velocity_faults") == 0.0, status
        assert status.get("collisions") == 0.0 and status.get("contact") == "none", status
    finally:
        watch.close()
        rclpy.try_shutdown()
        codes = nodes.stop()
    assert all(code == 0 for code in codes.values()), codes
