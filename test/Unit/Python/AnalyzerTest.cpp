//===- AnalyzerTest.cpp - Entities, ranges, hashes and edges --------------===//
#include "FindEntity.h"
#include "fastci/Python/Analyzer.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::python;

TEST(AnalyzerTest, QualnamesFollowCPython) {
  FileSummary s = analyzePythonSource("class A:\n"
                                      "    def m(self):\n"
                                      "        def g(): pass\n"
                                      "        class C:\n"
                                      "            def n(self): pass\n"
                                      "def f():\n"
                                      "    global h\n"
                                      "    def h(): pass\n"
                                      "def f(): pass\n",
                                      "m.py", "m");
  for (const char *name : {"A", "A.m", "A.m.<locals>.g", "A.m.<locals>.C",
                           "A.m.<locals>.C.n", "f", "h", "f#2"})
    EXPECT_NE(find(s, name), nullptr) << name;
  EXPECT_EQ(s.entities.size(), 8u);
}

TEST(AnalyzerTest, RangesFollowAst) {
  FileSummary s = analyzePythonSource("@dec\n"
                                      "async def f():\n"
                                      "    x = 1  # trailing\n"
                                      "    # comment at the end\n"
                                      "\n",
                                      "m.py", "m");
  const EntitySummary *f = find(s, "f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->range, (SourceRange{2, 0, 3, 9}));
  EXPECT_TRUE(f->isAsync);
  EXPECT_EQ(f->decorators, std::vector<std::string>{"dec"});
}

TEST(AnalyzerTest, HashesIgnoreLayoutAndStayLocal) {
  const char *base = "X = 1\n"
                     "class A:\n"
                     "    y = 2\n"
                     "    def m(self):\n"
                     "        return 1\n";
  const char *reformatted = "X  =  1   # comment\n"
                            "class A:\n"
                            "    y = 2\n\n"
                            "    def m( self ):\n"
                            "        return   1\n";
  const char *bodyChanged = "X = 1\n"
                            "class A:\n"
                            "    y = 2\n"
                            "    def m(self):\n"
                            "        return 2\n";
  FileSummary a = analyzePythonSource(base, "m.py", "m");
  FileSummary b = analyzePythonSource(reformatted, "m.py", "m");
  FileSummary c = analyzePythonSource(bodyChanged, "m.py", "m");
  EXPECT_EQ(a.moduleHash, b.moduleHash);
  EXPECT_EQ(find(a, "A")->hash, find(b, "A")->hash);
  EXPECT_EQ(find(a, "A.m")->hash, find(b, "A.m")->hash);
  EXPECT_EQ(find(a, "A")->hash, find(c, "A")->hash);
  EXPECT_EQ(a.moduleHash, c.moduleHash);
  EXPECT_NE(find(a, "A.m")->hash, find(c, "A.m")->hash);
}

TEST(AnalyzerTest, CallsResolveThroughBindings) {
  FileSummary s = analyzePythonSource("from pkg.util import g as gg\n"
                                      "import os.path\n"
                                      "class A:\n"
                                      "    def m(self):\n"
                                      "        self.n()\n"
                                      "        gg()\n"
                                      "        os.path.join()\n"
                                      "        helper()\n"
                                      "        print()\n"
                                      "def helper(): pass\n",
                                      "pkg/mod.py", "pkg.mod");
  std::vector<std::string> calls, imports;
  for (const EdgeSummary &edge : s.edges)
    (edge.kind == EdgeKind::Call ? calls : imports).push_back(edge.target);
  EXPECT_EQ(imports, (std::vector<std::string>{"pkg.util.g", "os.path"}));
  EXPECT_EQ(calls, (std::vector<std::string>{"pkg.mod.A.n", "pkg.util.g",
                                             "os.path.join", "pkg.mod.helper",
                                             "print"}));
}

TEST(AnalyzerTest, BadInputIsAWarning) {
  FileSummary s = analyzePythonSource("def ok(): pass\n"
                                      "def broken(:\n",
                                      "m.py", "m");
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_EQ(s.warnings.back().line, 2u);
  EXPECT_NE(find(s, "ok"), nullptr);

  FileSummary latin = analyzePythonSource("x = '\xe9'\n", "m.py", "m");
  ASSERT_EQ(latin.warnings.size(), 1u);
  EXPECT_EQ(latin.warnings[0].column, 6u);

  // Deep nesting must not exhaust the stack.
  std::string deep =
      "x = " + std::string(20000, '(') + "1" + std::string(20000, ')') + "\n";
  FileSummary nested = analyzePythonSource(deep, "m.py", "m");
  EXPECT_TRUE(nested.entities.empty());
}
