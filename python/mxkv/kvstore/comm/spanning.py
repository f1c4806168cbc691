"""Balanced binary spanning trees over a link topology (MXNet's ``gpu_topology.h``).

:func:`compute_trees` gives, for every device as root, a binary tree of
depth ``ceil(log2 n)`` whose edges follow the heaviest links, built the way
MXNet's ``CommDeviceTree`` builds its reduction trees:

1. Kernighan-Lin bisection, recursively: split the devices into two halves
   with the most link weight inside the halves, then connect the root's half
   to the other by its heaviest edge, and recurse into both halves until
   every cluster has one or two devices. Ties are broken by a seeded random
   generator (``random.Random(1)``; MXNet seeds ``std::mt19937`` with 1, so
   the trees are deterministic but tie-breaks may pick other equal edges).
2. When that fails (an odd split, or a cluster with no link to the other),
   up to 10 more random restarts, then a backtracking search for the tree of
   maximum weight (optimal up to 8 devices, the first valid tree beyond),
   which ``MXNET_KVSTORE_TREE_BACKTRACK=1`` asks for directly.
3. After each root's tree, the weight of every link it uses is multiplied by
   ``MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY`` (0.7), so the next roots'
   trees spread over other links.

A tree is stored as MXNet stores it: ``topo`` lists the levels one after the
other (the root, then 2, 4, ... entries; the leaf level has ``2**depth``),
and ``scan[l]`` is where level ``l`` starts. Entry ``2k`` of a level below
the root is always its parent itself; entry ``2k+1`` is the other child, the
parent again when nothing is sent on that edge.
"""
from __future__ import annotations

import random
from typing import List, Sequence, Tuple

import numpy as np

from ...base import MXNetError

__all__ = ["Tree", "compute_depth", "compute_trees", "tree_edges", "tree_weight"]

MAX_DEPTH = 16

Tree = Tuple[List[int], List[int]]  # (topo, scan)


def compute_depth(n: int) -> int:
    """Levels below the root of a balanced binary tree over ``n`` devices."""
    for depth in range(MAX_DEPTH):
        if n <= (2 << depth):
            return depth + 1
    return 0


# ----------------------------------------------------------------------------
# Kernighan-Lin


def _gains(W, P):
    """D[i] = external minus internal link weight of i (0 outside the split)."""
    n = len(P)
    return [-P[i] * sum(W[i][j] * P[j] for j in range(n)) for i in range(n)]


def _best_move(W, P, D, used):
    n = len(P)
    g, a, b = 0.0, -1, -1
    for row in range(n):
        if P[row] == 0 or row in used:
            continue
        for col in range(row + 1, n):
            if P[col] == 0 or P[row] == P[col]:
                continue
            cost = D[row] + D[col] - 2 * W[row][col]
            if cost > g:
                g, a, b = cost, row, col
    return a, b, g


