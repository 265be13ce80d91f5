//===- PassRegistry.cpp - Named passes and pipelines ----------------------===//
//
// The process-wide registry of passes and named pipelines, shared by
// built-in passes and plugins, and the listings generated from it
// (--list-passes and docs/Passes.md).
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

PassRegistryEntry::PassRegistryEntry(llvm::StringRef argument,
                                     llvm::StringRef summary,
                                     llvm::StringRef description, bool pipeline)
    : argument(argument.str()), summary(summary.str()),
      description(description.str()), pipeline(pipeline) {}

PassRegistryEntry::~PassRegistryEntry() = default;

void PassRegistryEntry::printOptionHelp(llvm::raw_ostream &os,
                                        unsigned indent) const {
  withDefaultOptions(
      [&](const PassOptions &options) { options.printHelp(os, indent); });
}

namespace {
/// A registered pass.
class PassInfo : public PassRegistryEntry {
public:
  PassInfo(const Pass &prototype, PassAllocatorFunction allocator)
      : PassRegistryEntry(prototype.getArgument(), prototype.getSummary(),
                          prototype.getDescription(), /*pipeline=*/false),
        typeID(prototype.getTypeID()), allocator(std::move(allocator)) {}

  TypeID getPassTypeID() const { return typeID; }

  void withDefaultOptions(
      llvm::function_ref<void(const PassOptions &)> fn) const override {
    fn(allocator()->getOptions());
  }

  LogicalResult addToPipeline(PassManager &pm, const PipelineElement &element,
                              DiagnosticEngine &diag) const override {
    std::unique_ptr<Pass> pass = allocator();
    if (failed(element.applyTo(pass->getOptions(),
                               "pass '" + getArgument().str() + "'", diag)))
      return failure();
    pass->setLoc(element.nameLoc);
    pm.addPass(std::move(pass));
    return success();
  }

private:
  TypeID typeID;
  PassAllocatorFunction allocator;
};

/// A registered named pipeline.
class PassPipelineInfo : public PassRegistryEntry {
public:
  PassPipelineInfo(llvm::StringRef argument, llvm::StringRef summary,
                   PipelineOptionsFactory makeOptions, PipelineBuilder builder)
      : PassRegistryEntry(argument, summary, "", /*pipeline=*/true),
        makeOptions(std::move(makeOptions)), builder(std::move(builder)) {}

  void withDefaultOptions(
      llvm::function_ref<void(const PassOptions &)> fn) const override {
    fn(*makeOptions());
  }

  LogicalResult addToPipeline(PassManager &pm, const PipelineElement &element,
                              DiagnosticEngine &diag) const override {
    std::unique_ptr<PassOptions> options = makeOptions();
    if (failed(element.applyTo(
            *options, "pipeline '" + getArgument().str() + "'", diag)) ||
        failed(options->verify(diag, element.nameLoc)))
      return failure();
    PassManager expansion;
    builder(expansion, *options);
    // Failures of the expanded passes point at the pipeline's name.
    for (const auto &pass : expansion.getPasses())
      pass->setLoc(element.nameLoc);
    pm.appendPassesFrom(expansion);
    return success();
  }

private:
  PipelineOptionsFactory makeOptions;
  PipelineBuilder builder;
};

/// The registry proper.
struct Registry {
  llvm::StringMap<std::unique_ptr<PassRegistryEntry>> entries;
  std::vector<std::string> errors;
};
} // namespace

static Registry &getRegistry() {
  static Registry registry;
  return registry;
}

void fastci::registerPass(const PassAllocatorFunction &allocator) {
  std::unique_ptr<Pass> prototype = allocator();
  Registry &registry = getRegistry();
  llvm::StringRef argument = prototype->getArgument();
  auto it = registry.entries.find(argument);
  if (it != registry.entries.end()) {
    // Registering the same pass twice (say, two calls of a register
    // function) is harmless; two passes under one name are not.
    auto *existing = dynamic_cast<PassInfo *>(it->second.get());
    if (!existing || existing->getPassTypeID() != prototype->getTypeID())
      registry.errors.push_back(
          llvm::formatv("pass '{0}' ({1}) is already registered", argument,
                        prototype->getName()));
    return;
  }
  registry.entries[argument] =
      std::make_unique<PassInfo>(*prototype, allocator);
}

