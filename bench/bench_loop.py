"""Loop benchmark: latency from a joint state to the controller's answer, against a relay.

    python bench/bench_loop.py [--rates 250 500 1000] [--executors events single_threaded
        multi_threaded] [--seconds 20] [--json out/bench_loop.json]

A stub publisher in this process sends the default arm's 7-joint state at each rate. The
controller, and a relay that does no work (bench/relay.py), answer each state with an effort
command, the answer that matters: what ros2_control's effort controller takes. An effort
command (Float64MultiArray) carries no stamp, so a state's latency is the time to the first
effort command of its node after it (the command then in force), for both nodes alike. From
them: latency p50/p99/max, and the share of states answered before the next state is due
(deadline met). The controller's own compute time comes from its
/diagnostics status. With --cartesian (the default adds it) the events rows are repeated with
the controller in cartesian_impedance, with its default parameters: the same effort command,
the Cartesian law's compute time. At the --observer-off rates, the events rows add a third
node: the same controller without its external-torque observer, in the same turns, so that the
observer's share of the compute p99 is measured under the same drift of the machine (in rows
of their own, run after each other, the ratio of two runs of the same code was 0.79 on one
row and 1.60 on the next here). At the --limits-off rates, each mode has an events row whose
third node runs without its limits (limits.enabled false): the guard stage's share. Every node
has walls set far out, so that the Cartesian modes and teach pay for checking them; the states
are at rest, away from every limit, so what is measured is the check each tick pays, not a
barrier at work. The controller and the relay run as on an arm's computer: their ticks and
answers under SCHED_FIFO at thread_priority 50 (--thread-priority; the nodes' default is 0),
where the machine allows it (each node's /diagnostics or log says so; the probe keeps the
default scheduling). At the --realtime-off rates, the cartesian_impedance rows add a third
node, the controller under the default scheduling (thread_priority 0), in the same turns: what
the real-time scheduling is worth to the compute time on this machine. With --loops 2 3 (the
default), the computed_torque events row at the highest rate is repeated with one and two more
loops running in the same ROS domain beside it, each a simulator running free at 1 kHz, as
hardware, and a controller under a namespace of its own (/loop2, /loop3): what other arms on
the graph cost the first one's deadlines and compute time, against the row without them in the
same run.

Both nodes run at once, each in a fresh process, and take turns: the stub sends BLOCK seconds
of states to one, then to the other (the relay listens on its own state topic). A drift of
the machine during a row then falls on both alike. Run one after the other instead, the p50
ratio of the same code ranged from 0.93 to 1.44 here; taking turns, from 1.14 to 1.19.
The first second is warm-up.
"""

import argparse
import json
import pathlib
import sys
import tempfile
import threading
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.experimental import EventsExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from dyn_control.nodes import messages
from dyn_control.nodes.diagnostics import read_diagnostics

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the source tree
from harness import processes  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
Q0 = [0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]
NAMES = [f"joint{i}" for i in range(1, 8)]
BLOCK = 1.0  # s of states to one node before the other's turn
# A node waits BLOCK s per other node between its turns. With a state_timeout shorter than that
# wait, its watchdog went stale in every wait and sent hold commands at 100 Hz through the next
# node's turn: 600 commands a row, and the node whose turn came next met 0.15 to 2.25 points
# fewer deadlines than the one after it. Longer than any row's wait, no watchdog fires.
STATE_TIMEOUT = 10.0  # s
# the controller's variants, each a third node in a row's turns: its parameters against ours
VARIANTS = {"without_observer": {"external_torque.enabled": False},
            "without_limits": {"limits.enabled": False},
            "without_realtime": {"thread_priority": 0}}
TOPICS = {  # node -> (state topic, effort command topic)
    "relay": ("/relay/joint_states", "/relay/commands"),
    "controller": ("/joint_states", "/effort_controller/commands"),
    **{name: (f"/{name}/joint_states", f"/{name}/commands") for name in VARIANTS},
}
# walls far out, so that the Cartesian modes and teach pay for checking them
WALLS = {"limits.workspace_min": [-5.0, -5.0, -5.0], "limits.workspace_max": [5.0, 5.0, 5.0]}
MODES = ("computed_torque", "feedforward", "gravity_pd", "cartesian_impedance", "teach")


