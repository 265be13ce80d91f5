//===- Diagnostics.h - One diagnostic engine for all of FastCI --*- C++ -*-===//
//
// Every error, warning and note FastCI reports goes through a
// DiagnosticEngine, which renders `file:line:col: error: message` with the
// source line and a caret through llvm::SourceMgr. Readers of any input (IR,
// diffs, evidence, manifests, histories) register their buffer with the
// engine's SourceMgr so that a byte position becomes a location. Handlers can
// intercept diagnostics, which is how --verify-diagnostics matches them.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_SUPPORT_DIAGNOSTICS_H
#define FASTCI_SUPPORT_DIAGNOSTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace llvm {
class raw_ostream;
}

namespace fastci {

/// How serious a diagnostic is.
enum class Severity { Note, Remark, Warning, Error };

/// The word diagnostics print for \p severity (`error`, `warning`, ...).
llvm::StringRef stringifySeverity(Severity severity);

/// A diagnostic about to be reported.
struct Diagnostic {
  /// How serious it is.
  Severity severity;
  /// Where it points; invalid for diagnostics with no source location.
  llvm::SMLoc loc;
  /// The file name to print when \p loc is invalid but the file is known
  /// (e.g. a file that could not be read at all). May be empty.
  std::string fileName;
  /// Line and column (1-based) to print with \p fileName when \p loc is
  /// invalid; 0 when unknown.
  unsigned line = 0, column = 0;
  /// The message, without a trailing newline.
  std::string message;
};

/// Reports diagnostics through an llvm::SourceMgr. Thread-safe: passes that
/// work in parallel may report concurrently; reports are serialized.
class DiagnosticEngine {
public:
  /// A handler sees each diagnostic first; it returns true to consume it.
  using Handler = std::function<bool(const Diagnostic &)>;

  /// Creates an engine printing to \p os (stderr by default).
  explicit DiagnosticEngine(llvm::raw_ostream *os = nullptr);
  ~DiagnosticEngine();

  /// The source manager that owns every buffer diagnostics may point into.
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

  /// Adds \p buffer to the source manager and returns its id.
  unsigned addBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer);

  /// Reports a diagnostic at \p loc (may be invalid).
  void emit(Severity severity, llvm::SMLoc loc, const llvm::Twine &message);
  /// Reports a diagnostic at a file position known only by name, line and
  /// column (both 1-based, 0 to omit).
  void emit(Severity severity, llvm::StringRef fileName, unsigned line,
            unsigned column, const llvm::Twine &message);
  /// Reports a fully formed diagnostic.
  void emit(Diagnostic diag);

  /// Shorthand for emit(Severity::Error, ...).
  void error(llvm::SMLoc loc, const llvm::Twine &message) {
    emit(Severity::Error, loc, message);
  }
  /// Shorthand for emit(Severity::Warning, ...).
  void warning(llvm::SMLoc loc, const llvm::Twine &message) {
    emit(Severity::Warning, loc, message);
  }
  /// Shorthand for emit(Severity::Note, ...).
  void note(llvm::SMLoc loc, const llvm::Twine &message) {
    emit(Severity::Note, loc, message);
  }

  /// Installs a handler that sees every diagnostic before it is printed.
  void setHandler(Handler handler) { this->handler = std::move(handler); }

  /// Number of errors reported so far (including consumed ones).
  unsigned getNumErrors() const { return numErrors; }
  /// Number of warnings reported so far (including consumed ones).
  unsigned getNumWarnings() const { return numWarnings; }

  /// Prints \p diag the way the engine prints every diagnostic.
  void print(const Diagnostic &diag, llvm::raw_ostream &os);

  /// Returns the 1-based line and column of \p loc, or {0, 0}.
  std::pair<unsigned, unsigned> getLineAndColumn(llvm::SMLoc loc) const;
  /// Returns the name of the buffer holding \p loc, or "".
  llvm::StringRef getBufferName(llvm::SMLoc loc) const;

private:
  llvm::SourceMgr sourceMgr;
  llvm::raw_ostream *os;
  Handler handler;
  std::mutex mutex;
  unsigned numErrors = 0;
  unsigned numWarnings = 0;
};

} // namespace fastci

#endif // FASTCI_SUPPORT_DIAGNOSTICS_H
