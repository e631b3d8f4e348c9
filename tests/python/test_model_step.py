# SPDX-License-Identifier: MIT
"""test_model_step.py - model tensors (gn_model_register(), the
model-updating step) in real jobs of 2, 3 and 4 ranks on 127.0.0.1 (one
thread and one gradnet.Context each), against tests/model/dore.py, the
numpy model written from include/gradnet/codec.h: DORE with its ternary
quantizer, 3LC, top-k and no compression in either direction, 3LC's and
top-k's push/pull with their own error feedback, SGD with momentum and
weight decay, a learning rate that changes every step. Every rank's
parameters equal the model's after every step, bit for bit. Then what a
NaN does (every rank skips the step, parameters and state untouched), a
registration again after gn_tensor_unregister() (the state starts from
zero), and registrations that differ (refused on every rank, naming the
peer)."""
import errno
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
sys.dont_write_bytecode = True
import gradnet  # noqa: E402
import dore  # noqa: E402
from test_conformance_allreduce import (  # noqa: E402
    first_difference, gradient, run_ranks)

STEPS = 5
CHUNK = 2000
Q = dore.DORE_QUANTIZER

# id, gradients' codec, changes' codec, sample, options. The chunk size
# cuts fc1.weight's shards into several chunks; fc2.bias is shorter than a
# chunk on every rank.
TENSORS = [
    (1, "none", "none", "fc1.weight",
     dict(momentum=0.9, weight_decay=1e-3)),
    (2, "3lc", "3lc:s=1.5", "fc1.weight", {}),
    (3, "topk:density=0.01", "topk:density=0.05,bits=4", "fc1.weight",
     dict(momentum=0.5)),
    (4, Q, Q, "fc1.weight", dict(dore=True)),
    (5, "3lc", "3lc", "fc3.weight", dict(dore=True, momentum=0.9)),
    (6, "topk:density=0.05", Q, "fc1.weight",
     dict(dore=True, weight_decay=1e-2)),
    (7, "qsgd:bits=4", "none", "fc2.bias", dict(dore=True, alpha=0.25,
                                                 beta=0.75, eta=1.0)),
    (8, "none", "qsgd:bits=8,bucket=16", "fc2.bias", {}),
    (9, "none", "none", "zeros", dict(dore=True)),
]


def lr_of(step):
    """A schedule: another learning rate every step."""
    return 0.05 / step


def start_params(name):
    """The parameters every rank starts from: a sample of the sequence,
    scaled, so they have the tensor's size and real values."""
    return (gradient(name, 3, 40) * np.float32(4)).astype(np.float32)


def model_of(tid, up, down, name, opts, world, job_id, first_step=1,
             x0=None):
    o = dict(opts)
    kw = dict(dore=o.pop("dore", False), momentum=o.pop("momentum", 0.0),
              weight_decay=o.pop("weight_decay", 0.0))
    for k in ("alpha", "beta", "eta"):
        if k in o:
            kw[k] = o.pop(k)
    x0 = start_params(name) if x0 is None else x0
    return dore.Model(up, down, x0.size, world, CHUNK, job_id, tid, x0,
                      first_step=first_step, **kw)


def register(c, tid, up, down, opts):
    c.register_model(tid, start_params(NAMES[tid]).size, codec=up,
                     down_codec=down, **opts)


NAMES = {t[0]: t[3] for t in TENSORS}


@pytest.mark.parametrize("world", [2, 3, 4])
def test_job_equals_model(world):
    def body(r, c):
        xs = {}
        for tid, up, down, name, opts in TENSORS:
            register(c, tid, up, down, opts)
            xs[tid] = start_params(name)
        hist = []
        for step in range(1, STEPS + 1):
            gs = {}
            for tid, _, _, name, _ in TENSORS:
                gs[tid] = gradient(name, r, step).copy()
                c.step_start(tid, gs[tid], xs[tid], lr_of(step))
            for tid, _, _, _, _ in TENSORS:
                c.step_wait(tid)
            hist.append({tid: x.copy() for tid, x in xs.items()})
        return hist
    body.job_id = 0xd03e0000 + world
    out = run_ranks(world, body.job_id, body)
    wrong = []
    for tid, up, down, name, opts in TENSORS:
        m = model_of(tid, up, down, name, opts, world, body.job_id)
        for step in range(1, STEPS + 1):
            want = m.step([gradient(name, r, step) for r in range(world)],
                          lr_of(step))
            for r in range(world):
                why = first_difference(out[r][step - 1][tid], want)
                if why:
                    wrong.append("tensor %d (%s / %s, %s %r) step %d rank %d: %s"
                                 % (tid, up, down, name, opts, step, r, why))
    assert not wrong, "\n".join(wrong[:12])


NAN_STEP = 3


