//===- RepositoryImporter.cpp - A Python repository into the IR -----------===//
//
// Parallelism is confined to the per-file stage, whose results land in a
// vector indexed by the file's position in the sorted list; everything that
// touches the Module runs afterwards on one thread, in that order. The cache
// key covers the file's bytes, its path and module name (symbols and node
// ids depend on them) and the summary format version (inside the entry).
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/RepositoryImporter.h"
#include "fastci/Pass/Parallel.h"
#include "fastci/Python/Analyzer.h"
#include "fastci/Python/FileSummary.h"
#include "fastci/Python/Pytest.h"
#include "fastci/Python/PytestConfig.h"
#include "fastci/Python/PythonAttrs.h"
#include "fastci/Python/SummaryCache.h"
#include "fastci/Workload/Lowering.h"
#include "fastci/Workload/WorkloadAttrs.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <optional>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <thread>

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;
namespace fs = llvm::sys::fs;

namespace {
/// The outcome of the per-file stage.
struct FileResult {
  std::optional<FileSummary> summary;
  uint64_t contentHash = 0;
  uint64_t size = 0;
  /// Set when the file could not be read at all.
  std::string readError;
  bool fromCache = false;
  /// Taken from the cache on its size and modification time alone.
  bool statClean = false;
  /// Parsed with tree-sitter in this run.
  bool parsed = false;
  /// From the cache: whether its items were linked, and from which files
  /// (SummaryCacheEntry::linkReads).
  bool cachedLinked = false;
  StringRef cachedReads;
  /// Linked in this run, having read these files.
  bool relinked = false;
  std::string reads;
  /// The summary's binary form for the cache: the cached bytes, or the
  /// new serialization.
  StringRef cachedBytes;
  std::string serialized;
};

uint64_t hashBytes(StringRef bytes) {
  return llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

/// Draws `files done / total` on a terminal; silent otherwise.
class ProgressBar {
public:
  ProgressBar(size_t total, bool enabled)
      : total(total),
        enabled(enabled && llvm::sys::Process::StandardErrIsDisplayed()),
        start(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (drawn)
      llvm::errs() << "\r\x1b[K";
  }

  void tick() {
    size_t done = ++finished;
    if (!enabled)
      return;
    std::unique_lock<std::mutex> lock(mutex, std::try_to_lock);
    if (!lock.owns_lock())
      return;
    auto now = std::chrono::steady_clock::now();
    // Short runs finish before a bar would be readable.
    if (now - start < std::chrono::milliseconds(300) ||
        now - lastDraw < std::chrono::milliseconds(50))
      return;
    lastDraw = now;
    drawn = true;
    constexpr size_t kWidth = 30;
    size_t filled = total ? done * kWidth / total : kWidth;
    llvm::errs() << "\r[parse-python] [" << std::string(filled, '#')
                 << std::string(kWidth - filled, ' ') << "] " << done << "/"
                 << total << " files";
    llvm::errs().flush();
  }

private:
  size_t total;
  bool enabled;
  std::atomic<size_t> finished{0};
  std::mutex mutex;
  std::chrono::steady_clock::time_point start, lastDraw;
  bool drawn = false;
};

class Importer {
public:
  Importer(Module &module, const ImportOptions &options, DiagnosticEngine &diag,
           ImportStatistics &stats)
      : module(module), options(options), diag(diag), stats(stats) {}

  LogicalResult run();

private:
  /// Summarizes \p file, from the cache when \p useCache and its entry is
  /// current; a cached summary holds only SummaryParts::IR.
  FileResult processFile(const SourceFile &file, bool useCache = true) const;
  /// Adds to the cached summaries the part that only the link reads; a file
  /// whose entry turns out damaged is parsed again.
  void completeCachedSummaries(llvm::ArrayRef<SourceFile> files,
                               std::vector<FileResult> &results) const;
  /// Replaces the cache with this run's files; \p link is null when the
  /// link was skipped (nothing changed). The file is written on the
  /// returned thread, while the IR is built: \p files, \p results and the
  /// old cache's mapping must live until it is joined.
  std::thread writeCache(llvm::ArrayRef<SourceFile> files,
                         std::vector<FileResult> &results,
                         const LinkResult *link) const;
  std::string getDiskPath(StringRef relPath) const {
    llvm::SmallString<256> path(options.tree.root);
    llvm::sys::path::append(path, relPath);
    return std::string(path);
  }
  /// \p symbol, or when it is taken the first free `symbol#N` (N >= 2,
  /// counting on from the last one handed out); the caller adds it.
  std::string makeUnique(std::string symbol);

  Module &module;
  const ImportOptions &options;
  DiagnosticEngine &diag;
  ImportStatistics &stats;
  /// For each taken symbol, the last N of `symbol#N` handed out.
  llvm::StringMap<unsigned> symbolCounts;
  /// pytest's collection options from the root's configuration file.
  PytestConfig pytestConfig;
  /// The summary cache (when `cache=` is given) and the key its entries
  /// must have been made under.
  std::optional<SummaryCache> cache;
  uint64_t cacheKey = 0;
};

/// A marker's floors={...} as the attribute load-manifest gives a manifest
/// test's `floors:`, so lower-workload reads both alike. A malformed one
/// becomes its problem's text, which lower-workload rejects: the test must
/// not be lowered as if it had no overrides.
Attribute floorOverridesAttr(const FloorOverrides &floors) {
  if (!floors.error.empty())
    return Attribute::getString("invalid @pytest.mark.fastci floors: " +
                                floors.error);
  AttrDict overrides;
  for (const FloorOverrideValue &value : floors.entries) {
    AttrDict entry;
    if (!value.off.empty()) {
      entry.set("off", Attribute::getString(value.off));
    } else {
      entry.set("at-least", Attribute::getInt(value.atLeast));
      if (!value.why.empty())
        entry.set("why", Attribute::getString(value.why));
    }
    overrides.set(value.name, Attribute::getDict(std::move(entry)));
  }
  return Attribute::getDict(std::move(overrides));
}
/// Sets attr::kFlows and attr::kEffectNames of a module or class entity.
void setBodyFlows(AttrDict &attrs, BodyFlows &&body) {
  if (!body.flows.empty()) {
    AttrDict flows;
    for (auto &[name, reads] : body.flows)
      flows.set(name, Attribute::takeStringList(std::move(reads)));
    attrs.set(attr::kFlows, Attribute::getDict(std::move(flows)));
  }
  if (!body.effectNames.empty())
    attrs.set(attr::kEffectNames,
              Attribute::takeStringList(std::move(body.effectNames)));
}

} // namespace

FileResult Importer::processFile(const SourceFile &file, bool useCache) const {
  FileResult result;
  // A file whose size and modification time are what the cache recorded is
  // not opened at all.
  const SummaryCacheEntry *entry =
      cache && useCache ? cache->lookup(file.path) : nullptr;
  if (entry && entry->moduleName != file.moduleName)
    entry = nullptr;
  auto fromEntry = [&]() {
    // Whether the link runs is known only once every file is looked at: the
    // part it alone reads is added then (completeCachedSummaries).
    llvm::Expected<FileSummary> summary =
        deserializeSummary(entry->summary, SummaryParts::IR);
    if (!summary) {
      // A damaged entry is simply rebuilt.
      llvm::consumeError(summary.takeError());
      return false;
    }
    result.summary = std::move(*summary);
    result.fromCache = true;
    result.cachedBytes = entry->summary;
    result.cachedLinked = entry->linked;
    result.cachedReads = entry->linkReads;
    return true;
  };
  if (entry && entry->size == file.size && entry->mtimeNs == file.mtimeNs &&
      cache->isStatTrusted(*entry)) {
    result.contentHash = entry->contentHash;
    result.size = entry->size;
    if (fromEntry()) {
      result.statClean = true;
      return result;
    }
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(getDiskPath(file.path), /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    result.readError = buffer.getError().message();
    return result;
  }
  StringRef source = (*buffer)->getBuffer();
  result.contentHash = hashBytes(source);
  result.size = source.size();
  // Touched but not edited (a checkout, a rebase): the content decides.
  if (entry && entry->contentHash == result.contentHash && fromEntry())
    return result;
  result.summary =
      analyzePythonSource(source, file.path, file.moduleName, pytestConfig);
  result.parsed = true;
  return result;
}

void Importer::completeCachedSummaries(llvm::ArrayRef<SourceFile> files,
                                       std::vector<FileResult> &results) const {
  parallelFor(
      0, results.size(),
      [&](size_t i) {
        FileResult &result = results[i];
        if (!result.fromCache)
          return;
        if (llvm::Error error =
                deserializeLinkFacts(result.cachedBytes, *result.summary)) {
          llvm::consumeError(std::move(error));
          result = processFile(files[i], /*useCache=*/false);
        }
      },
      options.jobs);
}

std::thread Importer::writeCache(llvm::ArrayRef<SourceFile> files,
                                 std::vector<FileResult> &results,
                                 const LinkResult *link) const {
  // Summaries are stored as linked: those whose items the link recomputed
  // are serialized again.
  if (link)
    for (auto [index, reads] : llvm::zip(link->relinked, link->reads))
      if (results[index].summary) {
        results[index].serialized = serializeSummary(*results[index].summary);
        results[index].fromCache = false;
        results[index].relinked = true;
        results[index].reads = std::move(reads);
      }
  std::vector<SummaryCacheEntry> entries;
  entries.reserve(files.size());
  for (auto [file, result] : llvm::zip(files, results)) {
    if (!result.summary)
      continue;
    SummaryCacheEntry entry;
    entry.path = file.path;
    entry.moduleName = file.moduleName;
    // The size and time of the walk: an edit since then makes them differ.
    entry.size = file.size;
    entry.mtimeNs = file.mtimeNs;
    entry.contentHash = result.contentHash;
    if (!result.fromCache && result.serialized.empty())
      result.serialized = serializeSummary(*result.summary);
    entry.summary =
        result.fromCache ? result.cachedBytes : StringRef(result.serialized);
    // What the next run needs to decide whether to link the file again.
    size_t index = &result - results.data();
    entry.linked = link ? bool(link->linked[index]) : result.cachedLinked;
    entry.linkReads = result.relinked ? StringRef(result.reads)
                      : entry.linked  ? result.cachedReads
                                      : StringRef();
    entries.push_back(entry);
  }
  return std::thread([this, entries = std::move(entries)] {
    // Failures only cost the cache hits next time.
    llvm::consumeError(
        SummaryCache::write(options.cacheDir, cacheKey, entries));
  });
}

std::string Importer::makeUnique(std::string symbol) {
  // Every name returned here is added to the module at once, so a symbol
  // that is not taken has never been handed out: the common case costs one
  // lookup and no counter.
  if (module.lookupEntity(symbol) == kNoEntity)
    return symbol;
  unsigned &taken = symbolCounts[symbol];
  for (unsigned count = std::max(taken + 1, 2u);; ++count) {
    std::string candidate = symbol + "#" + std::to_string(count);
    if (module.lookupEntity(candidate) == kNoEntity) {
      taken = count;
      return candidate;
    }
  }
}

LogicalResult Importer::run() {
  // Where the time goes, for --pass-statistics and the benchmark.
  auto start = std::chrono::steady_clock::now();
  auto lap = [&](uint64_t &micros) {
    auto now = std::chrono::steady_clock::now();
    micros += std::chrono::duration_cast<std::chrono::microseconds>(now - start)
                  .count();
    start = now;
  };
  bool walkFailed = false;
  std::vector<SourceFile> files =
      collectSourceFiles(options.tree, diag, walkFailed);
  if (walkFailed)
    return failure();
  if (!options.cacheDir.empty()) {
    if (std::error_code ec = fs::create_directories(options.cacheDir)) {
      diag.emit(Severity::Error, options.cacheDir, 0, 0,
                "cannot create cache directory: " + ec.message());
      return failure();
    }
  }
  stats.filesFound = files.size();
  {
    std::vector<FileWarning> configWarnings;
    pytestConfig = readPytestConfig(options.tree.root, configWarnings);
    // Test items depend on pytest's configuration.
    cacheKey = hashBytes(pytestConfig.fingerprint());
    for (const FileWarning &warning : configWarnings) {
      llvm::SmallString<256> configPath(options.tree.root);
      llvm::sys::path::append(configPath, pytestConfig.source);
      diag.emit(Severity::Warning, configPath, warning.line, warning.column,
                warning.message);
    }
  }
  // merge-evidence and mark-changed find the checkout through `root`.
  llvm::SmallString<256> rootPath;
  if (fs::real_path(options.tree.root, rootPath)) {
    rootPath = options.tree.root;
    fs::make_absolute(rootPath);
  }
  module.getAttrs().set(python::attr::kRoot,
                        Attribute::getString(rootPath.str()));
  lap(stats.walkMicros);
  if (!options.cacheDir.empty()) {
    std::string problem;
    cache = SummaryCache::open(options.cacheDir, cacheKey, &problem);
    if (!problem.empty())
      diag.emit(Severity::Warning, SummaryCache::getPath(options.cacheDir), 0,
                0, "summary cache " + problem + "; parsing every file");
  }
  lap(stats.cacheReadMicros);

  std::vector<FileResult> results(files.size());
  {
    ProgressBar progress(files.size(), options.showProgress);
    tbb::task_arena arena(options.jobs ? static_cast<int>(options.jobs)
                                       : tbb::task_arena::automatic);
    // Largest files first, each taken by whichever thread is free next, so
    // that the run ends with small files on every thread rather than one
    // thread finishing a large file alone.
    std::vector<size_t> order(files.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return files[a].size > files[b].size;
    });
    std::atomic<size_t> next{0};
    arena.execute([&] {
      tbb::parallel_for(
          0, arena.max_concurrency(),
          [&](int) {
            for (size_t k; (k = next.fetch_add(1)) < order.size();) {
              size_t i = order[k];
              results[i] = processFile(files[i]);
              progress.tick();
            }
          },
          tbb::simple_partitioner());
    });
  }
  lap(stats.filesMicros);
  // The cache holds summaries as linked last time: when the set of files is
  // the same, a file keeps its linked items unless it or a file its
  // collection read changed; when no content changed, linking again would
  // give the same items.
  bool sameFiles = cache && cache->size() == files.size() &&
                   llvm::all_of(files, [&](const SourceFile &file) {
                     return cache->lookup(file.path) != nullptr;
                   });
  bool unchanged =
      sameFiles && llvm::all_of(results, [](const FileResult &result) {
        return result.fromCache;
      });
  std::optional<LinkResult> link;
  if (!unchanged) {
    completeCachedSummaries(files, results);
    auto isFresh = [&](size_t i) { return !results[i].fromCache; };
    auto readsOf = [&](size_t i) -> std::optional<StringRef> {
      if (results[i].fromCache && results[i].cachedLinked)
        return results[i].cachedReads;
      return std::nullopt;
    };
    PreviousLink previous;
    previous.sameFiles = sameFiles;
    previous.isFresh = isFresh;
    previous.readsOf = readsOf;
    // Tests inherited across modules need every file's summary.
    link = linkPytestItems(
        files,
        [&](size_t i) {
          return results[i].summary ? &*results[i].summary : nullptr;
        },
        pytestConfig, options.jobs, cache ? &previous : nullptr);
    stats.filesLinked = link->relinked.size();
  }
  lap(stats.linkMicros);
  std::thread cacheWriter;
  if (cache) {
    // Also when only stat data changed (a touched file): the next run then
    // trusts it without reading it.
    if (!unchanged || !llvm::all_of(results, [](const FileResult &result) {
          return result.statClean || !result.summary;
        }))
      cacheWriter = writeCache(files, results, link ? &*link : nullptr);
  }
  lap(stats.cacheWriteMicros);

  // Entities first, for every file, so that edges can resolve across files.
  struct Placed {
    EntityId moduleId = kNoEntity;
    std::vector<EntityId> ids;
  };
  std::vector<Placed> placed(files.size());
  {
    size_t numEntities = 0, numEdges = 0;
    for (const FileResult &result : results)
      if (result.summary) {
        numEntities += 2 + result.summary->entities.size();
        numEdges += getNumEdges(*result.summary);
      }
    module.reserveEntities(numEntities);
    module.reserveEdges(numEdges);
  }
  // The summaries are not needed after this: their strings are moved into
  // the attributes rather than copied.
  for (size_t i = 0; i < files.size(); ++i) {
    const SourceFile &file = files[i];
    FileResult &result = results[i];
    std::string diskPath = getDiskPath(file.path);
    if (!result.summary) {
      diag.emit(Severity::Warning, diskPath, 0, 0,
                "cannot read file: " + result.readError);
      continue;
    }
    FileSummary &summary = *result.summary;
    ++(result.parsed ? stats.filesParsed : stats.filesCached);
    for (const FileWarning &warning : summary.warnings)
      diag.emit(Severity::Warning, diskPath, warning.line, warning.column,
                warning.message);

    EntityId fileId = module.addEntity(EntityKind::File, makeUnique(file.path),
                                       kNoEntity, {}, result.contentHash);
    SourceRange moduleRange{1, 0, summary.numLines, summary.lastLineLength};
    std::string moduleSymbol = makeUnique(file.moduleName);
    Placed &entry = placed[i];
    entry.moduleId = module.addEntity(EntityKind::Module, moduleSymbol, fileId,
                                      moduleRange, summary.moduleHash);
    {
      AttrDict &attrs = module.getEntity(entry.moduleId).attrs;
      if (summary.parseError)
        attrs.set(attr::kParseError, Attribute::getBool(true));
      if (!summary.moduleNames.empty())
        attrs.set(attr::kNames,
                  Attribute::takeStringList(std::move(summary.moduleNames)));
      setBodyFlows(attrs, std::move(summary.moduleBody));
      if (summary.moduleStatementsHash != summary.moduleHash)
        attrs.set(attr::kStatementsHash,
                  Attribute::getString(llvm::utohexstr(
                      summary.moduleStatementsHash, /*LowerCase=*/true, 16)));
    }
    for (EntitySummary &entity : summary.entities) {
      EntityId parent = entity.parent == kModuleScope
                            ? entry.moduleId
                            : entry.ids[entity.parent];
      std::string symbol = moduleSymbol.empty()
                               ? entity.qualname
                               : moduleSymbol + "." + entity.qualname;
      EntityId id = module.addEntity(entity.kind, makeUnique(std::move(symbol)),
                                     parent, entity.range, entity.hash);
      AttrDict &attrs = module.getEntity(id).attrs;
      if (!entity.decorators.empty())
        attrs.set(python::attr::kDecorators,
                  Attribute::takeStringList(std::move(entity.decorators)));
      if (entity.isAsync)
        attrs.set(python::attr::kAsync, Attribute::getBool(true));
      if (entity.isLambda)
        attrs.set(python::attr::kLambda, Attribute::getBool(true));
      if (entity.isFixture)
        attrs.set(python::attr::kFixture, Attribute::getBool(true));
      if (!entity.names.empty())
        attrs.set(attr::kNames,
                  Attribute::takeStringList(std::move(entity.names)));
      setBodyFlows(attrs, std::move(entity.body));
      entry.ids.push_back(id);
    }
    stats.bytesRead += result.size;
  }

  for (size_t i = 0; i < files.size(); ++i) {
    if (!results[i].summary)
      continue;
    FileSummary &summary = *results[i].summary;
    const Placed &entry = placed[i];
    auto localToId = [&](LocalId local) {
      return local == kModuleScope ? entry.moduleId : entry.ids[local];
    };
    forEachEdge(summary, [&](const EdgeRef &edge) {
      StaticEdge staticEdge;
      staticEdge.kind = edge.kind;
      staticEdge.from = localToId(edge.from);
      staticEdge.name = edge.target;
      staticEdge.line = edge.line;
      staticEdge.to = module.lookupEntity(edge.target);
      // `from M import CONSTANT`: the module is the best target we have.
      if (staticEdge.to == kNoEntity && edge.kind == EdgeKind::Import &&
          edge.modulePrefix)
        staticEdge.to =
            module.lookupEntity(edge.target.take_front(edge.modulePrefix));
      module.addEdge(staticEdge);
    });
    for (TestSummary &testSummary : summary.tests) {
      if (module.lookupTest(testSummary.nodeId) != kNoTest)
        continue;
      TestId id = module.addTest(testSummary.nodeId);
      Test &test = module.getTest(id);
      test.entry = localToId(testSummary.entry);
      if (!testSummary.entrySymbol.empty() &&
          module.lookupEntity(testSummary.entrySymbol) != kNoEntity)
        test.entry = module.lookupEntity(testSummary.entrySymbol);
      test.tags = std::move(testSummary.tags);
      test.scope = std::move(testSummary.scope);
      for (const WorkloadValue &value : testSummary.workload)
        test.workload.set(value.key, value.value);
      if (testSummary.floors.present)
        test.attrs.set(workload::attr::kFloorOverrides,
                       floorOverridesAttr(testSummary.floors));
      if (testSummary.parametrized)
        test.attrs.set(attr::kParametrized, Attribute::getBool(true));
      if (testSummary.inheritedUnknown)
        test.attrs.set(attr::kInheritedUnknown, Attribute::getBool(true));
      if (testSummary.enclosing) {
        test.attrs.set(attr::kEnclosing, Attribute::getBool(true));
        test.attrs.set(attr::kEnclosingReason,
                       Attribute::getString(testSummary.reason));
      }
    }
  }
  // Freeing thousands of summaries is a few percent of a warm run: on every
  // thread, while the cache is written.
  parallelFor(
      0, results.size(), [&](size_t i) { results[i].summary.reset(); },
      options.jobs);
  lap(stats.buildMicros);
  if (cacheWriter.joinable())
    cacheWriter.join();
  // The mapping is no longer needed: cached summaries were copied out.
  cache.reset();
  // (The time waited for the writer, if any.)
  lap(stats.cacheWriteMicros);
  return success();
}

LogicalResult fastci::python::importPythonRepository(
    Module &module, const ImportOptions &options, DiagnosticEngine &diag,
    ImportStatistics &stats) {
  return Importer(module, options, diag, stats).run();
}
