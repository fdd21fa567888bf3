"""An arm under a namespace: the simulator, the controller and the demo trajectory started with
`-r __ns:=/left` (what `namespace:=left` on the launch files does), over DDS, synchronous on
simulated time (harness/loop.py). References: the graph as ROS lists it, and the bounds of
test_closed_loop.py.
"""

import pytest

from dyn_control.nodes.launch_support import in_namespace, namespace

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.loop import closed_loop  # noqa: E402
from harness.metrics import tracking_figures  # noqa: E402

NS = "/left"
NODES = ("computed_torque_controller", "dynamics_simulator", "trajectory_demo")
# what ROS keeps global: one time, one status topic, the log and parameter events of every node
GLOBAL_TOPICS = {"/clock", "/diagnostics", "/rosout", "/parameter_events"}
RECORDER = "/dyn_control_recorder"  # the test's own node, in the root namespace


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return closed_loop("default_arm", 3.0, None, tmp_path_factory.mktemp("left"), 96,
                       namespace=NS)


def test_the_namespaced_arm_tracks_its_trajectory_through_its_action(run):
    assert set(run["exit_codes"].values()) == {0}, run["exit_codes"]
    demo = run["diagnostics"]["trajectory_demo"]  # "left/trajectory_demo" on /diagnostics
    assert demo["interface"] == "action" and demo["result"] == "SUCCESSFUL", demo
    rms, _ = tracking_figures(run)
    assert (rms < 1e-3).all(), rms


def test_every_name_of_the_arm_moves_under_its_namespace(run):
    graph = run["graph"]
    assert {f"{NS}/{node}" for node in NODES} <= set(graph["nodes"]), graph["nodes"]
    assert not {f"/{node}" for node in NODES} & set(graph["nodes"]), graph["nodes"]
    topics = set(graph["topics"]) - GLOBAL_TOPICS
    assert {f"{NS}/joint_states", f"{NS}/effort_controller/commands",
            f"{NS}/computed_torque_controller/error"} <= topics, topics
    assert all(t.startswith(NS + "/") for t in topics), sorted(topics)
    services = [s for s in graph["services"] if not s.startswith(RECORDER + "/")]
    assert f"{NS}/computed_torque_controller/set_parameters" in services
    assert all(s.startswith(NS + "/") for s in services), services
    assert graph["actions"] == [f"{NS}/computed_torque_controller/follow_joint_trajectory"]
    assert "/clock" in graph["topics"] and "/diagnostics" in graph["topics"]


def test_the_launch_argument_takes_any_spelling_of_a_namespace():
    for text in ("left", "/left", "/left/", " left "):
        assert namespace(text) == "/left"
    assert namespace("cell_2/left") == "/cell_2/left"
    assert namespace("") == namespace("/") == ""
    nodes = [object()]
    assert in_namespace("", nodes) is nodes  # the root: the actions as they are
