//===- Pass.h - The base class of every FastCI pass -------------*- C++ -*-===//
//
// A pass transforms or analyses one Module. Subclass PassWrapper<YourPass>,
// give it a kebab-case argument and a one-line summary, declare options and
// statistics as members, and implement runOnModule():
//
//   struct TagSlow : PassWrapper<TagSlow> {
//     llvm::StringRef getArgument() const override { return "tag-slow"; }
//     llvm::StringRef getSummary() const override { return "Tag slow tests"; }
//     Option<double> threshold{*this, "threshold", llvm::cl::init(60.0)};
//     Statistic numTagged{this, "num-tagged", "Number of tests tagged"};
//     void runOnModule() override;
//   };
//
// A pass reports a problem through getDiagnostics() and calls
// signalPassFailure(); the pipeline stops there. By default every analysis is
// invalidated after a pass runs; a pass that leaves some valid says so with
// markAnalysesPreserved<...>() or markAllAnalysesPreserved().
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PASS_H
#define FASTCI_PASS_PASS_H

#include "fastci/Pass/AnalysisManager.h"
#include "fastci/Pass/PassOptions.h"
#include "fastci/Pass/TypeID.h"
#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/TypeName.h"
#include <atomic>
#include <cassert>
#include <optional>

namespace fastci {

class Module;
class PassManager;

/// The base class of passes; derive from PassWrapper rather than from this.
class Pass {
public:
  Pass(const Pass &) = delete;
  Pass &operator=(const Pass &) = delete;
  virtual ~Pass();

  /// The kebab-case name used on the command line and in pipelines.
  virtual llvm::StringRef getArgument() const = 0;
  /// A one-line summary for --help, --list-passes and docs/Passes.md.
  virtual llvm::StringRef getSummary() const = 0;
  /// A longer, Markdown description for docs/Passes.md (may be empty).
  virtual llvm::StringRef getDescription() const { return ""; }
  /// The C++ class name, for diagnostics about the pass itself.
  virtual llvm::StringRef getName() const = 0;
  /// The type of the most derived pass class.
  TypeID getTypeID() const { return typeID; }

  /// Checks option values and prepares state that does not depend on the
  /// module. Runs once for every pass of a pipeline before any pass runs, so
  /// a bad option is reported before the pipeline does any work.
  virtual LogicalResult initialize(DiagnosticEngine &diag) { return success(); }

  /// A scalar pass option; see PassOptions.h.
  template <typename T> struct Option : PassOptions::Option<T> {
    template <typename... Modifiers>
    Option(Pass &owner, llvm::StringRef argument, const Modifiers &...modifiers)
        : PassOptions::Option<T>(owner.options, argument, modifiers...) {}
    using PassOptions::Option<T>::operator=;
  };
  /// A list pass option; see PassOptions.h.
  template <typename T> struct ListOption : PassOptions::ListOption<T> {
    template <typename... Modifiers>
    ListOption(Pass &owner, llvm::StringRef argument,
               const Modifiers &...modifiers)
        : PassOptions::ListOption<T>(owner.options, argument, modifiers...) {}
    using PassOptions::ListOption<T>::operator=;
  };

  /// A counter reported by --pass-statistics. Increments are atomic, so
  /// parallelFor workers may bump it.
  class Statistic {
  public:
    /// Declares the statistic \p name of \p owner.
    Statistic(Pass *owner, const char *name, const char *description);
    Statistic(const Statistic &) = delete;
    Statistic &operator=(const Statistic &) = delete;

    llvm::StringRef getName() const { return name; }
    llvm::StringRef getDescription() const { return description; }
    uint64_t getValue() const { return value.load(std::memory_order_relaxed); }
    operator uint64_t() const { return getValue(); }

    Statistic &operator++() { return *this += 1; }
    Statistic &operator+=(uint64_t amount) {
      value.fetch_add(amount, std::memory_order_relaxed);
      return *this;
    }
    Statistic &operator=(uint64_t newValue) {
      value.store(newValue, std::memory_order_relaxed);
      return *this;
    }

  private:
    const char *name;
    const char *description;
    std::atomic<uint64_t> value{0};
  };

  /// The options of this pass.
  PassOptions &getOptions() { return options; }
  const PassOptions &getOptions() const { return options; }
  /// The statistics of this pass, in declaration order.
  llvm::ArrayRef<Statistic *> getStatistics() const { return statistics; }

  /// Where the pass was named in the pipeline text (invalid when built in
  /// code); failures without a better location point here.
  llvm::SMLoc getLoc() const { return loc; }
  void setLoc(llvm::SMLoc newLoc) { loc = newLoc; }

  /// Prints `argument{key=value,...}`, which parses back to this pass.
  void printAsTextualPipeline(llvm::raw_ostream &os) const;

protected:
  explicit Pass(TypeID typeID) : typeID(typeID) {}

  /// The work of the pass.
  virtual void runOnModule() = 0;

  /// The module being transformed (only valid inside runOnModule).
  Module &getModule() { return getState().module; }
  /// Where to report problems; thread-safe.
  DiagnosticEngine &getDiagnostics() { return getState().diag; }
  /// The analysis manager of the current run.
  AnalysisManager &getAnalysisManager() { return getState().analyses; }
  /// The analysis \p T of the module, computed on demand and cached.
  template <typename T> T &getAnalysis() {
    return getAnalysisManager().template getAnalysis<T>();
  }
  /// The analysis \p T if a previous pass left it cached, else null.
  template <typename T> T *getCachedAnalysis() {
    return getAnalysisManager().template getCachedAnalysis<T>();
  }

  /// Marks the pass as failed; the pipeline stops after it. Report why
  /// through getDiagnostics() first, or a generic error is emitted.
  void signalPassFailure() { getState().failed = true; }
  /// Declares that this run left every analysis valid.
  void markAllAnalysesPreserved() { getState().preserved.preserveAll(); }
  /// Declares that this run left the analyses \p Ts valid.
  template <typename... Ts> void markAnalysesPreserved() {
    getState().preserved.template preserve<Ts...>();
  }

private:
  friend class PassManager;

  /// What a pass may reach while it runs.
  struct ExecutionState {
    Module &module;
    DiagnosticEngine &diag;
    AnalysisManager &analyses;
    PreservedAnalyses preserved;
    bool failed = false;
  };
  ExecutionState &getState() {
    assert(state && "only valid while the pass runs");
    return *state;
  }

  TypeID typeID;
  PassOptions options;
  std::vector<Statistic *> statistics;
  llvm::SMLoc loc;
  std::optional<ExecutionState> state;
};

/// The CRTP base of concrete passes: supplies the type identity and name.
template <typename Derived, typename Base = Pass>
class PassWrapper : public Base {
public:
  llvm::StringRef getName() const override {
    return llvm::getTypeName<Derived>();
  }
  /// Supports llvm::isa<Derived>(pass).
  static bool classof(const Pass *pass) {
    return pass->getTypeID() == TypeID::get<Derived>();
  }

protected:
  PassWrapper() : Base(TypeID::get<Derived>()) {}
};

} // namespace fastci

#endif // FASTCI_PASS_PASS_H
