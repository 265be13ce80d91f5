//===- Verifier.cpp - Structural checks of a Module -----------------------===//
//
// Checks the invariants listed in docs/IR.md ("Verifier rules") and reports
// every violation, not just the first, so that one run shows all that is
// wrong with a hand-edited or pass-produced module. A diagnostic points at
// the construct's text when the module was parsed from .fir; otherwise it
// names the construct (`function @"pkg.f": ...`).
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Verifier.h"
#include "fastci/IR/AttrSchema.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace fastci;

namespace {
class Verifier {
public:
  /// Describes the construct being checked. Descriptions are formatted only
  /// when an error is reported: formatting one per entity, edge and test up
  /// front was a large share of verifying a big module.
  using Subject = llvm::function_ref<std::string()>;

  Verifier(const Module &module, DiagnosticEngine &diag)
      : module(module), diag(diag) {}

  LogicalResult verify();

private:
  /// Reports \p message about the construct at \p loc, described as
  /// \p subject when there is no location to point at.
  void emitError(llvm::SMLoc loc, const llvm::Twine &subject,
                 const llvm::Twine &message) {
    hadError = true;
    if (loc.isValid())
      diag.error(loc, message);
    else
      diag.error(loc, subject + ": " + message);
  }
  bool isEntity(EntityId id) const { return id < module.getNumEntities(); }
  std::string describeEntity(const Entity &entity) const {
    return (stringifyEntityKind(entity.kind) + " " + symbolRef(entity.symbol))
        .str();
  }
  static std::string symbolRef(llvm::StringRef name) {
    std::string result;
    llvm::raw_string_ostream os(result);
    printSymbolRef(os, name);
    return result;
  }
  static std::string quoted(llvm::StringRef name) {
    std::string result;
    llvm::raw_string_ostream os(result);
    printEscapedString(os, name);
    return result;
  }

  void verifyEntity(const Entity &entity);
  void verifyParentCycles();
  void verifyEdge(const StaticEdge &edge);
  void verifyTest(const Test &test);
  void verifyEvidence(const EvidenceRecord &record);
  void verifyChange(const Change &change);
  /// Checks symbol references anywhere in \p attrs, and the value kinds of
  /// the attributes declared for \p host (AttrSchema.h).
  /// \p subject describes the host; it is called only to report an error.
  void verifyAttrs(const AttrDict &attrs, AttrHost host, llvm::SMLoc loc,
                   Subject subject);
  void verifySymbolRefs(const Attribute &attr, llvm::StringRef key,
                        llvm::SMLoc loc, Subject subject);
  /// Checks that \p value is a finite, non-negative number.
  void verifyQuantity(double value, llvm::StringRef what, llvm::SMLoc loc,
                      Subject subject);

  const Module &module;
  DiagnosticEngine &diag;
  bool hadError = false;
};
} // namespace

/// `L:C-L:C`.
static std::string formatRange(const SourceRange &range) {
  return (llvm::Twine(range.startLine) + ":" + llvm::Twine(range.startColumn) +
          "-" + llvm::Twine(range.endLine) + ":" + llvm::Twine(range.endColumn))
      .str();
}

/// True when \p range begins no later than it ends.
static bool isOrdered(const SourceRange &range) {
  return std::make_pair(range.startLine, range.startColumn) <=
         std::make_pair(range.endLine, range.endColumn);
}

/// True for a set range with 1-based lines that begins before it ends.
static bool isWellFormed(const SourceRange &range) {
  return range != SourceRange() && range.startLine && isOrdered(range);
}

/// True when \p inner lies within \p outer.
static bool encloses(const SourceRange &outer, const SourceRange &inner) {
  return std::make_pair(outer.startLine, outer.startColumn) <=
             std::make_pair(inner.startLine, inner.startColumn) &&
         std::make_pair(inner.endLine, inner.endColumn) <=
             std::make_pair(outer.endLine, outer.endColumn);
}

void Verifier::verifySymbolRefs(const Attribute &attr, llvm::StringRef key,
                                llvm::SMLoc loc, Subject subject) {
  if (attr.isSymbol()) {
    llvm::StringRef name = attr.getSymbolName();
    if (module.lookupEntity(name) == kNoEntity &&
        module.lookupTest(name) == kNoTest)
      emitError(loc, subject(),
                "attribute '" + key + "' refers to undefined symbol " +
                    symbolRef(name));
  } else if (attr.isList()) {
    for (const Attribute &element : attr.getList())
      verifySymbolRefs(element, key, loc, subject);
  } else if (attr.isDict()) {
    for (const NamedAttribute &nested : attr.getDict())
      verifySymbolRefs(nested.second, key, loc, subject);
  }
}

