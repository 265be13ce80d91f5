//===- PytestTest.cpp - pytest id rules -----------------------------------===//
//
// Expected strings are what CPython and pytest (7.2 to 8.x alike) print for
// the same values.
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
/// Replaces each summary by its copy read back from the cache format, as a
/// later run would see it.
static void roundTripThroughCache(std::vector<FileSummary> &summaries) {
  for (FileSummary &summary : summaries) {
    llvm::Expected<FileSummary> copy =
        deserializeSummary(serializeSummary(summary));
    ASSERT_TRUE(static_cast<bool>(copy));
    summary = std::move(*copy);
  }
}

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
  // ids=, pytest.param(id=) and duplicate suffixes. Duplicates ending in a
  // digit are suffixed differently by pytest 7 (`a10`) and 8 (`a1_0`): one
  // item stands for them.
  EXPECT_EQ(nodeIds("import pytest\n"
                    "@pytest.mark.parametrize('v', [1, 2, 3], ids=['one', "
                    "None, 'one'])\n"
                    "def test_c(v): pass\n"
                    "@pytest.mark.parametrize('v', [pytest.param(1, id='p'),"
                    " 'a', 'a', 'b'])\n"
                    "def test_d(v): pass\n"
                    "@pytest.mark.parametrize('v', ['a1', 'a1'])\n"
                    "def test_e(v): pass\n"
                    "@pytest.mark.parametrize('v', ['a', 'a', 'a0'])\n"
                    "def test_f(v): pass\n"),
            (V{"tests/test_x.py::test_c[one0]", "tests/test_x.py::test_c[2]",
               "tests/test_x.py::test_c[one1]", "tests/test_x.py::test_d[p]",
               "tests/test_x.py::test_d[a0]", "tests/test_x.py::test_d[a1]",
               "tests/test_x.py::test_d[b]", "tests/test_x.py::test_e",
               "tests/test_x.py::test_f"}));
  // Names and expressions whose value is not known are not guessed; torch
  // dtypes and containers have no __name__; float('inf') is evaluated.
  EXPECT_EQ(nodeIds("import pytest, torch\n"
                    "@pytest.mark.parametrize('v', [torch.float16, [1], "
                    "float('-inf'), object()])\n"
                    "def test_g(v): pass\n"
                    "@pytest.mark.parametrize('v', [np.float32])\n"
                    "def test_h(v): pass\n"
                    "@pytest.mark.parametrize('v', [2**3])\n"
                    "def test_i(v): pass\n"
                    "@pytest.mark.parametrize('a,b', [])\n"
                    "def test_j(a, b): pass\n"),
            (V{"tests/test_x.py::test_g[v0]", "tests/test_x.py::test_g[v1]",
               "tests/test_x.py::test_g[-inf]", "tests/test_x.py::test_g[v3]",
               "tests/test_x.py::test_h", "tests/test_x.py::test_i",
               "tests/test_x.py::test_j[a0-b0]"}));
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

TEST(PytestTest, ClassBases) {
  using V = std::vector<std::string>;
  EXPECT_EQ(parseClassBases("class A(B, m.C, metaclass=M): pass", 0),
            (V{"B", "m.C"}));
  EXPECT_EQ(parseClassBases("class A: pass", 0), V{});
  EXPECT_EQ(parseClassBases("class A(\n    B,  # a comment, with (\n"
                            "    Generic[T],\n    f(x),\n    *bases,\n):",
                            0),
            (V{"B", "Generic", "", ""}));
  EXPECT_EQ(parseClassBases("x = 1\nclass A[T](B): pass", 6), V{"B"});
}

