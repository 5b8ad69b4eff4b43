//===- Passes.td - dsf passes ------------------------------*- tablegen -*-===//
#ifndef DSF_PASSES_TD
#define DSF_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintReport : Pass<"dsf-print-report", "::mlir::ModuleOp"> {
  let summary = "Print the KV-cache and parameter reports of every dsf.model";
  let description = [{
    Computes the reports from the IR alone: global KV bytes per token from the
    `!dsf.cache` values and their formats, window bytes per sequence from the
    `!dsf.window` values, KV- and index-source layers from the layer bodies,
    parameters from the `dsf.weight` declarations and the ops that read them.
    Prints them to stdout; the IR is unchanged.
  }];
  let options = [
    ListOption<"reports", "report", "std::string",
               "Reports to print: kv, params (default: both)">
  ];
}

def QuantizeKV : Pass<"dsf-quantize-kv", "::mlir::ModuleOp"> {
  let summary = "Give the caches their storage formats and insert the quantizers";
  let description = [{
    Inserts `dsf.quantize` where MODEL.md puts the cache quantizers and changes
    the cache and window types to the chosen formats: the window after kv_norm
    and RoPE, the index keys and the compressed KV after RoPE, and (as a
    quantize/dequantize pair) the index queries after RoPE. The rounding rules
    are those of the formats (MODEL.md "Rounding rules"). `released` chooses
    what the model ships with: V4.1 FP8 window (UE8M0 per 32), NVFP4 KV, MXFP4
    index keys and queries; V4 FP8 KV and window with bf16 rope channels and
    MXFP4 index keys. Re-running the pass with other formats replaces them; the
    KV report follows the types.

    Formats: f32 (off), bf16, fp8 (E4M3, UE8M0 per 32), fp8-bf16rope (V4's:
    FP8 with UE8M0 per 64 on the non-rope channels, rope channels in bf16, rows
    padded to 8 bytes), nvfp4 (E2M1, E4M3 per 16), mxfp4 (E2M1, UE8M0 per 32).
  }];
  let options = [
    Option<"window", "window", "std::string", "\"released\"", "Window format">,
    Option<"kv", "kv", "std::string", "\"released\"", "Compressed-KV format">,
    Option<"indexKeys", "index-keys", "std::string", "\"released\"", "Index-key format">,
    Option<"indexQueries", "index-queries", "std::string", "\"released\"",
           "Index-query rounding: mxfp4 or f32">,
    Option<"off", "off", "bool", "false", "Store every cache in f32 (no quantizers)">
  ];
}

def ScheduleCsa2 : Pass<"dsf-schedule-csa2", "::mlir::ModuleOp"> {
  let summary = "Materialize the CSA2 layer schedule: Full / Reindex / Reuse and their sharing";
  let description = [{
    Takes a V4.1 model whose compressed layers each compute their own
    compressed KV, index keys and top-k (as imported) and applies a schedule:
    a Full layer yields its cache, keys and selection; a Reindex layer keeps its
    own indexer query and top-k but scores the index keys of its group's Full
    layer and attends over its cache; a Reuse layer reads the cache and the very
    same selection of the nearest preceding index source of its ratio. What a
    demoted layer no longer computes is erased, with the weights only it read,
    so nothing is computed twice.

    The schedule is the model's `schedule` attribute (the config's) unless the
    `schedule` option gives one (syntax: README, "The schedule syntax"); its
    encoder/decoder split must be the model's (that is fixed at import, by
    `dsf-compile --schedule`).

    With `kv-budget` the pass chooses the schedule itself:
    1. every ratio (encoder 2, decoder 1) gets one Full layer at its first
       compressed layer;
    2. while the budget allows, it adds a Full layer to the ratio whose next
       Full layer costs the fewest global-KV bytes per token (ties: the ratio
       with more layers per Full layer); each ratio's Full layers are spread
       evenly over its compressed layers (k·n/f);
    3. with `max-index-sources`, the index sources left after the Full layers
       become Reindex layers, decoder first (its Reindex layers score only the
       candidate pool), each added to the largest group and spread evenly in it.
    The result is recorded in `schedule` and shown by the KV report. With a
    budget of 890 bytes and 8 index sources this chooses DeepSeek-V4.1-Flash's
    released schedule.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"\"",
           "Schedule to apply instead of the model's (e.g. 'S S (F R R R R R)*3 | ...')">,
    Option<"kvBudget", "kv-budget", "double", "0",
           "Choose a schedule within this many global-KV bytes per token">,
    Option<"maxIndexSources", "max-index-sources", "int64_t", "0",
           "With kv-budget: at most this many index-source layers (0: only the Full layers)">
  ];
}

def HierarchicalIndexer : Pass<"dsf-hierarchical-indexer", "::mlir::ModuleOp"> {
  let summary = "Materialize the candidate pool and restrict later index sources to it";
  let description = [{
    On the candidate-source layer (a decoder Full layer), the indexer also
    forms the candidate pool from its own masked scores: blocks of
    `block-size` consecutive entries scored by their max, the block holding the
    newest visible entry always kept, the best `blocks` blocks. Every later
    Reindex layer of the decoder scores only the entries of that pool. The
    defaults are the model's `candidate_pool` attribute (the config's; 2048 x 8
    for Flash); `blocks=-1` removes the pool.
  }];
  let options = [
    Option<"blocks", "blocks", "int64_t", "0", "Blocks in the pool (0: the model's; -1: no pool)">,
    Option<"blockSize", "block-size", "int64_t", "0", "Entries per block (0: the model's)">,
    Option<"source", "source", "int64_t", "-1", "Candidate-source layer (-1: the model's)">
  ];
}

