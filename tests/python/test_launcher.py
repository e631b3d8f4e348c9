# SPDX-License-Identifier: MIT
"""test_launcher.py - how gradnet.torch.init() gets the job key and the
peers' addresses from torch.distributed's store, in real 2-rank jobs on
127.0.0.1 (launch_worker.py), and where a rank binds.

The key is the launcher's (GN_KEY_FILE, GN_KEY_FD); through the store only
when asked, with a warning; never silently. Each rank publishes the
address its bound socket holds, once, and refuses an address someone else
wrote for it.
"""
import ipaddress
import json
import os
import subprocess
import sys

from test_ddp import HERE, free_tcp_port, key_file  # also puts python/ first

import gradnet  # noqa: E402
import gradnet.torch as gt  # noqa: E402


def run_job(scenario, tmp_path, world=2, **extra):
    env = dict(os.environ)
    for v in ("GN_PEERS", "GN_RANK", "GN_WORLD_SIZE", "GN_KEY", "GN_KEY_FILE",
              "GN_KEY_FD", "GN_INSECURE", "GN_KEY_VIA_STORE", "GN_HOST"):
        env.pop(v, None)
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_tcp_port()),
               WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
               OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(
                   [os.path.join(HERE, "..", "..", "python"),
                    env.get("PYTHONPATH", "")]), **extra)
    procs = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "launch_worker.py"), scenario,
         str(tmp_path)], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for r in range(world)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=120)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            logs.append(p.communicate()[0])
    outs = []
    for r in range(world):
        path = tmp_path / ("rank%d.json" % r)
        assert path.exists(), "rank %d wrote nothing:\n%s" % (r, logs[r])
        outs.append(json.loads(path.read_text()))
    return outs, logs


def test_no_key_is_refused(tmp_path):
    outs, logs = run_job("nokey", tmp_path)
    for o in outs:
        assert o["error"], "init() ran without a key:\n%s" % logs
        for v in ("GN_KEY_FILE", "GN_KEY_FD", "key_via_store", "insecure"):
            assert v in o["error"], o["error"]


def test_insecure_runs_without_key(tmp_path):
    outs, logs = run_job("insecure", tmp_path)
    assert [o.get("sum") for o in outs] == [3.0, 3.0], logs


def test_key_through_store_warns(tmp_path):
    outs, logs = run_job("storekey", tmp_path)
    assert [o.get("sum") for o in outs] == [3.0, 3.0], logs
    for o in outs:
        assert any("unauthenticated" in w and "GN_KEY_FILE" in w
                   for w in o["warnings"]), o["warnings"]


def test_published_address_is_the_bound_socket(tmp_path):
    outs, logs = run_job("keyfile", tmp_path, GN_KEY_FILE=key_file(tmp_path))
    assert [o.get("sum") for o in outs] == [3.0, 3.0], logs
    for o in outs:
        assert o["published"] == o["address"], o
        assert not o["address"].endswith(":0"), o


def test_address_written_by_another_client_is_refused(tmp_path):
    outs, logs = run_job("squat", tmp_path, GN_KEY_FILE=key_file(tmp_path))
    assert outs[1]["error"] and "wrote it first" in outs[1]["error"], logs
    # Rank 0 was handed the stranger's address: it must not get a job.
    assert outs[0]["error"], logs


def test_published_port_cannot_be_taken(tmp_path):
    outs, logs = run_job("thief", tmp_path, GN_KEY_FILE=key_file(tmp_path))
    assert outs[1]["stolen"] is False and outs[1]["errno"], logs
    assert [o.get("sum") for o in outs] == [3.0, 3.0], logs


def test_multi_host_job_never_binds_loopback(monkeypatch):
    # Debian's /etc/hosts names the host 127.0.1.1: MASTER_ADDR may resolve
    # to loopback although the job spans hosts (torchrun's variables say).
    for v in ("GN_HOST", "GN_PEERS", "GN_KEY", "GN_KEY_FILE", "GN_KEY_FD",
              "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
              "SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.1.1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    host = gt._local_host()
    ctx = gradnet.Context.bind(rank=0, world_size=2, insecure=True,
                               bind_addr=host)
    try:
        addr = ctx.address
    finally:
        ctx.close()
    ip = addr.rsplit(":", 1)[0].strip("[]")
    assert not ipaddress.ip_address(ip).is_loopback, addr
    # One host: loopback is right.
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert gt._local_host() == "127.0.0.1"


def test_bind_then_join(tmp_path):
    a = gradnet.Context.bind(rank=0, world_size=1, insecure=True,
                             bind_addr="127.0.0.1")
    try:
        assert a.address.startswith("127.0.0.1:")
        a.join([a.address])
        x = bytearray(16)
        a.register(1, 4, codec="none")
        a.allreduce(1, memoryview(x).cast("f"))
    finally:
        a.close()
