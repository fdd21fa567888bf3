"""Every demo run as a rosbag2 (MCAP) folder, written from the harness's recorder node.

A `BagTap` on a recorder node subscribes to the loop's topics raw, keeps each message as it came
off the wire (the bytes `ros2 bag record` would store), stamped with the simulation time of the
latest /clock (ros2 bag record --use-sim-time), and on `write()` stores them with rosbags:
- /joint_states, /clock, /effort_controller/commands, and the controller's ~/reference and
  ~/error in joint space or its ~/current_pose and ~/target_pose (each ee_link's, for several)
  in Cartesian impedance (`cartesian_topics`), each with its publisher's QoS (read from the
  graph at the first message) in the metadata;
- /robot_description (transient local, as robot_state_publisher offers it): the URDF the run
  used;
- /tf_static and /tf from the URDF's joint transforms (harness.transforms), /tf once per
  /joint_states: a bag shows the arm with no robot_state_publisher.
A recorder reads a topic through the tap (`subscribe`), so what it records and what the bag holds
are the same messages.
"""

import pathlib
import time

from geometry_msgs.msg import PoseStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control.kinematics import matrix_quaternion
from dyn_control.recording import BagWriter, qos_profile, typestore
from harness.transforms import JointTransforms

CONTROLLER = "/computed_torque_controller"
LOOP = {"/joint_states": JointState, "/clock": Clock,
        "/effort_controller/commands": Float64MultiArray}
TOPICS = {**LOOP, f"{CONTROLLER}/reference": JointState, f"{CONTROLLER}/error": JointState}
MSGTYPES = {JointState: "sensor_msgs/msg/JointState", Clock: "rosgraph_msgs/msg/Clock",
            Float64MultiArray: "std_msgs/msg/Float64MultiArray",
            PoseStamped: "geometry_msgs/msg/PoseStamped"}


def cartesian_topics(ee_links=None, names=("current_pose", "target_pose")):
    """A Cartesian run's topics: the loop's and the controller's poses, ~/current_pose and
    ~/target_pose (`names`: those the run has), or ~/<link>/... of each of several ee_links.
    """
    prefixes = [f"{CONTROLLER}/{link}" for link in ee_links] if ee_links else [CONTROLLER]
    return {**LOOP, **{f"{prefix}/{name}": PoseStamped for prefix in prefixes
                       for name in names}}
DEPTH = 5000  # messages a reader keeps: seconds of 1 kHz topics for a recorder that falls behind


def namespaced(namespaces, topics=TOPICS):
    """A run of several arms' topics: each of `topics` under each namespace ("/left"), but
    /clock, which is the graph's.
    """
    return {topic if topic == "/clock" else ns + topic: kind
            for ns in namespaces for topic, kind in topics.items()}


