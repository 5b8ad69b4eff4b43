//===- batch.h - sequences decoded together, a token each a step ----------===//
//
// A server decodes many sequences at once: one step runs the next token of
// each, so the weights are read once for all of them. The artifact's
// @batch_decode (dsf-batch-decode) is that step. Each sequence's state lives
// in a slot of fixed shape, which the step updates in place:
//
//  * its windows and its compressors' carries as rings, [slots, rows,
//    width], position p at row p mod rows;
//  * its caches' entries in pages shared by every sequence of the batch,
//    [pages, E, width] (E entries, page-tokens tokens), named by a page table
//    per cache ratio, [sequences, columns]. Page 0 of every pool is all
//    zeros and never given out: it fills a table's unused cells.
//
// The sequences are the slots [0, size()): a released sequence's slot takes
// the last one's. The buffers stay where they are from one step to the next
// (on a GPU in device memory), so a step with the same number of sequences
// and table columns makes the same launches on the same buffers, and on a
// GPU the batch captures it once as a CUDA graph and replays it
// (DSF_CUDA_GRAPHS=0: launched as it is every step).
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_BATCH_H
#define DSF_RUNTIME_BATCH_H

#include "dsf/host_model.h"

#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

class Batch {
public:
  struct Stats {
    uint64_t steps = 0;
    uint64_t graphCaptures = 0;   // steps captured as a new CUDA graph
    uint64_t graphReplays = 0;    // steps run as a replay (the captured ones included)
    int64_t stateBytes = 0;       // the slots' and pages' buffers
    int64_t pageBytes = 0;        // of which the caches' pages (packed: their formats' rows)
  };

  /// Room for `slots` sequences of up to `maxTokens` tokens each, for an
  /// artifact with @batch_decode. Fails with the reason (no such entry
  /// point, out of memory, bad sizes).
  static std::unique_ptr<Batch> create(const HostModel &model, int64_t slots, int64_t maxTokens,
                                       std::string &error);
  ~Batch();

  int64_t size() const;
  int64_t capacity() const;
  /// The length (tokens so far) of slot i's sequence.
  int64_t length(int64_t slot) const;

  /// Copies `sequence` (prefilled, its state as @prefill or @decode leave
  /// it, restored state placed first) into slot size(). The sequence is not
  /// changed otherwise; it may be admitted again (a prompt shared by many).
  bool admit(Sequence &sequence, std::string &error);

  /// Slot `slot`'s sequence, in @decode's form (for the cache tiers, or to
  /// go on alone); its slot then holds the last slot's sequence.
  bool release(int64_t slot, Sequence &out, std::string &error);

  /// One step: ids[i] is slot i's next token, for every slot; `logits` get
  /// [size(), vocab]. On failure the sequences are as before it.
  bool step(const std::vector<int32_t> &ids, std::vector<float> &logits, std::string &error);

  const Stats &stats() const;

private:
  Batch();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_BATCH_H
