"""dyn_control: computed-torque control of robot arms from their URDF.

The library layer (this package's top level) is pure numpy and never imports rclpy:

    from dyn_control import load_chain, inverse_dynamics
    chain = load_chain("arm.urdf")
    tau = inverse_dynamics(chain, q, qd, qdd)

The names below are imported when first used, so that importing a submodule (a node's entry
point, which must install its signal handlers first) does not load numba.
"""

import importlib

_EXPORTS = {
    "Chain": "model.chain", "InertiaWarning": "model.chain", "JointInfo": "model.chain",
    "PayloadError": "model.chain",
    "URDFError": "model.chain", "load_chain": "model.chain",
    "inverse_dynamics": "dynamics", "mass_matrix": "dynamics", "bias_forces": "dynamics",
    "gravity_torques": "dynamics", "forward_dynamics": "dynamics",
    "kinetic_energy": "dynamics", "potential_energy": "dynamics",
}
__all__ = list(_EXPORTS)


def __getattr__(name):
    """Runs only while `name` is not yet a module attribute: the first use imports it and keeps
    it here, so that `dc.inverse_dynamics(...)` in a loop costs what a from-import does.
    """
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dyn_control' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *__all__])
