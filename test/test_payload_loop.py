"""A payload on the simulated arm only, over DDS: simulator, controller and demo trajectory as
separate processes (harness/loop.py: closed_loop), synchronous on simulation time.

The simulator carries 1.5 kg 0.1 m beyond the default arm's tip link, starting from a bent
pose so that the payload loads the arm. References: the same loop with the payload declared
to the controller from the start (matched model), and docs/controller.md's bounds.
"""

import sys

import pytest
from conftest import SUPPORT_DIR

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.loop import closed_loop  # noqa: E402
from harness.metrics import faults, tracking_figures  # noqa: E402

BENT = [0.0, 0.6, 0.0, -0.9, 0.0, 0.6, 0.0]
PAYLOAD = {"payload_mass": 1.5, "payload_com": [0.0, 0.0, 0.1]}
SIMULATOR = {"initial_positions": BENT, **PAYLOAD}
W = 40.0  # rad/s, docs/controller.md's tuning rule: kp 3 w^2, kd 3 w, ki w^3
DURATION = 6.0  # s, the demo trajectory
INTEGRAL = {"kp": 3 * W**2, "kd": 3 * W, "ki": W**3}


def _declare_on_motion():
    argv = [sys.executable, str(SUPPORT_DIR / "set_parameters_on_motion.py"),
            "/computed_torque_controller", "payload_mass=1.5", "payload_com=[0.0, 0.0, 0.1]"]
    return ("set_parameters_on_motion", argv)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cases = {
        "matched": {"controller_params": PAYLOAD},
        "unknown": {},
        "declared": {"helpers": [_declare_on_motion()]},
        "integral": {"controller_params": INTEGRAL},
    }
    return {name: closed_loop("default_arm", DURATION, None, tmp_path_factory.mktemp(name), 90 + k,
                              simulator_params=SIMULATOR, **kwargs)
            for k, (name, kwargs) in enumerate(cases.items())}


def _rms(result, since=0.0):
    """Worst joint's RMS error (rad) over the trajectory from `since` s on."""
    keep = result["t"] >= since
    return tracking_figures({"error": result["error"][keep]})[0].max()


def test_unknown_payload_shows_in_the_reported_error(runs):
    # the controller's ~/error topic carries it: two orders of magnitude above the matched model
    assert _rms(runs["unknown"]) > 100 * _rms(runs["matched"]), (
        _rms(runs["unknown"]), _rms(runs["matched"]))


def test_payload_declared_at_run_time_tracks_within_2x_of_the_matched_model(runs):
    # Declared as the trajectory starts; until then the arm sagged under the unknown load
    # (6e-2 rad), an error the declared model then removes at the law's own rate (poles at
    # -20 rad/s: e^(-20 * 0.5) = 5e-5 of the sag, 3e-6 rad, after 0.5 s). When it lands depends
    # on the machine (the helper's wake-up and the parameter service's round trip: 1.5 s of
    # simulated time seen with two CPU hogs beside the suite), so the runs are compared from the
    # time the controller reports for it plus those 0.5 s, to the trajectory's end.
    # the controller's /diagnostics: the payload it carries, and since when
    controller = runs["declared"]["diagnostics"]["computed_torque_controller"]
    assert controller["payload_kg"] == pytest.approx(1.5, abs=1e-9), controller
    since = controller["payload_since_s"] - runs["declared"]["start"] + 0.5
    assert since < DURATION - 1.0, f"declared at {since - 0.5:.3f} s, too late to compare"
    declared, matched = _rms(runs["declared"], since), _rms(runs["matched"], since)
    print(f"from {since:.3f} s of the trajectory on: declared {declared:.2e} rad, matched "
          f"{matched:.2e} rad")
    assert declared < 2 * matched, (since, declared, matched)


def test_integral_action_tracks_the_unknown_payload_below_2e_3_rad(runs):
    assert _rms(runs["integral"]) < 2e-3


def test_every_run_ends_cleanly(runs):
    for result in runs.values():
        assert set(result["exit_codes"].values()) == {0}, result["exit_codes"]
        assert not faults(result), faults(result)
        assert "Traceback" not in "".join(result["logs"].values())
        # the demo's goal was accepted and reached (refused goals end otherwise)
        assert result["diagnostics"]["trajectory_demo"]["result"] == "SUCCESSFUL"
