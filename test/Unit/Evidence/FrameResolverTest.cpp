//===- FrameResolverTest.cpp - Frame to entity mapping --------------------===//
//
// Checks innermost-entity lookup (nested functions, methods, module-level
// code, unknown files), library leaf naming, and resolution through a
// snapshot of an older revision (fresh, changed and vanished entities).
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/FrameResolver.h"
#include "TestModule.h"
#include "gtest/gtest.h"

using namespace fastci;
using namespace fastci::test;

namespace {

std::string symbolAt(const Module &m, const LineIndex &index,
                     llvm::StringRef path, uint32_t line) {
  EntityId entity = index.lookup(path, line);
  return entity == kNoEntity ? "<none>" : m.getEntity(entity).symbol.str();
}

TEST(LineIndexTest, FindsTheInnermostEntity) {
  auto m = buildTestModule();
  LineIndex index(*m);
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 10), kOuter);
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 12), kInner);
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 20), kInner);
  // After the nested function ends, the enclosing one again.
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 21), kOuter);
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 41), "pkg.mod.C");
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 45), kMethod);
  // Module-level code, line 0 and lines past every range: the module.
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 5), "pkg.mod");
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 0), "pkg.mod");
  EXPECT_EQ(symbolAt(*m, index, "pkg/mod.py", 1000), "pkg.mod");
  EXPECT_EQ(symbolAt(*m, index, "pkg/other.py", 10), "<none>");
  EXPECT_TRUE(index.hasFile("tests/test_a.py"));
}

TEST(LineIndexTest, SiblingsAndDeepNesting) {
  Module m;
  EntityId file = m.addEntity(EntityKind::File, "a.py");
  EntityId mod = m.addEntity(EntityKind::Module, "a", file, {1, 0, 200, 0});
  EntityId f = m.addEntity(EntityKind::Function, "a.f", mod, {2, 0, 100, 0});
  EntityId g =
      m.addEntity(EntityKind::Function, "a.f.<locals>.g", f, {3, 0, 50, 0});
  m.addEntity(EntityKind::Function, "a.f.<locals>.g.<locals>.h", g,
              {4, 0, 10, 0});
  m.addEntity(EntityKind::Function, "a.f.<locals>.g.<locals>.i", g,
              {11, 0, 20, 0});
  m.addEntity(EntityKind::Function, "a.k", mod, {101, 0, 120, 0});
  LineIndex index(m);
  EXPECT_EQ(symbolAt(m, index, "a.py", 5), "a.f.<locals>.g.<locals>.h");
  EXPECT_EQ(symbolAt(m, index, "a.py", 15), "a.f.<locals>.g.<locals>.i");
  EXPECT_EQ(symbolAt(m, index, "a.py", 30), "a.f.<locals>.g");
  EXPECT_EQ(symbolAt(m, index, "a.py", 60), "a.f");
  EXPECT_EQ(symbolAt(m, index, "a.py", 110), "a.k");
  EXPECT_EQ(symbolAt(m, index, "a.py", 150), "a");
}

TEST(LibraryLeafTest, NamesModulesLikePython) {
  EXPECT_EQ(
      getLibraryLeafName("/venv/lib/python3.11/site-packages/torch/distributed/"
                         "distributed_c10d.py",
                         "all_reduce"),
      "torch.distributed.distributed_c10d.all_reduce");
  EXPECT_EQ(getLibraryLeafName(
                "/usr/lib/python3/dist-packages/numpy/__init__.py", "array"),
            "numpy.array");
  EXPECT_EQ(getLibraryLeafName("/usr/lib/python3.11/json/decoder.py",
                               "JSONDecoder.decode"),
            "json.decoder.JSONDecoder.decode");
  EXPECT_EQ(getLibraryLeafName("<frozen importlib._bootstrap>", "_load"),
            "importlib._bootstrap._load");
  EXPECT_EQ(getLibraryLeafName("<string>", "<module>"), "<string>.<module>");
  EXPECT_EQ(getLibraryLeafName("/opt/tools/helper.py", "run"), "helper.run");
}

TEST(FrameResolverTest, DirectResolution) {
  auto m = buildTestModule();
  LineIndex index(*m);
  FrameResolver resolver(*m, index);
  EXPECT_FALSE(resolver.usesSnapshot());
  ResolvedFrame frame = resolver.resolve("pkg/mod.py", "outer", 15);
  EXPECT_EQ(frame.kind, ResolvedFrame::Kind::Entity);
  EXPECT_EQ(frame.entity, m->lookupEntity(kInner));
  EXPECT_FALSE(frame.stale);
  frame =
      resolver.resolve("/x/site-packages/torch/nn/functional.py", "relu", 3);
  EXPECT_EQ(frame.kind, ResolvedFrame::Kind::Library);
  EXPECT_EQ(frame.name, "torch.nn.functional.relu");
}

TEST(FrameResolverTest, SnapshotDetectsChangedAndVanishedCode) {
  auto old = buildTestModule(/*innerHash=*/3, /*withMethod=*/true);
  auto current = buildTestModule(/*innerHash=*/99, /*withMethod=*/false);
  LineIndex oldIndex(*old);
  FrameResolver resolver(*old, oldIndex, *current);
  EXPECT_TRUE(resolver.usesSnapshot());

  ResolvedFrame fresh = resolver.resolve("tests/test_a.py", "test_x", 6);
  EXPECT_EQ(fresh.kind, ResolvedFrame::Kind::Entity);
  EXPECT_EQ(fresh.entity, current->lookupEntity(kTestX));
  EXPECT_FALSE(fresh.stale);

  ResolvedFrame changed = resolver.resolve("pkg/mod.py", "inner", 13);
  EXPECT_EQ(changed.kind, ResolvedFrame::Kind::Entity);
  EXPECT_EQ(changed.entity, current->lookupEntity(kInner));
  EXPECT_TRUE(changed.stale);
  EXPECT_EQ(changed.name, kInner);

  ResolvedFrame vanished = resolver.resolve("pkg/mod.py", "C.m", 45);
  EXPECT_EQ(vanished.kind, ResolvedFrame::Kind::Vanished);
  EXPECT_TRUE(vanished.stale);
  EXPECT_EQ(vanished.name, kMethod);
}

} // namespace
