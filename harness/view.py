"""make demo VIEW=1: a live 3D view of the simulated arm in the browser, served on localhost by
viser (MIT; its web client is in the wheel, so no internet is needed). The optional extra
requirements-view.txt; plain make demo does not install it.

    python -m harness.view --urdf ARM.urdf [--port 8080]

`ArmView` is the scene: every URDF link is a frame posed from the URDF's joints
(harness.transforms) at the joint states it is shown; under it the link's <visual> geometry
(box, cylinder, sphere, mesh), or, for a link without any, a line to each child joint's origin,
so that an arm with no visuals (the shipped ones) is still seen. The tips carry axes: the
current hand poses. The controller's ~/markers come in as they go to RViz: the desired path as
a line, each target pose as axes, each push as an arrow. `ViewNode` feeds it from
/joint_states (at most FRAME_RATE a second) and ~/markers.
"""

import argparse
import pathlib
import socket
import sys
import time
import warnings

import numpy as np

from dyn_control.kinematics import matrix_quaternion, quaternion_matrix
from dyn_control.model.urdf import origin_pose, read_urdf_text, robot_element
from harness.transforms import JointTransforms, link_poses

FRAME_RATE = 30.0  # Hz of wall time: what a browser shows smoothly
GREY, BLUE, ORANGE, RED = (170, 170, 180), (50, 150, 255), (255, 150, 0), (255, 30, 30)
MARKER_COLORS = {"desired_path": BLUE, "target": ORANGE, "push": RED}
# visualization_msgs/Marker's type and action numbers (its own constants; the view does not
# import ROS for them)
ARROW, LINE_STRIP, DELETE = 0, 4, 2


class PortInUse(ValueError):
    pass


