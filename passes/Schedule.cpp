//===- Schedule.cpp - parsing and applying layer schedules -----------------===//
#include "passes/Schedule.h"

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
  // Groups start at the layers that compute something others read (F, X, C):
  // "S S (F R R R R R)*3 | (F R R R) (X R R R)*4", as people write schedules.
  auto formatPart = [](const std::vector<char> &l, size_t begin, size_t end) {
    std::vector<std::string> groups;
    for (size_t i = begin; i < end; ++i) {
      bool starts = l[i] == 'F' || l[i] == 'X' || l[i] == 'C';
      bool inGroup = !groups.empty() && groups.back().find_first_of("FXC") != std::string::npos;
      if (groups.empty() || starts || (!inGroup && groups.back().back() != l[i]))
        groups.emplace_back();
      groups.back() += l[i];
    }
    // Letters of a group, runs of six or more as "R*n".
    auto render = [](const std::string &g) {
      std::string out;
      for (size_t i = 0; i < g.size();) {
        size_t j = i;
        while (j < g.size() && g[j] == g[i])
          ++j;
        std::string piece = j - i >= 6 ? std::string(1, g[i]) + "*" + std::to_string(j - i) : "";
        for (size_t k = i; piece.empty() && k < j; ++k)
          out += std::string(out.empty() ? "" : " ") + g[k];
        if (!piece.empty())
          out += (out.empty() ? "" : " ") + piece;
        i = j;
      }
      return out;
    };
    std::string out;
    for (size_t i = 0; i < groups.size();) {
      size_t count = 1;
      while (i + count < groups.size() && groups[i + count] == groups[i])
        ++count;
      const std::string &g = groups[i];
      bool uniform = g.find_first_not_of(g[0]) == std::string::npos;
      std::string piece;
      if (uniform && count == 1 && g.size() >= 3)
        piece = std::string(1, g[0]) + "*" + std::to_string(g.size());
      else if (count == 1)
        piece = g.size() == 1 || uniform ? render(g) : "(" + render(g) + ")";
      else
        piece = (g.size() == 1 ? render(g) : "(" + render(g) + ")") + "*" + std::to_string(count);
      out += (out.empty() ? "" : " ") + piece;
      i += count;
    }
    return out;
  };
  if (split < 0)
    return formatPart(letters, 0, letters.size());
  std::string head = formatPart(letters, 0, split), tail = formatPart(letters, split, letters.size());
  return head.empty() ? "| " + tail : head + " | " + tail;
}

} // namespace dsf