TEST(PytestTest, InheritanceInOneFile) {
  using V = std::vector<std::string>;
  // Inherited methods come first (reverse MRO), overrides keep the
  // subclass's place, a Test* base is collected on its own too; __init__
  // and __test__ = False are inherited.
  EXPECT_EQ(
      nodeIds("class Base:\n"
              "    def test_a(self): pass\n"
              "    def test_b(self): pass\n"
              "class TestX(Base):\n"
              "    def test_b(self): pass\n"
              "    def test_c(self): pass\n"
              "class TestBase:\n"
              "    def test_t(self): pass\n"
              "class TestY(TestBase): pass\n"
              "class Init:\n"
              "    def __init__(self): pass\n"
              "class TestZ(Init):\n"
              "    def test_z(self): pass\n"
              "class Off:\n"
              "    __test__ = False\n"
              "    def test_off(self): pass\n"
              "class TestOff(Off):\n"
              "    def test_o(self): pass\n"
              "class TestOn(Off):\n"
              "    __test__ = True\n"),
      (V{"tests/test_x.py::TestX::test_a", "tests/test_x.py::TestX::test_b",
         "tests/test_x.py::TestX::test_c", "tests/test_x.py::TestBase::test_t",
         "tests/test_x.py::TestY::test_t",
         "tests/test_x.py::TestOn::test_off"}));
  // A base from another module: until linked, the class stands for what it
  // inherits with an item of its own.
  FileSummary summary = analyzePythonSource("from .common import Base\n"
                                            "class TestX(Base):\n"
                                            "    def test_own(self): pass\n",
                                            "tests/test_x.py", "tests.test_x");
  ASSERT_EQ(summary.tests.size(), 2u);
  EXPECT_EQ(summary.tests[0].nodeId, "tests/test_x.py::TestX");
  EXPECT_TRUE(summary.tests[0].inheritedUnknown);
  EXPECT_EQ(summary.tests[1].nodeId, "tests/test_x.py::TestX::test_own");
}

TEST(PytestTest, LinkAcrossModules) {
  std::vector<SourceFile> files = {{"tests/__init__.py", "tests"},
                                   {"tests/common.py", "tests.common"},
                                   {"tests/test_x.py", "tests.test_x"}};
  std::vector<FileSummary> summaries = {
      analyzePythonSource("from .common import Base\n", files[0].path,
                          files[0].moduleName),
      analyzePythonSource("import pytest\n"
                          "class Base:\n"
                          "    @pytest.mark.parametrize('n', [1, 2])\n"
                          "    def test_a(self, n): pass\n",
                          files[1].path, files[1].moduleName),
      analyzePythonSource("import pytest\n"
                          "from . import Base\n"
                          "@pytest.mark.slow\n"
                          "class TestX(Base):\n"
                          "    def test_own(self): pass\n",
                          files[2].path, files[2].moduleName)};
  // Summaries survive the cache with their pytest facts.
  ASSERT_NO_FATAL_FAILURE(roundTripThroughCache(summaries));
  linkPytestItems(files, [&](size_t i) { return &summaries[i]; });
  const std::vector<TestSummary> &tests = summaries[2].tests;
  ASSERT_EQ(tests.size(), 3u);
  EXPECT_EQ(tests[0].nodeId, "tests/test_x.py::TestX::test_a[1]");
  EXPECT_EQ(tests[0].entrySymbol, "tests.common.Base.test_a");
  EXPECT_EQ(tests[0].tags, std::vector<std::string>{"slow"});
  EXPECT_EQ(tests[1].nodeId, "tests/test_x.py::TestX::test_a[2]");
  EXPECT_EQ(tests[2].nodeId, "tests/test_x.py::TestX::test_own");
  EXPECT_TRUE(tests[2].entrySymbol.empty());
  EXPECT_FALSE(tests[2].inheritedUnknown);
}

/// No file index.
constexpr size_t kNoFile = ~size_t(0);