def _kernighan_lin(W, P, num_partitions, cluster_pairs, gen):
    """Split every cluster of more than 2 devices in two; record the pairs.

    Returns ``(stop, num_partitions)``: ``stop`` when no cluster was split.
    """
    n = len(P)
    histogram = [0] * num_partitions
    for color in P:
        histogram[color] += 1
    P_temp = [0] * n
    stop = True
    for color, size in enumerate(histogram):
        if size <= 2:
            cluster_pairs.append((color, -size))
            continue
        stop = False
        members = [i for i in range(n) if P[i] == color]
        for i in range(n):
            if P[i] != color:
                P_temp[i] = 0
        gen.shuffle(members)
        for k, v in enumerate(members):
            P_temp[v] = 1 if k < size // 2 else -1
        g_max, g_k, count = 0.0, -1, 0
        while True:
            count += 1
            P_temp2 = list(P_temp)
            D = _gains(W, P_temp)
            av, bv, gv = [], [], []
            used = set()
            for _ in range(size // 2):
                a, b, g = _best_move(W, P_temp, D, used)
                if not g > 0:
                    g_max = 0.0
                    break
                av.append(a)
                bv.append(b)
                gv.append(g)
                P_temp[a] *= -1
                P_temp[b] *= -1
                used.update((a, b))
                D = _gains(W, P_temp)
                D[a] = D[b] = 0.0
            for k in range(len(gv)):
                if k:
                    gv[k] += gv[k - 1]
                if gv[k] > g_max:
                    g_max, g_k = gv[k], k + 1
            if g_max > 0:
                for i in range(g_k):
                    a, b = av[i], bv[i]
                    P_temp2[a], P_temp2[b] = P_temp2[b], P_temp2[a]
                P_temp = list(P_temp2)
            else:
                P_temp = P_temp2
            if not (g_max > 0 and count <= n):
                break
        for i in range(n):
            if P_temp[i] == -1:
                P[i] = num_partitions
        cluster_pairs.append((color, num_partitions))
        num_partitions += 1
    return stop, num_partitions


def _root_of(P, color, roots):
    for r in sorted(roots):
        if P[r] == color:
            return r
    return -1


def _other_member(P, color, parent):
    for i, c in enumerate(P):
        if c == color and i != parent:
            return i
    return -1


def _best_edges(W, P, parent, dest_cluster):
    """The heaviest edges from ``parent`` into ``dest_cluster``: ``[-1]`` when
    none weighs more than 0."""
    best, g = [-1], 0.0
    for col in range(len(P)):
        if col == parent or P[col] != dest_cluster:
            continue
        cost = W[parent][col]
        if cost > g:
            best = []
        if cost >= g:
            best.append(col)
            g = cost
    return best


def _kl_level(W, P, cluster_pairs, roots, topo, scan, gen) -> Tuple[bool, set]:
    """Append one tree level joining each pair of clusters; False on failure."""
    new_roots: set = set()
    new_topo = {}
    for i, (first, second) in enumerate(cluster_pairs):
        if i == 0:
            scan.append(len(topo))
        if second in (-2, -1):
            parent = _root_of(P, first, roots)
            if parent == -1:
                return False, roots
            child = _other_member(P, first, parent) if second == -2 else parent
        else:
            color = first
            parent = _root_of(P, color, roots)
            if parent == -1:
                color = second
                parent = _root_of(P, color, roots)
            dest = second if color == first else first
            candidates = _best_edges(W, P, parent, dest)
            child = -1
            if candidates[0] != -1:
                gen.shuffle(candidates)
                child = candidates[0]
            new_roots.add(parent)
            if child == -1:
                return False, new_roots
            new_roots.add(child)
        new_topo[parent] = child
    start, end = scan[-2], scan[-1]
    for i in range(start, end):
        parent = topo[i]
        child = parent if i != start and parent == topo[i - 1] else new_topo[parent]
        topo.extend((parent, child))
    cluster_pairs.clear()
    return True, new_roots


# ----------------------------------------------------------------------------
# backtracking


def _is_valid(W, state, n, placed, depth) -> bool:
    """MXNet's IsValid for ``state[:placed]``, knowing ``state[:placed-1]`` was
    valid: only the edges ending at the new position are checked again."""
    pos = placed - 1
    for i in range(depth):
        stride = 1 << i
        if pos % (2 * stride) == stride:
            a, b = state[pos - stride], state[pos]
            if a != b and W[a][b] == 0:
                return False
    if state[pos] >= n:
        return False
    size = len(state)
    found = len(set(state[:placed]))
    if placed < n and not _row_ok(found, placed, (1 << depth) - n):
        return False
    # Not in MXNet's IsValid, and no valid tree is lost by it: the devices not
    # yet found must fit in the positions left (else the search wanders for
    # minutes through states that can never be completed).
    return found + (size - placed) >= n


def _row_ok(found: int, placed: int, modifier: int) -> bool:
    """While fewer positions than devices are placed: at most one device per
    position, and no more repeats than the leaves beyond ``n`` allow."""
    return placed - modifier <= found <= placed


def _postprocess(result, n, depth) -> None:
    """Turn repeated sends of one device to itself into no-sends (MXNet's Postprocess)."""
    size = len(result)
    for level in range(depth - 1, -1, -1):
        stride = 1 << level
        above = [0] * n
        for i in range(0, size, 2 * stride):
            above[result[i]] += 1
        hist = [0] * n
        for i in range(0, size, stride):
            hist[result[i]] += 1
        i = size - stride
        while i - stride >= 0:
            frm, dest = result[i], result[i - stride]
            if (hist[frm] > 1 or above[frm] >= 1) and frm != dest:
                result[i] = dest
                hist[frm] -= 1
            i -= 2 * stride


def tree_weight(W, result, n, depth, penalty: bool) -> float:
    """Sum of the tree's edge weights; with ``penalty``, minus 100 per link
    used twice and 10 per device reused on a level above the leaves."""
    weight = 0.0
    links_used = set()
    for i in range(depth):
        stride = 1 << i
        nodes_used = [False] * n
        for j in range(0, len(result) - stride, 2 * stride):
            a, b = result[j], result[j + stride]
            if a != b:
                weight += W[a][b]
                if penalty and (a, b) in links_used:
                    weight -= 100
                links_used.add((a, b))
                links_used.add((b, a))
            nodes_used[a] = True
            if i > 0 and nodes_used[b] and penalty:
                weight -= 10
            nodes_used[b] = True
    return weight


def _form_topology(result, depth) -> Tree | None:
    if -1 in result:
        return None
    topo: List[int] = []
    scan = [0]
    for i in range(depth, 0, -1):
        topo.extend(result[0::1 << i])
        scan.append(len(topo))
    topo.extend(result)
    scan.append(len(topo))
    return topo, scan


def _valid_leaves(W, n, root, depth) -> np.ndarray:
    """Every leaf assignment :func:`_backtrack` visits, in its order (one row
    each): the rows of ``root`` then ``0..n-1`` at each position whose every
    prefix passes :func:`_is_valid`, built a position at a time for all at once."""
    size = 1 << depth
    w = np.asarray(W, dtype=np.float64)
    states = np.full((1, 1), root, dtype=np.intp)
    seen = np.zeros((1, n), dtype=bool)
    seen[0, root] = True
    for pos in range(1, size):
        m = len(states)
        choice = np.tile(np.arange(n), m)   # each prefix, then each device: DFS order
        states = np.concatenate([np.repeat(states, n, axis=0), choice[:, None]], axis=1)
        seen = np.repeat(seen, n, axis=0)
        rows = np.arange(len(states))
        found = seen.sum(axis=1) + ~seen[rows, choice]
        seen[rows, choice] = True
        ok = found + (size - pos - 1) >= n
        for i in range(depth):
            stride = 1 << i
            if pos % (2 * stride) == stride:
                a = states[:, pos - stride]
                ok &= (a == choice) | (w[a, choice] != 0)
        if pos + 1 < n:
            ok &= (pos + 1 - (size - n) <= found) & (found <= pos + 1)
        states, seen = states[ok], seen[ok]
    return states


def _best_leaf(W, n, depth, leaves: np.ndarray) -> List[int]:
    """The first of ``leaves`` of the greatest :func:`tree_weight` (penalties
    on) after :func:`_postprocess`: both computed for every leaf at once, each
    sum in the same order as theirs (so the same floats)."""
    size = 1 << depth
    if not len(leaves):
        return [-1] * size
    w = np.asarray(W, dtype=np.float64)
    r = leaves.copy()
    rows = np.arange(len(r))
    for level in range(depth - 1, -1, -1):   # _postprocess
        stride = 1 << level
        above = np.zeros((len(r), n), dtype=np.intp)
        hist = np.zeros((len(r), n), dtype=np.intp)
        for i in range(0, size, 2 * stride):
            above[rows, r[:, i]] += 1
        for i in range(0, size, stride):
            hist[rows, r[:, i]] += 1
        for i in range(size - stride, stride - 1, -2 * stride):
            frm, dest = r[:, i].copy(), r[:, i - stride]
            move = ((hist[rows, frm] > 1) | (above[rows, frm] >= 1)) & (frm != dest)
            r[move, i] = dest[move]
            hist[rows[move], frm[move]] -= 1
    weight = np.zeros(len(r))   # tree_weight(..., penalty=True)
    links = np.zeros((len(r), n, n), dtype=bool)
    for i in range(depth):
        stride = 1 << i
        nodes = np.zeros((len(r), n), dtype=bool)
        for j in range(0, size - stride, 2 * stride):
            a, b = r[:, j], r[:, j + stride]
            sends = a != b
            weight[sends] += w[a, b][sends]
            weight[sends & links[rows, a, b]] -= 100
            links[rows[sends], a[sends], b[sends]] = True
            links[rows[sends], b[sends], a[sends]] = True
            nodes[rows, a] = True
            if i > 0:
                weight[nodes[rows, b]] -= 10
            nodes[rows, b] = True
    return r[int(np.argmax(weight))].tolist()


def _backtrack(W, n, root, optimal: bool) -> List[int]:
    """MXNet's IterativeBacktrack: the best (or first) valid leaf assignment.

    The best (``optimal``, up to 8 devices) weighs every valid assignment at
    once with numpy (:func:`_valid_leaves`, :func:`_best_leaf`): the same
    tree as the search below would find, a hundred times sooner."""
    if optimal:
        depth = compute_depth(n)
        return _best_leaf(W, n, depth, _valid_leaves(W, n, root, depth))
    return _search(W, n, root, optimal=False)


def _search(W, n, root, optimal: bool) -> List[int]:
    """The search itself, one assignment at a time: the first valid one, or
    (``optimal``) the best, as :func:`_backtrack`'s numpy form finds it."""
    depth = compute_depth(n)
    state = [-1] * (1 << depth)
    state[0] = root
    best, best_weight = [-1] * len(state), float("-inf")
    stack = [0]
    row, pos = 1, 0
    while True:
        while stack and pos >= n:
            pos = stack.pop() + 1
            state[len(stack) + 1] = -1
            row -= 1
        if not stack:
            break
        state[row] = pos
        if _is_valid(W, state, n, row + 1, depth):
            stack.append(pos)
            pos = 0
            row += 1
        else:
            pos += 1
            state[row] = -1
        if row == len(state):
            result = list(state)
            _postprocess(result, n, depth)
            weight = tree_weight(W, result, n, depth, True)
            if weight > best_weight:
                best_weight, best = weight, result
            if not optimal:
                break
            pos = stack.pop() + 1
            state[len(stack)] = -1
            row -= 1
    return best


# ----------------------------------------------------------------------------
# trees from every root


def _tree_from_root(W, n, root, backtrack: bool) -> Tree:
    gen = random.Random(1)
    P = [0] * n
    roots = {root}
    topo: List[int] = [root]
    scan: List[int] = [0]
    ok, stop, level = False, False, 0
    P_t, parts_t, roots_t, topo_t, scan_t = P, 1, roots, topo, scan
    reset = True
    while not backtrack and (not stop or reset):
        if reset:
            pairs: list = []
            P_t, parts_t, roots_t = list(P), 1, set(roots)
            topo_t, scan_t = list(topo), list(scan)
        stop, parts_t = _kernighan_lin(W, P_t, parts_t, pairs, gen)
        ok, roots_t = _kl_level(W, P_t, pairs, roots_t, topo_t, scan_t, gen)
        reset = not ok
        if reset:
            level += 1
        if level > 10:
            break
    if not backtrack and not reset:
        scan_t.append(len(topo_t))
        return topo_t, scan_t
    depth = compute_depth(n)
    tree = _form_topology(_backtrack(W, n, root, optimal=depth <= 3), depth)
    if tree is None:
        raise MXNetError(f"no balanced binary tree spans the {n} devices from device {root}: "
                         "some device has no usable link (weights are the link topology)")
    return tree


def tree_edges(tree: Tree) -> List[Tuple[int, int, int]]:
    """``(level, parent, child)`` for every edge that sends (child != parent)."""
    topo, scan = tree
    edges = []
    for level in range(1, len(scan) - 1):
        row = topo[scan[level]:scan[level + 1]]
        for k in range(0, len(row), 2):
            if row[k] != row[k + 1]:
                edges.append((level, row[k], row[k + 1]))
    return edges


def compute_trees(W: Sequence[Sequence[float]], alpha: float = 0.7,
                  backtrack: bool = False) -> List[Tree]:
    """One tree per root ``0..n-1`` over the link weights ``W`` (see the module doc).

    ``alpha`` multiplies the weight of each link a tree uses before the next
    root's tree is built (MXNet's link usage penalty).
    """
    n = len(W)
    w = [list(map(float, row)) for row in W]
    trees = []
    for root in range(n):
        topo, scan = _tree_from_root(w, n, root, backtrack)
        trees.append((topo, scan))
        for i in range(1, len(topo) - 1, 2):
            a, b = topo[i], topo[i + 1]
            if a != b:
                w[a][b] *= alpha
                w[b][a] *= alpha
    return trees
