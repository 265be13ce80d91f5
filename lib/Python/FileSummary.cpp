//===- FileSummary.cpp - Binary form of a file summary --------------------===//
//
// The cache format is a flat little-endian stream: a magic word with a format
// version, the length of the IR section, then the IR section (what the
// module is built from) and the link section (what only linkPytestItems
// reads: entity names and parameters, pytest facts), each
// vector as a count followed by its elements. A warm run whose link is
// skipped reads the IR section alone. Every read is bounds-checked, so a
// damaged cache entry is a miss, never a crash.
//
//===----------------------------------------------------------------------===//
#include "fastci/Python/FileSummary.h"
#include "llvm/Support/Endian.h"

using namespace fastci;
using namespace fastci::python;
using llvm::StringRef;

namespace {
/// Bumped whenever the summary or its meaning changes, so that stale cache
/// entries of older builds are ignored rather than misread.
constexpr uint32_t kSummaryMagic = 0x46435059; // "FCPY"
// 4: names left out of hashes, 5: pytest facts, 6: import aliases,
// 8: parameters, fixture facts and mark names, 9: names, parse errors,
// enclosing items, 10: an IR section and a link section, 11: body flows and
// the statements hash.
constexpr uint32_t kSummaryVersion = 12;

class Writer {
public:
  explicit Writer(std::string &out) : out(out) {}
  void u8(uint8_t value) { out.push_back(static_cast<char>(value)); }
  void u32(uint32_t value) {
    char bytes[4];
    llvm::support::endian::write32le(bytes, value);
    out.append(bytes, 4);
  }
  void u64(uint64_t value) {
    char bytes[8];
    llvm::support::endian::write64le(bytes, value);
    out.append(bytes, 8);
  }
  void str(StringRef value) {
    u32(value.size());
    out.append(value.data(), value.size());
  }
  void range(const SourceRange &range) {
    u32(range.startLine);
    u32(range.startColumn);
    u32(range.endLine);
    u32(range.endColumn);
  }
  void strings(const std::vector<std::string> &values) {
    u32(values.size());
    for (const std::string &value : values)
      str(value);
  }
  void stringLists(const std::vector<std::vector<std::string>> &lists) {
    u32(lists.size());
    for (const std::vector<std::string> &values : lists)
      strings(values);
  }

private:
  std::string &out;
};

class Reader {
public:
  explicit Reader(StringRef in) : in(in) {}
  bool ok() const { return !failed; }

