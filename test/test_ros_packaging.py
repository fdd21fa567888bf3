"""The package as ROS 2 users get it: colcon build, the launch files, the ros2_control files.

colcon: `colcon build` of a copy of the package in a temporary workspace must list it as
ros.ament_python and install the executables in lib/dyn_control and the launch, config and
urdf files in share/dyn_control. Launch files are checked statically here (launch is not
installed in CI); test_sim_launch.py runs them on a ROS 2 install.
"""

import ast
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import yaml
from conftest import CONFIG_DIR, PACKAGE_DIR, URDF_DIR, require, rviz_displays

from dyn_control import inverse_dynamics, load_chain

LAUNCH_DIR = PACKAGE_DIR / "launch"
EXECUTABLES = {"computed_torque_controller", "dynamics_simulator", "trajectory_demo"}


def _copy_package(dest):
    """The package source, without the venv, build outputs and caches."""
    shutil.copytree(PACKAGE_DIR, dest, ignore=shutil.ignore_patterns(
        ".*", "out", "build", "install", "log", "*.egg-info", "__pycache__"))


def test_colcon_build_installs_executables_and_share_files(tmp_path):
    require("colcon_core")
    colcon = pathlib.Path(sys.executable).parent / "colcon"
    colcon = str(colcon) if colcon.is_file() else shutil.which("colcon")
    _copy_package(tmp_path / "src" / "dyn_control")
    listed = subprocess.run([colcon, "list"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert "dyn_control" in listed.stdout and "(ros.ament_python)" in listed.stdout, listed.stderr
    build = subprocess.run([colcon, "build", "--event-handlers", "console_direct-"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    install = tmp_path / "install" / "dyn_control"
    assert EXECUTABLES <= {p.name for p in (install / "lib" / "dyn_control").iterdir()}
    share = install / "share" / "dyn_control"
    for folder, names in (("launch", ["sim.launch.py", "controller.launch.py",
                                      "ros2_control.launch.py", "two_arms.launch.py"]),
                          ("config", ["controller.yaml", "simulator.yaml", "demo.yaml",
                                      "ros2_controllers.yaml"]),
                          ("urdf", ["default_arm.urdf", "two_link.urdf",
                                    "default_arm.ros2_control.urdf.xacro"]),
                          ("rviz", ["dyn_control.rviz"])):
        for name in names:
            assert (share / folder / name).is_file(), f"{folder}/{name} not installed"
    assert (share / "package.xml").is_file()
    index = install / "share" / "ament_index" / "resource_index"
    assert (index / "packages" / "dyn_control").is_file()
    # the build compiled the kernels beside the installed package (dyn_control.precompile):
    # no node's first start compiles them
    site = next((install / "lib").glob("python*/site-packages/dyn_control"))
    assert [p.name for p in site.glob("__pycache__/dyn_control-kernels-*/complete")] == \
        ["complete"], build.stdout[-2000:]


def test_launch_files_define_launch_descriptions_from_the_shared_config():
    for path in LAUNCH_DIR.glob("*.launch.py"):
        tree = ast.parse(path.read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "generate_launch_description" in functions, path.name
        imports = {alias.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                   for alias in n.names} | {n.module for n in ast.walk(tree)
                                            if isinstance(n, ast.ImportFrom)}
        assert "launch_ros.actions" in imports and "LaunchDescription" in imports
    sim = (LAUNCH_DIR / "sim.launch.py").read_text()
    for config in ("simulator.yaml", "controller.yaml", "demo.yaml"):
        assert f'"{config}"' in sim and (CONFIG_DIR / config).is_file()
    for argument in ("arm", "urdf_file", "arm_params", "use_sim_time", "controller_params", "demo"):
        assert f'DeclareLaunchArgument("{argument}"' in sim
    assert '"robot_description": description' in sim


def test_a_simulator_given_its_own_urdf_runs_a_real_arm_for_a_controller_without_contact():
    """sim.launch.py's sim_urdf_file, the harness's sim_urdf and make identify take one set of
    parameters: the simulator's substeps (REAL_ARM_SUBSTEPS) and the controller's external
    torques off, each a parameter its node declares, with a value its check accepts.
    """
    from dyn_control.nodes.launch_support import real_arm_parameters
    from dyn_control.parameters import CONTROLLER, SIMULATOR
    from dyn_control.sim.simulation import REAL_ARM_SUBSTEPS
    simulator, controller = real_arm_parameters()
    assert simulator == {"substeps": REAL_ARM_SUBSTEPS} and REAL_ARM_SUBSTEPS == 1
    assert controller == {"external_torque.enabled": False}
    for table, values in ((SIMULATOR, simulator), (CONTROLLER, controller)):
        assert all(table.find(name) is not None for name in values), values
        table.check(values)
    sim = (LAUNCH_DIR / "sim.launch.py").read_text()
    assert "real_arm_parameters()" in sim and 'DeclareLaunchArgument("sim_urdf_file"' in sim


def test_gui_starts_robot_state_publisher_and_rviz_with_the_shipped_view_only_when_asked(
        monkeypatch):
    """gui (default false) in both launch files gates launch_support.gui_nodes: with it,
    robot_state_publisher gets the same URDF text as our nodes and rviz2 the shipped .rviz
    with the URDF's root as fixed frame, both on use_sim_time; ros2_control.launch.py, which
    runs its own robot_state_publisher, adds rviz2 only. package.xml declares both.
    """
    from dyn_control.nodes import launch_support
    monkeypatch.setattr(launch_support, "share", lambda *parts: str(PACKAGE_DIR.joinpath(*parts)))
    for name in ("sim.launch.py", "ros2_control.launch.py"):
        text = (LAUNCH_DIR / name).read_text()
        assert 'DeclareLaunchArgument("gui", default_value="false"' in text, name
        assert 'is_true(LaunchConfiguration("gui")' in text or 'is_true(value("gui"))' in text
        assert "gui_nodes(description" in text, name
    description = (URDF_DIR / "two_link.urdf").read_text()
    rsp, rviz = launch_support.gui_nodes(description, True)
    assert (rsp["package"], rsp["executable"]) == ("robot_state_publisher",) * 2
    assert rsp["parameters"] == [{"robot_description": description, "use_sim_time": True}]
    assert (rviz["package"], rviz["executable"]) == ("rviz2", "rviz2")
    config = pathlib.Path(rviz["arguments"][rviz["arguments"].index("-d") + 1])
    assert config == PACKAGE_DIR / "rviz" / "dyn_control.rviz" and config.is_file()
    assert rviz["arguments"][rviz["arguments"].index("-f") + 1] == "base_link"
    assert rviz["parameters"] == [{"use_sim_time": True}]
    assert launch_support.gui_nodes(description, False, state_publisher=False) == [
        {**rviz, "parameters": [{"use_sim_time": False}]}]
    package = (PACKAGE_DIR / "package.xml").read_text()
    for dependency in ("robot_state_publisher", "rviz2", "visualization_msgs"):
        assert f"<exec_depend>{dependency}</exec_depend>" in package


def test_a_gui_package_that_is_not_installed_is_named_in_ros_own_words(tmp_path, monkeypatch):
    """launch_support.installed: with robot_state_publisher in the ament index and rviz2 not,
    the first is started and the second named with ament_index's message (the one launch_ros
    raises, which would stop the whole launch and leave its started nodes running).
    """
    from dyn_control.nodes import launch_support
    index = tmp_path / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "robot_state_publisher").touch()
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    monkeypatch.setattr(launch_support, "share", lambda *parts: str(PACKAGE_DIR.joinpath(*parts)))
    specs = launch_support.gui_nodes((URDF_DIR / "two_link.urdf").read_text(), True)
    found, missing = launch_support.installed(specs)
    assert [s["package"] for s in found] == ["robot_state_publisher"]
    assert missing == [f"rviz2 not started: package 'rviz2' not found, searching: ['{tmp_path}']"]
    for name in ("sim.launch.py", "ros2_control.launch.py"):
        assert "installed(gui_nodes(" in (LAUNCH_DIR / name).read_text(), name


def test_the_rviz_view_reads_the_description_as_robot_state_publisher_offers_it():
    """RobotModel on /robot_description, transient local (robot_state_publisher latches it),
    TF, and a MarkerArray (its topic: test_nodes checks it is the controller's ~/markers).
    """
    displays = rviz_displays()
    topic = displays["rviz_default_plugins/RobotModel"]["Description Topic"]
    assert topic["Value"] == "/robot_description"
    assert topic["Durability Policy"] == "Transient Local"
    assert "rviz_default_plugins/TF" in displays
    assert displays["rviz_default_plugins/MarkerArray"]["Topic"]["Value"].endswith("/markers")


def _xacro_text(**mappings):
    # as ros2_control.launch.py expands it (dyn_control.nodes.launch_support)
    require("xacro")
    from dyn_control.nodes.launch_support import robot_description
    return robot_description(str(URDF_DIR / "default_arm.ros2_control.urdf.xacro"),
                             **{"hardware_plugin": "mock_components/GenericSystem", **mappings})


def test_ros2_control_xacro_gives_the_topic_based_plugin_its_topics_by_default():
    # as the plugin reads them (joint_state_topic_hardware_interface's on_init): the two topics
    # our simulator uses (command_type joint_state), and every cycle published (-1)
    from xml.etree import ElementTree

    from dyn_control.nodes.launch_support import TOPIC_BASED_PLUGINS
    require("xacro")
    from dyn_control.nodes.launch_support import robot_description
    default = robot_description(str(URDF_DIR / "default_arm.ros2_control.urdf.xacro"))
    for text, plugin in [(default, TOPIC_BASED_PLUGINS[0])] + [
            (_xacro_text(hardware_plugin=name), name) for name in TOPIC_BASED_PLUGINS]:
        hardware = ElementTree.fromstring(text).find("ros2_control/hardware")
        assert hardware.find("plugin").text == plugin
        assert {p.get("name"): p.text for p in hardware.findall("param")} == {
            "joint_commands_topic": "/robot_joint_commands",
            "joint_states_topic": "/robot_joint_states", "trigger_joint_command_threshold": "-1"}
    moved = ElementTree.fromstring(_xacro_text(hardware_plugin=TOPIC_BASED_PLUGINS[0],
                                               joint_states_topic="/sim/states"))
    param = moved.find("ros2_control/hardware/param[@name='joint_states_topic']")
    assert param.text == "/sim/states"
    mock = ElementTree.fromstring(_xacro_text()).find("ros2_control/hardware")
    assert mock.findall("param") == []  # other plugins get none of them


def test_ros2_control_xacro_gives_every_joint_effort_command_and_states():
    from xml.etree import ElementTree

    robot = ElementTree.fromstring(_xacro_text())
    system = robot.find("ros2_control")
    assert system.find("hardware/plugin").text == "mock_components/GenericSystem"
    chain = load_chain(URDF_DIR / "default_arm.urdf")
    joints = {j.get("name"): j for j in system.findall("joint")}
    assert list(joints) == chain.joint_names
    for joint in joints.values():
        assert [c.get("name") for c in joint.findall("command_interface")] == ["effort"]
        assert [s.get("name") for s in joint.findall("state_interface")] == [
            "position", "velocity", "effort"]


def test_ros2_control_xacro_has_the_same_dynamics_as_the_urdf():
    a = load_chain(_xacro_text())
    b = load_chain(URDF_DIR / "default_arm.urdf")
    q, qd, qdd = np.random.default_rng(0).uniform(-1, 1, (3, 7))
    np.testing.assert_array_equal(inverse_dynamics(a, q, qd, qdd), inverse_dynamics(b, q, qd, qdd))


def test_ros2_controllers_yaml_matches_the_arm_and_the_effort_topic():
    conf = yaml.safe_load((CONFIG_DIR / "ros2_controllers.yaml").read_text())
    manager = conf["/**/controller_manager"]["ros__parameters"]  # in any namespace
    assert (manager["effort_controller"]["type"]
            == "forward_command_controller/ForwardCommandController")
    assert (manager["joint_state_broadcaster"]["type"]
            == "joint_state_broadcaster/JointStateBroadcaster")
    effort = conf["/**/effort_controller"]["ros__parameters"]
    assert effort["interface_name"] == "effort"
    # the order of the effort command is the chain's (our controller's default `joints`)
    assert effort["joints"] == load_chain(URDF_DIR / "default_arm.urdf").joint_names


def test_the_launch_files_take_the_shipped_arm_with_its_settings_and_your_urdf_without(
        monkeypatch):
    """launch_support.shipped_arm, which sim.launch.py and two_arms.launch.py share: the
    shipped arm's URDF with its config/<arm>.yaml where there is one (dual_arm's names its tree's
    joints), none for an arm without one (every shipped arm has one: a name without), and a URDF
    of your own alone, whatever `arm` says.
    """
    from dyn_control.nodes import launch_support
    monkeypatch.setattr(launch_support, "share", lambda *parts: str(PACKAGE_DIR.joinpath(*parts)))
    urdf, params = launch_support.shipped_arm("dual_arm", "")
    assert urdf == str(URDF_DIR / "dual_arm.urdf") and params == [
        str(PACKAGE_DIR / "config" / "dual_arm.yaml")]
    assert launch_support.shipped_arm("no_such_arm", "") == (
        str(PACKAGE_DIR / "urdf" / "no_such_arm.urdf"), [])
    assert launch_support.shipped_arm("dual_arm", "/my/arm.urdf") == ("/my/arm.urdf", [])
    for name in ("sim.launch.py", "two_arms.launch.py"):
        assert "shipped_arm(" in (LAUNCH_DIR / name).read_text(), name
