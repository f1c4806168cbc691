"""Link topology, MXNet's spanning trees, and the tree comm on simulated GPUs.

The tree comm must give the flat device comm's results for every device
count and size, on every synthetic topology, for small arrays (one tree) and
big ones (row slices, one tree per root)."""
import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetValueError
from mxkv.kvstore.comm import CommDevice, CommTree, spanning
from mxkv.kvstore.comm.spanning import compute_depth, compute_trees, tree_weight
from mxkv.kvstore.comm.topology import Links, link_weights, synthetic_links

f32 = np.float32


# ---------------------------------------------------------------- link weights
def test_weights_are_rank_plus_one_with_pcie_dropped_when_nvlink_connects_all():
    w = link_weights(synthetic_links(8, "dgx1"))
    assert w[0][:4] == [0, 2, 2, 3]
    assert w[0][5] == 0  # PCI-E: the NVLinks alone connect every GPU


def test_pcie_links_weigh_one_over_n_when_nvlink_does_not_connect_all():
    w = link_weights(synthetic_links(4, "groups"))
    assert w == [[0, 2, 0.25, 0.25], [2, 0, 0.25, 0.25], [0.25, 0.25, 0, 2],
                 [0.25, 0.25, 2, 0]]


def test_p2p_links_the_ranks_missed_fall_back_to_the_p2p_matrix():
    # CUDA 9.2 on a p3.16xlarge reported rank 0 for double NVLinks (MXNet's comment)
    links = Links(rank=[[0, 0], [0, 0]], p2p=[[False, True], [True, False]])
    assert link_weights(links) == [[0, 2], [2, 0]]  # ranks alone: [[0, .5], [.5, 0]]


def test_unknown_simulated_topology_is_named(monkeypatch):
    monkeypatch.setenv("MXKV_SIMULATE_TOPOLOGY", "torus")
    with pytest.raises(MXNetValueError, match="MXKV_SIMULATE_TOPOLOGY='torus'"):
        synthetic_links(4)


