"""genesis.distributed.checkpoint: sharded checkpoints (torch.distributed.checkpoint's ``save`` / ``load``)
and the state dicts of fully_shard-ed models (``state_dict``: get_model_state_dict, StateDictOptions, ...).

    from genesis.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    import genesis.distributed.checkpoint as dcp
    model_sd, optim_sd = get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id="ckpt/step100")   # every rank
    ...                                                                               # any world size
    model_sd, optim_sd = get_state_dict(model, opt)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id="ckpt/step100")
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])

Files: safetensors (one per rank) and a JSON index; no pickle.
"""

from . import state_dict
from .sharded_io import load, save

__all__ = ["load", "save", "state_dict"]
