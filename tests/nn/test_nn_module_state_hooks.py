"""Module state-dict hooks against torch: the same hooks on the same layers give the same effects."""

from __future__ import annotations

import pytest
import torch

import genesis


def _pair():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    g = genesis.nn.Sequential(genesis.nn.Linear(3, 2), genesis.nn.LayerNorm(2))
    g.load_state_dict(t.state_dict())
    return t, g


@pytest.mark.parametrize("lib", ["torch", "genesis"])
def test_state_dict_pre_and_post_hooks_match_torch(lib):
    lib_model = _pair()[lib == "genesis"]
    calls = []
    layer = lib_model[0]
    pre = layer.register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))

    def post(module, state, prefix, local_metadata):
        calls.append(("post", prefix, sorted(k for k in state if k.startswith(prefix))))
        state[prefix + "extra"] = state[prefix + "weight"] * 0 + 7
        del state[prefix + "bias"]

    post_handle = layer.register_state_dict_post_hook(post)
    sd = lib_model.state_dict(keep_vars=True)
    assert calls == [("pre", "0.", True), ("post", "0.", ["0.bias", "0.weight"])]
    assert list(sd) == ["0.weight", "0.extra", "1.weight", "1.bias"]
    assert float(sd["0.extra"].sum().item()) == 7 * 6
    pre.remove()
    post_handle.remove()
    assert list(lib_model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


@pytest.mark.parametrize("lib", ["torch", "genesis"])
def test_state_dict_post_hook_must_return_none(lib):
    model = _pair()[lib == "genesis"]
    model.register_state_dict_post_hook(lambda m, s, p, meta: {})
    with pytest.raises(RuntimeError, match="must return None"):
        model.state_dict()


def test_load_pre_hook_renames_old_keys_like_torch():
    t, g = _pair()
    old = {k.replace("weight", "kernel"): v.clone() * 2 for k, v in t.state_dict().items()}

    def rename(module, state, prefix, local_metadata, strict, missing, unexpected, errors):
        for key in [k for k in state if k.startswith(prefix) and k.endswith("kernel")]:
            state[key[: -len("kernel")] + "weight"] = state.pop(key)

    for model in (t, g):
        for layer in model:
            layer.register_load_state_dict_pre_hook(rename)
        result = model.load_state_dict(old)
        assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
        assert "0.kernel" in old  # the caller's dict is left alone
    for (name, a), (_, b) in zip(t.state_dict().items(), g.state_dict().items()):
        assert torch.equal(a, torch.from_numpy(b.numpy())), name


def test_load_post_hook_can_forgive_missing_keys_like_torch():
    t, g = _pair()
    partial = {k: v.clone() + 1 for k, v in t.state_dict().items() if not k.startswith("1.")}
    for model in (t, g):
        seen = []

        def forgive(module, keys, seen=seen):
            seen.append((list(keys.missing_keys), list(keys.unexpected_keys)))
            keys.missing_keys.clear()

        model.register_load_state_dict_post_hook(forgive)
        model.load_state_dict(partial)  # strict, but the hook cleared the missing keys
        assert seen == [(["1.weight", "1.bias"], [])]
    for (name, a), (_, b) in zip(t.state_dict().items(), g.state_dict().items()):
        assert torch.equal(a, torch.from_numpy(b.numpy())), name


def test_load_post_hook_sees_strict_failure_after_copy_like_torch():
    t, g = _pair()
    partial = {k: v.clone() + 1 for k, v in t.state_dict().items() if not k.startswith("1.")}
    for model in (t, g):
        model.register_load_state_dict_post_hook(lambda m, keys: None)
        with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"1.weight\", \"1.bias\""):
            model.load_state_dict(partial)
    # torch copies before judging when post hooks exist; so do we
    assert torch.equal(torch.from_numpy(g[0].weight.detach().numpy()), t[0].weight.detach())
