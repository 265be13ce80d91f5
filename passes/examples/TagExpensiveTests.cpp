//===- TagExpensiveTests.cpp - Example pass plugin ------------------------===//
//
// A complete FastCI pass plugin, walked through in docs/WritingAPass.md:
// tag-expensive-tests adds a tag to every test whose GPU cost exceeds a
// threshold, so that later passes (or a CI config) can treat those tests
// specially. Load it with
//
//   fastci-opt --load-pass-plugin=build/lib/TagExpensiveTestsPlugin.so
//              --tag-expensive-tests=threshold=3600,tag=expensive in.fir
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/PassPlugin.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"

using namespace fastci;

namespace {
struct TagExpensiveTestsPass : PassWrapper<TagExpensiveTestsPass> {
  llvm::StringRef getArgument() const override { return "tag-expensive-tests"; }
  llvm::StringRef getSummary() const override {
    return "Tag tests whose GPU-seconds exceed a threshold";
  }
  llvm::StringRef getDescription() const override {
    return "Adds `tag` to the tags of every test whose `cost.gpu_seconds` is "
           "above `threshold`. Tests already carrying the tag are left alone, "
           "so the pass is idempotent.";
  }

  Option<double> threshold{
      *this, "threshold",
      llvm::cl::desc("GPU-seconds above which a test is expensive"),
      llvm::cl::init(3600.0)};
  Option<std::string> tag{*this, "tag", llvm::cl::desc("The tag to add"),
                          llvm::cl::init("expensive")};
  Statistic numTagged{this, "num-tagged", "Number of tests tagged"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    // Point at the offending value in the pipeline text when there is one.
    llvm::SMLoc loc = threshold.hasValue() ? threshold.getLoc() : getLoc();
    if (threshold < 0) {
      diag.error(loc, "'threshold' must not be negative");
      return failure();
    }
    if (tag.getValue().empty()) {
      diag.error(tag.hasValue() ? tag.getLoc() : getLoc(),
                 "'tag' must not be empty");
      return failure();
    }
    return success();
  }

  void runOnModule() override {
    for (Test &test : getModule().getTests()) {
      if (test.cost.gpuSeconds <= threshold ||
          llvm::is_contained(test.tags, tag.getValue()))
        continue;
      test.tags.push_back(tag);
      ++numTagged;
    }
    // Tags are not read by any analysis.
    markAllAnalysesPreserved();
  }
};
} // namespace

extern "C" FASTCI_PLUGIN_EXPORT FastCIPluginInfo fastciGetPluginInfo() {
  return {FASTCI_PLUGIN_API_VERSION, "tag-expensive-tests", "1.0",
          [] { PassRegistration<TagExpensiveTestsPass>(); }};
}
