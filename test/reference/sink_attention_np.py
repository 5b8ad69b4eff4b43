"""The sink attention of one layer as dsf's attention helper reads it, in
NumPy (float64 sums): out[t, h] = softmax over (the token's band rows, its
selected cache entries, the sink) of q k^T scale, times those rows (one KV
head: keys = values). Query t is window row off + t (off = rows - tokens);
band column c is window row off + t + c - (window - 1) when that is >= 0;
an entry of the selection that is -1 or past the cache is no column. With
round_bf16 the queries, the rows and the probabilities are rounded to bf16
(to nearest even) where the tensor-core kernel rounds them."""
import numpy as np

import codecs_np


def widen(x, round_bf16):
    """float64 of x, rounded to bf16 (to nearest even) first with round_bf16."""
    return codecs_np.bf16_rne(x).astype(np.float64) if round_bf16 else np.asarray(x, np.float64)


def attend(q, kv, sink, scale, round_bf16=False):
    """One token: q [H, D] and its columns kv [C, D] (both float64, already
    rounded as the caller wants), sink [H] -> [H, D]: softmax over the
    columns and the sink of q kv^T scale, times the columns."""
    logits = q @ kv.T * float(scale)
    m = np.maximum(logits.max(1), sink)
    p = np.exp(logits - m[:, None])
    denominator = p.sum(1) + np.exp(sink - m)
    return (widen(p.astype(np.float32), True) if round_bf16 else p) @ kv / denominator[:, None]


def sink_attention(q, rows, cache, selection, sink, window, scale, round_bf16=False):
    """q [T, H, D], rows [R >= T, D], cache [E, D] and selection [T, k] or
    None, sink [H] -> [T, H, D] float64."""
    T, off = q.shape[0], rows.shape[0] - q.shape[0]
    qq, rr = widen(q, round_bf16), widen(rows, round_bf16)
    cc = None if cache is None else widen(cache, round_bf16)
    sink = np.asarray(sink, np.float64)
    out = np.zeros(q.shape)
    for t in range(T):
        cols = [rr[off + t + c - (window - 1)] for c in range(window) if off + t + c - (window - 1) >= 0]
        if cc is not None:
            cols += [cc[e] for e in selection[t] if 0 <= e < cc.shape[0]]
        out[t] = attend(qq[t], np.stack(cols), sink, scale, round_bf16)
    return out