def check_port(port, host="127.0.0.1"):
    """PortInUse, one line naming the port, when something listens there already."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as a server binds (SO_REUSEADDR): a port a closed view left in TIME_WAIT is free
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as err:
            raise PortInUse(f"port {port} on {host} is in use ({err.strerror}): choose another "
                            f"with VIEW_PORT=") from None


def wxyz(R):
    x, y, z, w = matrix_quaternion(R)
    return np.array([w, x, y, z])


class ArmView:
    """The scene of one arm on a viser server at http://host:port (`url`); module docstring.
    urdf_dir: where relative mesh paths start (the URDF file's folder).
    """

    def __init__(self, urdf_text, port=8080, host="127.0.0.1", urdf_dir="."):
        import viser
        check_port(port, host)
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.url = f"http://localhost:{port}" if host in ("127.0.0.1", "0.0.0.0") \
            else f"http://{host}:{port}"
        self.transforms = JointTransforms(urdf_text)
        self.root = self.transforms.root
        self.markers = {}  # (ns, id) -> handle
        scene = self.server.scene
        links = {self.root} | {child for _, _, child, *_ in self.transforms.joints}
        tips = links - {parent for _, parent, *_ in self.transforms.joints}
        self.frames = {link: scene.add_frame(f"/arm/{self._path(link)}", show_axes=link in tips,
                                             axes_length=0.08, axes_radius=0.005)
                       for link in links}
        self.missing = self._add_geometry(urdf_text, pathlib.Path(urdf_dir))
        poses = self.show_state({})
        # the first look: the whole arm, from the front and above, over a floor grid
        reach = max(float(np.linalg.norm(p)) for _, p in poses.values()) or 1.0
        camera = self.server.initial_camera
        camera.look_at = (0.0, 0.0, 0.4 * reach)
        camera.position = (1.6 * reach, -1.6 * reach, 1.2 * reach)
        camera.up = (0.0, 0.0, 1.0)
        scene.add_grid("/floor", width=2 * reach, height=2 * reach, cell_size=0.1)

    def _path(self, link):
        return link.replace("/", "_")

    def _add_geometry(self, urdf_text, urdf_dir):
        """Each link's visuals under its frame; -> the mesh files that could not be loaded
        (skipped, one warning for all of them).
        """
        scene, missing = self.server.scene, []
        text = urdf_text.decode() if isinstance(urdf_text, bytes) else urdf_text
        drawn = set()
        for link in robot_element(text).findall("link"):
            name = link.get("name")
            for k, visual in enumerate(link.findall("visual")):
                geometry = visual.find("geometry")
                if geometry is None or len(geometry) == 0:
                    continue
                R, p = origin_pose(_Origin(visual.find("origin")))
                where = {"wxyz": wxyz(R), "position": p}
                node = f"/arm/{self._path(name)}/visual{k}"
                shape = geometry[0]
                if shape.tag == "box":
                    size = [float(x) for x in shape.get("size", "0 0 0").split()]
                    scene.add_box(node, color=GREY, dimensions=size, **where)
                elif shape.tag == "cylinder":
                    scene.add_cylinder(node, radius=float(shape.get("radius", 0)),
                                       height=float(shape.get("length", 0)), color=GREY, **where)
                elif shape.tag == "sphere":
                    scene.add_icosphere(node, radius=float(shape.get("radius", 0)), color=GREY,
                                        **where)
                elif shape.tag == "mesh":
                    mesh = load_mesh(shape.get("filename", ""), urdf_dir)
                    if mesh is None:
                        missing.append(shape.get("filename", ""))
                        continue
                    scale = [float(x) for x in shape.get("scale", "1 1 1").split()]
                    mesh.apply_scale(scale)
                    scene.add_mesh_trimesh(node, mesh, **where)
                else:
                    continue
                drawn.add(name)
        for _, parent, child, R0, p0, *_ in self.transforms.joints:  # sticks where no visual
            if parent not in drawn and np.linalg.norm(p0) > 1e-6:
                scene.add_line_segments(f"/arm/{self._path(parent)}/to_{self._path(child)}",
                                        np.array([[[0.0, 0.0, 0.0], p0]]), GREY, thickness=0.05)
        if missing:
            warnings.warn(f"the view skips {len(missing)} mesh file(s) it cannot load, first "
                          f"{missing[0]!r}", stacklevel=2)
        return missing

    def show_state(self, positions):
        """Pose every link at the joint positions {name: rad or m} (joints not named: at zero);
        -> {link: (R, p)} in the root link's frame, as the scene now holds them.
        """
        edges = (self.transforms.static(positions.keys())
                 + self.transforms.at(positions))
        poses = link_poses(edges, self.root)
        with self.server.atomic():
            for link, (R, p) in poses.items():
                frame = self.frames[link]
                frame.wxyz, frame.position = wxyz(R), p
        return poses

    def show_markers(self, markers, source=""):
        """A controller's ~/markers (visualization_msgs/Marker fields: header.frame_id, ns, id,
        type, action, pose, points): add or replace each, remove those deleted. Each is drawn in
        its frame_id's link where the view has it (a world's arm has its own base), else in the
        root's. source: the controller's namespace, which keeps two controllers' ids apart.
        """
        scene = self.server.scene
        for m in markers:
            key = (source, m.ns, m.id)
            old = self.markers.pop(key, None)
            if old is not None:
                old.remove()
            if m.action == DELETE:
                continue
            color = MARKER_COLORS.get(m.ns, GREY)
            frame = m.header.frame_id
            parent = f"/arm/{self._path(frame)}" if frame in self.frames else ""
            name = f"{parent}/markers{source}/{m.ns}/{m.id}"
            points = np.array([[q.x, q.y, q.z] for q in m.points])
            if m.type == LINE_STRIP and len(points) > 1:
                segments = np.stack([points[:-1], points[1:]], axis=1)
                self.markers[key] = scene.add_line_segments(name, segments, color, thickness=0.006)
            elif m.type == ARROW and len(points) == 2:
                self.markers[key] = scene.add_arrows(name, points[None], color, shaft_radius=0.005,
                                                     head_radius=0.012, head_length=0.03)
            elif m.type == ARROW:  # a pose: axes there
                o, q = m.pose.orientation, m.pose.position
                self.markers[key] = scene.add_frame(
                    name, axes_length=0.1, axes_radius=0.006,
                    wxyz=wxyz(quaternion_matrix(o.x, o.y, o.z, o.w)), position=(q.x, q.y, q.z))

    def close(self):
        self.server.stop()


class _Origin:
    """An <origin> element as origin_pose reads a urdf_parser_py Pose (xyz, rpy)."""

    def __init__(self, element):
        def floats(key):
            return None if element is None or element.get(key) is None else [
                float(x) for x in element.get(key).split()]
        self.xyz, self.rpy = floats("xyz"), floats("rpy")


def load_mesh(filename, urdf_dir):
    """A trimesh of a URDF mesh (file://, package:// through the ament index where there is
    one, else a folder of the package's name above the URDF's, or a path relative to the
    URDF's folder), or None when it cannot be found or read.
    """
    import trimesh
    path = None
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        try:
            from ament_index_python.packages import get_package_share_directory
            path = pathlib.Path(get_package_share_directory(package)) / rest
        except Exception:  # noqa: BLE001 - no ament index, or no such package
            # without one: the package's folder above the URDF (example-robot-data from PyPI)
            path = next((folder / rest for folder in urdf_dir.resolve().parents
                         if folder.name == package), None)
    elif filename:
        path = pathlib.Path(filename.removeprefix("file://"))
        path = path if path.is_absolute() else urdf_dir / path
    if path is None or not path.is_file():
        return None
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception:  # noqa: BLE001 - trimesh raises many types on a format it cannot read
        return None
    return mesh if isinstance(mesh, trimesh.Trimesh) and len(mesh.vertices) else None


def view_node(view, namespaces=("",), controller="computed_torque_controller"):
    """A harness background node that shows each namespace's joint_states and its controller's
    ~/markers ("": the root's; a world's arms: "/left", "/right"), the states of all of them
    at once.
    """
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import MarkerArray

    from .background import BackgroundNode

    class ViewNode(BackgroundNode):
        def __init__(self):
            super().__init__("dyn_control_view")
            self.shown = 0.0
            self.positions = {}  # every arm's newest, by joint name
            for ns in namespaces:
                self.create_subscription(JointState, f"{ns}/joint_states", self.on_state, 1)
                self.create_subscription(
                    MarkerArray, f"{ns}/{controller}/markers",
                    lambda msg, ns=ns: view.show_markers(msg.markers, ns), 10)
            self.start()

        def on_state(self, msg):
            self.positions.update(zip(msg.name, msg.position))
            now = time.monotonic()
            if now - self.shown >= 1.0 / FRAME_RATE:
                self.shown = now
                view.show_state(self.positions)

    return ViewNode()


def browser_check(urdf, out_dir, port=8095, browser="chromium-headless-shell"):
    """The check by hand in a real headless browser (Debian's chromium-headless-shell renders
    WebGL with SwiftShader): the arm at zero and at another pose, a screenshot of each in
    out_dir; -> the share of pixels that differ between them (0: the view did not move).
    """
    import subprocess

    import imageio.v3 as iio

    from dyn_control import load_chain
    chain = load_chain(urdf)
    view = ArmView(read_urdf_text(urdf), port, urdf_dir=pathlib.Path(urdf).resolve().parent)
    shots = []
    try:
        for k, q in enumerate((np.zeros(chain.n), np.linspace(1.0, -1.0, chain.n))):
            view.show_state(dict(zip(chain.joint_names, q)))
            shots.append(pathlib.Path(out_dir) / f"view_{k}.png")
            subprocess.run([browser, "--no-sandbox", "--use-angle=swiftshader",
                            "--enable-unsafe-swiftshader", "--window-size=800,600",
                            "--virtual-time-budget=8000", f"--screenshot={shots[-1]}",
                            view.url], capture_output=True, timeout=120, check=True)
    finally:
        view.close()
    a, b = (iio.imread(path)[..., :3].astype(int) for path in shots)
    return float(np.any(a != b, axis=-1).mean()), shots


def main(argv=None):
    import rclpy
    parser = argparse.ArgumentParser(description="the live 3D view of make demo VIEW=1")
    parser.add_argument("--urdf", required=True)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--namespaces", default="",
                        help="a world's arms, comma-separated (left,right): each one's "
                             "joint_states and markers; default the root namespace's")
    parser.add_argument("--browser-check", metavar="DIR", help="by hand: two poses, two "
                        "screenshots in DIR from chromium-headless-shell, and how much differs")
    args, ros = parser.parse_known_args(argv)
    if args.browser_check:
        import shutil
        if shutil.which("chromium-headless-shell") is None:
            print("view --browser-check: chromium-headless-shell is not installed (Debian: "
                  "apt-get install chromium-headless-shell)", file=sys.stderr)
            return 2
        share, shots = browser_check(args.urdf, args.browser_check, args.port)
        print(f"{', '.join(map(str, shots))}: {100 * share:.2f} % of the pixels differ")
        return 0 if share > 0 else 1
    try:
        view = ArmView(read_urdf_text(args.urdf), args.port,
                       urdf_dir=pathlib.Path(args.urdf).resolve().parent)
    except PortInUse as err:
        print(f"view: {err}", file=sys.stderr)
        return 2
    print(f"view at {view.url}", flush=True)
    rclpy.init(args=ros)
    node = view_node(view, [f"/{ns}" for ns in args.namespaces.split(",") if ns] or [""])
    try:
        while rclpy.ok():
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        node.close()
        rclpy.try_shutdown()
        view.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
