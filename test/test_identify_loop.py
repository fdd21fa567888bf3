"""make identify's path over DDS: the simulator runs a perturbed truth, the controller and the
identify node know the default arm (harness/identify.py, its own ROS domain). References: the
truth's parameters and the issue's bounds on the validation run."""

import numpy as np
import pytest

from conftest import DEFAULT_ARM, require
from dyn_control import load_chain
from dyn_control.excitation import optimize
from dyn_control.identification import BaseParameters, identified_urdf, parameters, perturbed
from test_identification import START, track

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.identify import run  # noqa: E402
from harness.loop import closed_loop  # noqa: E402


def test_identify_on_a_simulated_real_arm(tmp_path):
    """identify runs both goals through the controller's action, records them as rosbag2
    folders that read back with the arm's joints, and writes a URDF that loads; on the
    validation run the identified model's torque error is within issue 31's 3 % of each
    proximal joint's RMS and 5 % on the wrist, and at most a fifth of the nominal URDF's (0.04
    to 0.25 % against 23 to 58 % seen: the simulator's effort read half a step late, as it
    is held over the step before each state, and the stretches between states the recorder
    missed taken alone); the consistent fit's residual, in the fit's weights, is within 1.1x
    the unconstrained fit's (1.005x seen). Then issue 31's closed-loop figure for the URDF
    identify wrote: on the held-out trajectory, in the synchronous in-process loop (which
    reproduces the DDS loop to 4 digits: 2.3252e-4 against 2.3249e-4 rad on the demo
    trajectory), within 1.5x of the true URDF (1.07x seen). Over DDS, the demo trajectory on
    the truth (simulated as a real arm: harness.loop gives sim_urdf REAL_ARM_SUBSTEPS),
    computed torque with integral off: at least 10x better given the identified URDF than
    given the nominal one (440x seen: 2.4e-4 against 0.104 rad, the worst joint's RMS), and
    the true URDF better still (1.1e-4 rad; docs/identification.md says why the demo's 2.1x
    is not the held-out 1.07x). The runs are synchronous in simulated time: the figures do
    not depend on the load."""
    require("clarabel")
    require("rosbags")
    from dyn_control.recording import read_states
    chain = load_chain(DEFAULT_ARM)
    truth = tmp_path / "truth.urdf"
    truth.write_text(identified_urdf(DEFAULT_ARM, chain, parameters(perturbed(chain, 0))))
    out = tmp_path / "out"
    # two periods a run: the truth is noise-free, and 20 s meet the closed-loop bounds in process
    code, report, log_dir = run(str(DEFAULT_ARM), str(truth), str(out), timeout=900,
                                identify_params={"periods": 2}, log_dir=tmp_path / "logs",
                                domain_id=86)
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
    # issue 31's closed-loop figure for this URDF: on the held-out trajectory, within 1.5x of
    # the true URDF, in the synchronous loop the DDS one reproduces to 4 digits (below)
    held_out = optimize(chain, BaseParameters(chain), START, seed=1, candidates=4, rounds=0)[0]
    truth_chain = load_chain(truth)
    held = {key: np.sqrt((track(model, truth_chain, held_out)[-1] ** 2).mean(axis=0)).max()
            for key, model in (("identified", load_chain(out / "identified_default_arm.urdf")),
                               ("truth", truth_chain))}
    assert held["identified"] <= 1.5 * held["truth"], held
    rms = {}
    for key, urdf in (("nominal", DEFAULT_ARM), ("identified", out / "identified_default_arm.urdf"),
                      ("truth", truth)):
        # with sim_urdf, the observer is off (the nominal model reads its error as a push)
        result = closed_loop(str(urdf), 10.0, None, tmp_path / key, 86, sim_urdf=str(truth),
                             controller_params={"ki": 0.0})
        assert set(result["exit_codes"].values()) == {0}, result["exit_codes"]
        rms[key] = np.sqrt((result["error"] ** 2).mean(axis=0)).max()
    print(f"closed loop over DDS, worst joint's RMS: {rms}")
    assert rms["nominal"] >= 10 * rms["identified"], rms
    assert rms["truth"] < rms["identified"], rms
