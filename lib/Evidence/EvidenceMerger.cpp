//===- EvidenceMerger.cpp - Merging a directory of evidence into a Module -===//
//
// Files flow through a pipeline: each is read, resolved and reduced on some
// thread (into its own EvidenceFile), and merged into the module serially in
// sorted path order while later files are being read. Only the module's
// tables (frames, the stack trie, tests) are touched serially, and only once
// per distinct node of a file's local trie rather than once per frame of
// every line, which is what makes the serial part cheap. A bound on the files
// in flight keeps memory to a few files per thread whatever the size of the
// directory; each thread's FrameCache holds the distinct frames it resolved.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceMerger.h"
#include "fastci/Evidence/EvidenceAttrs.h"
#include "fastci/Evidence/EvidenceReader.h"
#include "fastci/Evidence/FrameResolver.h"
#include "fastci/IR/IRAttrs.h"
#include "fastci/IR/Parser.h"
#include "fastci/Pass/Parallel.h"
#include "fastci/Python/PythonAttrs.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <map>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>
#include <set>
#include <tuple>

using namespace fastci;

//===----------------------------------------------------------------------===//
// Evidence states
//===----------------------------------------------------------------------===//

llvm::StringRef fastci::stringifyEvidenceState(EvidenceState state) {
  switch (state) {
  case EvidenceState::Fresh:
    return "fresh";
  case EvidenceState::Unverified:
    return "unverified";
  case EvidenceState::Stale:
    return "stale";
  case EvidenceState::Missing:
    return "missing";
  }
  llvm_unreachable("unknown evidence state");
}

std::optional<EvidenceState> fastci::parseEvidenceState(llvm::StringRef name) {
  for (EvidenceState state : {EvidenceState::Fresh, EvidenceState::Unverified,
                              EvidenceState::Stale, EvidenceState::Missing})
    if (stringifyEvidenceState(state) == name)
      return state;
  return std::nullopt;
}

EvidenceState fastci::getEvidenceState(const Test &test) {
  // lookup, not get: get returns a copy, and the name would point into it.
  const Attribute *attr = test.attrs.lookup(evidence::attr::kState);
  std::optional<llvm::StringRef> name = attr ? attr->asString() : std::nullopt;
  std::optional<EvidenceState> state =
      name ? parseEvidenceState(*name) : std::nullopt;
  return state.value_or(EvidenceState::Missing);
}

//===----------------------------------------------------------------------===//
// Finding the inputs
//===----------------------------------------------------------------------===//

namespace {

/// A module of the recorded revision, written at collection time.
struct Snapshot {
  std::string path;
  /// The revision it describes; empty when it does not say, in which case
  /// it stands for every revision without a snapshot of its own.
  std::string revision;
  std::unique_ptr<Module> module;
  std::unique_ptr<LineIndex> index;
  std::unique_ptr<FrameResolver> resolver;
};

/// The files under the evidence directory, sorted.
struct Inputs {
  std::vector<std::string> evidence;
  std::vector<std::string> snapshots;
};

/// The samples of every run of one test at one rank, revision and rate.
struct RecordBuilder {
  std::set<int64_t> pids;
  uint64_t files = 0, samples = 0, externalSamples = 0, staleSamples = 0;
  double wallSeconds = 0;
  bool complete = true;
  EvidenceState state = EvidenceState::Fresh;
  std::set<std::string> staleSymbols;
  llvm::DenseMap<StackId, uint64_t> counts;
  /// True while every file merged ran the exact function recorder.
  bool exact = true;
  /// The newest recording time of its files (0: none said).
  double time = 0;
  /// The longest wall time of one of its files: the test's own process
  /// (the pytest item) spans its children.
  double longestWall = 0;
  uint64_t importSamples = 0;
  std::set<EntityId> functions, importFunctions, imports;
  std::set<std::string> reads;
  /// True while every file merged recorded its packages (sampler >= 2.1).
  bool packagesKnown = true;
  std::set<std::string> packages;
};

/// What identifies a merged record; also its order in the module.
using RecordKey = std::tuple<TestId, int64_t, std::string, double>;

} // namespace

/// True for `snapshot.<ext>` and `snapshot-<rev>.<ext>` module files; sets
/// \p revision to `<rev>` (empty for the unversioned form).
static bool isSnapshotFile(llvm::StringRef name, std::string &revision) {
  llvm::StringRef stem = llvm::sys::path::stem(name);
  llvm::StringRef ext = llvm::sys::path::extension(name);
  if (ext != ".fir" && ext != ".fbc" && ext != ".json")
    return false;
  if (stem == "snapshot") {
    revision.clear();
    return true;
  }
  if (stem.consume_front("snapshot-") && !stem.empty()) {
    revision = stem.str();
    return true;
  }
  return false;
}

