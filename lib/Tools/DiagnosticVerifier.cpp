//===- DiagnosticVerifier.cpp - --verify-diagnostics ----------------------===//
//
// Parses expected-* annotations and matches diagnostics against them. The
// handler runs under the engine's lock, so it only records; all reporting
// happens in verify(), after the handler is removed.
//
//===----------------------------------------------------------------------===//
#include "fastci/Tools/DiagnosticVerifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include <optional>

using namespace fastci;

DiagnosticVerifier::DiagnosticVerifier(DiagnosticEngine &diag) : diag(diag) {
  diag.setHandler(
      [this](const Diagnostic &diagnostic) { return handle(diagnostic); });
}

DiagnosticVerifier::~DiagnosticVerifier() { diag.setHandler(nullptr); }

void DiagnosticVerifier::addExpectations(unsigned bufferId) {
  bufferIds.push_back(bufferId);
  llvm::StringRef buffer =
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  llvm::SmallVector<llvm::StringRef> lines;
  buffer.split(lines, '\n');
  auto isAnnotationOnly = [&](size_t index) {
    return lines[index].trim().starts_with("//") &&
           lines[index].contains("expected-");
  };

  for (size_t index = 0; index != lines.size(); ++index) {
    llvm::StringRef rest = lines[index];
    size_t pos;
    while ((pos = rest.find("expected-")) != llvm::StringRef::npos) {
      llvm::StringRef annotation = rest.drop_front(pos);
      llvm::SMLoc loc = llvm::SMLoc::getFromPointer(annotation.data());
      annotation = annotation.drop_front(strlen("expected-"));
      llvm::StringRef kind = annotation.take_while(llvm::isAlpha);
      std::optional<Severity> severity =
          llvm::StringSwitch<std::optional<Severity>>(kind)
              .Case("error", Severity::Error)
              .Case("warning", Severity::Warning)
              .Case("note", Severity::Note)
              .Case("remark", Severity::Remark)
              .Default(std::nullopt);
      rest = annotation.drop_front(kind.size());
      if (!severity)
        continue;

      Expectation expectation;
      expectation.severity = *severity;
      expectation.bufferId = bufferId;
      expectation.line = index + 1;
      expectation.loc = loc;
      rest = rest.ltrim();
      if (rest.consume_front("@")) {
        llvm::StringRef designator = rest.take_while(
            [](char c) { return !llvm::isSpace(c) && c != '{'; });
        rest = rest.drop_front(designator.size());
        int offset;
        if (designator == "unknown") {
          expectation.line = 0;
        } else if (designator == "above" || designator == "below") {
          // The nearest line, in that direction, that is not itself only
          // annotations.
          int step = designator == "above" ? -1 : 1;
          long target = index + step;
          while (target >= 0 && target < long(lines.size()) &&
                 isAnnotationOnly(target))
            target += step;
          if (target < 0 || target >= long(lines.size())) {
            malformed.emplace_back(loc, "no line " + designator.str() +
                                            " this annotation");
            continue;
          }
          expectation.line = target + 1;
        } else if ((designator.starts_with("+") ||
                    designator.starts_with("-")) &&
                   !designator.drop_front().getAsInteger(10, offset)) {
          long target =
              long(index + 1) + (designator[0] == '-' ? -offset : offset);
          if (target < 1 || target > long(lines.size())) {
            malformed.emplace_back(loc, "'@" + designator.str() +
                                            "' points outside the file");
            continue;
          }
          expectation.line = target;
        } else {
          malformed.emplace_back(
              loc, "expected '@+N', '@-N', '@above', '@below' or '@unknown', "
                   "found '@" +
                       designator.str() + "'");
          continue;
        }
      }
      rest = rest.ltrim();
      if (!rest.consume_front("{{")) {
        malformed.emplace_back(loc, "expected '{{' after 'expected-" +
                                        kind.str() + "'");
        continue;
      }
      size_t close = rest.find("}}");
      if (close == llvm::StringRef::npos) {
        malformed.emplace_back(loc, "expected '}}' to end the expected text");
        continue;
      }
      expectation.text = rest.take_front(close).str();
      rest = rest.drop_front(close + 2);
      expectations.push_back(std::move(expectation));
    }
  }
}

bool DiagnosticVerifier::handle(const Diagnostic &diagnostic) {
  unsigned bufferId = 0, line = 0;
  if (diagnostic.loc.isValid()) {
    unsigned id = diag.getSourceMgr().FindBufferContainingLoc(diagnostic.loc);
    if (llvm::is_contained(bufferIds, id)) {
      bufferId = id;
      line = diag.getSourceMgr().getLineAndColumn(diagnostic.loc, id).first;
    }
  }
  for (Expectation &expectation : expectations) {
    if (expectation.matched || expectation.severity != diagnostic.severity ||
        expectation.line != line ||
        (line && expectation.bufferId != bufferId) ||
        !llvm::StringRef(diagnostic.message).contains(expectation.text))
      continue;
    expectation.matched = true;
    return true;
  }
  unexpected.push_back(diagnostic);
  return true;
}

LogicalResult DiagnosticVerifier::verify() {
  diag.setHandler(nullptr);
  bool ok = malformed.empty() && unexpected.empty();
  for (auto &[loc, message] : malformed)
    diag.error(loc, "malformed annotation: " + message);
  for (const Diagnostic &diagnostic : unexpected) {
    Diagnostic report = diagnostic;
    report.severity = Severity::Error;
    report.message =
        llvm::formatv("unexpected {0}: {1}",
                      stringifySeverity(diagnostic.severity), diagnostic.message);
    diag.emit(std::move(report));
  }
  for (const Expectation &expectation : expectations) {
    if (expectation.matched)
      continue;
    ok = false;
    diag.error(expectation.loc,
               llvm::formatv("expected {0} \"{1}\" was not produced",
                             stringifySeverity(expectation.severity),
                             expectation.text));
  }
  return success(ok);
}
