"""DeepSeek-V4.1 forward pass in plain NumPy, written from MODEL.md §2: the
reference the compiled model is compared with where no external port covers a
path (incremental decode, exact-tail and bounded-replay prefill, the pool).

Every formula is MODEL.md's; fp32 throughout, as the ports run."""
import math

import numpy as np

f32 = np.float32


def rms(x, w=None, eps=1e-20):
    x = x.astype(f32)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + f32(eps))
    return y * w if w is not None else y


def sigmoid(x):
    return f32(1) / (f32(1) + np.exp(-x))


def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def rope_frequencies(theta, dims, yarn=None):
    """Inverse frequencies of the dims/2 pairs; YaRN as DeepSeek and
    transformers compute it (no attention-factor scaling)."""
    freqs = 1.0 / (theta ** (np.arange(0, dims, 2, dtype=np.float64) / dims))
    if yarn:
        factor, original, beta_fast, beta_slow = yarn

        def correction_dim(rotations):
            return dims * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

        low = max(math.floor(correction_dim(beta_fast)), 0)
        high = min(math.ceil(correction_dim(beta_slow)), dims - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dims // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        smooth = 1 - ramp
        freqs = freqs / factor * (1 - smooth) + freqs * smooth
    return freqs.astype(f32)


def rope(x, positions, freqs, inverse=False):
    """Rotates interleaved pairs of the last 2*len(freqs) channels."""
    d = 2 * len(freqs)
    angles = positions.astype(f32)[:, None] * freqs[None, :]          # [T, d/2]
    if inverse:
        angles = -angles
    cos, sin = np.cos(angles), np.sin(angles)
    shape = [x.shape[0]] + [1] * (x.ndim - 2) + [d // 2]
    cos, sin = cos.reshape(shape), sin.reshape(shape)
    out = x.astype(f32).copy()
    a, b = x[..., -d::2], x[..., -d + 1::2]
    out[..., -d::2] = a * cos - b * sin
    out[..., -d + 1::2] = a * sin + b * cos
    return out


class Model:
    def __init__(self, config, weights, quant=None):
        self.c = config
        self.w = weights
        self.quant = quant  # a codecs module, or None for the unquantized math
        c = config
        self.n = c["hc_mult"]
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.rd = c["qk_rope_head_dim"]
        self.ratios = c["compress_ratios"]
        self.kv_sources = set(c["kv_source_layer_ids"])
        self.index_sources = set(c["index_source_layer_ids"])
        rs = c.get("rope_scaling") or {}
        yarn = None
        if rs.get("type", rs.get("rope_type")) == "yarn":
            original = rs["original_max_position_embeddings"]
            factor = rs.get("factor", c["max_position_embeddings"] / original)
            yarn = (factor, original, rs.get("beta_fast", 32), rs.get("beta_slow", 1))
        self.main_freqs = rope_frequencies(c.get("rope_theta", 10000.0), self.rd)
        self.compress_freqs = rope_frequencies(c.get("compress_rope_theta", 160000.0), self.rd, yarn)

    def W(self, name):
        return self.w[name].astype(f32)

    # --- mHC ------------------------------------------------------------
    def hc(self, X, prefix):
        n = self.n
        T = X.shape[0]
        flat = X.reshape(T, -1)
        mix = (flat @ self.W(prefix + "_fn").T) / np.sqrt(np.mean(flat * flat, -1, keepdims=True) + f32(self.eps))
        base, scale = self.W(prefix + "_base"), self.W(prefix + "_scale")
        mix = mix.astype(f32)
        hc_eps = f32(self.c.get("hc_eps", 1e-6))
        pre = sigmoid(mix[:, :n] * scale[0] + base[:n]) + hc_eps
        post = 2 * sigmoid(mix[:, n:2 * n] * scale[1] + base[n:2 * n])
        comb = (mix[:, 2 * n:] * scale[2] + base[2 * n:]).reshape(T, n, n)
        comb = softmax(comb, -1) + hc_eps
        comb = comb / (comb.sum(-2, keepdims=True) + hc_eps)
        for _ in range(self.c.get("hc_sinkhorn_iters", 20) - 1):
            comb = comb / (comb.sum(-1, keepdims=True) + hc_eps)
            comb = comb / (comb.sum(-2, keepdims=True) + hc_eps)
        return pre, post, comb

    @staticmethod
    def collapse(X, pre):
        return np.einsum("tj,tjd->td", pre, X)

    @staticmethod
    def update(X, F, post, comb):
        # X'_k = post_k F + sum_j comb[j, k] X_j
        return post[:, :, None] * F[:, None, :] + np.einsum("tjk,tjd->tkd", comb, X)

    # --- codecs (identity unless quantizing) -----------------------------
    def q(self, kind, x):
        return x if self.quant is None else self.quant.roundtrip(kind, x)

    # --- attention --------------------------------------------------------
    def attention(self, i, x, pos, shared):
        c, w = self.c, self.w
        p = f"layers.{i}.attn."
        H, hd = c["num_attention_heads"], c["head_dim"]
        ratio = self.ratios[i]
        freqs = self.compress_freqs if ratio > 0 else self.main_freqs
        T = x.shape[0]
        qr = rms(x @ self.W(p + "wq_a.weight").T, self.W(p + "q_norm.weight"), self.eps)
        q = rope((qr @ self.W(p + "wq_b.weight").T).reshape(T, H, hd), pos, freqs)
        kv = rope(rms(x @ self.W(p + "wkv.weight").T, self.W(p + "kv_norm.weight"), self.eps), pos, freqs)
        kv = self.q("window", kv)

        selection = None
        entries = None
        if ratio > 0:
            full = i in self.kv_sources
            if full:
                Ck = x @ self.W(p + "compressor.wkv.weight").T
                if ratio == 2:
                    Z = x @ self.W(p + "compressor.wgate.weight").T
                    groups = T // 2
                    Ck2 = Ck[: 2 * groups].reshape(groups, 2, -1)
                    Z2 = Z[: 2 * groups].reshape(groups, 2, -1)
                    latent = np.sum(softmax(Z2, 1) * Ck2, axis=1)
                else:
                    latent = Ck
                latent = rms(latent, self.W(p + "compressor.norm.weight"), self.eps)
                epos = (np.arange(latent.shape[0]) * ratio).astype(np.int64)
                keys = rms(latent @ self.W(p + "indexer.wk.weight").T, self.W(p + "indexer.k_norm.weight"), self.eps)
                keys = self.q("index_keys", rope(keys, epos, freqs))
                entries = self.q("kv", rope(latent, epos, freqs))
                shared[ratio] = {"kv": entries, "keys": keys}
            else:
                entries, keys = shared[ratio]["kv"], shared[ratio]["keys"]
            if i in self.index_sources:
                HI, dI = c["index_n_heads"], c["index_head_dim"]
                qi = rope((qr @ self.W(p + "indexer.wq_b.weight").T).reshape(T, HI, dI), pos, freqs)
                qi = self.q("index_queries", qi)
                wts = (x @ self.W(p + "indexer.weights_proj.weight").T) * f32(dI ** -0.5 * HI ** -0.5)
                scores = np.einsum("th,thj->tj", wts, np.maximum(np.einsum("thd,jd->thj", qi, keys), 0))
                visible = np.arange(keys.shape[0])[None, :] < ((pos[:, None] + 1) // ratio)
                scores = np.where(visible, scores, -np.inf)
                if ratio == 1 and c.get("candidate_source_layer_id") is not None:
                    src = c["candidate_source_layer_id"]
                    if i == src:
                        shared["pool"] = self.pool(scores, visible)
                    elif i > src and "pool" in shared:
                        scores = np.where(shared["pool"], scores, -np.inf)
                selection = self.topk(scores, c["index_topk"])
                shared[(ratio, "selection")] = selection
            else:
                selection = shared[(ratio, "selection")]

        # One softmax over [window | selected entries | sink].
        W = c["sliding_window"]
        scale = f32(hd ** -0.5)
        sink = self.W(p + "attn_sink")
        out = np.zeros((T, H, hd), f32)
        for t in range(T):
            keys_t = kv[max(0, t - W + 1): t + 1]                  # the window, query included
            if selection is not None:
                sel = selection[t][selection[t] >= 0]
                keys_t = np.concatenate([keys_t, entries[sel]], 0)
            logits = np.einsum("hd,kd->hk", q[t], keys_t) * scale
            m = np.maximum(logits.max(-1), sink)
            e = np.exp(logits - m[:, None])
            denom = e.sum(-1) + np.exp(sink - m)
            out[t] = (e / denom[:, None]) @ keys_t
        out = rope(out, pos, freqs, inverse=True)
        G, r = c["o_groups"], c["o_lora_rank"]
        oa = np.einsum("tgi,goi->tgo", out.reshape(T, G, -1), self.W(p + "wo_a.weight").reshape(G, r, -1))
        return oa.reshape(T, -1) @ self.W(p + "wo_b.weight").T

    def topk(self, scores, k):
        T, P = scores.shape
        sel = np.full((T, min(k, P) if P else 0), -1, np.int64)
        for t in range(T):
            finite = np.isfinite(scores[t])
            idx = np.nonzero(finite)[0]
            if len(idx) > k:
                idx = idx[np.argsort(-scores[t, idx], kind="stable")[:k]]
            idx = np.sort(idx)
            sel[t, : len(idx)] = idx
        return sel

    def pool(self, scores, visible):
        c = self.c
        blocks, size = c["candidate_topk_blocks"], c["candidate_block_size"]
        T, P = scores.shape
        nb = -(-P // size)
        padded = np.full((T, nb * size), -np.inf, f32)
        padded[:, :P] = scores
        block_max = padded.reshape(T, nb, size).max(-1)
        keep = np.zeros((T, P), bool)
        for t in range(T):
            vis = np.nonzero(visible[t])[0]
            if len(vis) == 0:
                continue
            newest = vis[-1] // size
            order = [b for b in np.argsort(-block_max[t], kind="stable") if np.isfinite(block_max[t, b]) and b != newest]
            chosen = [newest] + order[: blocks - 1]
            for b in chosen:
                keep[t, b * size: (b + 1) * size] = True
        return keep[:, :P]

    # --- MoE --------------------------------------------------------------
    def moe(self, i, z, image=None):
        c = self.c
        p = f"layers.{i}.ffn."
        lim = f32(c.get("swiglu_limit", 10.0))
        s = np.sqrt(np.logaddexp(0, z @ self.W(p + "gate.weight").T).astype(f32))
        bias = self.W(p + "gate.bias")
        k = c["num_experts_per_tok"]
        T = z.shape[0]
        y = np.zeros_like(z)
        for t in range(T):
            b = self.W(p + "gate.bias_vl") if image is not None and image[t] else bias
            sel = np.argsort(-(s[t] + b), kind="stable")[:k]
            wts = s[t, sel] / (s[t, sel].sum() + f32(1e-20)) * f32(c.get("routed_scaling_factor", 1.5))
            for e, we in zip(sel, wts):
                e = int(e)
                g = z[t] @ self.W(f"{p}experts.{e}.w1.weight").T
                u = z[t] @ self.W(f"{p}experts.{e}.w3.weight").T
                h = we * (np.minimum(g, lim) * sigmoid(np.minimum(g, lim))) * np.clip(u, -lim, lim)
                y[t] += h @ self.W(f"{p}experts.{e}.w2.weight").T
        g = z @ self.W(p + "shared_experts.w1.weight").T
        u = z @ self.W(p + "shared_experts.w3.weight").T
        h = (np.minimum(g, lim) * sigmoid(np.minimum(g, lim))) * np.clip(u, -lim, lim)
        return y + h @ self.W(p + "shared_experts.w2.weight").T

    # --- the whole model -------------------------------------------------
    def forward(self, ids, image=None):
        c = self.c
        T = len(ids)
        pos = np.arange(T, dtype=np.int64)
        X = np.repeat(self.W("embed.weight")[ids][:, None, :], self.n, axis=1)
        pre_prev = np.zeros((T, self.n), f32)
        pre_prev[:, 0] = 1
        shared = {}
        for i in range(c["num_hidden_layers"]):
            p = f"layers.{i}."
            a_pre, a_post, a_comb = self.hc(X, p + "hc_attn")
            x = rms(self.collapse(X, pre_prev), self.W(p + "attn_norm.weight"), self.eps)
            X = self.update(X, self.attention(i, x, pos, shared), a_post, a_comb)
            f_pre, f_post, f_comb = self.hc(X, p + "hc_ffn")
            z = rms(self.collapse(X, a_pre), self.W(p + "ffn_norm.weight"), self.eps)
            X = self.update(X, self.moe(i, z, image), f_post, f_comb)
            pre_prev = f_pre
        h = rms(self.collapse(X, pre_prev), self.W("norm.weight"), self.eps)
        return h @ self.W("head.weight").T
