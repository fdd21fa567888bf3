"""Conversions between ROS messages and numpy arrays, in one place.

Readers raise `BadMessage` with a reason a person can act on (naming the joint); the nodes log
it and drop the message, so a bad message never stops a node.
"""

import array
import math
import struct

import numpy as np
from builtin_interfaces.msg import Duration, Time
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control.controller.goals import Request
from dyn_control.controller.laws import first_non_finite
from dyn_control.kinematics import matrix_quaternion, quaternion_matrix


class BadMessage(ValueError):
    """A message that cannot be used; the text says why."""


def to_seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def stamp_parts(t):
    """Time t (s) -> (sec, nanosec) of a builtin_interfaces/Time."""
    sec = math.floor(t)
    return int(sec), min(int(round((t - sec) * 1e9)), 999_999_999)


def set_stamp(stamp, t):
    """Write time t (s) into an existing builtin_interfaces/Time."""
    stamp.sec, stamp.nanosec = stamp_parts(t)


def to_stamp(t: float) -> Time:
    stamp = Time()
    set_stamp(stamp, t)
    return stamp


def to_duration(t: float) -> Duration:
    stamp = to_stamp(t)
    return Duration(sec=stamp.sec, nanosec=stamp.nanosec)


class JointStateReader:
    """Reads the controlled joints out of JointState messages, by name, in `joint_names` order.

    Extra joints are ignored; the order may change from message to message.
    """

    def __init__(self, joint_names):
        self.joint_names = list(joint_names)
        self._names, self._index = None, None  # the last message layout seen, and its indices
        self.source = None  # the names object of the last message read (JointStateBytes.state)

    def _indices(self, names):
        """Index array of the controlled joints in a message with these names (None: same order)."""
        if names != self._names:
            self.source = None
            where = {name: i for i, name in enumerate(names)}
            missing = [j for j in self.joint_names if j not in where]
            if missing:
                raise BadMessage(f"joint state lacks controlled joint '{missing[0]}'")
            self._names = list(names)
            self._index = None if self._names == self.joint_names else np.array(
                [where[j] for j in self.joint_names])
        self.source = names
        return self._index

    def read(self, msg):
        """-> (q, qd) arrays (n,); missing velocities are zero. Raises BadMessage.

        When the message lists the controlled joints in order, q and qd are views of its arrays:
        a caller that changes them copies first.

        It runs once per control tick, so it stays off numpy's heavier machinery (in the loop,
        with cold caches, a numpy reduction costs 10 us): float64[] fields are array.array('d'),
        read in place and checked through the builtin sum.
        """
        names, position, velocity = msg.name, msg.position, msg.velocity
        if len(position) != len(names):
            raise BadMessage(f"joint state has {len(names)} names but {len(position)} positions")
        if len(velocity) not in (0, len(names)):
            raise BadMessage(f"joint state has {len(names)} names but {len(velocity)} velocities")
        idx = self._indices(names)
        q = np.frombuffer(position)
        qd = np.frombuffer(velocity) if len(velocity) else np.zeros(len(position))
        if idx is not None:
            q, qd = q[idx], qd[idx]
        if not math.isfinite(sum(position) + sum(velocity)):  # which joint is it (if ours)?
            # None: another joint, or the sum overflowed
            bad = first_non_finite(np.where(np.isfinite(qd), q, qd))
            if bad is not None:
                raise BadMessage(f"joint state has a non-finite value for joint "
                                 f"'{self.joint_names[bad]}'")
        return q, qd

    def effort(self, msg):
        """The controlled joints' efforts (n,) of a message read() took, or None when it has
        none, not one per name, or a non-finite one (the observer then takes the command).
        """
        effort = msg.effort
        if len(effort) != len(msg.name) or not math.isfinite(sum(effort)):
            return None
        values = np.frombuffer(effort) if isinstance(effort, array.array) else np.array(effort)
        return values if self._index is None else values[self._index]


class JointStateView:
    """A JointState's fields read from its serialized bytes (`parse`): what JointStateReader and
    the controller read of a message, with no message built. rclpy turns a JointState's bytes
    into a message in 8.8 us (7 joints); this takes what the controller needs in about 2.
    """

    __slots__ = ("header", "name", "position", "velocity", "effort")

    class Header:
        __slots__ = ("stamp",)

    class Stamp:
        __slots__ = ("sec", "nanosec")


