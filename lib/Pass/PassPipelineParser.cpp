//===- PassPipelineParser.cpp - Textual pass pipelines --------------------===//
//
// Lexes and parses `a{k=v,l={x,y}},b` and the `k=v,...` of `--a=k=v`, then
// resolves names against the registry. Parsing is separate from resolution
// and both complete before anything is added to the caller's pass manager,
// so a pipeline with any error never half-runs. Every error points at its
// exact position in the pipeline text.
//
//===----------------------------------------------------------------------===//
#include "fastci/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace fastci;

namespace {
/// A recursive-descent parser over text held by a SourceMgr buffer.
class PipelineParser {
public:
  PipelineParser(llvm::StringRef text, DiagnosticEngine &diag)
      : cur(text.begin()), end(text.end()), diag(diag) {}

  /// pipeline ::= (element (',' element)*)?
  LogicalResult parsePipeline(std::vector<PipelineElement> &elements);
  /// The text of `--name=<text>`: options with or without braces.
  LogicalResult parseFlagOptions(PipelineElement &element);

private:
  LogicalResult parseElement(PipelineElement &element);
  LogicalResult parseOptionList(PipelineElement &element, char terminator);
  LogicalResult parseOption(PipelineElement &element);
  LogicalResult parseValue(PipelineElement::OptionEntry &entry);
  LogicalResult parseListElement(OptionValueToken &token);
  LogicalResult parseQuoted(OptionValueToken &token);
  LogicalResult parseBraced(const char *&contentBegin, const char *&contentEnd);

  /// Skips whitespace; returns true if there was any.
  bool skipSpace() {
    const char *start = cur;
    while (cur != end && llvm::isSpace(*cur))
      ++cur;
    return cur != start;
  }
  bool atEnd() const { return cur == end; }
  bool isNameChar(char c) const {
    return llvm::isAlnum(c) || c == '-' || c == '_' || c == '.';
  }
  llvm::StringRef lexName() {
    const char *start = cur;
    while (cur != end && isNameChar(*cur))
      ++cur;
    return llvm::StringRef(start, cur - start);
  }
  llvm::SMLoc loc(const char *ptr) const {
    return llvm::SMLoc::getFromPointer(ptr);
  }
  LogicalResult emitError(const char *ptr, const llvm::Twine &message) {
    diag.error(loc(ptr), message);
    return failure();
  }
  /// What the current character is, for messages.
  std::string describeCurrent() const {
    if (atEnd())
      return "end of pipeline";
    if (!llvm::isPrint(*cur))
      return "byte 0x" + llvm::utohexstr(static_cast<unsigned char>(*cur));
    return "'" + std::string(1, *cur) + "'";
  }

  const char *cur, *end;
  DiagnosticEngine &diag;
};
} // namespace

LogicalResult
PipelineParser::parsePipeline(std::vector<PipelineElement> &elements) {
  skipSpace();
  if (atEnd())
    return success();
  while (true) {
    if (failed(parseElement(elements.emplace_back())))
      return failure();
    skipSpace();
    if (atEnd())
      return success();
    if (*cur != ',')
      return emitError(cur, "expected ',' or end of pipeline after pass '" +
                                elements.back().name + "', found " +
                                describeCurrent());
    ++cur;
    skipSpace();
  }
}

LogicalResult PipelineParser::parseElement(PipelineElement &element) {
  element.nameLoc = loc(cur);
  element.name = lexName().str();
  if (element.name.empty())
    return emitError(cur, "expected a pass or pipeline name, found " +
                              describeCurrent());
  skipSpace();
  if (atEnd() || *cur != '{')
    return success();
  const char *open = cur++;
  if (failed(parseOptionList(element, '}')))
    return failure();
  if (atEnd())
    return emitError(open, "unterminated options of '" + element.name +
                               "': expected '}'");
  ++cur;
  return success();
}

LogicalResult PipelineParser::parseFlagOptions(PipelineElement &element) {
  skipSpace();
  if (!atEnd() && *cur == '{') {
    const char *open = cur++;
    if (failed(parseOptionList(element, '}')))
      return failure();
    if (atEnd())
      return emitError(open, "unterminated options of '" + element.name +
                                 "': expected '}'");
    ++cur;
    skipSpace();
    if (!atEnd())
      return emitError(cur, "unexpected " + describeCurrent() +
                                " after the options of '" + element.name + "'");
    return success();
  }
  return parseOptionList(element, '\0');
}

