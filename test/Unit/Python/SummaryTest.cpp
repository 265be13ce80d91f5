//===- SummaryTest.cpp - The cache's binary form --------------------------===//
#include "fastci/Python/Analyzer.h"
#include "fastci/Python/FileSummary.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::python;

TEST(SummaryTest, RoundTripsAndRejectsDamage) {
  FileSummary summary = analyzePythonSource("import os\n"
                                            "class A:\n"
                                            "    @property\n"
                                            "    def f(self):\n"
                                            "        return os.getcwd()\n",
                                            "pkg/test_a.py", "pkg.test_a");
  summary.tests.push_back({"pkg/test_a.py::x",
                           0,
                           {"slow"},
                           true,
                           {"tp"},
                           {{"layers", Attribute::getInt(24)}}});
  summary.tests[0].floors = {true,
                             "",
                             {{"model-width", "checked at full width", 0, ""},
                              {"compared-steps", "", 20, "turns at 15"}}};
  PytestEntitySummary &facts = summary.pytestEntities.emplace_back();
  facts.entity = 0;
  MarkSummary &mark = facts.marks.emplace_back();
  mark.name = "fastci";
  mark.floors.present = true;
  mark.floors.error = "expected a floor name";
  mark.names = {"dev"};
  facts.fixtureName = "dev";
  facts.fixtureParams = true;
  facts.fixtureAutouse = true;
  facts.fixtureIdsKnown = true;
  facts.fixtureIds = {"cpu", "cuda"};
  facts.fixtureCaseTags = {{}, {"gpu"}};
  facts.fixtureScope = 2;
  mark.indirect = 2;
  summary.entities[1].parameters = {"self", "dev"};
  std::string bytes = serializeSummary(summary);
  llvm::Expected<FileSummary> back = deserializeSummary(bytes);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(serializeSummary(*back), bytes);
  EXPECT_EQ(back->entities.size(), 2u);
  EXPECT_EQ(back->tests[0].workload[0].value.getInt(), 24);
  const FloorOverrides &floors = back->tests[0].floors;
  EXPECT_TRUE(floors.present);
  ASSERT_EQ(floors.entries.size(), 2u);
  EXPECT_EQ(floors.entries[0].off, "checked at full width");
  EXPECT_EQ(floors.entries[1].name, "compared-steps");
  EXPECT_EQ(floors.entries[1].atLeast, 20);
  EXPECT_EQ(floors.entries[1].why, "turns at 15");
  ASSERT_EQ(back->pytestEntities.size(), 1u);
  EXPECT_EQ(back->pytestEntities[0].marks[0].floors.error,
            "expected a floor name");
  EXPECT_EQ(back->pytestEntities[0].marks[0].names,
            std::vector<std::string>{"dev"});
  EXPECT_EQ(back->pytestEntities[0].fixtureName, "dev");
  EXPECT_TRUE(back->pytestEntities[0].fixtureParams);
  EXPECT_TRUE(back->pytestEntities[0].fixtureAutouse);
  EXPECT_TRUE(back->pytestEntities[0].fixtureIdsKnown);
  EXPECT_EQ(back->pytestEntities[0].fixtureIds,
            (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_EQ(back->pytestEntities[0].fixtureCaseTags[1],
            std::vector<std::string>{"gpu"});
  EXPECT_EQ(back->pytestEntities[0].fixtureScope, 2);
  EXPECT_EQ(back->pytestEntities[0].marks[0].indirect, 2);
  EXPECT_EQ(back->entities[1].parameters,
            (std::vector<std::string>{"self", "dev"}));

  // Every truncation is an error, never a crash.
  for (size_t length = 0; length < bytes.size(); ++length) {
    llvm::Expected<FileSummary> truncated =
        deserializeSummary(llvm::StringRef(bytes).take_front(length));
    EXPECT_FALSE(static_cast<bool>(truncated));
    llvm::consumeError(truncated.takeError());
  }
}

TEST(SummaryTest, ReadsTheIRSectionAloneAndTheLinkFactsLater) {
  FileSummary summary = analyzePythonSource("import unittest as ut\n"
                                            "from pkg.base import Base\n"
                                            "class TestA(Base):\n"
                                            "    @pytest.mark.slow\n"
                                            "    def test_f(self, dev):\n"
                                            "        return ut.main()\n",
                                            "pkg/test_a.py", "pkg.test_a");
  ASSERT_FALSE(summary.edges.empty());
  ASSERT_FALSE(summary.pytestEntities.empty());
  std::string bytes = serializeSummary(summary);

  // The IR section alone: edges left encoded, link-only facts empty.
  llvm::Expected<FileSummary> ir = deserializeSummary(bytes, SummaryParts::IR);
  ASSERT_TRUE(static_cast<bool>(ir)) << llvm::toString(ir.takeError());
  EXPECT_TRUE(ir->edges.empty());
  EXPECT_EQ(getNumEdges(*ir), summary.edges.size());
  EXPECT_TRUE(ir->pytestEntities.empty());
  EXPECT_EQ(ir->entities.size(), summary.entities.size());
  EXPECT_TRUE(ir->entities[0].name.empty());
  EXPECT_EQ(ir->entities[0].qualname, summary.entities[0].qualname);
  size_t index = 0;
  forEachEdge(*ir, [&](const EdgeRef &edge) {
    ASSERT_LT(index, summary.edges.size());
    const EdgeSummary &expected = summary.edges[index++];
    EXPECT_EQ(edge.kind, expected.kind);
    EXPECT_EQ(edge.from, expected.from);
    EXPECT_EQ(edge.target, expected.target);
    EXPECT_EQ(edge.line, expected.line);
    EXPECT_EQ(edge.modulePrefix, expected.modulePrefix);
    EXPECT_EQ(edge.alias, expected.alias);
  });
  EXPECT_EQ(index, summary.edges.size());

  // With the link facts added it is the whole summary again.
  llvm::Error error = deserializeLinkFacts(bytes, *ir);
  ASSERT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  EXPECT_EQ(serializeSummary(*ir), bytes);

  // A damaged link section fails only the link facts; the IR section
  // still reads (a warm run whose link is skipped never looks at it).
  std::string damaged = bytes;
  damaged.back() = '\x7f'; // the flags byte ending the link section
  damaged += "x";
  EXPECT_TRUE(static_cast<bool>(deserializeSummary(damaged, SummaryParts::IR)));
  llvm::Expected<FileSummary> full = deserializeSummary(damaged);
  EXPECT_FALSE(static_cast<bool>(full));
  llvm::consumeError(full.takeError());
  llvm::Expected<FileSummary> partial =
      deserializeSummary(damaged, SummaryParts::IR);
  ASSERT_TRUE(static_cast<bool>(partial));
  llvm::Error linkError = deserializeLinkFacts(damaged, *partial);
  EXPECT_TRUE(static_cast<bool>(linkError));
  llvm::consumeError(std::move(linkError));

  // Another format version is refused by both.
  std::string foreign = bytes;
  foreign[4] ^= 1;
  llvm::Expected<FileSummary> old =
      deserializeSummary(foreign, SummaryParts::IR);
  EXPECT_FALSE(static_cast<bool>(old));
  llvm::consumeError(old.takeError());

  // Every truncation of the IR section is an error, never a crash; one of
  // the link section fails the link facts alone.
  for (size_t length = 0; length < bytes.size(); ++length) {
    llvm::StringRef prefix = llvm::StringRef(bytes).take_front(length);
    llvm::Expected<FileSummary> truncated =
        deserializeSummary(prefix, SummaryParts::IR);
    if (!truncated) {
      llvm::consumeError(truncated.takeError());
      continue;
    }
    llvm::Error facts = deserializeLinkFacts(prefix, *truncated);
    EXPECT_TRUE(static_cast<bool>(facts)) << length;
    llvm::consumeError(std::move(facts));
  }

  // An edge whose module prefix is longer than its target is refused when
  // read, so that forEachEdge can trust what it walks.
  FileSummary bad;
  bad.edges.push_back({EdgeKind::Import, kModuleScope, "m", 1, 5, ""});
  llvm::Expected<FileSummary> badEdge =
      deserializeSummary(serializeSummary(bad), SummaryParts::IR);
  EXPECT_FALSE(static_cast<bool>(badEdge));
  llvm::consumeError(badEdge.takeError());
}