/// Lists the evidence files (recursively) and snapshots (top level only).
static LogicalResult findInputs(llvm::StringRef directory,
                                DiagnosticEngine &diag, Inputs &inputs) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(directory, status)) {
    diag.emit(Severity::Error, directory, 0, 0,
              "cannot read evidence directory: " + ec.message());
    return failure();
  }
  if (!llvm::sys::fs::is_directory(status)) {
    diag.emit(Severity::Error, directory, 0, 0,
              "evidence path is not a directory");
    return failure();
  }
  std::error_code ec;
  // Symlinks are not followed: a link cycle must not hang the walk.
  for (llvm::sys::fs::recursive_directory_iterator
           it(directory, ec, /*follow_symlinks=*/false),
       end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef path = it->path();
    llvm::StringRef name = llvm::sys::path::filename(path);
    if (it->type() != llvm::sys::fs::file_type::regular_file)
      continue;
    std::string revision;
    if (name.ends_with(".stacks"))
      inputs.evidence.push_back(path.str());
    else if (it.level() == 0 && isSnapshotFile(name, revision))
      inputs.snapshots.push_back(path.str());
  }
  if (ec)
    diag.emit(Severity::Warning, directory, 0, 0,
              "evidence directory could not be listed completely: " +
                  ec.message());
  llvm::sort(inputs.evidence);
  llvm::sort(inputs.snapshots);
  return success();
}

/// The test id of a py-spy file: the name of the directory holding it
/// (percent-decoded, so a directory can spell any id), or the file's stem
/// when it lies directly in the evidence directory.
static std::string getPySpyTestId(llvm::StringRef directory,
                                  llvm::StringRef path) {
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  llvm::StringRef name = llvm::sys::path::filename(parent);
  if (parent.rtrim('/') == directory.rtrim('/'))
    name = llvm::sys::path::stem(path);
  std::string id;
  for (size_t i = 0, e = name.size(); i < e; ++i) {
    unsigned hi = 0, lo = 0;
    if (name[i] == '%' && i + 2 < e &&
        (hi = llvm::hexDigitValue(name[i + 1])) != ~0u &&
        (lo = llvm::hexDigitValue(name[i + 2])) != ~0u) {
      id += char(hi << 4 | lo);
      i += 2;
    } else {
      id += name[i];
    }
  }
  return id;
}

/// Reads the file at \p path into \p bytes, replacing what they held.
static llvm::Error readWholeFile(llvm::StringRef path,
                                 llvm::SmallVectorImpl<char> &bytes) {
  llvm::Expected<llvm::sys::fs::file_t> file =
      llvm::sys::fs::openNativeFileForRead(path);
  if (!file)
    return file.takeError();
  // One read of the whole file when its size is known, so a large file
  // costs one system call rather than one per chunk.
  llvm::sys::fs::file_status status;
  uint64_t expected = 0;
  if (!llvm::sys::fs::status(*file, status))
    expected = status.getSize();
  bytes.resize_for_overwrite(expected + 1);
  size_t size = 0;
  while (true) {
    if (size == bytes.size())
      bytes.resize_for_overwrite(2 * bytes.size());
    llvm::Expected<size_t> got = llvm::sys::fs::readNativeFile(
        *file, llvm::MutableArrayRef<char>(bytes).drop_front(size));
    if (!got || *got == 0) {
      llvm::sys::fs::closeFile(*file);
      bytes.truncate(size);
      return got ? llvm::Error::success() : got.takeError();
    }
    size += *got;
  }
}

//===----------------------------------------------------------------------===//
// Merging
//===----------------------------------------------------------------------===//

namespace {

/// Merges read files into the module, in the order they are given.
class Merger {
public:
  Merger(Module &module, const MergeEvidenceOptions &options,
         DiagnosticEngine &diag, MergeEvidenceStats &stats)
      : module(module), options(options), diag(diag), stats(stats),
        currentRevision(module.getAttrs()
                            .get(ir::attr::kRevision)
                            .asString()
                            .value_or("")) {}