def test_nan_skips_the_step_everywhere():
    """Rank 1's gradient holds a NaN at step 3: every rank fails that step
    with NonFiniteError, its parameters as they were, and the steps after
    it go on from the state before it, as the model without the step."""
    world, tid, up, down, name, opts = 3, 6, "topk:density=0.05", Q, \
        "fc1.weight", dict(dore=True, momentum=0.5)

    def body(r, c):
        register(c, tid, up, down, opts)
        x = start_params(name)
        hist, errs = [], []
        for step in range(1, STEPS + 1):
            g = gradient(name, r, step).copy()
            if step == NAN_STEP and r == 1:
                g[1234] = np.nan
            before = x.copy()
            try:
                c.step(tid, g, x, lr_of(step))
                errs.append(0)
            except gradnet.NonFiniteError as e:
                errs.append(e.errno)
                assert np.array_equal(before.view(np.uint32),
                                      x.view(np.uint32)), \
                    "a skipped step changed the parameters"
            hist.append(x.copy())
        return hist, errs
    body.job_id = 0xd03e0100
    out = run_ranks(world, body.job_id, body)
    m = model_of(tid, up, down, name, opts, world, body.job_id)
    for step in range(1, STEPS + 1):
        if step == NAN_STEP:
            m.skip()
            want = m.x.copy()
        else:
            want = m.step([gradient(name, r, step) for r in range(world)],
                          lr_of(step))
        for r in range(world):
            hist, errs = out[r]
            assert errs[step - 1] == (errno.EDOM if step == NAN_STEP else 0)
            why = first_difference(hist[step - 1], want)
            assert not why, "step %d rank %d: %s" % (step, r, why)


def test_registration_again_starts_from_zero():
    """Unregistered after three steps and registered again (another
    momentum): the optimizer's state and the codecs' error feedback start
    from zero, from the parameters as they are; steps number on."""
    world, tid, up, down, name = 2, 4, "3lc", "3lc", "fc3.weight"
    first = dict(dore=True, momentum=0.9)
    second = dict(dore=True, momentum=0.5)

    def body(r, c):
        n = start_params(name).size
        x = start_params(name)
        hist = []
        c.register_model(tid, n, codec=up, down_codec=down, **first)
        for step in range(1, 4):
            c.step(tid, gradient(name, r, step).copy(), x, lr_of(step))
        hist.append(x.copy())
        c.unregister(tid)
        c.register_model(tid, n, codec=up, down_codec=down, **second)
        for step in range(4, 7):
            c.step(tid, gradient(name, r, step).copy(), x, lr_of(step))
        hist.append(x.copy())
        return hist
    body.job_id = 0xd03e0200
    out = run_ranks(world, body.job_id, body)
    m = model_of(tid, up, down, name, first, world, body.job_id)
    for step in range(1, 4):
        m.step([gradient(name, r, step) for r in range(world)], lr_of(step))
    # The new registration's steps are numbered from the last one's + 2.
    m2 = model_of(tid, up, down, name, second, world, body.job_id,
                  first_step=m.t + 2, x0=m.x)
    for step in range(4, 7):
        m2.step([gradient(name, r, step) for r in range(world)],
                lr_of(step))
    for r in range(world):
        assert not first_difference(out[r][0], m.x)
        assert not first_difference(out[r][1], m2.x)


@pytest.mark.parametrize("case", ["momentum", "codec", "entropy",
                                  "gradient"])
def test_registrations_that_differ_are_refused(case):
    """A rank that registered the model tensor otherwise (its momentum,
    its changes' codec or their entropy stage, or as a gradient tensor)
    fails the first step on every rank with -EPROTO, the message naming
    the peer."""
    world, tid, n = 2, 9, 1000

    def body(r, c):
        if r == 1 and case == "gradient":
            c.register(tid, n, codec="none")
        else:
            opts = dict(codec="none", down_codec="none")
            if r == 1 and case == "momentum":
                opts["momentum"] = 0.9
            if r == 1 and case == "codec":
                opts["down_codec"] = "3lc"
            if r == 1 and case == "entropy":
                opts["down_codec"] = "none:entropy=zstd"
            c.register_model(tid, n, **opts)
        g = np.ones(n, dtype=np.float32)
        x = np.zeros(n, dtype=np.float32)
        try:
            if r == 1 and case == "gradient":
                c.allreduce(tid, g)
            else:
                c.step(tid, g, x, 0.1)
        except gradnet.GradnetError as e:
            return e.errno, e.strerror, x
        return 0, "", x
    body.job_id = 0xd03e0300
    out = run_ranks(world, body.job_id, body)
    for r in range(world):
        err, msg, x = out[r]
        assert err == errno.EPROTO, (r, err, msg)
        assert "rank %d" % (1 - r) in msg, msg
        assert not x.any(), "a refused step changed the parameters"


def test_bad_options_are_refused():
    """Options out of range are -EINVAL naming what is wrong; a model
    tensor is not allreduced, nor a gradient tensor stepped."""
    body_errs = []

    def body(r, c):
        bad = [dict(momentum=1.0), dict(momentum=-0.5),
               dict(weight_decay=float("inf")), dict(alpha=0.5),
               dict(dore=True, eta=1.5), dict(dore=True, beta=-1.0)]
        for opts in bad:
            with pytest.raises(gradnet.GradnetError) as ei:
                c.register_model(20, 100, codec="none", **opts)
            body_errs.append((opts, ei.value.errno, ei.value.strerror))
        c.register_model(21, 100, codec="none")
        c.register(22, 100, codec="none")
        g = np.ones(100, dtype=np.float32)
        x = np.zeros(100, dtype=np.float32)
        for call in (lambda: c.allreduce(21, g),
                     lambda: c.step(22, g, x, 0.1),
                     lambda: c.step(21, g, x, float("nan")),
                     lambda: c.step(21, g, x, -0.1)):
            with pytest.raises(gradnet.GradnetError) as ei:
                call()
            body_errs.append((None, ei.value.errno, ei.value.strerror))
    body.job_id = 0xd03e0400
    run_ranks(1, body.job_id, body)
    for opts, err, msg in body_errs:
        assert err == errno.EINVAL, (opts, err, msg)
    assert "momentum" in body_errs[0][2]
    assert "alpha" in body_errs[3][2]
    assert "model tensor" in body_errs[6][2]
    assert "learning rate" in body_errs[8][2]
