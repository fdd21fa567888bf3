"""Two arms in one world and one ROS domain, as `make demo ARM=two_arms` runs them
(harness/world.py): one simulator for the world URDF, each arm's controller and goal in its
namespace, over DDS, synchronous on simulated time.

References: each goal's tolerances (0.05 rad on the path, 0.01 rad at the end, checked by the
controller as JTC does), the bound of test_closed_loop.py (RMS below 1e-3 rad), the graph as ROS
lists it (each node's own publishers and subscriptions), and the bag's /tf against the forward
kinematics of each arm's model (test/support/bags.py, to 1e-9).
"""

import pytest
from bags import assert_tf_is_the_forward_kinematics

from dyn_control import load_chain

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.metrics import tracking_figures  # noqa: E402
from harness.world import NAMESPACES, world_loop  # noqa: E402

# what ROS keeps global: one time, one status topic, the log and parameter events of every node
GLOBAL_TOPICS = {"/clock", "/diagnostics", "/rosout", "/parameter_events"}


def _tolerances(ns):
    return {f"constraints.{ns}_joint{k}.{kind}": value for k in range(1, 8)
            for kind, value in (("trajectory", 0.05), ("goal", 0.01))}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("two_arms")
    params = {}
    for ns in NAMESPACES:  # each controller has only its own joints: the other's keys go unread
        params.update(_tolerances(ns))
    result = world_loop(2.0, folder / "logs", 104, bag=folder / "bag", controller_params=params)
    return result, folder


def test_each_arm_tracks_its_own_goal_through_its_own_action(run):
    result, _ = run
    assert set(result["exit_codes"].values()) == {0}, result["exit_codes"]
    assert set(result["arms"]) == set(NAMESPACES)
    for ns, arm in result["arms"].items():
        assert arm["result"]["result"] == "SUCCESSFUL", (ns, arm["result"])
        assert arm["joint_names"] == [f"{ns}_joint{k}" for k in range(1, 8)]
        rms, _ = tracking_figures(arm)
        assert (rms < 1e-3).all(), (ns, rms)


def test_no_topic_of_one_arm_is_seen_by_the_other_and_there_is_one_clock(run):
    result, _ = run
    endpoints = result["graph"]["endpoints"]
    for ns in NAMESPACES:
        others = [f"/{other}/" for other in NAMESPACES if other != ns]
        for node in ("computed_torque_controller", "trajectory_demo"):
            found = endpoints[f"/{ns}/{node}"]
            topics = set(found["publishes"]) | set(found["subscribes"])
            assert topics, (ns, node)
            assert all(t in GLOBAL_TOPICS or t.startswith(f"/{ns}/") for t in topics), topics
            assert not any(t.startswith(tuple(others)) for t in topics), topics
    clocks = [node for node, found in endpoints.items() if "/clock" in found["publishes"]]
    assert clocks == ["/dynamics_simulator"], clocks
    simulator = endpoints["/dynamics_simulator"]
    for ns in NAMESPACES:
        assert f"/{ns}/joint_states" in simulator["publishes"]
        assert f"/{ns}/effort_controller/commands" in simulator["subscribes"]
    assert "/joint_states" not in result["graph"]["topics"]


def test_the_bag_holds_both_arms_and_their_tf(run):
    result, folder = run
    counts = result["bag"]
    for ns in NAMESPACES:
        for topic in ("joint_states", "effort_controller/commands",
                      "computed_torque_controller/reference", "computed_torque_controller/error"):
            assert counts[f"/{ns}/{topic}"] > 1000, (ns, topic, counts)
    assert counts["/tf"] == sum(counts[f"/{ns}/joint_states"] for ns in NAMESPACES)
    urdf = folder / "logs" / "world.urdf"
    for ns in NAMESPACES:
        chain = load_chain(str(urdf), joints=[f"{ns}_joint{k}" for k in range(1, 8)])
        assert_tf_is_the_forward_kinematics(folder / "bag", urdf, chain,
                                            topic=f"/{ns}/joint_states")
