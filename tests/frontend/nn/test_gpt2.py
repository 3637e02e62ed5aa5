"""The issue's end-to-end check: a GPT-2-style decoder built with nn (zoo.gpt2), exported with
symbolic sequence lengths, jitted, and decoded greedily (16-token prompt, 20 decode steps)
token for token like a PyTorch implementation with the same weights."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from zoo.gpt2 import GPT2Config, GPT2LMHeadModel, causal_mask, greedy_generate  # noqa: E402

from .gpt2_torch import TorchGPT2, randomize  # noqa: E402

CONFIG = GPT2Config(vocab_size=96, max_positions=48, hidden_size=32, num_heads=4, num_layers=2)


def _models():
    reference = randomize(TorchGPT2(CONFIG).eval(), seed=3)
    model = GPT2LMHeadModel(CONFIG)
    missing, unexpected = model.load_state_dict(reference.state_dict())
    assert missing == [] and unexpected == []
    return model, reference


def _torch_greedy(reference, prompt, steps):
    """Greedy decoding that recomputes the whole sequence each step (no cache)."""
    tokens, generated = list(prompt), []
    with torch.no_grad():
        for _ in range(steps + 1):
            n = len(tokens)
            logits = reference(torch.tensor([tokens]), torch.arange(n)[None],
                               torch.from_numpy(causal_mask(n, 0)))
            generated.append(int(logits[0, -1].argmax()))
            tokens.append(generated[-1])
    return generated


def test_export_keeps_sequence_lengths_symbolic():
    model, _ = _models()
    mod, params = model.export_tvm(model.get_default_spec())
    text = mod.astext()
    assert "seq_len" in text and "total_seq_len" in text
    names = [name for name, _ in params]
    assert names[:2] == ["wte.weight", "wpe.weight"]
    assert "h.1.attn.c_attn.weight" in names
    func = mod["forward"]
    # inputs, then one state per KV cache (2 per layer), then the weights
    assert func.attrs["num_input"] == 3 + 2 * CONFIG.num_layers
    assert len(func.params) == func.attrs["num_input"] + len(params)


@pytest.mark.parametrize("device", ["cpu", "python"])
def test_greedy_decoding_matches_pytorch_token_for_token(device):
    model, reference = _models()
    runner = model.jit(model.get_default_spec(), device=device, out_format="numpy")
    prompt = np.random.default_rng(0).integers(0, CONFIG.vocab_size, 16)
    ours = greedy_generate(runner.forward, prompt, steps=20)
    assert ours == _torch_greedy(reference, prompt, steps=20)


def test_prefill_logits_match_pytorch():
    model, reference = _models()
    runner = model.jit(model.get_default_spec(), out_format="torch")
    ids = np.arange(7, dtype="int32")[None] % CONFIG.vocab_size
    positions = np.arange(7, dtype="int32")[None]
    mask = causal_mask(7, 0)
    ours = runner.forward(ids, positions, mask)
    assert isinstance(ours, torch.Tensor)
    with torch.no_grad():
        want = reference(torch.from_numpy(ids).long(), torch.from_numpy(positions).long(),
                         torch.from_numpy(mask))
    np.testing.assert_allclose(ours.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
