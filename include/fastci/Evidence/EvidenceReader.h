//===- EvidenceReader.h - Reading one file of sampled stacks ----*- C++ -*-===//
//
// Reads one evidence file, in FastCI's format (docs/Evidence.md: a `# key:
// value` header, then `frame;frame;... count` lines of percent-encoded
// `path:qualname:line` frames) or in py-spy's `raw` format (`name
// (file:line);... count`), resolves every frame to an IR entity or a library
// leaf, and folds the reduced stacks into a trie local to the file. Reading is
// a pure function of the bytes and the resolvers, so files can be read in
// parallel and merged into a Module in a fixed order afterwards.
//
// Stacks are reduced as they are read: a repository frame is kept; of the
// frames outside the repository, only the first below a repository frame is
// kept, as a named leaf; the others (the test runner above the first
// repository frame, library internals below a leaf) are dropped.
//
// Malformed input never stops the reader: each bad line becomes an
// EvidenceProblem with its position and is skipped; a bad header skips the
// whole file and says why.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_EVIDENCEREADER_H
#define FASTCI_EVIDENCE_EVIDENCEREADER_H

#include "fastci/Evidence/FrameResolver.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fastci {

/// How an evidence file spells its stacks.
enum class EvidenceFormat : uint8_t {
  /// FastCI's own format, written by python/fastci/trace.
  FastCI,
  /// `py-spy record --format raw`.
  PySpyRaw,
};

/// The metadata of one sampled process. py-spy files carry none of it; their
/// fields keep the defaults below, except \c testId and \c pid.
struct EvidenceHeader {
  /// The test the samples belong to.
  std::string testId;
  /// The sampled process (0 when unknown).
  int64_t pid = 0;
  /// Its distributed rank and local rank (-1 when not distributed).
  int64_t rank = -1, localRank = -1;
  /// Samples per second (0 when unknown).
  double rate = 0;
  /// Wall-clock and CPU seconds the process was sampled for.
  double wallSeconds = 0, cpuSeconds = 0;
  /// The revision (git HEAD) the process ran; empty when unknown.
  std::string revision;
  /// The repository root on the recording machine; empty when unknown.
  std::string root;
  /// False when the sampler stopped before the process ended.
  bool complete = true;
  /// The format version (1 or 2).
  unsigned version = 1;
  /// Version 2: `coverage: exact` (the exact function recorder ran for the
  /// whole file). Version 1 files are sampled-only.
  bool exactCoverage = false;
  /// Version 2: `scope: collection` (import-time functions seen outside
  /// every test, e.g. pytest's collection; the file has no test).
  bool collection = false;
  /// Version 2: when the file's recording began, Unix seconds (0: unknown).
  double time = 0;
  /// Version 2: the recording interpreter (sys.executable); empty if unknown.
  std::string executable;
  /// Version 2: samples through a module or class body (not in the body).
  uint64_t importSamples = 0;
  /// Version 2, sampler 2.1: a `packages` key, so the file's `@x` lines
  /// are every package its process imported (none is a fact, not a gap).
  bool packagesRecorded = false;
};

/// A problem found while reading, at a byte offset of the file (with its
/// 1-based line and column), reported later so that reports come out in file
/// order whatever the thread count.
struct EvidenceProblem {
  size_t offset = 0;
  unsigned line = 0, column = 0;
  std::string message;
};

/// One evidence file, read, resolved and reduced.
struct EvidenceFile {
  /// A node of the file's stack trie: the stack \c parent extended by
  /// \c frame, an index into \c frames.
  struct Node {
    uint32_t parent;
    uint32_t frame;
  };
  /// The parent of single-frame stacks.
  static constexpr uint32_t kRoot = ~0u;

  EvidenceFormat format = EvidenceFormat::FastCI;
  EvidenceHeader header;
  /// True when the header was unusable; \c problems says why.
  bool skipped = false;
  /// True when a version-2 file has a malformed or cut line: its function
  /// sets may be incomplete, so it is skipped, and its test (\c header.testId)
  /// must be treated as having no evidence at all.
  bool corrupt = false;
  /// Where the `test-id` header's value is (1-based; 0 for py-spy files),
  /// for reports about the test.
  unsigned testIdLine = 0, testIdColumn = 0;
  /// Everything wrong with the file, in file order.
  std::vector<EvidenceProblem> problems;