  /// Merges \p file, read from \p path with contents \p buffer;
  /// \p recorded is the snapshot of its revision, if one was loaded.
  void merge(llvm::StringRef path, std::unique_ptr<llvm::MemoryBuffer> buffer,
             EvidenceFile &file, const FrameResolver &resolver,
             const Module *recorded);
  /// Writes the merged records and every test's evidence attributes.
  void finish();

private:
  /// Reports the problems of \p file, pointing into \p buffer.
  void report(llvm::StringRef path, std::unique_ptr<llvm::MemoryBuffer> buffer,
              const EvidenceFile &file);
  /// The test \p file names, added if unknown and allowed; kNoTest
  /// otherwise (also for a test that no longer exists, see isGone).
  /// \p recorded is the snapshot of the file's revision, if any.
  TestId getTest(const EvidenceFile &file, llvm::StringRef path,
                 const Module *recorded);
  /// True when the test \p name, which the module lacks, no longer exists:
  /// the static tests of its recorded revision (\p recorded) held it, the
  /// module's hold it not, and its test file is one the module parsed or is
  /// gone from the repository.
  bool isGone(llvm::StringRef name, const Module *recorded) const;
  /// Sets the module's dictionary \p name (distribution -> names) to
  /// \p table joined with what an earlier merge left there.
  void addDistributionTable(
      llvm::StringRef name,
      std::map<std::string, std::set<std::string>> &table) const;
  /// The state of a file's evidence.
  EvidenceState classify(const EvidenceFile &file,
                         const FrameResolver &resolver) const;

  Module &module;
  const MergeEvidenceOptions &options;
  DiagnosticEngine &diag;
  MergeEvidenceStats &stats;
  std::string currentRevision;
  std::map<RecordKey, RecordBuilder> records;
  llvm::StringMap<bool> ignoredTests;
  /// Per module entity, the entities executed while its body ran.
  std::map<EntityId, std::set<EntityId>> importTime;
  /// Files per recording interpreter.
  std::map<std::string, uint64_t> executables;
  /// Per distribution, the modules it provides, the distributions it
  /// requires and its installed versions (`@p`, `@q`, `@v`), from every
  /// file.
  std::map<std::string, std::set<std::string>> provides, requirements, versions;
  /// Tests with a corrupt compact file: they get no evidence at all.
  std::set<TestId> corruptTests;
  /// Tests whose evidence was dropped because they no longer exist.
  std::set<std::string> goneTests;
};

} // namespace

void Merger::report(llvm::StringRef path,
                    std::unique_ptr<llvm::MemoryBuffer> buffer,
                    const EvidenceFile &file) {
  if (file.problems.empty())
    return;
  if (!buffer) {
    for (const EvidenceProblem &problem : file.problems)
      diag.emit(Severity::Warning, path, problem.line, problem.column,
                problem.message);
    return;
  }
  // Lines worth quoting get the source excerpt and caret; a huge line (often
  // binary junk) is named by line and column only.
  constexpr size_t kMaxQuotedLine = 512;
  llvm::StringRef text = buffer->getBuffer();
  diag.addBuffer(std::move(buffer));
  for (const EvidenceProblem &problem : file.problems) {
    size_t lineStart = problem.offset - (problem.column - 1);
    size_t lineEnd = std::min(text.find('\n', lineStart), text.size());
    if (lineEnd - lineStart <= kMaxQuotedLine)
      diag.warning(llvm::SMLoc::getFromPointer(text.data() + problem.offset),
                   problem.message);
    else
      diag.emit(Severity::Warning, path, problem.line, problem.column,
                problem.message);
  }
}

/// True when a static test of \p module (one parse-python made, not one
/// evidence added) holds the pytest id \p name: the test itself, the
/// parametrized function `f` of `f[...]`, or an enclosing file or class item
/// above it. The same relation select-affected uses to let static items stand
/// for evidence tests (docs/Selection.md, "Test identity").
static bool holdsTest(const Module &module, llvm::StringRef name) {
  auto isStatic = [&](llvm::StringRef id, bool needEnclosing) {
    TestId test = module.lookupTest(id);
    if (test == kNoTest)
      return false;
    const AttrDict &attrs = module.getTest(test).attrs;
    if (attrs.lookup(evidence::attr::kFromEvidence))
      return false;
    if (!needEnclosing || !id.contains("::"))
      return true; // a file item encloses every id of its file
    Attribute enclosing = attrs.get(python::attr::kEnclosing);
    return enclosing.isBool() && enclosing.getBool();
  };
  if (isStatic(name, false))
    return true;
  // Parameters come last and may hold anything (`::` included): the
  // function's id ends at the first `[` after the file's path.
  size_t separator = name.find("::");
  llvm::StringRef function = name;
  if (separator != llvm::StringRef::npos) {
    size_t bracket = name.find('[', separator);
    function = name.take_front(bracket);
    if (bracket != llvm::StringRef::npos && isStatic(function, false))
      return true;
  }
  for (size_t end = function.find("::"); end != llvm::StringRef::npos;
       end = function.find("::", end + 2))
    if (isStatic(function.take_front(end), true))
      return true;
  return false;
}

