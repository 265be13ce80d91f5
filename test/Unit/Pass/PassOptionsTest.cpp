//===- PassOptionsTest.cpp - Typed pass options ---------------------------===//
//
// Parsing and printing of every option type, defaults, and the messages for
// bad values, through PassOptions::parseFromString.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassOptions.h"
#include "fastci/Support/Diagnostics.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {
enum class Color { Red, Green };

struct AllOptions : PassOptions {
  Option<int> count{*this, "count", llvm::cl::desc("an int"),
                    llvm::cl::init(4)};
  Option<unsigned> jobs{*this, "jobs", llvm::cl::init(0u)};
  Option<double> ratio{*this, "ratio", llvm::cl::init(0.25)};
  Option<bool> flag{*this, "flag"};
  Option<std::string> name{*this, "name", llvm::cl::init("x")};
  ListOption<std::string> files{*this, "files"};
  ListOption<int> sizes{*this, "sizes"};
  Option<Color> color{*this, "color", llvm::cl::init(Color::Red),
                      llvm::cl::values(clEnumValN(Color::Red, "red", ""),
                                       clEnumValN(Color::Green, "green", ""))};
};

/// Parses \p text into \p options, returning the diagnostics printed.
std::string parse(AllOptions &options, llvm::StringRef text, bool &ok) {
  std::string output;
  llvm::raw_string_ostream os(output);
  DiagnosticEngine diag(&os);
  ok = succeeded(options.parseFromString(text, diag));
  return output;
}

std::string print(const PassOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  return text;
}

TEST(PassOptionsTest, Defaults) {
  AllOptions options;
  EXPECT_EQ(options.count, 4);
  EXPECT_FALSE(options.flag);
  EXPECT_EQ(options.name.getValue(), "x");
  EXPECT_TRUE(options.files.empty());
  EXPECT_EQ(options.color, Color::Red);
  EXPECT_FALSE(options.count.hasValue());
  EXPECT_EQ(print(options), "{count=4,jobs=0,ratio=0.25,flag=false,name=x,"
                            "files={},sizes={},color=red}");
}

TEST(PassOptionsTest, ParsesEveryType) {
  AllOptions options;
  bool ok;
  std::string errors = parse(options,
                             "count=-3, jobs=8 ratio=1e-3,flag,name=\"a, b\","
                             "files={x.py,'y z.py'},sizes={1,2},color=green",
                             ok);
  ASSERT_TRUE(ok) << errors;
  EXPECT_EQ(options.count, -3);
  EXPECT_EQ(options.jobs, 8u);
  EXPECT_DOUBLE_EQ(options.ratio, 1e-3);
  EXPECT_TRUE(options.flag);
  EXPECT_EQ(options.name.getValue(), "a, b");
  EXPECT_EQ(
      std::vector<std::string>(options.files.begin(), options.files.end()),
      (std::vector<std::string>{"x.py", "y z.py"}));
  EXPECT_EQ(std::vector<int>(options.sizes.begin(), options.sizes.end()),
            (std::vector<int>{1, 2}));
  EXPECT_EQ(options.color, Color::Green);
  EXPECT_TRUE(options.count.hasValue());
}

TEST(PassOptionsTest, PrintedOptionsParseBack) {
  AllOptions options;
  bool ok;
  parse(options, "{name=\"quo\\\"te{}\",files={\"a,b\",c},ratio=0.1,count=7}",
        ok);
  ASSERT_TRUE(ok);
  std::string printed = print(options);
  AllOptions reparsed;
  std::string errors = parse(reparsed, printed, ok);
  ASSERT_TRUE(ok) << errors;
  EXPECT_EQ(print(reparsed), printed);
  EXPECT_EQ(reparsed.name.getValue(), "quo\"te{}");
  EXPECT_EQ(reparsed.files.getValue()[0], "a,b");
}

TEST(PassOptionsTest, SingleListElementNeedsNoBraces) {
  AllOptions options;
  bool ok;
  parse(options, "files=only.py", ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(options.files.size(), 1u);
}

struct BadValueCase {
  const char *text;
  const char *message;
};

class BadValueTest : public ::testing::TestWithParam<BadValueCase> {};

TEST_P(BadValueTest, IsReportedAtItsPosition) {
  AllOptions options;
  bool ok;
  std::string errors = parse(options, GetParam().text, ok);
  EXPECT_FALSE(ok);
  EXPECT_NE(errors.find(GetParam().message), std::string::npos) << errors;
}

INSTANTIATE_TEST_SUITE_P(
    PassOptionsTest, BadValueTest,
    ::testing::Values(
        BadValueCase{"count=abc", "1:7: error: invalid value 'abc' for option "
                                  "'count' of options: expected an integer"},
        BadValueCase{"count=99999999999", "expected an integer in"},
        BadValueCase{"jobs=-1", "expected a non-negative integer"},
        BadValueCase{"ratio=fast", "expected a number"},
        BadValueCase{"ratio=nan", "expected a number"},
        BadValueCase{"flag=maybe", "expected 'true' or 'false'"},
        BadValueCase{"color=blue", "expected one of 'red', 'green'"},
        BadValueCase{"sizes={1,x}", "1:10: error: invalid value 'x'"},
        BadValueCase{"cout=1", "has no option 'cout'; did you mean 'count'?"},
        BadValueCase{"count", "option 'count' of options needs a value"},
        BadValueCase{"count=1,count=2", "option 'count' of options is given "
                                        "twice"},
        BadValueCase{"name=\"open", "unterminated string"},
        BadValueCase{"files={a,b", "unterminated '{'"},
        BadValueCase{"files={a,}", "expected a list element after ','"},
        BadValueCase{"count=", "expected a value for option 'count'"},
        BadValueCase{"=3", "expected an option name"},
        BadValueCase{"{count=1} extra", "unexpected 'e' after the options"}));
} // namespace
