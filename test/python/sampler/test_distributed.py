"""torch.distributed: every rank of a torch.multiprocessing gloo job is attributed to its test."""

import pytest

from conftest import by_function, load_out, recorded, run_inner_pytest, write

pytest.importorskip("torch.distributed")

DDP_TEST = """
    import os
    import socket
    import time

    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    def rank_main(rank, world_size):
        # rank is passed explicitly, as mp.spawn users do: RANK is not in the
        # environment, so the sampler must learn it from torch.distributed.
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        allreduce_work()
        dist.destroy_process_group()

    def allreduce_work():
        # rank 0's clock decides when to stop, so both ranks run the same
        # number of collectives
        t = torch.ones(1000)
        end = time.monotonic() + 0.6
        go = torch.ones(1)
        while go.item():
            dist.all_reduce(t)
            t /= 2
            go.fill_(float(time.monotonic() < end))
            dist.broadcast(go, 0)

    def _free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def test_two_ranks():
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(_free_port())
        mp.spawn(rank_main, args=(2,), nprocs=2, join=True)

    def test_two_ranks_parent_sets_rank():
        # The launching test sets RANK=0 in its own environment, which every
        # spawned rank inherits: the ranks must still say 0 and 1.
        os.environ["RANK"] = "0"
        os.environ["LOCAL_RANK"] = "0"
        try:
            test_two_ranks()
        finally:
            del os.environ["RANK"], os.environ["LOCAL_RANK"]
"""


def test_gloo_ranks_attributed_with_rank_header(tmp_path):
    write(tmp_path / "test_ddp.py", DDP_TEST)
    out = tmp_path / "out"
    proc = run_inner_pytest(tmp_path, "--fastci-trace-out", str(out), "--fastci-trace-rate", "100",
                            timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evidences = load_out(out)
    test_ids = ("test_ddp.py::test_two_ranks", "test_ddp.py::test_two_ranks_parent_sets_rank")
    assert {h["test-id"] for _, h, _ in evidences} == set(test_ids)
    functions = recorded(out)
    for test_id in test_ids:
        ranks = {}
        mine = [(p, h, s) for p, h, s in evidences if h["test-id"] == test_id]
        for path, header, stacks in mine:
            if by_function([(path, header, stacks)], "allreduce_work"):
                ranks[header["rank"]] = header
        assert sorted(ranks) == ["0", "1"], [h for _, h, _ in mine]
        assert len({h["pid"] for h in ranks.values()}) == 2
        assert all(h["complete"] == "true" for h in ranks.values())
        assert all(h["local-rank"] == "-1" for h in ranks.values()), test_id
        assert by_function(mine, "rank_main")[test_id] >= 20
        # the exact recorder: every process's functions go to the same test
        assert {"_free_port", "rank_main", "allreduce_work"} <= functions[test_id]["functions"]
        assert functions[test_id]["coverage"] == {"exact"}
