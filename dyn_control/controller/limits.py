"""The limits stage, after the law (which saturates to the effort limits itself, in its
compiled code): the rate limit, and never a non-finite command.
"""

import numpy as np

from dyn_control.controller.laws import all_finite, limit_rate


class OutputLimits:
    """The last command sent (`command`, chain order) and its time; `apply` bounds the next."""

    def __init__(self, say):
        self.say = say
        self.command = self.time = None
        self._rate = self._bounded = None  # the last max_rate seen, and whether it bounds

    def _bounds(self, max_rate):
        """Whether max_rate bounds any joint, asked once per settings, not once a tick."""
        if max_rate is not self._rate:
            self._rate, self._bounded = max_rate, bool(np.isfinite(max_rate).any())
        return self._bounded

    def apply(self, tau, t, max_rate):
        """tau rate-limited to max_rate (N m/s) since the last command, or None when it is not
        finite (nothing is sent then, and it is said).
        """
        if self.command is not None and self._bounds(max_rate):  # off: no bound at all
            tau = limit_rate(tau, self.command, max_rate, t - self.time)
        if not all_finite(tau):
            self.say("error", "non-finite effort computed; command not sent", throttle=True)
            return None
        self.command, self.time = tau, t
        return tau
