//===- ScheduleTest.cpp - the layer-schedule syntax ------------------------===//
#include "passes/Schedule.h"

#include "gtest/gtest.h"

using namespace dsf;

namespace {
std::string letters(const ParsedSchedule &s) { return std::string(s.letters.begin(), s.letters.end()); }

TEST(ScheduleTest, ReleasedV41Schedule) {
  auto s = parseSchedule("S S (F R R R R R)*3 | (F R R R) (X R R R)*4");
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  ASSERT_EQ(s->letters.size(), 40u);
  EXPECT_EQ(s->split, 20);
  for (int full : {2, 8, 14, 20})
    EXPECT_EQ(s->letters[full], 'F') << full;
  for (int reindex : {24, 28, 32, 36})
    EXPECT_EQ(s->letters[reindex], 'X') << reindex;
  EXPECT_EQ(s->letters[0], 'S');
  EXPECT_EQ(s->letters[39], 'R');
}

TEST(ScheduleTest, NestingRepetitionAndAdjacentLetters) {
  auto s = parseSchedule("(S (F R)*2)*2");
  ASSERT_TRUE(bool(s));
  EXPECT_EQ(letters(*s), "SFRFRSFRFR");
  EXPECT_EQ(s->split, -1);
  auto t = parseSchedule("SSCH|");
  ASSERT_TRUE(bool(t));
  EXPECT_EQ(letters(*t), "SSCH");
  EXPECT_EQ(t->split, 4);
  EXPECT_EQ(t->columns, (std::vector<size_t>{1, 2, 3, 4}));
}

TEST(ScheduleTest, ErrorsNameTheColumn) {
  struct Case { const char *text, *message; };
  for (Case c : {Case{"S Q", "--schedule, column 3: expected a layer letter"},
                 Case{"S (F R", "--schedule, column 3: this '(' is never closed"},
                 Case{"F*0", "--schedule, column 3: the repeat count must be between 1 and 100000"},
                 Case{"F*", "--schedule, column 3: expected a repeat count after '*'"},
                 Case{"F | R | R", "--schedule, column 7: a schedule has at most one '|'"},
                 Case{"", "--schedule, column 1: the schedule is empty"},
                 Case{"S ()", "--schedule, column 3: empty group '()'"},
                 Case{"S )", "--schedule, column 3: unexpected ')'"},
                 Case{"(F)*99999 (R)*2", "the schedule describes more than 100000 layers"}}) {
    auto s = parseSchedule(c.text);
    ASSERT_FALSE(bool(s)) << c.text;
    std::string message = llvm::toString(s.takeError());
    EXPECT_NE(message.find(c.message), std::string::npos) << c.text << " -> " << message;
  }
}

TEST(ScheduleTest, FormatParsesBackToTheSameLayers) {
  for (const char *text : {"S S (F R R R R R)*3 | (F R R R) (X R R R)*4", "S S (C H)*20 C",
                           "F R X R S", "| F R R"}) {
    auto s = parseSchedule(text);
    ASSERT_TRUE(bool(s)) << text;
    std::string formatted = formatSchedule(s->letters, s->split);
    auto again = parseSchedule(formatted);
    ASSERT_TRUE(bool(again)) << formatted;
    EXPECT_EQ(letters(*again), letters(*s)) << formatted;
    EXPECT_EQ(again->split, s->split) << formatted;
  }
  for (const char *canonical : {"S S (C H)*20 C", "S S (F R R R R R)*3 | (F R R R) (X R R R)*4",
                                "S*3 (F R)*2 | (F R R R)"}) {
    auto s = parseSchedule(canonical);
    EXPECT_EQ(formatSchedule(s->letters, s->split), canonical);
  }
}
} // namespace