bool Merger::isGone(llvm::StringRef name, const Module *recorded) const {
  // Only parse-python's view of the repository (its `root`) can say that a
  // test is gone; a snapshot that did not hold the test says nothing either
  // (parse-python never saw it, so not seeing it now proves nothing).
  const Attribute *rootAttr = module.getAttrs().lookup(python::attr::kRoot);
  std::optional<llvm::StringRef> root =
      rootAttr ? rootAttr->asString() : std::nullopt;
  if (!recorded || !root || root->empty() || !holdsTest(*recorded, name) ||
      holdsTest(module, name))
    return false;
  llvm::StringRef file = name.take_front(name.find("::"));
  EntityId entity = module.lookupEntity(file);
  if (entity != kNoEntity && module.getEntity(entity).kind == EntityKind::File)
    return true;
  // Not parsed: gone only if it is gone from disk (parse-python may have
  // been told to skip it).
  llvm::SmallString<256> full(*root);
  llvm::sys::path::append(full, file);
  return !llvm::sys::fs::exists(full);
}

TestId Merger::getTest(const EvidenceFile &file, llvm::StringRef path,
                       const Module *recorded) {
  llvm::StringRef name = file.header.testId;
  TestId test = module.lookupTest(name);
  if (test != kNoTest)
    return test;
  // A test deleted (or a parametrization dropped) since recording would be
  // planned under an id pytest can no longer collect.
  if (isGone(name, recorded)) {
    if (goneTests.insert(name.str()).second)
      ++stats.goneTests;
    return kNoTest;
  }
  if (!options.addUnknownTests) {
    if (ignoredTests.try_emplace(name, true).second)
      diag.emit(Severity::Warning, path, file.testIdLine, file.testIdColumn,
                "evidence for test '" + name +
                    "', which the module does not have; ignored");
    return kNoTest;
  }
  test = module.addTest(name);
  module.getTest(test).attrs.set(evidence::attr::kFromEvidence,
                                 Attribute::getBool(true));
  ++stats.addedTests;
  return test;
}

EvidenceState Merger::classify(const EvidenceFile &file,
                               const FrameResolver &resolver) const {
  if (!resolver.usesSnapshot()) {
    if (!currentRevision.empty() && file.header.revision == currentRevision)
      return EvidenceState::Fresh;
    // Checked by name: code the file no longer has is known stale.
    return file.staleSymbols.empty() ? EvidenceState::Unverified
                                     : EvidenceState::Stale;
  }
  return file.staleSamples || !file.staleSymbols.empty() ? EvidenceState::Stale
                                                         : EvidenceState::Fresh;
}

void Merger::addDistributionTable(
    llvm::StringRef name,
    std::map<std::string, std::set<std::string>> &table) const {
  if (const Attribute *old = module.getAttrs().lookup(name);
      old && old->isDict())
    for (const auto &[dist, names] : old->getDict())
      if (names.isList())
        for (const Attribute &entry : names.getList())
          if (std::optional<llvm::StringRef> text = entry.asString())
            table[dist].insert(text->str());
  if (table.empty())
    return;
  AttrDict byDistribution;
  for (const auto &[dist, names] : table)
    byDistribution.set(dist, Attribute::getStringList(std::vector<std::string>(
                                 names.begin(), names.end())));
  module.getAttrs().set(name, Attribute::getDict(std::move(byDistribution)));
}

