"""make demo VIEW=1's scene (harness.view.ArmView on a viser server, in process, a free port):
what the server holds. References: the chain's forward kinematics (frame_pose) for every link
the chain moves, to 1e-6 m and rad (the scene's values are what the browser gets), and the
markers the controller publishes (test_nodes checks those against forward kinematics).
"""

import socket
import types
import warnings

import numpy as np
import pytest
from conftest import DEFAULT_ARM, require, robots_dir

from dyn_control import load_chain
from dyn_control.kinematics import frame_pose, quaternion_matrix

require("viser")
from harness.view import ARROW, DELETE, LINE_STRIP, ArmView, PortInUse  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def held(frame):
    """(R, p) of a scene frame as the server holds it."""
    w, x, y, z = frame.wxyz
    return quaternion_matrix(x, y, z, w), np.array(frame.position, dtype=float)


@pytest.fixture(scope="module")
def view():
    v = ArmView(DEFAULT_ARM.read_text(), free_port())
    yield v
    v.close()


def assert_links_where_the_kinematics_puts_them(view, chain, q):
    """Show q; every link the chain moves is at frame_pose's pose, 1e-6. -> {link: p}."""
    view.show_state(dict(zip(chain.joint_names, q)))
    poses = {}
    for links in chain.lumped_links:
        for link in links:
            R, p = held(view.frames[link])
            R_fk, p_fk = frame_pose(chain, q, link)
            np.testing.assert_allclose(p, p_fk, atol=1e-6)
            np.testing.assert_allclose(R, R_fk, atol=1e-6)
            poses[link] = p
    return poses


def test_every_link_is_where_the_forward_kinematics_puts_it_and_moves_with_the_arm(view):
    chain = load_chain(DEFAULT_ARM)
    rng = np.random.default_rng(0)
    before = None
    for q in (np.zeros(chain.n), rng.uniform(-1.0, 1.0, chain.n)):
        poses = assert_links_where_the_kinematics_puts_them(view, chain, q)
        if before is not None:  # the hand moved with the arm
            assert np.linalg.norm(poses[chain.tip_link] - before[chain.tip_link]) > 0.05
        before = poses


def marker(ns, k, kind, points=(), action=0, pose=None, frame=""):
    point = lambda p: types.SimpleNamespace(x=p[0], y=p[1], z=p[2])  # noqa: E731
    pose = pose or (np.zeros(3), (0.0, 0.0, 0.0, 1.0))
    return types.SimpleNamespace(
        header=types.SimpleNamespace(frame_id=frame),
        ns=ns, id=k, type=kind, action=action, points=[point(p) for p in points],
        pose=types.SimpleNamespace(position=point(pose[0]),
                                   orientation=types.SimpleNamespace(**dict(zip("xyzw", pose[1])))))


def test_markers_become_a_path_axes_and_an_arrow_and_go_when_deleted(view):
    path = [(0.3, 0.0, 0.5), (0.35, 0.05, 0.5), (0.4, 0.1, 0.55)]
    view.show_markers([marker("desired_path", 0, LINE_STRIP, path),
                       marker("target", 0, ARROW, pose=((0.4, 0.1, 0.5), (0.0, 0.0, 0.0, 1.0))),
                       marker("push", 0, ARROW, [(0.3, 0.0, 0.4), (0.4, 0.1, 0.5)])])
    line = view.markers[("", "desired_path", 0)]
    np.testing.assert_allclose(np.asarray(line.points)[:, 0], path[:-1], atol=1e-6)
    np.testing.assert_allclose(np.asarray(line.points)[:, 1], path[1:], atol=1e-6)
    np.testing.assert_allclose(view.markers[("", "target", 0)].position, (0.4, 0.1, 0.5), atol=1e-6)
    np.testing.assert_allclose(np.asarray(view.markers[("", "push", 0)].points)[0],
                               [(0.3, 0.0, 0.4), (0.4, 0.1, 0.5)], atol=1e-6)
    view.show_markers([marker("push", 0, ARROW, action=DELETE)])
    assert ("", "push", 0) not in view.markers and ("", "desired_path", 0) in view.markers


