//===- BytecodeReader.cpp - Reading the binary module format --------------===//
//
// Deserializes the compact form written by BytecodeWriter. The input is
// untrusted: every read is bounds-checked, every count is checked against the
// bytes left before anything is reserved, and every id is checked against
// the table it indexes, so truncated or corrupted files are reported with the
// byte offset of the first bad field rather than crashing or allocating
// without bound. Ids in a well-formed file are dense and ascending, so the
// Module's own builders reproduce them exactly; the reader checks that too.
//
//===----------------------------------------------------------------------===//
#include "Bytecode.h"
#include "fastci/IR/Parser.h"
#include "fastci/Support/LogicalResult.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstring>

using namespace fastci;
using namespace fastci::bytecode;

namespace {
class BytecodeReader {
public:
  BytecodeReader(llvm::StringRef buffer, llvm::StringRef bufferName,
                 DiagnosticEngine &diag, Module &module)
      : begin(reinterpret_cast<const uint8_t *>(buffer.begin())), cur(begin),
        end(reinterpret_cast<const uint8_t *>(buffer.end())),
        bufferName(bufferName), diag(diag), module(module) {}

  LogicalResult read();

private:
  /// Reports \p message at the byte offset of \p at.
  LogicalResult emitError(const uint8_t *at, const llvm::Twine &message) {
    diag.emit(Severity::Error, bufferName, 0, 0,
              message + " at byte offset " + llvm::Twine(at - begin));
    return failure();
  }
  LogicalResult emitTruncated() { return emitError(cur, "truncated bytecode"); }

  LogicalResult readByte(uint8_t &value) {
    if (cur == end)
      return emitTruncated();
    value = *cur++;
    return success();
  }
  LogicalResult readVarint(uint64_t &value);
  LogicalResult readSigned(int64_t &value) {
    uint64_t raw;
    if (failed(readVarint(raw)))
      return failure();
    value = decodeZigzag(raw);
    return success();
  }
  LogicalResult readU32(uint32_t &value) {
    const uint8_t *at = cur;
    uint64_t raw;
    if (failed(readVarint(raw)))
      return failure();
    if (raw > UINT32_MAX)
      return emitError(at, "value out of range");
    value = static_cast<uint32_t>(raw);
    return success();
  }
  LogicalResult readFixed64(uint64_t &value) {
    if (end - cur < 8)
      return emitTruncated();
    value = 0;
    for (int i = 0; i < 8; ++i)
      value |= uint64_t(cur[i]) << (8 * i);
    cur += 8;
    return success();
  }
  LogicalResult readDouble(double &value) {
    uint64_t bits;
    if (failed(readFixed64(bits)))
      return failure();
    std::memcpy(&value, &bits, sizeof(value));
    return success();
  }
  /// Reads an element count; each element takes at least \p minBytes, so a
  /// count the remaining bytes cannot hold is corrupt.
  LogicalResult readCount(uint64_t &count, size_t minBytes = 1) {
    const uint8_t *at = cur;
    if (failed(readVarint(count)))
      return failure();
    if (count > uint64_t(end - cur) / minBytes)
      return emitError(at, "count " + llvm::Twine(count) +
                               " exceeds the remaining bytes");
    return success();
  }
  /// Reads an id below \p limit; \p what names the table in messages.
  LogicalResult readId(uint32_t &id, size_t limit, llvm::StringRef what) {
    const uint8_t *at = cur;
    uint64_t raw;
    if (failed(readVarint(raw)))
      return failure();
    if (raw >= limit)
      return emitError(at, what + " id " + llvm::Twine(raw) + " out of range");
    id = static_cast<uint32_t>(raw);
    return success();
  }
  /// Reads an optional id (stored as id + 1); \p none when absent.
  LogicalResult readOptionalId(uint32_t &id, size_t limit, uint32_t none,
                               llvm::StringRef what) {
    const uint8_t *at = cur;
    uint64_t raw;
    if (failed(readVarint(raw)))
      return failure();
    if (raw == 0) {
      id = none;
      return success();
    }
    if (raw - 1 >= limit)
      return emitError(at,
                       what + " id " + llvm::Twine(raw - 1) + " out of range");
    id = static_cast<uint32_t>(raw - 1);
    return success();
  }
  LogicalResult readString(llvm::StringRef &value) {
    uint32_t id;
    if (failed(readId(id, strings.size(), "string")))
      return failure();
    value = strings[id];
    return success();
  }
  LogicalResult readInternedString(llvm::StringRef &value) {
    if (failed(readString(value)))
      return failure();
    value = module.intern(value);
    return success();
  }
  LogicalResult readStringList(std::vector<std::string> &list);
  template <typename Enum>
  LogicalResult readEnum(Enum &value, Enum last, llvm::StringRef what) {
    const uint8_t *at = cur;
    uint8_t raw;
    if (failed(readByte(raw)))
      return failure();
    if (raw > static_cast<uint8_t>(last))
      return emitError(at, "invalid " + what + " " + llvm::Twine(raw));
    value = static_cast<Enum>(raw);
    return success();
  }
  LogicalResult readAttr(Attribute &attr, unsigned depth);
  LogicalResult readAttrDict(AttrDict &dict, unsigned depth = 0);

