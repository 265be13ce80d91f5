//===- PassRegistry.h - Named passes and pipelines --------------*- C++ -*-===//
//
// One registry holds every pass and named pipeline fastci-opt knows, whether
// built in (registerAllPasses() in fastci/Passes.h) or loaded from a plugin:
// both register through PassRegistration<T> / registerPass(). Pipelines are
// written as text -- `parse-python{root=.},select-affected,schedule{runners=4}`
// -- and parsed here with positioned diagnostics.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PASS_PASSREGISTRY_H
#define FASTCI_PASS_PASSREGISTRY_H

#include "fastci/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fastci {

//===----------------------------------------------------------------------===//
// Textual pipelines
//===----------------------------------------------------------------------===//

/// One `name{options}` of a parsed pipeline, before it is resolved.
class PipelineElement {
public:
  /// One `key=value` in the options.
  struct OptionEntry {
    /// The option's name and where it is written.
    std::string key;
    llvm::SMLoc keyLoc;
    /// The value's tokens: one for a scalar or a bare/quoted value, the
    /// elements for a braced value (split at top-level commas).
    std::vector<OptionValueToken> elements;
    /// The raw text of a braced value, for scalar options that want it all.
    OptionValueToken braced;
    /// True when the value was written in braces.
    bool isBraced = false;
    /// False for a bare `key`, which a bool option reads as `key=true`.
    bool hasValue = false;
  };
  /// The pass or pipeline name and where it is written.
  std::string name;
  llvm::SMLoc nameLoc;
  /// The options in the order written.
  std::vector<OptionEntry> options;

  /// Applies options to \p target, reporting unknown keys and bad values.
  /// \p what names the owner in messages ("pass 'schedule'").
  LogicalResult applyTo(PassOptions &target, llvm::StringRef what,
                        DiagnosticEngine &diag) const;
};

/// Builds a fresh instance of a pass.
using PassAllocatorFunction = std::function<std::unique_ptr<Pass>()>;

/// What the registry knows about a pass or a named pipeline.
class PassRegistryEntry {
public:
  virtual ~PassRegistryEntry();
  /// The name used in pipelines and as a command-line flag.
  llvm::StringRef getArgument() const { return argument; }
  /// One-line summary.
  llvm::StringRef getSummary() const { return summary; }
  /// Longer Markdown description (may be empty).
  llvm::StringRef getDescription() const { return description; }
  /// True for a named pipeline, false for a pass.
  bool isPipeline() const { return pipeline; }
  /// Calls \p fn with the options of a fresh instance, defaults in place.
  virtual void withDefaultOptions(
      llvm::function_ref<void(const PassOptions &)> fn) const = 0;
  /// Prints the options this entry accepts, one per line.
  void printOptionHelp(llvm::raw_ostream &os, unsigned indent) const;
  /// Appends the pass(es) \p element names to \p pm with its options;
  /// every pass added is located at the element's name.
  virtual LogicalResult addToPipeline(PassManager &pm,
                                      const PipelineElement &element,
                                      DiagnosticEngine &diag) const = 0;

protected:
  PassRegistryEntry(llvm::StringRef argument, llvm::StringRef summary,
                    llvm::StringRef description, bool pipeline);

private:
  std::string argument, summary, description;
  bool pipeline;
};

/// Registers the pass built by \p allocator under its getArgument(). A name
/// already taken is recorded and reported by takeRegistrationErrors().
void registerPass(const PassAllocatorFunction &allocator);

/// Registers the pass \p T when constructed:
///   static PassRegistration<MyPass> reg;  // or inside a register function
template <typename T> struct PassRegistration {
  PassRegistration() {
    registerPass([] { return std::unique_ptr<Pass>(std::make_unique<T>()); });
  }
};

/// Options of a named pipeline: derive `struct MyOptions :
/// PassPipelineOptions<MyOptions>` and declare Option/ListOption members.
template <typename Derived> class PassPipelineOptions : public PassOptions {};