CDR_LE = b"\x00\x01"  # plain CDR, little endian: what Fast DDS sends (XCDR1); others fall back


class JointStateBytes:
    """Parses serialized sensor_msgs/JointState (a raw subscription's bytes). The names are
    decoded when their bytes change, not per message. `parse(data)` -> a JointStateView, or
    None for any other encoding or a malformed message (the caller deserializes it then, and
    rclpy names what is wrong).
    """

    def __init__(self):
        self._names, self._name_bytes = None, None  # the last names' list and their bytes
        self._segments = ()  # each name's place and bytes after the count, its padding left out
        self._values = None  # a struct of one float64[] field's values (state)

    def parse(self, data):
        try:
            return self._parse(data)
        except (struct.error, ValueError, IndexError, UnicodeDecodeError):
            return None

    def _parse(self, data):
        if data[:2] != CDR_LE:
            return None
        body = memoryview(data)[4:]  # CDR aligns from here
        out = JointStateView()
        header, stamp = JointStateView.Header(), JointStateView.Stamp()
        stamp.sec, stamp.nanosec, length = _HEADER.unpack_from(body, 0)
        header.stamp, out.header = stamp, header
        at = _aligned(12 + length, 4)  # frame_id's bytes, its NUL included
        count = _COUNT.unpack_from(body, at)[0]
        at += 4
        known = self._name_bytes
        if known is not None and len(self._names) == count and body[at:at + len(known)] == known:
            at += len(known)
        else:  # new names: decode them once
            start, names, segments = at, [], []
            for _ in range(count):
                length = _COUNT.unpack_from(body, at)[0]
                names.append(bytes(body[at + 4:at + 3 + length]).decode())
                segments.append((at - start, bytes(body[at:at + 4 + length])))
                at = _aligned(at + 4 + length, 4)
            self._names, self._name_bytes = names, bytes(body[start:at])
            self._segments = segments
        out.name = self._names
        fields = []
        for _ in range(3):  # position, velocity, effort: float64[] at 8-byte alignment
            count = _COUNT.unpack_from(body, at)[0]
            at = _aligned(at + 4, 8) if count else at + 4
            end = at + 8 * count
            if end > len(body):
                raise ValueError("truncated")
            values = array.array("d")
            values.frombytes(body[at:end])
            fields.append(values)
            at = end
        out.position, out.velocity, out.effort = fields
        return out

    def state(self, data, reader):
        """(stamp s, q, qd, effort or None) straight from the bytes, the controlled joints in
        reader's order (JointStateReader), for the common case only: plain CDR, the names'
        bytes those `parse` last decoded and `reader` last read, a position and a velocity (or
        none) per name, all finite. None otherwise: `parse` and the reader then take it, and
        say what is wrong. 1.6 us where parse and the reader take 3.4 (7 joints).
        """
        names, known = self._names, self._name_bytes
        if names is None or reader.source is not names or data[:2] != CDR_LE:
            return None
        sec, nanosec, length = _HEADER.unpack_from(data, 4)
        at = _aligned(12 + length, 4) + 4  # (offsets in data: CDR aligns from data[4:])
        count = len(names)
        start, end = at + 4, at + 4 + len(known)
        if _COUNT.unpack_from(data, at)[0] != count:
            return None
        span = data[start:end]
        if span != known:  # the names, or only the padding between them (not written: any)
            if any(data[start + offset:start + offset + len(part)] != part
                   for offset, part in self._segments):
                return None
            self._name_bytes = span  # this sender's padding: the quick check from now on
        places = []
        for _ in range(3):  # position, velocity, effort
            size = _COUNT.unpack_from(data, end)[0]
            at = (_aligned(end, 8) if size else end) + 4  # past the count, aligned in data[4:]
            places.append((at, size))
            end = at + 8 * size
        (p_at, p_size), (v_at, v_size), (e_at, e_size) = places
        if end > len(data) or p_size != count or v_size not in (0, count):
            return None
        values = self._values
        if values is None or values.size != 8 * count:
            values = self._values = struct.Struct(f"<{count}d")
        moving = bool(v_size)
        if not math.isfinite(sum(values.unpack_from(data, p_at)) + (
                sum(values.unpack_from(data, v_at)) if moving else 0.0)):
            return None
        index = reader._index
        q = np.frombuffer(data, np.float64, count, p_at)
        qd = np.frombuffer(data, np.float64, count, v_at) if moving else np.zeros(count)
        effort = None
        if e_size == count and math.isfinite(sum(values.unpack_from(data, e_at))):
            effort = np.frombuffer(data, np.float64, count, e_at)
        if index is None:  # (copies: the compiled calls take writable arrays)
            q, qd = q.copy(), qd.copy() if moving else qd
            effort = None if effort is None else effort.copy()
        else:
            q, qd = q[index], qd[index]
            effort = None if effort is None else effort[index]
        return sec + nanosec * 1e-9, q, qd, effort


