//===- JSONScan.cpp - Checks llvm::json cannot make -----------------------===//
//
// A single pass over valid JSON with one frame per open container. A string
// is an object key exactly when it is the first token after the object's
// `{` or after one of its `,`s, which is all the state a frame needs.
//
//===----------------------------------------------------------------------===//

#include "fastci/Support/JSONScan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

using namespace fastci;

std::optional<DuplicateJSONKey>
fastci::findDuplicateJSONKey(llvm::StringRef text) {
  struct Frame {
    bool isObject;
    bool expectKey;
    llvm::StringSet<> keys;
  };
  llvm::SmallVector<Frame, 8> frames;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    switch (text[i]) {
    case '{':
      frames.push_back({true, true, {}});
      break;
    case '[':
      frames.push_back({false, false, {}});
      break;
    case '}':
    case ']':
      if (!frames.empty())
        frames.pop_back();
      break;
    case ',':
      if (!frames.empty() && frames.back().isObject)
        frames.back().expectKey = true;
      break;
    case '"': {
      size_t start = i++;
      while (i < e && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (frames.empty() || !frames.back().expectKey)
        break;
      frames.back().expectKey = false;
      llvm::StringRef key = text.slice(start + 1, std::min(i, e));
      if (!frames.back().keys.insert(key).second)
        return DuplicateJSONKey{start, key};
      break;
    }
    default:
      break;
    }
  }
  return std::nullopt;
}
