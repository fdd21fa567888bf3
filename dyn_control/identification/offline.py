"""Identify an arm from recorded runs and write what a user keeps: the identified
URDF, a report (JSON, a markdown table, a PNG of measured against predicted torque on a
validation run). Pure numpy over identification, signals and recording; no rclpy.

    python -m dyn_control.identification.offline --urdf ARM.urdf --from-bag EXCITATION_BAG
        [--validation VALIDATION_BAG] [--out out] [--name arm]
"""

import argparse
import json
import pathlib
import sys

import numpy as np

from dyn_control.identification.fit import (
    BaseParameters,
    consistent_fit,
    fit,
    identified_urdf,
    parameters,
    regressor,
    row_sigma,
)
from dyn_control.identification.signals import check_recording, position_cutoff, prepare


class RecordingError(ValueError):
    """A recording identification refuses (one line: what and the value)."""


def samples(chain, recording, effort_delay=0.0, cutoff=None):
    """(stacked regressor rows W, the efforts) of a recording (t, q, qd, effort), checked and
    prepared (signals; effort_delay, s: how long before its stamp the effort acted; cutoff,
    Hz: the q filter's, None for signals.position_cutoff's); RecordingError when it is
    refused.
    """
    t, q, qd, effort = recording
    problem = check_recording(t, q, qd, effort, chain.effort_limits, chain.joint_names)
    if problem:
        raise RecordingError(problem)
    q, qd, qdd, tau = prepare(t, q, effort, cutoff, effort_delay=effort_delay)
    if len(q) < 10 * chain.n:
        raise RecordingError(f"recording refused: {len(q)} samples left after filtering and "
                             f"dropping the slow ones (at least {10 * chain.n})")
    return np.vstack([regressor(chain, *x) for x in zip(q, qd, qdd)]), tau.ravel()


def identify(chain, source, excitation, validation=None, effort_delay=0.0):
    """-> (identified URDF text, report dict) from the excitation recording (t, q, qd,
    effort), the chain loaded from `source`; the validation recording, if any, is predicted
    by the identified and by the nominal model. effort_delay: signals.prepare's.
    """
    W, tau = samples(chain, excitation, effort_delay)
    # the validation run is filtered as the excitation was, at the cutoff its noise allowed
    cutoff = position_cutoff(*excitation[:2])
    base = BaseParameters(chain)
    plain = fit(base.columns(W), tau, chain.n)
    sigma = row_sigma(W, tau, chain.n)
    pi = consistent_fit(W, tau, chain.n, parameters(chain), sigma=sigma)
    # what physical consistency costs: the residual in the weights the fit minimizes, against
    # the unconstrained fit's in the same weights
    rows, target = W / sigma[:, None], tau / sigma
    unconstrained = np.linalg.lstsq(rows, target, rcond=None)[0]
    residual = float(np.linalg.norm(target - rows @ pi)
                     / np.linalg.norm(target - rows @ unconstrained))
    report = {
        "joints": chain.joint_names, "samples": len(tau) // chain.n,
        "effort_delay_s": effort_delay, "position_cutoff_hz": cutoff,
        "base_parameters": len(base.independent),
        "base": [{"combination": name, "value": float(b), "relative_std": float(s),
                  "consistent": float(c)}
                 for name, b, s, c in zip(base.regrouping, plain.beta, plain.relative_std,
                                          base.of(pi))],
        "residual_consistent_over_plain": residual,
        "parameters": pi.tolist(), "nominal": parameters(chain).tolist()}
    if validation is not None:
        Wv, tau_v = samples(chain, validation, effort_delay, cutoff)
        measured = tau_v.reshape(-1, chain.n)
        rms = np.sqrt((measured ** 2).mean(axis=0))
        for key, params in (("identified", pi), ("nominal", parameters(chain))):
            predicted = (Wv @ params).reshape(-1, chain.n)
            report[f"validation_{key}_rms_error_share"] = (
                np.sqrt(((predicted - measured) ** 2).mean(axis=0)) / rms).tolist()
        report["validation_rms_nm"] = rms.tolist()
        report["_validation"] = (measured, (Wv @ pi).reshape(-1, chain.n),
                                 (Wv @ parameters(chain)).reshape(-1, chain.n))
    return identified_urdf(source, chain, pi), report