_HEADER, _COUNT = struct.Struct("<iII"), struct.Struct("<I")


def _aligned(at, size):
    return (at + size - 1) // size * size


def doubles(values) -> array.array:
    """(n,) floats -> array.array('d'): the message setters take it without checking each item."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def _in_place(msg, field, n):
    """Give msg's float64[] `field` n zeros and return a numpy view of the message's own array:
    writing the view refills the message, with no message, array or setter call per tick.
    """
    setattr(msg, field, doubles(np.zeros(n)))
    return np.frombuffer(getattr(msg, field))


class Serialized:
    """A message as rclpy serializes it, to be refilled in place and published as bytes (rclpy's
    publish_raw): no message is converted and serialized per tick, and the encoding stays the
    middleware's, whatever it is. The float64[] `fields` get distinct values first and `views`
    are numpy views of where those values lie in the bytes (with `stamp`, the header's stamp's
    place too). `views` is None where a field's values are not found once, 8 bytes each in a
    row: the caller refills the message then.
    """

    SEC, NANOSEC = 1_523_416_781, 987_654_321  # a stamp no other field's bytes hold

    def __init__(self, msg, fields, stamp=False):
        for k, field in enumerate(fields):
            count = len(getattr(msg, field))
            setattr(msg, field, doubles(((k + 1) * 1000.0 + np.arange(count)) * math.pi))
        if stamp:
            msg.header.stamp.sec, msg.header.stamp.nanosec = self.SEC, self.NANOSEC
        data = _exact(serialize_message(msg), msg)
        self.buffer = bytearray(data)
        places = [_once(data, np.frombuffer(getattr(msg, field)).tobytes()) for field in fields]
        self.stamp = _once(data, _STAMP.pack(self.SEC, self.NANOSEC)) if stamp else 0
        self.views = None
        if min(places, default=0) >= 0 and self.stamp >= 0:
            self.views = tuple(np.frombuffer(self.buffer, np.float64, len(getattr(msg, field)),
                                             at) for field, at in zip(fields, places))

    def fill(self, t, values):
        """The bytes with the stamp t (s, when located) and values, one per field's view."""
        if self.stamp:
            _STAMP.pack_into(self.buffer, self.stamp, *stamp_parts(t))
        for view, value in zip(self.views, values):
            view[:] = value
        return bytes(self.buffer)


def _exact(data, msg):
    """data (msg's serialization) without the padding serialize_message leaves after the last
    field: the middleware sends a message's exact size, and rosbag2 readers (rosbags) refuse
    any other. The padding is up to 7 bytes: those rclpy still reads as msg.
    """
    size = len(data)
    for cut in range(1, 8):
        try:
            same = deserialize_message(data[:len(data) - cut], type(msg)) == msg
        except RuntimeError:  # rclpy's RMWError: cut into the message
            same = False
        if not same:
            break
        size = len(data) - cut
    return data[:size]


def _once(data, part):
    """Where part lies in data if it lies there once only, else -1 (an empty part: 0)."""
    at = data.find(part)
    return at if not part or at < 0 or data.find(part, at + 1) < 0 else -1


_STAMP = struct.Struct("<iI")  # builtin_interfaces/Time, plain CDR


class JointStateWriter:
    """One JointState with fixed names, refilled each tick.

    fields: the float64[] fields it carries (the others stay empty). raw: fill returns the
    message's bytes (Serialized: 1.2 us, where filling and serializing the message takes 4.7,
    7 joints); else the message, refilled in place: publish() serializes at once, so refilling
    after a publish is safe; a message kept past the next fill is not.
    """

    def __init__(self, names, fields=("position", "velocity", "effort"), raw=False):
        self.msg = JointState(name=list(names))
        self.fields = tuple(_in_place(self.msg, field, len(names)) for field in fields)
        self.raw = Serialized(JointState(name=list(names), **{
            field: [0.0] * len(names) for field in fields}), fields, stamp=True) if raw else None
        if self.raw is not None and self.raw.views is None:
            self.raw = None

    def fill(self, t, *values):
        """values: one (n,) array per field, in the order of `fields` -> the bytes (raw) or the
        message.
        """
        if self.raw is not None:
            return self.raw.fill(t, values)
        set_stamp(self.msg.header.stamp, t)
        for view, value in zip(self.fields, values):
            view[:] = value
        return self.msg


