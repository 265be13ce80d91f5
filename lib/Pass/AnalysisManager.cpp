//===- AnalysisManager.cpp - On-demand, cached analyses -------------------===//
//
// Caching, dependency tracking and invalidation of analyses. Dependencies are
// recorded while an analysis is being built, so invalidation is transitive
// without analyses having to declare what they use.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/AnalysisManager.h"
#include "fastci/Pass/PassInstrumentation.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/ErrorHandling.h"

using namespace fastci;

detail::AnalysisConcept::~AnalysisConcept() = default;

AnalysisManager::AnalysisManager(Module &module, PassInstrumentor *instrumentor)
    : module(module), instrumentor(instrumentor) {}

AnalysisManager::~AnalysisManager() = default;

detail::AnalysisConcept *AnalysisManager::lookupAndRecordUse(TypeID id) {
  if (!computing.empty()) {
    if (llvm::is_contained(computing, id))
      llvm::report_fatal_error("analysis depends on itself while being built");
    auto &deps = dependencies[computing.back()];
    if (!llvm::is_contained(deps, id))
      deps.push_back(id);
  }
  auto it = analyses.find(id);
  return it == analyses.end() ? nullptr : it->second.get();
}

detail::AnalysisConcept *
AnalysisManager::compute(TypeID id, llvm::StringRef name, Builder build) {
  if (instrumentor)
    instrumentor->runBeforeAnalysis(name, id, module);
  computing.push_back(id);
  std::unique_ptr<detail::AnalysisConcept> analysis = build();
  computing.pop_back();
  if (instrumentor)
    instrumentor->runAfterAnalysis(name, id, module);
  return (analyses[id] = std::move(analysis)).get();
}

void AnalysisManager::invalidate(const PreservedAnalyses &preserved) {
  if (preserved.isAll())
    return;
  llvm::SetVector<TypeID> invalid;
  for (auto &entry : analyses)
    if (!preserved.isPreserved(entry.first))
      invalid.insert(entry.first);
  // Anything built from an invalid analysis may hold references into it.
  bool changed = !invalid.empty();
  while (changed) {
    changed = false;
    for (auto &entry : analyses) {
      if (invalid.count(entry.first))
        continue;
      auto deps = dependencies.find(entry.first);
      if (deps == dependencies.end())
        continue;
      if (llvm::any_of(deps->second,
                       [&](TypeID dep) { return invalid.count(dep); }))
        changed |= invalid.insert(entry.first);
    }
  }
  // Dependents first, so nothing is destroyed while a live analysis still
  // refers to it.
  for (TypeID id : llvm::reverse(invalid)) {
    analyses.erase(id);
    dependencies.erase(id);
  }
}

void AnalysisManager::clear() {
  // Newest first: a later analysis may refer to an earlier one.
  while (!analyses.empty())
    analyses.pop_back();
  dependencies.clear();
}
