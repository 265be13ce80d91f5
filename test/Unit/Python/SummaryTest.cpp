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