  uint8_t u8() { return take(1) ? static_cast<uint8_t>(last[0]) : 0; }
  uint32_t u32() {
    return take(4) ? llvm::support::endian::read32le(last.data()) : 0;
  }
  uint64_t u64() {
    return take(8) ? llvm::support::endian::read64le(last.data()) : 0;
  }
  std::string str() { return view().str(); }
  /// A string left in the buffer.
  StringRef view() {
    uint32_t size = u32();
    return take(size) ? last : StringRef();
  }
  /// The bytes not read yet.
  StringRef rest() const { return in; }
  SourceRange range() {
    SourceRange result;
    result.startLine = u32();
    result.startColumn = u32();
    result.endLine = u32();
    result.endColumn = u32();
    return result;
  }
  std::vector<std::string> strings() {
    std::vector<std::string> values(count());
    for (std::string &value : values)
      value = str();
    return values;
  }
  std::vector<std::vector<std::string>> stringLists() {
    std::vector<std::vector<std::string>> lists(count());
    for (std::vector<std::string> &values : lists)
      values = strings();
    return lists;
  }
  /// A element count, bounded by the bytes left so that a corrupted count
  /// cannot ask for a huge allocation.
  uint32_t count() {
    uint32_t n = u32();
    if (n > in.size()) {
      failed = true;
      return 0;
    }
    return n;
  }
  bool atEnd() const { return in.empty(); }

private:
  bool take(size_t n) {
    if (failed || in.size() < n) {
      failed = true;
      return false;
    }
    last = in.take_front(n);
    in = in.drop_front(n);
    return true;
  }
  StringRef in, last;
  bool failed = false;
};

enum class ValueTag : uint8_t { Int, Float, String, Bool };

void writeWorkload(Writer &w, const std::vector<WorkloadValue> &workload) {
  w.u32(workload.size());
  for (const WorkloadValue &value : workload) {
    w.str(value.key);
    if (value.value.isInt()) {
      w.u8(static_cast<uint8_t>(ValueTag::Int));
      w.u64(static_cast<uint64_t>(value.value.getInt()));
    } else if (value.value.isFloat()) {
      w.u8(static_cast<uint8_t>(ValueTag::Float));
      double number = value.value.getNumber();
      uint64_t bits;
      memcpy(&bits, &number, sizeof(bits));
      w.u64(bits);
    } else if (value.value.isBool()) {
      w.u8(static_cast<uint8_t>(ValueTag::Bool));
      w.u8(value.value.getBool());
    } else {
      w.u8(static_cast<uint8_t>(ValueTag::String));
      w.str(value.value.isString() ? value.value.getString() : "");
    }
  }
}

bool readWorkload(Reader &r, std::vector<WorkloadValue> &workload) {
  workload.resize(r.count());
  for (WorkloadValue &value : workload) {
    value.key = r.str();
    switch (static_cast<ValueTag>(r.u8())) {
    case ValueTag::Int:
      value.value = Attribute::getInt(static_cast<int64_t>(r.u64()));
      break;
    case ValueTag::Float: {
      uint64_t bits = r.u64();
      double number;
      memcpy(&number, &bits, sizeof(number));
      value.value = Attribute::getFloat(number);
      break;
    }
    case ValueTag::Bool:
      value.value = Attribute::getBool(r.u8());
      break;
    case ValueTag::String:
      value.value = Attribute::getString(r.str());
      break;
    default:
      return false;
    }
  }
  return true;
}

void writeFloors(Writer &w, const FloorOverrides &floors) {
  w.u8(floors.present);
  w.str(floors.error);
  w.u32(floors.entries.size());
  for (const FloorOverrideValue &entry : floors.entries) {
    w.str(entry.name);
    w.str(entry.off);
    w.u64(static_cast<uint64_t>(entry.atLeast));
    w.str(entry.why);
  }
}

void readFloors(Reader &r, FloorOverrides &floors) {
  floors.present = r.u8();
  floors.error = r.str();
  floors.entries.resize(r.count());
  for (FloorOverrideValue &entry : floors.entries) {
    entry.name = r.str();
    entry.off = r.str();
    entry.atLeast = static_cast<int64_t>(r.u64());
    entry.why = r.str();
  }
}

void writeMarks(Writer &w, const std::vector<MarkSummary> &marks) {
  w.u32(marks.size());
  for (const MarkSummary &mark : marks) {
    w.str(mark.name);
    w.u8(mark.idsKnown);
    w.strings(mark.ids);
    w.stringLists(mark.caseTags);
    w.strings(mark.scope);
    writeWorkload(w, mark.workload);
    writeFloors(w, mark.floors);
    w.strings(mark.names);
    w.u8(mark.indirect);
  }
}

bool readMarks(Reader &r, std::vector<MarkSummary> &marks) {
  marks.resize(r.count());
  for (MarkSummary &mark : marks) {
    mark.name = r.str();
    mark.idsKnown = r.u8();
    mark.ids = r.strings();
    mark.caseTags = r.stringLists();
    mark.scope = r.strings();
    if (!readWorkload(r, mark.workload))
      return false;
    readFloors(r, mark.floors);
    mark.names = r.strings();
    mark.indirect = r.u8();
  }
  return true;
}
} // namespace

