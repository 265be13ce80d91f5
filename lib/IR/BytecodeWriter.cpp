//===- BytecodeWriter.cpp - Writing the binary module format --------------===//
//
// Serializes a Module into the compact form of docs/IR.md. The body is
// encoded first while strings are assigned table indices in order of first
// use; the header and the string table are then written ahead of it. Stacks
// are written as the trie itself (parent, frame) and samples as zigzag deltas
// of stack ids, so a sample costs two or three bytes.
//
//===----------------------------------------------------------------------===//
#include "Bytecode.h"
#include "fastci/IR/Printer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

using namespace fastci;
using namespace fastci::bytecode;

namespace {
class BytecodeWriter {
public:
  explicit BytecodeWriter(const Module &module) : module(module) {}

  void write(llvm::raw_ostream &os);

private:
  void writeByte(uint8_t byte) { body.push_back(static_cast<char>(byte)); }
  template <typename Buffer>
  static void writeVarint(Buffer &out, uint64_t value) {
    do {
      uint8_t byte = value & 0x7f;
      value >>= 7;
      out.push_back(static_cast<char>(byte | (value ? 0x80 : 0)));
    } while (value);
  }
  void writeVarint(uint64_t value) { writeVarint(body, value); }
  void writeSigned(int64_t value) { writeVarint(encodeZigzag(value)); }
  /// Writes an optional id as id + 1, 0 for none.
  void writeOptionalId(uint32_t id, uint32_t none) {
    writeVarint(id == none ? 0 : uint64_t(id) + 1);
  }
  void writeDouble(double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    for (int i = 0; i < 8; ++i)
      writeByte(static_cast<uint8_t>(bits >> (8 * i)));
  }
  void writeFixed64(uint64_t value) {
    for (int i = 0; i < 8; ++i)
      writeByte(static_cast<uint8_t>(value >> (8 * i)));
  }
  uint32_t getStringId(llvm::StringRef str) {
    auto [it, inserted] = stringIds.try_emplace(str, strings.size());
    if (inserted)
      strings.push_back(str);
    return it->second;
  }
  void writeString(llvm::StringRef str) { writeVarint(getStringId(str)); }
  /// writeString for the nodes' own strings (symbols, edge names, ...):
  /// the module interns them, and resolved edges share their target's
  /// symbol, so most repeat at the same address and are found by it without
  /// hashing their text.
  void writeNodeString(llvm::StringRef str) {
    auto [it, inserted] =
        stringIdsByAddress.try_emplace({str.data(), str.size()}, 0);
    if (inserted)
      it->second = getStringId(str);
    writeVarint(it->second);
  }
  void writeStringList(llvm::ArrayRef<std::string> list) {
    writeVarint(list.size());
    for (const std::string &str : list)
      writeString(str);
  }
  void writeAttr(const Attribute &attr);
  void writeAttrDict(const AttrDict &dict);

  const Module &module;
  /// (Not a std::string, whose push_back is a call per byte.)
  llvm::SmallVector<char, 0> body;
  /// Keys point into the module, which outlives the writer: no copies.
  llvm::DenseMap<llvm::StringRef, uint32_t, StringKeyInfo> stringIds;
  llvm::DenseMap<std::pair<const char *, size_t>, uint32_t> stringIdsByAddress;
  std::vector<llvm::StringRef> strings;
};
} // namespace

void BytecodeWriter::writeAttr(const Attribute &attr) {
  switch (attr.getKind()) {
  case Attribute::Kind::None:
    writeByte(AttrTag::None);
    return;
  case Attribute::Kind::Bool:
    writeByte(attr.getBool() ? AttrTag::True : AttrTag::False);
    return;
  case Attribute::Kind::Int:
    writeByte(AttrTag::Int);
    writeSigned(attr.getInt());
    return;
  case Attribute::Kind::Float:
    writeByte(AttrTag::Float);
    writeDouble(attr.getNumber());
    return;
  case Attribute::Kind::String:
    writeByte(AttrTag::String);
    writeString(attr.getString());
    return;
  case Attribute::Kind::Symbol:
    writeByte(AttrTag::Symbol);
    writeString(attr.getSymbolName());
    return;
  case Attribute::Kind::List:
    writeByte(AttrTag::List);
    writeVarint(attr.getList().size());
    for (const Attribute &element : attr.getList())
      writeAttr(element);
    return;
  case Attribute::Kind::Dict:
    writeByte(AttrTag::Dict);
    writeAttrDict(attr.getDict());
    return;
  }
}

void BytecodeWriter::writeAttrDict(const AttrDict &dict) {
  writeVarint(dict.size());
  for (const NamedAttribute &attr : dict) {
    writeString(attr.first);
    writeAttr(attr.second);
  }
}