void Merger::merge(llvm::StringRef path,
                   std::unique_ptr<llvm::MemoryBuffer> buffer,
                   EvidenceFile &file, const FrameResolver &resolver,
                   const Module *recorded) {
  report(path, std::move(buffer), file);
  ++stats.files;
  stats.lines += file.lines;
  stats.malformedLines += file.malformedLines;
  if (file.skipped) {
    ++stats.skippedFiles;
    if (file.corrupt && !file.header.collection) {
      TestId test = module.lookupTest(file.header.testId);
      if (test != kNoTest)
        corruptTests.insert(test);
    }
    return;
  }
  if (!file.header.executable.empty())
    ++executables[file.header.executable];
  for (const auto &[dist, name] : file.provides)
    provides[dist].insert(name);
  for (const auto &[dist, required] : file.requirements)
    requirements[dist].insert(required);
  for (const auto &[dist, version] : file.versions)
    versions[dist].insert(version);
  for (auto [module, entity] : file.importFunctions)
    if (module != kNoEntity)
      importTime[module].insert(entity);
  if (file.header.collection)
    return; // Import-time evidence of no test (pytest's collection).
  TestId test = getTest(file, path, recorded);
  if (test == kNoTest)
    return;
  stats.samples += file.samples;
  stats.staleSamples += file.staleSamples;

  RecordBuilder &record = records[RecordKey(
      test, file.header.rank, file.header.revision, file.header.rate)];
  if (file.header.pid)
    record.pids.insert(file.header.pid);
  ++record.files;
  record.samples += file.samples;
  record.externalSamples += file.externalSamples;
  record.staleSamples += file.staleSamples;
  record.wallSeconds += file.header.wallSeconds;
  record.complete &= file.header.complete;
  record.state = std::max(record.state, classify(file, resolver));
  record.staleSymbols.insert(file.staleSymbols.begin(),
                             file.staleSymbols.end());
  record.exact &= file.header.version >= 2 && file.header.exactCoverage;
  record.time = std::max(record.time, file.header.time);
  record.longestWall = std::max(record.longestWall, file.header.wallSeconds);
  record.importSamples += file.header.importSamples;
  // Module and class code run at test time (a script's body, a class
  // defined in a test) is module-level code: it goes with import time.
  for (EntityId entity : file.functions)
    (module.getEntity(entity).kind == EntityKind::Function
         ? record.functions
         : record.importFunctions)
        .insert(entity);
  for (auto [importer, entity] : file.importFunctions)
    record.importFunctions.insert(entity);
  record.imports.insert(file.imports.begin(), file.imports.end());
  record.reads.insert(file.reads.begin(), file.reads.end());
  record.packagesKnown &= file.header.packagesRecorded;
  record.packages.insert(file.packages.begin(), file.packages.end());

  llvm::SmallVector<FrameId, 64> frames;
  frames.reserve(file.frames.size());
  for (const ResolvedFrame &frame : file.frames)
    frames.push_back(frame.kind == ResolvedFrame::Kind::Entity
                         ? module.getEntityFrame(frame.entity)
                         : module.getLeafFrame(frame.name));
  // The first file of a record sizes its table at once (the others mostly
  // repeat its stacks) instead of growing it step by step.
  if (record.counts.empty())
    record.counts.reserve(file.nodes.size());
  std::vector<StackId> stacks(file.nodes.size());
  for (size_t i = 0, e = file.nodes.size(); i != e; ++i) {
    const EvidenceFile::Node &node = file.nodes[i];
    StackId parent =
        node.parent == EvidenceFile::kRoot ? kEmptyStack : stacks[node.parent];
    stacks[i] = module.getStack(parent, frames[node.frame]);
    if (file.counts[i])
      record.counts[stacks[i]] += file.counts[i];
  }
}

/// A sorted list of references to \p entities, by symbol.
static Attribute getSymbolList(const Module &module,
                               const std::set<EntityId> &entities) {
  std::vector<llvm::StringRef> symbols;
  for (EntityId entity : entities)
    symbols.push_back(module.getEntity(entity).symbol);
  llvm::sort(symbols);
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  std::vector<Attribute> refs;
  for (llvm::StringRef symbol : symbols)
    refs.push_back(Attribute::getSymbol(symbol));
  return Attribute::getList(std::move(refs));
}

