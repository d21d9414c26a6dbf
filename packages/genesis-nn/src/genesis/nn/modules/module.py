"""torch.nn.modules.module's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "register_module_forward_pre_hook",
        "register_module_forward_hook",
        "register_module_full_backward_pre_hook",
        "register_module_backward_hook",
        "register_module_full_backward_hook",
        "register_module_buffer_registration_hook",
        "register_module_module_registration_hook",
        "register_module_parameter_registration_hook",
        "Module",
        "_IncompatibleKeys",
    ],
    sources=("genesis.nn.module",),
)
