"""Rank layout arithmetic of the parallel state (no processes needed)."""

import pytest

from minitron.parallel import state


@pytest.mark.parametrize("sizes", [(2, 1, 2, 2), (1, 2, 2, 1), (2, 2, 1, 2)])
def test_coordinates_roundtrip(sizes):
    world = sizes[0] * sizes[1] * sizes[2] * sizes[3]
    for rank in range(world):
        c = state.coordinates_from_rank(rank, sizes)
        assert state.rank_from_coordinates(c.tp, c.cp, c.dp, c.pp, sizes) == rank


def test_tensor_parallel_peers_are_adjacent():
    groups = list(state._enumerate_groups((2, 1, 2, 2), ("tp",)))
    assert [0, 1] in groups and [2, 3] in groups


def test_pipeline_groups_stride_over_the_rest():
    groups = list(state._enumerate_groups((2, 1, 2, 2), ("pp",)))
    assert [0, 4] in groups and len(groups) == 4


def test_defaults_without_initialisation():
    state.destroy_model_parallel()
    assert state.get_tensor_model_parallel_world_size() == 1
    assert state.is_pipeline_first_stage() and state.is_pipeline_last_stage()
