"""What the controller core and the simulator core share, stated once: the events a node logs
for them, how often they report their figures, and how a node's parameters become a core's
per-joint settings (given in `joints` order, kept in chain order).
"""

from collections import deque

import numpy as np

from dyn_control.controller.laws import gain_vector
from dyn_control.model.chain import effort_limits, to_chain_order
from dyn_control.parameters import unset

REPORT_EVERY = 5.0  # s of the core's time (state or simulated) between two figure reports


class Events:
    """What a person should read, as (level, text, throttle): a core appends, its node drains
    and logs (from different threads: a deque's append and popleft are atomic).
    """

    def __init__(self):
        self.events = deque()

    def _say(self, level, text, throttle=False):
        self.events.append((level, text, throttle))

    def drain(self):
        """The events since the last drain, oldest first."""
        return [self.events.popleft() for _ in range(len(self.events))]


class JointSettings:
    """A node's parameters, read by value(name), as per-joint arrays in chain order: values come
    in `joints` order, order[i] being the chain index of the i-th (None: chain order).
    ValueError names the parameter and the value.
    """

    def __init__(self, chain, value, order=None):
        self.n, self.value = chain.n, value
        self.chain = chain
        self.order = np.arange(chain.n) if order is None else order

    def gains(self, name):
        """A scalar or one non-negative value per joint (control.gain_vector)."""
        return to_chain_order(gain_vector(self.value(name), self.n, name), self.order)

    def positions(self, name):
        """n finite positions (rad or m, any sign), or None when unset."""
        given = self.value(name)
        if unset(given):
            return None
        values = np.atleast_1d(np.asarray(given, dtype=float))
        if values.shape != (self.n,) or not np.all(np.isfinite(values)):
            raise ValueError(f"{name} must be {self.n} finite values, got {values.tolist()}")
        return to_chain_order(values, self.order)

    def effort_limits(self):
        """The URDF's effort limits, or the `effort_limits` parameter when set."""
        override = self.value("effort_limits")
        return effort_limits(self.chain, () if unset(override) else self.gains("effort_limits"))
