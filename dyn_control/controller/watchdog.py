"""The check stage: a joint state is good or it is not (the node checks names and values), and
with no good one for state_timeout the loop is stale: feedback stops, the core holds gravity
compensation or stops commanding (on_state_timeout). Before the first state, it says once
what it waits for, WAIT_SAY s after its first check: a controller started by hand with no
joint states otherwise waited in silence.
"""

WAIT_SAY = 2.0  # s of the watchdog's clock


class Watchdog:
    """When the last good state came (`last_seen`, the watchdog's clock), whether the loop is
    stale, how many times it went stale, and the silence at the last time (s).
    """

    def __init__(self, say):
        self.say = say
        self.last_seen = None
        self.stale = False
        self.events = 0
        self.silence = None
        self.timeout = self.period = None
        self.began = False  # whether the last check began a stale spell
        self.waiting_since = None  # the first check before any state
        self.awaited = "a joint state"  # what the core waits for, said once (WAIT_SAY)

    def configure(self, state_timeout):
        self.timeout = state_timeout
        # it looks twice per timeout, at least every 10 ms
        self.period = min(0.01, state_timeout / 2)

    def seen(self, now):
        """A good state at `now`; True when it ends a stale spell (the core then holds where
        the arm is).
        """
        self.last_seen = now
        if not self.stale:
            return False
        self.stale = False
        self.say("warning", "joint states are back: holding the current position "
                            "(the running trajectory was dropped)")
        return True

    def check(self, now, hold):
        """At a watchdog tick: None while states come in time; else the silence (s). The first
        tick of a spell marks it stale, counts it and says what the arm does (`hold`: gravity
        compensation at the last good position, or no command); `began` tells that tick.
        """
        self.began = False
        if self.last_seen is None:
            if self.waiting_since is None:
                self.waiting_since = now
            elif now - self.waiting_since >= WAIT_SAY and self.awaited:
                self.say("info", f"waiting for {self.awaited}: none for "
                                 f"{now - self.waiting_since:.1f} s")
                self.awaited = None
            return None
        if now - self.last_seen <= self.timeout:
            return None
        silent = now - self.last_seen
        if not self.stale:
            self.stale, self.began = True, True
            self.events += 1
            self.silence = silent
            self.say("warning", f"no good joint state for {silent:.3f} s (state_timeout "
                     f"{self.timeout} s): " + ("holding gravity compensation at the "
                     "last good position" if hold else "effort commands stopped"))
        return silent
