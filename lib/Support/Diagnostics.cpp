//===- Diagnostics.cpp - One diagnostic engine for all of FastCI ----------===//
//
// Renders diagnostics through llvm::SourceMgr so every reader of every input
// format reports `file:line:col: error: message` with the source line and a
// caret, and serializes reports from parallel passes.
//
//===----------------------------------------------------------------------===//
#include "fastci/Support/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

using namespace fastci;

DiagnosticEngine::DiagnosticEngine(llvm::raw_ostream *os)
    : os(os ? os : &llvm::errs()) {}

DiagnosticEngine::~DiagnosticEngine() = default;

unsigned DiagnosticEngine::addBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  std::lock_guard<std::mutex> lock(mutex);
  return sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
}

void DiagnosticEngine::emit(Severity severity, llvm::SMLoc loc,
                            const llvm::Twine &message) {
  emit(Diagnostic{severity, loc, {}, 0, 0, message.str()});
}

void DiagnosticEngine::emit(Severity severity, llvm::StringRef fileName,
                            unsigned line, unsigned column,
                            const llvm::Twine &message) {
  emit(Diagnostic{severity, llvm::SMLoc(), fileName.str(), line, column,
                  message.str()});
}

void DiagnosticEngine::emit(Diagnostic diag) {
  std::lock_guard<std::mutex> lock(mutex);
  if (diag.severity == Severity::Error)
    ++numErrors;
  else if (diag.severity == Severity::Warning)
    ++numWarnings;
  if (handler && handler(diag))
    return;
  print(diag, *os);
}

static llvm::SourceMgr::DiagKind toDiagKind(Severity severity) {
  switch (severity) {
  case Severity::Note:
    return llvm::SourceMgr::DK_Note;
  case Severity::Remark:
    return llvm::SourceMgr::DK_Remark;
  case Severity::Warning:
    return llvm::SourceMgr::DK_Warning;
  case Severity::Error:
    return llvm::SourceMgr::DK_Error;
  }
  return llvm::SourceMgr::DK_Error;
}

void DiagnosticEngine::print(const Diagnostic &diag, llvm::raw_ostream &out) {
  if (diag.loc.isValid()) {
    sourceMgr.PrintMessage(out, diag.loc, toDiagKind(diag.severity),
                           diag.message);
    return;
  }
  // No buffer to point into: print the same prefix SourceMgr would, so
  // scripts and FileCheck see one format.
  llvm::SMDiagnostic smDiag(sourceMgr, llvm::SMLoc(),
                            diag.fileName.empty() ? "fastci" : diag.fileName,
                            diag.line ? int(diag.line) : -1,
                            diag.column ? int(diag.column) - 1 : -1,
                            toDiagKind(diag.severity), diag.message, "", {});
  smDiag.print(nullptr, out, /*ShowColors=*/false);
}

std::pair<unsigned, unsigned>
DiagnosticEngine::getLineAndColumn(llvm::SMLoc loc) const {
  if (!loc.isValid() || !sourceMgr.FindBufferContainingLoc(loc))
    return {0, 0};
  return sourceMgr.getLineAndColumn(loc);
}

llvm::StringRef DiagnosticEngine::getBufferName(llvm::SMLoc loc) const {
  if (!loc.isValid())
    return {};
  unsigned id = sourceMgr.FindBufferContainingLoc(loc);
  if (!id)
    return {};
  return sourceMgr.getMemoryBuffer(id)->getBufferIdentifier();
}