  LogicalResult readStringTable();
  LogicalResult readEntities();
  LogicalResult readEdges();
  LogicalResult readTests();
  LogicalResult readStacks();
  LogicalResult readEvidence();
  LogicalResult readChanges();

  const uint8_t *begin, *cur, *end;
  llvm::StringRef bufferName;
  DiagnosticEngine &diag;
  Module &module;
  std::vector<llvm::StringRef> strings;
};
} // namespace

LogicalResult BytecodeReader::readVarint(uint64_t &value) {
  const uint8_t *at = cur;
  value = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (cur == end)
      return emitTruncated();
    uint8_t byte = *cur++;
    // The tenth byte may only contribute the top bit of 64.
    if (shift == 63 && byte > 1)
      return emitError(at, "varint out of range");
    value |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return success();
  }
}

LogicalResult BytecodeReader::readStringList(std::vector<std::string> &list) {
  uint64_t count;
  if (failed(readCount(count)))
    return failure();
  list.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    llvm::StringRef str;
    if (failed(readString(str)))
      return failure();
    list.push_back(str.str());
  }
  return success();
}

LogicalResult BytecodeReader::readAttr(Attribute &attr, unsigned depth) {
  if (depth >= kMaxAttrNesting)
    return emitError(cur, "nesting too deep");
  const uint8_t *at = cur;
  uint8_t tag;
  if (failed(readByte(tag)))
    return failure();
  switch (tag) {
  case AttrTag::None:
    attr = Attribute();
    return success();
  case AttrTag::False:
  case AttrTag::True:
    attr = Attribute::getBool(tag == AttrTag::True);
    return success();
  case AttrTag::Int: {
    int64_t value;
    if (failed(readSigned(value)))
      return failure();
    attr = Attribute::getInt(value);
    return success();
  }
  case AttrTag::Float: {
    double value;
    if (failed(readDouble(value)))
      return failure();
    attr = Attribute::getFloat(value);
    return success();
  }
  case AttrTag::String:
  case AttrTag::Symbol: {
    llvm::StringRef value;
    if (failed(readString(value)))
      return failure();
    attr = tag == AttrTag::String ? Attribute::getString(value)
                                  : Attribute::getSymbol(value);
    return success();
  }
  case AttrTag::List: {
    uint64_t count;
    if (failed(readCount(count)))
      return failure();
    std::vector<Attribute> elements(count);
    for (Attribute &element : elements)
      if (failed(readAttr(element, depth + 1)))
        return failure();
    attr = Attribute::getList(std::move(elements));
    return success();
  }
  case AttrTag::Dict: {
    AttrDict dict;
    if (failed(readAttrDict(dict, depth + 1)))
      return failure();
    attr = Attribute::getDict(std::move(dict));
    return success();
  }
  default:
    return emitError(at, "invalid attribute tag " + llvm::Twine(tag));
  }
}

LogicalResult BytecodeReader::readAttrDict(AttrDict &dict, unsigned depth) {
  uint64_t count;
  if (failed(readCount(count, /*minBytes=*/2)))
    return failure();
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *at = cur;
    llvm::StringRef key;
    Attribute value;
    if (failed(readString(key)) || failed(readAttr(value, depth)))
      return failure();
    if (dict.contains(key))
      return emitError(at, "duplicate attribute '" + key + "'");
    dict.set(key, std::move(value));
  }
  return success();
}

LogicalResult BytecodeReader::readStringTable() {
  uint64_t count;
  if (failed(readCount(count)))
    return failure();
  strings.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t length;
    if (failed(readVarint(length)))
      return failure();
    if (length > uint64_t(end - cur))
      return emitTruncated();
    strings.emplace_back(reinterpret_cast<const char *>(cur), length);
    cur += length;
  }
  return success();
}

