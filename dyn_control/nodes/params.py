"""A node's parameters from the tables of dyn_control.parameters: declaration with the start-up
check, the reader the settings functions take, run-time changes (`ros2 param set`), and the QoS
that `qos_reliability` names.
"""

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.qos import QoSProfile, ReliabilityPolicy

from dyn_control.parameters import PAYLOAD_PARAMETERS


class StartupError(RuntimeError):
    """Bad configuration: the node cannot run. The message is the one line the user sees."""


def declare_parameters(node, params):
    """Declare every parameter of `params` (a dyn_control.parameters table, or the per-joint
    entries of one: Table.for_joints) and check the values given at start-up; StartupError
    names a bad one and its value.
    """
    params = list(params)
    for p in params:  # a number's type is checked by the table, with a message that names it
        node.declare_parameter(p.name, p.default, ParameterDescriptor(
            description=p.description, dynamic_typing=p.any_type or p.default is None or p.number))
    try:
        for p in params:
            p.check(node.get_parameter(p.name).value)
    except ValueError as err:
        raise StartupError(f"parameter {err}") from err


def read_parameters(node, table, chain=None, order=None, changes=None):
    """The node's settings as `table` reads them (Table.read): its parameters, with the new
    values of `changes` (a set in progress); with the chain, its per-joint ones too, given in
    `joints` order (order[i]: the chain index of the i-th) and kept in chain order.
    """
    changes = changes or {}
    return table.read(
        lambda name: changes[name] if name in changes else node.get_parameter(name).value,
        None if chain is None else chain.joint_names, order)


def set_parameters_callback(node, table, apply):
    """Run-time changes (`ros2 param set`): refused with the reason when the table fixes the
    parameter or its check fails, or when apply(changes) raises ValueError; the old value
    stays. apply takes the change to the node.
    """
    def on_set(params):
        changes = {p.name: p.value for p in params}
        fixed = [name for name in changes
                 if table.find(name) is not None and not table.find(name).run_time]
        if fixed:
            return SetParametersResult(successful=False,
                                       reason=f"{fixed[0]} cannot change while the node runs")
        try:
            table.check(changes)
            apply(changes)
        except ValueError as err:
            return SetParametersResult(successful=False, reason=str(err))
        if changes.keys() & set(PAYLOAD_PARAMETERS):
            # the node's clock (simulated time under use_sim_time): when the new model took over
            now = node.get_clock().now().nanoseconds * 1e-9
            payload = payload_summary(read_parameters(node, table, changes=changes))
            node.get_logger().info(f"{payload}; in effect from t = {now:.3f} s")
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)


def payload_summary(p):
    """One line for the log: the payload that settings `p` (read_parameters) describe."""
    com = ", ".join(f"{float(c):g}" for c in p.payload_com)
    inertia = ", ".join(f"{float(c):g}" for c in p.payload_inertia)
    return (f"payload {float(p.payload_mass):g} kg on '{p.payload_link or 'the tip link'}', "
            f"com [{com}] m, inertia [{inertia}] kg m^2")


def reliability(p):
    """QoS for the loop's topics from settings `p`'s qos_reliability (checked by the node's
    table); depth 1: only the newest state or command matters.
    """
    policies = {"reliable": ReliabilityPolicy.RELIABLE,
                "best_effort": ReliabilityPolicy.BEST_EFFORT}
    return QoSProfile(depth=1, reliability=policies[p.qos_reliability])
