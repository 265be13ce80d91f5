//===- PassOptions.cpp - Typed options of passes and pipelines ------------===//
//
// The type-independent half of pass options: value conversions shared by
// every Option<T>, quoting for printing, help text, and close-match
// suggestions for misspelled names.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassOptions.h"
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include <charconv>
#include <cmath>

using namespace fastci;

bool detail::parseInteger(llvm::StringRef text, int64_t min, int64_t max,
                          int64_t &result) {
  int64_t value;
  if (text.getAsInteger(/*Radix=*/0, value) || value < min || value > max)
    return false;
  result = value;
  return true;
}

bool detail::parseUnsigned(llvm::StringRef text, uint64_t max,
                           uint64_t &result) {
  uint64_t value;
  if (text.getAsInteger(/*Radix=*/0, value) || value > max)
    return false;
  result = value;
  return true;
}

bool detail::parseFloat(llvm::StringRef text, double &result) {
  // getAsDouble accepts "nan" and "inf"; no option means either.
  double value;
  if (text.empty() || text.getAsDouble(value) || !std::isfinite(value))
    return false;
  result = value;
  return true;
}

bool detail::parseBool(llvm::StringRef text, bool &result) {
  if (text == "true" || text == "1") {
    result = true;
    return true;
  }
  if (text == "false" || text == "0") {
    result = false;
    return true;
  }
  return false;
}

void detail::printFloat(llvm::raw_ostream &os, double value) {
  // The shortest text that reads back to the same double, so that a dumped
  // pipeline reproduces the run exactly.
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  os << llvm::StringRef(buffer, end - buffer);
}

/// Characters the pipeline lexer treats as structure inside option lists.
static bool needsQuoting(llvm::StringRef value) {
  if (value.empty())
    return true;
  for (char c : value)
    if (c == ',' || c == '{' || c == '}' || c == '"' || c == '\'' || c == '=' ||
        c == '\\' || llvm::isSpace(c) || !llvm::isPrint(c))
      return true;
  return false;
}

void detail::printOptionString(llvm::raw_ostream &os, llvm::StringRef value) {
  if (!needsQuoting(value)) {
    os << value;
    return;
  }
  os << '"';
  for (char c : value) {
    if (c == '"' || c == '\\')
      os << '\\';
    os << c;
  }
  os << '"';
}

std::vector<std::string>
detail::findCloseMatches(llvm::StringRef name,
                         llvm::ArrayRef<llvm::StringRef> candidates) {
  // Allow roughly one edit per three characters, so `selct-affected` finds
  // `select-affected` but `x` does not match every one-letter name.
  unsigned maxDistance = std::max<unsigned>(1, name.size() / 3);
  unsigned best = maxDistance + 1;
  std::vector<std::string> matches;
  for (llvm::StringRef candidate : candidates) {
    unsigned distance =
        name.edit_distance(candidate, /*AllowReplacements=*/true, maxDistance);
    if (distance > maxDistance || distance > best)
      continue;
    if (distance < best)
      matches.clear();
    best = distance;
    matches.push_back(candidate.str());
  }
  return matches;
}

std::string detail::formatDidYouMean(llvm::ArrayRef<std::string> matches) {
  if (matches.empty())
    return "";
  std::string text = "; did you mean ";
  for (auto [index, match] : llvm::enumerate(matches)) {
    if (index)
      text += index + 1 == matches.size() ? " or " : ", ";
    text += "'" + match + "'";
  }
  return text + "?";
}

OptionBase::OptionBase(PassOptions &owner, llvm::StringRef argument)
    : argument(argument.str()) {
  owner.options.push_back(this);
}

OptionBase::~OptionBase() = default;

OptionBase *PassOptions::lookup(llvm::StringRef argument) const {
  for (OptionBase *option : options)
    if (option->getArgument() == argument)
      return option;
  return nullptr;
}

LogicalResult PassOptions::parseFromString(llvm::StringRef text,
                                           DiagnosticEngine &diag,
                                           llvm::StringRef bufferName) {
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, bufferName));
  llvm::StringRef buffer = diag.getSourceMgr().getMemoryBuffer(id)->getBuffer();
  return parsePassOptions(buffer, *this, "options", diag);
}

void PassOptions::print(llvm::raw_ostream &os) const {
  if (options.empty())
    return;
  os << '{';
  llvm::interleave(
      options, os,
      [&](const OptionBase *option) {
        os << option->getArgument() << '=';
        option->printValue(os);
      },
      ",");
  os << '}';
}

void PassOptions::printHelp(llvm::raw_ostream &os, unsigned indent) const {
  for (const OptionBase *option : options) {
    std::string defaultText;
    llvm::raw_string_ostream defaultStream(defaultText);
    option->printDefault(defaultStream);
    os.indent(indent) << option->getArgument() << '='
                      << option->getValueDescription() << " - "
                      << option->getDescription();
    if (!defaultText.empty() && defaultText != "{}")
      os << " (default: " << defaultText << ")";
    os << '\n';
  }
}