def PlanCache : Pass<"dsf-plan-cache", "::mlir::ModuleOp"> {
  let summary = "Give every cache a tier and a lifetime";
  let description = [{
    Attaches a `#dsf.cache_plan` to every cache and window write: global
    caches live on the device while their sequence is live and are persisted
    to the SSD prefix cache (`global-ttl` seconds); windows live on the device
    and go to the host-DRAM pool when their sequence is idle (`window-ttl`
    seconds), never to SSD (they are rebuilt by replay). The artifact carries
    the plans to the runtime; the tier report reads them.
  }];
  let options = [
    Option<"windowTtl", "window-ttl", "int64_t", "300", "Seconds an idle window stays in host DRAM">,
    Option<"globalTtl", "global-ttl", "int64_t", "14400", "Seconds a persisted prefix stays on SSD">,
    Option<"persist", "persist", "bool", "true", "Persist global caches to the SSD tier">
  ];
}

def FuseMhc : Pass<"dsf-fuse-mhc", "::mlir::ModuleOp"> {
  let summary = "Fuse each mHC site into one pass over the residual streams";
  let description = [{
    At every site, fuses the residual update (post, comb), the next site's
    coefficient prediction over the freshly updated streams (norm, projection,
    sigmoid / softmax / Sinkhorn) and, where the math allows, the next block's
    input collapse into one `dsf.mhc.fused_update`. In V4.1 the collapse uses the
    previous site's pre, so it fuses; in V4 it needs the coefficients computed in
    the same pass and stays a separate op, which keeps the math exact.

    The site between two layers (the FFN update of layer l, the attention
    coefficients and collapse of layer l+1) spans two dsf.layer regions: with
    `cross-layer` the next layer's coefficient prediction and collapse, which
    read only its inputs, move into the layer that updates the streams and are
    passed on as layer results (V4.1's final collapse moves into the last layer).
    Inputs and results nobody reads any more are dropped.
  }];
  let options = [
    Option<"crossLayer", "cross-layer", "bool", "true",
           "Also fuse the sites between consecutive layers">
  ];
}

def HoistDecoderKV : Pass<"dsf-hoist-decoder-kv", "::mlir::ModuleOp"> {
  let summary = "Separate prefill and decode; optionally run the decoder over a tail of the prompt";
  let description = [{
    Replaces @forward with two entry points, @prefill and @decode (every layer
    over the new tokens). For prefill, `prefill` chooses how much of the
    decoder runs:
    * `full`: every layer over every token (the reference, exact);
    * `exact-tail`: the decoder's first Full layer is split into its
      KV-producing part (compressor, index keys, window), which still runs over
      every token, and the rest; the rest and every later layer run over the
      last W + (decoder layers - 1)(W - 1) tokens (2541 in Flash), exact for
      those tokens' logits and for the decode state;
    * `bounded-replay`: the same over the last W tokens, the paper's
      O(N·L) -> O(N·L/2 + W·L/2), approximate (the earliest replayed tokens see
      truncated windows).
    @prefill then returns the logits of those last tokens; `dsf.prefill` and
    `dsf.tail_tokens` on it record the mode.
  }];
  let options = [
    Option<"prefill", "prefill", "std::string", "\"full\"",
           "full, exact-tail or bounded-replay">
  ];
}

def ThreadState : Pass<"dsf-thread-state", "::mlir::ModuleOp"> {
  let summary = "Make a sequence's state explicit: what one call leaves for the next";
  let description = [{
    Every entry point yields, after its logits, the state its sequence needs
    to go on: each window's last size - 1 rows (`dsf.window.retain`), each
    global cache written, and each compressor's carried rows. An entry point
    without `dsf.prefill` continues a sequence: it also takes that state, in
    the same order, as arguments after its token inputs, and appends to it
    (`after`, `carry`). Attention and indexer ops get their queries'
    positions (`at`), which say what a continued sequence's caches show them.
    The entry point's `dsf.state` names the slots ("layers.4.window",
    "layers.4.kv", "layers.2.attn.compressor.carry"); every entry point of a
    model must name the same ones. Runs after the transforming passes: they
    see sequences as a whole.

    With `replay` (the default) it also adds `@replay`: `@decode` that reads
    the global caches and carries it is given without extending them. Run
    over the last tokens of a sequence whose global KV came back from the
    prefix cache, with empty windows, it rebuilds the windows.
  }];
  let options = [
    Option<"replay", "replay", "bool", "true", "Add @replay (window rebuild over restored global caches)">
  ];
}

def BatchDecode : Pass<"dsf-batch-decode", "::mlir::ModuleOp"> {
  let summary = "Add @batch_decode: one decode step for a batch of sequences, a token each";
  let description = [{
    Clones @decode (its state threaded by dsf-thread-state) as
    @batch_decode, marked `dsf.batched`: the same layers, read with another
    convention. Token t of a call is the next token of its own sequence, at
    positions[t]; each state argument holds one slot per sequence, which the
    call continues. Everything but the sequence ops is per token already;
    the sequence ops (window and cache writes, the compressors, entry
    positions, the indexer, attention) act on token t's own sequence. The
    lowering decides how the slots are stored (dsf-to-linalg: a ring per
    window, pages per cache, each updated in place).

    Every write must continue a prior, every pooling compressor a carry,
    every indexer and attention have positions; an op that combines the
    tokens of a call (dsf.take_last) is an error.
  }];
}

#endif // DSF_PASSES_TD
