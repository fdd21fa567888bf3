"""The floor of rclpy messaging for the loop benchmark: a node that does no work.

It receives /joint_states and publishes what our controller publishes per tick, without the
computation: a Float64MultiArray on /effort_controller/commands and the state, stamp kept, on
~/reference. It runs through the same dyn_control.nodes.process.run as our nodes (same
executor parameter, same signal handling, and the same thread_priority as the controller:
SCHED_FIFO from its first message, as the controller from its first tick), so the two differ
only by the control step.
"""

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control.nodes.params import declare_parameters, read_parameters, reliability
from dyn_control.nodes.process import ProcessNode, run
from dyn_control.nodes.realtime import Scheduling
from dyn_control.parameters import QOS_RELIABILITY, THREAD_PRIORITY, Table


class Relay(ProcessNode):
    NODE_NAME = "relay"

    def __init__(self):
        super().__init__()
        table = Table("relay", QOS_RELIABILITY, THREAD_PRIORITY)
        declare_parameters(self, table)
        settings = read_parameters(self, table)
        self.scheduling = Scheduling(settings.thread_priority, False)  # the controller's
        self.effort_pub = self.create_publisher(Float64MultiArray, "/effort_controller/commands",
                                                10)
        self.reference_pub = self.create_publisher(JointState, "~/reference", 10)
        self.create_subscription(JointState, "/joint_states", self._on_state,
                                 reliability(settings))

    def _on_state(self, msg):
        self.scheduling.enter()
        self.effort_pub.publish(Float64MultiArray(data=list(msg.position)))
        self.reference_pub.publish(msg)


if __name__ == "__main__":
    raise SystemExit(run(Relay))
