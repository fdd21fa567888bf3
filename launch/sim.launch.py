"""The simulated arm: dynamics_simulator + computed_torque_controller (+ trajectory_demo).

    ros2 launch dyn_control sim.launch.py [arm:=default_arm|two_link] [urdf_file:=PATH]
        [use_sim_time:=true] [controller_params:=YAML] [demo:=true]

The URDF (or xacro) reaches every node as the robot_description parameter. Parameter defaults
come from config/*.yaml, the same files the test harness (harness/processes.py) passes.
"""

import os

import xacro
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = "dyn_control"


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    config = os.path.join(share, "config")
    arm = LaunchConfiguration("arm").perform(context)
    urdf_file = (LaunchConfiguration("urdf_file").perform(context)
                 or os.path.join(share, "urdf", f"{arm}.urdf"))
    description = xacro.process_file(urdf_file).toxml()
    arm_params = os.path.join(config, f"{arm}.yaml")
    arm_params = [arm_params] if os.path.isfile(arm_params) else []
    sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() == "true"
    controller_params = (LaunchConfiguration("controller_params").perform(context)
                         or os.path.join(config, "controller.yaml"))
    model = {"robot_description": description}
    nodes = [
        Node(package=PACKAGE, executable="dynamics_simulator", name="dynamics_simulator",
             output="screen",
             parameters=[os.path.join(config, "simulator.yaml"), *arm_params, model,
                         {"publish_clock": sim_time}]),
        Node(package=PACKAGE, executable="computed_torque_controller",
             name="computed_torque_controller", output="screen",
             parameters=[controller_params, model, {"use_sim_time": sim_time}]),
    ]
    if LaunchConfiguration("demo").perform(context).lower() == "true":
        nodes.append(Node(package=PACKAGE, executable="trajectory_demo", name="trajectory_demo",
                          output="screen",
                          parameters=[os.path.join(config, "demo.yaml"), model,
                                      {"use_sim_time": sim_time}]))
    return nodes


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="default_arm",
                              description="an arm in share/dyn_control/urdf (default_arm, two_link)"),
        DeclareLaunchArgument("urdf_file", default_value="",
                              description="URDF or xacro of your own arm (overrides arm)"),
        DeclareLaunchArgument("use_sim_time", default_value="true",
                              description="run on the simulator's /clock"),
        DeclareLaunchArgument("controller_params", default_value="",
                              description="YAML for the controller (default config/controller.yaml)"),
        DeclareLaunchArgument("demo", default_value="true",
                              description="start trajectory_demo"),
        # Fast DDS over UDP loopback unless already chosen: its shared-memory transport stalled
        # the loop for ~0.34 s now and then on the test machine (README, "DDS transport")
        SetEnvironmentVariable("FASTDDS_BUILTIN_TRANSPORTS", EnvironmentVariable(
            "FASTDDS_BUILTIN_TRANSPORTS", default_value="UDPv4")),
        OpaqueFunction(function=_nodes),
    ])
