"""Fuzz tests (hypothesis): every input either works or is refused with our own error type.

- The URDF loader on random bytes, on broken XML and on random robots built from a small pool
  of link names, joint types and attribute values (cycles, two parents, missing links, NaN,
  inf, garbage numbers): it returns a Chain whose arrays are all finite, or raises URDFError.
- The message readers on random arrays: they return finite arrays of the right shape, or
  raise BadMessage; a trajectory they accept samples to finite values everywhere.
"""

import math

import numpy as np
import pytest
from conftest import require

from dyn_control import URDFError, load_chain

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
LINKS = ["base", "a", "b", "c", "d", "e"]
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64).map(repr),
    st.sampled_from(["0", "1", "-1", "0.5", "1e-9", "1e300", "nan", "inf", "-inf", "", "x",
                     "1 2", "--1"]))


def _triple():
    return st.tuples(NUMBERS, NUMBERS, NUMBERS).map(" ".join)


@st.composite
def robots(draw):
    parts = []
    for name in draw(st.lists(st.sampled_from(LINKS), min_size=1, max_size=6)):
        body = ""
        if draw(st.booleans()):
            inertia = " ".join(f'{k}="{draw(NUMBERS)}"' for k in
                               ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
            body = (f'<inertial><origin xyz="{draw(_triple())}" rpy="{draw(_triple())}"/>'
                    f'<mass value="{draw(NUMBERS)}"/><inertia {inertia}/></inertial>')
        parts.append(f'<link name="{name}">{body}</link>')
    for k in range(draw(st.integers(0, 7))):
        jtype = draw(st.sampled_from(["revolute", "continuous", "prismatic", "fixed", "floating",
                                      "planar", "screw", ""]))
        extra = ""
        if draw(st.booleans()):
            extra += f'<axis xyz="{draw(_triple())}"/>'
        if draw(st.booleans()):
            extra += (f'<limit lower="{draw(NUMBERS)}" upper="{draw(NUMBERS)}" '
                      f'effort="{draw(NUMBERS)}" velocity="{draw(NUMBERS)}"/>')
        if draw(st.booleans()):
            extra += f'<dynamics damping="{draw(NUMBERS)}" friction="{draw(NUMBERS)}"/>'
        if draw(st.booleans()):
            extra += f'<mimic joint="j{draw(st.integers(0, 7))}"/>'
        if draw(st.booleans()):
            extra += f'<origin xyz="{draw(_triple())}" rpy="{draw(_triple())}"/>'
        parent, child = draw(st.sampled_from(LINKS)), draw(st.sampled_from(LINKS + ["ghost"]))
        parts.append(f'<joint name="j{k}" type="{jtype}"><parent link="{parent}"/>'
                     f'<child link="{child}"/>{extra}</joint>')
    if draw(st.booleans()):
        parts.append('<transmission name="t"><joint name="j0"/></transmission>')
    return f'<robot name="fuzz">{"".join(parts)}</robot>'


def _check_loads_or_refuses(text, **kwargs):
    try:
        chain = load_chain(text, **kwargs)
    except URDFError:
        return
    for name in ("R0", "p0", "axis", "mass", "com", "inertia", "gravity"):
        assert np.all(np.isfinite(getattr(chain, name))), name
    assert chain.n >= 1 and len(chain.joint_names) == chain.n
    assert not np.any(np.isnan(chain.effort_limits))


@SETTINGS
@given(robots(), st.sampled_from([None, "a", "b"]), st.sampled_from([None, "c", "e"]),
       st.booleans())
def test_random_robots_load_or_raise_urdf_error(text, root, tip, strict):
    _check_loads_or_refuses(text, root_link=root, tip_link=tip, strict=strict)


@SETTINGS
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_random_text_is_refused_with_urdf_error(text):
    _check_loads_or_refuses("<" + text)
    _check_loads_or_refuses("<robot name='x'>" + text + "</robot>")


@SETTINGS
@given(robots(), st.lists(st.sampled_from([f"j{k}" for k in range(8)] + ["nope"]), max_size=4))
def test_random_joint_lists_load_or_raise_urdf_error(text, joints):
    _check_loads_or_refuses(text, joints=joints)


# ------------------------------------------------------------------ message readers

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from conftest import URDF_DIR  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from dyn_control.controller import goals  # noqa: E402
from dyn_control.nodes import messages  # noqa: E402

CHAIN = load_chain(URDF_DIR / "two_link.urdf")
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
NAMES = st.lists(st.sampled_from(["joint1", "joint2", "gripper", ""]), max_size=4)


@SETTINGS
@given(NAMES, st.lists(FLOATS, max_size=5), st.lists(FLOATS, max_size=5))
def test_joint_state_reader(names, position, velocity):
    msg = JointState(name=names, position=position, velocity=velocity)
    try:
        q, qd = messages.JointStateReader(CHAIN.joint_names).read(msg)
    except messages.BadMessage:
        return
    assert q.shape == qd.shape == (2,) and np.all(np.isfinite(q)) and np.all(np.isfinite(qd))


@SETTINGS
@given(st.permutations(["joint1", "joint2", "gripper"]), st.lists(FLOATS, min_size=3, max_size=3),
       st.lists(FLOATS, min_size=3, max_size=3))
def test_joint_state_reader_takes_exactly_the_finite_controlled_joints(names, position, velocity):
    # any order, an extra joint that may be non-finite, sums that may overflow (1e308 + 1e308):
    # the reader's quick check must neither refuse a good state nor pass a bad one
    msg = JointState(name=names, position=position, velocity=velocity)
    ours = [names.index(j) for j in CHAIN.joint_names]
    good = all(np.isfinite(position[i]) and np.isfinite(velocity[i]) for i in ours)
    try:
        q, qd = messages.JointStateReader(CHAIN.joint_names).read(msg)
    except messages.BadMessage as err:
        assert not good and "non-finite" in str(err)
        return
    assert good
    np.testing.assert_array_equal(q, [position[i] for i in ours])
    np.testing.assert_array_equal(qd, [velocity[i] for i in ours])


FIELD = st.lists(FLOATS, max_size=6)
TEXT = st.text(max_size=12)  # any unicode: CDR carries UTF-8


def same_state(view, msg):
    """Whether a JointStateView reads as the message: stamp, names, arrays bit for bit."""
    stamps = [(m.header.stamp.sec, m.header.stamp.nanosec) for m in (view, msg)]
    return (stamps[0] == stamps[1] and list(view.name) == list(msg.name)
            and all(np.array_equal(np.asarray(getattr(view, f)), np.asarray(getattr(msg, f)),
                                   equal_nan=True) for f in ("position", "velocity", "effort")))


@SETTINGS
@given(st.lists(TEXT, max_size=6), FIELD, FIELD, FIELD, TEXT, st.integers(-2**31, 2**31 - 1),
       st.integers(0, 999_999_999), st.integers(0, 200))
def test_joint_state_bytes_read_what_rclpy_deserializes(names, position, velocity, effort, frame,
                                                        sec, nanosec, cut):
    # Reference: rclpy's deserialization of the same bytes. The parser reads the same stamp,
    # names and arrays bit for bit, twice (the second time from the names it decoded); bytes
    # cut short give None, or, where only padding was cut, what rclpy reads of them; another
    # encoding gives None (rclpy's to read)
    from rclpy.serialization import deserialize_message, serialize_message
    msg = JointState(name=names, position=position, velocity=velocity, effort=effort)
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = sec, nanosec, frame
    data = serialize_message(msg)
    expected = deserialize_message(data, JointState)
    parser = messages.JointStateBytes()
    for _ in range(2):
        assert same_state(parser.parse(data), expected)
    view = parser.parse(data[:cut])
    if view is not None:
        assert same_state(view, deserialize_message(data[:cut], JointState))
    assert parser.parse(b"\x00\x00" + data[2:]) is None  # big endian


CONTROLLED = ["shoulder", "elbow", "wrist"]


@SETTINGS
@given(st.permutations(CONTROLLED + ["gripper", "ä"]), st.integers(3, 5), st.data(), TEXT,
       st.integers(-2**31, 2**31 - 1), st.integers(0, 999_999_999))
def test_a_joint_state_read_straight_from_its_bytes_is_the_parsed_one(names, count, data, frame,
                                                                      sec, nanosec):
    # Reference: parse and the reader (themselves checked against rclpy above). The straight
    # read gives the same stamp, q, qd and effort bit for bit, or None (never a state the
    # reference refuses); on a clean message with the names read before it is taken
    from rclpy.serialization import serialize_message
    names = names[:count]
    values = st.lists(FLOATS, min_size=count, max_size=count)
    fields = {"position": data.draw(st.one_of(values, st.lists(FLOATS, max_size=count))),
              "velocity": data.draw(st.one_of(values, st.just([]))),
              "effort": data.draw(st.one_of(values, st.just([])))}
    msg = JointState(name=names, **fields)
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = sec, nanosec, frame
    raw = serialize_message(msg)
    parser, reader = messages.JointStateBytes(), messages.JointStateReader(CONTROLLED)
    assert parser.state(raw, reader) is None  # nothing read yet: the names are not known
    clean = JointState(name=names, position=[0.0] * count)
    try:
        reader.read(parser.parse(serialize_message(clean)))  # the names, read once
    except messages.BadMessage:
        pass  # a controlled joint missing: never read, never straight
    got = parser.state(raw, reader)
    try:
        view = parser.parse(raw)
        q, qd = reader.read(view)
    except messages.BadMessage:
        assert got is None
        return
    if got is None:  # only where the quick check's sum is not finite: a value, or an overflow
        assert not math.isfinite(sum(fields["position"]) + sum(fields["velocity"]))
        return
    effort = reader.effort(view)
    assert got[0] == messages.to_seconds(view.header.stamp)
    for a, b in zip(got[1:], (q, qd, effort)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tobytes() == np.asarray(b, dtype=float).tobytes() and a.flags.writeable


def test_a_state_whose_quick_sum_overflows_is_left_to_the_reader():
    # finite values whose sum is not (the case the fuzz test above found): the straight read
    # gives None, and parse and the reader take the state
    from rclpy.serialization import serialize_message
    big = [0.0, 0.0, 8.98846567431158e307]
    raw = serialize_message(JointState(name=CONTROLLED, position=big, velocity=big))
    parser, reader = messages.JointStateBytes(), messages.JointStateReader(CONTROLLED)
    q, qd = reader.read(parser.parse(raw))
    assert parser.state(raw, reader) is None and list(q) == list(qd) == big


@SETTINGS
@given(st.lists(FLOATS, max_size=4))
def test_effort_command_reader(data):
    try:
        tau = messages.read_effort_command(Float64MultiArray(data=data), 2)
    except messages.BadMessage:
        return
    assert tau.shape == (2,) and np.all(np.isfinite(tau))


POINTS = st.lists(st.tuples(st.lists(FLOATS, max_size=3), st.lists(FLOATS, max_size=3),
                            st.lists(FLOATS, max_size=3), st.integers(0, 5),
                            st.integers(0, 999_999_999)), max_size=4)


@SETTINGS
@given(NAMES, POINTS, st.floats(-10, 10), st.integers(0, 3))
def test_trajectory_reader(names, points, t, stamp):
    msg = JointTrajectory(joint_names=names)
    msg.header.stamp.sec = stamp
    for pos, vel, acc, sec, nsec in points:
        point = JointTrajectoryPoint(positions=pos, velocities=vel, accelerations=acc)
        point.time_from_start.sec, point.time_from_start.nanosec = sec, nsec
        msg.points.append(point)
    zero, q = np.zeros(2), np.array([0.1, 0.2])
    try:  # any joints, any points: a trajectory, or a refusal with its code
        traj = goals.trajectory_from_request(messages.trajectory_request(msg), CHAIN, 1.0,
                                             (q, zero, zero), q, allow_partial=True,
                                             allow_moving_end=True)
    except goals.GoalRefused as refusal:
        assert refusal.code in goals.CODES
        return
    for s in (t, 0.0, 1.0, 1.5, 3.0, 10.0):
        for x in traj.sample(s):
            assert x.shape == (2,) and np.all(np.isfinite(x))