TEST(PytestTest, LinkRecordsReadsForTheNextLink) {
  std::vector<SourceFile> files = {{"tests/__init__.py", "tests"},
                                   {"tests/common.py", "tests.common"},
                                   {"tests/test_x.py", "tests.test_x"},
                                   {"tests/test_y.py", "tests.test_y"}};
  std::vector<FileSummary> summaries = {
      analyzePythonSource("", files[0].path, files[0].moduleName),
      analyzePythonSource("class Base:\n    def test_a(self): pass\n",
                          files[1].path, files[1].moduleName),
      analyzePythonSource("from tests.common import Base\n"
                          "class TestX(Base):\n"
                          "    def test_own(self): pass\n",
                          files[2].path, files[2].moduleName),
      analyzePythonSource("def test_y(): pass\n", files[3].path,
                          files[3].moduleName)};
  auto summaryOf = [&](size_t i) { return &summaries[i]; };
  LinkResult first = linkPytestItems(files, summaryOf);
  // Only test_x.py depends on other files; it read the package (the
  // prefix `tests` of the name it imports) and the base's module.
  ASSERT_EQ(first.relinked, std::vector<size_t>{2});
  EXPECT_EQ(first.reads[0],
            std::string("tests/__init__.py\0tests/common.py", 33));
  EXPECT_EQ(first.linked, (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(summaries[2].tests.size(), 2u);

  size_t edited = 3;
  auto isFresh = [&](size_t i) { return i == edited; };
  auto readsOf = [&](size_t i) -> std::optional<llvm::StringRef> {
    if (i == 2)
      return llvm::StringRef(first.reads[0]);
    return std::nullopt;
  };
  PreviousLink previous;
  previous.sameFiles = true;
  previous.isFresh = isFresh;
  previous.readsOf = readsOf;
  // An edit of a file test_x.py did not read: nothing to link.
  LinkResult unrelated =
      linkPytestItems(files, summaryOf, PytestConfig(), 0, &previous);
  EXPECT_TRUE(unrelated.relinked.empty());
  EXPECT_TRUE(unrelated.linked[2]);
  // An edit of the base's module: test_x.py again.
  edited = 1;
  LinkResult base =
      linkPytestItems(files, summaryOf, PytestConfig(), 0, &previous);
  EXPECT_EQ(base.relinked, std::vector<size_t>{2});
  // Another set of files: every dependent file.
  edited = kNoFile;
  previous.sameFiles = false;
  LinkResult added =
      linkPytestItems(files, summaryOf, PytestConfig(), 0, &previous);
  EXPECT_EQ(added.relinked, std::vector<size_t>{2});
}

TEST(PytestTest, UnittestCasesInOneFile) {
  using V = std::vector<std::string>;
  // Any name deriving unittest.TestCase (also through an alias and a local
  // base) is collected; `test*` members sorted by name, `__init__` allowed,
  // no nested TestCase, `runTest` only without tests; a plain class with an
  // unresolvable base named like a TestCase stands for itself.
  EXPECT_EQ(
      nodeIds("import unittest as ut\n"
              "from unittest import TestCase as TC\n"
              "from absl.testing import absltest\n"
              "class Base(TC):\n"
              "    def test_z(self): pass\n"
              "    def test_a(self): pass\n"
              "    class Inner(ut.TestCase):\n"
              "        def test_i(self): pass\n"
              "class Child(Base):\n"
              "    def __init__(self, *a): pass\n"
              "    def test_m(self): pass\n"
              "class Run(ut.TestCase):\n"
              "    def runTest(self): pass\n"
              "class Abseil(absltest.TestCase):\n"
              "    def test_b(self): pass\n"
              "class Helper:\n"
              "    def test_no(self): pass\n"),
      (V{"tests/test_x.py::Base::test_a", "tests/test_x.py::Base::test_z",
         "tests/test_x.py::Child::test_a", "tests/test_x.py::Child::test_m",
         "tests/test_x.py::Child::test_z", "tests/test_x.py::Run::runTest",
         "tests/test_x.py::Abseil", "tests/test_x.py::Abseil::test_b"}));
}

TEST(PytestTest, AliasedBasesAcrossModules) {
  std::vector<SourceFile> files = {{"tests/common.py", "tests.common"},
                                   {"tests/test_x.py", "tests.test_x"}};
  std::vector<FileSummary> summaries = {
      analyzePythonSource("class Base:\n"
                          "    def test_a(self): pass\n",
                          files[0].path, files[0].moduleName),
      analyzePythonSource("import tests.common as tc\n"
                          "from tests.common import Base as B\n"
                          "class TestX(tc.Base): pass\n"
                          "class TestY(B): pass\n",
                          files[1].path, files[1].moduleName)};
  // The aliases survive the cache.
  ASSERT_NO_FATAL_FAILURE(roundTripThroughCache(summaries));
  EXPECT_EQ(summaries[1].edges[0].alias, "tc");
  EXPECT_EQ(summaries[1].edges[1].alias, "B");
  linkPytestItems(files, [&](size_t i) { return &summaries[i]; });
  const std::vector<TestSummary> &tests = summaries[1].tests;
  ASSERT_EQ(tests.size(), 2u);
  EXPECT_EQ(tests[0].nodeId, "tests/test_x.py::TestX::test_a");
  EXPECT_EQ(tests[0].entrySymbol, "tests.common.Base.test_a");
  EXPECT_EQ(tests[1].nodeId, "tests/test_x.py::TestY::test_a");
  EXPECT_FALSE(tests[1].inheritedUnknown);
}

TEST(PytestTest, FixtureParams) {
  std::vector<SourceFile> files = {{"tests/conftest.py", "tests.conftest"},
                                   {"tests/test_x.py", "tests.test_x"},
                                   {"test_top.py", "test_top"}};
  std::vector<FileSummary> summaries = {
      analyzePythonSource("import pytest\n"
                          "@pytest.fixture(params=[1, 2], name='dev')\n"
                          "def _device(request): return request.param\n"
                          "@pytest.fixture(autouse=flag())\n"
                          "def maybe_auto(): pass\n"
                          "@pytest.fixture(scope='module', params=[1])\n"
                          "def wide(request): pass\n",
                          files[0].path, files[0].moduleName),
      analyzePythonSource("import pytest\n"
                          "@pytest.fixture\n"
                          "def uses(dev, /, plain, *, kw, d=1, *a, **k):\n"
                          "    pass\n"
                          "def test_a(tmp_path): pass\n"
                          "def test_b(uses): pass\n"
                          "@pytest.mark.parametrize('dev', [3])\n"
                          "def test_c(dev): pass\n"
                          "@pytest.mark.usefixtures('dev')\n"
                          "def test_d(): pass\n"
                          "def test_e(wide): pass\n",
                          files[1].path, files[1].moduleName),
      analyzePythonSource("def test_top(dev): pass\n", files[2].path,
                          files[2].moduleName)};
  // What the summaries record for it.
  const FileSummary &conftest = summaries[0];
  ASSERT_EQ(conftest.pytestEntities.size(), 3u);
  EXPECT_EQ(conftest.pytestEntities[0].fixtureName, "dev");
  EXPECT_TRUE(conftest.pytestEntities[0].fixtureParams);
  // Its ids are named after the fixture's `name=`.
  EXPECT_TRUE(conftest.pytestEntities[0].fixtureIdsKnown);
  EXPECT_EQ(conftest.pytestEntities[0].fixtureIds,
            (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(conftest.pytestEntities[0].fixtureScope, 0);
  EXPECT_EQ(conftest.pytestEntities[2].fixtureScope, 2);
  EXPECT_FALSE(conftest.pytestEntities[0].fixtureAutouse);
  EXPECT_EQ(conftest.entities[0].parameters,
            std::vector<std::string>{"request"});
  // An autouse= that is not a literal counts as autouse.
  EXPECT_TRUE(conftest.pytestEntities[1].fixtureAutouse);
  EXPECT_FALSE(conftest.pytestEntities[1].fixtureParams);
  EXPECT_EQ(summaries[1].entities[0].parameters,
            (std::vector<std::string>{"plain", "kw"}));
  // Alone, a test file does not see the conftest.py.
  for (const TestSummary &test : summaries[1].tests)
    EXPECT_FALSE(test.parametrized) << test.nodeId;
  ASSERT_NO_FATAL_FAILURE(roundTripThroughCache(summaries));
  linkPytestItems(files, [&](size_t i) { return &summaries[i]; });
  const std::vector<TestSummary> &tests = summaries[1].tests;
  ASSERT_EQ(tests.size(), 6u);
  EXPECT_EQ(tests[0].nodeId, "tests/test_x.py::test_a");
  EXPECT_FALSE(tests[0].parametrized);
  // `dev` is positional-only in `uses`: not requested.
  EXPECT_FALSE(tests[1].parametrized);
  EXPECT_EQ(tests[2].nodeId, "tests/test_x.py::test_c[3]");
  EXPECT_FALSE(tests[2].parametrized);
  EXPECT_EQ(tests[3].nodeId, "tests/test_x.py::test_d[1]");
  EXPECT_FALSE(tests[3].parametrized);
  EXPECT_EQ(tests[4].nodeId, "tests/test_x.py::test_d[2]");
  // A module-scoped fixture reorders items: one item stands for all.
  EXPECT_EQ(tests[5].nodeId, "tests/test_x.py::test_e");
  EXPECT_TRUE(tests[5].parametrized);
  // A conftest.py below a test file's directory does not apply to it.
  ASSERT_EQ(summaries[2].tests.size(), 1u);
  EXPECT_FALSE(summaries[2].tests[0].parametrized);
}