void Verifier::verifyAttrs(const AttrDict &attrs, AttrHost host,
                           llvm::SMLoc loc, Subject subject) {
  for (const NamedAttribute &attr : attrs) {
    verifySymbolRefs(attr.second, attr.first, loc, subject);
    std::optional<AttrDecl> decl = lookupAttrDecl(host, attr.first);
    if (decl && !isOfKind(attr.second, decl->kind))
      emitError(loc, subject(),
                "attribute '" + attr.first + "' must be a " +
                    stringifyAttrValueKind(decl->kind) + " (written by " +
                    decl->writer + "), not " + attr.second.str());
  }
}

void Verifier::verifyQuantity(double value, llvm::StringRef what,
                              llvm::SMLoc loc, Subject subject) {
  if (std::isnan(value))
    emitError(loc, subject(), what + " is NaN");
  else if (std::isinf(value))
    emitError(loc, subject(), what + " is infinite");
  else if (value < 0)
    emitError(loc, subject(), "negative " + what);
}

void Verifier::verifyEntity(const Entity &entity) {
  // Described only when reporting (see Subject).
  auto subject = [&] { return describeEntity(entity); };
  EntityId previous = module.lookupEntity(entity.symbol);
  if (previous != entity.id) {
    emitError(entity.loc, subject(),
              "duplicate symbol " + symbolRef(entity.symbol));
    const Entity &first = module.getEntity(previous);
    if (first.loc.isValid())
      diag.note(first.loc, "previous definition is here");
  }

  if (entity.parent != kNoEntity) {
    if (!isEntity(entity.parent)) {
      emitError(entity.loc, subject(),
                "parent id " + llvm::Twine(entity.parent) + " names no entity");
    } else {
      const Entity &parent = module.getEntity(entity.parent);
      bool kindOk = false;
      llvm::StringRef expected;
      switch (entity.kind) {
      case EntityKind::File:
        expected = "nothing";
        break;
      case EntityKind::Module:
        kindOk = parent.kind == EntityKind::File;
        expected = "a file";
        break;
      case EntityKind::Class:
      case EntityKind::Function:
        kindOk = parent.kind != EntityKind::File;
        expected = "a module, class or function";
        break;
      }
      if (entity.kind == EntityKind::File)
        emitError(entity.loc, subject(), "a file cannot have a parent");
      else if (!kindOk)
        emitError(entity.loc, subject(),
                  "parent of a " + stringifyEntityKind(entity.kind) +
                      " must be " + expected + ", not " +
                      describeEntity(parent));
      else if (isWellFormed(entity.range) && isWellFormed(parent.range) &&
               !encloses(parent.range, entity.range))
        emitError(entity.loc, subject(),
                  "range " + formatRange(entity.range) +
                      " is not within the range " + formatRange(parent.range) +
                      " of its parent " + describeEntity(parent));
    }
  }

  if (entity.range != SourceRange()) {
    if (entity.range.startLine == 0 || entity.range.endLine == 0)
      emitError(entity.loc, subject(),
                "range " + formatRange(entity.range) +
                    " has line 0 (lines start at 1)");
    else if (!isOrdered(entity.range))
      emitError(entity.loc, subject(),
                "inverted range " + formatRange(entity.range));
  }
  if (!entity.attrs.empty())
    verifyAttrs(entity.attrs, AttrHost::Entity, entity.loc, subject);
}

void Verifier::verifyParentCycles() {
  // Three-colour walk up parent chains: every entity is finished once, so
  // this is linear however the chains are shaped.
  enum : uint8_t { Unvisited, OnPath, Done };
  std::vector<uint8_t> state(module.getNumEntities(), Unvisited);
  llvm::SmallVector<EntityId, 16> chain;
  for (EntityId start = 0, e = module.getNumEntities(); start != e; ++start) {
    chain.clear();
    EntityId id = start;
    while (isEntity(id) && state[id] == Unvisited) {
      state[id] = OnPath;
      chain.push_back(id);
      id = module.getEntity(id).parent;
    }
    if (isEntity(id) && state[id] == OnPath) {
      const Entity &entity = module.getEntity(id);
      emitError(entity.loc, describeEntity(entity),
                "parent chain of " + symbolRef(entity.symbol) +
                    " forms a cycle");
    }
    for (EntityId visited : chain)
      state[visited] = Done;
  }
}

void Verifier::verifyEdge(const StaticEdge &edge) {
  auto subject = [&] {
    return (stringifyEdgeKind(edge.kind) + " edge " + quoted(edge.name)).str();
  };
  if (!isEntity(edge.from)) {
    emitError(edge.loc, subject(),
              "source id " + llvm::Twine(edge.from) + " names no entity");
  } else if (module.getEntity(edge.from).kind == EntityKind::File) {
    emitError(edge.loc, subject(),
              "source of an edge must be a module, class or function, not " +
                  describeEntity(module.getEntity(edge.from)));
  }
  if (edge.to != kNoEntity && !isEntity(edge.to))
    emitError(edge.loc, subject(),
              "target id " + llvm::Twine(edge.to) + " names no entity");
  if (edge.to == kNoEntity && edge.name.empty())
    emitError(edge.loc, subject(), "unresolved edge has an empty target name");
}

