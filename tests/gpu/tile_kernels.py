"""Tile-level kernels built with the Python builder (``bulkred_dialect.builder``) that
use thread/CTA/cluster indices, tile loops and views; shared by the GPU tests
(test_kernel_indices_gpu.py) and the CPU tests (tests/test_kernel_indices.py: the
interpreter and assembling)."""

from __future__ import annotations

from bulkred_dialect import builder as T

GRID = 4
THREADS = 128
PER_THREAD = 8
TILE = 4
CLUSTER_N = 64


def thread_sums(grid: int = GRID, threads: int = THREADS) -> T.Kernel:
    """Thread t of CTA b sums its own ``PER_THREAD`` elements of ``A`` (a view at
    ``(b * ntid + t) * PER_THREAD``), in tiles of ``TILE`` (a loop over tiles, the first
    without ``accum``), and writes the partial to ``P[b * ntid + t]``."""
    with T.kernel("thread_sums", grid=[grid], block=[threads]) as k:
        A = k.param("A", [grid * threads * PER_THREAD], "float32")
        P = k.param("P", [grid * threads], "float32")
        gid = T.add(T.mul(T.block_id(), T.block_dim()), T.thread_id())
        base = T.mul(gid, PER_THREAD)
        acc = T.alloc_buffer([1], "float32", name="acc")
        loc = T.alloc_buffer([TILE], "float32", name="loc")
        T.copy(T.view(A, [base], [TILE]), loc)
        T.sum(acc, loc)
        with T.serial(TILE, PER_THREAD, step=TILE) as j:
            T.copy(T.view(A, [T.add(base, j)], [TILE]), loc)
            T.sum(acc, loc, accum=True)
        T.copy(acc, T.view(P, [gid], [1]))
    return k


def _strided_copy(src, dst, n: int, dst_offset=0) -> None:
    """Every thread of the CTA copies elements tid, tid + ntid, ... of ``src`` to
    ``dst[dst_offset + i]`` (views of one element)."""
    with T.serial(T.thread_id(), n, step=T.block_dim()) as i:
        T.copy(T.view(src, [i], [1]), T.view(dst, [T.add(dst_offset, i)], [1]))


def cluster_peer(op: str, n: int = CLUSTER_N, threads: int = 64) -> T.Kernel:
    """A 2-CTA cluster. CTA r bulk-copies row r of ``inp`` (a view) into a shared tile
    and copies it into its ``acc`` (cluster_shared) with plain stores; then ``op``
    (``"reduce"``: bulk_reduce sum; ``"copy"``: bulk_copy) sends CTA 1's tile into CTA
    0's ``acc`` by rank; each CTA writes its ``acc`` to row r of ``out``. So
    ``out[0] = inp[0] + inp[1]`` (reduce) or ``inp[1]`` (copy), and ``out[1] = inp[1]``."""
    with T.kernel(f"cluster_{op}", grid=[2], block=[threads], cluster=[2]) as k:
        inp = k.param("inp", [2 * n], "int32")
        out = k.param("out", [2 * n], "int32")
        rank = T.cluster_rank()
        row = T.mul(rank, n)
        tile = T.alloc_shared([n], "int32", name="tile")
        acc = T.alloc_buffer([n], "int32", scope="cluster_shared", name="acc")
        mbar = T.alloc_mbarrier(name="mbar")
        T.bulk_copy(T.view(inp, [row], [n]), tile, mbar=mbar)
        _strided_copy(tile, acc, n)
        if op == "reduce":
            T.bulk_reduce("sum", tile, acc, mbar=mbar, rank=0)
        else:
            T.bulk_copy(tile, acc, mbar=mbar, rank=0)
        _strided_copy(acc, out, n, row)
    return k


def cluster_gather(n: int = 16, threads: int = 32) -> T.Kernel:
    """A 2-CTA cluster: each CTA r loads row r of ``inp`` into a shared tile; CTA 0
    sends its tile into slot 0 of CTA 1's ``all`` (the sender's view at ``rank * n``:
    the copy lands at the same offset in CTA 1), CTA 1 having filled its own slot 1 from
    its tile; each CTA r writes its ``all`` to row r of ``out``. So
    ``out[1] = [inp[0], inp[1]]`` (row 0 holds CTA 0's slot 0 and an unwritten slot 1)."""
    with T.kernel("cluster_gather", grid=[2], block=[threads], cluster=[2]) as k:
        inp = k.param("inp", [2 * n], "float32")
        out = k.param("out", [4 * n], "float32")
        rank = T.cluster_rank()
        tile = T.alloc_shared([n], "float32", name="tile")
        everything = T.alloc_buffer([2 * n], "float32", scope="cluster_shared", name="all")
        mbar = T.alloc_mbarrier(name="mbar")
        T.bulk_copy(T.view(inp, [T.mul(rank, n)], [n]), tile, mbar=mbar)
        slot = T.view(everything, [T.mul(rank, n)], [n])
        _strided_copy(tile, slot, n)
        T.bulk_copy(tile, slot, mbar=mbar, rank=1)
        _strided_copy(everything, T.view(out, [T.mul(rank, 2 * n)], [2 * n]), 2 * n)
    return k


def cluster_multicast(mask: int, cluster: int = 4, n: int = 64, threads: int = 32) -> T.Kernel:
    """A cluster of ``cluster`` CTAs: CTA r fills its ``buf`` (cluster_shared) with row r
    of ``init`` (plain stores); one multicast copy (issued by CTA 0) writes ``src`` into
    the ``buf`` of every CTA whose bit is set in ``mask``; each CTA writes its ``buf`` to
    row r of ``out``. So ``out[r] = src`` where bit r is set, else ``init[r]``."""
    with T.kernel(f"cluster_multicast_{mask:x}", grid=[cluster], block=[threads], cluster=[cluster]) as k:
        src = k.param("src", [n], "float32")
        init = k.param("init", [cluster * n], "float32")
        out = k.param("out", [cluster * n], "float32")
        row = T.mul(T.cluster_rank(), n)
        buf = T.alloc_buffer([n], "float32", scope="cluster_shared", name="buf")
        mbar = T.alloc_mbarrier(name="mbar")
        _strided_copy(T.view(init, [row], [n]), buf, n)
        T.bulk_copy(src, buf, mbar=mbar, multicast=mask)
        _strided_copy(buf, out, n, row)
    return k