/// options ::= (option ((',' | whitespace) option)*)?   up to \p terminator
/// ('\0' for end of text, which is where an unbraced option list stops).
LogicalResult PipelineParser::parseOptionList(PipelineElement &element,
                                              char terminator) {
  auto atTerminator = [&] {
    return terminator ? (atEnd() || *cur == terminator) : atEnd();
  };
  skipSpace();
  if (atTerminator())
    return success();
  while (true) {
    if (failed(parseOption(element)))
      return failure();
    bool sawSpace = skipSpace();
    if (atTerminator())
      return success();
    if (*cur == ',') {
      ++cur;
      skipSpace();
      continue;
    }
    if (!sawSpace)
      return emitError(cur,
                       "expected ',' or '" +
                           std::string(terminator ? "}" : "end of options") +
                           "' after option '" + element.options.back().key +
                           "', found " + describeCurrent());
  }
}

/// option ::= name ('=' value)?
LogicalResult PipelineParser::parseOption(PipelineElement &element) {
  PipelineElement::OptionEntry &entry = element.options.emplace_back();
  entry.keyLoc = loc(cur);
  entry.key = lexName().str();
  if (entry.key.empty())
    return emitError(cur,
                     "expected an option name, found " + describeCurrent());
  skipSpace();
  if (atEnd() || *cur != '=')
    return success();
  ++cur;
  skipSpace();
  entry.hasValue = true;
  return parseValue(entry);
}

/// value ::= quoted | '{' list '}' | bare
LogicalResult PipelineParser::parseValue(PipelineElement::OptionEntry &entry) {
  if (atEnd())
    return emitError(cur, "expected a value for option '" + entry.key + "'");
  if (*cur == '"' || *cur == '\'')
    return parseQuoted(entry.elements.emplace_back());
  if (*cur != '{') {
    const char *start = cur;
    while (cur != end && !llvm::isSpace(*cur) && *cur != ',' && *cur != '{' &&
           *cur != '}')
      ++cur;
    if (cur == start)
      return emitError(cur, "expected a value for option '" + entry.key +
                                "', found " + describeCurrent());
    entry.elements.push_back({std::string(start, cur), loc(start)});
    return success();
  }

  // A braced value: kept whole for scalar options, split at top-level commas
  // for list options.
  const char *open = cur;
  const char *contentBegin, *contentEnd;
  if (failed(parseBraced(contentBegin, contentEnd)))
    return failure();
  entry.isBraced = true;
  entry.braced = {std::string(contentBegin, contentEnd), loc(contentBegin)};
  const char *after = cur;
  cur = open + 1;
  skipSpace();
  while (cur < contentEnd) {
    if (failed(parseListElement(entry.elements.emplace_back())))
      return failure();
    skipSpace();
    if (cur == contentEnd)
      break;
    if (*cur != ',')
      return emitError(cur, "expected ',' between the elements of option '" +
                                entry.key + "', found " + describeCurrent());
    ++cur;
    skipSpace();
    if (cur == contentEnd)
      return emitError(cur, "expected a list element after ','");
  }
  cur = after;
  return success();
}

/// element ::= quoted | '{' ... '}' | text up to ',' or '}'
LogicalResult PipelineParser::parseListElement(OptionValueToken &token) {
  if (*cur == '"' || *cur == '\'')
    return parseQuoted(token);
  if (*cur == '{') {
    const char *contentBegin, *contentEnd;
    if (failed(parseBraced(contentBegin, contentEnd)))
      return failure();
    token = {std::string(contentBegin, contentEnd), loc(contentBegin)};
    return success();
  }
  const char *start = cur;
  while (cur != end && *cur != ',' && *cur != '}' && *cur != '{')
    ++cur;
  llvm::StringRef text = llvm::StringRef(start, cur - start).rtrim();
  if (text.empty())
    return emitError(start,
                     "expected a list element, found " + describeCurrent());
  token = {text.str(), loc(start)};
  return success();
}

/// quoted ::= '"' ([^"\\] | '\\' any)* '"' | '\'' [^']* '\''
LogicalResult PipelineParser::parseQuoted(OptionValueToken &token) {
  const char *open = cur;
  char quote = *cur++;
  token.loc = loc(open);
  token.text.clear();
  while (cur != end && *cur != quote) {
    if (quote == '"' && *cur == '\\' && cur + 1 != end)
      ++cur;
    token.text += *cur++;
  }
  if (atEnd())
    return emitError(open, "unterminated string");
  ++cur;
  return success();
}

/// Skips a balanced `{...}` (quotes respected) starting at the current '{'.
LogicalResult PipelineParser::parseBraced(const char *&contentBegin,
                                          const char *&contentEnd) {
  const char *open = cur++;
  contentBegin = cur;
  unsigned depth = 1;
  while (cur != end) {
    char c = *cur;
    if (c == '"' || c == '\'') {
      OptionValueToken ignored;
      if (failed(parseQuoted(ignored)))
        return failure();
      continue;
    }
    ++cur;
    if (c == '{')
      ++depth;
    else if (c == '}' && --depth == 0) {
      contentEnd = cur - 1;
      return success();
    }
  }
  return emitError(open, "unterminated '{'");
}

