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

/// Routes diagnostics that LLVM components (the YAML parser, ...) report
/// through the SourceMgr into the engine, so that they are counted, can be
/// intercepted, and print like FastCI's own.
static void forwardSourceMgrDiagnostic(const llvm::SMDiagnostic &smDiag,
                                       void *context) {
  auto *engine = static_cast<DiagnosticEngine *>(context);
  Severity severity = Severity::Error;
  switch (smDiag.getKind()) {
  case llvm::SourceMgr::DK_Warning:
    severity = Severity::Warning;
    break;
  case llvm::SourceMgr::DK_Note:
    severity = Severity::Note;
    break;
  case llvm::SourceMgr::DK_Remark:
    severity = Severity::Remark;
    break;
  case llvm::SourceMgr::DK_Error:
    break;
  }
  if (smDiag.getLoc().isValid())
    engine->emit(severity, smDiag.getLoc(), smDiag.getMessage());
  else
    engine->emit(severity, smDiag.getFilename(),
                 smDiag.getLineNo() > 0 ? smDiag.getLineNo() : 0,
                 smDiag.getColumnNo() >= 0 ? smDiag.getColumnNo() + 1 : 0,
                 smDiag.getMessage());
}

DiagnosticEngine::DiagnosticEngine(llvm::raw_ostream *os)
    : os(os ? os : &llvm::errs()) {
  sourceMgr.setDiagHandler(forwardSourceMgrDiagnostic, this);
}

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

llvm::StringRef fastci::stringifySeverity(Severity severity) {
  switch (severity) {
  case Severity::Note:
    return "note";
  case Severity::Remark:
    return "remark";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  return "error";
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
    // Not SourceMgr::PrintMessage: it would hand the message to the
    // SourceMgr's handler, which forwards into emit() and deadlocks.
    sourceMgr.GetMessage(diag.loc, toDiagKind(diag.severity), diag.message)
        .print(nullptr, out);
    return;
  }
  // No buffer to point into: print the same prefix SourceMgr would, so
  // scripts and FileCheck see one format, without a source line to quote.
  out << (diag.fileName.empty() ? "fastci" : diag.fileName);
  if (diag.line) {
    out << ':' << diag.line;
    if (diag.column)
      out << ':' << diag.column;
  }
  out << ": " << stringifySeverity(diag.severity) << ": " << diag.message
      << '\n';
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
