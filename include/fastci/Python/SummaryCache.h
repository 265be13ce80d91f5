//===- SummaryCache.h - One file of cached file summaries -------*- C++ -*-===//
//
// parse-python's `cache=` directory holds one file, `summaries.fcsc`: for
// every Python file of the last run its path, module name, size,
// modification time and content hash, its FileSummary in binary form (as
// linked), and for a linked test file the files its items were linked from.
// It is read with one mmap; a file whose size and modification time are
// unchanged is taken from it without being opened. Entries whose time is
// too close to the moment the cache was written (a write in the same clock
// tick could leave the time unchanged, git's "racy" case) are checked
// against their content hash instead.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_PYTHON_SUMMARYCACHE_H
#define FASTCI_PYTHON_SUMMARYCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace fastci::python {

/// One file's entry, pointing into the mapped cache or into the caller's
/// buffers when writing.
struct SummaryCacheEntry {
  llvm::StringRef path, moduleName;
  uint64_t size = 0;
  int64_t mtimeNs = 0;
  uint64_t contentHash = 0;
  /// The serialized FileSummary.
  llvm::StringRef summary;
  /// Its items were linked with the repository in view (linkPytestItems),
  /// reading the files in `linkReads` (paths joined by NUL bytes).
  bool linked = false;
  llvm::StringRef linkReads;
};

/// A read-only view of the cache file.
class SummaryCache {
public:
  /// Maps `<dir>/summaries.fcsc`. A missing, truncated, corrupted or
  /// foreign file (another format version, another \p key) reads as empty;
  /// for one that exists but is truncated, corrupted or of another format
  /// version, \p problem (when given) says which.
  static SummaryCache open(llvm::StringRef dir, uint64_t key,
                           std::string *problem = nullptr);
  /// The path of the cache file in \p dir.
  static std::string getPath(llvm::StringRef dir);

  /// The entry of \p path, or null.
  const SummaryCacheEntry *lookup(llvm::StringRef path) const;
  /// Whether \p entry's stat data can be trusted: its modification time is
  /// older than the write of the cache by more than the slack.
  bool isStatTrusted(const SummaryCacheEntry &entry) const;
  size_t size() const { return entries.size(); }

  /// Writes \p entries (sorted by path) to `<dir>/summaries.fcsc`,
  /// atomically (a temporary file renamed over the old one).
  static llvm::Error write(llvm::StringRef dir, uint64_t key,
                           llvm::ArrayRef<SummaryCacheEntry> entries);

private:
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  llvm::StringMap<SummaryCacheEntry> entries;
  int64_t writtenNs = 0;
};

} // namespace fastci::python

#endif // FASTCI_PYTHON_SUMMARYCACHE_H