class Probe:
    """Publishes stamped states at a fixed rate, in turns to each node, and times the answers."""

    def __init__(self, names):
        self.node = rclpy.create_node("loop_probe")
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
        topics = {name: TOPICS[name] for name in names}
        self.pubs = {name: self.node.create_publisher(JointState, state, qos)
                     for name, (state, _) in topics.items()}
        self.sent = {name: [] for name in topics}  # node -> [send time], in order
        self.answers = {name: [] for name in topics}  # node -> [arrival time]
        for name, (_, answer) in topics.items():
            self.node.create_subscription(Float64MultiArray, answer,
                                          lambda msg, name=name: self._on_answer(name), 1000)
        self.diagnostics = {}  # node name -> (receipt time, {key: value})
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.executor = EventsExecutor()
        self.executor.add_node(self.node)
        self.spinning = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while self.spinning:
            self.executor.spin_once(timeout_sec=0.05)

    def _on_answer(self, name):
        self.answers[name].append(time.monotonic())

    def _on_diagnostics(self, msg):
        for name, values in read_diagnostics(msg).items():
            self.diagnostics[name] = (time.monotonic(), values)

    def diagnostics_after(self, name, after, timeout=3.0):
        """The node's first /diagnostics status received after `after` (monotonic s), or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.diagnostics.get(name)
            if got is not None and got[0] > after:
                return got[1]
            time.sleep(0.05)
        return None

    def wait_ready(self, timeout=60.0):
        """Send states to every node at 20 Hz until each has answered."""
        deadline = time.monotonic() + timeout
        while not all(self.answers.values()):
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the nodes under test")
            for name in self.pubs:
                self.send(name, record=False)
            time.sleep(0.05)

    def send(self, name, record=True):
        t = time.monotonic()
        msg = messages.joint_state(NAMES, time.time(), Q0, [0.0] * 7)
        self.pubs[name].publish(msg)
        if record:
            self.sent[name].append(t)

    def run(self, rate, seconds):
        """-> {node: figures} over `seconds` of states at `rate`, BLOCK s to each in turn."""
        period = 1.0 / rate
        for name in self.pubs:
            self.sent[name].clear()
        start = time.monotonic()
        warmup = start + 1.0
        names = list(self.pubs)
        k = 0
        while True:
            due = start + k * period
            now = time.monotonic()
            if now >= start + seconds:
                break
            if due > now:
                time.sleep(due - now)
            self.send(names[int(k * period / BLOCK) % len(names)],
                      record=time.monotonic() >= warmup)
            k += 1
        time.sleep(0.2)  # the last answers
        return {name: figures(self.sent[name], self.answers[name], period) for name in names}

    def close(self):
        self.spinning = False
        self.thread.join()
        self.executor.shutdown()
        self.node.destroy_node()


def figures(sent, answers, period):
    """Latency of each state (send times, in order) that an effort command answered: the first
    command that arrived after it and before the next state was sent, or, for a state that
    none answered in time, the first after it at all (a late answer). Deadline met: the share
    of states answered before the next one was sent.
    """
    sent, answers = np.array(sent), np.sort(np.array(answers))
    first = np.searchsorted(answers, sent)  # the first answer after each state
    has = first < len(answers)
    latency = (answers[first[has]] - sent[has]) * 1e6
    met = int(np.sum(latency < period * 1e6))
    return {"states": len(sent), "answered": len(latency),
            "p50_us": float(np.percentile(latency, 50)), "p99_us": float(np.percentile(latency,
                                                                                       99)),
            "max_us": float(latency.max()), "deadline_met": met / len(sent)}


def node_name(variant):
    return f"controller_{variant}"  # its /diagnostics name


def other_loops(count, log_dir, domain, probe):
    """`count` more closed loops in the domain, each a simulator running free at 1 kHz and a
    controller, under /loop2, /loop3, ...; -> their ProcessSet, once each controller reports
    ticks.
    """
    urdf, _ = processes.arm_files("default_arm")
    nodes = processes.ProcessSet()
    for k in range(2, count + 2):
        moved = {"__ns": f"/loop{k}"}
        # free running on the wall clock, as hardware: no /clock of its own on the graph
        nodes.start("dynamics_simulator", [processes.config("simulator")],
                    {"urdf_file": str(urdf), "synchronous": False, "publish_clock": False},
                    remaps=moved, log_dir=log_dir / f"loop{k}", domain_id=domain)
        nodes.start("computed_torque_controller", [processes.config("controller")],
                    {"urdf_file": str(urdf)}, remaps=moved, log_dir=log_dir / f"loop{k}",
                    domain_id=domain)
    deadline = time.monotonic() + 60
    for k in range(2, count + 2):
        while probe.diagnostics.get(f"loop{k}/computed_torque_controller", (0, {}))[1].get(
                "ticks", 0) <= 0:
            if time.monotonic() > deadline:
                nodes.stop()
                raise TimeoutError(f"the loop under /loop{k} did not start")
            time.sleep(0.1)
    return nodes


def measure(executor, rate, seconds, log_dir, domain, qos="reliable", mode="computed_torque",
            variant=None, loops=1, priority=50):
    """One row: relay and controller side by side -> {"relay": figures, "controller": figures},
    and with a variant (VARIANTS), its figures under its name: the same controller with its
    parameters, in the same turns. loops: with the row's, the closed loops in the domain
    (other_loops), their exit codes under "other_loops". priority: the nodes' thread_priority.
    """
    urdf, _ = processes.arm_files("default_arm")
    params = {"executor": executor, "qos_reliability": qos, "thread_priority": priority}
    controller = {**params, "urdf_file": str(urdf), "state_timeout": STATE_TIMEOUT, "mode": mode,
                  **WALLS}
    nodes = {
        "relay": processes.NodeProcess(
            "relay", (), params, remaps={"/joint_states": TOPICS["relay"][0],
                                         "/effort_controller/commands": TOPICS["relay"][1]},
            log_dir=log_dir, domain_id=domain, argv=[sys.executable, str(HERE / "relay.py")]),
        "controller": processes.NodeProcess(
            "computed_torque_controller", [processes.config("controller")],
            controller, log_dir=log_dir, domain_id=domain),
    }
    if variant:  # the same node under another name (its parameters file re-keyed)
        name = node_name(variant)
        nodes[variant] = processes.NodeProcess(
            name, [renamed_config(log_dir, name)], {**controller, **VARIANTS[variant]},
            remaps={"__node": name, "/joint_states": TOPICS[variant][0],
                    "/effort_controller/commands": TOPICS[variant][1]},
            log_dir=log_dir, domain_id=domain,
            argv=[processes.executable("computed_torque_controller")])
    probe = Probe(list(nodes))
    others = processes.ProcessSet()
    try:
        probe.wait_ready()
        if loops > 1:
            others = other_loops(loops - 1, pathlib.Path(log_dir), domain, probe)
        result = probe.run(rate, seconds)
        after = time.monotonic()
        status = {name: probe.diagnostics_after(node, after) for name, node in
                  (("controller", "computed_torque_controller"),
                   *((v, node_name(v)) for v in VARIANTS)) if name in nodes}
    finally:
        probe.close()
        codes = {name: node.stop() for name, node in nodes.items()}
        other_codes = others.stop()
    for name, code in codes.items():
        result[name]["exit_code"] = code
    if loops > 1:
        result["other_loops"] = other_codes
    for name, values in status.items():  # a controller's own compute time, its last 5000 ticks
        if values is not None:
            for key in ("compute_p50_us", "compute_p99_us", "observe_p50_us", "observe_p99_us",
                        "scheduling"):
                if key in values:
                    result[name][key] = values[key]
    return result


def renamed_config(log_dir, name):
    """The controller's parameters file with its section under `name`."""
    text = processes.config("controller").read_text()
    out = pathlib.Path(log_dir) / f"{name}.yaml"
    out.write_text(text.replace("\n/**/computed_torque_controller:", f"\n/**/{name}:", 1))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--executors", nargs="+",
                        default=["events", "single_threaded", "multi_threaded"])
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="per row, shared by the two nodes in turns")
    parser.add_argument("--qos", default="reliable", choices=["reliable", "best_effort"],
                        help="QoS reliability of the nodes' /joint_states subscription")
    parser.add_argument("--domain", type=int, default=79, help="ROS_DOMAIN_ID of the run")
    parser.add_argument("--cartesian", type=float, nargs="*", default=[500, 1000],
                        help="rates of the cartesian_impedance rows (events executor)")
    parser.add_argument("--observer-off", type=float, nargs="*", default=[1000],
                        help="rates at which the events rows also run the controller without "
                             "its external-torque observer, in the same turns (its cost)")
    parser.add_argument("--limits-off", type=float, nargs="*", default=[1000],
                        help="rates at which each mode's events row runs the controller without "
                             "its limits (limits.enabled false) in the same turns (their cost)")
    parser.add_argument("--realtime-off", type=float, nargs="*", default=[1000],
                        help="rates at which the cartesian_impedance rows also run the "
                             "controller under the default scheduling, in the same turns")
    parser.add_argument("--loops", type=int, nargs="*", default=[2, 3],
                        help="repeat the computed_torque events row at the highest rate with "
                             "this many closed loops in the domain (theirs beside it)")
    parser.add_argument("--thread-priority", type=int, default=50,
                        help="the relay's and the controller's thread_priority (0: the default "
                             "scheduling for both)")
    parser.add_argument("--json", default=str(HERE.parent / "out" / "bench_loop.json"))
    args = parser.parse_args()
    rclpy.init(domain_id=args.domain)
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench_loop_"))
    rows = []
    try:
        # the observer's share: at these rates the events rows run a node without it too;
        # the limits' share: each mode's events row at these rates, beside a node without them
        cases = [(executor, rate, "computed_torque",
                  "without_observer" if executor == "events" and rate in args.observer_off
                  else None, 1)
                 for executor in args.executors for rate in args.rates]
        cases += [("events", rate, "cartesian_impedance",
                   "without_realtime" if rate in args.realtime_off else None, 1)
                  for rate in args.cartesian]
        cases += [("events", rate, mode, "without_limits", 1) for mode in MODES
                  for rate in args.limits_off]
        cases += [("events", max(args.rates), "computed_torque", None, loops)
                  for loops in args.loops if loops > 1]
        for executor, rate, mode, variant, loops in cases:
            result = measure(executor, rate, args.seconds, log_dir, args.domain, args.qos, mode,
                             variant, loops, args.thread_priority)
            relay, ours = result["relay"], result["controller"]
            rows.append({"executor": executor, "rate_hz": rate, "mode": mode, "loops": loops,
                         **result, "p50_ratio": ours["p50_us"] / relay["p50_us"]})
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
        print(f"{'executor (mode)':16} {'Hz':>5} | {'relay p50/p99/max us':>22} {'met %':>7} | "
              f"{'ours p50/p99/max us':>22} {'met %':>7} | {'p50 ratio':>9} | "
              f"{'compute p50/p99 us':>18}")
        print("-" * 125)
    r = row["relay"]
    modes = {"cartesian_impedance": " (cartesian)", "feedforward": " (ff)",
             "gravity_pd": " (gpd)", "teach": " (teach)"}
    label = row["executor"] + modes.get(row.get("mode"), "")
    if row.get("loops", 1) > 1:
        label += f" ({row['loops']} loops)"
    for name, suffix in (("controller", ""), ("without_observer", " -obs"),
                         ("without_limits", " -lim"), ("without_realtime", " -rt")):
        if name not in row:
            continue
        o = row[name]
        compute = (f"{o.get('compute_p50_us', float('nan')):7.1f} /"
                   f"{o.get('compute_p99_us', float('nan')):7.1f}")
        print(f"{label + suffix:16} {row['rate_hz']:5.0f} | "
              f"{r['p50_us']:6.0f} /{r['p99_us']:6.0f} /{r['max_us']:7.0f} "
              f"{100 * r['deadline_met']:7.2f} | "
              f"{o['p50_us']:6.0f} /{o['p99_us']:6.0f} /{o['max_us']:7.0f} "
              f"{100 * o['deadline_met']:7.2f} | "
              f"{o['p50_us'] / r['p50_us']:9.2f} | {compute:>18}", flush=True)


