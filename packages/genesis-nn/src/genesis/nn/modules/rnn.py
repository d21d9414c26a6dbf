"""torch.nn.modules.rnn's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "RNNBase",
        "RNN",
        "LSTM",
        "GRU",
        "RNNCellBase",
        "RNNCell",
        "LSTMCell",
        "GRUCell",
    ],
    sources=("genesis.nn.rnn",),
)
