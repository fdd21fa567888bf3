"""Reading a rosbag2 folder back in the tests, with rosbags (the library that wrote it)."""

import numpy as np

from dyn_control.kinematics import frame_pose, quaternion_matrix


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


def assert_tf_is_the_forward_kinematics(path, urdf, chain, samples=20, topic="/joint_states"):
    """Every link the chain moves, composed from the bag's /tf_static and /tf down from the
    root, is where frame_pose puts it at the state published on `topic` (one of a world's
    arms), to 1e-9, at `samples` states through the run; /robot_description is the URDF
    file's text.
    """
    messages, _ = read_rosbags(path)
    assert messages["/robot_description"][0][1].data == urdf.read_text()
    static = {t.child_frame_id: t for t in messages["/tf_static"][0][1].transforms}
    # the /tf of a state: written right after it, of its joints' links (each arm has its own)
    first = chain.lumped_links[0][0]
    tfs = [tf for _, tf in messages["/tf"] if any(t.child_frame_id == first
                                                   for t in tf.transforms)]
    states = messages[topic]
    assert len(tfs) == len(states)
    for k in np.linspace(0, len(states) - 1, samples).astype(int):
        state, tf = states[k][1], tfs[k]
        assert tf.transforms[0].header.stamp == state.header.stamp
        edges = {**static, **{t.child_frame_id: t for t in tf.transforms}}
        q = np.array([dict(zip(state.name, state.position))[n] for n in chain.joint_names])
        for links in chain.lumped_links:
            for link in links:
                R, p = np.eye(3), np.zeros(3)
                frame = link
                while frame != chain.root_link:
                    t = edges[frame].transform
                    Rt = quaternion_matrix(t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w)
                    pt = np.array([t.translation.x, t.translation.y, t.translation.z])
                    R, p = Rt @ R, Rt @ p + pt
                    frame = edges[frame].header.frame_id
                R_fk, p_fk = frame_pose(chain, q, link)
                np.testing.assert_allclose(p, p_fk, atol=1e-9)
                np.testing.assert_allclose(R, R_fk, atol=1e-9)