namespace {
/// Reads one edge of the IR section; false when its kind is not one.
bool readEdge(Reader &r, EdgeRef &edge) {
  uint8_t kind = r.u8();
  edge.kind = static_cast<EdgeKind>(kind);
  edge.from = static_cast<LocalId>(r.u32());
  edge.target = r.view();
  edge.line = r.u32();
  edge.modulePrefix = r.u32();
  edge.alias = r.view();
  return r.ok() && kind <= static_cast<uint8_t>(EdgeKind::Call);
}

/// Whether \p id names the module or one of the first \p limit entities.
bool isValidLocal(LocalId id, size_t limit) {
  return id == kModuleScope || (id >= 0 && static_cast<size_t>(id) < limit);
}

void writeBodyFlows(Writer &w, const BodyFlows &body) {
  w.u32(body.flows.size());
  for (const auto &[name, reads] : body.flows) {
    w.str(name);
    w.strings(reads);
  }
  w.strings(body.effectNames);
}

void readBodyFlows(Reader &r, BodyFlows &body) {
  body.flows.resize(r.count());
  for (auto &[name, reads] : body.flows) {
    name = r.str();
    reads = r.strings();
  }
  body.effectNames = r.strings();
}

/// The IR section: everything the importer builds the module from.
void writeIRSection(Writer &w, const FileSummary &summary) {
  w.u64(summary.moduleHash);
  w.u64(summary.moduleStatementsHash);
  w.u32(summary.numLines);
  w.u32(summary.lastLineLength);
  w.u32(summary.entities.size());
  for (const EntitySummary &entity : summary.entities) {
    w.u8(static_cast<uint8_t>(entity.kind));
    w.str(entity.qualname);
    w.u32(static_cast<uint32_t>(entity.parent));
    w.range(entity.range);
    w.u64(entity.hash);
    w.strings(entity.decorators);
    w.u8(entity.isAsync | entity.isLambda << 1 | entity.isFixture << 2);
    w.strings(entity.names);
    writeBodyFlows(w, entity.body);
  }
  w.u32(getNumEdges(summary));
  forEachEdge(summary, [&](const EdgeRef &edge) {
    w.u8(static_cast<uint8_t>(edge.kind));
    w.u32(static_cast<uint32_t>(edge.from));
    w.str(edge.target);
    w.u32(edge.line);
    w.u32(edge.modulePrefix);
    w.str(edge.alias);
  });
  w.u32(summary.tests.size());
  for (const TestSummary &test : summary.tests) {
    w.str(test.nodeId);
    w.u32(static_cast<uint32_t>(test.entry));
    w.strings(test.tags);
    w.u8(test.parametrized);
    w.strings(test.scope);
    writeWorkload(w, test.workload);
    writeFloors(w, test.floors);
    w.str(test.entrySymbol);
    w.u8(test.inheritedUnknown | test.enclosing << 1);
    w.str(test.reason);
  }
  w.u32(summary.warnings.size());
  for (const FileWarning &warning : summary.warnings) {
    w.u32(warning.line);
    w.u32(warning.column);
    w.str(warning.message);
  }
  w.u8(summary.parseError);
  w.strings(summary.moduleNames);
  writeBodyFlows(w, summary.moduleBody);
}

/// The link section: what only linkPytestItems reads.
void writeLinkSection(Writer &w, const FileSummary &summary) {
  w.u32(summary.entities.size());
  for (const EntitySummary &entity : summary.entities) {
    w.str(entity.name);
    w.strings(entity.parameters);
  }
  w.u32(summary.pytestEntities.size());
  for (const PytestEntitySummary &facts : summary.pytestEntities) {
    w.u32(static_cast<uint32_t>(facts.entity));
    writeMarks(w, facts.marks);
    w.strings(facts.bases);
    w.u8(facts.testAttribute);
    w.str(facts.fixtureName);
    w.u8(facts.fixtureParams | facts.fixtureAutouse << 1 |
         facts.fixtureIdsKnown << 2);
    w.strings(facts.fixtureIds);
    w.stringLists(facts.fixtureCaseTags);
    w.u8(facts.fixtureScope);
    w.u8(facts.generator);
    w.u8(facts.generatedKnown | facts.instantiated << 1 |
         facts.dynamicMembers << 2 | facts.replaced << 3);
    w.strings(facts.generatedNames);
  }
  writeMarks(w, summary.moduleMarks);
  w.u8(summary.dynamicTests);
}

llvm::Error readIRSection(StringRef bytes, SummaryParts parts,
                          FileSummary &summary) {
  Reader r(bytes);
  summary.moduleHash = r.u64();
  summary.moduleStatementsHash = r.u64();
  summary.numLines = r.u32();
  summary.lastLineLength = r.u32();
  summary.entities.resize(r.count());
  for (EntitySummary &entity : summary.entities) {
    uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(EntityKind::Function))
      return llvm::createStringError("bad entity kind");
    entity.kind = static_cast<EntityKind>(kind);
    entity.qualname = r.str();
    entity.parent = static_cast<LocalId>(r.u32());
    entity.range = r.range();
    entity.hash = r.u64();
    entity.decorators = r.strings();
    uint8_t flags = r.u8();
    entity.isAsync = flags & 1;
    entity.isLambda = flags & 2;
    entity.isFixture = flags & 4;
    entity.names = r.strings();
    readBodyFlows(r, entity.body);
  }
  // Checked here, so that forEachEdge can trust them.
  uint32_t numEdges = r.count();
  StringRef edgeBytes = r.rest();
  if (parts == SummaryParts::All)
    summary.edges.reserve(numEdges);
  for (uint32_t i = 0; i < numEdges; ++i) {
    EdgeRef edge;
    if (!readEdge(r, edge))
      return llvm::createStringError("bad or truncated edge");
    if (!isValidLocal(edge.from, summary.entities.size()) ||
        edge.modulePrefix > edge.target.size())
      return llvm::createStringError("bad edge");
    if (parts == SummaryParts::All)
      summary.edges.push_back({edge.kind, edge.from, edge.target.str(),
                               edge.line, edge.modulePrefix, edge.alias.str()});
  }
  if (parts == SummaryParts::IR) {
    summary.encodedEdges = edgeBytes.drop_back(r.rest().size());
    summary.numEncodedEdges = numEdges;
  }
  summary.tests.resize(r.count());
  for (TestSummary &test : summary.tests) {
    test.nodeId = r.str();
    test.entry = static_cast<LocalId>(r.u32());
    test.tags = r.strings();
    test.parametrized = r.u8();
    test.scope = r.strings();
    if (!readWorkload(r, test.workload))
      return llvm::createStringError("bad workload value");
    readFloors(r, test.floors);
    test.entrySymbol = r.str();
    uint8_t testFlags = r.u8();
    test.inheritedUnknown = testFlags & 1;
    test.enclosing = testFlags & 2;
    test.reason = r.str();
  }
  summary.warnings.resize(r.count());
  for (FileWarning &warning : summary.warnings) {
    warning.line = r.u32();
    warning.column = r.u32();
    warning.message = r.str();
  }
  summary.parseError = r.u8() & 1;
  summary.moduleNames = r.strings();
  readBodyFlows(r, summary.moduleBody);
  if (!r.ok() || !r.atEnd())
    return llvm::createStringError("truncated or corrupted summary");
  // Local ids must point backwards (parents precede children) or the
  // importer would index out of range.
  for (size_t i = 0; i < summary.entities.size(); ++i)
    if (!isValidLocal(summary.entities[i].parent, i))
      return llvm::createStringError("bad entity parent");
  // A file item's entry is the module.
  for (const TestSummary &test : summary.tests)
    if (!isValidLocal(test.entry, summary.entities.size()))
      return llvm::createStringError("bad test entry");
  return llvm::Error::success();
}

