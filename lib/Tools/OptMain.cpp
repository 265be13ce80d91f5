//===- OptMain.cpp - The fastci-opt driver as a library -------------------===//
//
// Parses the command line (after loading pass plugins, so their passes are
// flags too), builds one pass manager from either --pass-pipeline or the
// individual pass flags, then reads the input -- whole, or split at
// `// -----` lines -- and for each module parses, verifies, runs the
// pipeline and writes the result. Exit codes: 0 success, 1 an input, a
// plugin or a pass failed, 2 the command line is wrong.
//
//===----------------------------------------------------------------------===//
#include "fastci/Tools/OptMain.h"
#include "fastci/IR/AttrSchema.h"
#include "fastci/IR/Parser.h"
#include "fastci/IR/Printer.h"
#include "fastci/IR/Verifier.h"
#include "fastci/Pass/Parallel.h"
#include "fastci/Pass/PassPlugin.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Passes.h"
#include "fastci/Tools/DiagnosticVerifier.h"
#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace fastci;

namespace {
/// Exit codes of fastci-opt.
enum ExitCode { ExitSuccess = 0, ExitFailure = 1, ExitUsage = 2 };

/// One `--<pass>[=<options>]` flag.
struct PassArgData {
  PassArgData() = default;
  PassArgData(const PassRegistryEntry *entry) : entry(entry) {}
  const PassRegistryEntry *entry = nullptr;
  std::string options;
};
} // namespace

namespace llvm::cl {
/// llvm::cl stores parsed values in an OptionValue; give it one for pass
/// flags (as mlir-opt does).
template <>
struct OptionValue<PassArgData> final
    : OptionValueBase<PassArgData, /*isClass=*/true> {
  OptionValue(const PassArgData &value) { setValue(value); }
  OptionValue() = default;
  void anchor() override {}
  bool hasValue() const { return true; }
  const PassArgData &getValue() const { return value; }
  void setValue(const PassArgData &newValue) { value = newValue; }
  PassArgData value;
};
} // namespace llvm::cl

namespace {
/// Makes every registered pass and pipeline a flag whose optional value is
/// its options.
class PassNameParser : public llvm::cl::parser<PassArgData> {
public:
  using llvm::cl::parser<PassArgData>::parser;

  void initialize() {
    llvm::cl::parser<PassArgData>::initialize();
    for (const PassRegistryEntry *entry : getRegisteredEntries())
      addLiteralOption(entry->getArgument(), PassArgData(entry),
                       entry->getSummary());
  }

  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, PassArgData &value) {
    if (llvm::cl::parser<PassArgData>::parse(option, argName, arg, value))
      return true;
    value.options = arg.str();
    return false;
  }

  /// Lists each pass with its options under it in --help.
  void printOptionInfo(const llvm::cl::Option &option,
                       size_t globalWidth) const {
    llvm::outs() << "  Passes and pipelines (--<name>[=<key>=<value>,...]):\n";
    for (const PassRegistryEntry *entry : getRegisteredEntries()) {
      llvm::outs() << "    --" << entry->getArgument() << " - "
                   << entry->getSummary() << '\n';
      entry->printOptionHelp(llvm::outs(), 8);
    }
  }
};

/// The command line of fastci-opt. Declared in a struct so fastciOptMain can
/// be called more than once per process (cl options unregister on
/// destruction).
struct Options {
  llvm::cl::OptionCategory category{"fastci-opt options"};