def write_outputs(out_dir, name, urdf_text, report):
    """out_dir/identified_<name>.urdf, identify_<name>.json, .md and, with a validation run,
    .png; returns their paths.
    """
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"urdf": out / f"identified_{name}.urdf", "json": out / f"identify_{name}.json",
             "md": out / f"identify_{name}.md"}
    paths["urdf"].write_text(urdf_text)
    validation = report.pop("_validation", None)
    paths["json"].write_text(json.dumps(report, indent=1))
    paths["md"].write_text(markdown(report))
    if validation is not None:
        paths["png"] = out / f"identify_{name}.png"
        plot(paths["png"], report["joints"], *validation)
    return paths


def markdown(report):
    lines = [f"# Identification: {report['samples']} samples, {report['base_parameters']} base "
             f"parameters", "",
             f"Residual of the physically consistent fit over the unconstrained one (in the "
             f"fit's weights): "
             f"{report['residual_consistent_over_plain']:.4f}", "",
             f"Position filter: {report['position_cutoff_hz']:g} Hz, the highest the recording's "
             f"position noise allows", ""]
    if "validation_rms_nm" in report:
        lines += ["| joint | validation RMS torque (N·m) | error, identified | error, nominal |",
                  "|---|---|---|---|"]
        lines += [f"| {j} | {r:.3f} | {100 * a:.2f} % | {100 * b:.2f} % |" for j, r, a, b in zip(
            report["joints"], report["validation_rms_nm"],
            report["validation_identified_rms_error_share"],
            report["validation_nominal_rms_error_share"])]
        lines.append("")
    lines += ["| base parameter | plain fit | relative std | consistent fit |", "|---|---|---|---|"]
    lines += [f"| {b['combination']} | {b['value']:.6g} | {100 * b['relative_std']:.2f} % | "
              f"{b['consistent']:.6g} |" for b in report["base"]]
    return "\n".join(lines) + "\n"


def plot(path, joints, measured, identified, nominal):
    import matplotlib
    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt
    # constrained layout makes room for the legend above the panels, where it hides no curve
    fig, axes = plt.subplots(len(joints), 1, figsize=(9, 1.6 * len(joints)), sharex=True,
                             layout="constrained")
    for k, (ax, joint) in enumerate(zip(np.atleast_1d(axes), joints)):
        # measured wide and light underneath, the predictions thin on top: a good fit lies
        # inside the grey band, and both stay visible
        ax.plot(measured[:, k], color="0.7", lw=3, label="measured")
        ax.plot(identified[:, k], "C0", lw=0.8, label="identified")
        ax.plot(nominal[:, k], "C3--", lw=0.8, label="nominal URDF")
        ax.set_ylabel(f"{joint}\nN·m")
    fig.suptitle("dyn_control identify: measured against predicted torque")
    np.atleast_1d(axes)[0].legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                                  fontsize=8)
    np.atleast_1d(axes)[-1].set_xlabel("validation sample (100 Hz, slow samples dropped)")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    from dyn_control.model.chain import load_chain
    from dyn_control.recording import read_states
    parser = argparse.ArgumentParser(description="identify an arm from recorded runs")
    parser.add_argument("--urdf", required=True, help="the URDF the controller knows")
    parser.add_argument("--from-bag", required=True, help="the excitation run's rosbag2 folder")
    parser.add_argument("--validation", help="a second, different run's rosbag2 folder")
    parser.add_argument("--out", default="out")
    parser.add_argument("--name", default=None,
                        help="default: the URDF's file name and _refit, so that a refit does "
                             "not overwrite the live run's identified_<name>.urdf")
    parser.add_argument("--effort-delay", type=float, default=0.0,
                        help="s before its stamp that a state's effort acted: 0 for a drive's "
                             "measured torque, half the step (0.0005) for dynamics_simulator")
    args = parser.parse_args(argv)
    chain = load_chain(args.urdf)
    name = args.name or f"{pathlib.Path(args.urdf).stem}_refit"
    try:
        excitation = read_states(args.from_bag, chain.joint_names)
        validation = (None if args.validation is None
                      else read_states(args.validation, chain.joint_names))
        urdf_text, report = identify(chain, args.urdf, excitation, validation,
                                     args.effort_delay)
    except ValueError as err:  # RecordingError, or a bag that cannot be read: one line
        print(f"identify: {err}", file=sys.stderr)
        return 2
    paths = write_outputs(args.out, name, urdf_text, report)
    print("identify: wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
