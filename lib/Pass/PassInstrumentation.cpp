//===- PassInstrumentation.cpp - Hooks around passes and analyses ---------===//
//
// Fan-out of instrumentation hooks, and the registry through which plugins
// contribute instrumentations to every pass manager a tool builds.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassInstrumentation.h"
#include "llvm/ADT/STLExtras.h"

using namespace fastci;

PassInstrumentation::~PassInstrumentation() = default;

void PassInstrumentor::add(
    std::unique_ptr<PassInstrumentation> instrumentation) {
  instrumentations.push_back(std::move(instrumentation));
}

void PassInstrumentor::runBeforePipeline(Module &module) {
  for (auto &instrumentation : instrumentations)
    instrumentation->runBeforePipeline(module);
}

void PassInstrumentor::runAfterPipeline(Module &module) {
  for (auto &instrumentation : llvm::reverse(instrumentations))
    instrumentation->runAfterPipeline(module);
}

void PassInstrumentor::runBeforePass(Pass *pass, Module &module) {
  for (auto &instrumentation : instrumentations)
    instrumentation->runBeforePass(pass, module);
}

void PassInstrumentor::runAfterPass(Pass *pass, Module &module) {
  for (auto &instrumentation : llvm::reverse(instrumentations))
    instrumentation->runAfterPass(pass, module);
}

void PassInstrumentor::runAfterPassFailed(Pass *pass, Module &module) {
  for (auto &instrumentation : llvm::reverse(instrumentations))
    instrumentation->runAfterPassFailed(pass, module);
}

void PassInstrumentor::runBeforeAnalysis(llvm::StringRef name, TypeID id,
                                         Module &module) {
  for (auto &instrumentation : instrumentations)
    instrumentation->runBeforeAnalysis(name, id, module);
}

void PassInstrumentor::runAfterAnalysis(llvm::StringRef name, TypeID id,
                                        Module &module) {
  for (auto &instrumentation : llvm::reverse(instrumentations))
    instrumentation->runAfterAnalysis(name, id, module);
}

static std::vector<PassInstrumentationFactory> &getFactories() {
  static std::vector<PassInstrumentationFactory> factories;
  return factories;
}

void fastci::registerPassInstrumentation(PassInstrumentationFactory factory) {
  getFactories().push_back(std::move(factory));
}

const std::vector<PassInstrumentationFactory> &
fastci::getRegisteredPassInstrumentations() {
  return getFactories();
}