LogicalResult BytecodeReader::readEntities() {
  uint64_t count;
  // kind, symbol, parent, four range fields, 8 hash bytes, attributes.
  if (failed(readCount(count, /*minBytes=*/16)))
    return failure();
  for (uint64_t i = 0; i < count; ++i) {
    EntityKind kind;
    llvm::StringRef symbol;
    EntityId parent;
    SourceRange range;
    uint64_t hash;
    if (failed(readEnum(kind, EntityKind::Function, "entity kind")) ||
        failed(readString(symbol)) ||
        failed(readOptionalId(parent, count, kNoEntity, "entity")) ||
        failed(readU32(range.startLine)) ||
        failed(readU32(range.startColumn)) || failed(readU32(range.endLine)) ||
        failed(readU32(range.endColumn)) || failed(readFixed64(hash)))
      return failure();
    EntityId id = module.addEntity(kind, symbol, parent, range, hash);
    if (failed(readAttrDict(module.getEntity(id).attrs)))
      return failure();
  }
  return success();
}

LogicalResult BytecodeReader::readEdges() {
  uint64_t count;
  if (failed(readCount(count, /*minBytes=*/5)))
    return failure();
  size_t numEntities = module.getNumEntities();
  for (uint64_t i = 0; i < count; ++i) {
    StaticEdge edge;
    if (failed(readEnum(edge.kind, EdgeKind::Call, "edge kind")) ||
        failed(readOptionalId(edge.from, numEntities, kNoEntity, "entity")) ||
        failed(readOptionalId(edge.to, numEntities, kNoEntity, "entity")) ||
        failed(readString(edge.name)) || failed(readU32(edge.line)))
      return failure();
    module.addEdge(edge);
  }
  return success();
}

LogicalResult BytecodeReader::readTests() {
  uint64_t count;
  if (failed(readCount(count, /*minBytes=*/24)))
    return failure();
  size_t numEntities = module.getNumEntities();
  for (uint64_t i = 0; i < count; ++i) {
    llvm::StringRef name;
    if (failed(readString(name)))
      return failure();
    Test &test = module.getTest(module.addTest(name));
    uint64_t numOutcomes;
    if (failed(readOptionalId(test.entry, numEntities, kNoEntity, "entity")) ||
        failed(readSigned(test.cost.gpus)) ||
        failed(readDouble(test.cost.seconds)) ||
        failed(readDouble(test.cost.gpuSeconds)) ||
        failed(readAttrDict(test.workload)) ||
        failed(readStringList(test.scope)) ||
        failed(readStringList(test.tags)) ||
        failed(readCount(numOutcomes, /*minBytes=*/11)))
      return failure();
    test.history.resize(numOutcomes);
    for (Outcome &outcome : test.history)
      if (failed(readInternedString(outcome.revision)) ||
          failed(readSigned(outcome.time)) ||
          failed(readEnum(outcome.kind, OutcomeKind::Skip, "outcome kind")) ||
          failed(readDouble(outcome.duration)))
        return failure();
    if (failed(readAttrDict(test.attrs)))
      return failure();
  }
  return success();
}

LogicalResult BytecodeReader::readStacks() {
  uint64_t numFrames;
  if (failed(readCount(numFrames, /*minBytes=*/2)))
    return failure();
  for (uint64_t i = 0; i < numFrames; ++i) {
    const uint8_t *at = cur;
    FrameTag tag;
    if (failed(readEnum(tag, FrameTag::LeafFrame, "frame tag")))
      return failure();
    FrameId id;
    if (tag == FrameTag::LeafFrame) {
      llvm::StringRef name;
      if (failed(readString(name)))
        return failure();
      id = module.getLeafFrame(name);
    } else {
      EntityId entity;
      if (failed(readId(entity, module.getNumEntities(), "entity")))
        return failure();
      id = module.getEntityFrame(entity);
    }
    if (id != i)
      return emitError(at, "duplicate frame");
  }

  uint64_t numStacks;
  if (failed(readCount(numStacks, /*minBytes=*/2)))
    return failure();
  module.reserveStacks(numStacks);
  for (uint64_t i = 0; i < numStacks; ++i) {
    const uint8_t *at = cur;
    StackId parent;
    FrameId frame;
    // A parent always precedes its children, so it is below i.
    if (failed(readOptionalId(parent, i, kEmptyStack, "stack")) ||
        failed(readId(frame, numFrames, "frame")))
      return failure();
    if (module.getStack(parent, frame) != i)
      return emitError(at, "duplicate stack");
  }
  return success();
}

