"""Two arms in one world and one ROS graph: one dynamics_simulator for both, and per arm a
computed_torque_controller (+ trajectory_demo) under its namespace.

    ros2 launch dyn_control two_arms.launch.py [arm:=default_arm|two_link] [urdf_file:=PATH]
        [namespaces:=left,right] [spacing:=1.0] [use_sim_time:=true] [demo:=true]

The arm's URDF is placed once per namespace, `spacing` m apart along y, each copy's names
prefixed with "<namespace>_" (dyn_control.model.world): that world URDF reaches every node as
robot_description. The simulator, in the root namespace, publishes each arm's states on
/<namespace>/joint_states and takes its commands on /<namespace>/effort_controller/commands (its
`robots` parameter), and the one /clock. Each controller runs in its namespace with its own
joints, so its model is its own arm on its own base; each trajectory_demo sends its goal to its
own controller's action. A shipped arm starts at its own file's pose (config/<arm>.yaml).
"""


from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node

from dyn_control.nodes.launch_support import (
    PACKAGE,
    in_namespace,
    is_true,
    namespace,
    share,
    shipped_arm,
    world_parameters,
)
from launch import LaunchDescription


def _nodes(context):
    urdf, arm_params = shipped_arm(*(LaunchConfiguration(name).perform(context)
                                     for name in ("arm", "urdf_file")))
    spaces = [namespace(ns) for ns in LaunchConfiguration("namespaces").perform(context)
              .split(",") if namespace(ns)]
    if len(spaces) != len(set(spaces)) or any(ns.count("/") > 1 for ns in spaces):
        raise ValueError(f"namespaces must be distinct single names, got {spaces}")
    names = [ns.lstrip("/") for ns in spaces]
    description, joints, simulator = world_parameters(
        urdf, names,
        float(LaunchConfiguration("spacing").perform(context)), arm_params)
    sim_time = is_true(LaunchConfiguration("use_sim_time").perform(context))
    model = {"robot_description": description}
    nodes = [Node(package=PACKAGE, executable="dynamics_simulator", name="dynamics_simulator",
                  output="screen",
                  parameters=[share("config", "simulator.yaml"), model, simulator,
                              {"publish_clock": sim_time}])]
    executables = [("computed_torque_controller", "controller.yaml")]
    if is_true(LaunchConfiguration("demo").perform(context)):
        executables.append(("trajectory_demo", "demo.yaml"))
    for ns, name in zip(spaces, names):
        arm_nodes = [Node(package=PACKAGE, executable=executable, name=executable,
                          output="screen",
                          parameters=[share("config", config), model,
                                      {"joints": joints[name], "use_sim_time": sim_time}])
                     for executable, config in executables]
        nodes += in_namespace(ns, arm_nodes)
    return nodes


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="default_arm",
                              description="an arm in share/dyn_control/urdf, placed twice"),
        DeclareLaunchArgument("urdf_file", default_value="",
                              description="URDF or xacro of your own arm (overrides arm)"),
        DeclareLaunchArgument("namespaces", default_value="left,right",
                              description="one arm per namespace, comma-separated"),
        DeclareLaunchArgument("spacing", default_value="1.0",
                              description="m between two arms' bases, along y"),
        DeclareLaunchArgument("use_sim_time", default_value="true",
                              description="run on the simulator's /clock"),
        DeclareLaunchArgument("demo", default_value="true",
                              description="start a trajectory_demo per arm"),
        # Fast DDS over UDP loopback unless already chosen (sim.launch.py says why)
        SetEnvironmentVariable("FASTDDS_BUILTIN_TRANSPORTS", EnvironmentVariable(
            "FASTDDS_BUILTIN_TRANSPORTS", default_value="UDPv4")),
        OpaqueFunction(function=_nodes),
    ])
