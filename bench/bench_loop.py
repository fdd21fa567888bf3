"""Loop benchmark: latency from a joint state to the controller's answer, against a relay.

    python bench/bench_loop.py [--rates 250 500 1000] [--executors events single_threaded
        multi_threaded] [--seconds 6] [--json out/bench_loop.json]

A stub publisher in this process sends the default arm's 7-joint state at each rate, stamped
with the wall time of sending. The controller (or the relay, bench/relay.py, which does no work)
answers each state with an effort command and a stamped ~/reference. From the stamps: latency
p50/p99/max, and the share of states answered before the next state is due (deadline met).
The controller's own compute time comes from its log. Each configuration runs in fresh
processes; the first second is warm-up and not counted.
"""

import argparse
import json
import pathlib
import re
import sys
import tempfile
import threading
import time

import numpy as np
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from dyn_control import processes
from dyn_control.nodes import messages

HERE = pathlib.Path(__file__).resolve().parent
Q0 = [0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]
NAMES = [f"joint{i}" for i in range(1, 8)]
DOMAIN = 79


class Probe:
    """Publishes stamped states at a fixed rate and times the stamped answers."""

    def __init__(self, answer_topic):
        self.node = rclpy.create_node("loop_probe")
        self.pub = self.node.create_publisher(JointState, "/joint_states",
                                              QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
        self.sent, self.answered = {}, {}
        self.node.create_subscription(JointState, answer_topic, self._on_answer, 1000)
        self.executor = EventsExecutor()
        self.executor.add_node(self.node)
        self.spinning = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while self.spinning:
            self.executor.spin_once(timeout_sec=0.05)

    def _on_answer(self, msg):
        now = time.time()
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if key in self.sent:
            self.answered[key] = now

    def wait_ready(self, timeout=60.0):
        """Send states at 20 Hz until the first answer comes back."""
        deadline = time.monotonic() + timeout
        while not self.answered:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the node under test")
            self.send(record=True)
            time.sleep(0.05)

    def send(self, record=True):
        t = time.time()
        msg = messages.joint_state(NAMES, t, Q0, [0.0] * 7)
        if record:
            self.sent[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = t
        self.pub.publish(msg)

    def run(self, rate, seconds):
        period = 1.0 / rate
        self.sent.clear()
        self.answered.clear()
        start = time.monotonic()
        warmup = start + 1.0
        k = 0
        while True:
            due = start + k * period
            now = time.monotonic()
            if now >= start + seconds:
                break
            if due > now:
                time.sleep(due - now)
            self.send(record=time.monotonic() >= warmup)
            k += 1
        time.sleep(0.2)  # the last answers
        return figures(self.sent, self.answered, period)

    def close(self):
        self.spinning = False
        self.thread.join()
        self.executor.shutdown()
        self.node.destroy_node()


def figures(sent, answered, period):
    latency = np.array([answered[k] - t for k, t in sent.items() if k in answered]) * 1e6
    met = sum(1 for k, t in sent.items() if k in answered and answered[k] - t < period)
    return {"states": len(sent), "answered": len(latency),
            "p50_us": float(np.percentile(latency, 50)), "p99_us": float(np.percentile(latency, 99)),
            "max_us": float(latency.max()), "deadline_met": met / len(sent)}


def measure(target, executor, rate, seconds, log_dir, qos="reliable"):
    urdf, _ = processes.arm_files("default_arm")
    params = {"executor": executor, "qos_reliability": qos}
    if target == "controller":
        node = processes.NodeProcess("computed_torque_controller", [processes.config("controller")],
                                     {**params, "urdf_file": str(urdf), "state_timeout": 1.0},
                                     log_dir=log_dir, domain_id=DOMAIN)
        answer = "/computed_torque_controller/reference"
    else:
        node = processes.NodeProcess("relay", (), params, log_dir=log_dir, domain_id=DOMAIN,
                                     argv=[sys.executable, str(HERE / "relay.py")])
        answer = "/relay/reference"
    probe = Probe(answer)
    try:
        probe.wait_ready()
        result = probe.run(rate, seconds)
    finally:
        probe.close()
        code = node.stop()
    result["exit_code"] = code
    if target == "controller":
        reports = re.findall(r"compute time over (\d+) ticks: p50 ([\d.]+) us, p99 ([\d.]+) us",
                             node.log())
        if reports:
            result["compute_p50_us"], result["compute_p99_us"] = map(float, reports[-1][1:])
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--executors", nargs="+",
                        default=["events", "single_threaded", "multi_threaded"])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--qos", default="reliable", choices=["reliable", "best_effort"],
                        help="QoS reliability of the nodes' /joint_states subscription")
    parser.add_argument("--json", default=str(HERE.parent / "out" / "bench_loop.json"))
    args = parser.parse_args()
    rclpy.init(domain_id=DOMAIN)
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench_loop_"))
    rows = []
    try:
        for executor in args.executors:
            for rate in args.rates:
                relay = measure("relay", executor, rate, args.seconds, log_dir, args.qos)
                ours = measure("controller", executor, rate, args.seconds, log_dir, args.qos)
                rows.append({"executor": executor, "rate_hz": rate, "relay": relay,
                             "controller": ours, "p50_ratio": ours["p50_us"] / relay["p50_us"]})
                print_row(rows[-1], header=len(rows) == 1)
    finally:
        rclpy.try_shutdown()
    check_targets(rows)
    out = pathlib.Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"\nwrote {out}")


def print_row(row, header):
    if header:
        print(f"{'executor':16} {'Hz':>5} | {'relay p50/p99/max us':>22} {'met %':>7} | "
              f"{'ours p50/p99/max us':>22} {'met %':>7} | {'p50 ratio':>9} | "
              f"{'compute p50/p99 us':>18}")
        print("-" * 125)
    r, o = row["relay"], row["controller"]
    compute = (f"{o.get('compute_p50_us', float('nan')):7.1f} /{o.get('compute_p99_us', float('nan')):7.1f}")
    print(f"{row['executor']:16} {row['rate_hz']:5.0f} | "
          f"{r['p50_us']:6.0f} /{r['p99_us']:6.0f} /{r['max_us']:7.0f} {100 * r['deadline_met']:7.2f} | "
          f"{o['p50_us']:6.0f} /{o['p99_us']:6.0f} /{o['max_us']:7.0f} {100 * o['deadline_met']:7.2f} | "
          f"{row['p50_ratio']:9.2f} | {compute:>18}", flush=True)


def check_targets(rows):
    print("\ntargets:")
    for executor in sorted({r["executor"] for r in rows}):
        mine = {r["rate_hz"]: r for r in rows if r["executor"] == executor}
        checks = []
        if 1000 in mine:
            checks.append(("p50 latency at 1 kHz within 1.2x the relay's", mine[1000]["p50_ratio"],
                           mine[1000]["p50_ratio"] <= 1.2))
        if 500 in mine:
            met = mine[500]["controller"]["deadline_met"]
            checks.append(("deadlines met at 500 Hz >= 99.9 %", 100 * met, met >= 0.999))
        p99 = max(r["controller"].get("compute_p99_us", np.inf) for r in mine.values())
        checks.append(("controller compute p99 < 100 us (7 joints)", p99, p99 < 100))
        for label, value, ok in checks:
            print(f"  [{'met' if ok else 'MISSED'}] {executor}: {label}: {value:.2f}")


if __name__ == "__main__":
    main()
