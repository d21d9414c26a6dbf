"""genesis.compile's machinery at the autograd floor: capture a function's ops into a graph, rewrite
the graph (pointwise fusion), replay it on new inputs.

errors.py    Unsupported (what fullgraph=True raises), GraphBreak, the user's source line
graph.py     Graph / Op / Ref (plain data), replay(graph, inputs), a readable listing
patches.py   what a capture installs on Tensor while it runs; where a tensor made outside an op came from
capture.py   Capture: records every Function.apply, in-place method and factory of one run, split at host reads
pieces.py    PieceTree: the pieces between host reads, replayed in turn (the value read picks the next)
fusion.py    fuse_pointwise(graph): maximal chains of pointwise ops become one FusedPointwise each
add_norm.py  fuse_add_norm(graph): a residual add and the norm reading it become one add_norm op
casts.py     fold_casts(graph): a widening cast read only by a cross-entropy is dropped (it widens itself)
recompute.py recompute_activations(graph): an activation only a Linear reads is recomputed in its backward

The genesis front end (genesis.compile: guards, the cache, fallback) lives in genesis/_compile.py.
"""

from .add_norm import fuse_add_norm
from .capture import Capture, autocast_key, is_capturing
from .casts import fold_casts
from .errors import GraphBreak, Unsupported, user_site
from .fusion import fuse_pointwise, fused_programs, kernel_sources
from .graph import Graph, Op, Ref, replay
from .pieces import MISS, PieceTree
from .recompute import recompute_activations

__all__ = [
    "Capture",
    "Graph",
    "MISS",
    "GraphBreak",
    "Op",
    "PieceTree",
    "Ref",
    "Unsupported",
    "autocast_key",
    "fold_casts",
    "fuse_add_norm",
    "fuse_pointwise",
    "fused_programs",
    "is_capturing",
    "kernel_sources",
    "recompute_activations",
    "replay",
    "user_site",
]
