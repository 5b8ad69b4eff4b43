# Dumps what transformers' DeepseekV4Config writes, so the importer matches HF exactly.
import inspect, os
import transformers
from transformers.models.deepseek_v4 import configuration_deepseek_v4 as m
out = os.environ.get("OUT", ".")
print("transformers", transformers.__version__)
open(os.path.join(out, "configuration_deepseek_v4.py"), "w").write(inspect.getsource(m))
cfg = m.DeepseekV4Config()
cfg.save_pretrained(os.path.join(out, "default"))
tiny = m.DeepseekV4Config(vocab_size=512, hidden_size=128, num_hidden_layers=4,
    num_attention_heads=4, head_dim=64, qk_rope_head_dim=16, q_lora_rank=64,
    o_groups=2, o_lora_rank=32, sliding_window=16, index_n_heads=4, index_head_dim=32,
    index_topk=8, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
    layer_types=["sliding_attention", "compressed_sparse_attention",
                 "heavily_compressed_attention", "compressed_sparse_attention"],
    mlp_layer_types=["hash_moe", "moe", "moe", "moe"],
    compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8})
tiny.save_pretrained(os.path.join(out, "tiny"))
try:
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as mm
    open(os.path.join(out, "modeling_deepseek_v4.py"), "w").write(inspect.getsource(mm))
except Exception as e:
    print("modeling:", e)