class EffortWriter:
    """One Float64MultiArray effort command as its serialized bytes (Serialized), refilled each
    tick with tau[order]: 1.0 us a tick less than converting and serializing a message (7
    joints, a subscriber matched). order: (m,) chain indices of the commanded joints, in
    command order. Where the values' place is not found, it refills a message (`raw` False).
    """

    def __init__(self, order):
        m = len(order)
        in_order = np.array_equal(order, np.arange(m))
        self.order = None if in_order else np.asarray(order)
        serialized = Serialized(Float64MultiArray(data=[0.0] * m), ("data",))
        self.raw = serialized.views is not None
        if self.raw:
            self.serialized, (self.data,) = serialized, serialized.views
            self.data[:] = 0.0
        else:
            self.msg = Float64MultiArray()
            self.data = _in_place(self.msg, "data", m)

    def fill(self, tau):
        """-> what to publish: the command's bytes (a copy: the next fill does not touch them),
        or the message.
        """
        if self.order is None:
            self.data[:] = tau
        else:
            np.take(tau, self.order, out=self.data)
        return bytes(self.serialized.buffer) if self.raw else self.msg


def joint_state(names, t, position, velocity=None, effort=None) -> JointState:
    """A new JointState (a message of its own, not refilled later)."""
    values = {"position": position, "velocity": velocity, "effort": effort}
    given = {field: value for field, value in values.items() if value is not None}
    return JointStateWriter(names, tuple(given)).fill(t, *given.values())


def read_effort_command(msg, n):
    """Float64MultiArray in joint order -> (n,) array. Raises BadMessage."""
    tau = np.asarray(msg.data, dtype=float)
    if tau.shape != (n,):
        raise BadMessage(f"effort command has {tau.size} values, expected {n}")
    bad = first_non_finite(tau)
    if bad is not None:
        raise BadMessage(f"effort command has a non-finite value at index {bad}")
    return tau


def read_joint_command(msg, joint_names):
    """sensor_msgs/JointState effort command by name, as ros2_control's JointStateTopicSystem
    publishes it (every joint named, `effort` one per name for an effort arm) -> (n,) in
    `joint_names` order. BadMessage names an unknown or missing joint, efforts not one per
    name, or a non-finite effort (the plugin sends NaN before any controller has written).
    """
    names = list(msg.name)
    where = {name: i for i, name in enumerate(names)}
    unknown = [name for name in names if name not in set(joint_names)]
    if unknown:
        raise BadMessage(f"joint command names unknown joint '{unknown[0]}'")
    missing = [name for name in joint_names if name not in where]
    if missing:
        raise BadMessage(f"joint command lacks joint '{missing[0]}'")
    if len(msg.effort) != len(names):
        raise BadMessage(f"joint command has {len(msg.effort)} efforts for {len(names)} joints "
                         "(every joint needs an effort command interface)")
    tau = np.array([msg.effort[where[name]] for name in joint_names])
    bad = first_non_finite(tau)
    if bad is not None:
        raise BadMessage(f"joint command has a non-finite effort for joint '{joint_names[bad]}'")
    return tau


def trajectory_request(msg, source="topic", path_tolerance=(), goal_tolerance=(),
                       goal_time_tolerance=0.0) -> Request:
    """trajectory_msgs/JointTrajectory (and a goal's tolerances) -> goals.Request, plain data;
    goals.trajectory_from_request checks it. Tolerances: sequences of control_msgs
    JointTolerance (name, position, velocity, acceleration); goal_time_tolerance in s.
    """
    points = tuple((to_seconds(p.time_from_start), p.positions, p.velocities, p.accelerations)
                   for p in msg.points)
    tolerances = [tuple((t.name, t.position, t.velocity, t.acceleration) for t in given)
                  for given in (path_tolerance, goal_tolerance)]
    return Request(tuple(msg.joint_names), to_seconds(msg.header.stamp), points, *tolerances,
                   float(goal_time_tolerance), source)


