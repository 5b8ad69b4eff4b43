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
    def attention(self, i, x, pos, shared, state, kv_x=None, kv_pos=None):
        """Attention of layer i for the query rows (x, pos). The layer's own
        window K = V and, for a Full layer, its compressed KV and index keys
        come from (kv_x, kv_pos) when given (a split layer's KV part runs over
        more tokens than its queries) and are appended to `state` (the decode
        state: window rows, entries, the ratio-2 pending row)."""
        c = self.c
        p = f"layers.{i}.attn."
        H, hd = c["num_attention_heads"], c["head_dim"]
        ratio = self.ratios[i]
        freqs = self.compress_freqs if ratio > 0 else self.main_freqs
        if kv_x is None:
            kv_x, kv_pos = x, pos
        T = x.shape[0]
        qr = rms(x @ self.W(p + "wq_a.weight").T, self.W(p + "q_norm.weight"), self.eps)
        q = rope((qr @ self.W(p + "wq_b.weight").T).reshape(T, H, hd), pos, freqs)
        kv = rope(rms(kv_x @ self.W(p + "wkv.weight").T, self.W(p + "kv_norm.weight"), self.eps), kv_pos, freqs)
        st = state.setdefault(i, {"win": np.zeros((0, hd), f32), "win_pos": np.zeros(0, np.int64)})
        st["win"] = np.concatenate([st["win"], self.q("window", kv)], 0)
        st["win_pos"] = np.concatenate([st["win_pos"], kv_pos])

        selection = entries = None
        if ratio > 0:
            if i in self.kv_sources:
                self.compress(i, kv_x, kv_pos, st, freqs)
                shared[ratio] = {"kv": st["entries"], "keys": st["keys"]}
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

        # One softmax over [window | selected entries | sink]; the window is
        # the rows of positions p-W+1..p that this layer has.
        W = c["sliding_window"]
        scale = f32(hd ** -0.5)
        sink = self.W(p + "attn_sink")
        out = np.zeros((T, H, hd), f32)
        for t in range(T):
            in_window = (st["win_pos"] > pos[t] - W) & (st["win_pos"] <= pos[t])
            keys_t = st["win"][in_window]
            if selection is not None:
                sel = selection[t][selection[t] >= 0]
                keys_t = np.concatenate([keys_t, entries[sel]], 0)
            logits = np.einsum("hd,kd->hk", q[t], keys_t) * scale
            m = np.maximum(logits.max(-1), sink)
            e = np.exp(logits - m[:, None])
            denom = e.sum(-1) + np.exp(sink - m)
            out[t] = (e / denom[:, None]) @ keys_t
        # Only the window's last W-1 rows are needed by later tokens.
        keep = st["win_pos"] > st["win_pos"].max() - W
        st["win"], st["win_pos"] = st["win"][keep], st["win_pos"][keep]
        out = rope(out, pos, freqs, inverse=True)
        G, r = c["o_groups"], c["o_lora_rank"]
        oa = np.einsum("tgi,goi->tgo", out.reshape(T, G, -1), self.W(p + "wo_a.weight").reshape(G, r, -1))
        return oa.reshape(T, -1) @ self.W(p + "wo_b.weight").T

    def compress(self, i, x, pos, st, freqs):
        """Appends the entries of complete groups to the layer's compressed KV
        and index keys. Ratio 2: an odd token waits as the pending row (its
        projection and gate, fp32) until its pair's second token arrives."""
        p = f"layers.{i}.attn."
        ratio = self.ratios[i]
        Ck = x @ self.W(p + "compressor.wkv.weight").T
        if ratio == 2:
            Z = x @ self.W(p + "compressor.wgate.weight").T
            if st.get("pending") is not None:
                Ck = np.concatenate([st["pending"][0], Ck], 0)
                Z = np.concatenate([st["pending"][1], Z], 0)
                pos = np.concatenate([st["pending"][2], pos])
            groups = Ck.shape[0] // 2
            st["pending"] = (Ck[2 * groups:], Z[2 * groups:], pos[2 * groups:]) if Ck.shape[0] % 2 else None
            width = Ck.shape[1]
            latent = np.sum(softmax(Z[: 2 * groups].reshape(groups, 2, width), 1) *
                            Ck[: 2 * groups].reshape(groups, 2, width), axis=1)
            first = pos[: 2 * groups: 2]
        else:
            latent, first = Ck, pos
        latent = rms(latent, self.W(p + "compressor.norm.weight"), self.eps)
        keys = rms(latent @ self.W(p + "indexer.wk.weight").T, self.W(p + "indexer.k_norm.weight"), self.eps)
        keys = self.q("index_keys", rope(keys, first, freqs))
        entries = self.q("kv", rope(latent, first, freqs))
        st["entries"] = np.concatenate([st.get("entries", np.zeros((0, entries.shape[1]), f32)), entries], 0)
        st["keys"] = np.concatenate([st.get("keys", np.zeros((0, keys.shape[1]), f32)), keys], 0)

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
    def split_layer(self):
        """The decoder's first Full layer (where prefill can be split)."""
        for i, r in enumerate(self.ratios):
            if r == 1 and i in self.kv_sources:
                return i
        return None

    def tail_tokens(self, mode):
        W = self.c["sliding_window"]
        decoder = self.c["num_hidden_layers"] - self.split_layer()
        return W + (decoder - 1) * (W - 1) if mode == "exact-tail" else W

    def forward(self, ids, image=None, state=None, start=0, prefill="full"):
        """Logits of the tokens `ids` at positions start.., continuing `state`
        (None: a fresh sequence). prefill=exact-tail / bounded-replay runs the
        decoder's first Full layer's KV part over every token and the rest of
        the decoder over the last W + (L-1)(W-1) / W tokens; the logits are
        then those of the tail."""
        c = self.c
        T = len(ids)
        pos = np.arange(start, start + T, dtype=np.int64)
        if state is None:
            state = {"shared": {}, "layers": {}, "pre": None, "X": None}
        X = np.repeat(self.W("embed.weight")[ids][:, None, :], self.n, axis=1)
        pre_prev = np.zeros((T, self.n), f32)
        pre_prev[:, 0] = 1
        split = self.split_layer() if prefill != "full" else None
        tail = None
        shared = state["shared"]
        for i in range(c["num_hidden_layers"]):
            p = f"layers.{i}."
            if i == split:
                tail = max(0, T - self.tail_tokens(prefill))
                kv_x = rms(self.collapse(X, pre_prev), self.W(p + "attn_norm.weight"), self.eps)
                kv_pos = pos
                X, pre_prev, pos, ids = X[tail:], pre_prev[tail:], pos[tail:], ids[tail:]
                image = image[tail:] if image is not None else None
            else:
                kv_x = kv_pos = None
            a_pre, a_post, a_comb = self.hc(X, p + "hc_attn")
            x = rms(self.collapse(X, pre_prev), self.W(p + "attn_norm.weight"), self.eps)
            X = self.update(X, self.attention(i, x, pos, shared, state["layers"], kv_x, kv_pos), a_post, a_comb)
            f_pre, f_post, f_comb = self.hc(X, p + "hc_ffn")
            z = rms(self.collapse(X, a_pre), self.W(p + "ffn_norm.weight"), self.eps)
            X = self.update(X, self.moe(i, z, image), f_post, f_comb)
            pre_prev = f_pre
        h = rms(self.collapse(X, pre_prev), self.W("norm.weight"), self.eps)
        return h @ self.W("head.weight").T, state
