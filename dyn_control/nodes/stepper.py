"""dynamics_simulator's stepping thread: step the simulator core, publish when due, meet the
controller synchronously or run free, and keep at most real_time_factor (see simulator.py).
"""

import threading
import time

import rclpy


class Stepper:
    """Runs core.step in a thread of its own; `publish()` sends a state, and `answered` is set
    by the node when a command comes (it wakes a synchronous wait). `failed`: states the
    middleware refused to publish.
    """

    def __init__(self, node, core, publish, real_time_factor, sync_timeout):
        self.node, self.core, self.publish = node, core, publish
        self.real_time_factor, self.sync_timeout = real_time_factor, sync_timeout
        self.answered = threading.Event()
        self.running = threading.Event()
        self.thread = None
        self.failed = 0

    def start(self):
        self.running.set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self):
        self.running.clear()
        self.answered.set()  # wake a synchronous wait
        if self.thread is not None:
            self.thread.join(timeout=1.0)

    def _wait_for_answer(self):
        """Synchronous: wait for the command answering the state just published."""
        if self.answered.wait(self.sync_timeout) or not self.running.is_set():
            return
        if self.core.command_seen is not None:  # (before the first command, silence is expected)
            self.node.get_logger().warning(
                f"no command answered the state of t = {self.core.sim.t:.3f} s within "
                f"{self.sync_timeout} s: stepping on the last one", throttle_duration_sec=1.0)

    def _run(self):
        """Step, publish when due, keep at most real_time_factor."""
        core, dt = self.core, self.core.settings.dt
        next_wall = time.monotonic()
        published = True  # the node published the initial state
        while self.running.is_set() and rclpy.ok():
            if core.settings.synchronous and published:
                self._wait_for_answer()
            published = core.step(time.monotonic())
            if published:
                try:
                    self.publish()
                except Exception as err:  # noqa: BLE001 - rclpy raises RCLError
                    if not rclpy.ok():
                        break  # the context went down under us (Ctrl-C): stop quietly
                    if not isinstance(err, RuntimeError):  # (RCLError is one) a bug: say it
                        raise
                    # the middleware refused this one state (Fast DDS: "cannot publish data",
                    # a write blocked past its time on a starved machine): it is lost, and
                    # simulated time goes on; before, the thread died of it and time stopped
                    self.failed += 1
                    self.node.get_logger().warning(f"a joint state was not published: {err}",
                                                   throttle_duration_sec=1.0)
            if core.events:
                self.node.log_events()
            if self.real_time_factor > 0:
                next_wall += dt / self.real_time_factor
                delay = next_wall - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                elif delay < -0.1:  # far behind (machine busy, or waiting): do not race
                    next_wall = time.monotonic()