def check_targets(rows):
    """At 1 kHz, in each mode and executor: compute p99 < 100 us, the effort command meets at
    least the relay's share of deadlines minus one point, and its p50 latency is within 1.2x
    the relay's; at 500 Hz, 99.9 % of deadlines met; the observer costs at most 10 % of the
    compute p99 (the controller without it in the same row's turns), and the limits at
    most 10 % in every mode (without them, likewise).
    """
    print("\ntargets:")
    for row in rows:
        label = f"{row['executor']} {row['mode']} {row['rate_hz']:.0f} Hz"
        if row.get("loops", 1) > 1:
            label += f", {row['loops']} loops in the domain"
        ours, relay = row["controller"], row["relay"]
        checks = []
        if row["rate_hz"] == 1000:
            p99 = ours.get("compute_p99_us", np.inf)
            met, floor = 100 * ours["deadline_met"], 100 * relay["deadline_met"] - 1.0
            checks += [("controller compute p99 < 100 us (7 joints)", p99, p99 < 100),
                       (f"effort command deadlines met >= the relay's minus one point "
                        f"({floor:.2f} %)", met, met >= floor),
                       ("effort command p50 latency within 1.2x the relay's", row["p50_ratio"],
                        row["p50_ratio"] <= 1.2)]
        if row["rate_hz"] == 500:
            met = 100 * ours["deadline_met"]
            checks.append(("deadlines met >= 99.9 %", met, met >= 99.9))
        for variant, what in (("without_observer", "the observer"),
                              ("without_limits", "the limits")):
            if variant in row:
                ratio = (ours.get("compute_p99_us", np.inf)
                         / row[variant].get("compute_p99_us", np.nan))
                checks.append((f"compute p99 with {what} within 1.1x of without them", ratio,
                               ratio <= 1.1))
        if "without_realtime" in row:
            # not a target: what SCHED_FIFO is worth here, in the same turns
            plain = row["without_realtime"]
            print(f"  [info] {label}: compute p50/p99 under {ours.get('scheduling', '?')}: "
                  f"{ours.get('compute_p50_us', np.nan):.1f} / "
                  f"{ours.get('compute_p99_us', np.nan):.1f} us; under the default "
                  f"scheduling: {plain.get('compute_p50_us', np.nan):.1f} / "
                  f"{plain.get('compute_p99_us', np.nan):.1f} us")
        if "without_observer" in row:
            # not a target: the observe stage's own time, after the command is out
            print(f"  [info] {label}: the observe stage, after the command: p50 "
                  f"{ours.get('observe_p50_us', np.nan):.1f} us, p99 "
                  f"{ours.get('observe_p99_us', np.nan):.1f} us")
        for text, value, ok in checks:
            print(f"  [{'met' if ok else 'MISSED'}] {label}: {text}: {value:.2f}")
    alone = next((row for row in rows if row["executor"] == "events" and row["mode"] ==
                  "computed_torque" and row.get("loops", 1) == 1 and
                  row["rate_hz"] == max(r["rate_hz"] for r in rows)), None)
    for row in rows:
        if row.get("loops", 1) > 1 and alone is not None:
            # not a target: what the other loops cost this one, on this machine's cores
            ours, first = row["controller"], alone["controller"]
            print(f"  [info] {row['loops']} loops in the domain, the first one's: deadlines met "
                  f"{100 * ours['deadline_met']:.2f} % (alone {100 * first['deadline_met']:.2f} "
                  f"%), compute p99 {ours.get('compute_p99_us', np.nan):.1f} us, "
                  f"{ours.get('compute_p99_us', np.nan) / first.get('compute_p99_us', np.nan):.2f}"
                  f"x alone's")


if __name__ == "__main__":
    main()
