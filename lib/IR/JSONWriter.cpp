//===- JSONWriter.cpp - Writing the JSON form of a module -----------------===//
//
// Prints a Module as pretty JSON through llvm::json::OStream, keys in a fixed
// order and optional keys omitted as in .fir. Attribute values map onto plain
// JSON where that is lossless; the rest (symbol references, floats that JSON
// would read back as integers or cannot spell, strings that are not UTF-8,
// dictionaries whose only key starts with `$`) are tagged objects with a single
// `$` key (docs/IR.md).
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Printer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace fastci;
using llvm::json::OStream;

/// JSON carries only UTF-8. Attribute strings that are not UTF-8 are tagged
/// `$bytes`; symbols and names, which come from Python source and git paths,
/// get invalid bytes replaced by U+FFFD (docs/IR.md).
static std::string toUTF8(llvm::StringRef str) {
  return llvm::json::isUTF8(str) ? str.str() : llvm::json::fixUTF8(str);
}

/// Writes a float that the reader must see as a float: a plain number when
/// its spelling has a fraction or exponent JSON keeps, else `{"$float": s}`.
static void writeFloat(OStream &json, double value, bool mustStayFloat) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printFloat(os, value);
  bool integral = std::isfinite(value) && value == std::trunc(value);
  if (std::isfinite(value) && !(mustStayFloat && integral))
    json.rawValue(text);
  else
    json.object([&] { json.attribute("$float", text); });
}

static void writeAttrDict(OStream &json, const AttrDict &dict);

static void writeAttr(OStream &json, const Attribute &attr) {
  switch (attr.getKind()) {
  case Attribute::Kind::None:
    json.value(nullptr);
    return;
  case Attribute::Kind::Bool:
    json.value(attr.getBool());
    return;
  case Attribute::Kind::Int:
    json.value(attr.getInt());
    return;
  case Attribute::Kind::Float:
    writeFloat(json, attr.getNumber(), /*mustStayFloat=*/true);
    return;
  case Attribute::Kind::String:
    if (llvm::json::isUTF8(attr.getString()))
      json.value(attr.getString());
    else
      json.object([&] {
        json.attribute("$bytes", llvm::toHex(attr.getString(),
                                             /*LowerCase=*/true));
      });
    return;
  case Attribute::Kind::Symbol:
    json.object(
        [&] { json.attribute("$symbol", toUTF8(attr.getSymbolName())); });
    return;
  case Attribute::Kind::List:
    json.array([&] {
      for (const Attribute &element : attr.getList())
        writeAttr(json, element);
    });
    return;
  case Attribute::Kind::Dict: {
    const AttrDict &dict = attr.getDict();
    // A lone `$` key would read back as a tag; wrap the dictionary.
    if (dict.size() == 1 &&
        llvm::StringRef(dict.begin()->first).starts_with("$"))
      json.object([&] {
        json.attributeBegin("$dict");
        writeAttrDict(json, dict);
        json.attributeEnd();
      });
    else
      writeAttrDict(json, dict);
    return;
  }
  }
}

static void writeAttrDict(OStream &json, const AttrDict &dict) {
  json.object([&] {
    for (const NamedAttribute &attr : dict) {
      json.attributeBegin(toUTF8(attr.first));
      writeAttr(json, attr.second);
      json.attributeEnd();
    }
  });
}

/// Writes `"key": {dict}` unless \p dict is empty.
static void writeOptionalAttrs(OStream &json, llvm::StringRef key,
                               const AttrDict &dict) {
  if (dict.empty())
    return;
  json.attributeBegin(key);
  writeAttrDict(json, dict);
  json.attributeEnd();
}

static void writeStringList(OStream &json, llvm::StringRef key,
                            llvm::ArrayRef<std::string> list) {
  if (list.empty())
    return;
  json.attributeArray(key, [&] {
    for (const std::string &str : list)
      json.value(toUTF8(str));
  });
}

namespace {
class JSONWriter {
public:
  JSONWriter(const Module &module, llvm::raw_ostream &os)
      : module(module), json(os, /*IndentSize=*/2) {}

  void write();

private:
  std::string symbolOf(EntityId id) const {
    if (id < module.getNumEntities())
      return toUTF8(module.getEntity(id).symbol);
    return "<invalid entity " + std::to_string(id) + ">";
  }
  void writeFloatAttr(llvm::StringRef key, double value) {
    json.attributeBegin(key);
    writeFloat(json, value, /*mustStayFloat=*/false);
    json.attributeEnd();
  }
  void writeEntity(const Entity &entity);
  void writeEdge(const StaticEdge &edge);
  void writeTest(const Test &test);
  void writeEvidence(const EvidenceRecord &record);
  void writeChange(const Change &change);

  const Module &module;
  OStream json;
  llvm::SmallVector<FrameId, 32> frames;
};
} // namespace

