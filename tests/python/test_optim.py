# SPDX-License-Identifier: MIT
"""test_optim.py - gradnet.torch.SGD in real training jobs of 2 and 4
ranks on 127.0.0.1, launched as the DDP hook's tests launch theirs
(optim_worker.py): the parameters start as rank 0's on every rank, stay
bit-identical, and after every step equal tests/model/dore.py's model of
the same gradients and learning rates (DORE, and 3LC's push/pull), bit for
bit; a NaN on one rank skips that step on every rank."""
import os
import sys

import numpy as np
import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
import dore  # noqa: E402
from test_ddp import run_job  # noqa: E402

JOB = 0x6f707400
SPECS = {
    "dore": (dore.DORE_QUANTIZER, dore.DORE_QUANTIZER,
             dict(dore=True, momentum=0.9, weight_decay=1e-3)),
    "pushpull": ("3lc", "3lc", {}),
    "nan": (dore.DORE_QUANTIZER, dore.DORE_QUANTIZER,
            dict(dore=True, momentum=0.9)),
}


def f32(v):
    """The float32 the ctypes binding passes for a Python float."""
    return np.float32(v)


def model_of(scenario, outs, world):
    up, down, kw = SPECS[scenario]
    kw = {k: (f32(v) if k != "dore" else v) for k, v in kw.items()}
    x0 = outs[0]["start"].numpy()
    return dore.Model(up, down, x0.size, world, 65536, JOB,
                      outs[0]["tensor_id"], x0, **kw)


def check(scenario, world, tmp_path, nan_step=None):
    outs = run_job(scenario, world, tmp_path, worker="optim_worker.py",
                   extra={"GN_JOB": str(JOB)})
    for o in outs:
        # Rank 0's parameters everywhere, as views of the flat buffer.
        assert torch.equal(o["start"], outs[0]["own"])
        assert o["views"]
        assert o["stats"]["allreduces"] > 0
    m = model_of(scenario, outs, world)
    for step in range(len(outs[0]["params"])):
        if step == nan_step:
            m.skip()
            want = m.x.copy()
        else:
            want = m.step([o["grads"][step].numpy() for o in outs],
                          f32(outs[0]["lr"][step]))
        for r, o in enumerate(outs):
            got = o["params"][step].numpy()
            bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
            assert not bad.size, "step %d rank %d: %d values differ from " \
                "the model" % (step, r, bad.size)
    return outs


@pytest.mark.parametrize("world", [2, 4])
def test_dore_optimizer_equals_model(world, tmp_path):
    outs = check("dore", world, tmp_path)
    # The schedule took effect: 0.05, 0.05, 0.025, 0.025, 0.0125.
    assert outs[0]["lr"] == [0.05, 0.05, 0.025, 0.025, 0.0125]


def test_3lc_push_pull_optimizer_equals_model(tmp_path):
    check("pushpull", 2, tmp_path)


def test_nan_skips_the_step_everywhere(tmp_path):
    outs = check("nan", 2, tmp_path, nan_step=2)
    for o in outs:
        assert o["nonfinite_steps"] == 1
        assert torch.equal(o["params"][1], o["params"][2])
