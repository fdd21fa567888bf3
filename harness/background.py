"""A node of the test harness that spins in a thread of its own, so the test thread can wait on
what it records (rclpy initialised by the caller).
"""

import threading

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

CLOSE_TIMEOUT = 30.0  # s: the spinning thread's longest callback on a loaded machine, with room


class BackgroundNode(Node):
    """Create the subscriptions and publishers, then call start(); close() stops and destroys
    it. `lock` guards what the callbacks record.
    """

    def __init__(self, name):
        super().__init__(name)
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._executor = SingleThreadedExecutor()
        self._thread = threading.Thread(target=self._spin, daemon=True)

    def start(self):
        self._executor.add_node(self)
        self._thread.start()

    def call_in_spin(self, fn):
        """Run fn() in the spinning thread; -> a Future (a Task) of what it returns. For
        calls that race the spinning executor: rclpy 9.1.2's ActionClient.send_goal_async
        registers the future it returns after the request is out and outside its lock, so a
        response handled in between completes another future, and the returned one never does.
        In the spinning thread, the response can only be taken at a later spin.
        """
        return self._executor.create_task(fn)

    def _spin(self):
        while rclpy.ok() and not self._stop.is_set():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception:  # noqa: BLE001 - shutting down
                if rclpy.ok():
                    raise
                return

    def close(self):
        """Stop the spinning thread, then destroy the node. Never while the thread still spins:
        destroying a node its executor is inside frees what the executor is reading. The thread
        ends within one spin_once; a thread stuck longer leaves the node undestroyed and says so.
        """
        self._stop.set()
        self._thread.join(timeout=CLOSE_TIMEOUT)
        if self._thread.is_alive():
            raise RuntimeError(f"{self.get_name()}: its spinning thread did not stop within "
                               f"{CLOSE_TIMEOUT:g} s; the node is left undestroyed")
        self._executor.shutdown(timeout_sec=1.0)
        self.destroy_node()
