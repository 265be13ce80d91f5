//===- Module.h - The FastCI IR: one repository snapshot --------*- C++ -*-===//
//
// A Module is everything FastCI knows about one snapshot of a repository: its
// code entities (files, Python modules, classes, functions) and the static
// edges between them, its tests with their costs, workloads and histories,
// the runtime evidence of which code each test ran and in which calling
// context, and the changes of a merge request. Every pass reads and writes a
// Module; the textual (.fir), JSON and binary forms are three spellings of it.
//
// Design notes:
//  * Nodes live in vectors and are named by dense ids, so that passes can keep
//    side tables indexed by id and printing order is insertion order, which
//    builders keep deterministic.
//  * Strings that repeat (symbols, paths, revisions, frame names) are interned
//    in the module's allocator and handed out as StringRefs that live as long
//    as the module.
//  * Sampled stacks are stored once, as a trie of (parent stack, frame) pairs
//    shared by every test, so a million distinct stacks cost a few words each.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_IR_MODULE_H
#define FASTCI_IR_MODULE_H

#include "fastci/IR/Attributes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/xxhash.h"
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fastci {

/// Dense index of an entity in its module.
using EntityId = uint32_t;
/// Dense index of a test in its module.
using TestId = uint32_t;
/// Dense index of a stack frame in the module's frame table.
using FrameId = uint32_t;
/// Dense index of a stack in the module's stack trie.
using StackId = uint32_t;

/// The id that names no entity (no parent, unresolved edge target, ...).
inline constexpr EntityId kNoEntity = std::numeric_limits<uint32_t>::max();
/// The id that names no test.
inline constexpr TestId kNoTest = std::numeric_limits<uint32_t>::max();
/// The empty stack: the root of the stack trie.
inline constexpr StackId kEmptyStack = std::numeric_limits<uint32_t>::max();

/// DenseMap key info for strings hashed with xxh3. The module hashes every
/// symbol and interned string (a large module has hundreds of thousands),
/// and LLVM's default string hash was a tenth of building and writing one.
struct StringKeyInfo : llvm::DenseMapInfo<llvm::StringRef> {
  static unsigned getHashValue(llvm::StringRef value) {
    return static_cast<unsigned>(llvm::xxh3_64bits(value));
  }
};

//===----------------------------------------------------------------------===//
// Code entities and static edges
//===----------------------------------------------------------------------===//

/// What a code entity is.
enum class EntityKind : uint8_t {
  /// A source file of the repository; its symbol is its path relative to the
  /// repository root. Non-Python files appear only when a pass needs them.
  File,
  /// A Python module (one per .py file); symbol = dotted module name.
  Module,
  /// A class; symbol = module name + `__qualname__`.
  Class,
  /// A function, method, nested or async function; symbol = module name +
  /// `__qualname__` (`pkg.mod.f.<locals>.g`).
  Function,
};

/// The keyword naming \p kind in the textual IR (`file`, `module`, ...).
llvm::StringRef stringifyEntityKind(EntityKind kind);

/// A range of source text. Lines are 1-based and columns 0-based, as in
/// CPython's `ast` (lineno/col_offset/end_lineno/end_col_offset), so runtime
/// frames map onto entities without translation.
struct SourceRange {
  uint32_t startLine = 0, startColumn = 0;
  uint32_t endLine = 0, endColumn = 0;
  /// True when \p line falls within the range.
  bool containsLine(uint32_t line) const {
    return line >= startLine && line <= endLine;
  }
  friend bool operator==(const SourceRange &, const SourceRange &) = default;
};

/// A file, module, class or function of the repository.
struct Entity {
  /// This entity's id.
  EntityId id = kNoEntity;
  /// What it is.
  EntityKind kind = EntityKind::Function;
  /// Its stable symbol (interned).
  llvm::StringRef symbol;
  /// The entity it is nested in: a module's parent is its file, a top-level
  /// class or function's parent its module. kNoEntity for files.
  EntityId parent = kNoEntity;
  /// Where it is in its file (unset for files).
  SourceRange range;
  /// Hash of its normalized body (0 when unknown); see docs/IR.md.
  uint64_t contentHash = 0;
  /// Open attributes (decorators, async, ...).
  AttrDict attrs;
  /// Where it was defined in the IR text being parsed, for diagnostics.
  llvm::SMLoc loc;
};

/// What a static edge means.
enum class EdgeKind : uint8_t {
  /// `from` (a module, class or function) imports the target module/symbol.
  Import,
  /// `from` contains a call whose callee name is the target.
  Call,
};

/// The keyword naming \p kind in the textual IR (`import`, `call`).
llvm::StringRef stringifyEdgeKind(EdgeKind kind);

/// An import or a call site, resolved to an entity where possible.
struct StaticEdge {
  /// Import or call.
  EdgeKind kind = EdgeKind::Call;
  /// The entity containing the import or call.
  EntityId from = kNoEntity;
  /// The resolved target, or kNoEntity.
  EntityId to = kNoEntity;
  /// The target as written (dotted name); used when \c to is unresolved.
  llvm::StringRef name;
  /// Source line of the import or call (0 when unknown).
  uint32_t line = 0;
  /// Where it was defined in the IR text being parsed.
  llvm::SMLoc loc;
};

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

/// What a test run ended in.
enum class OutcomeKind : uint8_t { Pass, Fail, Error, Skip };

/// The keyword naming \p kind (`pass`, `fail`, `error`, `skip`).
llvm::StringRef stringifyOutcomeKind(OutcomeKind kind);

/// One recorded run of a test.
struct Outcome {
  /// The revision it ran at (interned).
  llvm::StringRef revision;
  /// When it ran, seconds since the Unix epoch.
  int64_t time = 0;
  /// How it ended.
  OutcomeKind kind = OutcomeKind::Pass;
  /// How long it took, in seconds.
  double duration = 0;
  friend bool operator==(const Outcome &, const Outcome &) = default;
};

/// What running a test costs.
struct Cost {
  /// GPUs it occupies.
  int64_t gpus = 0;
  /// Wall-clock seconds.
  double seconds = 0;
  /// GPU-seconds (gpus × seconds unless measured otherwise).
  double gpuSeconds = 0;
  friend bool operator==(const Cost &, const Cost &) = default;
};

/// A test: a pytest item or a CI job.
struct Test {
  /// This test's id in the module.
  TestId index = kNoTest;
  /// Its id as users know it: a pytest node id or a CI job name (interned).
  llvm::StringRef name;
  /// The entity it starts at (the test function), or kNoEntity.
  EntityId entry = kNoEntity;
  /// What a run costs.
  Cost cost;
  /// Named workload dimensions with their values (`num_layers = 24`).
  AttrDict workload;
  /// The dimensions the test exists to validate (`tp`, `resume`, ...).
  std::vector<std::string> scope;
  /// Free-form tags (pytest markers, CI labels).
  std::vector<std::string> tags;
  /// Past runs, oldest first.
  std::vector<Outcome> history;
  /// Open attributes (`selected`, `risk`, `runner`, ...).
  AttrDict attrs;
  /// Where it was defined in the IR text being parsed.
  llvm::SMLoc loc;
};

//===----------------------------------------------------------------------===//
// Runtime evidence
//===----------------------------------------------------------------------===//

/// One frame of a sampled stack: an entity of the repository, or a named
/// library leaf (`torch.distributed.all_reduce`).
struct Frame {
  /// The entity, or kNoEntity for a library leaf.
  EntityId entity = kNoEntity;
  /// The leaf's name (interned); empty for entity frames.
  llvm::StringRef leafName;
  /// True for a library leaf.
  bool isLeaf() const { return entity == kNoEntity; }
};

/// A node of the shared stack trie: the stack \c parent extended by \c frame.
struct StackNode {
  /// The stack one frame shorter (kEmptyStack for a single frame).
  StackId parent = kEmptyStack;
  /// The innermost frame.
  FrameId frame = 0;
  /// Number of frames.
  uint32_t depth = 0;
};

/// A stack observed \c count times.
struct StackSample {
  StackId stack = kEmptyStack;
  uint64_t count = 0;
  friend bool operator==(const StackSample &, const StackSample &) = default;
};

/// The samples of one process of one test run.
struct EvidenceRecord {
  /// The test the samples are attributed to.
  TestId test = kNoTest;
  /// The process that was sampled.
  int64_t pid = 0;
  /// Its distributed rank (-1 when not distributed).
  int64_t rank = -1;
  /// The revision it was recorded at (interned).
  llvm::StringRef revision;
  /// Samples per second.
  double rate = 0;
  /// Stacks with counts, in a deterministic order.
  std::vector<StackSample> samples;
  /// Open attributes (`stale`, wall seconds, ...).
  AttrDict attrs;
  /// Where it was defined in the IR text being parsed.
  llvm::SMLoc loc;
};

//===----------------------------------------------------------------------===//
// Changes
//===----------------------------------------------------------------------===//

/// How a merge request changed an entity.
enum class ChangeKind : uint8_t {
  Added,
  Modified,
  Deleted,
  Moved,
  Renamed,
  /// Only whitespace or comments changed: reported, ignored by selection.
  Cosmetic,
};

/// The keyword naming \p kind (`added`, `modified`, ...).
llvm::StringRef stringifyChangeKind(ChangeKind kind);

/// An inclusive range of lines.
struct LineRange {
  uint32_t first = 0, last = 0;
  friend bool operator==(const LineRange &, const LineRange &) = default;
};

/// A changed code entity.
struct Change {
  /// How it changed.
  ChangeKind kind = ChangeKind::Modified;
  /// The entity in this module; kNoEntity when it no longer exists (deleted,
  /// or the old name of a move).
  EntityId entity = kNoEntity;
  /// Its symbol (interned); for existing entities the entity's own symbol.
  llvm::StringRef symbol;
  /// Its file path (interned); may be empty for existing entities.
  llvm::StringRef file;
  /// Changed lines (of the new file; of the old file for deletions).
  std::vector<LineRange> lines;
  /// Open attributes (`moved_from`, ...).
  AttrDict attrs;
  /// Where it was defined in the IR text being parsed.
  llvm::SMLoc loc;
};

/// A changed file that is not Python code, or any changed file's status.
struct ChangedFile {
  /// Path relative to the repository root (interned).
  llvm::StringRef path;
  /// `added`, `modified`, `deleted`, `renamed` (interned).
  llvm::StringRef status;
  /// Open attributes: `category`, `decision`, `reason`, `old_path`, ...
  AttrDict attrs;
  /// Where it was defined in the IR text being parsed.
  llvm::SMLoc loc;
};

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

/// One repository snapshot and everything passes have learned about it.
class Module {
public:
  Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  /// Returns a copy of \p str that lives as long as the module; equal
  /// strings share storage.
  llvm::StringRef intern(llvm::StringRef str);

  /// Module-level attributes (`revision`, `root`, pass results, ...).
  AttrDict &getAttrs() { return attrs; }
  const AttrDict &getAttrs() const { return attrs; }

  //===--------------------------------------------------------------------===//
  // Entities

  /// Appends an entity and returns its id. Duplicated symbols are kept (the
  /// verifier reports them); lookups find the first.
  EntityId addEntity(EntityKind kind, llvm::StringRef symbol,
                     EntityId parent = kNoEntity, SourceRange range = {},
                     uint64_t contentHash = 0);
  /// The entity \p id.
  Entity &getEntity(EntityId id) { return entities[id]; }
  const Entity &getEntity(EntityId id) const { return entities[id]; }
  /// All entities in insertion order.
  llvm::ArrayRef<Entity> getEntities() const { return entities; }
  llvm::MutableArrayRef<Entity> getEntities() { return entities; }
  /// Number of entities.
  size_t getNumEntities() const { return entities.size(); }
  /// Makes room for \p count more entities (and their index entries), for
  /// builders that know how many they will add.
  void reserveEntities(size_t count);
  /// The entity named \p symbol, or kNoEntity.
  EntityId lookupEntity(llvm::StringRef symbol) const;
  /// The file entity containing \p id (itself for files), or kNoEntity.
  EntityId getFileOf(EntityId id) const;
  /// The path of the file containing \p id, or "".
  llvm::StringRef getFilePath(EntityId id) const;

  //===--------------------------------------------------------------------===//
  // Static edges

  /// Appends a static edge; its name is interned.
  void addEdge(StaticEdge edge);
  /// Makes room for \p count more edges.
  void reserveEdges(size_t count) { edges.reserve(edges.size() + count); }
  /// All static edges in insertion order.
  llvm::ArrayRef<StaticEdge> getEdges() const { return edges; }
  llvm::MutableArrayRef<StaticEdge> getEdges() { return edges; }

  //===--------------------------------------------------------------------===//
  // Tests

  /// Appends a test named \p name and returns its id.
  TestId addTest(llvm::StringRef name);
  /// The test \p id.
  Test &getTest(TestId id) { return tests[id]; }
  const Test &getTest(TestId id) const { return tests[id]; }
  /// All tests in insertion order.
  llvm::ArrayRef<Test> getTests() const { return tests; }
  llvm::MutableArrayRef<Test> getTests() { return tests; }
  /// Number of tests.
  size_t getNumTests() const { return tests.size(); }
  /// The test named \p name, or kNoTest.
  TestId lookupTest(llvm::StringRef name) const;

  //===--------------------------------------------------------------------===//
  // Frames and stacks

  /// The frame for entity \p entity, created on first use.
  FrameId getEntityFrame(EntityId entity);
  /// The frame for the library leaf \p name, created on first use.
  FrameId getLeafFrame(llvm::StringRef name);
  /// The frame \p id.
  const Frame &getFrame(FrameId id) const { return frames[id]; }
  /// All frames.
  llvm::ArrayRef<Frame> getFrames() const { return frames; }

  /// The stack \p parent extended by \p frame, created on first use.
  StackId getStack(StackId parent, FrameId frame);
  /// The stack with \p frames, outermost first, created on first use.
  StackId getStack(llvm::ArrayRef<FrameId> frames);
  /// The trie node of stack \p id.
  const StackNode &getStackNode(StackId id) const { return stackNodes[id]; }
  /// Number of distinct stacks (trie nodes).
  size_t getNumStacks() const { return stackNodes.size(); }
  /// Makes room for \p numStacks stacks in all, so that bulk loaders do not
  /// grow the trie and its index step by step.
  void reserveStacks(size_t numStacks);
  /// The frames of \p id, outermost first.
  void getStackFrames(StackId id, llvm::SmallVectorImpl<FrameId> &out) const;

  //===--------------------------------------------------------------------===//
  // Evidence

  /// Appends an evidence record for \p test and returns it.
  EvidenceRecord &addEvidence(TestId test);
  /// All evidence records in insertion order.
  llvm::ArrayRef<EvidenceRecord> getEvidence() const { return evidence; }
  llvm::MutableArrayRef<EvidenceRecord> getEvidence() { return evidence; }
  /// Removes every evidence record (stacks and frames stay).
  void clearEvidence() { evidence.clear(); }

  //===--------------------------------------------------------------------===//
  // Changes

  /// Appends a change to entity \p entity (symbol taken from the entity).
  Change &addChange(ChangeKind kind, EntityId entity);
  /// Appends a change to an entity that no longer exists.
  Change &addChange(ChangeKind kind, llvm::StringRef symbol,
                    llvm::StringRef file);
  /// All changes in insertion order.
  llvm::ArrayRef<Change> getChanges() const { return changes; }
  llvm::MutableArrayRef<Change> getChanges() { return changes; }
  /// Appends a changed file.
  ChangedFile &addChangedFile(llvm::StringRef path, llvm::StringRef status);
  /// All changed files in insertion order.
  llvm::ArrayRef<ChangedFile> getChangedFiles() const { return changedFiles; }
  llvm::MutableArrayRef<ChangedFile> getChangedFiles() { return changedFiles; }

private:
  llvm::BumpPtrAllocator allocator;
  llvm::StringSaver strings{allocator};
  /// The interned strings, each saved once in `strings`.
  llvm::DenseSet<llvm::StringRef, StringKeyInfo> interned;
  AttrDict attrs;

  std::vector<Entity> entities;
  llvm::DenseMap<llvm::StringRef, EntityId, StringKeyInfo> entityIndex;
  std::vector<StaticEdge> edges;
  std::vector<Test> tests;
  llvm::DenseMap<llvm::StringRef, TestId, StringKeyInfo> testIndex;

  std::vector<Frame> frames;
  llvm::DenseMap<EntityId, FrameId> entityFrames;
  llvm::DenseMap<llvm::StringRef, FrameId> leafFrames;
  std::vector<StackNode> stackNodes;
  llvm::DenseMap<std::pair<StackId, FrameId>, StackId> stackIndex;

  std::vector<EvidenceRecord> evidence;
  std::vector<Change> changes;
  std::vector<ChangedFile> changedFiles;
};

/// The last dotted part of \p symbol (`f` of `pkg.mod.C.f`), or \p symbol
/// itself when it has none: the name a function keeps when it moves to
/// another module or class.
inline llvm::StringRef getSymbolLeaf(llvm::StringRef symbol) {
  llvm::StringRef leaf = symbol.rsplit('.').second;
  return leaf.empty() ? symbol : leaf;
}

} // namespace fastci

#endif // FASTCI_IR_MODULE_H
