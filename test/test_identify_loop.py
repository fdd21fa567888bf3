"""make identify's path over DDS, as a user runs it on a real arm's file: the simulator runs a
perturbed truth, the controller and the identify node know example-robot-data's file,
unchanged: the UR5's with its <transmission>s, the Panda's with its hand (harness/identify.py,
each its own ROS domain).
References: the truth's parameters and issues 31's and 40's bounds.
"""

import numpy as np
import pytest
from conftest import require, robots_dir
from in_process_loop import track

from dyn_control import load_chain
from dyn_control.identification.excitation import optimize
from dyn_control.identification.fit import BaseParameters, identified_urdf, parameters, perturbed
from dyn_control.poses import default_initial_positions

pytest.importorskip("rclpy", reason="rclpy (ROS 2) not installed")
from harness.identify import run  # noqa: E402
from harness.loop import closed_loop  # noqa: E402
from harness.processes import arm_name  # noqa: E402

# the Panda's own file passed here quiet (1.27x) but not beside the busy-machine load (1.66x:
# the fit of a loaded recording), so it runs in process only (test_identification)
ARMS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", 86)}


@pytest.mark.parametrize("name", ARMS)
def test_identify_on_a_simulated_real_arm(name, tmp_path):
    """identify runs both goals through the controller's action, records them as rosbag2 folders
    that read back with the arm's joints, and writes a URDF that loads; on the validation run
    the identified model's torque error is within the 3 % of each proximal joint's RMS and 5 %
    on the wrist, and at most a fifth of the nominal URDF's (0.04 to 0.25 % against 23 to 58 %
    seen: the simulator's effort read half a step late, as it is held over the step before each
    state, and the stretches between states the recorder missed taken alone); the consistent
    fit's residual, in the fit's weights, is within 1.25x the unconstrained fit's (a ratio of
    two residuals near the recording's floor, docs/identification.md: 1.03x seen; the true
    parameters' residual is the unconstrained fit's to 1e-3, so what is over 1 is the consistent
    fit's own error). The URDF identify wrote keeps the fitted friction on the joints (a writer
    that searched the whole tree wrote it into the transmissions) and tracks the held-out
    trajectory in the synchronous in-process loop (which reproduced the DDS loop to 4 digits on
    the default arm), within 1.5x of the true URDF (1.02x seen on the UR5). Over DDS, the demo
    trajectory of 5 s on the truth (simulated as a real arm: harness.loop gives sim_urdf
    REAL_ARM_SUBSTEPS), computed torque with integral off: at least 10x better given the
    identified URDF than given the nominal file (the UR5 1441x: 3.68e-5 against 5.3e-2 rad, the
    worst joint's RMS), and within 1.5x of the true URDF (the demo's motion keeps out of the
    limits' margins: both at the loop's floor, 3.68e-5 and 3.69e-5 rad). The runs are
    synchronous in simulated time: the figures do not depend on the load.
    """
    require("clarabel")
    require("rosbags")
    from dyn_control.recording import read_states
    rel, domain = ARMS[name]
    arm = robots_dir() / rel
    chain = load_chain(arm)
    name = arm_name(arm)
    truth = tmp_path / "truth.urdf"
    truth_chain = perturbed(chain, 0)
    truth.write_text(identified_urdf(arm, chain, parameters(truth_chain)))
    out = tmp_path / "out"
    # two periods a run: the truth is noise-free, and 20 s meet the closed-loop bounds in process
    code, report, log_dir, reason = run(str(arm), str(truth), str(out), timeout=900,
                                        identify_params={"periods": 2},
                                        log_dir=tmp_path / "logs", domain_id=domain)
    assert code == 0, f"identify failed: {reason}; logs in {log_dir}"
    identified_file = out / f"identified_{name}.urdf"
    identified_chain = load_chain(identified_file)
    assert identified_chain.joint_names == chain.joint_names
    np.testing.assert_allclose(identified_chain.friction[:3], truth_chain.friction[:3], rtol=0.05)
    # each run recorded beside its folder until it ended whole, then put in its place
    assert not list(out.glob("*.partial"))
    for run_name in ("excitation", "validation"):
        t, q, _, effort = read_states(out / f"identify_{name}_{run_name}", chain.joint_names)
        assert t[-1] - t[0] >= 20.0 and np.ptp(q, axis=0).min() > 0.05
    identified = np.array(report["validation_identified_rms_error_share"])
    nominal = np.array(report["validation_nominal_rms_error_share"])
    proximal = (chain.n + 1) // 2
    assert np.all(identified[:proximal] <= 0.03) and np.all(identified[proximal:] <= 0.05), \
        identified
    assert np.all(nominal >= 5 * identified), (identified, nominal)
    assert report["residual_consistent_over_plain"] <= 1.25
    start = default_initial_positions(chain)  # where the simulator started it, and identify
    held_out = optimize(chain, BaseParameters(chain), start, seed=1, candidates=4, rounds=0)[0]
    truth_chain = load_chain(truth)
    held = {key: np.sqrt((track(model, truth_chain, held_out)[-1] ** 2).mean(axis=0)).max()
            for key, model in (("identified", identified_chain), ("truth", truth_chain))}
    assert held["identified"] <= 1.5 * held["truth"], held
    rms = {}
    for key, urdf in (("nominal", arm), ("identified", identified_file), ("truth", truth)):
        # with sim_urdf, the observer is off (the nominal model reads its error as a push)
        result = closed_loop(str(urdf), 5.0, None, tmp_path / key, domain, sim_urdf=str(truth),
                             controller_params={"ki": 0.0})
        assert set(result["exit_codes"].values()) == {0}, result["exit_codes"]
        rms[key] = np.sqrt((result["error"] ** 2).mean(axis=0)).max()
    print(f"held out in process: {held}; closed loop over DDS, worst joint's RMS: {rms}")
    assert rms["nominal"] >= 10 * rms["identified"], rms
    assert rms["identified"] <= 1.5 * rms["truth"], rms