void JSONWriter::writeEntity(const Entity &entity) {
  json.object([&] {
    json.attribute("kind", stringifyEntityKind(entity.kind));
    json.attribute("symbol", toUTF8(entity.symbol));
    if (entity.parent != kNoEntity)
      json.attribute("parent", symbolOf(entity.parent));
    if (entity.range != SourceRange()) {
      const SourceRange &range = entity.range;
      json.attributeArray("range", [&] {
        json.value(range.startLine);
        json.value(range.startColumn);
        json.value(range.endLine);
        json.value(range.endColumn);
      });
    }
    if (entity.contentHash) {
      std::string hash;
      llvm::raw_string_ostream(hash)
          << llvm::format_hex_no_prefix(entity.contentHash, 16);
      json.attribute("hash", hash);
    }
    writeOptionalAttrs(json, "attributes", entity.attrs);
  });
}

void JSONWriter::writeEdge(const StaticEdge &edge) {
  json.object([&] {
    json.attribute("kind", stringifyEdgeKind(edge.kind));
    json.attribute("from", symbolOf(edge.from));
    json.attribute("to", edge.to != kNoEntity ? symbolOf(edge.to)
                                              : toUTF8(edge.name));
    json.attribute("resolved", edge.to != kNoEntity);
    if (edge.line)
      json.attribute("line", edge.line);
  });
}

void JSONWriter::writeTest(const Test &test) {
  json.object([&] {
    json.attribute("name", toUTF8(test.name));
    if (test.entry != kNoEntity)
      json.attribute("entry", symbolOf(test.entry));
    json.attributeObject("cost", [&] {
      json.attribute("gpus", test.cost.gpus);
      writeFloatAttr("seconds", test.cost.seconds);
      writeFloatAttr("gpu_seconds", test.cost.gpuSeconds);
    });
    writeOptionalAttrs(json, "workload", test.workload);
    writeStringList(json, "scope", test.scope);
    writeStringList(json, "tags", test.tags);
    if (!test.history.empty())
      json.attributeArray("history", [&] {
        for (const Outcome &outcome : test.history)
          json.object([&] {
            json.attribute("revision", toUTF8(outcome.revision));
            json.attribute("time", outcome.time);
            json.attribute("outcome", stringifyOutcomeKind(outcome.kind));
            writeFloatAttr("duration", outcome.duration);
          });
      });
    writeOptionalAttrs(json, "attributes", test.attrs);
  });
}

void JSONWriter::writeEvidence(const EvidenceRecord &record) {
  json.object([&] {
    json.attribute("test", record.test < module.getNumTests()
                               ? toUTF8(module.getTest(record.test).name)
                               : "<invalid test>");
    json.attribute("pid", record.pid);
    json.attribute("rank", record.rank);
    if (!record.revision.empty())
      json.attribute("revision", toUTF8(record.revision));
    writeFloatAttr("rate", record.rate);
    writeOptionalAttrs(json, "attributes", record.attrs);
    json.attributeArray("samples", [&] {
      for (const StackSample &sample : record.samples)
        json.object([&] {
          json.attribute("count", static_cast<int64_t>(sample.count));
          json.attributeArray("stack", [&] {
            if (sample.stack >= module.getNumStacks())
              return;
            module.getStackFrames(sample.stack, frames);
            for (FrameId id : frames) {
              const Frame &frame = module.getFrame(id);
              json.object([&] {
                if (frame.isLeaf())
                  json.attribute("leaf", toUTF8(frame.leafName));
                else
                  json.attribute("entity", symbolOf(frame.entity));
              });
            }
          });
        });
    });
  });
}

void JSONWriter::writeChange(const Change &change) {
  json.object([&] {
    json.attribute("kind", stringifyChangeKind(change.kind));
    if (change.entity != kNoEntity)
      json.attribute("entity", symbolOf(change.entity));
    else
      json.attribute("symbol", toUTF8(change.symbol));
    bool fileImplied = change.entity != kNoEntity &&
                       (change.file.empty() ||
                        change.file == module.getFilePath(change.entity));
    if (!fileImplied && !change.file.empty())
      json.attribute("file", toUTF8(change.file));
    if (!change.lines.empty())
      json.attributeArray("lines", [&] {
        for (const LineRange &range : change.lines)
          json.array([&] {
            json.value(range.first);
            json.value(range.last);
          });
      });
    writeOptionalAttrs(json, "attributes", change.attrs);
  });
}

void JSONWriter::write() {
  json.object([&] {
    json.attributeBegin("attributes");
    writeAttrDict(json, module.getAttrs());
    json.attributeEnd();
    json.attributeArray("entities", [&] {
      for (const Entity &entity : module.getEntities())
        writeEntity(entity);
    });
    json.attributeArray("edges", [&] {
      for (const StaticEdge &edge : module.getEdges())
        writeEdge(edge);
    });
    json.attributeArray("tests", [&] {
      for (const Test &test : module.getTests())
        writeTest(test);
    });
    json.attributeArray("evidence", [&] {
      for (const EvidenceRecord &record : module.getEvidence())
        writeEvidence(record);
    });
    json.attributeArray("changes", [&] {
      for (const Change &change : module.getChanges())
        writeChange(change);
    });
    json.attributeArray("changed_files", [&] {
      for (const ChangedFile &file : module.getChangedFiles())
        json.object([&] {
          json.attribute("path", toUTF8(file.path));
          json.attribute("status", toUTF8(file.status));
          writeOptionalAttrs(json, "attributes", file.attrs);
        });
    });
  });
}

void fastci::printModuleJSON(const Module &module, llvm::raw_ostream &os) {
  JSONWriter(module, os).write();
  os << '\n';
}
