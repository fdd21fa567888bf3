"""Several robots in one world URDF (dyn_control.model.world.combine), on arms of
example-robot-data with their grippers, mimic joints, transmissions, <gazebo> elements and
materials, placed with turned and upside-down bases.

References: each robot alone, its gravity turned into its base's axes (load_chain's `gravity`):
its joints in the world give the same inverse dynamics, mass matrix and g(q), to 1e-12 of the
largest entry; Pinocchio on the whole world file, every robot's joints at once
(test/support/pin_reference.py, to its RTOL); and the file's own references (every renamed
joint, link and material that something refers to is there).
"""

import math

import numpy as np
import pytest
from conftest import require, robots_dir

from dyn_control import gravity_torques, inverse_dynamics, load_chain, mass_matrix
from dyn_control.model.urdf import URDFError, robot_element, rpy_matrix, top_level
from dyn_control.model.world import Placed, combine

pin = require("pinocchio")
from pin_reference import compare_dynamics  # noqa: E402  (needs pinocchio)

ARMS = {  # prefix: (file, base xyz, base rpy)
    "panda_": ("panda_description/urdf/panda.urdf", (0.0, 0.6, 0.0), (0.0, 0.0, 0.3)),
    "ur_": ("ur_description/urdf/ur5_robot.urdf", (0.0, -0.6, 0.0), (0.0, 0.0, math.pi / 2)),
    "z1_": ("z1_description/urdf/z1.urdf", (1.0, 0.0, 2.0), (math.pi, 0.0, 0.0)),  # ceiling
    "kinova_": ("kinova_description/robots/kinova.urdf", (-1.0, 0.0, 1.0), (0.0, math.pi / 2,
                                                                           0.0)),  # wall
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    robots = [Placed(prefix, str(robots_dir() / path), xyz, rpy)
              for prefix, (path, xyz, rpy) in ARMS.items()]
    path = tmp_path_factory.mktemp("world") / "world.urdf"
    path.write_text(combine(robots))
    return path


@pytest.mark.parametrize("prefix", list(ARMS))
def test_each_robot_in_the_world_is_the_robot_alone_on_its_base(world, prefix):
    path, _, rpy = ARMS[prefix]
    alone = load_chain(str(robots_dir() / path))
    R = rpy_matrix(rpy)
    turned = load_chain(str(robots_dir() / path), gravity=R.T @ np.array([0.0, 0.0, -9.81]))
    placed = load_chain(str(world), joints=[prefix + name for name in alone.joint_names])
    assert list(placed.joint_names) == [prefix + name for name in alone.joint_names]
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.uniform(np.maximum(alone.lower, -3), np.minimum(alone.upper, 3))
        qd, qdd = rng.uniform(-2, 2, (2, alone.n))
        for f in (lambda c: inverse_dynamics(c, q, qd, qdd), lambda c: mass_matrix(c, q),
                  lambda c: gravity_torques(c, q)):
            expected, got = f(turned), f(placed)
            assert np.abs(got - expected).max() <= 1e-12 * max(1.0, np.abs(expected).max())
    # the base's turn is what the world changes: upright, g(q) differs
    if prefix in ("z1_", "kinova_"):
        q = np.clip(np.full(alone.n, 0.3), alone.lower, alone.upper)
        assert np.abs(gravity_torques(alone, q) - gravity_torques(placed, q)).max() > 1.0


def test_the_whole_world_against_pinocchio(world):
    chain = load_chain(str(world), joints=[
        prefix + name for prefix, (path, _, _) in ARMS.items()
        for name in load_chain(str(robots_dir() / path)).joint_names])
    assert chain.n == 7 + 6 + 7 + 6
    compare_dynamics(world, chain, count=4)


def test_every_name_and_every_reference_is_prefixed(world):
    robot = robot_element(world.read_text())
    links, joints = top_level(robot, "link"), top_level(robot, "joint")
    for prefix, (path, _, _) in ARMS.items():
        alone = robot_element((robots_dir() / path).read_text())
        assert {prefix + n for n in top_level(alone, "link")} <= set(links)
        assert {prefix + n for n in top_level(alone, "joint")} <= set(joints)
        assert f"{prefix}base_joint" in joints
    for joint in joints.values():
        assert joint.find("parent").get("link") in links
        assert joint.find("child").get("link") in links
        mimic = joint.find("mimic")
        assert mimic is None or mimic.get("joint") in joints
    transmissions = robot.findall("transmission")
    assert len(transmissions) == 6 + 6 + 10  # the UR5's, Z1's and Kinova's
    for transmission in transmissions:
        assert all(j.get("name") in joints for j in transmission.findall("joint"))
    references = [g.get("reference") for g in robot.findall("gazebo") if g.get("reference")]
    assert references and all(r in links or r in joints for r in references)
    materials = {m.get("name") for m in robot.findall("material")}
    used = {m.get("name") for link in links.values() for m in link.iter("material")}
    assert materials and all(name.startswith(tuple(ARMS)) for name in materials | used)


TWO_LINKS = """<robot name="r"><link name="{a}"/><link name="{b}"/>
<joint name="j" type="revolute"><parent link="{a}"/><child link="{b}"/><axis xyz="0 0 1"/>
<limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>"""


@pytest.mark.parametrize("robots, message", [
    ([], "a world needs at least one robot"),
    ([Placed("a_", TWO_LINKS.format(a="x", b="y")), Placed("a_", TWO_LINKS.format(a="x", b="y"))],
     "each robot of a world needs a prefix of its own, got 'a_'"),
    ([Placed("", TWO_LINKS.format(a="x", b="y"))],
     "each robot of a world needs a prefix of its own, got ''"),
    ([Placed("a", TWO_LINKS.format(a="b_x", b="y")), Placed("ab", TWO_LINKS.format(a="_x", b="z"))],
     "link 'ab_x' of the robot prefixed 'ab' is also the robot prefixed 'a''s"),
    ([Placed("a_", TWO_LINKS.format(a="x", b="y"), xyz=(0.0, 1.0))],
     "the robot prefixed 'a_' needs its base xyz as three finite numbers, got (0.0, 1.0)"),
    ([Placed("a_", TWO_LINKS.format(a="x", b="y"), rpy=(0.0, float("nan"), 0.0))],
     "the robot prefixed 'a_' needs its base rpy as three finite numbers"),
    ([Placed("a_", TWO_LINKS.format(a="x", b="y").replace('<link name="x"/>',
                                                           '<link name="x"/><link name="w"/>'))],
     "the robot prefixed 'a_' has 2 root links (['a_x', 'a_w']), not one"),
])
def test_a_world_that_cannot_be_made_is_refused_in_one_line(robots, message):
    with pytest.raises(URDFError) as err:
        combine(robots)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_side_by_side_puts_one_copy_per_namespace_in_a_row_with_its_start():
    """make demo ARM=two_arms's and two_arms.launch.py's world: the default arm at y = +0.5
    and -0.5 m (its first link's world pose against the arm alone's, by forward kinematics,
    to 1e-15 m), each copy's joints
    under its namespace, and the simulator's robots and start (config/default_arm.yaml's
    initial_positions, once per copy).
    """
    from conftest import DEFAULT_ARM, PACKAGE_DIR

    from dyn_control.kinematics import frame_pose
    from dyn_control.nodes.launch_support import world_parameters
    text, joints, simulator = world_parameters(
        str(DEFAULT_ARM), ("left", "right"), 1.0, [PACKAGE_DIR / "config/default_arm.yaml"])
    alone = load_chain(str(DEFAULT_ARM))
    assert joints == {ns: [f"{ns}_{j}" for j in alone.joint_names] for ns in ("left", "right")}
    world = load_chain(text, root_link="world", joints=joints["left"] + joints["right"])
    _, p_alone = frame_pose(alone, np.zeros(alone.n), "link1")
    for ns, y in (("left", 0.5), ("right", -0.5)):
        _, p = frame_pose(world, np.zeros(world.n), f"{ns}_link1")
        np.testing.assert_allclose(p, p_alone + (0.0, y, 0.0), atol=1e-15)
    assert simulator["robots"] == [f"{ns}: {', '.join(j)}" for ns, j in joints.items()]
    assert simulator["initial_positions"] == [0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0] * 2
