#include "expr/parse.hpp"

#include <cctype>
#include <limits>

namespace kvlayout::expr {
namespace {

struct Function {
  const char* name;
  Op op;
  std::size_t arity;
};
constexpr Function functions[] = {
    {"min", Op::Min, 2}, {"max", Op::Max, 2}, {"ceil_div", Op::CeilDiv, 2}, {"is_pow2", Op::IsPow2, 1}};

// Nesting deeper than this is refused rather than risking the stack (no declaration comes close).
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expr parse_all() {
    Expr e = parse_or();
    skip_space();
    if (pos_ < text_.size()) fail("unexpected `" + std::string(1, text_[pos_]) + "` after a complete expression");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw ParseError(pos_ + 1, message); }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    // "<" must not swallow the first character of "<=", "&" is never a token on its own, and so on.
    if (token.size() == 1 && pos_ + 1 < text_.size()) {
      char next = text_[pos_ + 1];
      if ((token == "<" || token == ">" || token == "!" || token == "=") && next == '=') return false;
    }
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) fail("expected `" + std::string(token) + "`");
  }

  Expr binary_level(int level) {
    static const std::vector<std::vector<std::pair<std::string_view, Op>>> levels = {
        {{"||", Op::Or}},
        {{"&&", Op::And}},
        {{"==", Op::Eq}, {"!=", Op::Ne}},
        {{"<=", Op::Le}, {">=", Op::Ge}, {"<", Op::Lt}, {">", Op::Gt}},
        {{"+", Op::Add}, {"-", Op::Sub}},
        {{"*", Op::Mul}, {"/", Op::Div}, {"%", Op::Mod}},
    };
    if (level == static_cast<int>(levels.size())) return parse_unary();
    Expr lhs = binary_level(level + 1);
    for (;;) {
      bool matched = false;
      for (const auto& [token, op] : levels[level]) {
        if (accept(token)) {
          lhs = make(op, {lhs, binary_level(level + 1)});
          matched = true;
          break;
        }
      }
      if (!matched) return lhs;
    }
  }
  Expr parse_or() { return binary_level(0); }

  // Counts nesting (parentheses, brackets, calls, unary operators) for the depth limit.
  struct Nested {
    Parser& p;
    explicit Nested(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~Nested() { --p.depth_; }
  };

  Expr parse_unary() {
    Nested guard(*this);
    if (accept("-")) return make(Op::Neg, {parse_unary()});
    if (accept("!")) return make(Op::Not, {parse_unary()});
    return parse_primary();
  }

  Expr parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("expected a number, a name or `(` but the expression ended");
    char c = text_[pos_];
    if (accept("(")) {
      Expr e = parse_or();
      expect(")");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name();
    fail("unexpected `" + std::string(1, c) + "`; expected a number, a name or `(`");
  }

  Expr parse_number() {
    std::int64_t value = 0;
    std::size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) {
        pos_ = start;
        fail("integer literal does not fit in 64 bits");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      fail("a number runs into a name; expected an operator between them");
    return literal(value);
  }

  Expr parse_name() {
    std::size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    std::string id(text_.substr(start, pos_ - start));
    if (accept("(")) {
      for (const Function& f : functions) {
        if (id != f.name) continue;
        std::vector<Expr> args{parse_or()};
        while (accept(",")) args.push_back(parse_or());
        if (args.size() != f.arity) {
          pos_ = start;
          fail(id + " takes " + std::to_string(f.arity) + " argument(s), found " + std::to_string(args.size()));
        }
        expect(")");
        return make(f.op, std::move(args));
      }
      pos_ = start;
      fail("unknown function `" + id + "`; expected min, max, ceil_div or is_pow2");
    }
    if (accept("[")) {
      Expr entry = parse_or();
      expect("]");
      Expr e = lookup(-1, id, entry);
      return e;
    }
    return name(id);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Expr parse(std::string_view text) {
  // Bounds every tree the later stages recurse over (a left-deep chain of binary operators included).
  constexpr std::size_t kMaxLength = 4096;
  if (text.size() > kMaxLength)
    throw ParseError(kMaxLength + 1, "an expression longer than " + std::to_string(kMaxLength) + " characters");
  return Parser(text).parse_all();
}

}  // namespace kvlayout::expr
