"""DeepSeek-V4 forward pass in plain NumPy, written from MODEL.md §1 and read
against transformers 5.17's modeling_deepseek_v4 (its parameter names; its
choices where MODEL.md leaves them open: the indexer picks top-min(k, entries)
and drops picks not yet visible). fp32, full prefill."""
import numpy as np

from v41 import f32, rms, rope, rope_frequencies, sigmoid, softmax

LAYER_RATIO = {"sliding_attention": 0}


class Model:
    def __init__(self, config, weights, trace=None):
        # trace(layer, q, kv, entries, selection, sink, out): called with each
        # attention's inputs and output (before the inverse RoPE), for
        # checking one kernel on a real model's values.
        self.c, self.w, self.trace = config, weights, trace
        c = config
        self.n = c["hc_mult"]
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.types = c["layer_types"]
        self.rates = c["compress_rates"]
        self.hash = [t == "hash_moe" for t in c["mlp_layer_types"]]
        rp = c["rope_parameters"]

        def freqs(p):
            dims = int(round(c["head_dim"] * p.get("partial_rotary_factor", 1.0)))
            yarn = None
            if p.get("rope_type") == "yarn":
                original = p["original_max_position_embeddings"]
                factor = p.get("factor", c["max_position_embeddings"] / original)
                yarn = (factor, original, p.get("beta_fast", 32), p.get("beta_slow", 1))
            return rope_frequencies(p["rope_theta"], dims, yarn)

        self.main_freqs, self.compress_freqs = freqs(rp["main"]), freqs(rp["compress"])

    def W(self, name):
        return self.w[name].astype(f32)

    def hc(self, X, p):
        n = self.n
        T = X.shape[0]
        flat = rms(X.reshape(T, -1), None, self.eps)
        mix = flat @ self.W(p + "fn").T
        base, scale = self.W(p + "base"), self.W(p + "scale")
        hc_eps = f32(self.c.get("hc_eps", 1e-6))
        pre = sigmoid(mix[:, :n] * scale[0] + base[:n]) + hc_eps
        post = 2 * sigmoid(mix[:, n:2 * n] * scale[1] + base[n:2 * n])
        comb = softmax((mix[:, 2 * n:] * scale[2]).reshape(T, n, n) + base[2 * n:].reshape(n, n), -1) + hc_eps
        comb = comb / (comb.sum(-2, keepdims=True) + hc_eps)
        for _ in range(self.c.get("hc_sinkhorn_iters", 20) - 1):
            comb = comb / (comb.sum(-1, keepdims=True) + hc_eps)
            comb = comb / (comb.sum(-2, keepdims=True) + hc_eps)
        return pre, post, comb

    def compress(self, x, p, ratio, width, overlap, freqs):
        """One normalised, roped entry per complete window of `ratio` tokens."""
        T = x.shape[0]
        windows = T // ratio
        kv = (x @ self.W(p + "kv_proj.weight").T)[: windows * ratio]
        gate = (x @ self.W(p + "gate_proj.weight").T)[: windows * ratio]
        if windows == 0:
            return np.zeros((0, width), f32)
        kv = kv.reshape(windows, ratio, -1)
        gate = gate.reshape(windows, ratio, -1) + self.W(p + "position_bias")
        if overlap:  # entry w: window w-1's first half (Ca) and window w's second half (Cb)
            slots_kv = np.zeros((windows, 2 * ratio, width), f32)
            slots_gate = np.full((windows, 2 * ratio, width), -np.inf, f32)
            slots_kv[:, ratio:] = kv[..., width:]
            slots_gate[:, ratio:] = gate[..., width:]
            slots_kv[1:, :ratio] = kv[:-1, :, :width]
            slots_gate[1:, :ratio] = gate[:-1, :, :width]
            kv, gate = slots_kv, slots_gate
        pooled = np.sum(softmax(gate, 1) * kv, axis=1)
        entries = rms(pooled, self.W(p + "kv_norm.weight"), self.eps)
        return rope(entries, (np.arange(windows) * ratio).astype(np.int64), freqs)

    def attention(self, i, x, pos):
        c = self.c
        p = f"model.layers.{i}.self_attn."
        H, hd = c["num_attention_heads"], c["head_dim"]
        kind = self.types[i]
        freqs = self.main_freqs if kind == "sliding_attention" else self.compress_freqs
        T = x.shape[0]
        qr = rms(x @ self.W(p + "q_a_proj.weight").T, self.W(p + "q_a_norm.weight"), self.eps)
        q = rms((qr @ self.W(p + "q_b_proj.weight").T).reshape(T, H, hd), None, self.eps)
        q = rope(q, pos, freqs)
        kv = rope(rms(x @ self.W(p + "kv_proj.weight").T, self.W(p + "kv_norm.weight"), self.eps), pos, freqs)

        entries, selection, ratio = None, None, 0
        if kind != "sliding_attention":
            ratio = self.rates[kind]
            csa = kind == "compressed_sparse_attention"
            entries = self.compress(x, p + "compressor.", ratio, hd, csa, freqs)
            if csa:
                ip = p + "compressor.indexer."
                HI, dI = c["index_n_heads"], c["index_head_dim"]
                keys = self.compress(x, ip, ratio, dI, True, freqs)
                qi = rope((qr @ self.W(ip + "q_b_proj.weight").T).reshape(T, HI, dI), pos, freqs)
                scores = np.maximum(np.einsum("thd,jd->thj", qi, keys), 0) * f32(dI ** -0.5)
                wts = (x @ self.W(ip + "scorer.weights_proj.weight").T) * f32(HI ** -0.5)
                scores = np.einsum("thj,th->tj", scores, wts)
                visible = np.arange(keys.shape[0])[None, :] < ((pos[:, None] + 1) // ratio)
                scores = np.where(visible, scores, -np.inf)
                k = min(c["index_topk"], keys.shape[0])
                selection = []
                for t in range(T):
                    top = np.argsort(-scores[t], kind="stable")[:k]
                    selection.append(np.sort(top[visible[t, top]]))

        W = c["sliding_window"]
        scale = f32(hd ** -0.5)
        sink = self.W(p + "sinks")
        out = np.zeros((T, H, hd), f32)
        for t in range(T):
            keys_t = kv[max(0, t - W + 1): t + 1]
            if entries is not None:
                chosen = selection[t] if selection is not None else np.arange(int((pos[t] + 1) // ratio))
                keys_t = np.concatenate([keys_t, entries[chosen]], 0)
            logits = np.einsum("hd,kd->hk", q[t], keys_t) * scale
            m = np.maximum(logits.max(-1), sink)
            e = np.exp(logits - m[:, None])
            out[t] = (e / (e.sum(-1) + np.exp(sink - m))[:, None]) @ keys_t
        if self.trace:
            if entries is not None and selection is None:
                selection = [np.arange(int((pos[t] + 1) // ratio)) for t in range(T)]
            self.trace(i, q, kv, entries, selection, sink, out)
        out = rope(out, pos, freqs, inverse=True)
        G = c["o_groups"]
        wa = self.W(p + "o_a_proj.weight")
        oa = np.einsum("tgi,goi->tgo", out.reshape(T, G, -1), wa.reshape(G, -1, wa.shape[-1]))
        return oa.reshape(T, -1) @ self.W(p + "o_b_proj.weight").T

    def moe(self, i, z, ids):
        c = self.c
        p = f"model.layers.{i}.mlp."
        lim = f32(c.get("swiglu_limit", 10.0))
        s = np.sqrt(np.logaddexp(0, z @ self.W(p + "gate.weight").T).astype(f32))
        k = c["num_experts_per_tok"]
        if self.hash[i]:
            sel = self.w[p + "gate.tid2eid"][ids].astype(np.int64)
        else:
            sel = np.argsort(-(s + self.W(p + "gate.e_score_correction_bias")), axis=-1, kind="stable")[:, :k]
        wts = np.take_along_axis(s, sel, -1)
        wts = wts / (wts.sum(-1, keepdims=True) + f32(1e-20)) * f32(c.get("routed_scaling_factor", 1.5))
        gate_up, down = self.W(p + "experts.gate_up_proj"), self.W(p + "experts.down_proj")
        y = np.zeros_like(z)
        for t in range(z.shape[0]):
            for e, we in zip(sel[t], wts[t]):
                g, u = np.split(gate_up[e] @ z[t], 2)
                g, u = np.minimum(g, lim), np.clip(u, -lim, lim)
                y[t] += (down[e] @ (g * sigmoid(g) * u)) * we
        g = np.minimum(z @ self.W(p + "shared_experts.gate_proj.weight").T, lim)
        u = np.clip(z @ self.W(p + "shared_experts.up_proj.weight").T, -lim, lim)
        return y + (g * sigmoid(g) * u) @ self.W(p + "shared_experts.down_proj.weight").T

    def forward(self, ids):
        c = self.c
        T = len(ids)
        pos = np.arange(T, dtype=np.int64)
        X = np.repeat(self.W("model.embed_tokens.weight")[ids][:, None, :], self.n, axis=1)
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            pre, post, comb = self.hc(X, p + "attn_hc.")
            x = rms(np.einsum("tj,tjd->td", pre, X), self.W(p + "input_layernorm.weight"), self.eps)
            y = self.attention(i, x, pos)
            X = post[:, :, None] * y[:, None, :] + np.einsum("tjk,tjd->tkd", comb, X)
            pre, post, comb = self.hc(X, p + "ffn_hc.")
            z = rms(np.einsum("tj,tjd->td", pre, X), self.W(p + "post_attention_layernorm.weight"), self.eps)
            X = post[:, :, None] * self.moe(i, z, ids)[:, None, :] + np.einsum("tjk,tjd->tkd", comb, X)
        n = self.n
        flat = rms(X.reshape(T, -1), None, self.eps)
        mix = flat @ self.W("model.hc_head.hc_fn").T
        pre = sigmoid(mix * self.W("model.hc_head.hc_scale") + self.W("model.hc_head.hc_base")) + f32(c.get("hc_eps", 1e-6))
        h = rms(np.einsum("tj,tjd->td", pre, X), self.W("model.norm.weight"), self.eps)
        return h @ self.W("lm_head.weight").T
