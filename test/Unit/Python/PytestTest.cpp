//===- PytestTest.cpp - pytest id rules -----------------------------------===//
//
// Expected strings are what CPython and pytest 8 print for the same values.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/Pytest.h"
#include "fastci/Python/Analyzer.h"
#include "gtest/gtest.h"

using namespace fastci::python;

TEST(PytestTest, FloatRepr) {
  EXPECT_EQ(formatPythonFloat(1.0), "1.0");
  EXPECT_EQ(formatPythonFloat(0.1), "0.1");
  EXPECT_EQ(formatPythonFloat(1e-5), "1e-05");
  EXPECT_EQ(formatPythonFloat(1e16), "1e+16");
  EXPECT_EQ(formatPythonFloat(1e15), "1000000000000000.0");
  EXPECT_EQ(formatPythonFloat(-2.5), "-2.5");
  EXPECT_EQ(formatPythonFloat(0.0001), "0.0001");
  EXPECT_EQ(formatPythonFloat(123.456), "123.456");
  EXPECT_EQ(formatPythonFloat(1.5e300), "1.5e+300");
}

TEST(PytestTest, AsciiEscaping) {
  EXPECT_EQ(asciiEscapeStr("plain"), "plain");
  EXPECT_EQ(asciiEscapeStr("a\tb\n"), "a\\tb\\n");
  EXPECT_EQ(asciiEscapeStr("back\\slash"), "back\\\\slash");
  EXPECT_EQ(asciiEscapeStr("\xc3\xa9"), "\\xe9");
  EXPECT_EQ(asciiEscapeStr("\xe4\xb8\xad"), "\\u4e2d");
  EXPECT_EQ(asciiEscapeStr("\xf0\x9f\x98\x80"), "\\U0001f600");
  EXPECT_EQ(asciiEscapeBytes("a\\b\xff"), "a\\b\\xff");
}

/// The node ids pytest would print for \p source saved as tests/test_x.py.
static std::vector<std::string> nodeIds(llvm::StringRef source) {
  FileSummary summary =
      analyzePythonSource(source, "tests/test_x.py", "tests.test_x");
  std::vector<std::string> ids;
  for (const TestSummary &test : summary.tests)
    ids.push_back(test.nodeId);
  return ids;
}

TEST(PytestTest, ParametrizeIds) {
  using V = std::vector<std::string>;
  EXPECT_EQ(
      nodeIds("import pytest\n"
              "@pytest.mark.parametrize('a,b', [(1, 2.0), ('x', None),"
              " (True, b'y'), (-3, object())])\n"
              "def test_a(a, b): pass\n"),
      (V{"tests/test_x.py::test_a[1-2.0]", "tests/test_x.py::test_a[x-None]",
         "tests/test_x.py::test_a[True-y]", "tests/test_x.py::test_a[-3-b3]"}));
  // Stacked decorators: the one nearest the def varies slowest.
  EXPECT_EQ(
      nodeIds("import pytest\n"
              "@pytest.mark.parametrize('x', [0, 1])\n"
              "@pytest.mark.parametrize('y', [2, 3])\n"
              "def test_b(x, y): pass\n"),
      (V{"tests/test_x.py::test_b[2-0]", "tests/test_x.py::test_b[2-1]",
         "tests/test_x.py::test_b[3-0]", "tests/test_x.py::test_b[3-1]"}));
  // ids=, pytest.param(id=) and duplicate suffixes (a later `a` skips
  // `a1`, which is taken).
  EXPECT_EQ(
      nodeIds("import pytest\n"
              "@pytest.mark.parametrize('v', [1, 2, 3], ids=['one', "
              "None, 'one'])\n"
              "def test_c(v): pass\n"
              "@pytest.mark.parametrize('v', [pytest.param(1, id='p'),"
              " 'a', 'a', 'a1', 'a1'])\n"
              "def test_d(v): pass\n"),
      (V{"tests/test_x.py::test_c[one0]", "tests/test_x.py::test_c[2]",
         "tests/test_x.py::test_c[one1]", "tests/test_x.py::test_d[p]",
         "tests/test_x.py::test_d[a0]", "tests/test_x.py::test_d[a2]",
         "tests/test_x.py::test_d[a1_0]", "tests/test_x.py::test_d[a1_1]"}));
  // Values only known at run time: one item for all cases.
  EXPECT_EQ(nodeIds("import pytest\n"
                    "CASES = [1, 2]\n"
                    "@pytest.mark.parametrize('v', CASES)\n"
                    "def test_e(v): pass\n"),
            (V{"tests/test_x.py::test_e"}));
}

TEST(PytestTest, Collection) {
  using V = std::vector<std::string>;
  EXPECT_EQ(nodeIds("class TestA:\n"
                    "    def test_m(self): pass\n"
                    "    def helper(self): pass\n"
                    "    class TestInner:\n"
                    "        def test_n(self): pass\n"
                    "class TestWithInit:\n"
                    "    def __init__(self): pass\n"
                    "    def test_never(self): pass\n"
                    "class Helper:\n"
                    "    def test_no(self): pass\n"
                    "def test_f(): pass\n"
                    "def test_f(): pass\n"
                    "import pytest\n"
                    "@pytest.fixture\n"
                    "def test_fixture(): pass\n"),
            (V{"tests/test_x.py::TestA::test_m",
               "tests/test_x.py::TestA::TestInner::test_n",
               "tests/test_x.py::test_f"}));
  // A non-test file has no tests.
  FileSummary summary =
      analyzePythonSource("def test_a(): pass\n", "tests/util.py", "util");
  EXPECT_TRUE(summary.tests.empty());
}
