"""Process-group bookkeeping for 5-D parallelism (tp, cp, dp, pp, ep).

Ranks are laid out with tensor parallelism varying fastest, then context,
then data and finally pipeline parallelism -- Megatron's default
``tp-cp-dp-pp`` order -- so tensor-parallel peers are neighbours (on a real
node they would share NVLink).  Expert parallelism subdivides the data
parallel dimension.  Every ``new_group`` call is made on every rank in the
same order, as torch.distributed requires.
"""

import torch.distributed as dist

_STATE = {}


class RankCoordinates:
    """A rank's position on each parallel axis."""

    def __init__(self, tp, cp, dp, pp):
        self.tp, self.cp, self.dp, self.pp = tp, cp, dp, pp

    def __repr__(self):
        return f"RankCoordinates(tp={self.tp}, cp={self.cp}, dp={self.dp}, pp={self.pp})"


def rank_from_coordinates(tp, cp, dp, pp, sizes):
    """Global rank of the process at the given coordinates."""
    tp_size, cp_size, dp_size, _ = sizes
    return tp + tp_size * (cp + cp_size * (dp + dp_size * pp))


def coordinates_from_rank(rank, sizes):
    """Inverse of :func:`rank_from_coordinates`."""
    tp_size, cp_size, dp_size, _ = sizes
    tp = rank % tp_size
    rank //= tp_size
    cp = rank % cp_size
    rank //= cp_size
    dp = rank % dp_size
    pp = rank // dp_size
    return RankCoordinates(tp, cp, dp, pp)


def _enumerate_groups(sizes, varying):
    """Yield rank lists where only the axes named in ``varying`` change."""
    names = ("tp", "cp", "dp", "pp")
    fixed_axes = [n for n in names if n not in varying]
    fixed_ranges = [range(sizes[names.index(n)]) for n in fixed_axes]
    var_ranges = [range(sizes[names.index(n)]) for n in varying]

    def product(ranges):
        combos = [()]
        for r in ranges:
            combos = [c + (v,) for c in combos for v in r]
        return combos

    for fixed in product(fixed_ranges):
        ranks = []
        for var in product(var_ranges):
            coords = dict(zip(fixed_axes, fixed))
            coords.update(zip(varying, var))
            ranks.append(rank_from_coordinates(coords["tp"], coords["cp"], coords["dp"],
                                               coords["pp"], sizes))
        yield sorted(ranks)


def _build_axis(name, sizes, varying, my_rank):
    for ranks in _enumerate_groups(sizes, varying):
        group = dist.new_group(ranks)
        if my_rank in ranks:
            _STATE[name] = group
            _STATE[name + "_ranks"] = ranks


def _build_expert_groups(sizes, ep_size, my_rank):
    # Expert-parallel groups are contiguous blocks of the data-parallel group;
    # expert-data-parallel groups stride across those blocks.
    for ranks in _enumerate_groups(sizes, ("dp",)):
        dp_size = len(ranks)
        for start in range(0, dp_size, ep_size):
            block = ranks[start:start + ep_size]
            group = dist.new_group(block)
            if my_rank in block:
                _STATE["ep"], _STATE["ep_ranks"] = group, block
        for offset in range(ep_size):
            strided = ranks[offset::ep_size]
            group = dist.new_group(strided)
            if my_rank in strided:
                _STATE["edp"], _STATE["edp_ranks"] = group, strided


def initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1,
                              context_parallel_size=1, expert_model_parallel_size=1,
                              virtual_pipeline_model_parallel_size=None):
    """Create all process groups; torch.distributed must already be initialised."""
    world = dist.get_world_size()
    model_parallel = (tensor_model_parallel_size * pipeline_model_parallel_size
                      * context_parallel_size)
    if world % model_parallel != 0:
        raise RuntimeError(f"world size {world} not divisible by model parallel size "
                           f"{model_parallel}")
    dp_size = world // model_parallel
    sizes = (tensor_model_parallel_size, context_parallel_size, dp_size,
             pipeline_model_parallel_size)
    rank = dist.get_rank()
    _STATE.clear()
    _STATE["sizes"] = sizes
    _STATE["coords"] = coordinates_from_rank(rank, sizes)
    _STATE["vpp_size"] = virtual_pipeline_model_parallel_size
    _STATE["vpp_rank"] = 0
    _build_axis("tp", sizes, ("tp",), rank)
    _build_axis("cp", sizes, ("cp",), rank)
    _build_axis("dp", sizes, ("dp",), rank)
    _build_axis("dp_cp", sizes, ("cp", "dp"), rank)
    _build_axis("pp", sizes, ("pp",), rank)
    _build_axis("mp", sizes, ("tp", "pp"), rank)
    _build_expert_groups(sizes, expert_model_parallel_size, rank)


def is_initialized():
    return bool(_STATE)


def destroy_model_parallel():
    _STATE.clear()


def _group(name):
    if not _STATE:
        raise RuntimeError("model parallel state is not initialized")
    return _STATE[name]


def get_tensor_model_parallel_group():
    return _group("tp")


def get_context_parallel_group():
    return _group("cp")


def get_data_parallel_group(with_context_parallel=False):
    return _group("dp_cp" if with_context_parallel else "dp")


def get_pipeline_model_parallel_group():
    return _group("pp")


def get_model_parallel_group():
    return _group("mp")


def get_expert_model_parallel_group():
    return _group("ep")


def get_expert_data_parallel_group():
    return _group("edp")


def get_pipeline_model_parallel_ranks():
    return list(_STATE["pp_ranks"])


def get_tensor_model_parallel_world_size():
    return _STATE["sizes"][0] if _STATE else 1


def get_tensor_model_parallel_rank():
    return _STATE["coords"].tp if _STATE else 0


def get_context_parallel_world_size():
    return _STATE["sizes"][1] if _STATE else 1


def get_context_parallel_rank():
    return _STATE["coords"].cp if _STATE else 0


def get_data_parallel_world_size():
    return _STATE["sizes"][2] if _STATE else 1


def get_data_parallel_rank():
    return _STATE["coords"].dp if _STATE else 0


def get_pipeline_model_parallel_world_size():
    return _STATE["sizes"][3] if _STATE else 1


def get_pipeline_model_parallel_rank():
    return _STATE["coords"].pp if _STATE else 0


def get_expert_model_parallel_world_size():
    return len(_STATE["ep_ranks"]) if _STATE else 1


def get_expert_model_parallel_rank():
    return _STATE["ep_ranks"].index(dist.get_rank()) if _STATE else 0


def get_virtual_pipeline_model_parallel_world_size():
    return _STATE.get("vpp_size")


def is_pipeline_first_stage():
    return get_pipeline_model_parallel_rank() == 0


def is_pipeline_last_stage():
    return get_pipeline_model_parallel_rank() == get_pipeline_model_parallel_world_size() - 1


def get_pipeline_model_parallel_next_rank():
    ranks = _STATE["pp_ranks"]
    return ranks[(get_pipeline_model_parallel_rank() + 1) % len(ranks)]


def get_pipeline_model_parallel_prev_rank():
    ranks = _STATE["pp_ranks"]
    return ranks[(get_pipeline_model_parallel_rank() - 1) % len(ranks)]
