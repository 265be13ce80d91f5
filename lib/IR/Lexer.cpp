//===- Lexer.cpp - Tokens of the textual IR -------------------------------===//
//
// A hand-written lexer: every byte sequence yields either tokens or exactly
// one located error, and the scan only ever moves forward, so it cannot loop.
// Raw text outside string literals and comments must be ASCII; inside them it
// must be valid UTF-8, so that what a human wrote is what the tools see.
//
//===----------------------------------------------------------------------===//
#include "Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"

using namespace fastci;
using namespace fastci::detail;

Token Lexer::emitError(const char *loc, const llvm::Twine &message) {
  diag.error(llvm::SMLoc::getFromPointer(loc), message);
  // Park at the end so that a caller that keeps lexing sees Eof, not a
  // cascade of follow-on errors.
  const char *start = curPtr;
  curPtr = endPtr;
  return Token{Token::Error, llvm::StringRef(start, 0)};
}

bool Lexer::skipUTF8() {
  auto *begin = reinterpret_cast<const llvm::UTF8 *>(curPtr);
  auto *end = reinterpret_cast<const llvm::UTF8 *>(endPtr);
  unsigned length = llvm::getNumBytesForUTF8(*begin);
  if (length > size_t(end - begin) || !llvm::isLegalUTF8Sequence(begin, end))
    return false;
  curPtr += length;
  return true;
}

Token Lexer::lex() {
  while (curPtr != endPtr) {
    const char *start = curPtr;
    char c = *curPtr++;
    switch (c) {
    case '\n':
      atLineStart = true;
      continue;
    case ' ':
    case '\t':
    case '\r':
      continue;
    case '/':
      if (curPtr == endPtr || *curPtr != '/')
        return emitError(start, "unexpected character '/'");
      while (curPtr != endPtr && *curPtr != '\n') {
        if (static_cast<unsigned char>(*curPtr) < 0x80)
          ++curPtr;
        else if (!skipUTF8())
          return emitError(curPtr, "invalid UTF-8");
      }
      continue;
    case '{':
      return formToken(Token::LBrace, start);
    case '}':
      return formToken(Token::RBrace, start);
    case '[':
      return formToken(Token::LSquare, start);
    case ']':
      return formToken(Token::RSquare, start);
    case ',':
      return formToken(Token::Comma, start);
    case ':':
      return formToken(Token::Colon, start);
    case '=':
      return formToken(Token::Equal, start);
    case '-':
      if (curPtr != endPtr && *curPtr == '>') {
        ++curPtr;
        return formToken(Token::Arrow, start);
      }
      return formToken(Token::Minus, start);
    case '"':
      return lexString(start);
    case '@':
      if (curPtr == endPtr || *curPtr != '"')
        return emitError(start, "expected '\"' after '@'");
      ++curPtr;
      return lexString(start);
    default:
      if (llvm::isDigit(c))
        return lexNumber(start);
      if (llvm::isAlpha(c) || c == '_')
        return lexIdentifier(start);
      if (static_cast<unsigned char>(c) >= 0x80) {
        curPtr = start;
        if (!skipUTF8())
          return emitError(start, "invalid UTF-8");
        return emitError(start, "unexpected non-ASCII character");
      }
      if (llvm::isPrint(c))
        return emitError(start, llvm::Twine("unexpected character '") +
                                    llvm::Twine(c) + "'");
      char hex[] = {llvm::hexdigit(static_cast<uint8_t>(c) >> 4, true),
                    llvm::hexdigit(c & 15, true), 0};
      return emitError(start,
                       llvm::Twine("unexpected character '\\x") + hex + "'");
    }
  }
  Token eof{Token::Eof, llvm::StringRef(endPtr, 0)};
  eof.startsLine = true;
  return eof;
}

Token Lexer::lexString(const char *start) {
  bool hasEscapes = false;
  while (true) {
    if (curPtr == endPtr || *curPtr == '\n' || *curPtr == '\r')
      return emitError(start, "unterminated string");
    unsigned char c = *curPtr;
    if (c == '"') {
      ++curPtr;
      Token tok =
          formToken(*start == '@' ? Token::SymbolRef : Token::String, start);
      tok.hasEscapes = hasEscapes;
      return tok;
    }
    if (c == '\\') {
      hasEscapes = true;
      const char *escape = curPtr++;
      if (curPtr == endPtr)
        return emitError(start, "unterminated string");
      switch (*curPtr++) {
      case '"':
      case '\\':
      case 'n':
      case 't':
        continue;
      case 'x':
        if (endPtr - curPtr >= 2 && llvm::isHexDigit(curPtr[0]) &&
            llvm::isHexDigit(curPtr[1])) {
          curPtr += 2;
          continue;
        }
        [[fallthrough]];
      default:
        return emitError(escape, "invalid escape");
      }
    }
    if (c < 0x20 && c != '\t')
      return emitError(curPtr, "control character in string");
    if (c < 0x80)
      ++curPtr;
    else if (!skipUTF8())
      return emitError(curPtr, "invalid UTF-8");
  }
}

Token Lexer::lexNumber(const char *start) {
  bool isFloat = false;
  auto skipDigits = [&] {
    while (curPtr != endPtr && llvm::isDigit(*curPtr))
      ++curPtr;
  };
  skipDigits();
  if (curPtr != endPtr && *curPtr == '.') {
    isFloat = true;
    ++curPtr;
    skipDigits();
  }
  if (curPtr != endPtr && (*curPtr == 'e' || *curPtr == 'E')) {
    isFloat = true;
    ++curPtr;
    if (curPtr != endPtr && (*curPtr == '+' || *curPtr == '-'))
      ++curPtr;
    if (curPtr == endPtr || !llvm::isDigit(*curPtr))
      return emitError(curPtr, "expected exponent digits");
    skipDigits();
  }
  // `12abc` is one malformed token, not a number followed by a keyword.
  if (curPtr != endPtr && (llvm::isAlpha(*curPtr) || *curPtr == '_'))
    return emitError(curPtr, "invalid character in number");
  return formToken(isFloat ? Token::Float : Token::Integer, start);
}

Token Lexer::lexIdentifier(const char *start) {
  while (curPtr != endPtr && (llvm::isAlnum(*curPtr) || *curPtr == '_' ||
                              *curPtr == '.' || *curPtr == '-'))
    ++curPtr;
  return formToken(Token::Identifier, start);
}

llvm::StringRef Lexer::getStringValue(const Token &tok, std::string &storage) {
  llvm::StringRef body = tok.spelling;
  body = body.drop_front(tok.is(Token::SymbolRef) ? 2 : 1).drop_back();
  if (!tok.hasEscapes)
    return body;
  // The lexer validated every escape, so decoding cannot fail.
  storage.clear();
  storage.reserve(body.size());
  for (size_t i = 0, e = body.size(); i < e; ++i) {
    if (body[i] != '\\') {
      storage.push_back(body[i]);
      continue;
    }
    switch (body[++i]) {
    case 'n':
      storage.push_back('\n');
      break;
    case 't':
      storage.push_back('\t');
      break;
    case 'x':
      storage.push_back(
          static_cast<char>(llvm::hexFromNibbles(body[i + 1], body[i + 2])));
      i += 2;
      break;
    default:
      storage.push_back(body[i]);
    }
  }
  return storage;
}
