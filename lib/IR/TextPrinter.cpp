//===- TextPrinter.cpp - Writing the textual IR ---------------------------===//
//
// Prints a Module as .fir text: one construct per line, in a fixed section
// order (module attributes, entities, edges, tests each followed by its
// outcomes, evidence, changes, changed files) and in insertion order within a
// section, with optional clauses omitted when empty. The output is pure ASCII
// (strings escape everything else), so it diffs and greps well.
//
//===----------------------------------------------------------------------===//
#include "fastci/IR/Printer.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

namespace {
class TextPrinter {
public:
  TextPrinter(const Module &module, llvm::raw_ostream &os)
      : module(module), os(os) {}

  void print();

private:
  /// Prints a reference to entity \p id; an id that names nothing (only in
  /// an unverified module) prints as a symbol that cannot resolve.
  void printEntityRef(EntityId id) {
    if (id < module.getNumEntities())
      printSymbolRef(os, module.getEntity(id).symbol);
    else
      os << "@\"<invalid entity " << id << ">\"";
  }
  void printTestRef(TestId id) {
    if (id < module.getNumTests())
      printEscapedString(os, module.getTest(id).name);
    else
      os << "\"<invalid test " << id << ">\"";
  }
  /// Prints ` {attrs}` unless \p attrs is empty.
  void printOptionalAttrs(const AttrDict &attrs) {
    if (attrs.empty())
      return;
    os << ' ';
    attrs.print(os);
  }
  void printStringList(llvm::ArrayRef<std::string> values) {
    os << '[';
    llvm::interleaveComma(values, os, [&](const std::string &value) {
      printEscapedString(os, value);
    });
    os << ']';
  }

  void printEntity(const Entity &entity);
  void printEdge(const StaticEdge &edge);
  void printTest(const Test &test);
  void printEvidence(const EvidenceRecord &record);
  void printChange(const Change &change);
  void printChangedFile(const ChangedFile &file);

  const Module &module;
  llvm::raw_ostream &os;
  llvm::SmallVector<FrameId, 32> frames;
};
} // namespace

void TextPrinter::printEntity(const Entity &entity) {
  os << stringifyEntityKind(entity.kind) << ' ';
  printSymbolRef(os, entity.symbol);
  if (entity.parent != kNoEntity) {
    os << " parent ";
    printEntityRef(entity.parent);
  }
  if (entity.range != SourceRange()) {
    const SourceRange &range = entity.range;
    os << " at " << range.startLine << ':' << range.startColumn << '-'
       << range.endLine << ':' << range.endColumn;
  }
  if (entity.contentHash)
    os << " hash \"" << llvm::format_hex_no_prefix(entity.contentHash, 16)
       << '"';
  printOptionalAttrs(entity.attrs);
  os << '\n';
}

void TextPrinter::printEdge(const StaticEdge &edge) {
  os << stringifyEdgeKind(edge.kind) << ' ';
  printEntityRef(edge.from);
  os << " -> ";
  if (edge.to != kNoEntity)
    printEntityRef(edge.to);
  else
    printEscapedString(os, edge.name);
  if (edge.line)
    os << " at " << edge.line;
  os << '\n';
}

void TextPrinter::printTest(const Test &test) {
  os << "test ";
  printEscapedString(os, test.name);
  if (test.entry != kNoEntity) {
    os << " entry ";
    printEntityRef(test.entry);
  }
  os << " cost {gpus = " << test.cost.gpus << ", seconds = ";
  printFloat(os, test.cost.seconds);
  os << ", gpu_seconds = ";
  printFloat(os, test.cost.gpuSeconds);
  os << '}';
  if (!test.workload.empty()) {
    os << " workload ";
    test.workload.print(os);
  }
  if (!test.scope.empty()) {
    os << " scope ";
    printStringList(test.scope);
  }
  if (!test.tags.empty()) {
    os << " tags ";
    printStringList(test.tags);
  }
  printOptionalAttrs(test.attrs);
  os << '\n';

  for (const Outcome &outcome : test.history) {
    os << "outcome ";
    printEscapedString(os, test.name);
    os << " rev ";
    printEscapedString(os, outcome.revision);
    os << " time " << outcome.time << ' ' << stringifyOutcomeKind(outcome.kind)
       << ' ';
    printFloat(os, outcome.duration);
    os << '\n';
  }
}

void TextPrinter::printEvidence(const EvidenceRecord &record) {
  os << "evidence ";
  printTestRef(record.test);
  os << " pid " << record.pid << " rank " << record.rank;
  if (!record.revision.empty()) {
    os << " rev ";
    printEscapedString(os, record.revision);
  }
  os << " rate ";
  printFloat(os, record.rate);
  printOptionalAttrs(record.attrs);
  os << " {\n";
  for (const StackSample &sample : record.samples) {
    os << "  " << sample.count << ':';
    if (sample.stack < module.getNumStacks()) {
      module.getStackFrames(sample.stack, frames);
      for (FrameId frame : frames) {
        os << ' ';
        const Frame &info = module.getFrame(frame);
        if (info.isLeaf())
          printEscapedString(os, info.leafName);
        else
          printEntityRef(info.entity);
      }
    } else {
      os << " \"<invalid stack " << sample.stack << ">\"";
    }
    os << '\n';
  }
  os << "}\n";
}

void TextPrinter::printChange(const Change &change) {
  os << "change " << stringifyChangeKind(change.kind) << ' ';
  if (change.entity != kNoEntity)
    printEntityRef(change.entity);
  else
    printEscapedString(os, change.symbol);
  // The file of an existing entity is implied; print it only when it says
  // something the entity does not.
  bool fileImplied =
      change.entity != kNoEntity &&
      (change.file.empty() || change.file == module.getFilePath(change.entity));
  if (!fileImplied && !change.file.empty()) {
    os << " in ";
    printEscapedString(os, change.file);
  }
  if (!change.lines.empty()) {
    os << " lines [";
    llvm::interleaveComma(change.lines, os, [&](const LineRange &range) {
      os << range.first << ':' << range.last;
    });
    os << ']';
  }
  printOptionalAttrs(change.attrs);
  os << '\n';
}

void TextPrinter::printChangedFile(const ChangedFile &file) {
  os << "changed_file ";
  printEscapedString(os, file.path);
  os << ' ';
  printAttrKey(os, file.status);
  printOptionalAttrs(file.attrs);
  os << '\n';
}

void TextPrinter::print() {
  if (!module.getAttrs().empty()) {
    os << "module attributes ";
    module.getAttrs().print(os);
    os << '\n';
  }
  for (const Entity &entity : module.getEntities())
    printEntity(entity);
  for (const StaticEdge &edge : module.getEdges())
    printEdge(edge);
  for (const Test &test : module.getTests())
    printTest(test);
  for (const EvidenceRecord &record : module.getEvidence())
    printEvidence(record);
  for (const Change &change : module.getChanges())
    printChange(change);
  for (const ChangedFile &file : module.getChangedFiles())
    printChangedFile(file);
}

void fastci::printModuleText(const Module &module, llvm::raw_ostream &os) {
  TextPrinter(module, os).print();
}
