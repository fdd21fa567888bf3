"""The default arm through ros2_control: controller_manager with joint_state_broadcaster and an
effort forward_command_controller named effort_controller, robot_state_publisher, and our
computed_torque_controller writing to /effort_controller/commands.

    ros2 launch dyn_control ros2_control.launch.py
        [description:=PATH.urdf.xacro] [hardware_plugin:=mock_components/GenericSystem]
        [controllers:=YAML] [use_sim_time:=false]

For your own arm: give its xacro (with a <ros2_control> tag whose joints have an effort command
interface and position/velocity state interfaces) as `description`, list the same joints in
the controllers YAML (effort_controller.joints), and choose the hardware plugin (for example
gz_ros2_control/GazeboSimSystem, mujoco_ros2_control/MujocoSystem or your robot's driver).
"""

from dyn_control.launch_support import PACKAGE, is_true, robot_description, share
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

def _nodes(context):
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    description = robot_description(
        value("description") or share("urdf", "default_arm.ros2_control.urdf.xacro"),
        hardware_plugin=value("hardware_plugin"))
    controllers = value("controllers") or share("config", "ros2_controllers.yaml")
    sim_time = {"use_sim_time": is_true(value("use_sim_time"))}
    model = {"robot_description": description}
    return [
        Node(package="controller_manager", executable="ros2_control_node", output="screen",
             parameters=[controllers, sim_time],
             remappings=[("~/robot_description", "/robot_description")]),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             output="screen", parameters=[model, sim_time]),
        Node(package="controller_manager", executable="spawner",
             arguments=["joint_state_broadcaster", "--controller-manager", "/controller_manager"]),
        Node(package="controller_manager", executable="spawner",
             arguments=["effort_controller", "--controller-manager", "/controller_manager"]),
        Node(package=PACKAGE, executable="computed_torque_controller",
             name="computed_torque_controller", output="screen",
             parameters=[share("config", "controller.yaml"), model, sim_time]),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("description", default_value="",
                              description="xacro/URDF with a <ros2_control> tag"),
        DeclareLaunchArgument("hardware_plugin", default_value="mock_components/GenericSystem",
                              description="ros2_control hardware taking effort commands"),
        DeclareLaunchArgument("controllers", default_value="",
                              description="controller_manager YAML (config/ros2_controllers.yaml)"),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        OpaqueFunction(function=_nodes),
    ])