void fastci::registerPassPipeline(llvm::StringRef argument,
                                  llvm::StringRef summary,
                                  PipelineOptionsFactory makeOptions,
                                  PipelineBuilder builder) {
  Registry &registry = getRegistry();
  if (registry.entries.count(argument)) {
    registry.errors.push_back(
        llvm::formatv("pass pipeline '{0}' is already registered", argument));
    return;
  }
  registry.entries[argument] = std::make_unique<PassPipelineInfo>(
      argument, summary, std::move(makeOptions), std::move(builder));
}

const PassRegistryEntry *
fastci::lookupPassRegistryEntry(llvm::StringRef argument) {
  auto &entries = getRegistry().entries;
  auto it = entries.find(argument);
  return it == entries.end() ? nullptr : it->second.get();
}

std::vector<const PassRegistryEntry *> fastci::getRegisteredEntries() {
  std::vector<const PassRegistryEntry *> result;
  for (auto &entry : getRegistry().entries)
    result.push_back(entry.second.get());
  llvm::sort(result,
             [](const PassRegistryEntry *lhs, const PassRegistryEntry *rhs) {
               return lhs->getArgument() < rhs->getArgument();
             });
  return result;
}

std::vector<std::string> fastci::takeRegistrationErrors() {
  return std::exchange(getRegistry().errors, {});
}

bool fastci::isTestPassArgument(llvm::StringRef argument) {
  return argument.starts_with("test-");
}

//===----------------------------------------------------------------------===//
// Listings
//===----------------------------------------------------------------------===//

static void printText(llvm::raw_ostream &os) {
  auto printGroup = [&](llvm::StringRef title, bool pipelines) {
    os << title << ":\n";
    for (const PassRegistryEntry *entry : getRegisteredEntries()) {
      if (entry->isPipeline() != pipelines)
        continue;
      os << "  " << entry->getArgument() << " - " << entry->getSummary()
         << '\n';
      entry->printOptionHelp(os, 6);
    }
  };
  printGroup("Passes", /*pipelines=*/false);
  printGroup("Pass pipelines", /*pipelines=*/true);
}

/// Escapes a Markdown table cell.
static std::string escapeCell(llvm::StringRef text) {
  std::string escaped;
  for (char c : text) {
    if (c == '|')
      escaped += '\\';
    escaped += c;
  }
  return escaped;
}

/// The options of a pass or pipeline as a Markdown table.
static void printOptionsTable(const PassOptions &options,
                              llvm::raw_ostream &os) {
  if (options.getOptions().empty())
    return;
  os << "\n| Option | Value | Default | Description |\n"
        "|---|---|---|---|\n";
  for (const OptionBase *option : options.getOptions()) {
    std::string defaultValue;
    llvm::raw_string_ostream defaultStream(defaultValue);
    option->printDefault(defaultStream);
    os << "| `" << option->getArgument() << "` | `"
       << escapeCell(option->getValueDescription()) << "` | "
       << (defaultValue.empty() || defaultValue == "{}"
               ? ""
               : "`" + escapeCell(defaultValue) + "`")
       << " | " << escapeCell(option->getDescription()) << " |\n";
  }
}

static void printMarkdown(llvm::raw_ostream &os) {
  os << "<!-- Generated by `fastci-opt --list-passes=markdown`; do not edit.\n"
        "     Regenerate with `cmake --build build --target fastci-docs`. -->\n"
        "# Passes\n\n"
        "Every pass and pipeline built into `fastci-opt`, with its options. "
        "Run one with\n`fastci-opt --<pass>=<key>=<value>,...` or inside "
        "`--pass-pipeline='<pass>{<key>=<value>,...}'`.\n";
  auto printGroup = [&](llvm::StringRef title, bool pipelines) {
    bool printedTitle = false;
    for (const PassRegistryEntry *entry : getRegisteredEntries()) {
      if (entry->isPipeline() != pipelines ||
          isTestPassArgument(entry->getArgument()))
        continue;
      if (!printedTitle)
        os << "\n## " << title << "\n";
      printedTitle = true;
      os << "\n### `" << entry->getArgument() << "`\n\n"
         << entry->getSummary() << '\n';
      if (!entry->getDescription().empty())
        os << '\n' << entry->getDescription().trim() << '\n';
      entry->withDefaultOptions(
          [&](const PassOptions &options) { printOptionsTable(options, os); });
    }
  };
  printGroup("Passes", /*pipelines=*/false);
  printGroup("Pipelines", /*pipelines=*/true);
}

void fastci::printRegisteredPasses(llvm::raw_ostream &os,
                                   PassListingFormat format) {
  if (format == PassListingFormat::Markdown)
    printMarkdown(os);
  else
    printText(os);
}