class BagTap:
    """Raw subscriptions of `node` to `topics` (topic -> message class; default TOPICS, a
    joint-space run's); `write(path)` makes the bag (module docstring) from the URDF text the
    run used. `readers`: topic -> a recorder's callback(message), called as a typed
    subscription would call it. `counts`: messages received per topic. Every topic named
    .../joint_states (one per arm of a world) gives /tf.
    """

    def __init__(self, node, urdf_text, topics=None):
        self.node, self.urdf_text = node, urdf_text
        self.topics = TOPICS if topics is None else topics
        self.readers = {}
        self.rows = []  # (ns, topic, raw bytes), in arrival order
        self.qos = {}  # topic -> rosbags Qos of its publisher
        self.counts = dict.fromkeys(self.topics, 0)
        self.now_ns = 0
        for topic, kind in self.topics.items():
            self._subscribe(kind, topic)

    def _subscribe(self, kind, topic):
        def on_raw(raw):
            if topic == "/clock":
                clock = deserialize_message(raw, Clock).clock
                self.now_ns = clock.sec * 1_000_000_000 + clock.nanosec
            if topic not in self.qos:
                self.qos[topic] = self._offered(topic)
            self.rows.append((self.now_ns, topic, bytes(raw)))
            self.counts[topic] += 1
            callback = self.readers.get(topic)
            if callback is not None:
                callback(deserialize_message(raw, kind))

        qos = QoSProfile(depth=DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        self.node.create_subscription(kind, topic, on_raw, qos, raw=True)

    def _offered(self, topic):
        for info in self.node.get_publishers_info_by_topic(topic):
            p = info.qos_profile
            return qos_profile(p.reliability == ReliabilityPolicy.RELIABLE,
                               p.durability == DurabilityPolicy.TRANSIENT_LOCAL, p.depth)
        return qos_profile()

    def write(self, path):
        """The bag at `path` (a new folder); -> its message count per topic."""
        store = typestore()
        types = store.types
        transforms = JointTransforms(self.urdf_text)
        bag = BagWriter(path, topic=None)
        written = {}
        try:
            connections = {topic: bag.add(topic, MSGTYPES[kind], self.qos.get(topic))
                           for topic, kind in self.topics.items()}
            latched = qos_profile(transient_local=True, depth=1)
            for topic, msgtype in (("/robot_description", "std_msgs/msg/String"),
                                   ("/tf_static", "tf2_msgs/msg/TFMessage"),
                                   ("/tf", "tf2_msgs/msg/TFMessage")):
                connections[topic] = bag.add(topic, msgtype,
                                             qos_profile(depth=100) if topic == "/tf" else latched)
            first = self.rows[0][0] if self.rows else 0
            description = types["std_msgs/msg/String"](data=self.urdf_text)
            bag.write(first, store.serialize_cdr(description, "std_msgs/msg/String"),
                      connections["/robot_description"])
            written["/robot_description"] = 1
            states = [(ns, topic, deserialize_message(raw, JointState) if
                       topic.endswith("/joint_states") else None) for ns, topic, raw in self.rows]
            # the joints the states move (each arm's topic names its own): the rest are static
            moving = {name for _, _, state in states if state is not None for name in state.name}
            static = None
            for (ns, topic, raw), (_, _, state) in zip(self.rows, states):
                bag.write(ns, raw, connections[topic])
                written[topic] = written.get(topic, 0) + 1
                if state is None:
                    continue
                stamp = state.header.stamp
                if static is None:
                    static = tf_message(types, transforms.static(moving), stamp)
                    bag.write(ns, store.serialize_cdr(static, "tf2_msgs/msg/TFMessage"),
                              connections["/tf_static"])
                    written["/tf_static"] = 1
                message = tf_message(types, transforms.at(dict(zip(state.name, state.position))),
                                     stamp)
                bag.write(ns, store.serialize_cdr(message, "tf2_msgs/msg/TFMessage"),
                          connections["/tf"])
                written["/tf"] = written.get("/tf", 0) + 1
        finally:
            bag.close()
        return written


def tf_message(types, transforms, stamp):
    """A tf2_msgs/TFMessage (rosbags' type) of [(parent, child, R, p)] at `stamp`."""
    Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
    Vector3, Quaternion = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Quaternion"]
    Transform = types["geometry_msgs/msg/Transform"]
    Stamped = types["geometry_msgs/msg/TransformStamped"]
    when = Time(sec=stamp.sec, nanosec=stamp.nanosec)
    return types["tf2_msgs/msg/TFMessage"](transforms=[
        Stamped(header=Header(stamp=when, frame_id=parent), child_frame_id=child,
                transform=Transform(translation=Vector3(x=float(p[0]), y=float(p[1]),
                                                        z=float(p[2])),
                                    rotation=Quaternion(*matrix_quaternion(R))))
        for parent, child, R, p in transforms])


def run_folder(out, arm, mode=None):
    """out/<arm>[_<mode>]_<local time>: a new folder name per run, as ros2 bag record makes;
    arm: a name in urdf/ or a URDF path.
    """
    from .processes import arm_name
    name = f"{arm_name(arm)}_{mode}" if mode else arm_name(arm)
    return pathlib.Path(out) / f"{name}_{time.strftime('%Y%m%d_%H%M%S')}"


def logs_folder(bag):
    """out/logs/<the run's folder name>: the nodes' logs of that run, kept beside the others'."""
    return bag.parent / "logs" / bag.name


def summary(bag, counts):
    """The demo's line on where its bag is."""
    return (f"run recorded as a rosbag2 in {bag}/ ({sum(counts.values())} messages; "
            f"ros2 bag info {bag})")
