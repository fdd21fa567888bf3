"""What the launch files share: paths in the package's share folder, and a URDF or xacro turned
into the robot_description text every node takes. No launch import here, so the files stay
plain launch descriptions and this stays importable (and testable) without launch.
"""

import os

PACKAGE = "dyn_control"
# ros2_control's topic-based hardware (ros-controls/topic_based_hardware_interfaces), its name
# and the older one it still answers to; dynamics_simulator in command_type joint_state is the
# simulator behind it (urdf/default_arm.ros2_control.urdf.xacro gives it its parameters)
TOPIC_BASED_PLUGINS = ("joint_state_topic_hardware_interface/JointStateTopicSystem",
                       "topic_based_ros2_control/TopicBasedSystem")


def share(*parts):
    """A path in the installed package's share folder (config/, urdf/, launch/)."""
    from ament_index_python.packages import get_package_share_directory
    return os.path.join(get_package_share_directory(PACKAGE), *parts)


def shipped_arm(arm, urdf_file):
    """The launch arguments `arm` and `urdf_file` -> (the URDF or xacro to run, [the arm's own
    parameter file]): a URDF of your own, or the shipped arm's, and that arm's settings in
    config/<arm>.yaml (its start pose; a tree's joints, for every node), never with a URDF of
    your own.
    """
    if urdf_file:
        return urdf_file, []
    params = share("config", f"{arm}.yaml")
    return share("urdf", f"{arm}.urdf"), [params] if os.path.isfile(params) else []


def robot_description(path, **mappings):
    """A URDF or xacro file -> URDF text (xacro passes a plain URDF through)."""
    import xacro
    return xacro.process_file(path, mappings=mappings).toxml()


def real_arm_parameters():
    """(the simulator's, the controller's) parameters when the simulator runs a URDF the
    controller does not know, a "real arm" to identify against (sim_urdf_file:=, make
    identify, the harness's sim_urdf): physics finer than the command period
    (REAL_ARM_SUBSTEPS), and the controller's external torques off, since its model is wrong
    by design and its contact levels would read the error as a push and hold the arm.
    """
    from dyn_control.sim.simulation import (
        REAL_ARM_SUBSTEPS,  # numba's import: only when it is needed
    )
    return {"substeps": REAL_ARM_SUBSTEPS}, {"external_torque.enabled": False}


def namespace(text):
    """A `namespace` launch argument -> its absolute form ("" for the root): "left", "/left"
    and "/left/" are all "/left", so names built from it ("/left/controller_manager") hold.
    """
    parts = [part for part in text.strip().split("/") if part]
    return "/" + "/".join(parts) if parts else ""


def namespace_argument():
    """The `namespace` launch argument every launch file declares."""
    from launch.actions import DeclareLaunchArgument
    return DeclareLaunchArgument("namespace", default_value="",
                                 description="the arm's namespace (several arms on one graph)")


def in_namespace(ns, actions):
    """The launch actions under the namespace ns (namespace()'s form): every node's relative
    topics, services, actions and parameters move there; /clock, /diagnostics and /tf, which
    the nodes name absolutely, stay global.
    """
    if not ns:
        return actions
    from launch.actions import GroupAction
    from launch_ros.actions import PushRosNamespace
    return [GroupAction([PushRosNamespace(ns), *actions])]


def is_true(text):
    """A launch argument given as text -> bool."""
    return text.lower() == "true"


def gui_nodes(description, sim_time, state_publisher=True):
    """The `gui:=true` nodes, as launch_ros Node keyword arguments: robot_state_publisher (/tf
    and /robot_description from the same URDF text the other nodes get; not when the launch
    file starts one anyway) and rviz2 with share/dyn_control/rviz/dyn_control.rviz, its fixed
    frame the URDF's root link, all on `sim_time`.
    """
    from dyn_control.model.urdf import parse
    time = {"use_sim_time": sim_time}
    nodes = [{"package": "robot_state_publisher", "executable": "robot_state_publisher",
                  "output": "screen", "parameters": [{"robot_description": description, **time}]}]
    nodes.append({"package": "rviz2", "executable": "rviz2", "name": "rviz2", "output": "screen",
                      "arguments": ["-d", share("rviz", "dyn_control.rviz"),
                                 "-f", parse(description).get_root()],
                      "parameters": [time]})
    return nodes if state_publisher else nodes[1:]


def installed(specs):
    """(the specs whose package is installed, ROS's own message for each that is not): launch
    raises on a Node of a missing package and stops, leaving the nodes it had started running,
    so a launch file starts the rest and says what it lacks instead. The message is
    ament_index's, the one launch_ros would give.
    """
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    found, missing = [], []
    for spec in specs:
        try:
            get_package_prefix(spec["package"])
            found.append(spec)
        except PackageNotFoundError as err:
            missing.append(f"{spec['executable']} not started: {err.args[0]}")
    return found, missing


def node_parameters(path, node=None):
    """The ros__parameters a parameters file gives the node named `node` in any namespace, as
    ROS reads it: the sections "/**", "/**/node", "node" and "/node", the later ones winning
    (node None: what it gives every node, "/**").
    """
    import pathlib

    import yaml
    sections = yaml.safe_load(pathlib.Path(path).read_text()) or {}
    found = {}
    keys = ("/**",) if node is None else ("/**", f"/**/{node}", node, f"/{node}")
    for key in keys:
        found.update((sections.get(key) or {}).get("ros__parameters", {}))
    return found


def world_parameters(urdf, namespaces, spacing=1.0, arm_params=()):
    """Several copies of one arm in a world (model.world.side_by_side) -> (URDF text,
    {namespace: its joints}, the simulator's parameters: `robots`, and `initial_positions`
    when the arm's own parameter files (arm_params) give one, every copy at it).
    """
    from dyn_control.model.world import side_by_side
    text, joints = side_by_side(urdf, namespaces, spacing)
    simulator = {"robots": [f"{ns}: {', '.join(names)}" for ns, names in joints.items()]}
    start = None
    for path in arm_params:
        start = node_parameters(path, "dynamics_simulator").get("initial_positions", start)
    if start is not None:
        simulator["initial_positions"] = [float(x) for _ in namespaces for x in start]
    return text, joints, simulator
