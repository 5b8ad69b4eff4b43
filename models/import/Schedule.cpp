//===- Schedule.cpp - parsing and applying layer schedules -----------------===//
#include "models/import/Schedule.h"
#include "models/import/ModelConfig.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsf {
namespace {

constexpr int64_t kMaxLayers = 100000;

class ScheduleParser {
public:
  explicit ScheduleParser(StringRef text) : text(text) {}

  Expected<ParsedSchedule> parse() {
    if (Error e = parseSequence(out.letters, out.columns, /*depth=*/0))
      return std::move(e);
    skipSpace();
    if (peek() == '|') {
      ++pos;
      out.split = out.letters.size();
      if (Error e = parseSequence(out.letters, out.columns, 0))
        return std::move(e);
      skipSpace();
      if (peek() == '|')
        return error("a schedule has at most one '|' (encoder | decoder)");
    }
    if (pos < text.size())
      return error(formatv("unexpected '{0}'", text[pos]).str());
    if (out.letters.empty())
      return error("the schedule is empty");
    return std::move(out);
  }

private:
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  void skipSpace() {
    while (pos < text.size() && isSpace(text[pos]))
      ++pos;
  }
  Error error(const Twine &msg) const { return errorAt(pos, msg); }
  Error errorAt(size_t at, const Twine &msg) const {
    std::string caret(at + 2, ' ');
    caret += '^';
    return createStringError(inconvertibleErrorCode(),
                             "--schedule, column " + Twine(at + 1) + ": " + msg + "\n  " + text +
                                 "\n" + caret);
  }

  Error parseSequence(std::vector<char> &letters, std::vector<size_t> &columns, int depth) {
    while (true) {
      skipSpace();
      char c = peek();
      if (c == '\0' || c == '|' || c == ')')
        return Error::success();
      std::vector<char> itemLetters;
      std::vector<size_t> itemColumns;
      size_t itemStart = pos;
      if (c == '(') {
        ++pos;
        if (Error e = parseSequence(itemLetters, itemColumns, depth + 1))
          return e;
        skipSpace();
        if (peek() != ')')
          return errorAt(itemStart, "this '(' is never closed");
        ++pos;
        if (itemLetters.empty())
          return errorAt(itemStart, "empty group '()'");
      } else if (StringRef("SFXRCH").contains(c)) {
        itemLetters.push_back(c);
        itemColumns.push_back(pos + 1);
        ++pos;
      } else {
        return error(formatv("expected a layer letter (S, F, X, R for V4.1; S, C, H for V4), "
                             "'(' or '|', got '{0}'", c).str());
      }
      int64_t count = 1;
      skipSpace();
      if (peek() == '*') {
        ++pos;
        skipSpace();
        size_t start = pos;
        while (pos < text.size() && isDigit(text[pos]))
          ++pos;
        if (start == pos)
          return error("expected a repeat count after '*'");
        if (text.substr(start, pos - start).getAsInteger(10, count) || count < 1 ||
            count > kMaxLayers)
          return errorAt(start, "the repeat count must be between 1 and 100000");
      }
      for (int64_t k = 0; k < count; ++k) {
        letters.insert(letters.end(), itemLetters.begin(), itemLetters.end());
        columns.insert(columns.end(), itemColumns.begin(), itemColumns.end());
        if ((int64_t)letters.size() > kMaxLayers)
          return errorAt(itemStart, "the schedule describes more than 100000 layers");
      }
    }
  }

  StringRef text;
  size_t pos = 0;
  ParsedSchedule out;
};

} // namespace

Expected<ParsedSchedule> parseSchedule(StringRef text) { return ScheduleParser(text).parse(); }

