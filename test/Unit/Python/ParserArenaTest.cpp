//===- ParserArenaTest.cpp - tree-sitter's per-file arena -----------------===//
#include "fastci/Python/ParserArena.h"
#include "fastci/Python/Analyzer.h"
#include "gtest/gtest.h"
#include <cstring>
#include <dlfcn.h>
#include <string>

using namespace fastci;
using namespace fastci::python;

namespace {
/// tree-sitter's current allocator, as the runtime calls it (the hooks
/// installParserArena sets). Looked up at run time: the test is not linked
/// against libtree-sitter itself.
struct Hooks {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
};

Hooks getHooks() {
  auto get = [](const char *name) {
    void *symbol = dlsym(RTLD_DEFAULT, name);
    EXPECT_NE(symbol, nullptr) << name;
    return symbol;
  };
  Hooks hooks;
  hooks.malloc = *static_cast<void *(**)(size_t)>(get("ts_current_malloc"));
  hooks.calloc =
      *static_cast<void *(**)(size_t, size_t)>(get("ts_current_calloc"));
  hooks.realloc =
      *static_cast<void *(**)(void *, size_t)>(get("ts_current_realloc"));
  hooks.free = *static_cast<void (**)(void *)>(get("ts_current_free"));
  return hooks;
}

/// A source of about \p lines lines with some 15 syntax nodes each.
std::string makeSource(unsigned lines) {
  std::string source;
  for (unsigned i = 0; i < lines; ++i)
    source += "x" + std::to_string(i) + " = f(a, b.c) + [1, 2, 3]\n";
  return source;
}
} // namespace

TEST(ParserArenaTest, AnalysisLeavesNoBlockBehind) {
  if (!installParserArena())
    GTEST_SKIP() << "the arena is off in sanitizer builds";
  FileSummary summary = analyzePythonSource(
      "class A:\n    def f(self):\n        return g(1)\n", "m.py", "m");
  ASSERT_EQ(summary.entities.size(), 2u);
  ParserArenaStats stats = getParserArenaStats();
  EXPECT_EQ(stats.liveBlocks, 0u);
  EXPECT_EQ(stats.largeBlocks, 0u);
  // The slabs stay for the next file.
  EXPECT_GT(stats.slabBytes, 0u);
}

TEST(ParserArenaTest, ScopesDoNotNest) {
  if (!installParserArena())
    GTEST_SKIP() << "the arena is off in sanitizer builds";
  ParserArenaScope outer;
  EXPECT_TRUE(outer.reclaimsAll());
  ParserArenaScope inner;
  EXPECT_FALSE(inner.reclaimsAll());
}

TEST(ParserArenaTest, HooksKeepContentsAndReclaimEverything) {
  if (!installParserArena())
    GTEST_SKIP() << "the arena is off in sanitizer builds";
  Hooks hooks = getHooks();
  // Outside a scope: plain malloc blocks, invisible to the arena.
  void *outside = hooks.malloc(40);
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(getParserArenaStats().liveBlocks, 0u);

  void *abandoned;
  {
    ParserArenaScope scope;
    ASSERT_TRUE(scope.reclaimsAll());
    auto *bytes = static_cast<unsigned char *>(hooks.malloc(24));
    ASSERT_NE(bytes, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % 16, 0u);
    for (unsigned i = 0; i < 24; ++i)
      bytes[i] = static_cast<unsigned char>(i);
    EXPECT_EQ(getParserArenaStats().liveBlocks, 1u);
    // Growing within the block, then into a larger class, then past the
    // largest class into a malloc'ed block: the contents move along.
    bytes = static_cast<unsigned char *>(hooks.realloc(bytes, 30));
    bytes = static_cast<unsigned char *>(hooks.realloc(bytes, 5000));
    EXPECT_EQ(getParserArenaStats().liveBlocks, 1u);
    bytes = static_cast<unsigned char *>(hooks.realloc(bytes, 1 << 20));
    EXPECT_EQ(getParserArenaStats().liveBlocks, 0u);
    EXPECT_EQ(getParserArenaStats().largeBlocks, 1u);
    bytes = static_cast<unsigned char *>(hooks.realloc(bytes, 2 << 20));
    for (unsigned i = 0; i < 24; ++i)
      ASSERT_EQ(bytes[i], i);
    hooks.free(bytes);
    EXPECT_EQ(getParserArenaStats().largeBlocks, 0u);

    auto *zeroed = static_cast<unsigned char *>(hooks.calloc(100, 3));
    for (unsigned i = 0; i < 300; ++i)
      ASSERT_EQ(zeroed[i], 0u);
    // A freed block is reused by the next allocation of its class.
    hooks.free(zeroed);
    EXPECT_EQ(hooks.malloc(290), zeroed);
    // Left allocated: the scope's end reclaims it, large or small.
    abandoned = hooks.malloc(300000);
    EXPECT_EQ(getParserArenaStats().largeBlocks, 1u);
    EXPECT_EQ(getParserArenaStats().liveBlocks, 1u);
  }
  (void)abandoned;
  EXPECT_EQ(getParserArenaStats().liveBlocks, 0u);
  EXPECT_EQ(getParserArenaStats().largeBlocks, 0u);
  // A block from outside any scope is still a plain malloc block.
  outside = hooks.realloc(outside, 100000);
  ASSERT_NE(outside, nullptr);
  hooks.free(outside);
}

TEST(ParserArenaTest, KeepsAtMostTheCapBetweenFiles) {
  if (!installParserArena())
    GTEST_SKIP() << "the arena is off in sanitizer builds";
  // About 4 KiB of tree-sitter memory per line: some 64 MiB at the peak.
  std::string source = makeSource(16000);
  size_t peak;
  {
    // The analysis runs inside this scope (its own does not nest), so the
    // arena still holds the large file's peak here.
    ParserArenaScope scope;
    FileSummary summary = analyzePythonSource(source, "big.py", "big");
    EXPECT_EQ(summary.edges.size(), 16000u);
    peak = getParserArenaStats().slabBytes;
  }
  EXPECT_GT(peak, kParserArenaRetainedBytes);
  EXPECT_LE(getParserArenaStats().slabBytes, kParserArenaRetainedBytes);
  EXPECT_GT(getParserArenaStats().slabBytes, 0u);
}
