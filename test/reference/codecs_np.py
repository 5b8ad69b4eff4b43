"""The cache formats of MODEL.md, bit-exact, in NumPy (fp32 arithmetic):
FP8 E4M3 with a UE8M0 scale per 32, MXFP4 (E2M1, UE8M0 per 32), NVFP4 (E2M1,
E4M3 per 16; the E4M3 scale saturates at 448). `quantize` returns the stored codes and scale bytes; `roundtrip`
the dequantized values the model computes with; `bf16_rne` the bf16 rounding
of the GPU's bf16 weights and tile math."""
import numpy as np

f32 = np.float32
E2M1_GRID = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], f32)
E2M1_MID = (E2M1_GRID[1:] + E2M1_GRID[:-1]) / 2          # 0.25 0.75 1.25 1.75 2.5 3.5 5


def bf16_rne(x):
    """Round fp32 values to bf16 (ties to even), kept as fp32; finite inputs."""
    bits = np.asarray(x, f32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(f32)


def e4m3_rne(x):
    """Round fp32 values (|x| <= 448) to E4M3FN, ties to even."""
    x = np.asarray(x, f32)
    a = np.abs(x)
    _, exp = np.frexp(a)                                  # a = m * 2**exp, m in [0.5, 1)
    e = np.maximum(exp.astype(np.int32) - 1, -6)          # normal exponent, subnormals at -6
    quantum = np.ldexp(f32(1), e - 3).astype(f32)         # 3 mantissa bits
    return (np.sign(x) * np.round(a / quantum) * quantum).astype(f32)


def e2m1_index(x):
    """Index into E2M1_GRID of |x| (<= 6), ties to the even index; and the sign."""
    a = np.abs(np.asarray(x, f32))
    idx = np.searchsorted(E2M1_MID, a, side="left")       # midpoints strictly below
    tie = (idx < len(E2M1_MID)) & (a == E2M1_MID[np.minimum(idx, len(E2M1_MID) - 1)])
    idx = np.where(tie & (idx % 2 == 1), idx + 1, idx)
    return idx.astype(np.uint8), np.signbit(np.asarray(x, f32))


def ue8m0_scale(amax, maximum, floor):
    """2**(E(t) - 127 + [mantissa(t) != 0]) for t = max(amax, floor) * fp32(1/maximum)."""
    t = np.maximum(np.asarray(amax, f32), f32(floor)) * f32(1.0 / maximum)
    bits = t.astype(f32).view(np.uint32)
    exponent = (bits >> 23) & 0xFF
    exponent = exponent + ((bits & 0x7FFFFF) != 0)
    return exponent.astype(np.uint8)                      # the stored byte (biased exponent)


def ue8m0_value(byte):
    return np.ldexp(f32(1), byte.astype(np.int32) - 127).astype(f32)


FORMATS = {  # kind -> (element, scale, block)
    "window": ("e4m3", "ue8m0", 32),
    "index_keys": ("e2m1", "ue8m0", 32),
    "index_queries": ("e2m1", "ue8m0", 32),
    "kv": ("e2m1", "e4m3", 16),
}


def quantize(x, element, scale, block):
    """Blocks of `block` along the last dim. Returns (codes, scale_bytes, dequantized)."""
    x = np.asarray(x, f32)
    shape = x.shape
    if x.size == 0:  # e.g. a decode step that completes no compressed group
        packed = shape[:-1] + (shape[-1] if element == "e4m3" else shape[-1] // 2,)
        return (np.zeros(packed, np.uint8), np.zeros(shape[:-1] + (shape[-1] // block,), np.uint8),
                np.zeros(shape, f32))
    blocks = x.reshape(-1, block)
    amax = np.abs(blocks).max(-1)
    if scale == "ue8m0":
        maximum, floor = (448.0, 1e-4) if element == "e4m3" else (6.0, 6.0 * 2.0 ** -126)
        sbytes = ue8m0_scale(amax, maximum, floor)
        s = ue8m0_value(sbytes)
    else:  # E4M3 scale of NVFP4; saturating at 448 is our choice (MODEL.md is
        # silent): blocks with amax > 6 * 448 then clip their elements at +-6.
        s = e4m3_rne(np.minimum(np.maximum(amax, f32(6.0 * 2.0 ** -9)) / f32(6.0), f32(448)))
        sbytes = e4m3_bits(s)
    scaled = blocks / s[:, None]
    if element == "e4m3":
        q = e4m3_rne(np.clip(scaled, -448, 448))
        codes = e4m3_bits(q)
        deq = q * s[:, None]
    else:
        idx, neg = e2m1_index(np.clip(scaled, -6, 6))
        nibbles = idx | (neg.astype(np.uint8) << 3)
        codes = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)  # even in low nibble
        deq = np.where(neg, -E2M1_GRID[idx], E2M1_GRID[idx]) * s[:, None]
    return codes.reshape(shape[:-1] + (-1,)), sbytes.reshape(shape[:-1] + (-1,)), deq.reshape(shape).astype(f32)


def e4m3_bits(v):
    """E4M3FN encoding (sign, 4-bit exponent bias 7, 3-bit mantissa) of exact E4M3 values."""
    v = np.asarray(v, f32)
    a = np.abs(v)
    _, exp = np.frexp(a)
    e = np.maximum(exp.astype(np.int32) - 1, -6)
    mant = np.round(a / np.ldexp(f32(1), e - 3)).astype(np.int32)   # 8..15 normal, 0..7 subnormal
    normal = mant >= 8
    field = np.where(normal, e + 7, 0)
    mbits = np.where(normal, mant - 8, mant)
    code = (field << 3) | mbits
    code = np.where(a == 0, 0, code)
    return (code | (np.signbit(v).astype(np.int32) << 7)).astype(np.uint8)


def roundtrip(kind, x):
    element, scale, block = FORMATS[kind]
    return quantize(x, element, scale, block)[2]
