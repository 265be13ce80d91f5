//===- Requirements.cpp - What a line of a pip requirements file names ----===//
//
// pip's requirements format, read only as far as naming distributions goes:
// a `#` at the start of a line or after whitespace starts a comment, a `\`
// at the end joins the next line, a line starting with `-` is an option
// (`-r`, `-c`, `-e`, `--index-url`, ...), and otherwise the line begins with
// a PEP 508 name, followed by extras, a version specifier, a marker or
// ` @ url`. A line naming no distribution is Unknown, never guessed.
//
//===----------------------------------------------------------------------===//
#include "fastci/Diff/Requirements.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace fastci;

std::string fastci::normalizeDistributionName(llvm::StringRef name) {
  std::string out;
  out.reserve(name.size());
  bool separator = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      separator = true;
      continue;
    }
    if (separator && !out.empty())
      out.push_back('-');
    separator = false;
    out.push_back(llvm::toLower(c));
  }
  return out;
}

/// \p text without its comment: `#` at its start or after whitespace.
static llvm::StringRef stripComment(llvm::StringRef text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '#' && (i == 0 || llvm::isSpace(text[i - 1])))
      return text.take_front(i);
  return text;
}

static bool continues(llvm::StringRef line) {
  return stripComment(line).rtrim().ends_with("\\");
}

/// Classifies one logical line (continuations already joined).
static RequirementLine classify(llvm::StringRef logical) {
  RequirementLine result;
  llvm::StringRef text = stripComment(logical).trim();
  result.text = text.str();
  if (text.empty())
    return result;
  result.kind = RequirementLine::Kind::Unknown;
  if (text.starts_with("-"))
    return result;
  auto isNameChar = [](char c) {
    return llvm::isAlnum(c) || c == '-' || c == '_' || c == '.';
  };
  if (!llvm::isAlnum(text.front()))
    return result; // A path (`./pkg`, `/wheels/x.whl`).
  size_t end = 0;
  while (end < text.size() && isNameChar(text[end]))
    ++end;
  llvm::StringRef name = text.take_front(end).rtrim("-_.");
  llvm::StringRef rest = text.drop_front(end).ltrim();
  // After the name: nothing, extras, a specifier, a marker or `@ url`.
  if (!rest.empty() && !llvm::is_contained("[(<>=!~;@,", rest.front()))
    return result;
  // A URL is a direct reference only after `name @`.
  if (text.contains("://") && !rest.starts_with("@"))
    return result;
  for (llvm::StringRef archive : {".whl", ".zip", ".tar.gz", ".tgz"})
    if (name.ends_with_insensitive(archive))
      return result; // A file name, not a distribution name.
  result.kind = RequirementLine::Kind::Requirement;
  result.name = normalizeDistributionName(name);
  return result;
}

RequirementLine
fastci::locateRequirementLine(llvm::ArrayRef<llvm::StringRef> lines,
                              uint32_t line) {
  if (line == 0 || line > lines.size())
    return {};
  size_t first = line - 1;
  while (first > 0 && continues(lines[first - 1]))
    --first;
  size_t last = line - 1;
  while (last + 1 < lines.size() && continues(lines[last]))
    ++last;
  std::string logical;
  for (size_t i = first; i <= last; ++i) {
    llvm::StringRef part = stripComment(lines[i]).rtrim();
    if (i != last)
      part.consume_back("\\");
    logical += part.str();
    logical += ' ';
  }
  return classify(logical);
}

std::vector<std::string>
fastci::getRequiredDistributions(llvm::ArrayRef<llvm::StringRef> lines) {
  std::vector<std::string> names;
  for (uint32_t line = 1; line <= lines.size(); ++line) {
    if (line > 1 && continues(lines[line - 2]))
      continue;
    RequirementLine what = locateRequirementLine(lines, line);
    if (what.kind == RequirementLine::Kind::Requirement &&
        !llvm::is_contained(names, what.name))
      names.push_back(what.name);
  }
  return names;
}

std::vector<std::string>
fastci::getConventionalModuleNames(llvm::StringRef name) {
  // Distributions whose modules are not spelled like them, among those
  // training libraries and their test suites depend on.
  static constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral>
      kExceptions[] = {
          {"scikit-learn", "sklearn"},
          {"scikit-image", "skimage"},
          {"pillow", "pil"},
          {"opencv-python", "cv2"},
          {"opencv-python-headless", "cv2"},
          {"opencv-contrib-python", "cv2"},
          {"beautifulsoup4", "bs4"},
          {"protobuf", "google"},
          {"attrs", "attr"},
          {"grpcio", "grpc"},
          {"absl-py", "absl"},
          {"faiss-cpu", "faiss"},
          {"faiss-gpu", "faiss"},
          {"msgpack-python", "msgpack"},
          {"pytorch-lightning", "lightning"},
          {"tensorflow-cpu", "tensorflow"},
          {"tensorflow-gpu", "tensorflow"},
          {"google-cloud-storage", "google"},
          {"neptune-client", "neptune"},
          {"nvidia-ml-py", "pynvml"},
          {"nvidia-ml-py3", "pynvml"},
      };
  std::vector<std::string> names{name.str()};
  auto add = [&](llvm::StringRef candidate) {
    if (!candidate.empty() && !llvm::is_contained(names, candidate))
      names.push_back(candidate.str());
  };
  for (const auto &[dist, module] : kExceptions)
    if (name == dist)
      add(module);
  if (name.starts_with("python-"))
    add(name.drop_front(7));
  else if (name.starts_with("py") && name.size() > 4)
    add(name.drop_front(2).ltrim('-'));
  return names;
}