def test_a_mesh_that_cannot_be_found_is_skipped_with_one_warning_and_a_busy_port_named():
    """A URDF whose visuals are a box, a cylinder, a sphere and two meshes that are not there:
    the three shapes are in the scene, the meshes skipped with one warning; a second view on
    the same port is refused in one line naming it.
    """
    text = DEFAULT_ARM.read_text().replace('<link name="link1">', """<link name="link1">
    <visual><geometry><box size="0.1 0.1 0.2"/></geometry></visual>
    <visual><origin xyz="0 0 0.1"/><geometry><cylinder radius="0.05"
    length="0.2"/></geometry></visual> <visual><geometry><sphere radius="0.06"/></geometry></visual>
    <visual><geometry><mesh filename="package://nowhere/meshes/link1.stl"/></geometry></visual>
    <visual><geometry><mesh filename="meshes/nothere.dae"/></geometry></visual>""", 1)
    port = free_port()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = ArmView(text, port)
    try:
        said = [str(w.message) for w in caught if "mesh" in str(w.message)]
        assert len(said) == 1 and "skips 2 mesh file(s)" in said[0], said
        assert v.missing == ["package://nowhere/meshes/link1.stl", "meshes/nothere.dae"]
        with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is in use"):
            ArmView(DEFAULT_ARM.read_text(), port)
    finally:
        v.close()


@pytest.mark.parametrize("rel,kwargs,meshes", [
    ("ur_description/urdf/ur5_robot.urdf", {}, 7),
    ("panda_description/urdf/panda.urdf", {"tip_link": "panda_hand"}, 10),
    ("xarm_description/urdf/xarm7.urdf", {}, 8)])
