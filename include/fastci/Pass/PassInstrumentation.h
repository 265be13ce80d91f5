//===- PassInstrumentation.h - Hooks around passes and analyses -*- C++ -*-===//
//
// Everything that watches a pipeline run -- IR printing, timing, plugins'
// own tracing -- is a PassInstrumentation added to the PassManager. "Before"
// hooks run in the order instrumentations were added and "after" hooks in
// reverse, so instrumentations nest like scopes.
//
// Plugins add instrumentation to every pass manager fastci-opt builds with
// registerPassInstrumentation() from their registration callback.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PASSINSTRUMENTATION_H
#define FASTCI_PASS_PASSINSTRUMENTATION_H

#include "fastci/Pass/TypeID.h"
#include "llvm/ADT/StringRef.h"
#include <functional>
#include <memory>
#include <vector>

namespace fastci {

class Module;
class Pass;

/// Callbacks around a pipeline run; override the ones you need.
class PassInstrumentation {
public:
  virtual ~PassInstrumentation();

  /// Before the first pass of a run.
  virtual void runBeforePipeline(Module &module) {}
  /// After the last pass of a run, or after the pass that failed.
  virtual void runAfterPipeline(Module &module) {}
  /// Before \p pass runs.
  virtual void runBeforePass(Pass *pass, Module &module) {}
  /// After \p pass succeeded (and the IR verified, when --verify-each).
  virtual void runAfterPass(Pass *pass, Module &module) {}
  /// After \p pass failed or left IR that does not verify.
  virtual void runAfterPassFailed(Pass *pass, Module &module) {}
  /// Before the analysis \p name is computed.
  virtual void runBeforeAnalysis(llvm::StringRef name, TypeID id,
                                 Module &module) {}
  /// After the analysis \p name was computed.
  virtual void runAfterAnalysis(llvm::StringRef name, TypeID id,
                                Module &module) {}
};

/// Dispatches each hook to a list of instrumentations.
class PassInstrumentor {
public:
  /// Appends \p instrumentation.
  void add(std::unique_ptr<PassInstrumentation> instrumentation);
  /// True if no instrumentation was added.
  bool empty() const { return instrumentations.empty(); }

  void runBeforePipeline(Module &module);
  void runAfterPipeline(Module &module);
  void runBeforePass(Pass *pass, Module &module);
  void runAfterPass(Pass *pass, Module &module);
  void runAfterPassFailed(Pass *pass, Module &module);
  void runBeforeAnalysis(llvm::StringRef name, TypeID id, Module &module);
  void runAfterAnalysis(llvm::StringRef name, TypeID id, Module &module);

private:
  std::vector<std::unique_ptr<PassInstrumentation>> instrumentations;
};

/// Creates an instrumentation for a new pass manager.
using PassInstrumentationFactory =
    std::function<std::unique_ptr<PassInstrumentation>()>;

/// Registers \p factory; tools add one instance to each pass manager they
/// build (see addRegisteredInstrumentations in PassManager.h).
void registerPassInstrumentation(PassInstrumentationFactory factory);

/// The registered instrumentation factories, in registration order.
const std::vector<PassInstrumentationFactory> &
getRegisteredPassInstrumentations();

} // namespace fastci

#endif // FASTCI_PASS_PASSINSTRUMENTATION_H
