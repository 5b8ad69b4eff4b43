"""Makes the V4 golden data with transformers 5.17 (run on the GPU machine,
which has torch and transformers; dsf never imports them).

Builds the tiny V4 of models/deepseek-v4-tiny in fp32, randomizes what
transformers zero-initialises (attention sinks, compressor position biases,
mHC bases and scales, router correction bias, hash table) and rescales the
weights to std 1/sqrt(fan_in) so attention and routing are far from uniform,
then writes to OUT_DIR:
  weights.safetensors  model.state_dict() (transformers' internal names)
  io.safetensors       input_ids [2, 40]; logits_dense (index_topk 64: every
                       visible entry), logits_selective (the config's top-8),
                       logits_incremental (selective; prefill 24 tokens, then
                       one token per step with the cache)
  config.json          the config used (selective)
usage: make_hf_v4_golden.py CONFIG_DIR OUT_DIR"""
import json
import math
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m
from transformers.models.deepseek_v4.configuration_deepseek_v4 import DeepseekV4Config

config_dir, out_dir = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
raw = json.load(open(os.path.join(config_dir, "config.json")))
torch.manual_seed(20261130)


def build(index_topk):
    cfg = DeepseekV4Config(**{**raw, "index_topk": index_topk})
    cfg._attn_implementation = "eager"
    return m.DeepseekV4ForCausalLM(cfg).float().eval(), cfg


model, cfg = build(raw["index_topk"])
with torch.no_grad():
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            p.normal_(0.0, 1.0 / math.sqrt(p.shape[-1]))
        elif name.endswith("norm.weight") or name.endswith(".weight"):
            p.copy_(1.0 + 0.1 * torch.randn_like(p))
        else:  # sinks, bases, scales, position biases ...
            p.normal_(0.0, 0.5)
    for name, p in model.named_parameters():
        if "position_bias" in name:
            p.normal_(0.0, 0.5)
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.normal_(0.0, 0.1)
        elif name.endswith("tid2eid"):
            k, experts = b.shape[1], cfg.n_routed_experts
            b.copy_(torch.stack([torch.randperm(experts)[:k] for _ in range(b.shape[0])]))

state = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
save_file(state, os.path.join(out_dir, "weights.safetensors"),
          metadata={"transformers": transformers.__version__, "torch": torch.__version__})

ids = torch.randint(0, cfg.vocab_size, (2, 40), generator=torch.Generator().manual_seed(7))
io = {"input_ids": ids}
with torch.no_grad():
    io["logits_selective"] = model(ids).logits.float()
    dense, _ = build(64)
    dense.load_state_dict(state)
    io["logits_dense"] = dense(ids).logits.float()
    try:
        prefix = 24
        out = model(ids[:, :prefix], use_cache=True)
        past, steps = out.past_key_values, [out.logits]
        for t in range(prefix, ids.shape[1]):
            out = model(ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            steps.append(out.logits)
        io["logits_incremental"] = torch.cat(steps, 1).float()
    except Exception as e:  # keep the prefill goldens even if the cache path fails
        print("incremental decode failed:", repr(e))
for name, t in io.items():
    print(name, tuple(t.shape), "finite" if torch.isfinite(t.float()).all() else "NOT FINITE")
if "logits_incremental" in io:
    d = (io["logits_incremental"] - io["logits_selective"]).abs().max().item()
    print("incremental vs full prefill, max |difference|:", d)
save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(out_dir, "io.safetensors"))
json.dump(raw, open(os.path.join(out_dir, "config.json"), "w"), indent=1)
print("transformers", transformers.__version__, "torch", torch.__version__)
