"""dyn_control: computed-torque control of robot arms from their URDF.

The library layer (this package's top level) is pure numpy and never imports rclpy:

    from dyn_control import load_chain, inverse_dynamics
    chain = load_chain("arm.urdf")
    tau = inverse_dynamics(chain, q, qd, qdd)
"""

from .dynamics import (bias_forces, forward_dynamics, gravity_torques, inverse_dynamics,
                       kinetic_energy, mass_matrix, potential_energy)
from .model import Chain, InertiaWarning, JointInfo, URDFError, load_chain

__all__ = [
    "Chain", "InertiaWarning", "JointInfo", "URDFError", "load_chain",
    "inverse_dynamics", "mass_matrix", "bias_forces", "gravity_torques", "forward_dynamics",
    "kinetic_energy", "potential_energy",
]