void Verifier::verifyTest(const Test &test) {
  auto subject = [&] { return "test " + quoted(test.name); };
  TestId previous = module.lookupTest(test.name);
  if (previous != test.index) {
    emitError(test.loc, subject(), "duplicate test " + quoted(test.name));
    const Test &first = module.getTest(previous);
    if (first.loc.isValid())
      diag.note(first.loc, "previous definition is here");
  }
  if (test.entry != kNoEntity && !isEntity(test.entry))
    emitError(test.loc, subject(),
              "entry id " + llvm::Twine(test.entry) + " names no entity");
  if (test.cost.gpus < 0)
    emitError(test.loc, subject(), "negative cost 'gpus'");
  verifyQuantity(test.cost.seconds, "cost 'seconds'", test.loc, subject);
  verifyQuantity(test.cost.gpuSeconds, "cost 'gpu_seconds'", test.loc, subject);
  for (const Outcome &outcome : test.history)
    verifyQuantity(outcome.duration, "outcome duration", test.loc, subject);
  // The workload is the test's own (manifest) data: no declared names.
  for (const NamedAttribute &attr : test.workload)
    verifySymbolRefs(attr.second, attr.first, test.loc, subject);
  verifyAttrs(test.attrs, AttrHost::Test, test.loc, subject);
}

void Verifier::verifyEvidence(const EvidenceRecord &record) {
  bool knownTest = record.test < module.getNumTests();
  auto subject = [&] {
    return "evidence for " + (knownTest
                                  ? quoted(module.getTest(record.test).name)
                                  : "test id " + std::to_string(record.test));
  };
  if (!knownTest)
    emitError(record.loc, subject(),
              "evidence names unknown test id " + llvm::Twine(record.test));
  verifyQuantity(record.rate, "sample rate", record.loc, subject);
  for (const StackSample &sample : record.samples) {
    if (sample.stack >= module.getNumStacks())
      emitError(record.loc, subject(),
                "sample names unknown stack id " + llvm::Twine(sample.stack));
    if (sample.count == 0)
      emitError(record.loc, subject(), "sample count must be positive");
  }
  verifyAttrs(record.attrs, AttrHost::Evidence, record.loc, subject);
}

void Verifier::verifyChange(const Change &change) {
  auto subject = [&] {
    return (stringifyChangeKind(change.kind) + " change of " +
            quoted(change.symbol))
        .str();
  };
  if (change.entity != kNoEntity && !isEntity(change.entity))
    emitError(change.loc, subject(),
              "entity id " + llvm::Twine(change.entity) + " names no entity");
  for (const LineRange &range : change.lines) {
    std::string text =
        (llvm::Twine(range.first) + ":" + llvm::Twine(range.last)).str();
    if (range.first == 0)
      emitError(change.loc, subject(),
                "line range " + text + " has line 0 (lines start at 1)");
    else if (range.first > range.last)
      emitError(change.loc, subject(), "inverted line range " + text);
  }
  verifyAttrs(change.attrs, AttrHost::Change, change.loc, subject);
}

LogicalResult Verifier::verify() {
  verifyAttrs(module.getAttrs(), AttrHost::Module, llvm::SMLoc(),
              [] { return std::string("module"); });
  for (const Entity &entity : module.getEntities())
    verifyEntity(entity);
  verifyParentCycles();
  for (const StaticEdge &edge : module.getEdges())
    verifyEdge(edge);
  for (const Test &test : module.getTests())
    verifyTest(test);
  for (FrameId id = 0, e = module.getFrames().size(); id != e; ++id) {
    const Frame &frame = module.getFrame(id);
    if (!frame.isLeaf() && !isEntity(frame.entity))
      emitError(llvm::SMLoc(), "frame " + llvm::Twine(id),
                "entity id " + llvm::Twine(frame.entity) + " names no entity");
  }
  for (const EvidenceRecord &record : module.getEvidence())
    verifyEvidence(record);
  for (const Change &change : module.getChanges())
    verifyChange(change);
  for (const ChangedFile &file : module.getChangedFiles()) {
    if (file.path.empty())
      emitError(file.loc, "changed file", "empty path");
    verifyAttrs(file.attrs, AttrHost::ChangedFile, file.loc,
                [&] { return "changed file " + quoted(file.path); });
  }
  return failure(hadError);
}

LogicalResult fastci::verifyModule(const Module &module,
                                   DiagnosticEngine &diag) {
  return Verifier(module, diag).verify();
}
