"""Several robots in one world: their URDFs as one, each robot's names under a prefix of its own
and its root fixed to a common `world` link at its base pose, as a multi-robot xacro does with
its `prefix` argument. No ROS import here.

The simulator runs the world as one tree, each robot a branch of `world`; each robot's
controller loads the same URDF with its own joints (load_chain's `joints`), so its model's root
is the robot's own base, gravity comes in that base's axes, and the other robots are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dyn_control.model.urdf import URDFError, read_urdf_text, robot_element, top_level

WORLD = "world"


@dataclass(frozen=True)
class Placed:
    """One robot of a world: its URDF (a path, a .xacro or XML text), the prefix of its link,
    joint, transmission and material names ("left_"), and its base pose in the world (m, and
    URDF roll-pitch-yaw in rad).
    """

    prefix: str
    source: str
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)


def combine(robots, name=WORLD) -> str:
    """[Placed] -> the URDF XML text of one <robot> named `name` whose root link is `name`.

    Every element of each robot is kept (visuals, collisions, transmissions, <gazebo>,
    <ros2_control>), its names prefixed together with what refers to them: a joint's parent and
    child links and its mimic's joint, a transmission's joints and actuators, a <gazebo>'s
    reference, a <ros2_control>'s joints, a material's uses. Each robot's root link hangs from
    `name` by a fixed joint `<prefix>base_joint` at its pose. URDFError, in one line, names a
    robot with no single root, a prefix given twice or empty, a pose that is not three finite
    numbers, or a name that two robots would share.
    """
    from xml.etree import ElementTree

    if not robots:
        raise URDFError("a world needs at least one robot")
    world = ElementTree.Element("robot", name=name)
    ElementTree.SubElement(world, "link", name=name)
    seen = {"link": {name: "the world"}, "joint": {}}
    prefixes = set()
    for robot in robots:
        prefix = robot.prefix
        if not isinstance(prefix, str) or not prefix or prefix in prefixes:
            raise URDFError(f"each robot of a world needs a prefix of its own, got {prefix!r}")
        prefixes.add(prefix)
        element = _prefixed(robot_element(read_urdf_text(robot.source)), prefix)
        root = _root(element, prefix)
        for kind in ("link", "joint"):
            for item in top_level(element, kind):
                if item in seen[kind]:
                    raise URDFError(f"{kind} '{item}' of the robot prefixed '{prefix}' is also "
                                    f"{seen[kind][item]}'s: choose prefixes that keep names apart")
                seen[kind][item] = f"the robot prefixed '{prefix}'"
        base = f"{prefix}base_joint"
        if base in seen["joint"]:
            raise URDFError(f"joint '{base}' is already in the robot prefixed '{prefix}': the "
                            f"world needs that name for its base")
        seen["joint"][base] = "the world"
        joint = ElementTree.SubElement(world, "joint", name=base, type="fixed")
        ElementTree.SubElement(joint, "parent", link=name)
        ElementTree.SubElement(joint, "child", link=root)
        ElementTree.SubElement(joint, "origin", xyz=_triple(robot.xyz, "xyz", prefix),
                               rpy=_triple(robot.rpy, "rpy", prefix))
        world.extend(list(element))
    ElementTree.indent(world)
    return ElementTree.tostring(world, encoding="unicode")


def side_by_side(source, namespaces, spacing=1.0):
    """The robot of `source` once per namespace, in a row along the world's y axis `spacing` m
    apart, centred on its origin, the first at +y (left of a viewer looking along -x) ->
    (URDF text, {namespace: its joints}); each robot's names take "<namespace>_". Its joints
    are load_chain's (a gripper's fingers locked).
    """
    from dyn_control.model.chain import load_chain

    names = load_chain(source).joint_names
    middle = 0.5 * (len(namespaces) - 1)
    text = combine([Placed(f"{ns}_", str(source), (0.0, spacing * (middle - k), 0.0))
                    for k, ns in enumerate(namespaces)])
    return text, {ns: [f"{ns}_{name}" for name in names] for ns in namespaces}


def _triple(values, what, prefix):
    try:
        numbers = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        numbers = np.full(0, np.nan)
    if numbers.shape != (3,) or not np.isfinite(numbers).all():
        raise URDFError(f"the robot prefixed '{prefix}' needs its base {what} as three finite "
                        f"numbers, got {values!r}")
    return " ".join(f"{v:.17g}" for v in numbers)


def _root(robot, prefix):
    """The robot's one link that is no joint's child."""
    children = {child.get("link") for joint in robot.findall("joint")
                for child in joint.findall("child")}
    roots = [link for link in top_level(robot, "link") if link not in children]
    if len(roots) != 1:
        raise URDFError(f"the robot prefixed '{prefix}' has {len(roots)} root links "
                        f"({roots}), not one")
    return roots[0]


def _prefixed(robot, prefix):
    """robot (a <robot> element) with its names and the references to them prefixed."""
    links = set(top_level(robot, "link"))
    joints = set(top_level(robot, "joint"))

    def rename(element, attribute="name", known=None):
        value = element.get(attribute)
        if value is not None and (known is None or value in known):
            element.set(attribute, prefix + value)

    for element in robot:
        tag = element.tag
        if tag in ("link", "joint", "material", "transmission"):
            rename(element)
        if tag == "joint":
            for child in element:
                if child.tag in ("parent", "child"):
                    rename(child, "link")
                elif child.tag == "mimic":
                    rename(child, "joint")
        elif tag == "transmission":
            for child in element:
                if child.tag in ("joint", "actuator"):
                    rename(child)
        elif tag == "gazebo":
            rename(element, "reference", links | joints)
        elif tag == "ros2_control":
            rename(element)
            for child in element.findall("joint"):
                rename(child)
        if tag == "link":  # a visual's material, named or defined there
            for material in element.iter("material"):
                rename(material)
    return robot
