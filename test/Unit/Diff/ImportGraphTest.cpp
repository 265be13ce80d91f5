//===- ImportGraphTest.cpp - Unit tests of the import graph ---------------===//
//
// Checks the import graph's closures: parent packages run before their
// modules, and imports inside functions run only when the function does.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/ImportGraph.h"
#include "gtest/gtest.h"

using namespace fastci;

namespace {

TEST(ImportGraphTest, ClosuresFollowParentPackagesAndModuleLevelImports) {
  Module module;
  auto addModule = [&](llvm::StringRef name, llvm::StringRef path) {
    EntityId file = module.addEntity(EntityKind::File, path);
    return module.addEntity(EntityKind::Module, name, file);
  };
  EntityId pkg = addModule("pkg", "pkg/__init__.py");
  EntityId sub = addModule("pkg.sub", "pkg/sub/__init__.py");
  EntityId leaf = addModule("pkg.sub.leaf", "pkg/sub/leaf.py");
  EntityId lazy = addModule("pkg.lazy", "pkg/lazy.py");
  EntityId test = addModule("tests.test_x", "tests/test_x.py");
  EntityId fn = module.addEntity(EntityKind::Function, "pkg.sub.leaf.f", leaf);
  module.addEdge(
      {EdgeKind::Import, test, kNoEntity, module.intern("pkg.sub.leaf.f")});
  module.addEdge({EdgeKind::Import, fn, lazy, module.intern("pkg.lazy")});
  ImportGraph graph(module);
  EXPECT_EQ(graph.getModuleOf(fn), leaf);
  EXPECT_EQ(graph.lookupModule("pkg.sub.leaf.f.attr"), leaf);
  EXPECT_EQ(graph.lookupModule("numpy"), kNoEntity);
  EXPECT_EQ(graph.getModuleForFile("pkg/lazy.py"), lazy);
  // Importing pkg.sub.leaf runs pkg and pkg.sub first.
  llvm::DenseSet<EntityId> importers = graph.getImportersClosure(pkg);
  EXPECT_TRUE(importers.contains(test));
  EXPECT_TRUE(graph.getImportersClosure(lazy).contains(test));
  llvm::DenseSet<EntityId> all = graph.getImportClosure({test});
  EXPECT_TRUE(all.contains(lazy) && all.contains(sub));
  // The function-level import runs only when the function does.
  llvm::DenseSet<EntityId> atImport =
      graph.getImportClosure({test}, kNoEntity, /*moduleLevelOnly=*/true);
  EXPECT_FALSE(atImport.contains(lazy));
  EXPECT_TRUE(atImport.contains(leaf));
  EXPECT_FALSE(graph.getImportClosure({test}, leaf, true).contains(lazy));
}

} // namespace