def fill_point(point, t, *values):
    """A trajectory_msgs/JointTrajectoryPoint with time_from_start t (s) and values, one (n,)
    array each, in the order positions, velocities, accelerations (those given).
    """
    point.time_from_start = to_duration(max(t, 0.0))
    for field, value in zip(("positions", "velocities", "accelerations"), values):
        setattr(point, field, doubles(value))
    return point


class ControllerStateWriter:
    """One control_msgs/JointTrajectoryControllerState (its class is passed in: control_msgs is
    optional), refilled in place: reference q_d, qd_d, qdd_d; feedback q, qd; error e, ed;
    output: the effort (N m or N).
    """

    def __init__(self, msg_class, names):
        self.msg = msg_class(joint_names=list(names))
        self.msg.speed_scaling_factor = 1.0
        n, m = len(names), self.msg
        self.views = [_in_place(point, field, n) for point, fields in (
            (m.reference, ("positions", "velocities", "accelerations")),
            (m.feedback, ("positions", "velocities")), (m.error, ("positions", "velocities")),
            (m.output, ("effort",))) for field in fields]

    def fill(self, t, desired, actual, errors, tau):
        set_stamp(self.msg.header.stamp, t)
        for view, value in zip(self.views, (*desired, *actual, *errors, tau)):
            view[:] = value
        return self.msg


def _finite(values, what):
    values = np.array(values, dtype=float)
    if first_non_finite(values) is not None:
        raise BadMessage(f"{what} has a non-finite value: {values.tolist()}")
    return values


def _base_frame(msg, what, root_link):
    """A stamped message's frame_id must be empty or the chain's root link (base axes)."""
    frame = msg.header.frame_id
    if frame not in ("", root_link):
        raise BadMessage(f"{what} frame_id '{frame}' is not the chain's root link "
                         f"'{root_link}' (or empty)")


def read_pose(msg, root_link, what="target_pose"):
    """geometry_msgs/PoseStamped in the root link's frame -> (R (3, 3), p (3,) m). BadMessage
    names the field and the value: another frame, a non-finite value, or a quaternion that is
    zero or off unit length by more than 1e-3 (a slightly off one is normalized).
    """
    _base_frame(msg, what, root_link)
    pose = msg.pose
    p = _finite([pose.position.x, pose.position.y, pose.position.z], f"{what} position")
    o = pose.orientation
    quaternion = _finite([o.x, o.y, o.z, o.w], f"{what} orientation")
    norm = np.linalg.norm(quaternion)
    if abs(norm - 1.0) > 1e-3:
        raise BadMessage(f"{what} orientation (x, y, z, w) {quaternion.tolist()} is not a unit "
                         f"quaternion (norm {norm:.4g})")
    return quaternion_matrix(*(quaternion / norm)), p


def read_wrench(msg, what, root_link=None):
    """geometry_msgs/WrenchStamped -> (6,) [force N; moment N m]; BadMessage if non-finite,
    or, given root_link, in another frame than the root link's (base axes). Without it the
    frame_id is the caller's to read (the simulator's: the link pushed).
    """
    if root_link is not None:
        _base_frame(msg, what, root_link)
    f, m = msg.wrench.force, msg.wrench.torque
    return _finite([f.x, f.y, f.z, m.x, m.y, m.z], what)


def read_posture(msg, joint_names, what="target_joint"):
    """sensor_msgs/JointState by name -> (chain indices, positions) of the joints it names."""
    index = {name: i for i, name in enumerate(joint_names)}
    unknown = [name for name in msg.name if name not in index]
    if unknown:
        raise BadMessage(f"{what} names unknown joint '{unknown[0]}'")
    if len(msg.position) != len(msg.name) or not msg.name:
        raise BadMessage(f"{what} has {len(msg.name)} names and {len(msg.position)} positions")
    return np.array([index[name] for name in msg.name]), _finite(msg.position, f"{what} position")


class PoseWriter:
    """One geometry_msgs/PoseStamped in the root link's frame, refilled each time."""

    def __init__(self, msg_class, frame_id):
        self.msg = msg_class()
        self.msg.header.frame_id = frame_id

    def fill(self, t, R, p):
        set_stamp(self.msg.header.stamp, t)
        position, orientation = self.msg.pose.position, self.msg.pose.orientation
        position.x, position.y, position.z = (float(x) for x in p)
        orientation.x, orientation.y, orientation.z, orientation.w = matrix_quaternion(R)
        return self.msg
