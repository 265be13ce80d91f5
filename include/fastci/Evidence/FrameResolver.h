//===- FrameResolver.h - Mapping sampled frames onto entities ---*- C++ -*-===//
//
// A sampled frame names a source position, `path:qualname:line`. This file
// turns such positions into IR entities: LineIndex answers "which entity is
// innermost at this line of this file" from one Module's entity ranges, and
// FrameResolver applies it either to the module being optimized directly or,
// when the evidence was recorded at another revision, to a snapshot of that
// revision, translating the snapshot's entity to the current one by symbol
// and comparing body hashes to detect stale evidence. Frames outside the
// repository become named library leaves (see getLibraryLeafName).
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_EVIDENCE_FRAMERESOLVER_H
#define FASTCI_EVIDENCE_FRAMERESOLVER_H

#include "fastci/IR/Module.h"
#include "llvm/ADT/StringMap.h"
#include <string>
#include <vector>

namespace fastci {

/// Answers "which entity is innermost at line L of file P" for one module,
/// in O(log n) per query, after building an interval forest per file once.
class LineIndex {
public:
  /// Indexes every ranged entity of \p module by the file containing it.
  explicit LineIndex(const Module &module);

  /// True if \p path (relative to the repository root) is a file entity.
  bool hasFile(llvm::StringRef path) const { return files.count(path); }

  /// The innermost entity of file \p path whose range contains \p line. Code
  /// outside every recorded range (and line 0, "unknown") maps to the file's
  /// Python module entity, or the file itself when it has none. Returns
  /// kNoEntity only when \p path is not a file of the module.
  EntityId lookup(llvm::StringRef path, uint32_t line) const;

private:
  /// One entity's line range; \c enclosing is the index of the nearest
  /// interval containing it (or kNone), which makes the sorted interval list
  /// a forest that a query climbs from the last interval starting before it.
  struct Interval {
    uint32_t startLine, endLine;
    EntityId entity;
    uint32_t enclosing;
  };
  struct FileIntervals {
    EntityId file = kNoEntity;
    EntityId module = kNoEntity;
    std::vector<Interval> intervals;
  };
  static constexpr uint32_t kNone = ~0u;

  llvm::StringMap<FileIntervals> files;
};

/// The dotted name of a frame outside the repository: the Python module its
/// path denotes, then its qualified name. The module is the path below the
/// last `site-packages/` or `dist-packages/` directory, else below the
/// standard library's `pythonX.Y/` directory, else the whole path when it is
/// relative (py-spy's short names), else the file's stem; `.py` and
/// a trailing `/__init__` are dropped and `/` becomes `.`. Pseudo-files keep
/// their name, except `<frozen M>`, which is module M. For example
/// `.../site-packages/torch/distributed/distributed_c10d.py` with qualname
/// `all_reduce` is `torch.distributed.distributed_c10d.all_reduce`.
std::string getLibraryLeafName(llvm::StringRef path, llvm::StringRef qualname);

/// Where a sampled frame lands in the module being optimized.
struct ResolvedFrame {
  enum class Kind : uint8_t {
    /// A repository entity of the current module (\c entity).
    Entity,
    /// Code outside the repository; \c leafName is its dotted name.
    Library,
    /// Repository code at the recorded revision whose entity no longer
    /// exists in the current module.
    Vanished,
  };
  Kind kind = Kind::Library;
  /// The current module's entity, for Kind::Entity.
  EntityId entity = kNoEntity;
  /// True when the recorded revision's entity differs from the current one
  /// (other body hash) or vanished: samples through it are stale.
  bool stale = false;
  /// The entity's symbol at the recorded revision (for stale reports), or the
  /// library leaf's dotted name.
  std::string name;
};

/// Resolves frames recorded at one revision against the current module.
class FrameResolver {
public:
  /// Resolves frames directly against \p current by line. With
  /// \p verifyNames (the recorded revision differs from the current one and
  /// no snapshot describes it), a frame's qualified name is checked against
  /// the code at its line: code that moved within its file maps to the
  /// entity of its name, and code whose name the file no longer has (moved
  /// to another module, renamed, deleted) is Vanished and stale under the
  /// symbol it had, instead of being credited to whatever now sits at that
  /// line.
  FrameResolver(const Module &current, const LineIndex &currentIndex,
                bool verifyNames = false);

  /// Resolves frames through \p snapshot, a module of the recorded revision:
  /// a frame maps to the snapshot's entity, then to the current entity with
  /// the same symbol, and is stale when that entity vanished or its body
  /// hash changed.
  FrameResolver(const Module &snapshot, const LineIndex &snapshotIndex,
                const Module &current);

  /// True when frames go through a snapshot of the recorded revision.
  bool usesSnapshot() const { return source != &current; }

  /// True when frames resolved directly are checked by their names.
  bool verifiesNames() const { return verifyNames; }

  /// Resolves the frame at \p line of \p path (relative to the repository
  /// root, or absolute when outside it) executing \p qualname.
  ResolvedFrame resolve(llvm::StringRef path, llvm::StringRef qualname,
                        uint32_t line) const;

private:
  /// The current entity matching each snapshot entity, with staleness.
  struct Translation {
    EntityId entity = kNoEntity;
    bool stale = false;
  };

  /// Direct resolution with the name check of \c verifyNames.
  ResolvedFrame resolveByName(llvm::StringRef path, llvm::StringRef qualname,
                              uint32_t line, EntityId atLine) const;

  const Module *source;
  const LineIndex *sourceIndex;
  const Module &current;
  bool verifyNames = false;
  /// Indexed by snapshot entity id; empty when resolving directly.
  std::vector<Translation> translations;
};

} // namespace fastci

#endif // FASTCI_EVIDENCE_FRAMERESOLVER_H