llvm::Error readLinkSection(StringRef bytes, FileSummary &summary) {
  Reader r(bytes);
  // Its per-entity and per-edge records belong to the IR section's.
  if (r.count() != summary.entities.size())
    return llvm::createStringError("link section of another summary");
  for (EntitySummary &entity : summary.entities) {
    entity.name = r.str();
    entity.parameters = r.strings();
  }
  summary.pytestEntities.resize(r.count());
  for (PytestEntitySummary &facts : summary.pytestEntities) {
    facts.entity = static_cast<LocalId>(r.u32());
    if (!readMarks(r, facts.marks))
      return llvm::createStringError("bad mark");
    facts.bases = r.strings();
    facts.testAttribute = r.u8();
    facts.fixtureName = r.str();
    uint8_t fixtureFlags = r.u8();
    facts.fixtureParams = fixtureFlags & 1;
    facts.fixtureAutouse = fixtureFlags & 2;
    facts.fixtureIdsKnown = fixtureFlags & 4;
    facts.fixtureIds = r.strings();
    facts.fixtureCaseTags = r.stringLists();
    facts.fixtureScope = r.u8();
    facts.generator = r.u8();
    uint8_t classFlags = r.u8();
    facts.generatedKnown = classFlags & 1;
    facts.instantiated = classFlags & 2;
    facts.dynamicMembers = classFlags & 4;
    facts.replaced = classFlags & 8;
    facts.generatedNames = r.strings();
  }
  if (!readMarks(r, summary.moduleMarks))
    return llvm::createStringError("bad mark");
  summary.dynamicTests = r.u8() & 1;
  if (!r.ok() || !r.atEnd())
    return llvm::createStringError("truncated or corrupted summary");
  for (const PytestEntitySummary &facts : summary.pytestEntities)
    if (facts.entity < 0 ||
        static_cast<size_t>(facts.entity) >= summary.entities.size())
      return llvm::createStringError("bad pytest entity");
  return llvm::Error::success();
}

