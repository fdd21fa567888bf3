"""The default arm through ros2_control: controller_manager with joint_state_broadcaster and an
effort forward_command_controller named effort_controller, robot_state_publisher, and our
computed_torque_controller writing to /effort_controller/commands.

    ros2 launch dyn_control ros2_control.launch.py
        [description:=PATH.urdf.xacro] [hardware_plugin:=PLUGIN] [controllers:=YAML]
        [joint_commands_topic:=/robot_joint_commands] [joint_states_topic:=/robot_joint_states]
        [use_sim_time:=false] [gui:=false] [namespace:=NS]

The default hardware is ros2_control's topic-based system
(joint_state_topic_hardware_interface/JointStateTopicSystem), with our dynamics_simulator behind
it (command_type joint_state, free running: controller_manager runs on its own clock; on wall
time, or publishing /clock with use_sim_time:=true): the arm moves under the effort commands. The
same happens for its older name, topic_based_ros2_control/TopicBasedSystem. Any other plugin
(mock_components/GenericSystem, gz_ros2_control/GazeboSimSystem, mujoco_ros2_control/MujocoSystem,
your robot's driver) runs without our simulator.

For your own arm: give its xacro (with a <ros2_control> tag whose joints have an effort command
interface and position, velocity and effort state interfaces) as `description`, list the same
joints in the controllers YAML (effort_controller.joints), and choose the hardware plugin.
gui:=true also starts RViz (rviz/dyn_control.rviz); off by default, as in sim.launch.py.
namespace:=left puts every node under /left (the controller_manager is /left/controller_manager)
and the topic-based plugin's default topics with them (/left/robot_joint_commands).
"""

import os

from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from dyn_control.nodes.launch_support import (
    PACKAGE,
    TOPIC_BASED_PLUGINS,
    gui_nodes,
    in_namespace,
    installed,
    is_true,
    namespace,
    namespace_argument,
    robot_description,
    share,
)
from launch import LaunchDescription


def _nodes(context):
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    plugin = value("hardware_plugin")
    ns = namespace(value("namespace"))
    # the plugin's topics are absolute names in the URDF: under the namespace unless given
    topics = {"joint_commands_topic": value("joint_commands_topic") or f"{ns}/robot_joint_commands",
              "joint_states_topic": value("joint_states_topic") or f"{ns}/robot_joint_states"}
    description = robot_description(
        value("description") or share("urdf", "default_arm.ros2_control.urdf.xacro"),
        hardware_plugin=plugin, **topics)
    controllers = value("controllers") or share("config", "ros2_controllers.yaml")
    sim_time = {"use_sim_time": is_true(value("use_sim_time"))}
    model = {"robot_description": description}
    nodes = [
        Node(package="controller_manager", executable="ros2_control_node", output="screen",
             parameters=[controllers, sim_time],
             remappings=[("~/robot_description", "robot_description")]),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             output="screen", parameters=[model, sim_time]),
        Node(package="controller_manager", executable="spawner",
             arguments=["joint_state_broadcaster", "--controller-manager",
                        f"{ns}/controller_manager"]),
        Node(package="controller_manager", executable="spawner",
             arguments=["effort_controller", "--controller-manager", f"{ns}/controller_manager"]),
        Node(package=PACKAGE, executable="computed_torque_controller",
             name="computed_torque_controller", output="screen",
             parameters=[share("config", "controller.yaml"), model, sim_time]),
    ]
    if plugin in TOPIC_BASED_PLUGINS:  # the physics behind the plugin's two topics
        arm = [path for path in [share("config", "default_arm.yaml")] if os.path.isfile(path)]
        nodes.append(Node(
            package=PACKAGE, executable="dynamics_simulator", name="dynamics_simulator",
            output="screen",
            parameters=[share("config", "simulator.yaml"),
                        *(arm if not value("description") else []),
                        model, {"command_type": "joint_state", "synchronous": False,
                                "publish_clock": sim_time["use_sim_time"]}],
            remappings=[("robot_joint_commands", topics["joint_commands_topic"]),
                        ("robot_joint_states", topics["joint_states_topic"])]))
    if is_true(value("gui")):  # robot_state_publisher runs already, above
        found, missing = installed(gui_nodes(description, sim_time["use_sim_time"],
                                             state_publisher=False))
        nodes += [Node(**spec) for spec in found] + [LogInfo(msg=line) for line in missing]
    return in_namespace(ns, nodes)


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("description", default_value="",
                              description="xacro/URDF with a <ros2_control> tag"),
        DeclareLaunchArgument("hardware_plugin", default_value=TOPIC_BASED_PLUGINS[0],
                              description="ros2_control hardware taking effort commands"),
        DeclareLaunchArgument("controllers", default_value="",
                              description="controller_manager YAML (config/ros2_controllers.yaml)"),
        DeclareLaunchArgument("joint_commands_topic", default_value="",
                              description="the topic-based plugin's command topic "
                                          "(default: /robot_joint_commands in the namespace)"),
        DeclareLaunchArgument("joint_states_topic", default_value="",
                              description="the topic-based plugin's state topic "
                                          "(default: /robot_joint_states in the namespace)"),
        namespace_argument(),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        DeclareLaunchArgument("gui", default_value="false", description="start RViz"),
        OpaqueFunction(function=_nodes),
    ])
