//===- PruneProperty.cpp - Randomized properties of select and prune ------===//
//
// Builds random modules (nested entities, static calls, tests with random
// evidence, trust states, configurations and costs, random changes), runs
// selection and pruning with random options, and checks the guarantees the
// plan relies on against an independent computation of contexts:
//  * every test whose trusted evidence executes changed code is selected;
//  * every (changed entity, context) pair an affected test covers is covered
//    by a retained test, and each pruned test's witnesses are retained tests
//    with exactly its context;
//  * tests selected by a fallback, or without trusted evidence, are never
//    pruned.
// Each case is reproducible from its seed, which failures print; set
// FASTCI_PROPERTY_SEED to rerun one case, FASTCI_PROPERTY_CASES for more.
//
//===----------------------------------------------------------------------===//
#include "fastci/Evidence/EvidenceMerger.h"
#include "fastci/Select/ChangeSet.h"
#include "fastci/Select/ContextPruner.h"
#include "fastci/Select/SelectAttrs.h"
#include "fastci/Select/Selector.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cstdlib>
#include <map>
#include <random>
#include <set>

using namespace fastci;

namespace {

constexpr llvm::StringLiteral kTpFlag = "--tensor-model-parallel-size";

/// A random module; every choice is drawn from \p rng.
std::unique_ptr<Module> buildRandomModule(std::mt19937_64 &rng) {
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  auto module = std::make_unique<Module>();
  Module &m = *module;
  std::vector<EntityId> functions;
  size_t numFiles = 1 + pick(3);
  for (size_t f = 0; f < numFiles; ++f) {
    std::string dir = pick(2) ? "pkg" : "lib";
    std::string path = dir + "/m" + std::to_string(f) + ".py";
    EntityId file = m.addEntity(EntityKind::File, path);
    std::string name = dir + ".m" + std::to_string(f);
    EntityId mod = m.addEntity(EntityKind::Module, name, file, {1, 0, 500, 0});
    std::vector<EntityId> scopes{mod};
    size_t numFunctions = 1 + pick(6);
    for (size_t i = 0; i < numFunctions; ++i) {
      EntityId parent = scopes[pick(scopes.size())];
      uint32_t line = 10 + 20 * uint32_t(i);
      EntityId fn = m.addEntity(EntityKind::Function,
                                m.getEntity(parent).symbol.str() + ".f" +
                                    std::to_string(i),
                                parent, {line, 0, line + 15, 0});
      functions.push_back(fn);
      scopes.push_back(fn);
    }
  }
  for (size_t i = 0, n = pick(2 * functions.size()); i < n; ++i)
    m.addEdge({EdgeKind::Call,
               functions[pick(functions.size())],
               functions[pick(functions.size())],
               "",
               0,
               {}});

  const char *leaves[] = {"torch.matmul", "torch.distributed.all_reduce"};
  size_t numTests = 2 + pick(14);
  for (size_t t = 0; t < numTests; ++t) {
    TestId id = m.addTest("t" + std::to_string(t));
    fastci::Test &test = m.getTest(id);
    test.cost.gpus = 1 + pick(8);
    test.cost.seconds = double(1 + pick(4));
    test.cost.gpuSeconds = double(test.cost.gpus) * test.cost.seconds;
    if (pick(3) == 0)
      test.attrs.set("risk", Attribute::getFloat(double(pick(4)) / 4));
    test.attrs.set("dialect", Attribute::getString("megatron"));
    test.attrs.set("nproc", Attribute::getInt(pick(2) ? 8 : 4));
    if (pick(2))
      test.workload.set(kTpFlag, Attribute::getInt(1 + pick(2)));
    if (pick(4) == 0)
      test.scope = {"tp"};
    if (pick(5) == 0)
      test.entry = functions[pick(functions.size())];
    static const char *states[] = {"fresh",      "fresh", "fresh",
                                   "unverified", "stale", "missing"};
    const char *state = states[pick(6)];
    test.attrs.set(evidence::attr::kState, Attribute::getString(state));
    if (llvm::StringRef(state) == "missing")
      continue;
    EvidenceRecord &record = m.addEvidence(id);
    record.rate = 50;
    for (size_t s = 0, n = 1 + pick(4); s < n; ++s) {
      std::vector<FrameId> frames;
      for (size_t d = 0, depth = 1 + pick(5); d < depth; ++d)
        frames.push_back(m.getEntityFrame(functions[pick(functions.size())]));
      if (pick(2))
        frames.push_back(m.getLeafFrame(leaves[pick(2)]));
      record.samples.push_back({m.getStack(frames), 1 + pick(40)});
    }
  }
  static const ChangeKind kinds[] = {ChangeKind::Modified, ChangeKind::Modified,
                                     ChangeKind::Added, ChangeKind::Cosmetic,
                                     ChangeKind::Renamed};
  for (size_t c = 0, n = 1 + pick(4); c < n; ++c) {
    EntityId entity = pick(5) == 0 ? m.getEntity(functions[0]).parent
                                   : functions[pick(functions.size())];
    m.addChange(kinds[pick(5)], entity).lines = {{1, uint32_t(1 + pick(9))}};
  }
  if (pick(4) == 0)
    m.addChange(ChangeKind::Deleted, "pkg.m0.gone", "pkg/m0.py");
  return module;
}

/// True when \p outer is \p inner or encloses it.
bool encloses(const Module &m, EntityId outer, EntityId inner) {
  for (; inner != kNoEntity; inner = m.getEntity(inner).parent)
    if (inner == outer)
      return true;
  return false;
}

/// A context, computed independently of the pruner: per executed entity of
/// the changed region, its caller chains cut to k and its callees, plus the
/// configuration when asked for.
using Context =
    std::map<EntityId,
             std::pair<std::set<std::vector<EntityId>>, std::set<FrameId>>>;
struct Pair {
  Context context;
  std::string config;
  friend bool operator==(const Pair &, const Pair &) = default;
};

std::optional<Pair> getPair(const Module &m, const EvidenceGraph &graph,
                            TestId test, EntityId changed, unsigned k,
                            bool configAware) {
  Pair pair;
  for (const EvidenceGraph::EntityUse &use : graph.getEntityUses(test)) {
    if (!encloses(m, changed, use.entity))
      continue;
    auto &[chains, callees] = pair.context[use.entity];
    for (const EvidenceGraph::CallingContext &context : use.contexts)
      chains.insert(std::vector<EntityId>(
          context.callers.begin(),
          context.callers.begin() +
              std::min<size_t>(k, context.callers.size())));
    callees.insert(use.callees.begin(), use.callees.end());
  }
  if (pair.context.empty())
    return std::nullopt;
  if (configAware) {
    const fastci::Test &t = m.getTest(test);
    // tp defaults to 1 in the schema; the other dimensions never vary here.
    Attribute tp = t.workload.get(kTpFlag);
    pair.config = (tp ? tp.str() : "1") + "/" + t.attrs.get("nproc").str() +
                  "/" + (t.scope.empty() ? "" : t.scope[0]);
  }
  return pair;
}

bool isTrue(const fastci::Test &test, llvm::StringRef key) {
  Attribute value = test.attrs.get(key);
  return value.isBool() && value.getBool();
}

void checkCase(uint64_t seed, const ConfigSignatureBuilder &signatures) {
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FASTCI_PROPERTY_SEED=" + std::to_string(seed) +
               ")");
  std::mt19937_64 rng(seed);
  std::unique_ptr<Module> module = buildRandomModule(rng);
  Module &m = *module;
  PruneOptions prune;
  prune.contextDepth = 1 + unsigned(rng() % 3);
  prune.configAware = rng() % 2;
  SelectOptions select;
  select.sampledCallers = rng() % 2;
  select.staticHops = unsigned(rng() % 3);