/// The options of a pipeline that takes none.
struct EmptyPipelineOptions : PassPipelineOptions<EmptyPipelineOptions> {};

/// Builds a named pipeline into a pass manager.
using PipelineBuilder =
    std::function<void(PassManager &pm, const PassOptions &options)>;
/// Creates the options object of a named pipeline.
using PipelineOptionsFactory = std::function<std::unique_ptr<PassOptions>()>;

/// Registers a named pipeline; see PassPipelineRegistration.
void registerPassPipeline(llvm::StringRef argument, llvm::StringRef summary,
                          PipelineOptionsFactory makeOptions,
                          PipelineBuilder builder);

/// Registers a named pipeline that expands to other passes:
///   PassPipelineRegistration<>("fastci-default", "Select and schedule",
///       [](PassManager &pm) { pm.addPass(...); });
template <typename Options = EmptyPipelineOptions>
struct PassPipelineRegistration {
  PassPipelineRegistration(
      llvm::StringRef argument, llvm::StringRef summary,
      std::function<void(PassManager &, const Options &)> builder) {
    registerPassPipeline(
        argument, summary, [] { return std::make_unique<Options>(); },
        [builder](PassManager &pm, const PassOptions &options) {
          builder(pm, static_cast<const Options &>(options));
        });
  }
};

/// The pipeline registration of one that takes no options.
template <> struct PassPipelineRegistration<EmptyPipelineOptions> {
  PassPipelineRegistration(llvm::StringRef argument, llvm::StringRef summary,
                           std::function<void(PassManager &)> builder) {
    registerPassPipeline(
        argument, summary,
        [] { return std::make_unique<EmptyPipelineOptions>(); },
        [builder](PassManager &pm, const PassOptions &) { builder(pm); });
  }
};

/// The pass or pipeline named \p argument, or null.
const PassRegistryEntry *lookupPassRegistryEntry(llvm::StringRef argument);
/// Every registered entry, sorted by argument.
std::vector<const PassRegistryEntry *> getRegisteredEntries();
/// Returns and clears the problems found while registering (duplicates).
std::vector<std::string> takeRegistrationErrors();
/// True for passes that exist only to test FastCI itself: by convention
/// their argument starts with `test-`, as in MLIR. They are left out of
/// docs/Passes.md.
bool isTestPassArgument(llvm::StringRef argument);

/// How --list-passes prints.
enum class PassListingFormat { Text, Markdown };
/// Prints every registered pass and pipeline with its options; Markdown is
/// the format of docs/Passes.md and omits test passes.
void printRegisteredPasses(llvm::raw_ostream &os, PassListingFormat format);

/// Parses the pipeline \p text (registered in \p diag's SourceMgr as
/// \p bufferName) and appends its passes to \p pm. Nothing is appended on
/// error, so a pipeline that does not parse never half-runs.
LogicalResult parsePassPipeline(llvm::StringRef text, PassManager &pm,
                                DiagnosticEngine &diag,
                                llvm::StringRef bufferName = "<pass-pipeline>");

/// Appends the pass or pipeline \p argument with the options \p text, as
/// written in `--argument=text` (braces optional). \p text must lie inside
/// a buffer of \p diag's SourceMgr so errors can point into it.
LogicalResult addPassWithOptions(const PassRegistryEntry &entry,
                                 llvm::StringRef text, llvm::SMLoc nameLoc,
                                 PassManager &pm, DiagnosticEngine &diag);

/// Parses `key=value,...` (braces optional) into \p options. \p text must
/// lie inside a buffer of \p diag's SourceMgr.
LogicalResult parsePassOptions(llvm::StringRef text, PassOptions &options,
                               llvm::StringRef what, DiagnosticEngine &diag);

} // namespace fastci

#endif // FASTCI_PASS_PASSREGISTRY_H
