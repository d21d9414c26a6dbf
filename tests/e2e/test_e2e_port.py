"""A plain PyTorch script, ported by changing only its imports, runs and converges on genesis."""

from __future__ import annotations

from example_loading import ROOT, TORCH_TO_GENESIS, load_script

SCRIPT = ROOT / "tests" / "e2e" / "scripts" / "torch_classifier.py"


def test_the_torch_script_converges_under_torch() -> None:
    script = load_script(SCRIPT, "torch_classifier_torch")
    first, last, accuracy = script.main()
    assert last < 0.2 * first and accuracy > 0.95


def test_the_same_script_with_genesis_imports_converges(device: str) -> None:
    script = load_script(SCRIPT, f"torch_classifier_genesis_{device}", TORCH_TO_GENESIS)
    assert "torch" not in script.__dict__ or script.torch.__name__ == "genesis"
    first, last, accuracy = script.main(device=device)
    assert last < 0.2 * first, (first, last)
    assert accuracy > 0.95, accuracy
