//===- Formats.cpp - Choosing among the spellings of a module -------------===//
//
// Format detection and the format-agnostic entry points: reading a file (or
// stdin) into the diagnostic engine's SourceMgr and dispatching to the text,
// JSON or bytecode reader, and writing a module in a requested format.
//
//===----------------------------------------------------------------------===//
#include "Bytecode.h"
#include "fastci/IR/Parser.h"
#include "fastci/IR/Printer.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace fastci;

ModuleFormat fastci::detectModuleFormat(llvm::StringRef buffer) {
  if (buffer.starts_with(bytecode::kMagic))
    return ModuleFormat::Bytecode;
  // A text module starts with a keyword or a comment, never with `{`.
  llvm::StringRef rest = buffer.ltrim(" \t\r\n");
  if (rest.starts_with("{"))
    return ModuleFormat::JSON;
  return ModuleFormat::Text;
}

std::unique_ptr<Module> fastci::parseModule(unsigned bufferId,
                                            DiagnosticEngine &diag) {
  llvm::StringRef buffer =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  switch (detectModuleFormat(buffer)) {
  case ModuleFormat::Text:
    return parseModuleText(bufferId, diag);
  case ModuleFormat::JSON:
    return parseModuleJSON(bufferId, diag);
  case ModuleFormat::Bytecode:
    return parseModuleBytecode(bufferId, diag);
  }
  return nullptr;
}

std::unique_ptr<Module> fastci::parseModuleFile(llvm::StringRef path,
                                                DiagnosticEngine &diag) {
  // Not null-terminated: readers work on explicit ranges, and a bytecode
  // file may be large enough that the copy would matter.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (std::error_code ec = buffer.getError()) {
    diag.emit(Severity::Error, path == "-" ? "<stdin>" : path, 0, 0,
              "could not open '" + path + "': " + ec.message());
    return nullptr;
  }
  return parseModule(diag.addBuffer(std::move(*buffer)), diag);
}

void fastci::writeModule(const Module &module, ModuleFormat format,
                         llvm::raw_ostream &os) {
  switch (format) {
  case ModuleFormat::Text:
    return printModuleText(module, os);
  case ModuleFormat::JSON:
    return printModuleJSON(module, os);
  case ModuleFormat::Bytecode:
    return writeModuleBytecode(module, os);
  }
}
