"""make identify's path over DDS: the simulator runs a perturbed truth, the controller and the
identify node know the default arm (harness/identify.py, its own ROS domain). References: the
truth's parameters and the issue's bounds on the validation run."""

import numpy as np
import pytest

from conftest import DEFAULT_ARM, require
from dyn_control import load_chain
from dyn_control.identification import identified_urdf, parameters, perturbed

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.identify import run  # noqa: E402
from harness.loop import closed_loop  # noqa: E402


def test_identify_on_a_simulated_real_arm(tmp_path):
    """identify runs both goals through the controller's action, records them as rosbag2
    folders that read back with the arm's joints, and writes a URDF that loads; on the
    validation run the identified model's torque error is within issue 31's 3 % of each
    proximal joint's RMS and 5 % on the wrist, and at most a fifth of the nominal URDF's (0.2
    to 1.2 % against 23 to 58 % seen, quiet and loaded: the simulator's effort read half a
    step late, as it is held over the step before each state, and the stretches between
    states the recorder missed taken alone); the consistent fit's residual is within 1.1x the
    plain fit's. Then issue 31's
    closed loop over DDS: the demo trajectory on the truth, computed torque with integral off,
    tracks at least 10x better given the identified URDF than given the nominal one (47x seen:
    2.2e-3 against 0.104 rad, the worst joint's RMS). The runs
    are synchronous in simulated time: the figures do not depend on the load."""
    require("clarabel")
    require("rosbags")
    from dyn_control.recording import read_states
    chain = load_chain(DEFAULT_ARM)
    truth = tmp_path / "truth.urdf"
    truth.write_text(identified_urdf(DEFAULT_ARM, chain, parameters(perturbed(chain, 0))))
    out = tmp_path / "out"
    code, report, log_dir = run(str(DEFAULT_ARM), str(truth), str(out), timeout=900,
                                log_dir=tmp_path / "logs", domain_id=86)
    assert code == 0, f"identify failed; logs in {log_dir}"
    assert load_chain(out / "identified_default_arm.urdf").joint_names == chain.joint_names
    for run_name in ("excitation", "validation"):
        t, q, _, effort = read_states(out / f"identify_default_arm_{run_name}",
                                      chain.joint_names)
        assert t[-1] - t[0] >= 20.0 and np.ptp(q, axis=0).min() > 0.05
    identified = np.array(report["validation_identified_rms_error_share"])
    nominal = np.array(report["validation_nominal_rms_error_share"])
    proximal = (chain.n + 1) // 2
    assert np.all(identified[:proximal] <= 0.03) and np.all(identified[proximal:] <= 0.05), \
        identified
    assert np.all(nominal >= 5 * identified), (identified, nominal)
    assert report["residual_consistent_over_plain"] <= 1.1
    rms = {}
    for key, urdf in (("nominal", DEFAULT_ARM), ("identified", out / "identified_default_arm.urdf")):
        # the nominal model reads its own error as a push: the observer is off, as in identify
        result = closed_loop(str(urdf), 10.0, None, tmp_path / key, 86, sim_urdf=str(truth),
                             controller_params={"ki": 0.0, "external_torque.enabled": False})
        assert set(result["exit_codes"].values()) == {0}, result["exit_codes"]
        rms[key] = np.sqrt((result["error"] ** 2).mean(axis=0)).max()
    print(f"closed loop over DDS, worst joint's RMS: {rms}")
    assert rms["nominal"] >= 10 * rms["identified"], rms