void Merger::finish() {
  if (!goneTests.empty()) {
    std::string message = llvm::formatv("dropped the evidence of {0} test(s) "
                                        "that no longer exist (deleted since "
                                        "recording): '{1}'",
                                        goneTests.size(), *goneTests.begin())
                              .str();
    if (goneTests.size() > 1)
      message += llvm::formatv(" and {0} more", goneTests.size() - 1).str();
    diag.emit(Severity::Remark, options.directory, 0, 0, message);
  }
  // Newest record wins: a test's records of older revisions than its newest
  // (by recording time) describe code that has since changed, and keeping
  // the worst of them would keep the test stale long after it healed.
  // Files without a time (version 1) have time 0 and lose to any that has
  // one; records of one revision are never dropped in favour of each other.
  std::map<TestId, std::pair<double, std::string>> newest;
  for (const auto &[key, builder] : records) {
    auto &[test, rank, revision, rate] = key;
    auto [it, inserted] =
        newest.try_emplace(test, builder.time, std::string(revision));
    if (!inserted && builder.time > it->second.first)
      it->second = {builder.time, revision};
  }
  for (auto it = records.begin(); it != records.end();)
    it = corruptTests.count(std::get<0>(it->first)) ? records.erase(it)
                                                    : std::next(it);
  uint64_t superseded = 0;
  for (auto it = records.begin(); it != records.end();) {
    auto &[test, rank, revision, rate] = it->first;
    const auto &[time, newestRevision] = newest[test];
    if (revision != newestRevision && it->second.time < time) {
      ++superseded;
      it = records.erase(it);
    } else {
      ++it;
    }
  }
  if (superseded)
    module.getAttrs().set(evidence::attr::kEvidenceSuperseded,
                          Attribute::getInt(superseded));

  // Sorting every record's samples is independent work, done in parallel;
  // only adding the records to the module is serial.
  std::vector<RecordBuilder *> builders;
  builders.reserve(records.size());
  for (auto &entry : records)
    builders.push_back(&entry.second);
  std::vector<std::vector<StackSample>> sortedSamples =
      parallelMap<std::vector<StackSample>>(builders.size(), [&](size_t i) {
        std::vector<StackSample> samples;
        samples.reserve(builders[i]->counts.size());
        for (auto [stack, count] : builders[i]->counts)
          samples.push_back({stack, count});
        llvm::sort(samples, [](const StackSample &a, const StackSample &b) {
          return a.stack < b.stack;
        });
        decltype(RecordBuilder::counts)().swap(builders[i]->counts);
        return samples;
      });
  size_t index = 0;
  for (auto &[key, builder] : records) {
    auto &[test, rank, revision, rate] = key;
    EvidenceRecord &record = module.addEvidence(test);
    record.pid = builder.pids.empty() ? 0 : *builder.pids.begin();
    record.rank = rank;
    record.revision = module.intern(revision);
    record.rate = rate;
    record.samples = std::move(sortedSamples[index++]);
    AttrDict &attrs = record.attrs;
    attrs.set(evidence::attr::kState,
              Attribute::getString(stringifyEvidenceState(builder.state)));
    attrs.set(evidence::attr::kFiles, Attribute::getInt(builder.files));
    if (builder.pids.size() > 1) {
      std::vector<Attribute> pids;
      for (int64_t pid : builder.pids)
        pids.push_back(Attribute::getInt(pid));
      attrs.set(evidence::attr::kPids, Attribute::getList(std::move(pids)));
    }
    if (builder.externalSamples)
      attrs.set(evidence::attr::kExternalSamples,
                Attribute::getInt(builder.externalSamples));
    if (builder.wallSeconds)
      attrs.set(evidence::attr::kWallSeconds,
                Attribute::getFloat(builder.wallSeconds));
    if (!builder.complete)
      attrs.set(evidence::attr::kComplete, Attribute::getBool(false));
    attrs.set(evidence::attr::kCoverage,
              Attribute::getString(builder.exact ? "exact" : "sampled"));
    if (!builder.functions.empty())
      attrs.set(evidence::attr::kFunctions,
                getSymbolList(module, builder.functions));
    if (!builder.importFunctions.empty())
      attrs.set(evidence::attr::kImportFunctions,
                getSymbolList(module, builder.importFunctions));
    if (!builder.imports.empty())
      attrs.set(evidence::attr::kImports,
                getSymbolList(module, builder.imports));
    if (!builder.reads.empty())
      attrs.set(evidence::attr::kReads,
                Attribute::getStringList(std::vector<std::string>(
                    builder.reads.begin(), builder.reads.end())));
    // Present, even empty, only when every process said what it imported:
    // a record without it may depend on any package.
    if (builder.packagesKnown)
      attrs.set(evidence::attr::kExternalImports,
                Attribute::getStringList(std::vector<std::string>(
                    builder.packages.begin(), builder.packages.end())));
    if (builder.importSamples)
      attrs.set(evidence::attr::kImportSamples,
                Attribute::getInt(builder.importSamples));
    if (builder.state == EvidenceState::Stale) {
      attrs.set(evidence::attr::kStaleEntities,
                Attribute::getStringList(std::vector<std::string>(
                    builder.staleSymbols.begin(), builder.staleSymbols.end())));
      attrs.set(evidence::attr::kStaleSamples,
                Attribute::getInt(builder.staleSamples));
    }
    ++stats.records;
  }

  // Every test's state summarizes all its records, including any the input
  // module already had (which carry a state if an earlier merge wrote them).
  size_t numTests = module.getNumTests();
  std::vector<EvidenceState> states(numTests, EvidenceState::Missing);
  std::vector<std::set<std::string>> staleSymbols(numTests);
  std::vector<uint64_t> staleSamples(numTests, 0);
  for (const EvidenceRecord &record : module.getEvidence()) {
    if (record.test >= numTests)
      continue;
    const Attribute *attr = record.attrs.lookup(evidence::attr::kState);
    std::optional<llvm::StringRef> name =
        attr ? attr->asString() : std::nullopt;
    std::optional<EvidenceState> state =
        name ? parseEvidenceState(*name) : std::nullopt;
    if (!state)
      state = !currentRevision.empty() && record.revision == currentRevision
                  ? EvidenceState::Fresh
                  : EvidenceState::Unverified;
    EvidenceState &testState = states[record.test];
    testState = testState == EvidenceState::Missing
                    ? *state
                    : std::max(testState, *state);
    if (const Attribute *symbols =
            record.attrs.lookup(evidence::attr::kStaleEntities);
        symbols && symbols->isList())
      for (const Attribute &symbol : symbols->getList())
        if (symbol.isString())
          staleSymbols[record.test].insert(symbol.getString().str());
    if (std::optional<int64_t> samples =
            record.attrs.get(evidence::attr::kStaleSamples).asInt())
      staleSamples[record.test] += *samples;
  }
  for (Test &test : module.getTests()) {
    test.attrs.set(
        evidence::attr::kState,
        Attribute::getString(stringifyEvidenceState(states[test.index])));
    test.attrs.erase(evidence::attr::kStaleEntities);
    test.attrs.erase(evidence::attr::kStaleSamples);
    if (states[test.index] != EvidenceState::Stale)
      continue;
    const std::set<std::string> &symbols = staleSymbols[test.index];
    test.attrs.set(evidence::attr::kStaleEntities,
                   Attribute::getStringList(std::vector<std::string>(
                       symbols.begin(), symbols.end())));
    test.attrs.set(evidence::attr::kStaleSamples,
                   Attribute::getInt(staleSamples[test.index]));
  }
  module.getAttrs().set(evidence::attr::kContextDepth,
                        Attribute::getInt(options.contextDepth));

  // A test's cost defaults to its recorded duration: the longest file of its
  // records (its own process spans the children), summed over ranks would
  // double count, so the longest record.
  std::vector<double> walls(numTests, 0);
  for (const auto &[key, builder] : records)
    walls[std::get<0>(key)] =
        std::max(walls[std::get<0>(key)], builder.longestWall);
  for (Test &test : module.getTests())
    if (test.cost.seconds == 0 && walls[test.index] > 0) {
      test.cost.seconds = walls[test.index];
      if (test.cost.gpuSeconds == 0 && test.cost.gpus > 0)
        test.cost.gpuSeconds = test.cost.gpus * test.cost.seconds;
    }

  if (!importTime.empty()) {
    AttrDict byModule;
    for (const auto &[importer, entities] : importTime)
      byModule.set(module.getEntity(importer).symbol,
                   getSymbolList(module, entities));
    module.getAttrs().set(evidence::attr::kImportTimeEntities,
                          Attribute::getDict(std::move(byModule)));
  }
  addDistributionTable(evidence::attr::kDistributionModules, provides);
  addDistributionTable(evidence::attr::kDistributionRequires, requirements);
  addDistributionTable(evidence::attr::kDistributionVersions, versions);
  if (!executables.empty()) {
    // The most common interpreter; ties go to the first name.
    auto best = executables.begin();
    for (auto it = executables.begin(); it != executables.end(); ++it)
      if (it->second > best->second)
        best = it;
    module.getAttrs().set(evidence::attr::kEvidencePython,
                          Attribute::getString(best->first));
  }
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

/// Parses the snapshots and chooses the revision each describes.
static LogicalResult loadSnapshots(const Inputs &inputs, const Module &current,
                                   DiagnosticEngine &diag,
                                   std::vector<Snapshot> &snapshots) {
  for (const std::string &path : inputs.snapshots) {
    Snapshot snapshot;
    snapshot.path = path;
    isSnapshotFile(llvm::sys::path::filename(path), snapshot.revision);
    snapshot.module = parseModuleFile(path, diag);
    if (!snapshot.module) {
      diag.emit(Severity::Error, path, 0, 0,
                "cannot read the evidence snapshot");
      return failure();
    }
    if (snapshot.revision.empty())
      snapshot.revision = snapshot.module->getAttrs()
                              .get(ir::attr::kRevision)
                              .asString()
                              .value_or("");
    snapshot.index = std::make_unique<LineIndex>(*snapshot.module);
    snapshot.resolver = std::make_unique<FrameResolver>(
        *snapshot.module, *snapshot.index, current);
    snapshots.push_back(std::move(snapshot));
  }
  return success();
}

LogicalResult fastci::mergeEvidence(Module &module,
                                    const MergeEvidenceOptions &options,
                                    DiagnosticEngine &diag,
                                    MergeEvidenceStats *statsOut) {
  MergeEvidenceStats stats;
  Inputs inputs;
  if (failed(findInputs(options.directory, diag, inputs)))
    return failure();
  std::vector<Snapshot> snapshots;
  if (failed(loadSnapshots(inputs, module, diag, snapshots)))
    return failure();
  if (inputs.evidence.empty())
    diag.emit(Severity::Warning, options.directory, 0, 0,
              "no evidence files (*.stacks) in the evidence directory");

  LineIndex currentIndex(module);
  FrameResolver direct(module, currentIndex);
  FrameResolver byName(module, currentIndex, /*verifyNames=*/true);
  std::string currentRevision =
      module.getAttrs().get(ir::attr::kRevision).asString().value_or("").str();
  // The snapshot of a revision; an unversioned snapshot stands for every
  // revision without one of its own. The module's own revision needs none.
  llvm::StringMap<const Snapshot *> byRevision;
  const Snapshot *fallback = nullptr;
  for (const Snapshot &snapshot : snapshots) {
    if (snapshot.revision.empty())
      fallback = fallback ? fallback : &snapshot;
    else
      byRevision.try_emplace(snapshot.revision, &snapshot);
  }
  auto getSnapshot = [&](llvm::StringRef revision) -> const Snapshot * {
    if (!revision.empty() && revision == currentRevision)
      return nullptr;
    if (const Snapshot *snapshot = byRevision.lookup(revision))
      return snapshot;
    return fallback;
  };
  std::string root = options.root;
  if (root.empty())
    root = module.getAttrs()
               .get(python::attr::kRoot)
               .asString()
               .value_or("")
               .str();

  /// One file in flight: its bytes and what reading them produced.
  struct Slot {
    size_t index = 0;
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    EvidenceFile file;
    const FrameResolver *resolver = nullptr;
    /// The snapshot of the file's revision, if any.
    const Module *recorded = nullptr;
  };
  // Each thread resolves a distinct frame text once, whichever files it
  // reads: the ranks of a test, the nights of a directory and the library
  // frames of every test repeat most frames.
  oneapi::tbb::enumerable_thread_specific<FrameCache> frameCaches;
  // Each thread reads its files into one buffer, reused: at the sizes
  // evidence files have, mapping each file costs more in page faults and in
  // the TLB shootdowns of unmapping it than the copy does, and a reused
  // buffer stays in cache. A file with problems keeps a copy of its bytes
  // for the diagnostics, which quote them after the buffer moved on.
  oneapi::tbb::enumerable_thread_specific<llvm::SmallVector<char, 0>>
      readBuffers;
  auto read = [&](Slot &slot) {
    const std::string &path = inputs.evidence[slot.index];
    llvm::SmallVector<char, 0> &bytes = readBuffers.local();
    if (llvm::Error error = readWholeFile(path, bytes)) {
      slot.file.skipped = true;
      slot.file.problems.push_back(
          {0, 0, 0,
           "cannot read evidence file: " + llvm::toString(std::move(error))});
      return;
    }
    llvm::StringRef text(bytes.data(), bytes.size());
    std::string pyspyTestId = options.pyspyTestId.empty()
                                  ? getPySpyTestId(options.directory, path)
                                  : options.pyspyTestId;
    EvidenceReadOptions readOptions{
        [&](llvm::StringRef revision) -> const FrameResolver & {
          // The module's own revision maps directly; another without a
          // snapshot is checked by name.
          const Snapshot *snapshot = getSnapshot(revision);
          slot.resolver = snapshot ? snapshot->resolver.get()
                          : !revision.empty() && revision == currentRevision
                              ? &direct
                              : &byName;
          slot.recorded = snapshot ? snapshot->module.get() : nullptr;
          return *slot.resolver;
        },
        root, pyspyTestId};
    readOptions.frameCache = &frameCaches.local();
    slot.file = readEvidence(text, readOptions);
    if (!slot.file.problems.empty())
      slot.buffer = llvm::MemoryBuffer::getMemBufferCopy(text, path);
  };
  Merger merger(module, options, diag, stats);
  auto merge = [&](Slot &slot) {
    merger.merge(inputs.evidence[slot.index], std::move(slot.buffer), slot.file,
                 slot.resolver ? *slot.resolver : direct, slot.recorded);
  };

  size_t numFiles = inputs.evidence.size();
  unsigned threads = getThreadCount();
  if (threads == 1 || numFiles < 2) {
    for (size_t index = 0; index != numFiles; ++index) {
      Slot slot;
      slot.index = index;
      read(slot);
      merge(slot);
    }
  } else {
    // A pipeline: files are read in parallel and merged one at a time in
    // path order while the next ones are read, so the serial merge overlaps
    // reading instead of leaving threads idle at a barrier. The token limit
    // bounds the files in memory to a few per thread.
    size_t next = 0;
    oneapi::tbb::task_arena arena(static_cast<int>(threads));
    arena.execute([&] {
      using oneapi::tbb::filter_mode;
      using oneapi::tbb::make_filter;
      oneapi::tbb::parallel_pipeline(
          4 * size_t(threads),
          make_filter<void, Slot *>(
              filter_mode::serial_in_order,
              [&](oneapi::tbb::flow_control &control) -> Slot * {
                if (next == numFiles) {
                  control.stop();
                  return nullptr;
                }
                auto *slot = new Slot;
                slot->index = next++;
                return slot;
              }) &
              make_filter<Slot *, Slot *>(filter_mode::parallel,
                                          [&](Slot *slot) {
                                            read(*slot);
                                            return slot;
                                          }) &
              make_filter<Slot *, void>(filter_mode::serial_in_order,
                                        [&](Slot *slot) {
                                          std::unique_ptr<Slot> owned(slot);
                                          merge(*slot);
                                        }));
    });
  }
  merger.finish();
  if (statsOut)
    *statsOut = stats;
  return success();
}