std::string formatSchedule(const std::vector<char> &letters, int64_t split) {
  // Greedy: at each position, the shortest period (up to 8) that repeats most.
  auto formatPart = [](const std::vector<char> &l, size_t begin, size_t end) {
    std::string out;
    size_t i = begin;
    while (i < end) {
      size_t bestPeriod = 1, bestCount = 1;
      for (size_t p = 1; p <= 8 && i + p <= end; ++p) {
        size_t count = 1;
        while (i + (count + 1) * p <= end &&
               std::equal(l.begin() + i, l.begin() + i + p, l.begin() + i + count * p))
          ++count;
        if (count > 1 && count * p > bestCount * bestPeriod) {
          bestPeriod = p;
          bestCount = count;
        }
      }
      if (!out.empty())
        out += ' ';
      if (bestCount > 1) {
        std::string group;
        for (size_t k = 0; k < bestPeriod; ++k)
          group += std::string(k ? " " : "") + l[i + k];
        out += (bestPeriod > 1 ? "(" + group + ")" : group) + "*" + std::to_string(bestCount);
        i += bestPeriod * bestCount;
      } else {
        out += l[i];
        ++i;
      }
    }
    return out;
  };
  if (split < 0)
    return formatPart(letters, 0, letters.size());
  return formatPart(letters, 0, split) + " | " + formatPart(letters, split, letters.size());
}

Error applySchedule(ModelConfig &c, StringRef text) {
  Expected<ParsedSchedule> parsed = parseSchedule(text);
  if (!parsed)
    return parsed.takeError();
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), "--schedule: " + msg);
  };
  if ((int64_t)parsed->letters.size() != c.numLayers)
    return fail("describes " + Twine(parsed->letters.size()) + " layers but " + c.source +
                " has num_hidden_layers = " + Twine(c.numLayers));
  bool v41 = c.family == Family::V41;
  if (!v41 && parsed->split >= 0)
    return fail("a deepseek_v4 model has no encoder/decoder split ('|')");
  for (auto [i, letter] : llvm::enumerate(parsed->letters)) {
    bool ok = letter == 'S' || (v41 ? StringRef("FXR").contains(letter)
                                    : StringRef("CH").contains(letter));
    if (!ok)
      return fail(formatv("column {0}: layer {1} is '{2}', but a {3} model takes {4}",
                          parsed->columns[i], i, letter, v41 ? "deepseek_v41" : "deepseek_v4",
                          v41 ? "S, F, X or R" : "S, C or H").str());
  }

  int64_t split = v41 ? (parsed->split >= 0 ? parsed->split : c.numLayers) : -1;
  for (auto [i, letter] : llvm::enumerate(parsed->letters)) {
    LayerSpec &l = c.layers[i];
    bool decoder = v41 && (int64_t)i >= split;
    switch (letter) {
    case 'S': l.role = LayerRole::Sliding; l.ratio = 0; break;
    case 'C': l.role = LayerRole::Csa; l.ratio = c.csaRatio; break;
    case 'H': l.role = LayerRole::Hca; l.ratio = c.hcaRatio; break;
    case 'F': l.role = LayerRole::Full; l.ratio = decoder ? 1 : 2; break;
    case 'X': l.role = LayerRole::Reindex; l.ratio = decoder ? 1 : 2; break;
    case 'R': l.role = LayerRole::Reuse; l.ratio = decoder ? 1 : 2; break;
    }
  }
  if (v41) {
    c.decoderStart = split;
    // The candidate pool stays on the config's source while it is still a
    // decoder Full layer; otherwise it moves to the first decoder Full layer.
    if (c.candidateSource >= 0) {
      const LayerSpec &src = c.layers[c.candidateSource];
      if (src.role != LayerRole::Full || src.ratio != 1) {
        int64_t moved = -1;
        for (int64_t i = split; i < c.numLayers && moved < 0; ++i)
          if (c.layers[i].role == LayerRole::Full)
            moved = i;
        c.notes.push_back(moved >= 0
                              ? formatv("the candidate pool moves from layer {0} to layer {1}, the "
                                        "first Full layer of the decoder in this schedule",
                                        c.candidateSource, moved).str()
                              : formatv("the candidate pool (layer {0}) is dropped: this schedule "
                                        "has no Full layer in the decoder", c.candidateSource).str());
        c.candidateSource = moved;
      }
    }
  }
  std::string source = c.source;
  c.source = "--schedule '" + text.str() + "'";
  Error e = validateModelConfig(c);
  c.source = source;
  return e;
}

} // namespace dsf