  std::string output;
  llvm::raw_string_ostream os(output);
  DiagnosticEngine diag(&os);
  EvidenceGraph graph(m, 3);
  ASSERT_TRUE(succeeded(selectAffectedTests(m, graph, select, diag)));
  ASSERT_TRUE(succeeded(pruneContextEquivalentTests(
      m, graph, prune, &signatures, diag, llvm::SMLoc())));
  EXPECT_EQ(diag.getNumErrors(), 0u) << output;

  auto usable = [&](const fastci::Test &test) {
    return isUsableEvidence(
        parseEvidenceState(
            test.attrs.get(evidence::attr::kState).asString().value_or(""))
            .value_or(EvidenceState::Missing));
  };
  for (const fastci::Test &test : m.getTests()) {
    bool selected = isTrue(test, "selected"), pruned = isTrue(test, "pruned");
    std::optional<SelectionRule> rule =
        parseSelectionRule(test.attrs.get("rule").asString().value_or(""));
    ASSERT_TRUE(rule) << test.name.str();
    // No unsafe category is ever pruned.
    if (pruned) {
      EXPECT_TRUE(selected) << test.name.str();
      EXPECT_EQ(*rule, SelectionRule::Executes) << test.name.str();
      EXPECT_TRUE(usable(test)) << test.name.str();
    }
    // Evidence that cannot vouch for a test selects it.
    if (!usable(test)) {
      EXPECT_TRUE(selected) << test.name.str();
    }

    for (const Change &change : m.getChanges()) {
      if (change.kind == ChangeKind::Cosmetic || change.entity == kNoEntity)
        continue;
      std::optional<Pair> pair = getPair(m, graph, test.index, change.entity,
                                         prune.contextDepth, prune.configAware);
      if (!pair)
        continue;
      // Trusted evidence executing changed code is always selected.
      EXPECT_TRUE(selected)
          << test.name.str() << " runs " << change.symbol.str();
      if (!selected || !usable(test) || !pruned)
        continue;
      // The witness of a pruned test runs the change in the same context
      // and is itself retained.
      Attribute witness =
          test.attrs.get("witnesses").isDict()
              ? test.attrs.get("witnesses").getDict().get(change.symbol)
              : Attribute();
      ASSERT_TRUE(witness.isSymbol()) << test.name.str();
      TestId by = m.lookupTest(witness.getSymbolName());
      ASSERT_NE(by, kNoTest);
      EXPECT_FALSE(isTrue(m.getTest(by), "pruned"));
      EXPECT_TRUE(isTrue(m.getTest(by), "selected"));
      EXPECT_EQ(getPair(m, graph, by, change.entity, prune.contextDepth,
                        prune.configAware),
                pair)
          << test.name.str() << " witnessed by " << m.getTest(by).name.str();
    }
  }