  llvm::cl::opt<std::string> inputFilename{
      llvm::cl::Positional, llvm::cl::desc("<input file>"), llvm::cl::init("-"),
      llvm::cl::cat(category)};
  llvm::cl::opt<std::string> outputFilename{
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"), llvm::cl::cat(category)};
  llvm::cl::opt<ModuleFormat> emit{
      "emit", llvm::cl::desc("Output format"),
      llvm::cl::init(ModuleFormat::Text),
      llvm::cl::values(clEnumValN(ModuleFormat::Text, "fir", "textual IR"),
                       clEnumValN(ModuleFormat::JSON, "json", "JSON"),
                       clEnumValN(ModuleFormat::Bytecode, "bc", "binary")),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> splitInputFile{
      "split-input-file",
      llvm::cl::desc("Process each '// -----'-separated chunk of the input "
                     "on its own; join the outputs with '// -----'"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> verifyDiagnostics{
      "verify-diagnostics",
      llvm::cl::desc("Check emitted diagnostics against expected-* "
                     "annotations in the input"),
      llvm::cl::cat(category)};

  llvm::cl::opt<std::string> passPipeline{
      "pass-pipeline",
      llvm::cl::desc("A textual pipeline: 'a{key=value,...},b'"),
      llvm::cl::value_desc("pipeline"), llvm::cl::cat(category)};
  llvm::cl::list<PassArgData, bool, PassNameParser> passList{
      llvm::cl::desc("Passes to run, in order"), llvm::cl::ValueOptional,
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> dumpPassPipeline{
      "dump-pass-pipeline",
      llvm::cl::desc("Print the pipeline that will run, as a --pass-pipeline "
                     "value, to stderr"),
      llvm::cl::cat(category)};
  llvm::cl::opt<PassListingFormat> listPasses{
      "list-passes",
      llvm::cl::desc("List registered passes and pipelines, then exit"),
      llvm::cl::ValueOptional,
      llvm::cl::init(PassListingFormat::Text),
      llvm::cl::values(
          clEnumValN(PassListingFormat::Text, "text", "for terminals"),
          clEnumValN(PassListingFormat::Markdown, "markdown",
                     "the format of docs/Passes.md"),
          clEnumValN(PassListingFormat::Text, "", "")),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> listAttributes{
      "list-attributes",
      llvm::cl::desc("Print the declared attributes (name, nodes, value kind, "
                     "writer, readers) as docs/IR.md's table, then exit"),
      llvm::cl::cat(category)};
  llvm::cl::list<std::string> passPlugins{
      "load-pass-plugin",
      llvm::cl::desc("Load passes from a plugin (repeatable)"),
      llvm::cl::value_desc("path"), llvm::cl::cat(category)};
  llvm::cl::opt<unsigned> threads{
      "threads",
      llvm::cl::desc("Threads for parallel passes; 0 = one per hardware "
                     "thread"),
      llvm::cl::init(0), llvm::cl::cat(category)};
  llvm::cl::opt<bool> verifyEach{
      "verify-each", llvm::cl::desc("Verify the IR after each pass"),
      llvm::cl::init(true), llvm::cl::cat(category)};

  llvm::cl::list<std::string> printIRBefore{
      "print-ir-before",
      llvm::cl::desc("Print the IR before these passes (comma-separated)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("pass"),
      llvm::cl::cat(category)};
  llvm::cl::list<std::string> printIRAfter{
      "print-ir-after",
      llvm::cl::desc("Print the IR after these passes (comma-separated)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("pass"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> printIRAfterAll{
      "print-ir-after-all", llvm::cl::desc("Print the IR after every pass"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> printIRAfterChange{
      "print-ir-after-change",
      llvm::cl::desc("Print the IR after a pass only if the pass changed it "
                     "(with --print-ir-after or alone for every pass)"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> printIRAfterFailure{
      "print-ir-after-failure",
      llvm::cl::desc("Print the IR after a pass that failed"),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> timing{
      "timing", llvm::cl::desc("Report wall and CPU time of each pass"),
      llvm::cl::cat(category)};
  llvm::cl::opt<TimingDisplay> timingDisplay{
      "timing-display", llvm::cl::desc("Layout of the --timing report"),
      llvm::cl::init(TimingDisplay::List),
      llvm::cl::values(clEnumValN(TimingDisplay::List, "list",
                                  "one line per pass, slowest "
                                  "first"),
                       clEnumValN(TimingDisplay::Tree, "tree",
                                  "pipeline order, analyses under their pass")),
      llvm::cl::cat(category)};
  llvm::cl::opt<bool> passStatistics{
      "pass-statistics", llvm::cl::desc("Report the statistics of each pass"),
      llvm::cl::cat(category)};
};

constexpr const char *kOverview =
    "fastci-opt: run FastCI passes over a module\n\n"
    "  fastci-opt [input.fir|-] [-o out] [--emit=fir|json|bc] [passes...]\n\n"
    "Passes run in command-line order; give options as --pass=key=value,...\n"
    "or write the whole pipeline with --pass-pipeline='a{key=value},b'.\n\n"
    "Exit codes: 0 success; 1 an input, a plugin or a pass failed;\n"
    "2 the command line is wrong (unknown option, bad pipeline).\n";

/// Loads every --load-pass-plugin before the command line is parsed, as
/// LLVM's opt does, so plugin passes are flags and appear in --help.
LogicalResult loadPluginsFromArgv(int argc, char **argv,
                                  DiagnosticEngine &diag) {
  bool ok = true;
  for (int index = 1; index < argc; ++index) {
    llvm::StringRef arg = argv[index];
    if (arg == "--")
      break;
    llvm::StringRef flag = arg.ltrim('-');
    if (arg.size() - flag.size() > 2 || !flag.consume_front("load-pass-plugin"))
      continue;
    llvm::StringRef path;
    if (flag.consume_front("="))
      path = flag;
    else if (flag.empty() && index + 1 < argc)
      path = argv[++index];
    else
      continue; // Malformed; llvm::cl reports it.
    if (llvm::Expected<PassPlugin> plugin = PassPlugin::load(path); !plugin) {
      diag.emit(Severity::Error, "fastci-opt", 0, 0,
                llvm::toString(plugin.takeError()));
      ok = false;
    }
  }
  return success(ok);
}

/// Checks that --print-ir-before/after name registered passes.
LogicalResult checkPassNames(llvm::ArrayRef<std::string> names,
                             llvm::StringRef flag, DiagnosticEngine &diag) {
  bool ok = true;
  for (const std::string &name : names) {
    if (lookupPassRegistryEntry(name))
      continue;
    std::vector<llvm::StringRef> candidates;
    for (const PassRegistryEntry *entry : getRegisteredEntries())
      candidates.push_back(entry->getArgument());
    diag.emit(Severity::Error, "fastci-opt", 0, 0,
              llvm::formatv("--{0}: unknown pass '{1}'{2}", flag, name,
                            detail::formatDidYouMean(
                                detail::findCloseMatches(name, candidates))));
    ok = false;
  }
  return success(ok);
}

/// Builds the pipeline from --pass-pipeline or the individual pass flags.
LogicalResult buildPipeline(Options &options, PassManager &pm,
                            DiagnosticEngine &diag) {
  if (options.passPipeline.getNumOccurrences())
    return parsePassPipeline(options.passPipeline, pm, diag);
  for (const PassArgData &arg : options.passList) {
    // The flag as a one-line buffer, so option errors point into it.
    std::string flag = ("--" + arg.entry->getArgument() +
                        (arg.options.empty() ? "" : "=" + arg.options))
                           .str();
    unsigned id = diag.addBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(flag, "<command line>"));
    llvm::StringRef text = diag.getSourceMgr().getMemoryBuffer(id)->getBuffer();
    llvm::SMLoc nameLoc = llvm::SMLoc::getFromPointer(text.data() + 2);
    llvm::StringRef optionsText =
        text.drop_front(2 + arg.entry->getArgument().size());
    optionsText.consume_front("=");
    if (failed(addPassWithOptions(*arg.entry, optionsText, nameLoc, pm, diag)))
      return failure();
  }
  return success();
}

/// Parses, verifies, transforms and writes the module in buffer \p bufferId.
/// With \p bury, the module is not freed (the process exits next).
LogicalResult processBuffer(unsigned bufferId, Options &options,
                            PassManager &pm, DiagnosticEngine &diag,
                            llvm::raw_ostream &os, bool bury) {
  std::unique_ptr<Module> module = parseModule(bufferId, diag);
  if (!module || failed(verifyModule(*module, diag)) ||
      failed(pm.run(*module, diag)))
    return failure();
  writeModule(*module, options.emit, os);
  // A process about to exit need not free a large module entity by entity
  // (a tenth of a warm parse-python run): as LLVM's tools do, it is left to
  // the exit. A reference is kept, so leak checkers do not report it (only
  // the first few buried pointers are, hence not for split input).
  if (bury)
    llvm::BuryPointer(std::move(module));
  return success();
}

/// Splits \p buffer at `// -----` lines. Each chunk becomes its own buffer,
/// padded with newlines so that its line numbers are those of the file.
std::vector<unsigned> splitInput(const llvm::MemoryBuffer &buffer,
                                 DiagnosticEngine &diag) {
  std::vector<unsigned> chunks;
  llvm::StringRef rest = buffer.getBuffer();
  unsigned line = 1, chunkStartLine = 1;
  const char *chunkStart = rest.data();
  auto addChunk = [&](const char *end) {
    std::string text(chunkStartLine - 1, '\n');
    text.append(chunkStart, end);
    chunks.push_back(diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(
        text, buffer.getBufferIdentifier())));
  };
  while (!rest.empty()) {
    auto [current, next] = rest.split('\n');
    if (current.ltrim().starts_with("// -----")) {
      addChunk(current.data());
      chunkStart = next.data();
      chunkStartLine = line + 1;
    }
    rest = next;
    ++line;
  }
  addChunk(buffer.getBufferEnd());
  return chunks;
}
} // namespace

int fastci::fastciOptMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  DiagnosticEngine diag;

  registerAllPasses();
  for (const std::string &error : takeRegistrationErrors())
    diag.emit(Severity::Error, "fastci-opt", 0, 0, error);
  if (diag.getNumErrors())
    return ExitFailure;
  if (failed(loadPluginsFromArgv(argc, argv, diag)))
    return ExitFailure;

  // libLLVM registers its own --threads (for LTO); ours is the one that
  // bounds FastCI's parallel passes, so take the name over.
  if (llvm::cl::Option *llvmThreads =
          llvm::cl::getRegisteredOptions().lookup("threads"))
    llvmThreads->removeArgument();
  Options options;
  llvm::cl::HideUnrelatedOptions(options.category);
  std::string usageErrors;
  llvm::raw_string_ostream usageStream(usageErrors);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, kOverview, &usageStream)) {
    llvm::errs() << usageErrors;
    return ExitUsage;
  }

  if (options.listPasses.getNumOccurrences() || options.listAttributes) {
    std::error_code ec;
    llvm::ToolOutputFile out(options.outputFilename, ec,
                             llvm::sys::fs::OF_Text);
    if (ec) {
      diag.emit(Severity::Error, options.outputFilename, 0, 0,
                "cannot write output: " + ec.message());
      return ExitFailure;
    }
    if (options.listAttributes)
      printAttrTable(out.os());
    else
      printRegisteredPasses(out.os(), options.listPasses);
    out.keep();
    return ExitSuccess;
  }
  if (options.passPipeline.getNumOccurrences() && !options.passList.empty()) {
    diag.emit(Severity::Error, "fastci-opt", 0, 0,
              "--pass-pipeline cannot be combined with individual pass flags");
    return ExitUsage;
  }
  if (options.splitInputFile && options.emit == ModuleFormat::Bytecode) {
    diag.emit(Severity::Error, "fastci-opt", 0, 0,
              "--split-input-file joins outputs with '// -----' lines, "
              "which --emit=bc cannot hold");
    return ExitUsage;
  }
  if (failed(checkPassNames(options.printIRBefore, "print-ir-before", diag)) ||
      failed(checkPassNames(options.printIRAfter, "print-ir-after", diag)))
    return ExitUsage;

  setThreadCount(options.threads);

  PassManager pm;
  if (failed(buildPipeline(options, pm, diag)))
    return ExitUsage;
  pm.enableVerifier(options.verifyEach);
  pm.addRegisteredInstrumentations();
  bool printIR = !options.printIRBefore.empty() ||
                 !options.printIRAfter.empty() || options.printIRAfterAll ||
                 options.printIRAfterChange || options.printIRAfterFailure;
  if (printIR) {
    IRPrintingConfig config;
    config.beforePasses.insert(options.printIRBefore.begin(),
                               options.printIRBefore.end());
    config.afterPasses.insert(options.printIRAfter.begin(),
                              options.printIRAfter.end());
    // --print-ir-after-change alone means "after every pass that changed it".
    config.afterAll = options.printIRAfterAll || (options.printIRAfterChange &&
                                                  options.printIRAfter.empty());
    config.afterOnlyIfChanged = options.printIRAfterChange;
    config.afterFailure = options.printIRAfterFailure;
    pm.enableIRPrinting(std::move(config), llvm::errs());
  }
  if (options.timing)
    pm.enableTiming(options.timingDisplay);
  if (options.dumpPassPipeline) {
    llvm::errs() << "Pass Manager with " << pm.size() << " passes:\n";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << '\n';
  }

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> input =
      llvm::MemoryBuffer::getFileOrSTDIN(options.inputFilename);
  if (std::error_code ec = input.getError()) {
    diag.emit(Severity::Error, options.inputFilename, 0, 0,
              "cannot read input: " + ec.message());
    return ExitFailure;
  }
  std::vector<unsigned> buffers;
  if (options.splitInputFile)
    buffers = splitInput(**input, diag);
  else
    buffers.push_back(diag.addBuffer(std::move(*input)));

  std::optional<DiagnosticVerifier> verifier;
  if (options.verifyDiagnostics) {
    verifier.emplace(diag);
    for (unsigned id : buffers)
      verifier->addExpectations(id);
  }

  std::string output;
  llvm::raw_string_ostream outputStream(output);
  bool ok = true;
  for (auto [index, id] : llvm::enumerate(buffers)) {
    if (index)
      outputStream << "// -----\n";
    ok &= succeeded(processBuffer(id, options, pm, diag, outputStream,
                                  /*bury=*/buffers.size() == 1));
  }
  if (verifier)
    ok = succeeded(verifier->verify());

  if (options.timing)
    pm.printTimingReport(llvm::errs());
  if (options.passStatistics)
    pm.printStatistics(llvm::errs());

  std::error_code ec;
  llvm::ToolOutputFile out(options.outputFilename, ec, llvm::sys::fs::OF_None);
  if (ec) {
    diag.emit(Severity::Error, options.outputFilename, 0, 0,
              "cannot write output: " + ec.message());
    return ExitFailure;
  }
  out.os() << output;
  out.keep();
  return ok ? ExitSuccess : ExitFailure;
}
