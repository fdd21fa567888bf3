"""A run as a rosbag2 file (MCAP), with the `rosbags` package (pinned): /joint_states for
identification, and every topic of a demo run (harness/bag.py). Written from the raw messages a
node receives, as `ros2 bag record` stores them; read back with no ROS install, so that a fit
can be rerun from the file alone. Any ROS tool opens the file (`ros2 bag info`, PlotJuggler,
Foxglove).
"""

import pathlib

import numpy as np

TOPIC, MSGTYPE = "/joint_states", "sensor_msgs/msg/JointState"


def typestore():
    """The rosbags typestore of ROS 2 Kilted's messages, what the bags here are written with."""
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_KILTED)


class BagWriter:
    """A new rosbag2 folder at `path`. `add(topic, msgtype, qos)` opens a connection (qos: the
    publisher's QoS for the metadata, `qos_profile`); `write(ns, cdr, connection)` stores a
    serialized message at a time (ns; default connection: the one made with the bag, `topic`,
    a JointState); `close()` ends the file.
    """

    def __init__(self, path, topic=TOPIC):
        from rosbags.rosbag2 import StoragePlugin, Writer
        self.path = pathlib.Path(path)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.connection = self.add(topic, MSGTYPE) if topic else None

    def add(self, topic, msgtype, qos=None):
        return self.writer.add_connection(topic, msgtype, typestore=typestore(),
                                          offered_qos_profiles=[qos] if qos else ())

    def write(self, ns, cdr, connection=None):
        self.writer.write(connection or self.connection, int(ns), bytes(cdr))

    def close(self):
        self.writer.close()


def qos_profile(reliable=True, transient_local=False, depth=10):
    """The rosbag2 metadata form of a publisher's QoS (keep last `depth`, automatic liveliness,
    no deadline or lifespan: what our nodes and robot_state_publisher offer).
    """
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )
    zero = QosTime(0, 0)
    return Qos(QosHistory.KEEP_LAST, int(depth),
               QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
               QosDurability.TRANSIENT_LOCAL if transient_local else QosDurability.VOLATILE,
               zero, zero, QosLiveliness.AUTOMATIC, zero, False)


def write_states(path, t, names, q, qd, effort, topic=TOPIC):
    """A bag of JointState messages stamped t (s) with q, qd, effort (m, n) for `names`; the
    messages serialized by rosbags (no ROS install needed): for tests and converted logs.
    """
    store = typestore()
    types = store.types
    msg_type, header, stamp = (types[MSGTYPE], types["std_msgs/msg/Header"],
                               types["builtin_interfaces/msg/Time"])
    bag = BagWriter(path, topic)
    try:
        for k, tk in enumerate(t):
            sec = int(np.floor(tk))
            msg = msg_type(header=header(stamp=stamp(sec=sec, nanosec=int(round((tk - sec) * 1e9))),
                                         frame_id=""),
                           name=list(names), position=np.asarray(q[k], float),
                           velocity=np.asarray(qd[k], float), effort=np.asarray(effort[k], float))
            bag.write(int(round(tk * 1e9)), store.serialize_cdr(msg, MSGTYPE))
    finally:
        bag.close()


def _open(path):
    """The rosbag2 reader of the bag at `path`, open; ValueError, one line, when it is not one."""
    from rosbags.rosbag2 import Reader
    try:
        reader = Reader(pathlib.Path(path))
        reader.open()
    except Exception as err:  # noqa: BLE001 (rosbags raises its own types for a bad file)
        raise ValueError(f"cannot read the recording {str(path)!r}: {err}") from None
    return reader


def state_names(path, topic=TOPIC):
    """The joint names of the first JointState on `topic` in the bag at `path`; ValueError, one
    line, as read_states.
    """
    reader = _open(path)
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        for connection, _, raw in reader.messages(connections=connections):
            return list(typestore().deserialize_cdr(raw, connection.msgtype).name)
    finally:
        reader.close()
    raise ValueError(f"the recording {str(path)!r} has no message on {topic}")


def read_states(path, names, topic=TOPIC):
    """(t (m,), q, qd, effort (m, n)) of the JointState messages on `topic` in the bag at
    `path`, columns in `names`' order, t from the messages' stamps. ValueError, one line, when
    the file is not a bag, has no such topic, or a message lacks one of the joints (or its
    velocity or effort).
    """
    store = typestore()
    reader = _open(path)
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            raise ValueError(f"the recording {str(path)!r} has no {topic} (topics: "
                             f"{', '.join(sorted({c.topic for c in reader.connections}))})")
        rows, index, order = [], None, None
        for connection, _, raw in reader.messages(connections=connections):
            msg = store.deserialize_cdr(raw, connection.msgtype)
            if index is None or list(msg.name) != order:
                order = list(msg.name)
                missing = [n for n in names if n not in order]
                if missing:
                    raise ValueError(f"the recording {str(path)!r} lacks joint {missing[0]!r} "
                                     f"(it has {order})")
                index = [order.index(n) for n in names]
            if len(msg.velocity) != len(order) or len(msg.effort) != len(order):
                raise ValueError(f"the recording {str(path)!r} has a JointState without one "
                                 f"velocity and one effort per joint, at stamp "
                                 f"{msg.header.stamp.sec}.{msg.header.stamp.nanosec:09d}")
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            rows.append(np.concatenate([[stamp], msg.position[index], msg.velocity[index],
                                        msg.effort[index]]))
    finally:
        reader.close()
    if not rows:
        raise ValueError(f"the recording {str(path)!r} has no message on {topic}")
    data = np.array(rows)
    n = len(names)
    return data[:, 0], data[:, 1:1 + n], data[:, 1 + n:1 + 2 * n], data[:, 1 + 2 * n:]
