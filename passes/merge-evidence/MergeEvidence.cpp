//===- MergeEvidence.cpp - The merge-evidence pass ------------------------===//
//
// merge-evidence{dir=<dir>} ingests the runtime evidence (sampled Python
// stacks) under a directory into the module: per test, stacks of repository
// entities and library leaves with sample counts, and how far each test's
// evidence can be trusted (`evidence = "fresh" | "unverified" | "stale" |
// "missing"`). The work is done by mergeEvidence() (lib/Evidence); this file
// binds it to the pass pipeline. The rules are in docs/Evidence.md.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceGraph.h"
#include "fastci/Evidence/EvidenceMerger.h"
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {

struct MergeEvidencePass : PassWrapper<MergeEvidencePass> {
  llvm::StringRef getArgument() const override { return "merge-evidence"; }
  llvm::StringRef getSummary() const override {
    return "Merge sampled runtime stacks (evidence files) into the module";
  }
  llvm::StringRef getDescription() const override {
    return "Reads every `*.stacks` file under `dir` (FastCI's format or "
           "py-spy's raw format) in parallel, maps frames onto entities, "
           "unions the samples of every run of a test per rank and revision, "
           "and marks each test `evidence = fresh | unverified | stale | "
           "missing`, with `stale_entities` when code it ran has changed. "
           "See docs/Evidence.md.";
  }

  Option<std::string> directory{
      *this, "dir", llvm::cl::desc("Directory of evidence files (required)")};
  Option<unsigned> contextDepth{
      *this, "k",
      llvm::cl::desc("Callers kept per calling context in the EvidenceGraph"),
      llvm::cl::init(EvidenceGraph::kDefaultContextDepth)};
  Option<std::string> pyspyTestId{
      *this, "pyspy-test-id",
      llvm::cl::desc(
          "Test id of py-spy files (default: their directory name)")};
  Option<std::string> root{
      *this, "root",
      llvm::cl::desc("Repository root stripped from absolute frame paths "
                     "(default: the file's header, else the module's `root`)")};
  Option<bool> addUnknownTests{
      *this, "add-unknown-tests",
      llvm::cl::desc("Add tests only evidence names (else warn and drop)"),
      llvm::cl::init(true)};
  Option<bool> printGraph{
      *this, "print-graph",
      llvm::cl::desc("Print the EvidenceGraph to stdout after merging"),
      llvm::cl::init(false)};

  Statistic numFiles{this, "num-files", "Evidence files read"};
  Statistic numSkippedFiles{this, "num-skipped-files",
                            "Evidence files skipped (bad header)"};
  Statistic numLines{this, "num-lines", "Stack lines read"};
  Statistic numMalformedLines{this, "num-malformed-lines",
                              "Stack lines skipped as malformed"};
  Statistic numSamples{this, "num-samples", "Samples merged"};
  Statistic numStaleSamples{this, "num-stale-samples",
                            "Samples through code changed since recording"};
  Statistic numRecords{this, "num-records", "Evidence records added"};
  Statistic numAddedTests{this, "num-added-tests",
                          "Tests added because only evidence names them"};
  Statistic numGoneTests{this, "num-gone-tests",
                         "Tests whose evidence was dropped: deleted since "
                         "recording"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    if (directory.getValue().empty()) {
      diag.error(getLoc(), "merge-evidence needs 'dir=<directory>'");
      return failure();
    }
    if (contextDepth == 0) {
      diag.error(getLoc(), "merge-evidence option 'k' must be at least 1");
      return failure();
    }
    return success();
  }

  void runOnModule() override {
    MergeEvidenceOptions options;
    options.directory = directory;
    options.pyspyTestId = pyspyTestId;
    options.root = root;
    options.addUnknownTests = addUnknownTests;
    options.contextDepth = contextDepth;
    MergeEvidenceStats stats;
    if (failed(mergeEvidence(getModule(), options, getDiagnostics(), &stats)))
      return signalPassFailure();
    numFiles += stats.files;
    numSkippedFiles += stats.skippedFiles;
    numLines += stats.lines;
    numMalformedLines += stats.malformedLines;
    numSamples += stats.samples;
    numStaleSamples += stats.staleSamples;
    numRecords += stats.records;
    numAddedTests += stats.addedTests;
    numGoneTests += stats.goneTests;
    if (printGraph)
      getAnalysis<EvidenceGraph>().print(llvm::outs());
  }
};

} // namespace

namespace fastci {
void registerMergeEvidencePasses() {
  static PassRegistration<MergeEvidencePass> registration;
}
} // namespace fastci
