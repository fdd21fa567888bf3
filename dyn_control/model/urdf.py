"""Reading a URDF: a file, a .xacro or an XML string -> urdf_parser_py's Robot with only what the
dynamics reads, and the poses and inertials in it as numpy. No ROS import here.
"""

from __future__ import annotations

import os

import numpy as np

from dyn_control.model.inertia import inertia_matrix


class URDFError(ValueError):
    """A URDF that cannot be turned into a chain; the message names the link or joint."""


def rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw -> rotation matrix R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def origin_pose(origin):
    """urdf_parser_py Pose (or None) -> (R, p)."""
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    return rpy_matrix(rpy), np.array(xyz, dtype=float)


def finite_pose(origin, what):
    """_pose, or URDFError naming `what` when the origin holds non-finite numbers."""
    with np.errstate(invalid="ignore"):  # cos(inf): reported below as a URDFError
        R, p = origin_pose(origin)
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise URDFError(f"{what} has a non-finite origin (xyz {origin.xyz}, rpy {origin.rpy})")
    return R, p


def compose(a, b):
    """Pose b given in frame a -> pose in a's parent frame."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def read_urdf_text(source) -> str:
    """A path (.urdf or .xacro) or an XML string -> URDF XML text."""
    text = str(source)
    if text.lstrip().startswith("<"):
        return text
    if not os.path.isfile(text):
        raise URDFError(f"URDF file not found: {text!r}")
    if text.endswith(".xacro"):
        try:
            import xacro
        except ImportError as err:  # pragma: no cover - xacro is a declared dependency
            raise URDFError(f"cannot expand {text!r}: the xacro package is not installed") from err
        try:
            return xacro.process_file(text).toprettyxml(indent="  ")
        except Exception as err:  # xacro raises many types; report them as one
            if "AMENT_PREFIX_PATH" in str(err):  # $(find pkg) outside a ROS install
                raise URDFError(
                    f"xacro failed on {text!r}: its $(find ...) needs a ROS install that has the "
                    "package (AMENT_PREFIX_PATH is not set here): source that install, or expand "
                    f"the xacro where it is (xacro {os.path.basename(text)} > robot.urdf) and "
                    "load the URDF") from None
            raise URDFError(f"xacro failed on {text!r}: {err}") from err
    with open(text, encoding="utf-8") as f:
        return f.read()


# What the dynamics reads of a URDF; everything else (visuals, materials, transmissions in
# either format, <gazebo>, <ros2_control>, sensors, vendor tags) is dropped before parsing, so a
# tag urdf_parser_py does not know, or knows more strictly than urdfdom, cannot stop the load.
_KEEP = {"link": {"inertial"}, "joint": {"origin", "parent", "child", "axis", "limit", "dynamics",
                                         "mimic"}}


def robot_element(text: str):
    """URDF XML -> its <robot> ElementTree element, with the comments kept, so that a file
    written back from it keeps them. A URDF names links and joints only as <robot>'s children:
    a <transmission>'s <joint> and a <gazebo> plugin's <link> carry the same names, so look
    elements up with `top_level`, never with a recursive search.
    """
    from xml.etree import ElementTree

    parser = ElementTree.XMLParser(target=ElementTree.TreeBuilder(insert_comments=True))
    try:
        robot = ElementTree.fromstring(text.encode("utf-8"), parser=parser)
    except ElementTree.ParseError as err:
        raise URDFError(f"cannot parse URDF: {err}") from err
    if robot.tag != "robot":
        raise URDFError(f"cannot parse URDF: root element is <{robot.tag}>, not <robot>")
    return robot


def top_level(robot, tag) -> dict:
    """{name: element} of the <robot>'s own `tag` children (link or joint)."""
    return {element.get("name"): element for element in robot.findall(tag)}


def dynamics_only(text: str) -> bytes:
    """URDF XML -> the same robot with only links' <inertial> and joints' kinematic tags."""
    from xml.etree import ElementTree

    robot = robot_element(text)
    for attr in list(robot.attrib):
        if attr != "name":
            del robot.attrib[attr]
    for element in list(robot):
        keep = _KEEP.get(element.tag)
        if keep is None:
            robot.remove(element)
            continue
        for child in list(element):
            if child.tag not in keep:
                element.remove(child)
    return ElementTree.tostring(robot)


def parse(text: str):
    """URDF XML -> urdf_parser_py Robot, quietly."""
    from urdf_parser_py import urdf
    from urdf_parser_py.xml_reflection import core

    xml = dynamics_only(text)
    notes = []
    saved = core.on_error
    core.on_error = notes.append
    try:
        return urdf.URDF.from_xml_string(xml)
    except Exception as err:  # ParseError, ValueError, TypeError ... on malformed values
        msg = " ".join(str(err).split())
        raise URDFError(f"cannot parse URDF: {msg}") from err
    finally:
        core.on_error = saved


def link_inertial(link):
    """(mass, com (3,), inertia about com (3, 3)) in the link frame; no <inertial> -> zeros."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mass = float(inertial.mass) if inertial.mass is not None else 0.0
    inertia = np.zeros((3, 3))
    i = inertial.inertia
    if i is not None:
        inertia = inertia_matrix(*(float(v or 0.0) for v in (i.ixx, i.iyy, i.izz, i.ixy, i.ixz,
                                                             i.iyz)))
    R, p = finite_pose(inertial.origin, f"link '{link.name}' <inertial>")
    return mass, p, R @ inertia @ R.T