def test_a_real_arms_meshes_load_and_its_links_are_where_the_kinematics_puts_them(rel, kwargs,
                                                                                meshes):
    """example-robot-data's UR5, Panda and xArm7, their own files: their visual meshes
    (COLLADA through pycollada, the xArm7's STL; package:// paths, found under the package's
    folder above the URDF, the Panda's and the xArm7's as package://example-robot-data/...)
    are in the scene, none skipped, no warning; and at a random state every link the chain
    moves (the Panda's hand and locked fingers too) is where frame_pose puts it, to 1e-6.
    """
    path = robots_dir() / rel
    chain = load_chain(path, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = ArmView(path.read_text(), free_port(), urdf_dir=path.parent)
    try:
        assert v.missing == []
        assert path.read_text().count("<visual>") >= meshes
        q = np.random.default_rng(1).uniform(-0.5, 0.5, chain.n) + np.clip(
            0.0, chain.position_min + 0.5, chain.position_max - 0.5)
        assert_links_where_the_kinematics_puts_them(v, chain, q)
    finally:
        v.close()


def test_the_view_node_shows_published_joint_states_and_markers(view):
    """Over DDS (its own domain): a JointState on /joint_states moves the scene to the forward
    kinematics of its positions, and a MarkerArray on the controller's ~/markers adds its path.
    """
    import time

    import rclpy
    from geometry_msgs.msg import Point
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import Marker, MarkerArray

    from harness.view import view_node
    chain = load_chain(DEFAULT_ARM)
    q = np.linspace(-0.5, 0.5, chain.n)
    rclpy.init(domain_id=95)
    node = view_node(view)
    talker = rclpy.create_node("view_test_talker")
    try:
        states = talker.create_publisher(JointState, "/joint_states", 10)
        markers = talker.create_publisher(MarkerArray, "/computed_torque_controller/markers", 10)
        path = Marker(ns="desired_path", id=1, type=Marker.LINE_STRIP,
                      points=[Point(x=0.1 * k, y=0.0, z=0.5) for k in range(3)])
        deadline = time.monotonic() + 30.0
        R_fk, p_fk = frame_pose(chain, q, chain.tip_link)
        while time.monotonic() < deadline:
            states.publish(JointState(name=chain.joint_names, position=q.tolist()))
            markers.publish(MarkerArray(markers=[path]))
            time.sleep(0.1)
            R, p = held(view.frames[chain.tip_link])
            if np.allclose(p, p_fk, atol=1e-6) and ("", "desired_path", 1) in view.markers:
                break
        np.testing.assert_allclose(p, p_fk, atol=1e-6)
        np.testing.assert_allclose(R, R_fk, atol=1e-6)
        assert ("", "desired_path", 1) in view.markers
    finally:
        talker.destroy_node()
        node.close()
        rclpy.try_shutdown()


def test_sigterm_to_make_demo_view_stops_the_view_and_every_node(tmp_path):
    """SIGTERM to `make demo VIEW=1`'s process is taken as Ctrl-C: the view (a process in a
    session of its own) and the loop's nodes are stopped, none is left running (every process
    of this test's ROS domain, read from /proc).
    """
    import os
    import pathlib
    import signal
    import subprocess
    import sys
    import time

    from conftest import PACKAGE_DIR
    domain = "48"
    demo = subprocess.Popen([sys.executable, "-m", "harness.demo", "--out", str(tmp_path),
                             "--view-port", str(free_port())], cwd=PACKAGE_DIR,
                            env={**os.environ, "ROS_DOMAIN_ID": domain},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def in_domain():
        found = []
        for proc in pathlib.Path("/proc").glob("[0-9]*"):
            try:
                environ = (proc / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"ROS_DOMAIN_ID={domain}".encode() in environ and int(proc.name) != demo.pid:
                found.append(int(proc.name))
        return found

    try:
        deadline = time.monotonic() + 60
        while len(in_domain()) < 3:  # the view and the loop's first nodes
            assert time.monotonic() < deadline and demo.poll() is None
            time.sleep(0.2)
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=60)
        deadline = time.monotonic() + 15
        while in_domain() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {pid: _cmdline(pid) for pid in in_domain()}
        assert not left, left
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid in in_domain():
            os.kill(pid, signal.SIGKILL)


def test_browser_check_without_the_browser_is_one_line(monkeypatch, capsys):
    import shutil

    from harness import view
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert view.main(["--urdf", str(DEFAULT_ARM), "--browser-check", "/nowhere"]) == 2
    assert capsys.readouterr().err == (
        "view --browser-check: chromium-headless-shell is not installed (Debian: apt-get "
        "install chromium-headless-shell)\n")


def test_a_world_shows_each_arm_from_its_own_topics_and_markers_in_its_own_base():
    """The world of make demo ARM=two_arms, over DDS (its own domain): /left/joint_states and
    /right/joint_states each move their own arm (the other's stays where its last state put
    it), to the forward kinematics of the world's links (root 'world'); a marker in the left
    controller's base frame is drawn under that link.
    """
    import time

    import rclpy
    from geometry_msgs.msg import Point
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import Marker, MarkerArray

    from harness.view import view_node
    from harness.world import world_robots
    text, joints, _ = world_robots()
    view = ArmView(text, free_port())
    chains = {ns: load_chain(text, root_link="world", joints=names)
              for ns, names in joints.items()}
    q = {"left": np.linspace(-0.5, 0.5, 7), "right": np.linspace(0.4, -0.4, 7)}
    rclpy.init(domain_id=94)
    node = view_node(view, ["/left", "/right"])
    talker = rclpy.create_node("view_test_talker")

    def at_fk():
        return all(np.allclose(held(view.frames[c.tip_link])[1],
                               frame_pose(c, q[ns], c.tip_link)[1], atol=1e-6)
                   for ns, c in chains.items())

    try:
        states = {ns: talker.create_publisher(JointState, f"/{ns}/joint_states", 10)
                  for ns in joints}
        markers = talker.create_publisher(MarkerArray,
                                          "/left/computed_torque_controller/markers", 10)
        path = Marker(ns="desired_path", id=1, type=Marker.LINE_STRIP,
                      points=[Point(x=0.1 * k, y=0.0, z=0.5) for k in range(3)])
        path.header.frame_id = "left_base_link"
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            for ns, publisher in states.items():
                publisher.publish(JointState(name=joints[ns], position=q[ns].tolist()))
            markers.publish(MarkerArray(markers=[path]))
            time.sleep(0.1)
            if at_fk() and ("/left", "desired_path", 1) in view.markers:
                break
        for ns, c in chains.items():
            for link in (c.tip_link, c.lumped_links[2][0]):
                R, p = held(view.frames[link])
                R_fk, p_fk = frame_pose(c, q[ns], link)
                np.testing.assert_allclose(p, p_fk, atol=1e-6)
                np.testing.assert_allclose(R, R_fk, atol=1e-6)
        line = view.markers[("/left", "desired_path", 1)]
        assert line.name.startswith("/arm/left_base_link/markers/left/"), line.name
    finally:
        talker.destroy_node()
        node.close()
        rclpy.try_shutdown()
        view.close()


def _cmdline(pid):
    """A process's command line, to name what was left running (or "ended" since)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "ended"
