//===- fastci-parse-python-split.cpp - Where parse-python's time goes -----===//
//
// Times the stages of parse-python one after another on one thread, over
// the files the pass would select under --root: the walk, reading the
// files, tree-sitter's ts_parser_parse alone (with the per-file arena, as
// the pass runs it, and with the system allocator), and the whole per-file
// analysis (parse, tree walk, hashes, edges, pytest items). Each stage is
// run --repeat times and the fastest run is reported, in CPU seconds of
// this thread, with MB/s. bench.py compares the parse-only figure with
// CPython's: it is the floor no change outside tree-sitter can go below.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/Analyzer.h"
#include "fastci/Python/ParserArena.h"
#include "fastci/Python/SourceTree.h"
#include "fastci/Support/Diagnostics.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <ctime>
#include <functional>
#include <memory>
#include <tree_sitter/api.h>

extern "C" const TSLanguage *tree_sitter_python(void);

using namespace fastci;
using namespace fastci::python;

static llvm::cl::opt<std::string>
    rootDir("root", llvm::cl::desc("Repository root"), llvm::cl::Required);
static llvm::cl::opt<unsigned>
    repeat("repeat", llvm::cl::desc("Runs of each stage"), llvm::cl::init(3));

/// CPU seconds of the calling thread.
static double threadSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

static double best(const std::function<void()> &stage) {
  double fastest = 1e30;
  for (unsigned i = 0; i < std::max(1u, unsigned(repeat)); ++i) {
    double start = threadSeconds();
    stage();
    fastest = std::min(fastest, threadSeconds() - start);
  }
  return fastest;
}

/// Parses \p source with a fresh parser and frees everything.
static void parseOnly(llvm::StringRef source) {
  ParserArenaScope arena;
  TSParser *parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  ts_parser_set_timeout_micros(parser, 30'000'000);
  TSTree *tree = ts_parser_parse_string(parser, nullptr, source.data(),
                                        static_cast<uint32_t>(source.size()));
  if (!arena.reclaimsAll())
    ts_tree_delete(tree);
  ts_parser_delete(parser);
}

/// The same with one parser reused and the system allocator.
static void parseOnlySystem(TSParser *parser, llvm::StringRef source) {
  ts_parser_reset(parser);
  ts_tree_delete(ts_parser_parse_string(parser, nullptr, source.data(),
                                        static_cast<uint32_t>(source.size())));
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "parse-python stage timer\n");
  // Before tree-sitter allocates anything, as analyzePythonSource would.
  installParserArena();

  DiagnosticEngine diag;
  SourceTreeOptions options;
  options.root = rootDir;
  bool failed = false;
  std::vector<SourceFile> files;
  double walk =
      best([&] { files = collectSourceFiles(options, diag, failed); });
  if (failed)
    return 1;

  std::vector<std::unique_ptr<llvm::MemoryBuffer>> buffers(files.size());
  auto readAll = [&] {
    for (size_t i = 0; i < files.size(); ++i) {
      llvm::SmallString<256> path(rootDir);
      llvm::sys::path::append(path, files[i].path);
      auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
      buffers[i] =
          buffer ? std::move(*buffer) : llvm::MemoryBuffer::getMemBuffer("");
    }
  };
  double read = best(readAll);
  uint64_t bytes = 0;
  for (const auto &buffer : buffers)
    bytes += buffer->getBufferSize();

  double parse = best([&] {
    for (const auto &buffer : buffers)
      parseOnly(buffer->getBuffer());
  });
  TSParser *shared = ts_parser_new();
  ts_parser_set_language(shared, tree_sitter_python());
  double parseSystem = best([&] {
    for (const auto &buffer : buffers)
      parseOnlySystem(shared, buffer->getBuffer());
  });
  ts_parser_delete(shared);
  size_t entities = 0;
  double analyze = best([&] {
    entities = 0;
    for (size_t i = 0; i < files.size(); ++i)
      entities += analyzePythonSource(buffers[i]->getBuffer(), files[i].path,
                                      files[i].moduleName)
                      .entities.size();
  });

  double mb = bytes / 1e6;
  auto line = [&](const char *stage, double seconds) {
    llvm::outs() << llvm::formatv("{0,-34} {1,7:f3} s  {2,6:f1} MB/s\n", stage,
                                  seconds, mb / seconds);
  };
  llvm::outs() << llvm::formatv(
      "{0} files, {1:f1} MB, {2} entities; CPU seconds of one thread, best "
      "of {3}\n",
      files.size(), mb, entities, unsigned(repeat));
  line("walk (list the files)", walk);
  line("read the files", read);
  line("ts_parser_parse (per-file arena)", parse);
  line("ts_parser_parse (system malloc)", parseSystem);
  line("analyzePythonSource (parse+summary)", analyze);
  line("  of which outside ts_parser_parse", analyze - parse);
  return 0;
}
