"""make demo's rosbag2 (harness.bag): a short closed loop over DDS on the default arm (its own
ROS domain) writes its bag, read back with rosbags (which wrote it) and with mcap plus
mcap-ros2-support (another reader, test only). References: the URDF file for the description,
the chain's forward kinematics for /tf (1e-9 m and rad), the recorder's own counts for the
messages, and the simulator's fixed step for the ticks between the first and last state.
"""

import numpy as np
import pytest
from bags import assert_tf_is_the_forward_kinematics, read_rosbags
from conftest import DEFAULT_ARM

from dyn_control import load_chain

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.loop import closed_loop  # noqa: E402

DOMAIN = 97
CONTROLLER = "/computed_torque_controller"
TOPICS = {"/robot_description": "std_msgs/msg/String",
          "/joint_states": "sensor_msgs/msg/JointState",
          "/tf": "tf2_msgs/msg/TFMessage", "/tf_static": "tf2_msgs/msg/TFMessage",
          "/clock": "rosgraph_msgs/msg/Clock",
          "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
          f"{CONTROLLER}/reference": "sensor_msgs/msg/JointState",
          f"{CONTROLLER}/error": "sensor_msgs/msg/JointState"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bag")
    result = closed_loop("default_arm", 2.0, None, folder / "logs", DOMAIN, bag=folder / "run")
    return result, folder / "run"


def test_the_bag_holds_every_topic_with_its_type_and_qos_and_every_recorded_tick(run):
    """The topics and types of TOPICS; as many messages per topic as the recorder received
    (nothing lost between the wire and the file), and ~/error and ~/reference the recorder's
    ticks, one /tf per /joint_states; the states in order, on the simulator's 1 ms grid (DDS
    itself may drop some under load: a reliable writer keeps only its last 10, and runs of
    17 to 29 ms were missing once in a full suite); the description and /tf_static transient
    local, the rest volatile, all reliable (what our nodes offer).
    """
    result, path = run
    assert all(code == 0 for code in result["exit_codes"].values()), result["exit_codes"]
    messages, kinds = read_rosbags(path)
    assert {t: k for t, (k, _) in kinds.items()} == TOPICS
    counts = {topic: len(rows) for topic, rows in messages.items()}
    assert counts == result["bag"]
    assert all(counts[topic] == n > 0 for topic, n in result["received"].items())
    assert counts[f"{CONTROLLER}/error"] == result["recorded"]["errors"] > 1000
    assert counts[f"{CONTROLLER}/reference"] == result["recorded"]["references"]
    assert counts["/tf"] == counts["/joint_states"] and counts["/tf_static"] == 1
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
                       for _, m in messages["/joint_states"]])
    steps = np.diff(stamps) / 1e-3
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
    assert steps.min() >= 1.0 - 1e-6
    for topic, (_, profiles) in kinds.items():
        qos = profiles[0]
        assert qos.reliability.name == "RELIABLE", (topic, qos)
        latched = topic in ("/robot_description", "/tf_static")
        assert qos.durability.name == ("TRANSIENT_LOCAL" if latched else "VOLATILE"), (topic, qos)


def test_tf_is_the_forward_kinematics_and_the_description_is_the_urdf(run):
    assert_tf_is_the_forward_kinematics(run[1], DEFAULT_ARM, load_chain(DEFAULT_ARM))


def test_a_second_reader_mcap_ros2_reads_the_same_messages(run):
    """mcap-ros2-support decodes every message with the schemas in the file: the same topics
    and counts as rosbags, and the same joint positions.
    """
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    _, path = run
    messages, _ = read_rosbags(path)
    counts, positions = {}, []
    with open(next(path.glob("*.mcap")), "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, _, decoded in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/joint_states":
                positions.append(list(decoded.position))
    assert counts == {topic: len(rows) for topic, rows in messages.items()}
    np.testing.assert_array_equal(np.array(positions),
                                  np.array([m.position for _, m in messages["/joint_states"]]))
