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


def test_identify_on_a_simulated_real_arm(tmp_path):
    """identify runs both goals through the controller's action, records them as rosbag2
    folders that read back with the arm's joints, and writes a URDF that loads; on the
    validation run the identified model's torque error is within 5 % of each joint's RMS and
    at most a fifth of the nominal URDF's (two runs here: 0.7 to 4.3 % against 24 to 67 %;
    issue 31's 3 % is met by the in-process tests, not yet here); the consistent fit's
    residual is within 1.1x the plain fit's. The runs are synchronous in simulated time: the figures do not depend on the load."""
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
    assert identified.max() <= 0.05 and np.all(nominal >= 5 * identified), (identified, nominal)
    assert report["residual_consistent_over_plain"] <= 1.1
