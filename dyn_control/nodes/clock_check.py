"""Whether the joint states are stamped on this node's clock: a loop whose nodes run on two
clocks (wall time and /clock) tracks nothing. Trajectories run on the states' time whatever
this says; it is said once, and /diagnostics reports the offset.
"""

import time


class ClockCheck:
    """`offset` (s): how far the states' stamps are ahead of the node's clock, once found."""

    def __init__(self, node):
        self.node = node
        self.offset = None
        self.next_check = -float("inf")

    def check(self, stamp):
        """Once a second of steady time until it finds one: a state stamped on another clock."""
        if self.offset is not None or time.monotonic() < self.next_check:
            return
        self.next_check = time.monotonic() + 1.0
        node = self.node
        ours = node.get_clock().now().nanoseconds * 1e-9
        if ours == 0.0 or abs(stamp - ours) <= 1.0:  # (0: use_sim_time, no /clock yet)
            return
        self.offset = stamp - ours
        sim = node.get_parameter("use_sim_time").value
        node.get_logger().warning(
            f"joint states are stamped t = {stamp:.3f} s, this node's clock reads t = {ours:.3f}"
            f" s ({'/clock' if sim else 'wall time'}, use_sim_time {str(sim).lower()}): the loop's "
            "nodes must share one clock. Beside a simulator that publishes /clock, set "
            "use_sim_time:=true on the controller and on what sends it trajectories.")