LogicalResult BytecodeReader::readEvidence() {
  uint64_t count;
  if (failed(readCount(count, /*minBytes=*/14)))
    return failure();
  size_t numStacks = module.getNumStacks();
  for (uint64_t i = 0; i < count; ++i) {
    TestId test;
    if (failed(readOptionalId(test, module.getNumTests(), kNoTest, "test")))
      return failure();
    EvidenceRecord &record = module.addEvidence(test);
    uint64_t numSamples;
    if (failed(readSigned(record.pid)) || failed(readSigned(record.rank)) ||
        failed(readInternedString(record.revision)) ||
        failed(readDouble(record.rate)) || failed(readAttrDict(record.attrs)) ||
        failed(readCount(numSamples, /*minBytes=*/2)))
      return failure();
    record.samples.resize(numSamples);
    int64_t previous = 0;
    for (StackSample &sample : record.samples) {
      const uint8_t *at = cur;
      int64_t delta;
      if (failed(readSigned(delta)) || failed(readVarint(sample.count)))
        return failure();
      // Wrapping arithmetic: a corrupt delta must not be undefined behavior.
      int64_t stack = static_cast<int64_t>(static_cast<uint64_t>(previous) +
                                           static_cast<uint64_t>(delta));
      if (stack < 0 || uint64_t(stack) >= numStacks)
        return emitError(at,
                         "stack id " + llvm::Twine(stack) + " out of range");
      sample.stack = static_cast<StackId>(stack);
      previous = stack;
    }
  }
  return success();
}

LogicalResult BytecodeReader::readChanges() {
  uint64_t count;
  if (failed(readCount(count, /*minBytes=*/6)))
    return failure();
  for (uint64_t i = 0; i < count; ++i) {
    ChangeKind kind;
    EntityId entity;
    llvm::StringRef symbol, file;
    uint64_t numLines;
    if (failed(readEnum(kind, ChangeKind::Cosmetic, "change kind")) ||
        failed(readOptionalId(entity, module.getNumEntities(), kNoEntity,
                              "entity")) ||
        failed(readString(symbol)) || failed(readString(file)) ||
        failed(readCount(numLines, /*minBytes=*/2)))
      return failure();
    Change &change = module.addChange(kind, symbol, file);
    change.entity = entity;
    change.lines.resize(numLines);
    for (LineRange &range : change.lines)
      if (failed(readU32(range.first)) || failed(readU32(range.last)))
        return failure();
    if (failed(readAttrDict(change.attrs)))
      return failure();
  }

  if (failed(readCount(count, /*minBytes=*/3)))
    return failure();
  for (uint64_t i = 0; i < count; ++i) {
    llvm::StringRef path, status;
    if (failed(readString(path)) || failed(readString(status)))
      return failure();
    if (failed(readAttrDict(module.addChangedFile(path, status).attrs)))
      return failure();
  }
  return success();
}

LogicalResult BytecodeReader::read() {
  if (size_t(end - begin) < kMagic.size() ||
      std::memcmp(begin, kMagic.data(), kMagic.size()) != 0)
    return emitError(begin, "missing bytecode magic");
  cur += kMagic.size();
  const uint8_t *versionAt = cur;
  uint64_t version;
  if (failed(readVarint(version)))
    return failure();
  if (version != kVersion)
    return emitError(versionAt, "unsupported bytecode version " +
                                    llvm::Twine(version) + " (expected " +
                                    llvm::Twine(kVersion) + ")");
  if (failed(readStringTable()) || failed(readAttrDict(module.getAttrs())) ||
      failed(readEntities()) || failed(readEdges()) || failed(readTests()) ||
      failed(readStacks()) || failed(readEvidence()) || failed(readChanges()))
    return failure();
  if (cur != end)
    return emitError(cur, "unexpected trailing bytes");
  return success();
}

std::unique_ptr<Module> fastci::parseModuleBytecode(unsigned bufferId,
                                                    DiagnosticEngine &diag) {
  const llvm::MemoryBuffer *buffer =
      diag.getSourceMgr().getMemoryBuffer(bufferId);
  auto module = std::make_unique<Module>();
  BytecodeReader reader(buffer->getBuffer(), buffer->getBufferIdentifier(),
                        diag, *module);
  if (failed(reader.read()))
    return nullptr;
  return module;
}
