"""Module: the base of every layer, with torch.nn.Module's API.

Parameters, buffers and submodules live in three ordered tables and are found by
attribute assignment; traversal, moves and casts, state dicts and hooks all walk
those tables, in the order torch walks them (so state-dict keys and parameter
lists line up with torch's, and torch state dicts load).
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from genesis_autograd import Tensor, as_dtype, from_dlpack, no_grad

if TYPE_CHECKING:
    from genesis_autograd import Device, DType

from .hooks import BackwardHook, RemovableHandle, add_hook
from .parameter import Buffer, Parameter


def _typename(obj) -> str:
    """torch.typename: the qualified class name ("int", "genesis_autograd.tensor.Tensor")."""
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _add_indent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns (torch's named tuple)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _quoted(keys: list[str]) -> list[str]:
    return [f'"{k}"' for k in keys]


def _as_state_tensor(value) -> Tensor | None:
    """A state-dict value as a genesis Tensor: genesis tensors as they are, DLPack producers
    (torch or numpy arrays) shared zero-copy; None for anything else."""
    if isinstance(value, Tensor):
        return value
    if hasattr(value, "__dlpack__"):
        return from_dlpack(value)
    return None


class Module:
    """Base class of all layers: subclass it, assign parameters and submodules in ``__init__``,
    and define ``forward``.

    Parameters (``nn.Parameter``), buffers (``register_buffer``) and submodules assigned as attributes
    are registered, so that ``parameters()``, ``to()``, ``state_dict()`` and the rest find them.
    Calling the module runs ``forward`` with the registered hooks around it.
    """

    training: bool
    # The tables, set in __init__ past __setattr__; a name registered as None holds None.
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Module | None]

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", {})
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", {})
        set_(self, "_forward_hooks_always_called", {})
        set_(self, "_backward_hooks", OrderedDict())
        set_(self, "_backward_pre_hooks", OrderedDict())
        set_(self, "_state_dict_pre_hooks", OrderedDict())
        set_(self, "_state_dict_hooks", OrderedDict())
        set_(self, "_load_state_dict_pre_hooks", OrderedDict())
        set_(self, "_load_state_dict_post_hooks", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module: override it in every subclass.

        Call the module (``module(x)``), not ``forward``: the call runs the registered hooks around it.
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (running statistics...); non-persistent buffers
        stay out of the state dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (a Parameter, or None for an absent one such as a bias)
        under ``name``; same as assigning it as an attribute.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method."
            )
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (or None) as a child under ``name``; same as assigning it as an
        attribute.
        """
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ("" is this module)."""
        mod = self
        for item in target.split(".") if target else ():
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path (``"layer1.0.weight"``); AttributeError if there is none."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path (``"bn.running_mean"``); AttributeError if there is none."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # ------------------------------------------------------------ attribute semantics
    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: parameters, buffers and submodules live in the tables.
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            found = d.get(table)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self.__dict__.pop(name, None)
            self._buffers.pop(name, None)
            self._non_persistent_buffers_set.discard(name)
            self._modules.pop(name, None)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                self.__dict__.pop(name, None)
                self._parameters.pop(name, None)
                self._buffers.pop(name, None)
                self._non_persistent_buffers_set.discard(name)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)"
                    )
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer):  # torch.nn.Buffer: registered, with its persistent flag
                    self.register_buffer(name, value, value.persistent)
                elif buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.Tensor or None expected)"
                        )
                    buffers[name] = value
                else:
                    # A plain attribute, a plain (unregistered) Tensor included: not state, as in torch.
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ------------------------------------------------------------ traversal
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first; a module reached twice is listed once
        unless ``remove_duplicate`` is False."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        # Depth first over a stack of child iterators, in the order the recursive form gives: recursion
        # would pass every module up through one generator frame per level (parameters() walks this on
        # every clip_grad_norm_ call). A child that overrides named_modules still gets its own call.
        stack = [(prefix, iter(self._modules.items()))]
        while stack:
            base, children = stack[-1]
            for name, module in children:
                if module is None:
                    continue
                path = f"{base}.{name}" if base else name
                if type(module).named_modules is not Module.named_modules:
                    yield from module.named_modules(memo, path, remove_duplicate)
                    continue
                if id(module) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(module))
                yield path, module
                stack.append((path, iter(module._modules.items())))
                break
            else:
                stack.pop()

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, depth first, each once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for each direct child, each module once."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct children, each once."""
        for _, module in self.named_children():
            yield module

    def _named_members(
        self,
        table: str,
        prefix: str,
        recurse: bool,
        remove_duplicate: bool,
        skip: Callable[[Module, str], bool] | None = None,
    ):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen or (skip is not None and skip(module, name)):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(name, parameter) pairs; a parameter shared by several modules is listed once, under its first name."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module and (with ``recurse``) of its descendants, each once:
        what an optimizer is given.
        """
        if type(self).named_parameters is not Module.named_parameters:  # an override decides what is listed
            for _, p in self.named_parameters(recurse=recurse):
                yield p
            return
        # named_parameters' walk without the names (parameters() runs on every clip_grad_norm_ call): one
        # generator frame per parameter instead of three, and no name strings
        seen = set()
        for _, module in self.named_modules() if recurse else [("", self)]:
            for value in module._parameters.values():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield value

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """(name, buffer) pairs of this module and (with ``recurse``) its descendants, each once."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module and (with ``recurse``) of its descendants, each once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """fn(module) for every descendant, children first, then this module (as for initialisation)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=True``) or evaluation mode on this module and its descendants; returns
        self. Dropout and batch norm behave differently in each.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode on this module and its descendants (``train(False)``); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter (False freezes the module); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to None (``set_to_none=True``, the default) or
        to zeros.
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_()
                p.grad.zero_()

    # ------------------------------------------------------------ moves and casts
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace each parameter's (and gradient's) data by fn's result, keeping the Parameter objects
        (optimizers holding them keep working), and each buffer by fn's result."""
        for module in self.children():
            module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p).data
                if p.grad is not None:
                    p.grad.data = fn(p.grad).data
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """to(device), to(dtype), to(device, dtype), to(tensor), each with non_blocking: floating-point
        parameters and buffers take the dtype, every tensor the device."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        non_blocking = kwargs.pop("non_blocking", False)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, bool):
                non_blocking = arg
            else:
                try:
                    dtype = as_dtype(arg)
                except (TypeError, ValueError, KeyError):
                    device = arg
        if dtype is not None:
            dtype = as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(
                    f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}"
                )
        return self._apply(
            lambda t: t.to(device=device, dtype=dtype if t.is_floating_point() else None, non_blocking=non_blocking)
        )

    def cuda(self, device: Device | str | int | None = None) -> Module:
        """Move every parameter and buffer to a CUDA device (the current one, or ``device``), in place; returns self."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self) -> Module:
        """Move every parameter and buffer to host memory, in place; returns self."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type: DType | str) -> Module:
        """Cast every parameter and buffer to ``dst_type``, in place; returns self."""
        return self._apply(lambda t: t.to(dtype=dst_type))

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32, in place; returns self."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64, in place; returns self."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16, in place; returns self."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        """Cast floating-point parameters and buffers to bfloat16, in place; returns self."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ------------------------------------------------------------ state dicts
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
        """Parameters and persistent buffers by dotted name, each module's own before its children's
        (torch's order); a tensor shared by two modules appears under both names, as in torch."""
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            if hook(self, destination, prefix, {"version": 1}) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _local_state(self) -> dict[str, Tensor]:
        """This module's own parameters and persistent buffers (what its state-dict keys name)."""
        state: dict[str, Tensor] = {k: v for k, v in self._parameters.items() if v is not None}
        state.update(
            (k, v) for k, v in self._buffers.items() if v is not None and k not in self._non_persistent_buffers_set
        )
        return state

    def _plan_load(
        self,
        state_dict: dict,
        prefix: str,
        plan: list,
        missing: list,
        unexpected: list,
        errors: list,
        strict: bool = True,
    ) -> None:
        """Check this module's part of ``state_dict`` and list the (module, name, target, value) writes.

        ``state_dict`` is this call's own dict (a copy): load pre-hooks may rewrite it.
        """
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, {"version": 1}, strict, missing, unexpected, errors)
        local = self._local_state()
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = _as_state_tensor(state_dict[key])
            if value is None:
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                    f"object from checkpoint but received {type(state_dict[key])}"
                )
                continue
            if target.ndim == 0 and tuple(value.shape) == (1,):
                value = value.reshape(())  # torch's leniency for old one-element checkpoints
            if tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {list(value.shape)} from "
                    f"checkpoint, the shape in current model is {list(target.shape)}."
                )
                continue
            plan.append((self, name, target, value))
        for key in state_dict:
            if key.startswith(prefix):
                head = key[len(prefix) :].split(".", 1)[0]
                if head not in self._modules and head not in local:
                    unexpected.append(key)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child._plan_load(
                    {k: v for k, v in state_dict.items() if k.startswith(child_prefix)},
                    child_prefix,
                    plan,
                    missing,
                    unexpected,
                    errors,
                    strict,
                )

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Copy the tensors of ``state_dict`` (from state_dict(), or torch's) into the parameters
        and buffers of the same names.

        Args:
            state_dict: a mapping from dotted names to tensors (genesis tensors, or any DLPack
                producer such as torch tensors).
            strict: refuse missing and unexpected keys.
            assign: put the given tensors in place instead of copying into the existing ones.

        Returns:
            The named tuple (missing_keys, unexpected_keys). Raises RuntimeError, with every problem
            listed, on a shape mismatch or (when ``strict``) a missing or unexpected key; then nothing
            is changed. Load post-hooks (``register_load_state_dict_post_hook``) run after the copy
            and may clear keys from the lists before ``strict`` judges them, as in torch; the copy
            then happens before that judgement.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        plan: list = []
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        self._plan_load(OrderedDict(state_dict), "", plan, missing, unexpected, errors, strict)
        post_hooks = [(m, h) for m in self.modules() for h in m._load_state_dict_post_hooks.values()]
        if not post_hooks:
            self._raise_load_errors(strict, missing, unexpected, errors)
        elif errors:  # shape or type mismatches: nothing is copied, hooks or not
            self._raise_load_errors(False, missing, unexpected, errors)
        self._apply_load_plan(plan, assign)
        result = _IncompatibleKeys(missing, unexpected)
        for module, hook in post_hooks:
            if hook(module, result) is not None:
                raise RuntimeError("load_state_dict post hook must return None")
        self._raise_load_errors(strict, missing, unexpected, errors)
        return result

    def _raise_load_errors(self, strict: bool, missing: list, unexpected: list, errors: list) -> None:
        errors = list(errors)
        if strict:
            if unexpected:
                errors.insert(0, f"Unexpected key(s) in state_dict: {', '.join(_quoted(unexpected))}. ")
            if missing:
                errors.insert(0, f"Missing key(s) in state_dict: {', '.join(_quoted(missing))}. ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))

    @staticmethod
    def _apply_load_plan(plan: list, assign: bool) -> None:
        with no_grad():
            for module, name, target, value in plan:
                if not assign:
                    target.copy_(value.to(device=target.device, dtype=target.dtype))
                elif isinstance(target, Parameter):
                    module.__setattr__(
                        name,
                        value if isinstance(value, Parameter) else Parameter(value, requires_grad=target.requires_grad),
                    )
                    module._parameters[name].requires_grad = target.requires_grad
                else:
                    module.__setattr__(name, value)

    # ------------------------------------------------------------ hooks
    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before this module's ``state_dict`` collects anything."""
        return add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata) -> None`` runs after this module (and its
        children) wrote into ``state_dict``; it may edit ``state_dict`` in place."""
        return add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` runs before this module reads its part of ``state_dict`` (which it may rewrite,
        e.g. to rename old keys)."""
        return add_hook(self._load_state_dict_pre_hooks, hook, False)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys) -> None`` runs after ``load_state_dict`` copied the values;
        it may remove entries from ``incompatible_keys.missing_keys`` / ``unexpected_keys`` in place."""
        return add_hook(self._load_state_dict_post_hooks, hook, False)

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """hook(module, args) -> None or new args; with_kwargs: hook(module, args, kwargs) -> None or
        (new args, new kwargs)."""
        handle = add_hook(self._forward_pre_hooks, hook, prepend, self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """hook(module, args, output) -> None or new output; with_kwargs: hook(module, args, kwargs, output)."""
        handle = add_hook(
            self._forward_hooks, hook, prepend, self._forward_hooks_with_kwargs, self._forward_hooks_always_called
        )
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None or new grad_input, once the gradients with
        respect to the module's inputs are known."""
        return add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None or new grad_output, before the module's backward."""
        return add_hook(self._backward_pre_hooks, hook, prepend)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hook = None
        if self._backward_hooks or self._backward_pre_hooks:
            backward_hook = BackwardHook(
                self, list(self._backward_hooks.values()), list(self._backward_pre_hooks.values())
            )
            args = backward_hook.setup_input_hook(args)
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:
                        pass  # torch swallows the hook's error and re-raises forward's
            raise
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                new = hook(self, args, kwargs, result)
            else:
                new = hook(self, args, result)
            if new is not None:
                result = new
        if backward_hook is not None:
            result = backward_hook.setup_output_hook(result)
        return result

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's forward in place with :func:`genesis.compile` (its arguments), as torch's
        Module.compile: the module, its state_dict keys and its hooks stay as they are."""
        from .._compile import compile_module_forward  # genesis._compile imports this module

        object.__setattr__(self, "forward", compile_module_forward(self, *args, **kwargs))

    # ------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text between the parentheses of this module's repr; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _add_indent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"
