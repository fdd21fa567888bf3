"""Two controllers on one simulated arm over DDS, each claiming its joints through the
simulator's command_sources (the core's rules: test_command_sources.py). References: the
brakes (not a bit of motion), and the start pose held within 1e-3 rad.
"""

import time

import numpy as np
import pytest
from conftest import DEFAULT_ARM

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness import processes  # noqa: E402
from harness.loop import node_status  # noqa: E402
from harness.recorder import Recorder  # noqa: E402

ARM = [f"joint{i}" for i in range(1, 5)]
WRIST = ["joint7", "joint6", "joint5"]  # in an order of its own
# Each controller models the other's joints as locked at zero (lumped into its last link), so
# its g(q) is off by what they weigh where they really are; the wrist's light joints then sag
# 0.11 rad under computed torque's proportional gain alone. Integral action removes that:
# docs/controller.md's tuning rule, kp 3 w^2, kd 3 w, ki w^3, at w = 40 rad/s.
W = 40.0
INTEGRAL = {"kp": 3 * W**2, "kd": 3 * W, "ki": W**3}


def test_two_controllers_each_hold_their_joints_of_one_simulated_arm(tmp_path):
    """Over DDS, synchronous: the simulator with the arm's and the wrist's sources, and two
    controllers, each in a namespace of its own with its `joints` (/arm: joint1 to joint4,
    /wrist: joint5 to joint7) and the one /joint_states. With the arm's controller alone the
    simulator stays braked (the positions do not change by a bit); with both, it runs, and
    both hold the start pose: within 1e-3 rad over the last 0.5 s of 2 s (each controller
    models the other's joints as locked, see INTEGRAL), and every process exits 0.
    """
    domain = 98
    urdf = str(DEFAULT_ARM)
    sources = [f"/arm/effort_controller/commands: {', '.join(ARM)}",
               f"/wrist/effort_controller/commands: {', '.join(WRIST)}"]
    env = dict(processes.loop_env(), ROS_DOMAIN_ID=str(domain))
    nodes = processes.ProcessSet()
    rclpy.init(domain_id=domain)
    recorder = Recorder(cartesian=True)

    def controller(ns, joints):
        return nodes.start("computed_torque_controller", [processes.config("controller")],
                           {"urdf_file": urdf, "joints": joints, "use_sim_time": True,
                            **INTEGRAL},
                           remaps={"__ns": ns, "joint_states": "/joint_states"},
                           log_dir=tmp_path / ns.strip("/"), env=env)

    def wait(found, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not found():
            assert time.monotonic() < deadline, f"{what}; logs in {tmp_path}"
            time.sleep(0.05)

    try:
        nodes.start("dynamics_simulator", [processes.config("simulator"),
                                           processes.config("default_arm")],
                    {"urdf_file": urdf, "command_sources": sources}, log_dir=tmp_path, env=env)
        controller("/arm", ARM)
        wait(lambda: node_status(recorder, "arm/computed_torque_controller").get("ticks", 0) > 0,
             "the arm's controller never ticked")
        simulator = lambda: node_status(recorder, "dynamics_simulator")  # noqa: E731
        # synchronous, the wrist's answer never comes: a step per sync_timeout (0.1 s)
        wait(lambda: simulator().get("time", 0) > 0.02, "the simulator's time did not run")
        assert simulator()["message"] == "braked until the first command", simulator()
        _, q, _, _ = recorder.series("states")
        assert (q == q[0]).all()  # braked: not a bit of motion
        controller("/wrist", WRIST)
        wait(lambda: simulator().get("message") == "running", "the brakes never came off")
        t, q, _, _ = recorder.series("states")
        wait(lambda: recorder.series("states")[0][-1] > t[-1] + 2.0, "2 s of simulated time")
        t, q, _, _ = recorder.series("states")
        sag = np.abs(q - q[0]).max(axis=0)
        held = np.abs(q[t > t[-1] - 0.5] - q[0]).max()  # the last 0.5 s
        print(f"largest sag per joint {np.round(sag, 4).tolist()} rad, last 0.5 s {held:.2e}")
        assert held < 1e-3, (held, sag)
        assert node_status(recorder, "wrist/computed_torque_controller")["ticks"] > 0
    finally:
        codes = [node.stop() for node in reversed(nodes)]  # two of them share a name
        recorder.close()
        rclpy.try_shutdown()
    assert codes == [0, 0, 0], codes
