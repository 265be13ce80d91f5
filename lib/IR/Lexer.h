//===- Lexer.h - Tokens of the textual IR -----------------------*- C++ -*-===//
//
// The lexer of .fir text. It works on any sub-range of a SourceMgr buffer (so
// one chunk of a split input file keeps its original line numbers), never
// reads past the range, and reports every malformed token (unterminated or
// badly escaped strings, invalid UTF-8, stray bytes) once, as an Error token
// whose diagnostic has already been emitted.
//
//===----------------------------------------------------------------------===//
#ifndef FASTCI_LIB_IR_LEXER_H
#define FASTCI_LIB_IR_LEXER_H

#include "fastci/Support/Diagnostics.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include <string>

namespace fastci {
namespace detail {

/// One token of .fir text.
struct Token {
  enum Kind {
    Eof,
    /// A malformed token; its diagnostic was already emitted.
    Error,
    /// `[A-Za-z_][A-Za-z0-9_.-]*`: keywords and bare attribute keys.
    Identifier,
    /// Decimal digits.
    Integer,
    /// Decimal digits with a fraction and/or an exponent.
    Float,
    /// `"..."`.
    String,
    /// `@"..."`.
    SymbolRef,
    LBrace,
    RBrace,
    LSquare,
    RSquare,
    Comma,
    Colon,
    Equal,
    Minus,
    Arrow,
  };

  Kind kind = Eof;
  /// The token's text, quotes and `@` included.
  llvm::StringRef spelling;
  /// True for String and SymbolRef tokens that contain a backslash and so
  /// must be decoded rather than sliced.
  bool hasEscapes = false;
  /// True when only whitespace and comments precede the token on its line;
  /// every top-level construct must start a line.
  bool startsLine = false;

  bool is(Kind k) const { return kind == k; }
  bool isKeyword(llvm::StringRef keyword) const {
    return kind == Identifier && spelling == keyword;
  }
  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
};

/// Splits .fir text into tokens, skipping whitespace and `//` comments.
class Lexer {
public:
  /// Lexes \p text, which must lie within a buffer of \p diag's SourceMgr.
  Lexer(llvm::StringRef text, DiagnosticEngine &diag)
      : curPtr(text.begin()), endPtr(text.end()), diag(diag) {}

  /// Returns the next token; Eof forever once the text is exhausted.
  Token lex();

  /// The value of a String or SymbolRef token, decoding escapes into
  /// \p storage only when there are any.
  static llvm::StringRef getStringValue(const Token &tok, std::string &storage);

private:
  Token formToken(Token::Kind kind, const char *start) {
    Token tok{kind, llvm::StringRef(start, curPtr - start)};
    tok.startsLine = atLineStart;
    atLineStart = false;
    return tok;
  }
  Token emitError(const char *loc, const llvm::Twine &message);
  /// Skips a valid UTF-8 sequence starting at curPtr; false if invalid.
  bool skipUTF8();
  Token lexString(const char *start);
  Token lexNumber(const char *start);
  Token lexIdentifier(const char *start);

  const char *curPtr;
  const char *endPtr;
  /// Whether a newline (or the start of the text) was crossed since the
  /// last token.
  bool atLineStart = true;
  DiagnosticEngine &diag;
};

} // namespace detail
} // namespace fastci

#endif // FASTCI_LIB_IR_LEXER_H
