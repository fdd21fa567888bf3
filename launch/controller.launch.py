"""computed_torque_controller alone, for a real robot or any simulator.

    ros2 launch dyn_control controller.launch.py urdf_file:=PATH joints:="[j1, j2, ...]"
        [effort_topic:=/effort_controller/commands] [state_topic:=/joint_states]
        [controller_params:=YAML] [use_sim_time:=false] [namespace:=NS]

With urdf_file empty the controller takes the model from /robot_description (as
robot_state_publisher publishes it). joints sets the controlled joints and the order of the
effort command: the order of your forward_command_controller's `joints`. namespace:=left puts
the controller and its topics under /left; the default topics are relative, so
effort_topic and state_topic follow it (an absolute one, /joint_states, stays where it is).
"""

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from dyn_control.nodes.launch_support import (
    PACKAGE,
    in_namespace,
    is_true,
    namespace,
    namespace_argument,
    robot_description,
    share,
)
from launch import LaunchDescription


def _controller(context):
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    params = [value("controller_params") or share("config", "controller.yaml")]
    if value("urdf_file"):
        params.append({"robot_description": robot_description(value("urdf_file"))})
    joints = [j.strip() for j in value("joints").strip("[]").split(",") if j.strip()]
    if joints:
        params.append({"joints": joints})
    params.append({"use_sim_time": is_true(value("use_sim_time"))})
    return in_namespace(namespace(value("namespace")), [Node(
        package=PACKAGE, executable="computed_torque_controller",
        name="computed_torque_controller", output="screen", parameters=params,
        remappings=[("effort_controller/commands", value("effort_topic")),
                    ("joint_states", value("state_topic"))])])


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf_file", default_value="",
                              description="URDF or xacro; empty: the /robot_description topic"),
        DeclareLaunchArgument("joints", default_value="",
                              description="controlled joints in command order, e.g. [j1, j2]"),
        DeclareLaunchArgument("effort_topic", default_value="effort_controller/commands"),
        DeclareLaunchArgument("state_topic", default_value="joint_states"),
        DeclareLaunchArgument("controller_params", default_value=""),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        namespace_argument(),
        OpaqueFunction(function=_controller),
    ])