void BytecodeWriter::write(llvm::raw_ostream &os) {
  // Symbols are the bulk of the strings; a rough size saves regrowing.
  stringIds.reserve(module.getNumEntities() * 2 + module.getNumTests() + 64);
  stringIdsByAddress.reserve(module.getNumEntities() * 2 +
                             module.getNumTests() + 64);
  body.reserve(module.getNumEntities() * 24 + module.getEdges().size() * 8 +
               module.getNumTests() * 24);
  writeAttrDict(module.getAttrs());

  writeVarint(module.getNumEntities());
  // Each symbol's string id, for the edges that name their target's symbol
  // (most resolved ones, which share its storage): no lookup for them.
  std::vector<uint32_t> symbolIds;
  symbolIds.reserve(module.getNumEntities());
  for (const Entity &entity : module.getEntities()) {
    writeByte(static_cast<uint8_t>(entity.kind));
    symbolIds.push_back(getStringId(entity.symbol));
    writeVarint(symbolIds.back());
    writeOptionalId(entity.parent, kNoEntity);
    writeVarint(entity.range.startLine);
    writeVarint(entity.range.startColumn);
    writeVarint(entity.range.endLine);
    writeVarint(entity.range.endColumn);
    writeFixed64(entity.contentHash);
    writeAttrDict(entity.attrs);
  }

  writeVarint(module.getEdges().size());
  for (const StaticEdge &edge : module.getEdges()) {
    writeByte(static_cast<uint8_t>(edge.kind));
    writeOptionalId(edge.from, kNoEntity);
    writeOptionalId(edge.to, kNoEntity);
    if (edge.to < symbolIds.size() &&
        edge.name.data() == module.getEntity(edge.to).symbol.data() &&
        edge.name.size() == module.getEntity(edge.to).symbol.size())
      writeVarint(symbolIds[edge.to]);
    else
      writeNodeString(edge.name);
    writeVarint(edge.line);
  }

  writeVarint(module.getNumTests());
  for (const Test &test : module.getTests()) {
    writeNodeString(test.name);
    writeOptionalId(test.entry, kNoEntity);
    writeSigned(test.cost.gpus);
    writeDouble(test.cost.seconds);
    writeDouble(test.cost.gpuSeconds);
    writeAttrDict(test.workload);
    writeStringList(test.scope);
    writeStringList(test.tags);
    writeVarint(test.history.size());
    for (const Outcome &outcome : test.history) {
      writeString(outcome.revision);
      writeSigned(outcome.time);
      writeByte(static_cast<uint8_t>(outcome.kind));
      writeDouble(outcome.duration);
    }
    writeAttrDict(test.attrs);
  }

  writeVarint(module.getFrames().size());
  for (const Frame &frame : module.getFrames()) {
    if (frame.isLeaf()) {
      writeByte(FrameTag::LeafFrame);
      writeString(frame.leafName);
    } else {
      writeByte(FrameTag::EntityFrame);
      writeVarint(frame.entity);
    }
  }

  writeVarint(module.getNumStacks());
  for (StackId id = 0, e = module.getNumStacks(); id != e; ++id) {
    const StackNode &node = module.getStackNode(id);
    writeOptionalId(node.parent, kEmptyStack);
    writeVarint(node.frame);
  }

  writeVarint(module.getEvidence().size());
  for (const EvidenceRecord &record : module.getEvidence()) {
    writeOptionalId(record.test, kNoTest);
    writeSigned(record.pid);
    writeSigned(record.rank);
    writeString(record.revision);
    writeDouble(record.rate);
    writeAttrDict(record.attrs);
    writeVarint(record.samples.size());
    int64_t previous = 0;
    for (const StackSample &sample : record.samples) {
      int64_t stack = sample.stack == kEmptyStack ? -1 : int64_t(sample.stack);
      writeSigned(stack - previous);
      writeVarint(sample.count);
      previous = stack;
    }
  }

  writeVarint(module.getChanges().size());
  for (const Change &change : module.getChanges()) {
    writeByte(static_cast<uint8_t>(change.kind));
    writeOptionalId(change.entity, kNoEntity);
    writeString(change.symbol);
    writeString(change.file);
    writeVarint(change.lines.size());
    for (const LineRange &range : change.lines) {
      writeVarint(range.first);
      writeVarint(range.last);
    }
    writeAttrDict(change.attrs);
  }

  writeVarint(module.getChangedFiles().size());
  for (const ChangedFile &file : module.getChangedFiles()) {
    writeString(file.path);
    writeString(file.status);
    writeAttrDict(file.attrs);
  }

  std::string header(kMagic);
  writeVarint(header, kVersion);
  writeVarint(header, strings.size());
  for (llvm::StringRef str : strings) {
    writeVarint(header, str.size());
    header.append(str.data(), str.size());
  }
  os << header;
  os.write(body.data(), body.size());
}

void fastci::writeModuleBytecode(const Module &module, llvm::raw_ostream &os) {
  BytecodeWriter(module).write(os);
}
