//===- DiagnosticVerifier.h - --verify-diagnostics --------------*- C++ -*-===//
//
// Checks that a run emits exactly the diagnostics its input announces, as
// mlir-opt -verify-diagnostics does. Annotations in the input look like
//
//   test "t" cost {...}  // expected-error {{cost must not be negative}}
//   // expected-warning @below {{is tagged 'slow'}}
//   // expected-note @+2 {{...}}   // @-1, @above, @unknown also work
//
// and match a diagnostic of that severity on that line whose message
// contains the text. `@unknown` matches diagnostics with no location in the
// annotated input (e.g. errors in the pass pipeline text). Every diagnostic
// that matches no annotation, and every annotation no diagnostic matched, is
// reported, and verification fails.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_TOOLS_DIAGNOSTICVERIFIER_H
#define FASTCI_TOOLS_DIAGNOSTICVERIFIER_H

#include "fastci/Support/Diagnostics.h"
#include "fastci/Support/LogicalResult.h"
#include <string>
#include <vector>

namespace fastci {

/// Intercepts every diagnostic of an engine and matches it to expectations.
class DiagnosticVerifier {
public:
  /// Installs a handler on \p diag that consumes every diagnostic.
  explicit DiagnosticVerifier(DiagnosticEngine &diag);
  /// Removes the handler.
  ~DiagnosticVerifier();

  /// Collects the expected-* annotations of buffer \p bufferId.
  void addExpectations(unsigned bufferId);

  /// Reports malformed annotations, unexpected diagnostics and expected
  /// diagnostics that were not produced; fails if there was any.
  LogicalResult verify();

private:
  struct Expectation {
    Severity severity;
    /// The buffer and 1-based line the annotation applies to; line 0 for
    /// @unknown.
    unsigned bufferId = 0, line = 0;
    std::string text;
    /// Where the annotation is written.
    llvm::SMLoc loc;
    bool matched = false;
  };
  bool handle(const Diagnostic &diagnostic);

  DiagnosticEngine &diag;
  std::vector<unsigned> bufferIds;
  std::vector<Expectation> expectations;
  std::vector<Diagnostic> unexpected;
  /// Malformed annotations: where, and what is wrong.
  std::vector<std::pair<llvm::SMLoc, std::string>> malformed;
};

} // namespace fastci

#endif // FASTCI_TOOLS_DIAGNOSTICVERIFIER_H
