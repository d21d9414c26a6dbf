"""Train an MLP on the UCI 8x8 handwritten digits (1,797 images, shipped as digits.npz).

    ./dev demo                      # cuda when a GPU is present, else cpu
    ./dev demo --device cpu --epochs 30

Prints the loss per epoch and the final test accuracy.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
from tqdm import tqdm

import genesis
import genesis.nn as nn
from genesis.utils.data import DataLoader, TensorDataset

DATA = pathlib.Path(__file__).with_name("digits.npz")


def load_digits(seed: int = 0):
    """Pixels scaled to [0, 1], split 80 / 20 into train and test with a fixed permutation."""
    with np.load(DATA) as f:
        images = f["images"].astype(np.float32) / 16.0
        labels = f["labels"].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(0.8 * len(labels))
    train, test = order[:cut], order[cut:]
    return (images[train], labels[train]), (images[test], labels[test])


def train_epoch(model, loader, optimizer, criterion, epoch: int, epochs: int, *, quiet: bool, progress=None) -> float:
    """One pass over ``loader``; returns the mean loss.

    One bar per epoch that ends at 100 % with the epoch's loss. Nothing else is written while a bar is
    open: a line printed under an open bar leaves its state at that moment (``0%| 0/23``) stale on a
    terminal. Off a terminal (``disable=None``) or with ``quiet`` the bar is off and the epoch's loss is
    printed as a plain line instead. ``progress``: a file to draw the bar into, terminal or not (tests).
    """
    model.train()
    width = len(str(epochs))
    bar = tqdm(
        total=len(loader),
        desc=f"epoch {epoch:{width}d}/{epochs}",
        unit="batch",
        leave=True,
        file=progress,
        disable=True if quiet else (False if progress is not None else None),
    )
    shown = not bar.disable  # read now: closing a bar sets disable
    total, batches = 0.0, 0
    with bar:
        for xb, yb in loader:
            loss = criterion(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
            bar.set_postfix(loss=f"{total / batches:.4f}", refresh=False)
            bar.update()
    mean = total / batches
    if not shown:
        print(f"epoch {epoch:2d}  loss {mean:.4f}")
    return mean


def main(argv=None, *, progress=None) -> float:
    """Train and evaluate; ``progress`` is a file the per-epoch bars are drawn into (default: stderr on a terminal)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="cuda" if genesis.cuda.is_available() else "cpu", help="cpu, cuda or cuda:N"
    )
    parser.add_argument("--epochs", type=int, default=30, help="passes over the 1,437 training images")
    parser.add_argument("--batch-size", type=int, default=64, help="images per SGD step")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (momentum 0.9)")
    parser.add_argument("--hidden", type=int, default=128, help="width of the MLP's hidden layers")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the shuffling")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    genesis.manual_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = load_digits(args.seed)
    loader = DataLoader(
        TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True, seed=args.seed, device=args.device
    )
    model = nn.Sequential(
        nn.Linear(64, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, 10),
    ).to(args.device)
    optimizer = genesis.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    print(f"training on {args.device}: {len(x_train)} train / {len(x_test)} test images")

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        train_epoch(model, loader, optimizer, criterion, epoch, args.epochs, quiet=args.quiet, progress=progress)

    model.eval()
    with genesis.no_grad():
        logits = model(genesis.tensor(x_test, device=args.device))
        predicted = logits.argmax(1).cpu().numpy()
    accuracy = float((predicted == y_test).mean())
    print(f"test accuracy {accuracy * 100:.2f}%  ({time.perf_counter() - start:.1f} s on {args.device})")
    return accuracy


if __name__ == "__main__":
    main()
