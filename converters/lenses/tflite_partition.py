"""How LiteRT groups the nodes a delegate accepts into delegated partitions.

`preview_partitions` mirrors PartitionGraphIntoIndependentNodeSubsets (tflite/graph_info.cc,
greedy, no control edges), which Subgraph::PreviewDelegatePartitioning runs: node subsets are
built one after another, each taking every node of one kind (accepted or not) whose inputs are
ready, pass after pass, so accepted nodes of independent branches share a partition.
`limit_partitions` mirrors StatefulNnApiDelegate::LimitDelegatedPartitions."""
from __future__ import annotations


def preview_partitions(graph, accepted: set) -> list:
    """The node lists of the subsets made of accepted nodes, in the order LiteRT forms them."""
    produced = {t for n in graph.nodes for t in n.outputs if t >= 0}
    ready: set = set()              # tensors whose producer has been placed
    placed = [False] * len(graph.nodes)
    subsets = []
    while True:
        kind, nodes = None, []
        progress = True
        while progress:              # greedily: keep sweeping while a sweep adds a node
            progress = False
            for node in graph.nodes:
                k = node.index
                if placed[k] or any(t >= 0 and t in produced and t not in ready for t in node.inputs):
                    continue
                this = k in accepted
                if kind is None:
                    kind = this
                if this != kind:
                    continue
                placed[k] = True
                nodes.append(k)
                ready.update(t for t in node.outputs if t >= 0)
                progress = True
        if not nodes:
            break
        if kind:
            subsets.append(nodes)
    return subsets


def limit_partitions(partitions: list, max_partitions: int) -> list:
    """The partitions kept: all when max_partitions <= 0 or there are no more than it; else the largest
    (LiteRT sorts by size with std::sort, whose order among equal sizes is unspecified; here the earlier
    partition wins a tie)."""
    if max_partitions <= 0 or len(partitions) <= max_partitions:
        return list(partitions)
    keep = sorted(range(len(partitions)), key=lambda i: -len(partitions[i]))[:max_partitions]
    return [partitions[i] for i in sorted(keep)]