# ---------------------------------------------------------------- spanning trees
def _check_tree(tree, n, root):
    """Every device's value reaches the root exactly once, along parent/child edges."""
    topo, scan = tree
    depth = compute_depth(n)
    assert topo[0] == root and len(scan) == depth + 2
    leaves = topo[scan[depth]:scan[depth + 1]]
    assert len(leaves) == 2 ** depth and set(leaves) == set(range(n))
    held = {d: {d} for d in range(n)}
    for level in range(depth, 0, -1):
        row, up = topo[scan[level]:scan[level + 1]], topo[scan[level - 1]:scan[level]]
        for k in range(0, len(row), 2):
            assert row[k] == up[k // 2]
            if row[k] != row[k + 1]:
                assert not held[row[k]] & held[row[k + 1]]
                held[row[k]] |= held[row[k + 1]]
    assert held[root] == set(range(n))


@pytest.mark.parametrize("kind,counts", [("groups", range(2, 17)), ("nvlink", [2, 3, 4, 8, 12]),
                                         ("pcie", [3, 9, 16]), ("dgx1", range(2, 9))])
def test_every_root_gets_a_balanced_spanning_tree(kind, counts):
    for n in counts:
        trees = compute_trees(link_weights(synthetic_links(n, kind)))
        assert len(trees) == n
        for root, tree in enumerate(trees):
            _check_tree(tree, n, root)


@pytest.mark.parametrize("n,root", [(3, 0), (4, 1), (5, 3)])
def test_the_best_tree_weighed_at_once_is_the_one_the_search_finds(n, root):
    # _backtrack weighs every valid assignment with numpy; _search walks
    # them one by one as MXNet's IterativeBacktrack: the same tree, ties and
    # all (weights with missing links, equal links and thirds)
    rng = np.random.default_rng(n * 10 + root)
    trees = []
    for _ in range(2):
        w = rng.choice([0.0, 1.0, 1.0, 2.0, 0.5, 1 / 3], size=(n, n))
        w = (np.triu(w, 1) + np.triu(w, 1).T).tolist()
        trees.append(spanning._search(w, n, root, optimal=True))
        assert spanning._backtrack(w, n, root, optimal=True) == trees[-1]
    assert any(-1 not in t for t in trees), trees   # not only "no tree" twice


@pytest.mark.parametrize("n", [3, 4, 6, 8])
def test_backtracking_also_builds_spanning_trees(n):
    for root, tree in enumerate(compute_trees(link_weights(synthetic_links(n, "dgx1")),
                                              backtrack=True)):
        _check_tree(tree, n, root)


def test_trees_follow_the_nvlinks_of_a_dgx1():
    w = link_weights(synthetic_links(8, "dgx1"))
    for topo, _ in compute_trees(w):
        for i in range(1, len(topo) - 1, 2):
            a, b = topo[i], topo[i + 1]
            assert a == b or w[a][b] > 1, (a, b)


def test_groups_trees_cross_between_the_groups_once():
    w = link_weights(synthetic_links(8, "groups"))
    for topo, scan in compute_trees(w):
        leaves = topo[scan[3]:]
        assert tree_weight(w, leaves, 8, 3, penalty=False) == pytest.approx(6 * 2 + 1 / 8)


def test_link_usage_penalty_spreads_roots_over_links():
    w = link_weights(synthetic_links(4, "nvlink"))
    edges = set()
    for topo, _ in compute_trees(w, alpha=0.7):
        edges |= {frozenset(p) for p in zip(topo[1::2], topo[2::2]) if p[0] != p[1]}
    assert len(edges) > 3  # more links than one tree's three


# ---------------------------------------------------------------- the tree comm
def _values(devs, shape, seed, integer=True):
    rng = np.random.default_rng(seed)
    make = (lambda: rng.integers(-50, 50, shape).astype(f32)) if integer else \
        (lambda: rng.standard_normal(shape).astype(f32))
    return [mx.nd.array(make(), ctx=d) for d in devs]


@pytest.mark.parametrize("topology", ["groups", "nvlink", "pcie", "dgx1"])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("shape,bound", [((7,), 10_000_000), ((16, 3), 10_000_000),
                                         ((16, 3), 10), ((37, 2), 5)])
def test_tree_reduce_equals_the_flat_reduce(simulate_gpus, monkeypatch, topology, n, shape, bound):
    devs = simulate_gpus(8, topology=topology)[:n]
    monkeypatch.setenv("MXNET_KVSTORE_TREE_ARRAY_BOUND", str(bound))
    vals = _values(devs, shape, n)
    tree, flat = CommTree(), CommDevice()
    got = tree.reduce("k", vals).asnumpy()
    assert np.array_equal(got, flat.reduce("k", vals).asnumpy())
    outs = [mx.nd.zeros(shape, ctx=d) for d in reversed(devs)]
    tree.broadcast("k", mx.nd.array(got), outs)
    for o in outs:
        assert np.array_equal(o.asnumpy(), got)


@pytest.mark.parametrize("n", [9, 12, 16])
def test_tree_reduce_equals_the_flat_reduce_on_many_gpus(simulate_gpus, monkeypatch, n):
    devs = simulate_gpus(n)
    for bound in ("10000000", "8"):
        monkeypatch.setenv("MXNET_KVSTORE_TREE_ARRAY_BOUND", bound)
        vals = _values(devs, (2 * n + 3, 4), n)
        assert np.array_equal(CommTree().reduce(0, vals).asnumpy(),
                              CommDevice().reduce(0, vals).asnumpy())


def test_tree_reduce_of_random_floats_is_close_to_the_flat_one(simulate_gpus):
    devs = simulate_gpus(6)
    vals = _values(devs, (1000,), 1, integer=False)
    assert np.allclose(CommTree().reduce(0, vals).asnumpy(),
                       CommDevice().reduce(0, vals).asnumpy(), rtol=1e-5, atol=1e-5)


def test_big_arrays_are_reduced_by_slices_on_every_root(simulate_gpus, monkeypatch):
    devs = simulate_gpus(4, topology="nvlink")
    monkeypatch.setenv("MXNET_KVSTORE_TREE_ARRAY_BOUND", "10")
    tree = CommTree()
    vals = _values(devs, (8, 2), 3)
    tree.reduce(0, vals)
    # a reduce-scatter then an all-gather: each slice crosses 3 links twice
    assert tree.copier.bytes == {"peer": 2 * 3 * 64}
    want = sum(v.asnumpy() for v in vals)
    for d in devs:  # every GPU holds the whole sum afterwards
        assert np.array_equal(tree._tree_bufs[(0, d, "sum")].asnumpy(), want)


def test_tree_sends_fewer_bytes_between_groups_than_the_flat_comm(simulate_gpus):
    devs = simulate_gpus(8)
    vals = _values(devs, (64,), 2)
    tree, flat = CommTree(), CommDevice()
    tree.reduce(0, vals)
    flat.reduce(0, vals)
    assert tree.copier.bytes["staged"] == 256  # one cross-group link, once
    assert flat.copier.bytes["staged"] == 4 * 256  # the other group, one by one


def test_tree_falls_back_to_the_device_comm_for_shared_or_host_devices(simulate_gpus):
    devs = simulate_gpus(2)
    tree = CommTree()
    vals = [mx.nd.ones((3,), ctx=devs[0]), mx.nd.ones((3,), ctx=devs[0]),
            mx.nd.ones((3,), ctx=mx.cpu(0))]
    assert tree.reduce(0, vals).asnumpy().tolist() == [3, 3, 3]
    assert tree._plans == {}


@pytest.mark.parametrize("n", [2, 4, 5])
def test_store_with_usetree_gives_the_device_store_result(simulate_gpus, monkeypatch, n):
    devs = simulate_gpus(n)
    results = []
    for usetree in ("1", "0"):
        monkeypatch.setenv("MXNET_KVSTORE_USETREE", usetree)
        kv = mx.kv.create("device")
        assert type(kv._comm).__name__ == ("CommTree" if usetree == "1" else "CommDevice")
        kv.init(["a", "b"], [mx.nd.zeros((6, 4)), mx.nd.zeros((3,))])
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.5))
        for step in range(3):
            kv.push(["a", "b"], [[mx.nd.ones((6, 4), ctx=d) * (i + step) for i, d in
                                  enumerate(devs)],
                                 [mx.nd.ones((3,), ctx=d) for d in devs]])
        outs = [mx.nd.zeros((6, 4), ctx=d) for d in devs]
        kv.pull("a", out=outs)
        results.append([o.asnumpy() for o in outs])
    for a, b in zip(*results):
        assert np.array_equal(a, b)


def test_link_usage_penalty_out_of_range_is_refused(monkeypatch):
    monkeypatch.setenv("MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY", "1.5")
    with pytest.raises(MXNetValueError, match="MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY"):
        CommTree()
