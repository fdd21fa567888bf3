"""Chain.with_payload: against Pinocchio with the payload appended as a body, the mass-0
identity, and invalid payloads refused.

Reference: Pinocchio's rnea and crba on the URDF model with the payload added by
appendBodyToJoint at the link's frame (test/pin_reference.py). Tolerance: 1e-9 relative to the
largest entry (or 1), as in test_pinocchio.
"""

import dataclasses

import numpy as np
import pytest

from arm_sweep import arm_paths, load_arm
from conftest import require, robots_dir
from dyn_control import PayloadError, inverse_dynamics, load_chain, mass_matrix
from dyn_control.model import inertia_matrix

pin = require("pinocchio")
from pin_reference import PinReference  # noqa: E402  (needs pinocchio)

RTOL = 1e-9
MASS, COM, INERTIA = 1.5, (0.02, -0.03, 0.1), (0.01, 0.012, 0.008, 0.001, -0.0005, 0.0007)


def _pin_with_payload(path, chain, link):
    ref = PinReference(path, chain)
    model = ref.model
    frame = model.frames[model.getFrameId(link, pin.FrameType.BODY)]
    body = pin.Inertia(MASS, np.array(COM), inertia_matrix(*INERTIA))
    model.appendBodyToJoint(frame.parentJoint, body, frame.placement)
    ref.data = model.createData()
    return ref


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=0, atol=RTOL * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("rel", arm_paths())
def test_payload_matches_pinocchio_on_every_arm(rel):
    """On the tip link, and on the child link of a joint half-way down the chain (mid-chain
    payloads go into a body that is not the last)."""
    chain = load_arm(rel)
    rng = np.random.default_rng(7)
    for link in {chain.tip_link, chain.joints[chain.n // 2].child_link}:
        loaded = chain.with_payload(MASS, COM, INERTIA, link=link)
        ref = _pin_with_payload(robots_dir() / rel, chain, link)
        for _ in range(5):
            q = rng.uniform(np.maximum(chain.lower, -3), np.minimum(chain.upper, 3))
            qd, qdd = rng.uniform(-2, 2, (2, chain.n))
            _close(inverse_dynamics(loaded, q, qd, qdd), ref.rnea(q, qd, qdd))
            _close(mass_matrix(loaded, q), ref.crba(q))
        # the payload changed the model (else the comparison above proves nothing)
        assert not np.allclose(mass_matrix(loaded, q), mass_matrix(chain, q))


def _panda():
    return load_chain(robots_dir() / "panda_description/urdf/panda.urdf", tip_link="panda_hand")


def _arrays(chain):
    return {f.name: getattr(chain, f.name) for f in dataclasses.fields(chain)
            if isinstance(getattr(chain, f.name), np.ndarray)}


def test_mass_zero_is_the_original_and_the_original_is_unchanged():
    chain = _panda()
    before = {k: v.copy() for k, v in _arrays(chain).items()}
    loaded = chain.with_payload(MASS, COM, INERTIA)
    for name, value in _arrays(chain).items():  # the original is unchanged
        assert np.array_equal(value, before[name]), name
    assert not np.array_equal(loaded.mass, chain.mass)
    # mass 0: no payload, whatever com and inertia say; equal arrays (identity, exact)
    empty = chain.with_payload(0.0, COM, INERTIA)
    for name, value in _arrays(empty).items():
        assert np.array_equal(value, before[name]), name
    assert np.array_equal(empty.inertia_origin, chain.inertia_origin)


@pytest.mark.parametrize("kwargs, match", [
    (dict(mass=-1.0), r"payload_mass must be finite and >= 0 kg, got -1.0"),
    (dict(mass=float("nan")), r"payload_mass .* got nan"),
    (dict(mass=1.0, com=(0, float("inf"), 0)), r"payload_com must be 3 finite values .*inf"),
    (dict(mass=1.0, com=(0, 0)), r"payload_com must be 3 finite values"),
    (dict(mass=1.0, inertia=(0.01, 0.01, 0.01, 0.0, 0.0)), r"payload_inertia must be 6 values"),
    (dict(mass=1.0, inertia=(0.01, 0.01, 0.01, 0.05, 0.0, 0.0)),
     r"payload_inertia: inertia tensor not positive semi-definite"),
    (dict(mass=1.0, inertia=(0.01, 0.01, 0.05, 0.0, 0.0, 0.0)),
     r"payload_inertia: .* break the triangle inequality"),
    (dict(mass=1.0, inertia=(float("nan"),) * 6), r"payload_inertia: non-finite"),
    (dict(mass=1.0, link="no_such_link"), r"payload_link 'no_such_link' is not a link the chain"),
    (dict(mass=1.0, link="panda_link0"), r"payload_link 'panda_link0' is not a link the chain"),
])
def test_invalid_payload_is_refused_with_the_parameter_and_value(kwargs, match):
    chain = _panda()
    with pytest.raises(PayloadError, match=match):
        chain.with_payload(**kwargs)
