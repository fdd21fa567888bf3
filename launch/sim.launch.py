"""The simulated arm: dynamics_simulator + computed_torque_controller (+ trajectory_demo).

    ros2 launch dyn_control sim.launch.py [arm:=default_arm|two_link|dual_arm] [urdf_file:=PATH]
        [sim_urdf_file:=PATH] [arm_params:=YAML] [use_sim_time:=true] [controller_params:=YAML]
        [demo:=true] [gui:=false] [namespace:=NS]

The URDF (or xacro) reaches every node as the robot_description parameter. sim_urdf_file gives
the simulator another model of the same joints (a "real arm" the controller does not know, to
try identification against), simulated as a real arm: REAL_ARM_SUBSTEPS physics steps per dt.
The other nodes keep the arm's, and the controller's external torques are off, as in
make identify: its model is wrong by design. Parameter defaults
come from config/*.yaml, the same files the test harness (harness/processes.py) passes.
gui:=true also starts robot_state_publisher and RViz (rviz/dyn_control.rviz: the arm, TF and
the controller's ~/markers); off by default, as a headless machine has no display for it.
namespace:=left puts every node, topic, service, action and parameter of the arm under /left
(left/computed_torque_controller on /diagnostics); /clock and /diagnostics stay global.
"""


from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node

from dyn_control.nodes.launch_support import (
    PACKAGE,
    gui_nodes,
    in_namespace,
    installed,
    is_true,
    namespace,
    namespace_argument,
    real_arm_parameters,
    robot_description,
    share,
    shipped_arm,
)
from launch import LaunchDescription


def _nodes(context):
    urdf, arm_params = shipped_arm(*(LaunchConfiguration(name).perform(context)
                                     for name in ("arm", "urdf_file")))
    description = robot_description(urdf)
    # your arm's own file, for every node (a tree's joints, say): as config/dual_arm.yaml
    arm_params += [path for path in [LaunchConfiguration("arm_params").perform(context)] if path]
    sim_time = is_true(LaunchConfiguration("use_sim_time").perform(context))
    controller_params = (LaunchConfiguration("controller_params").perform(context)
                         or share("config", "controller.yaml"))
    model = {"robot_description": description}
    sim_urdf_file = LaunchConfiguration("sim_urdf_file").perform(context)
    sim_model, wrong_model = model, []
    if sim_urdf_file:
        real_arm, controller = real_arm_parameters()
        sim_model = {"robot_description": robot_description(sim_urdf_file), **real_arm}
        wrong_model = [controller]  # before controller_params: a YAML of yours can undo it
    nodes = [
        Node(package=PACKAGE, executable="dynamics_simulator", name="dynamics_simulator",
             output="screen",
             parameters=[share("config", "simulator.yaml"), *arm_params, sim_model,
                         {"publish_clock": sim_time}]),
        Node(package=PACKAGE, executable="computed_torque_controller",
             name="computed_torque_controller", output="screen",
             parameters=[*wrong_model, controller_params, *arm_params, model,
                         {"use_sim_time": sim_time}]),
    ]
    if is_true(LaunchConfiguration("demo").perform(context)):
        nodes.append(Node(package=PACKAGE, executable="trajectory_demo", name="trajectory_demo",
                          output="screen",
                          parameters=[share("config", "demo.yaml"), *arm_params, model,
                                      {"use_sim_time": sim_time}]))
    if is_true(LaunchConfiguration("gui").perform(context)):
        found, missing = installed(gui_nodes(description, sim_time))
        nodes += [Node(**spec) for spec in found] + [LogInfo(msg=line) for line in missing]
    return in_namespace(namespace(LaunchConfiguration("namespace").perform(context)), nodes)


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="default_arm",
                              description="an arm in share/dyn_control/urdf "
                                          "(default_arm, two_link, dual_arm)"),
        DeclareLaunchArgument("urdf_file", default_value="",
                              description="URDF or xacro of your own arm (overrides arm)"),
        DeclareLaunchArgument("sim_urdf_file", default_value="",
                              description="the simulator's own model of the same joints (a "
                                          "truth the controller does not know)"),
        DeclareLaunchArgument("arm_params", default_value="",
                              description="YAML for every node, for your own arm (a tree's "
                                          "joints, say; see config/dual_arm.yaml)"),
        DeclareLaunchArgument("use_sim_time", default_value="true",
                              description="run on the simulator's /clock"),
        DeclareLaunchArgument("controller_params", default_value="",
                              description="YAML for the controller "
                                          "(default config/controller.yaml)"),
        DeclareLaunchArgument("demo", default_value="true",
                              description="start trajectory_demo"),
        DeclareLaunchArgument("gui", default_value="false",
                              description="start robot_state_publisher and RViz"),
        namespace_argument(),
        # Fast DDS over UDP loopback unless already chosen: its shared-memory transport can stall
        # delivery longer than the watchdogs allow (docs/failure_modes.md, "DDS transport")
        SetEnvironmentVariable("FASTDDS_BUILTIN_TRANSPORTS", EnvironmentVariable(
            "FASTDDS_BUILTIN_TRANSPORTS", default_value="UDPv4")),
        OpaqueFunction(function=_nodes),
    ])