  /// The distinct frames of the reduced stacks (entities and library leaves).
  std::vector<ResolvedFrame> frames;
  /// The reduced stacks; a node's parent precedes it.
  std::vector<Node> nodes;
  /// Per node, the samples whose reduced stack is exactly that node.
  std::vector<uint64_t> counts;

  /// Stack lines read, and those skipped as malformed.
  uint64_t lines = 0, malformedLines = 0;
  /// Samples read; those with no repository frame at all; those whose stack
  /// passes through stale code.
  uint64_t samples = 0, externalSamples = 0, staleSamples = 0;
  /// Symbols (at the recorded revision) of the stale entities seen, sorted.
  std::vector<std::string> staleSymbols;

  /// Version 2 entity lines, resolved (vanished code is left out; it is
  /// in staleSymbols). `@f`: entities first executed at test time.
  std::vector<EntityId> functions;
  /// `@i`: (module entity being imported or kNoEntity, entity executed).
  std::vector<std::pair<EntityId, EntityId>> importFunctions;
  /// `@m`: repository module (or file) entities imported.
  std::vector<EntityId> imports;
  /// `@r`: files opened for reading, relative to the root when below it.
  std::vector<std::string> reads;
  /// `@x`: top-level modules outside the repository and the standard
  /// library that the process imported or tried to import.
  std::vector<std::string> packages;
  /// `@p` (distribution, module it provides), `@q` (distribution, a
  /// distribution it requires) and `@v` (an installed distribution, its
  /// version); distribution names normalized.
  std::vector<std::pair<std::string, std::string>> provides, requirements,
      versions;
};

/// Resolved frames kept across the files one thread reads. Files share most
/// of their frames (the ranks of a test, the nights of a directory, the
/// library frames of every test), and splitting, decoding and resolving a
/// frame costs far more than finding its text in a table, so a reader given
/// a cache resolves each distinct frame text once per thread rather than once
/// per file. What a frame resolves to depends only on its text, the resolver
/// and the roots stripped from paths, so results do not depend on which
/// thread read which file. Memory is proportional to the distinct frames
/// seen; malformed frames are never kept.
///
/// A cache is not thread-safe: use one per thread (and per resolver's
/// lifetime), never for two files at once.
class FrameCache {
public:
  FrameCache();
  ~FrameCache();
  FrameCache(FrameCache &&) noexcept;
  FrameCache &operator=(FrameCache &&) noexcept;

  /// The distinct frame texts held.
  size_t size() const;

  /// The tables, private to the reader.
  struct Impl;
  Impl &getImpl() { return *impl; }

private:
  std::unique_ptr<Impl> impl;
};

/// What reading needs besides the bytes.
struct EvidenceReadOptions {
  /// Returns the resolver for frames recorded at a revision (empty when the
  /// file does not say). Called once per file, from the reading thread;
  /// must be safe to call concurrently.
  std::function<const FrameResolver &(llvm::StringRef revision)> getResolver;
  /// Repository root to strip from absolute paths when the file names none
  /// (py-spy), or as a second candidate. May be empty.
  llvm::StringRef defaultRoot;
  /// The test id of a py-spy file, which cannot name one itself.
  llvm::StringRef pyspyTestId;
  /// Problems reported per file before the rest are summarized in one.
  unsigned maxProblems = 20;
  /// Frames resolved by earlier files of this thread; null to resolve every
  /// frame of the file afresh.
  FrameCache *frameCache = nullptr;
};

/// Reads \p buffer, the contents of one evidence file. The format is sniffed:
/// a first line starting with `#` is FastCI's header, anything else py-spy.
EvidenceFile readEvidence(llvm::StringRef buffer,
                          const EvidenceReadOptions &options);

} // namespace fastci

#endif // FASTCI_EVIDENCE_EVIDENCEREADER_H
