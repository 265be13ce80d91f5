//===- BodySimilarity.cpp - Renames with edits
//-----------------------------===//
//
// How alike two versions of a definition are: the weighted Jaccard index of
// their Python tokens, with the definition's own name as one placeholder,
// which ChangeMapper uses to pair a deleted and an added entity of one scope
// as one entity renamed and edited (docs/Changes.md, Kinds).
//
//===----------------------------------------------------------------------===//
#include "ChangeMapperImpl.h"

using namespace fastci;
using namespace fastci::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Body similarity
//===----------------------------------------------------------------------===//

/// Calls \p emit with each token of the Python text \p text: a run of
/// identifier characters (a name, keyword or number), a string literal with
/// its quotes, or one other character. Comments and whitespace are skipped.
/// An unterminated string runs to the end of its line (or of the text).
static void forEachPythonToken(StringRef text,
                               llvm::function_ref<void(StringRef)> emit) {
  auto isWordChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  size_t i = 0, size = text.size();
  while (i < size) {
    char c = text[i];
    if (llvm::isSpace(c) || c == '\\') {
      ++i;
    } else if (c == '#') {
      i = text.find('\n', i);
      if (i == StringRef::npos)
        i = size;
    } else if (c == '\'' || c == '"') {
      auto isTriple = [&](size_t at) {
        return at + 2 < size && text[at] == c && text[at + 1] == c &&
               text[at + 2] == c;
      };
      bool triple = isTriple(i);
      size_t quotes = triple ? 3 : 1;
      size_t j = i + quotes;
      while (j < size) {
        if (text[j] == '\\') {
          j += 2;
          continue;
        }
        if (triple ? isTriple(j) : text[j] == c) {
          j += quotes;
          break;
        }
        if (!triple && text[j] == '\n')
          break;
        ++j;
      }
      j = std::min(j, size);
      emit(text.slice(i, j));
      i = j;
    } else if (isWordChar(c)) {
      size_t j = i + 1;
      while (j < size && isWordChar(text[j]))
        ++j;
      emit(text.slice(i, j));
      i = j;
    } else {
      emit(text.substr(i, 1));
      ++i;
    }
  }
}

/// The tokens of \p body, each use of \p ownName counted as one placeholder
/// so that renaming a definition (and its recursive calls) changes nothing.
/// The counts point into \p body.
static TokenCounts countTokens(StringRef body, StringRef ownName) {
  static constexpr StringRef kOwnName("\x01own-name");
  std::vector<StringRef> tokens;
  forEachPythonToken(body, [&](StringRef token) {
    tokens.push_back(!ownName.empty() && token == ownName ? kOwnName : token);
  });
  llvm::sort(tokens);
  TokenCounts counts;
  for (StringRef token : tokens) {
    if (!counts.empty() && counts.back().first == token)
      ++counts.back().second;
    else
      counts.emplace_back(token, 1);
  }
  return counts;
}

/// The weighted Jaccard index of two token multisets (0 when both are
/// empty): what they share over what either has.
double detail::getSimilarity(const TokenCounts &a, const TokenCounts &b) {
  uint64_t common = 0, all = 0;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      all += a[i++].second;
    } else if (i == a.size() || b[j].first < a[i].first) {
      all += b[j++].second;
    } else {
      common += std::min(a[i].second, b[j].second);
      all += std::max(a[i].second, b[j].second);
      ++i;
      ++j;
    }
  }
  return all == 0 ? 0.0 : double(common) / double(all);
}

double fastci::getBodySimilarity(StringRef oldBody, StringRef oldName,
                                 StringRef newBody, StringRef newName) {
  return getSimilarity(countTokens(oldBody, oldName),
                       countTokens(newBody, newName));
}

/// The tokens of \p entity's lines in \p lines (line N is lines[N-1]), or
/// std::nullopt when the text does not have them.
std::optional<TokenCounts>
detail::getBodyTokens(const Entity &entity, llvm::ArrayRef<StringRef> lines,
                      StringRef ownName) {
  uint32_t first = entity.range.startLine, last = entity.range.endLine;
  if (first == 0 || last < first || last > lines.size())
    return std::nullopt;
  // The lines are contiguous in their text.
  const char *begin = lines[first - 1].begin(), *end = lines[last - 1].end();
  return countTokens(StringRef(begin, end - begin), ownName);
}

/// Splits \p text into lines without their newlines (line N is
/// lines[N-1]).
void detail::splitTextLines(StringRef text, std::vector<StringRef> &lines) {
  llvm::SmallVector<StringRef> split;
  text.split(split, '\n');
  lines.assign(split.begin(), split.end());
}
