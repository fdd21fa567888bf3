"""The benchmarks run and write their JSON (no timing is asserted: figures vary by machine;
`make bench` and `make bench-loop` print them and check the targets).
"""

import json
import subprocess
import sys

import pytest
from conftest import PACKAGE_DIR, require


def test_bench_quick_run_writes_table_and_json(tmp_path):
    require("pinocchio")
    out = tmp_path / "bench.json"
    res = subprocess.run([sys.executable, str(PACKAGE_DIR / "bench" / "bench_dynamics.py"),
                          "--quick", "--json", str(out)], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    assert "targets:" in res.stdout and "start-up" in res.stdout
    data = json.loads(out.read_text())
    assert data["batched"]["N"] == 1000 and data["batched"]["ours_us_per_sample"] > 0
    assert data["trajectory_check"]["samples"] > 1000 and data["trajectory_check"]["ms"] > 0
    panda = next(r for r in data["rows"] if r["arm"] == "panda")
    assert panda["n"] == 7 and set(panda["ratio"]) == {
        "inverse_dynamics", "mass_matrix", "bias_forces", "forward_dynamics"}
    assert panda["inverse_dynamics_paired_ratio"] > 0
    assert all(v > 0 for v in panda["pinocchio_us"].values())
    assert set(data["per_call"]) == {"panda", "kinova"}  # the Panda, and an arm timed nowhere
    for arm in data["per_call"].values():                 # else
        for name in ("inverse_dynamics", "mass_matrix"):  # both ways users write a call
            assert set(arm[name]) == {"dc.f", "from-import"}
            assert all(v > 0 for v in arm[name].values())
    ident = data["identification"]  # the regressor, and the fit of 60 s at 1 kHz
    assert ident["samples"] == 60000 and ident["fit_60s_at_1khz_s"] > 0
    assert ident["regressor_ours_us"] > 0 and ident["regressor_pinocchio_us"] > 0


def test_loop_bench_quick_run_times_every_mode_with_and_without_its_limits(tmp_path):
    # short rows over DDS in their own domain: the joint mode's with the controller without its
    # observer as a third node in the same turns, then each mode's with the controller without
    # its limits as the third node, then the joint mode's beside a second closed loop. Every
    # node gets states and answers, exits 0 on Ctrl-C, and the controllers report their compute
    # time (and the observe stage's, where it runs). How many states are sent and answered is
    # the machine's figure, not asserted: with two CPU hogs beside the suite the controller
    # answered 444 of 501.
    pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
    out = tmp_path / "loop.json"
    res = subprocess.run([sys.executable, str(PACKAGE_DIR / "bench" / "bench_loop.py"),
                          "--executors", "events", "--rates", "250", "--cartesian",
                          "--observer-off", "250", "--limits-off", "250", "--loops", "2",
                          "--seconds", "4", "--domain", "66", "--json", str(out)],
                         capture_output=True, text=True, timeout=400)
    assert res.returncode == 0, res.stderr
    assert "p50 ratio" in res.stdout and "targets:" in res.stdout
    rows = json.loads(out.read_text())
    assert [r["mode"] for r in rows] == ["computed_torque", "computed_torque", "feedforward",
                                         "gravity_pd", "cartesian_impedance", "teach",
                                         "computed_torque"]
    assert [r["loops"] for r in rows] == [1] * 6 + [2]
    check_loop_row(rows[0], ("relay", "controller", "without_observer"))
    assert 0 < rows[0]["controller"]["observe_p50_us"] <= rows[0]["controller"]["observe_p99_us"]
    assert "observe_p50_us" not in rows[0]["without_observer"]
    for row in rows[1:-1]:
        check_loop_row(row, ("relay", "controller", "without_limits"))
    # beside a second closed loop under /loop2 in the same domain, which ran and stopped cleanly
    check_loop_row(rows[-1])
    assert rows[-1]["other_loops"] == {"computed_torque_controller": 0, "dynamics_simulator": 0}


def check_loop_row(row, nodes=("relay", "controller")):
    for node in nodes:
        figures = row[node]
        assert figures["exit_code"] == 0
        assert 0 < figures["answered"] <= figures["states"]
        assert 0 < figures["p50_us"] <= figures["p99_us"] <= figures["max_us"]
    assert row["p50_ratio"] == row["controller"]["p50_us"] / row["relay"]["p50_us"]
    for node in nodes[1:]:
        assert 0 < row[node]["compute_p50_us"] <= row[node]["compute_p99_us"]
