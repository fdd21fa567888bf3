"""The stages of a controller tick, each a small class with its own tests, composed by
controller_core.ControllerCore:

    joint state -> check (watchdog.py) -> reference (tracking.py: goals and their trajectory |
    target.py: the Cartesian target and its filter) -> law (control.ControlLaw |
    cartesian.CartesianLaw) -> limits (limits.py: rate limit, finite) -> command

settings.py holds their settings, frozen dataclasses whose fields are the laws' keyword
arguments; statistics.py the compute times and what /diagnostics reports. A stage says what a
person should read through the core's events (a `say` callable) and imports no ROS.
"""
