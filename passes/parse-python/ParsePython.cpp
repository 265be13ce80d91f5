//===- ParsePython.cpp - The parse-python pass ----------------------------===//
//
// parse-python{root=<dir>,include=<globs>,exclude=<globs>,jobs=<n>,
// cache=<dir>} turns a Python repository into IR: files, modules, classes,
// functions, import and call edges, and pytest items. It is the first pass of
// every pipeline. The work lives in lib/Python (see
// fastci/Python/RepositoryImporter.h); this file binds it to the pipeline:
// option checks up front, statistics, and the rule that problems with single
// files are warnings while an unusable root or cache fails the pass.
// docs/ParsePython.md specifies the output.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Module.h"
#include "fastci/Pass/Pass.h"
#include "fastci/Pass/PassRegistry.h"
#include "fastci/Python/RepositoryImporter.h"
#include "llvm/Support/FileSystem.h"

using namespace fastci;

namespace {
struct ParsePythonPass : PassWrapper<ParsePythonPass> {
  llvm::StringRef getArgument() const override { return "parse-python"; }
  llvm::StringRef getSummary() const override {
    return "Import the code entities and pytest tests of a Python repository";
  }
  llvm::StringRef getDescription() const override {
    return "Walks `root` (skipping VCS, build and virtual-env directories and "
           "whatever .gitignore files exclude), parses every selected `.py` "
           "file with tree-sitter in parallel and adds a file and a module "
           "entity per file, its classes and functions with CPython "
           "`__qualname__` symbols and `ast` line ranges, normalized content "
           "hashes, `import`/`call` edges, and pytest items with their node "
           "ids, markers and `fastci` marker scope and workload. With "
           "`cache`, unchanged files are not parsed again. See "
           "docs/ParsePython.md.";
  }

  Option<std::string> root{*this, "root",
                           llvm::cl::desc("The repository to import")};
  ListOption<std::string> include{
      *this, "include",
      llvm::cl::desc("Globs of files to import (default: every .py file)")};
  ListOption<std::string> exclude{
      *this, "exclude",
      llvm::cl::desc("Globs of files or directories to skip")};
  Option<unsigned> jobs{
      *this, "jobs",
      llvm::cl::desc("Parser threads (0: as many as the machine has)"),
      llvm::cl::init(0)};
  Option<std::string> cache{
      *this, "cache",
      llvm::cl::desc("Directory caching per-file results by content hash")};

  Statistic numFiles{this, "files", "Python files found"};
  Statistic numParsed{this, "files-parsed", "Files parsed with tree-sitter"};
  Statistic numCached{this, "files-cached", "Files taken from the cache"};
  Statistic numLinked{this, "files-linked",
                      "Test files whose pytest items were linked again"};
  Statistic numEntities{this, "entities", "Code entities added"};
  Statistic numTests{this, "tests", "pytest items added"};
  Statistic walkMicros{this, "us-walk", "Microseconds walking the tree"};
  Statistic cacheReadMicros{this, "us-cache-read",
                            "Microseconds mapping the summary cache"};
  Statistic filesMicros{this, "us-files",
                        "Microseconds summarizing files (cache hits, reads, "
                        "parses)"};
  Statistic cacheWriteMicros{
      this, "us-cache-write",
      "Microseconds writing the summary cache (beyond the IR build, which "
      "the write overlaps)"};
  Statistic linkMicros{this, "us-link",
                       "Microseconds linking pytest items across files"};
  Statistic buildMicros{this, "us-ir", "Microseconds building the IR"};

  LogicalResult initialize(DiagnosticEngine &diag) override {
    if (root.getValue().empty()) {
      diag.error(getLoc(), "parse-python needs 'root', the repository to "
                           "import");
      return failure();
    }
    if (!llvm::sys::fs::is_directory(root.getValue())) {
      diag.error(root.hasValue() ? root.getLoc() : getLoc(),
                 "'root' is not a directory: " + root.getValue());
      return failure();
    }
    if (!cache.getValue().empty() && llvm::sys::fs::exists(cache.getValue()) &&
        !llvm::sys::fs::is_directory(cache.getValue())) {
      diag.error(cache.getLoc(),
                 "'cache' is not a directory: " + cache.getValue());
      return failure();
    }
    if (jobs > 4096) {
      diag.error(jobs.getLoc(), "'jobs' must be at most 4096");
      return failure();
    }
    for (const std::string &glob : include)
      if (glob.empty()) {
        diag.error(include.getLoc(), "'include' globs must not be empty");
        return failure();
      }
    for (const std::string &glob : exclude)
      if (glob.empty()) {
        diag.error(exclude.getLoc(), "'exclude' globs must not be empty");
        return failure();
      }
    return success();
  }

  void runOnModule() override {
    python::ImportOptions options;
    options.tree.root = root;
    options.tree.include.assign(include.begin(), include.end());
    options.tree.exclude.assign(exclude.begin(), exclude.end());
    options.jobs = jobs;
    options.cacheDir = cache;
    Module &module = getModule();
    size_t entitiesBefore = module.getNumEntities();
    size_t testsBefore = module.getNumTests();
    python::ImportStatistics stats;
    if (failed(python::importPythonRepository(module, options, getDiagnostics(),
                                              stats)))
      return signalPassFailure();
    numFiles += stats.filesFound;
    numParsed += stats.filesParsed;
    numCached += stats.filesCached;
    numLinked += stats.filesLinked;
    numEntities += module.getNumEntities() - entitiesBefore;
    numTests += module.getNumTests() - testsBefore;
    walkMicros += stats.walkMicros;
    cacheReadMicros += stats.cacheReadMicros;
    filesMicros += stats.filesMicros;
    cacheWriteMicros += stats.cacheWriteMicros;
    linkMicros += stats.linkMicros;
    buildMicros += stats.buildMicros;
  }
};
} // namespace

namespace fastci {
void registerParsePythonPasses() {
  static PassRegistration<ParsePythonPass> registration;
}
} // namespace fastci