  // Coverage: every pair an affected test covers, some retained test covers.
  for (const Change &change : m.getChanges()) {
    if (change.kind == ChangeKind::Cosmetic || change.entity == kNoEntity)
      continue;
    std::vector<Pair> retained;
    std::vector<std::pair<std::string, Pair>> affected;
    for (const fastci::Test &test : m.getTests()) {
      if (!isTrue(test, "selected") || !usable(test))
        continue;
      std::optional<Pair> pair = getPair(m, graph, test.index, change.entity,
                                         prune.contextDepth, prune.configAware);
      if (!pair)
        continue;
      affected.emplace_back(test.name.str(), *pair);
      if (!isTrue(test, "pruned"))
        retained.push_back(*pair);
    }
    for (const auto &[name, pair] : affected)
      EXPECT_TRUE(llvm::is_contained(retained, pair))
          << "pair of " << name << " for " << change.symbol.str()
          << " is not covered by the retained set";
  }
}

ConfigSignatureBuilder getDefaultSignatures() {
  DiagnosticEngine diag;
  std::optional<WorkloadSchema> schema =
      parseWorkloadSchema(diag.addBuffer(llvm::MemoryBuffer::getMemBuffer(
                              getDefaultWorkloadSchemaText(), "<default>")),
                          diag);
  EXPECT_TRUE(schema);
  return ConfigSignatureBuilder(schema ? std::move(*schema) : WorkloadSchema());
}

TEST(PruneProperty, RandomModules) {
  ConfigSignatureBuilder signatures = getDefaultSignatures();
  if (const char *seed = std::getenv("FASTCI_PROPERTY_SEED"))
    return checkCase(std::strtoull(seed, nullptr, 10), signatures);
  uint64_t cases = 300;
  if (const char *count = std::getenv("FASTCI_PROPERTY_CASES"))
    cases = std::strtoull(count, nullptr, 10);
  for (uint64_t seed = 1; seed <= cases && !HasFailure(); ++seed)
    checkCase(seed, signatures);
}

} // namespace
