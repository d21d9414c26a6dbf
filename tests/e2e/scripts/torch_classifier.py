"""A plain PyTorch training script, as a user writes one (tests/e2e/test_e2e_port.py ports it).

Two-moons-like points, an MLP with LayerNorm and dropout, AdamW, a step scheduler, gradient
clipping, a DataLoader over a TensorDataset, a checkpoint saved and loaded back.
"""

import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_data(n: int, generator: torch.Generator):
    angle = torch.rand(n, generator=generator) * math.pi
    label = torch.randint(0, 2, (n,), generator=generator)
    x = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    x = torch.where(label[:, None] == 1, 1 - x - torch.tensor([0.0, 0.5]), x)
    return x + 0.1 * torch.randn(n, 2, generator=generator), label


class Net(nn.Module):
    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(2, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Dropout(0.1), nn.Linear(hidden, hidden), nn.SiLU()
        )
        self.head = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.head(self.body(x))


def main(epochs: int = 12, device: str = "cpu") -> tuple[float, float, float]:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    x, y = make_data(512, generator)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, generator=generator)
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    first = last = None
    for _ in range(epochs):
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item() * len(xb)
        scheduler.step()
        last = total / len(x)
        first = last if first is None else first
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pt")
        torch.save(model.state_dict(), path)
        restored = Net().to(device)
        restored.load_state_dict(torch.load(path, map_location=device))
    restored.eval()
    with torch.no_grad():
        accuracy = (restored(x.to(device)).argmax(1).cpu() == y).float().mean().item()
    return first, last, accuracy


if __name__ == "__main__":
    print(main())
