//===- Schedule.h - the compact layer-schedule syntax ----------------------===//
//
//   schedule := part ('|' part)?        encoder | decoder (V4.1)
//   part     := item*
//   item     := atom ('*' COUNT)?       repetition
//   atom     := LETTER | '(' item* ')'
//
// Letters: S sliding-only; V4.1: F Full, X Reindex, R Reuse; V4: C CSA, H HCA.
// Whitespace is optional. Before '|' compressed V4.1 layers are encoder layers
// (ratio 2), after it decoder layers (ratio 1). DeepSeek-V4.1-Flash's released
// schedule is  'S S (F R R R R R)*3 | (F R R R) (X R R R)*4'  and V4-Flash's
// 'S S (C H)*20 C'.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_PASSES_SCHEDULE_H
#define DSF_PASSES_SCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace dsf {

struct ParsedSchedule {
  std::vector<char> letters;   // one per layer
  std::vector<size_t> columns; // 1-based column of each layer's letter
  int64_t split = -1;          // index of the first layer after '|', -1 if none
};

llvm::Expected<ParsedSchedule> parseSchedule(llvm::StringRef text);

/// Prints a config's schedule in the same syntax (runs compressed with '*').
std::string formatSchedule(const std::vector<char> &letters, int64_t split);

} // namespace dsf

#endif // DSF_PASSES_SCHEDULE_H
