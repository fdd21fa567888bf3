"""What the controller core and the simulator core share, stated once: the events a node logs
for them and how often they report their figures.
"""

from collections import deque

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
        """The events since the last drain, oldest first. Two threads may drain at once (the
        simulator's stepper and its executor): each takes what it pops, until the deque is
        empty. Counting first and popping that many raised IndexError in the thread that
        lost the race, and the stepper's thread died with it (simulated time stopped, under
        load).
        """
        out = []
        while True:
            try:
                out.append(self.events.popleft())
            except IndexError:
                return out