//===----------------------------------------------------------------------===//
// Resolution
//===----------------------------------------------------------------------===//

LogicalResult PipelineElement::applyTo(PassOptions &target,
                                       llvm::StringRef what,
                                       DiagnosticEngine &diag) const {
  bool ok = true;
  llvm::StringSet<> seen;
  for (const OptionEntry &entry : options) {
    OptionBase *option = target.lookup(entry.key);
    if (!option) {
      std::vector<llvm::StringRef> names;
      for (OptionBase *candidate : target.getOptions())
        names.push_back(candidate->getArgument());
      if (names.empty())
        diag.error(entry.keyLoc, llvm::formatv("{0} has no options", what));
      else
        diag.error(
            entry.keyLoc,
            llvm::formatv("{0} has no option '{1}'{2}", what, entry.key,
                          detail::formatDidYouMean(
                              detail::findCloseMatches(entry.key, names))));
      ok = false;
      continue;
    }
    if (!seen.insert(entry.key).second) {
      diag.error(
          entry.keyLoc,
          llvm::formatv("option '{0}' of {1} is given twice", entry.key, what));
      ok = false;
      continue;
    }

    std::vector<OptionValueToken> tokens;
    if (!entry.hasValue) {
      if (!option->isFlag()) {
        diag.error(entry.keyLoc,
                   llvm::formatv("option '{0}' of {1} needs a value: {0}={2}",
                                 entry.key, what,
                                 option->getValueDescription()));
        ok = false;
        continue;
      }
      tokens.push_back({"true", entry.keyLoc});
    } else if (entry.isBraced && !option->isList()) {
      tokens.push_back(entry.braced);
    } else {
      tokens = entry.elements;
    }

    OptionValueError error;
    if (failed(option->parse(tokens, error))) {
      const OptionValueToken &bad = tokens[error.index];
      diag.error(bad.loc,
                 llvm::formatv("invalid value '{0}' for option '{1}' of {2}: "
                               "expected {3}",
                               bad.text, entry.key, what, error.expected));
      ok = false;
      continue;
    }
    option->markSet(tokens.empty() ? entry.keyLoc : tokens.front().loc);
  }
  return success(ok);
}

/// Reports an unknown pass name with the closest registered names.
static void emitUnknownPass(const PipelineElement &element,
                            DiagnosticEngine &diag) {
  std::vector<llvm::StringRef> names;
  for (const PassRegistryEntry *entry : getRegisteredEntries())
    names.push_back(entry->getArgument());
  diag.error(element.nameLoc,
             llvm::formatv("unknown pass or pipeline '{0}'{1}", element.name,
                           detail::formatDidYouMean(
                               detail::findCloseMatches(element.name, names))));
}

LogicalResult fastci::parsePassPipeline(llvm::StringRef text, PassManager &pm,
                                        DiagnosticEngine &diag,
                                        llvm::StringRef bufferName) {
  unsigned id =
      diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, bufferName));
  llvm::StringRef buffer = diag.getSourceMgr().getMemoryBuffer(id)->getBuffer();

  std::vector<PipelineElement> elements;
  if (failed(PipelineParser(buffer, diag).parsePipeline(elements)))
    return failure();

  // Resolve every element (reporting every unknown name and bad option)
  // into a staging pass manager; only a fully valid pipeline reaches pm.
  PassManager staging;
  bool ok = true;
  for (const PipelineElement &element : elements) {
    const PassRegistryEntry *entry = lookupPassRegistryEntry(element.name);
    if (!entry) {
      emitUnknownPass(element, diag);
      ok = false;
      continue;
    }
    ok &= succeeded(entry->addToPipeline(staging, element, diag));
  }
  if (!ok)
    return failure();
  pm.appendPassesFrom(staging);
  return success();
}

LogicalResult fastci::addPassWithOptions(const PassRegistryEntry &entry,
                                         llvm::StringRef text,
                                         llvm::SMLoc nameLoc, PassManager &pm,
                                         DiagnosticEngine &diag) {
  PipelineElement element;
  element.name = entry.getArgument().str();
  element.nameLoc = nameLoc;
  if (failed(PipelineParser(text, diag).parseFlagOptions(element)))
    return failure();
  PassManager staging;
  if (failed(entry.addToPipeline(staging, element, diag)))
    return failure();
  pm.appendPassesFrom(staging);
  return success();
}

LogicalResult fastci::parsePassOptions(llvm::StringRef text,
                                       PassOptions &options,
                                       llvm::StringRef what,
                                       DiagnosticEngine &diag) {
  PipelineElement element;
  element.name = what.str();
  if (failed(PipelineParser(text, diag).parseFlagOptions(element)))
    return failure();
  return element.applyTo(options, what, diag);
}
