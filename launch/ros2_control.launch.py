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

import os

import xacro
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = "dyn_control"


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    description_file = value("description") or os.path.join(
        share, "urdf", "default_arm.ros2_control.urdf.xacro")
    description = xacro.process_file(
        description_file, mappings={"hardware_plugin": value("hardware_plugin")}).toxml()
    controllers = value("controllers") or os.path.join(share, "config", "ros2_controllers.yaml")
    sim_time = {"use_sim_time": value("use_sim_time").lower() == "true"}
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
             parameters=[os.path.join(share, "config", "controller.yaml"), model, sim_time]),
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
