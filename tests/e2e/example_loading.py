"""Load a script as a module, optionally with its imports swapped between torch and genesis."""

from __future__ import annotations

import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENESIS_TO_TORCH = {
    "import genesis\n": "import torch as genesis\n",
    "import genesis.nn as nn\n": "import torch.nn as nn\n",
    "import genesis.nn.functional as F\n": "import torch.nn.functional as F\n",
}
TORCH_TO_GENESIS = {
    "import torch\n": "import genesis as torch\n",
    "import torch.nn as nn\n": "import genesis.nn as nn\n",
    "import torch.nn.functional as F\n": "import genesis.nn.functional as F\n",
    "from torch.utils.data import": "from genesis.utils.data import",
}


def load_script(path: Path, name: str, swap: dict[str, str] | None = None) -> types.ModuleType:
    """Execute ``path`` as module ``name``, each key of ``swap`` replaced (it must occur) by its value."""
    source = path.read_text()
    for old, new in (swap or {}).items():
        assert old in source, f"{path.name} has no {old.strip()!r} to replace"
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module
