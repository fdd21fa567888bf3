"""Reading a rosbag2 folder back in the tests, with rosbags (the library that wrote it)."""


def read_rosbags(path):
    """{topic: [(log ns, message)]} and {topic: (msgtype, [Qos])} by rosbags."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_KILTED)
    messages, kinds = {}, {}
    with Reader(path) as reader:
        for c in reader.connections:
            kinds[c.topic] = (c.msgtype, c.ext.offered_qos_profiles)
        for c, ns, raw in reader.messages():
            messages.setdefault(c.topic, []).append((ns, store.deserialize_cdr(raw, c.msgtype)))
    return messages, kinds