/// The IR and link sections of a summary's binary form.
llvm::Expected<std::pair<StringRef, StringRef>>
splitSections(StringRef buffer) {
  Reader r(buffer);
  if (r.u32() != kSummaryMagic || r.u32() != kSummaryVersion)
    return llvm::createStringError("not a summary of this format version");
  uint32_t irLength = r.u32();
  StringRef sections = buffer.drop_front(12);
  if (!r.ok() || sections.size() < irLength)
    return llvm::createStringError("truncated or corrupted summary");
  return std::make_pair(sections.take_front(irLength),
                        sections.drop_front(irLength));
}
} // namespace

std::string fastci::python::serializeSummary(const FileSummary &summary) {
  std::string out;
  Writer w(out);
  w.u32(kSummaryMagic);
  w.u32(kSummaryVersion);
  // The IR section's length, known once it is written.
  size_t lengthAt = out.size();
  w.u32(0);
  writeIRSection(w, summary);
  llvm::support::endian::write32le(&out[lengthAt],
                                   out.size() - lengthAt - sizeof(uint32_t));
  writeLinkSection(w, summary);
  return out;
}

llvm::Expected<FileSummary>
fastci::python::deserializeSummary(StringRef buffer, SummaryParts parts) {
  auto sections = splitSections(buffer);
  if (!sections)
    return sections.takeError();
  FileSummary summary;
  if (llvm::Error error = readIRSection(sections->first, parts, summary))
    return error;
  if (parts == SummaryParts::All)
    if (llvm::Error error = readLinkSection(sections->second, summary))
      return error;
  return summary;
}

llvm::Error fastci::python::deserializeLinkFacts(StringRef buffer,
                                                 FileSummary &summary) {
  auto sections = splitSections(buffer);
  if (!sections)
    return sections.takeError();
  return readLinkSection(sections->second, summary);
}

void fastci::python::forEachEdge(
    const FileSummary &summary,
    llvm::function_ref<void(const EdgeRef &)> visit) {
  for (const EdgeSummary &edge : summary.edges)
    visit({edge.kind, edge.from, edge.target, edge.line, edge.modulePrefix,
           edge.alias});
  // Checked when they were read (readIRSection).
  Reader r(summary.encodedEdges);
  for (uint32_t i = 0; i < summary.numEncodedEdges; ++i) {
    EdgeRef edge;
    readEdge(r, edge);
    visit(edge);
  }
}
