//===- FailingPlugin.cpp - A plugin whose pass fails ----------------------===//
//
// Registers test-plugin-fail, which reports an error and fails, and an
// instrumentation that traces pass events to stderr, so lit can check that
// plugin passes fail like built-in ones and that plugins can hook the
// pipeline.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/PassPlugin.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {
struct TestPluginFailPass : PassWrapper<TestPluginFailPass> {
  llvm::StringRef getArgument() const override { return "test-plugin-fail"; }
  llvm::StringRef getSummary() const override {
    return "A plugin pass that always fails";
  }
  void runOnModule() override {
    getDiagnostics().error(getLoc(), "test-plugin-fail failed on purpose");
    signalPassFailure();
  }
};

struct TracingInstrumentation : PassInstrumentation {
  void runBeforePass(Pass *pass, Module &) override {
    llvm::errs() << "[trace] before " << pass->getArgument() << '\n';
  }
  void runAfterPass(Pass *pass, Module &) override {
    llvm::errs() << "[trace] after " << pass->getArgument() << '\n';
  }
  void runAfterPassFailed(Pass *pass, Module &) override {
    llvm::errs() << "[trace] failed " << pass->getArgument() << '\n';
  }
};
} // namespace

extern "C" FASTCI_PLUGIN_EXPORT FastCIPluginInfo fastciGetPluginInfo() {
  return {FASTCI_PLUGIN_API_VERSION, "failing", "1.0", [] {
            PassRegistration<TestPluginFailPass>();
            registerPassInstrumentation(
                [] { return std::make_unique<TracingInstrumentation>(); });
          }};
}
