//===- AnalysisManager.h - On-demand, cached analyses -----------*- C++ -*-===//
//
// An analysis is any class constructible from `Module &` or from
// `(Module &, AnalysisManager &)`. Passes ask for one with getAnalysis<T>();
// the manager computes it on first use and caches it until a pass that did
// not preserve it has run. An analysis that asked for other analyses while it
// was being built depends on them: invalidating one of those invalidates it
// too, even when the pass claimed to preserve it, because it may hold
// references into them.
//
// The manager is not thread-safe: request analyses before a parallelFor, not
// from its workers.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_ANALYSISMANAGER_H
#define FASTCI_PASS_ANALYSISMANAGER_H

#include "fastci/Pass/TypeID.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/TypeName.h"
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

namespace fastci {

class Module;
class PassInstrumentor;

/// The set of analyses a pass left valid.
class PreservedAnalyses {
public:
  /// Marks every analysis preserved.
  void preserveAll() { all = true; }
  /// Marks the analyses \p Ts preserved.
  template <typename... Ts> void preserve() {
    (preserve(TypeID::get<Ts>()), ...);
  }
  /// Marks the analysis \p id preserved.
  void preserve(TypeID id) { ids.push_back(id); }
  /// True if every analysis is preserved.
  bool isAll() const { return all; }
  /// True if the analysis \p id is preserved.
  bool isPreserved(TypeID id) const {
    return all || llvm::is_contained(ids, id);
  }

private:
  bool all = false;
  llvm::SmallVector<TypeID, 4> ids;
};

namespace detail {
/// Type-erased storage of one cached analysis.
struct AnalysisConcept {
  virtual ~AnalysisConcept();
};
template <typename T> struct AnalysisModel final : AnalysisConcept {
  template <typename... Args>
  explicit AnalysisModel(Args &&...args)
      : analysis(std::forward<Args>(args)...) {}
  T analysis;
};
} // namespace detail

/// Computes and caches the analyses of one module during one pipeline run.
class AnalysisManager {
public:
  /// Creates a manager for \p module; \p instrumentor (may be null) is told
  /// when an analysis is computed.
  AnalysisManager(Module &module, PassInstrumentor *instrumentor);
  AnalysisManager(const AnalysisManager &) = delete;
  AnalysisManager &operator=(const AnalysisManager &) = delete;
  ~AnalysisManager();

  /// The analysis \p T of the module, computed now if it is not cached.
  template <typename T> T &getAnalysis() {
    static_assert(std::is_constructible_v<T, Module &, AnalysisManager &> ||
                      std::is_constructible_v<T, Module &>,
                  "an analysis must be constructible from Module& or from "
                  "(Module&, AnalysisManager&)");
    TypeID id = TypeID::get<T>();
    if (detail::AnalysisConcept *cached = lookupAndRecordUse(id))
      return static_cast<detail::AnalysisModel<T> *>(cached)->analysis;
    detail::AnalysisConcept *computed =
        compute(id, llvm::getTypeName<T>(), [&] {
          if constexpr (std::is_constructible_v<T, Module &, AnalysisManager &>)
            return std::unique_ptr<detail::AnalysisConcept>(
                new detail::AnalysisModel<T>(module, *this));
          else
            return std::unique_ptr<detail::AnalysisConcept>(
                new detail::AnalysisModel<T>(module));
        });
    return static_cast<detail::AnalysisModel<T> *>(computed)->analysis;
  }

  /// The analysis \p T if it is cached, without computing it.
  template <typename T> T *getCachedAnalysis() {
    auto it = analyses.find(TypeID::get<T>());
    if (it == analyses.end())
      return nullptr;
    return &static_cast<detail::AnalysisModel<T> *>(it->second.get())->analysis;
  }

  /// True if the analysis \p T is cached.
  template <typename T> bool isCached() const {
    return analyses.count(TypeID::get<T>());
  }

  /// Drops every analysis \p preserved does not keep, and every analysis
  /// that depends on a dropped one.
  void invalidate(const PreservedAnalyses &preserved);
  /// Drops every analysis.
  void clear();
  /// The module analysed.
  Module &getModule() { return module; }

private:
  using Builder =
      llvm::function_ref<std::unique_ptr<detail::AnalysisConcept>()>;
  detail::AnalysisConcept *lookupAndRecordUse(TypeID id);
  detail::AnalysisConcept *compute(TypeID id, llvm::StringRef name,
                                   Builder build);

  Module &module;
  PassInstrumentor *instrumentor;
  /// Cached analyses in the order they were computed.
  llvm::MapVector<TypeID, std::unique_ptr<detail::AnalysisConcept>> analyses;
  /// The analyses each cached analysis used while it was built.
  llvm::DenseMap<TypeID, llvm::SmallVector<TypeID, 2>> dependencies;
  /// Analyses being built, innermost last; a request made while one is being
  /// built records a dependency.
  llvm::SmallVector<TypeID, 4> computing;
};

} // namespace fastci

#endif // FASTCI_PASS_ANALYSISMANAGER_H
