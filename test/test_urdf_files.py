"""The files the package writes, on the URDFs people have: every arm of example-robot-data that
loads, with its <transmission>s (whose <joint> children share the joints' names), <gazebo>
tags, meshes and comments.

References: the parameters written (an identity: what was written is what loads back), and
the source file itself (every element the writer does not own is unchanged).
"""

import re
import warnings

import numpy as np
import pytest
from arm_sweep import real_arms
from conftest import PACKAGE_DIR, robots_dir

from dyn_control import load_chain
from dyn_control.identification.fit import INERTIAL, identified_urdf, parameters, perturbed
from dyn_control.model.urdf import read_urdf_text, robot_element, top_level


def canonical(element):
    """An element as comparable data: tag (or the comment), attributes, text and children,
    white space between elements aside (a writer may reindent).
    """
    tag = element.tag if isinstance(element.tag, str) else "<!--comment-->"
    return (tag, sorted(element.attrib.items()), (element.text or "").strip(),
            [canonical(child) for child in element])


def without(robot, chain):
    """The robot with what identified_urdf owns taken out: the bodies' links' <inertial> and
    the chain joints' <dynamics> (the <robot>'s own children only).
    """
    links, joints = top_level(robot, "link"), top_level(robot, "joint")
    for name in (name for names in chain.lumped_links for name in names):
        for inertial in links[name].findall("inertial"):
            links[name].remove(inertial)
    for name in chain.joint_names:
        for dynamics in joints[name].findall("dynamics"):
            joints[name].remove(dynamics)
    return canonical(robot)


@pytest.mark.parametrize("rel,kwargs", real_arms(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_identified_urdf_of_a_real_file_loads_as_written_and_keeps_the_rest(rel, kwargs):
    """Known parameters (a perturbed copy with viscous and Coulomb friction and a 1 kg tool)
    written into the arm's own file: loaded back, the inertials, damping and friction are
    the ones written (1e-9 of the largest); every element the writer does not own is as in
    the source, transmissions and comments included; and a <transmission>'s <joint> gets no
    <dynamics> (there the fitted friction was lost before).
    """
    path = robots_dir() / rel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = load_chain(path, **kwargs)
        pi = parameters(perturbed(chain, 3))
        written = identified_urdf(path, chain, pi)
        loaded = load_chain(written, **kwargs)
    n = chain.n
    assert loaded.joint_names == chain.joint_names
    friction = pi[INERTIAL * n:(INERTIAL + 2) * n]
    assert friction.max() > 0.5  # the perturbed truth has friction to lose
    np.testing.assert_allclose(parameters(loaded)[:(INERTIAL + 2) * n], pi[:(INERTIAL + 2) * n],
                               rtol=0, atol=1e-9 * np.abs(pi).max())
    source, result = robot_element(read_urdf_text(path)), robot_element(written)
    assert without(result, chain) == without(source, chain)
    for transmission in result.findall("transmission"):
        for joint in transmission.findall("joint"):
            assert joint.find("dynamics") is None, f"<dynamics> written into {rel}'s transmission"


def test_real_files_have_what_the_round_trip_is_about():
    """The sweep's files hold what this module claims to cover: transmissions whose <joint>
    shares a joint's name, <gazebo> tags, meshes and comments, somewhere among them.
    """
    seen = set()
    for rel, _ in real_arms():
        robot = robot_element(read_urdf_text(robots_dir() / rel))
        joints = top_level(robot, "joint")
        if any(j.get("name") in joints for t in robot.findall("transmission")
               for j in t.findall("joint")):
            seen.add("transmission")
        if robot.findall("gazebo"):
            seen.add("gazebo")
        if any(not isinstance(e.tag, str) for e in robot.iter()):
            seen.add("comment")
        if robot.findall("link/visual/geometry/mesh"):
            seen.add("mesh")
    assert seen == {"transmission", "gazebo", "comment", "mesh"}


# Finding a URDF's joints or links by a recursive search (iter, .//, iterfind) reaches the
# <transmission>'s <joint> and a <gazebo> plugin's <link>, which share their names.
RECURSIVE = re.compile(r"""\.iter\(\s*["'](joint|link)|["']\.//(joint|link)|iterfind\(""")


def test_no_code_finds_urdf_elements_by_a_recursive_search():
    found = []
    for folder in ("dyn_control", "harness", "bench"):
        for path in sorted((PACKAGE_DIR / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if RECURSIVE.search(line):
                    found.append(f"{path.relative_to(PACKAGE_DIR)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_recursive_search_pattern_catches_what_it_is_for():
    """The grep above is only as good as its pattern: the forms that lost the friction."""
    for line in ('robot.iter("joint")', "robot.iter('link')", 'robot.findall(".//joint")',
                 "robot.iterfind('joint')"):
        assert RECURSIVE.search(line), line
    assert not RECURSIVE.search('robot.findall("joint")')
