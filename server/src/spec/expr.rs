//! The spec's expression language: grid and block extents, buffer lengths, scalar values,
//! restrictions and the SOL model are all written in it.
//!
//! It accepts both C-style and Python-style spellings, because specs are written by people
//! used to CUDA and imported from Kernel Tuner / T1 files whose restrictions are Python.
//! No Rust crate parses Python expression syntax with chained comparisons, so this is a small
//! hand-written lexer and recursive-descent parser. `docs/spec.md` documents the language.
//!
//! Grammar, loosest binding first:
//!
//! | level | forms |
//! |---|---|
//! | conditional | `c ? a : b`, `a if c else b` (right-associative) |
//! | or | `a \|\| b`, `a or b` |
//! | and | `a && b`, `a and b` |
//! | not | `not a` (Python's low-precedence `not`) |
//! | comparison | `< <= > >= == !=`, chained as in Python: `32 <= a * b <= 1024` |
//! | additive | `+ -` |
//! | multiplicative | `* / // %` |
//! | unary | `- + ! ~` (C's high-precedence `!`) |
//! | power | `a ** b` (right-associative; `-2 ** 2` is `-(2 ** 2)` as in Python) |
//! | primary | integers (decimal, `0x` hex), floats, `true false True False`, names, calls, `( )` |
//!
//! Binary bitwise operators (`& | ^ << >>`) are refused with an explanation: C and Python give
//! them different precedences relative to comparisons, so `a & b == 0` would mean different
//! things to the two audiences.
//!
//! Values are 64-bit integers or floats ([`Value`]), with Python 3 arithmetic:
//! - `/` is true division and always gives a float; `//` is floor division (an integer for two
//!   integers); `%` takes the sign of the divisor. Use `//` or `ceil_div` in integer contexts.
//! - `**` of two integers with a non-negative exponent is an integer, otherwise a float.
//! - Mixed integer/float arithmetic gives a float. Integer overflow and division by zero are
//!   evaluation errors, never wrapped or infinite values.
//! - Comparisons and logical operators give the integer 1 or 0 (as C does); any non-zero value is
//!   true. `and`/`or` short-circuit.
//! - Contexts that need an integer (grid, block, lengths) accept a float only when it is whole.

use std::fmt::{self, Write};
use std::ops::Range;

/// A parsed expression; `span` is its byte range in the text it was parsed from.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Range<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    Name(String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `first op1 e1 op2 e2 …`: true when every adjacent pair compares true; each operand is
    /// evaluated at most once (Python's chained comparison).
    Compare(Box<Expr>, Vec<(CompareOp, Expr)>),
    Conditional { condition: Box<Expr>, if_true: Box<Expr>, if_false: Box<Expr> },
    Call(Function, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    /// `!` (C precedence: binds tighter than comparisons).
    Not,
    /// `not` (Python precedence: looser than comparisons).
    NotKeyword,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Rem,
    Pow,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// The built-in functions. Unknown function names are parse errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// `min(a, b, …)`, two or more arguments.
    Min,
    /// `max(a, b, …)`, two or more arguments.
    Max,
    /// `ceil_div(a, b)` (alias `cdiv`): integer division rounded up, for grid extents.
    CeilDiv,
    /// `int(x)`: truncates toward zero, as Python's `int`.
    Int,
    /// `float(x)`.
    Float,
    /// `ceil(x)`, `floor(x)`: round to an integer.
    Ceil,
    Floor,
    /// `log2(x)`: a float; x must be positive.
    Log2,
    /// `abs(x)`.
    Abs,
}

impl Function {
    /// Every function with the names it answers to; the first name is the canonical one.
    const ALL: [(Function, &'static [&'static str]); 9] = [
        (Function::Min, &["min"]),
        (Function::Max, &["max"]),
        (Function::CeilDiv, &["ceil_div", "cdiv"]),
        (Function::Int, &["int"]),
        (Function::Float, &["float"]),
        (Function::Ceil, &["ceil"]),
        (Function::Floor, &["floor"]),
        (Function::Log2, &["log2"]),
        (Function::Abs, &["abs"]),
    ];

    pub fn from_name(name: &str) -> Option<Function> {
        Self::ALL.iter().find(|(_, names)| names.contains(&name)).map(|(f, _)| *f)
    }

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(f, _)| *f == self).map(|(_, names)| names[0]).unwrap_or("?")
    }

    /// Accepted argument counts: (minimum, maximum).
    fn arity(self) -> (usize, usize) {
        match self {
            Function::Min | Function::Max => (2, usize::MAX),
            Function::CeilDiv => (2, 2),
            _ => (1, 1),
        }
    }

    fn known_names() -> String {
        Self::ALL.iter().flat_map(|(_, names)| names.iter()).copied().collect::<Vec<_>>().join(", ")
    }
}

/// A number produced by evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
}

impl Value {
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
        }
    }

    /// The value as an integer: integers as they are, whole floats converted, others `None`.
    pub fn as_integer(self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Some(f as i64),
            Value::Float(_) => None,
        }
    }

    pub fn is_true(self) -> bool {
        match self {
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
        }
    }

    fn from_bool(b: bool) -> Value {
        Value::Int(b as i64)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// Why an expression did not parse; `span` is a byte range of the parsed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub span: Range<usize>,
    pub message: String,
}

/// Why an expression could not be evaluated; `span` is the sub-expression at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError {
    pub span: Range<usize>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.span.start, self.message)
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}
impl std::error::Error for EvalError {}

/// Parses a whole expression; trailing text is an error.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let tokens = lex(text)?;
    let mut parser = Parser { tokens, pos: 0 };
    let expr = parser.conditional()?;
    match parser.peek() {
        Tok::End => Ok(expr),
        _ => Err(parser.error_here("expected an operator or the end of the expression")),
    }
}

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Name(String),
    /// Operators, punctuation and keywords, by their spelling.
    Sym(&'static str),
    End,
}

const KEYWORDS: [&str; 9] = ["and", "or", "not", "if", "else", "true", "false", "True", "False"];

/// Longest first, so `**` wins over `*` and `<=` over `<`.
const SYMBOLS: [&str; 23] = [
    "**", "//", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "!", "~",
    "?", ":", "(", ")", ",", "=",
];

const REFUSED_BITWISE: [&str; 5] = ["<<", ">>", "&", "|", "^"];

/// Host code left in an expression (`plan->gridSize`, `dims.x`, `sizes[i]`, a string), said as
/// what it is: the spec reads numbers, sizes, parameters and scalars, not the host's variables.
fn host_code(text: &str, at: usize) -> Option<ParseError> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let before = text[..at].trim_end();
    // `(input->size).width`: the object is what the parentheses hold.
    let parenthesised = before.strip_suffix(')').and_then(|inside| {
        let mut depth = 0;
        let open = inside.char_indices().rev().find(|&(_, c)| {
            depth += match c {
                ')' => 1,
                '(' => -1,
                _ => 0,
            };
            depth < 0
        })?;
        Some(inside[open.0 + 1..].trim())
    });
    // Only a name is shown as the object; `(a + b)->size` stays `…->size`.
    let parenthesised = parenthesised.map(|object| if object.chars().all(is_word) { object } else { "" });
    let word_before = parenthesised.unwrap_or_else(|| before.rsplit(|c: char| !is_word(c)).next().unwrap_or(""));
    let rest = &text[at..];
    let (what, length) = if rest.starts_with("->") || (rest.starts_with('.') && !word_before.is_empty()) {
        let member_start = at + if rest.starts_with("->") { 2 } else { 1 };
        let member_end = text[member_start..].find(|c: char| !is_word(c)).map_or(text.len(), |e| member_start + e);
        let object = if word_before.is_empty() { "…" } else { word_before };
        let what = match object {
            // A launch from device code (dynamic parallelism) sized by its parent's grid.
            "gridDim" | "blockDim" | "blockIdx" | "threadIdx" => "is the launching kernel's own, in a launch from device code",
            _ => "is a member of a host variable",
        };
        (format!("`{object}{}` {what}", &text[at..member_end]), member_end - at)
    } else if rest.starts_with("::") && !word_before.is_empty() {
        // `Traits::kSmemSize`, `Kernel::SharedStorage`: what the compiler works out from a type.
        let end = text[at..].find(|c: char| !(is_word(c) || c == ':')).map_or(text.len(), |e| at + e);
        (format!("`{word_before}{}` is a member of a C++ type or namespace", &text[at..end]), end - at)
    } else if rest.starts_with('[') && !word_before.is_empty() {
        (format!("`{word_before}[…]` is an element of a host array"), 1)
    } else if rest.starts_with('"') {
        ("a string is host code".to_string(), 1)
    } else if rest.starts_with('{') {
        ("`{…}` is a host initializer".to_string(), 1)
    } else {
        return None;
    };
    let message = format!("{what}, which the spec cannot read: write its value (a number, or an expression over the sizes and parameters), or capture a launch (`cutune profile`)");
    Some(ParseError { span: at..at + length, message })
}

fn lex(text: &str) -> Result<Vec<(Tok, Range<usize>)>, ParseError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (tok, end) = lex_number(text, start)?;
            tokens.push((tok, start..end));
            i = end;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            let tok = match KEYWORDS.iter().find(|k| **k == word) {
                Some(k) => Tok::Sym(k),
                None => Tok::Name(word.to_string()),
            };
            tokens.push((tok, start..i));
        } else if let Some(error) = host_code(text, i) {
            return Err(error);
        } else if let Some(sym) = SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            // `&&`/`||` are in SYMBOLS; a lone `&`, `|`, `^` or a shift is refused below.
            // `<<` and `>>` start like `<` and `>`: refuse them rather than read two comparisons.
            if let Some(op) = REFUSED_BITWISE.iter().find(|op| text[i..].starts_with(**op) && op.len() > sym.len()) {
                return Err(bitwise_error(op, i));
            }
            if *sym == "=" {
                return Err(ParseError { span: i..i + 1, message: "`=` is not an operator here; did you mean `==`?".into() });
            }
            tokens.push((Tok::Sym(sym), i..i + sym.len()));
            i += sym.len();
        } else if let Some(op) = REFUSED_BITWISE.iter().find(|op| text[i..].starts_with(**op)) {
            // A lone `&`, `|` or `^` (`&&` and `||` were matched above).
            return Err(bitwise_error(op, i));
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(ParseError { span: i..i + ch.len_utf8(), message: format!("unexpected character `{ch}`") });
        }
    }
    tokens.push((Tok::End, text.len()..text.len()));
    Ok(tokens)
}

fn bitwise_error(op: &str, at: usize) -> ParseError {
    ParseError {
        span: at..at + op.len(),
        message: format!(
            "bitwise `{op}` is not supported: C and Python give it different precedence; \
             use arithmetic instead (e.g. `x % 2 == 0`)"
        ),
    }
}

fn lex_number(text: &str, start: usize) -> Result<(Tok, usize), ParseError> {
    let bytes = text.as_bytes();
    let mut i = start;
    if text[start..].starts_with("0x") || text[start..].starts_with("0X") {
        i += 2;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        return match i64::from_str_radix(&text[start + 2..i], 16) {
            Ok(v) => Ok((Tok::Int(v), i)),
            Err(_) => Err(ParseError { span: start..i, message: "invalid or too large hexadecimal integer".into() }),
        };
    }
    let digits = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    i = digits(i);
    let mut is_float = false;
    if i < bytes.len() && bytes[i] == b'.' {
        is_float = true;
        i = digits(i + 1);
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            is_float = true;
            i = digits(j);
        }
    }
    if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
        let mut end = i;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        return Err(ParseError {
            span: start..end,
            message: format!("`{}` is not a number (literal suffixes are not supported)", &text[start..end]),
        });
    }
    let literal = &text[start..i];
    if is_float {
        match literal.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((Tok::Float(v), i)),
            _ => Err(ParseError { span: start..i, message: format!("float literal `{literal}` is out of range") }),
        }
    } else {
        match literal.parse::<i64>() {
            Ok(v) => Ok((Tok::Int(v), i)),
            Err(_) => Err(ParseError { span: start..i, message: format!("integer literal `{literal}` does not fit in 64 bits") }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parser

struct Parser {
    tokens: Vec<(Tok, Range<usize>)>,
    pos: usize,
}

fn node(kind: ExprKind, span: Range<usize>) -> Expr {
    Expr { kind, span }
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].0
    }

    fn peek_span(&self) -> Range<usize> {
        self.tokens[self.pos].1.clone()
    }

    fn at(&self, sym: &str) -> bool {
        matches!(self.peek(), Tok::Sym(s) if *s == sym)
    }

    fn eat(&mut self, sym: &str) -> bool {
        let found = self.at(sym);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect(&mut self, sym: &str, what: &str) -> Result<Range<usize>, ParseError> {
        let span = self.peek_span();
        if self.eat(sym) {
            Ok(span)
        } else {
            Err(self.error_here(&format!("expected `{sym}` {what}")))
        }
    }

    fn error_here(&self, message: &str) -> ParseError {
        let found = match self.peek() {
            Tok::End => "the end of the expression".to_string(),
            Tok::Int(v) => format!("`{v}`"),
            Tok::Float(v) => format!("`{v:?}`"),
            Tok::Name(n) => format!("`{n}`"),
            Tok::Sym(s) => format!("`{s}`"),
        };
        ParseError { span: self.peek_span(), message: format!("{message}, found {found}") }
    }

    fn conditional(&mut self) -> Result<Expr, ParseError> {
        let first = self.or_expr()?;
        if self.eat("?") {
            let if_true = self.conditional()?;
            self.expect(":", "to separate the two branches of `?:`")?;
            let if_false = self.conditional()?;
            let span = first.span.start..if_false.span.end;
            return Ok(node(
                ExprKind::Conditional { condition: Box::new(first), if_true: Box::new(if_true), if_false: Box::new(if_false) },
                span,
            ));
        }
        if self.eat("if") {
            let condition = self.or_expr()?;
            self.expect("else", "after the condition of `… if … else …`")?;
            let if_false = self.conditional()?;
            let span = first.span.start..if_false.span.end;
            return Ok(node(
                ExprKind::Conditional { condition: Box::new(condition), if_true: Box::new(first), if_false: Box::new(if_false) },
                span,
            ));
        }
        Ok(first)
    }

    fn binary_chain(
        &mut self,
        ops: &[(&str, BinaryOp)],
        operand: fn(&mut Parser) -> Result<Expr, ParseError>,
    ) -> Result<Expr, ParseError> {
        let mut lhs = operand(self)?;
        'outer: loop {
            for (sym, op) in ops {
                if self.eat(sym) {
                    let rhs = operand(self)?;
                    let span = lhs.span.start..rhs.span.end;
                    lhs = node(ExprKind::Binary(*op, Box::new(lhs), Box::new(rhs)), span);
                    continue 'outer;
                }
            }
            return Ok(lhs);
        }
    }

    fn or_expr(&mut self) -> Result<Expr, ParseError> {
        self.binary_chain(&[("||", BinaryOp::Or), ("or", BinaryOp::Or)], Parser::and_expr)
    }

    fn and_expr(&mut self) -> Result<Expr, ParseError> {
        self.binary_chain(&[("&&", BinaryOp::And), ("and", BinaryOp::And)], Parser::not_expr)
    }

    fn not_expr(&mut self) -> Result<Expr, ParseError> {
        let start = self.peek_span().start;
        if self.eat("not") {
            let operand = self.not_expr()?;
            let span = start..operand.span.end;
            return Ok(node(ExprKind::Unary(UnaryOp::NotKeyword, Box::new(operand)), span));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        const OPS: [(&str, CompareOp); 6] = [
            ("<=", CompareOp::Le),
            (">=", CompareOp::Ge),
            ("==", CompareOp::Eq),
            ("!=", CompareOp::Ne),
            ("<", CompareOp::Lt),
            (">", CompareOp::Gt),
        ];
        let first = self.additive()?;
        let mut rest = Vec::new();
        while let Some((_, op)) = OPS.iter().find(|(sym, _)| self.at(sym)) {
            self.pos += 1;
            rest.push((*op, self.additive()?));
        }
        match rest.last() {
            None => Ok(first),
            Some((_, last)) => {
                let span = first.span.start..last.span.end;
                Ok(node(ExprKind::Compare(Box::new(first), rest), span))
            }
        }
    }

    fn additive(&mut self) -> Result<Expr, ParseError> {
        self.binary_chain(&[("+", BinaryOp::Add), ("-", BinaryOp::Sub)], Parser::multiplicative)
    }

    fn multiplicative(&mut self) -> Result<Expr, ParseError> {
        self.binary_chain(
            &[("*", BinaryOp::Mul), ("//", BinaryOp::FloorDiv), ("/", BinaryOp::Div), ("%", BinaryOp::Rem)],
            Parser::unary,
        )
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        const OPS: [(&str, UnaryOp); 4] =
            [("-", UnaryOp::Neg), ("+", UnaryOp::Plus), ("!", UnaryOp::Not), ("~", UnaryOp::BitNot)];
        let start = self.peek_span().start;
        if let Some((_, op)) = OPS.iter().find(|(sym, _)| self.at(sym)) {
            self.pos += 1;
            let operand = self.unary()?;
            let span = start..operand.span.end;
            return Ok(node(ExprKind::Unary(*op, Box::new(operand)), span));
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, ParseError> {
        let base = self.primary()?;
        if self.eat("**") {
            let exponent = self.unary()?;
            let span = base.span.start..exponent.span.end;
            return Ok(node(ExprKind::Binary(BinaryOp::Pow, Box::new(base), Box::new(exponent)), span));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let span = self.peek_span();
        let kind = match self.peek().clone() {
            Tok::Int(v) => ExprKind::Int(v),
            Tok::Float(v) => ExprKind::Float(v),
            Tok::Sym("true" | "True") => ExprKind::Bool(true),
            Tok::Sym("false" | "False") => ExprKind::Bool(false),
            Tok::Sym("(") => {
                self.pos += 1;
                let inner = self.conditional()?;
                let close = self.expect(")", "to close the `(`")?;
                // The parenthesised span, so errors point at what the user wrote.
                return Ok(Expr { kind: inner.kind, span: span.start..close.end });
            }
            Tok::Name(name) => {
                self.pos += 1;
                if !self.at("(") {
                    return Ok(node(ExprKind::Name(name), span));
                }
                return self.call(&name, span);
            }
            _ => return Err(self.error_here("expected a number, a name or `(`")),
        };
        self.pos += 1;
        Ok(node(kind, span))
    }

    fn call(&mut self, name: &str, name_span: Range<usize>) -> Result<Expr, ParseError> {
        let Some(function) = Function::from_name(name) else {
            return Err(ParseError {
                span: name_span,
                message: format!("unknown function `{name}`; the functions are {}", Function::known_names()),
            });
        };
        self.expect("(", "")?;
        let mut args = Vec::new();
        if !self.at(")") {
            loop {
                args.push(self.conditional()?);
                if !self.eat(",") {
                    break;
                }
            }
        }
        let close = self.expect(")", &format!("to close the arguments of `{name}`"))?;
        let span = name_span.start..close.end;
        let (min, max) = function.arity();
        if args.len() < min || args.len() > max {
            let wanted = match (min, max) {
                (n, m) if n == m => format!("{n} argument{}", if n == 1 { "" } else { "s" }),
                (n, _) => format!("{n} or more arguments"),
            };
            return Err(ParseError { span, message: format!("`{name}` takes {wanted}, not {}", args.len()) });
        }
        Ok(node(ExprKind::Call(function, args), span))
    }
}

// ---------------------------------------------------------------------------------------------
// Queries and evaluation

impl Expr {
    /// Every name the expression reads, in order of appearance, repeats included, with its span.
    pub fn names(&self) -> Vec<(&str, Range<usize>)> {
        let mut out = Vec::new();
        self.visit_names(&mut out);
        // `a if c else b` visits its condition first; report in the order of the text.
        out.sort_by_key(|(_, span)| span.start);
        out
    }

    /// The distinct names the expression reads, in order of first appearance.
    pub fn free_variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (name, _) in self.names() {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
        out
    }

    fn visit_names<'a>(&'a self, out: &mut Vec<(&'a str, Range<usize>)>) {
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {}
            ExprKind::Name(n) => out.push((n, self.span.clone())),
            ExprKind::Unary(_, e) => e.visit_names(out),
            ExprKind::Binary(_, a, b) => {
                a.visit_names(out);
                b.visit_names(out);
            }
            ExprKind::Compare(first, rest) => {
                first.visit_names(out);
                rest.iter().for_each(|(_, e)| e.visit_names(out));
            }
            ExprKind::Conditional { condition, if_true, if_false } => {
                condition.visit_names(out);
                if_true.visit_names(out);
                if_false.visit_names(out);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|e| e.visit_names(out)),
        }
    }

    /// Evaluates with `env` giving the value of each name; an unbound name is an error.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<Value>) -> Result<Value, EvalError> {
        let fail = |message: String| Err(EvalError { span: self.span.clone(), message });
        match &self.kind {
            ExprKind::Int(v) => Ok(Value::Int(*v)),
            ExprKind::Float(v) => Ok(Value::Float(*v)),
            ExprKind::Bool(b) => Ok(Value::from_bool(*b)),
            ExprKind::Name(n) => match env(n) {
                Some(v) => Ok(v),
                None => fail(format!("`{n}` has no value")),
            },
            ExprKind::Unary(op, e) => {
                let v = e.eval(env)?;
                match (op, v) {
                    (UnaryOp::Neg, Value::Int(i)) => i.checked_neg().map(Value::Int).map_or_else(|| fail(overflow()), Ok),
                    (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
                    (UnaryOp::Plus, v) => Ok(v),
                    (UnaryOp::Not | UnaryOp::NotKeyword, v) => Ok(Value::from_bool(!v.is_true())),
                    (UnaryOp::BitNot, Value::Int(i)) => Ok(Value::Int(!i)),
                    (UnaryOp::BitNot, Value::Float(_)) => fail("`~` needs an integer, not a float".into()),
                }
            }
            ExprKind::Binary(BinaryOp::And, a, b) => {
                Ok(Value::from_bool(a.eval(env)?.is_true() && b.eval(env)?.is_true()))
            }
            ExprKind::Binary(BinaryOp::Or, a, b) => {
                Ok(Value::from_bool(a.eval(env)?.is_true() || b.eval(env)?.is_true()))
            }
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                arithmetic(*op, x, y).map_err(|message| EvalError { span: self.span.clone(), message })
            }
            ExprKind::Compare(first, rest) => {
                let mut lhs = first.eval(env)?;
                for (op, e) in rest {
                    let rhs = e.eval(env)?;
                    if !compare(*op, lhs, rhs) {
                        return Ok(Value::Int(0));
                    }
                    lhs = rhs;
                }
                Ok(Value::Int(1))
            }
            ExprKind::Conditional { condition, if_true, if_false } => {
                if condition.eval(env)?.is_true() {
                    if_true.eval(env)
                } else {
                    if_false.eval(env)
                }
            }
            ExprKind::Call(f, args) => {
                let values = args.iter().map(|e| e.eval(env)).collect::<Result<Vec<_>, _>>()?;
                call(*f, &values).map_err(|message| EvalError { span: self.span.clone(), message })
            }
        }
    }

    /// Evaluates in a context that needs an integer (grid, block, a length).
    pub fn eval_integer(&self, env: &dyn Fn(&str) -> Option<Value>) -> Result<i64, EvalError> {
        let value = self.eval(env)?;
        value.as_integer().ok_or_else(|| EvalError {
            span: self.span.clone(),
            message: format!("needs an integer but gives {value}; use `//` or `ceil_div` for integer division"),
        })
    }
}

fn overflow() -> String {
    "integer overflow".to_string()
}

fn arithmetic(op: BinaryOp, x: Value, y: Value) -> Result<Value, String> {
    use Value::{Float, Int};
    let zero_divisor = matches!(op, BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::Rem) && y.as_f64() == 0.0;
    if zero_divisor {
        return Err("division by zero".into());
    }
    let checked = |r: Option<i64>| r.map(Int).ok_or_else(overflow);
    match (op, x, y) {
        (BinaryOp::Add, Int(a), Int(b)) => checked(a.checked_add(b)),
        (BinaryOp::Sub, Int(a), Int(b)) => checked(a.checked_sub(b)),
        (BinaryOp::Mul, Int(a), Int(b)) => checked(a.checked_mul(b)),
        (BinaryOp::FloorDiv, Int(a), Int(b)) => checked(floor_div(a, b)),
        (BinaryOp::Rem, Int(a), Int(b)) => checked(floor_div(a, b).and_then(|q| a.checked_sub(q.checked_mul(b)?))),
        (BinaryOp::Pow, Int(a), Int(b)) if b >= 0 => {
            checked(u32::try_from(b).ok().and_then(|b| a.checked_pow(b)))
        }
        (op, x, y) => {
            let (a, b) = (x.as_f64(), y.as_f64());
            let r = match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
                BinaryOp::FloorDiv => (a / b).floor(),
                BinaryOp::Rem => a - b * (a / b).floor(),
                BinaryOp::Pow => a.powf(b),
                BinaryOp::And | BinaryOp::Or => unreachable!("logical operators short-circuit in eval"),
            };
            if r.is_finite() {
                Ok(Float(r))
            } else {
                Err(format!("the result is not a finite number ({a:?} and {b:?})"))
            }
        }
    }
}

/// Python's `//` on integers: rounds toward negative infinity.
fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q })
}

fn compare(op: CompareOp, x: Value, y: Value) -> bool {
    let ordering = match (x, y) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(&b)),
        _ => x.as_f64().partial_cmp(&y.as_f64()),
    };
    let Some(o) = ordering else { return op == CompareOp::Ne };
    match op {
        CompareOp::Lt => o.is_lt(),
        CompareOp::Le => o.is_le(),
        CompareOp::Gt => o.is_gt(),
        CompareOp::Ge => o.is_ge(),
        CompareOp::Eq => o.is_eq(),
        CompareOp::Ne => o.is_ne(),
    }
}

fn call(f: Function, args: &[Value]) -> Result<Value, String> {
    let pick = |want_greater: bool| {
        let mut best = args[0];
        for &v in &args[1..] {
            let greater = compare(CompareOp::Gt, v, best);
            if greater == want_greater && compare(CompareOp::Ne, v, best) {
                best = v;
            }
        }
        best
    };
    let to_int = |x: f64| {
        if x.is_finite() && x.abs() < 9.0e18 {
            Ok(Value::Int(x as i64))
        } else {
            Err(format!("{x:?} does not fit in a 64-bit integer"))
        }
    };
    match f {
        Function::Min => Ok(pick(false)),
        Function::Max => Ok(pick(true)),
        Function::CeilDiv => match (args[0], args[1]) {
            (Value::Int(a), Value::Int(b)) => {
                if b == 0 {
                    return Err("division by zero".into());
                }
                // ceil(a / b) = -floor(-a / b), exact for every sign.
                a.checked_neg().and_then(|na| floor_div(na, b)).and_then(i64::checked_neg).map(Value::Int).ok_or_else(overflow)
            }
            _ => Err("`ceil_div` needs two integers".into()),
        },
        Function::Int => match args[0] {
            Value::Int(i) => Ok(Value::Int(i)),
            Value::Float(x) => to_int(x.trunc()),
        },
        Function::Float => Ok(Value::Float(args[0].as_f64())),
        Function::Ceil => match args[0] {
            Value::Int(i) => Ok(Value::Int(i)),
            Value::Float(x) => to_int(x.ceil()),
        },
        Function::Floor => match args[0] {
            Value::Int(i) => Ok(Value::Int(i)),
            Value::Float(x) => to_int(x.floor()),
        },
        Function::Log2 => {
            let x = args[0].as_f64();
            if x > 0.0 {
                Ok(Value::Float(x.log2()))
            } else {
                Err(format!("`log2` needs a positive number, not {}", args[0]))
            }
        }
        Function::Abs => match args[0] {
            Value::Int(i) => i.checked_abs().map(Value::Int).ok_or_else(overflow),
            Value::Float(x) => Ok(Value::Float(x.abs())),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Printing

/// Binding strength of each form as printed in Python, loosest first; a child printed at a
/// weaker level than its position needs gets parentheses. C's `!` prints as Python's `not`.
fn level(kind: &ExprKind) -> u8 {
    match kind {
        ExprKind::Conditional { .. } => 1,
        ExprKind::Binary(BinaryOp::Or, ..) => 2,
        ExprKind::Binary(BinaryOp::And, ..) => 3,
        ExprKind::Unary(UnaryOp::Not | UnaryOp::NotKeyword, _) => 4,
        ExprKind::Compare(..) => 5,
        ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub, ..) => 6,
        ExprKind::Binary(BinaryOp::Mul | BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::Rem, ..) => 7,
        ExprKind::Unary(..) => 8,
        ExprKind::Binary(BinaryOp::Pow, ..) => 9,
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Name(_) | ExprKind::Call(..) => 10,
    }
}

/// The two ways an expression is printed: in Python, for code that evaluates it, or in the
/// spec's own words, for people who read the spec.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Python,
    Spec,
}

impl Expr {
    /// Prints in Python syntax (which this language also reads), with the fewest parentheses,
    /// renaming names through `rename` (`None` keeps a name). `ceil_div(a, b)`, which Python
    /// lacks, is written `-(-a // b)`.
    pub fn to_python(&self, rename: &dyn Fn(&str) -> Option<String>) -> String {
        let mut out = String::new();
        self.write(&mut out, 0, Style::Python, rename);
        out
    }

    /// Prints as a spec is written (C's `c ? a : b`, `&&`, `ceil_div(a, b)`), with the fewest
    /// parentheses.
    pub fn to_spec_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0, Style::Spec, &|_| None);
        out
    }

    fn write(&self, out: &mut String, min_level: u8, style: Style, rename: &dyn Fn(&str) -> Option<String>) {
        let own = level(&self.kind);
        let parenthesise = own < min_level;
        if parenthesise {
            out.push('(');
        }
        match &self.kind {
            ExprKind::Int(v) => {
                let _ = write!(out, "{v}");
            }
            ExprKind::Float(v) => {
                let _ = write!(out, "{v:?}");
            }
            ExprKind::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            ExprKind::Name(n) => out.push_str(&rename(n).unwrap_or_else(|| n.clone())),
            ExprKind::Unary(op, e) => {
                out.push_str(match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Plus => "+",
                    UnaryOp::Not | UnaryOp::NotKeyword if style == Style::Spec => "!",
                    UnaryOp::Not | UnaryOp::NotKeyword => "not ",
                    UnaryOp::BitNot => "~",
                });
                // C's `!` binds tighter than anything but a call.
                let operand = if style == Style::Spec && matches!(op, UnaryOp::Not | UnaryOp::NotKeyword) { 8 } else { own };
                e.write(out, operand, style, rename);
            }
            ExprKind::Binary(BinaryOp::Pow, a, b) => {
                a.write(out, 10, style, rename);
                out.push_str(" ** ");
                b.write(out, 8, style, rename);
            }
            ExprKind::Binary(op, a, b) => {
                let sym = match op {
                    BinaryOp::Add => "+",
                    BinaryOp::Sub => "-",
                    BinaryOp::Mul => "*",
                    BinaryOp::Div => "/",
                    BinaryOp::FloorDiv => "//",
                    BinaryOp::Rem => "%",
                    BinaryOp::And if style == Style::Spec => "&&",
                    BinaryOp::Or if style == Style::Spec => "||",
                    BinaryOp::And => "and",
                    BinaryOp::Or => "or",
                    BinaryOp::Pow => unreachable!("handled above"),
                };
                a.write(out, own, style, rename);
                let _ = write!(out, " {sym} ");
                b.write(out, own + 1, style, rename);
            }
            ExprKind::Compare(first, rest) => {
                first.write(out, 6, style, rename);
                for (op, e) in rest {
                    let sym = match op {
                        CompareOp::Lt => "<",
                        CompareOp::Le => "<=",
                        CompareOp::Gt => ">",
                        CompareOp::Ge => ">=",
                        CompareOp::Eq => "==",
                        CompareOp::Ne => "!=",
                    };
                    let _ = write!(out, " {sym} ");
                    e.write(out, 6, style, rename);
                }
            }
            ExprKind::Conditional { condition, if_true, if_false } if style == Style::Spec => {
                condition.write(out, 2, style, rename);
                out.push_str(" ? ");
                if_true.write(out, 2, style, rename);
                out.push_str(" : ");
                if_false.write(out, 1, style, rename);
            }
            ExprKind::Conditional { condition, if_true, if_false } => {
                if_true.write(out, 2, style, rename);
                out.push_str(" if ");
                condition.write(out, 2, style, rename);
                out.push_str(" else ");
                if_false.write(out, 1, style, rename);
            }
            ExprKind::Call(Function::CeilDiv, args) if style == Style::Python => {
                out.push_str("-(-");
                args[0].write(out, 8, style, rename);
                out.push_str(" // ");
                args[1].write(out, 8, style, rename);
                out.push(')');
            }
            ExprKind::Call(f, args) => {
                out.push_str(f.name());
                out.push('(');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    a.write(out, 0, style, rename);
                }
                out.push(')');
            }
        }
        if parenthesise {
            out.push(')');
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_python(&|_| None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn eval_in(text: &str, vars: &[(&str, Value)]) -> Result<Value, EvalError> {
        let env: BTreeMap<&str, Value> = vars.iter().copied().collect();
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).eval(&|n| env.get(n).copied())
    }

    fn int(text: &str) -> i64 {
        match eval_in(text, &[]).unwrap() {
            Value::Int(i) => i,
            other => panic!("{text} gave {other:?}"),
        }
    }

    fn float(text: &str) -> f64 {
        match eval_in(text, &[]).unwrap() {
            Value::Float(f) => f,
            other => panic!("{text} gave {other:?}"),
        }
    }

    fn parse_error(text: &str) -> ParseError {
        parse(text).expect_err(text)
    }

    #[test]
    fn arithmetic_follows_python_3() {
        assert_eq!(int("1 + 2 * 3"), 7);
        assert_eq!(int("(1 + 2) * 3"), 9);
        assert_eq!(float("7 / 2"), 3.5);
        assert_eq!(float("8 / 2"), 4.0, "`/` is always true division");
        assert_eq!(int("7 // 2"), 3);
        assert_eq!(int("-7 // 2"), -4, "floor, not truncation");
        assert_eq!(int("-7 % 3"), 2, "sign of the divisor");
        assert_eq!(int("7 % -3"), -2);
        assert_eq!(float("7.5 // 2"), 3.0);
        assert_eq!(int("2 ** 10"), 1024);
        assert_eq!(int("2 ** 3 ** 2"), 512, "right-associative");
        assert_eq!(int("-2 ** 2"), -4, "unary minus binds looser than **");
        assert_eq!(float("2 ** -1"), 0.5);
        assert_eq!(float("1 + 0.5"), 1.5);
        assert_eq!(float("1e3"), 1000.0);
        assert_eq!(float(".5 + 1."), 1.5);
        assert_eq!(int("0x10"), 16);
        assert_eq!(int("~0"), -1);
    }

    #[test]
    fn comparisons_chain_and_give_one_or_zero() {
        assert_eq!(int("32 <= 8 * 8 <= 1024"), 1);
        assert_eq!(int("32 <= 8 * 256 <= 1024"), 0);
        assert_eq!(int("1 < 2 > 0"), 1, "each adjacent pair, not (1 < 2) > 0 as in C");
        assert_eq!(int("3 < 2 < 5"), 0);
        assert_eq!(int("2 == 2.0"), 1);
        assert_eq!(int("1 != 1"), 0);
    }

    #[test]
    fn logic_accepts_c_and_python_spellings() {
        assert_eq!(int("1 && 0 || 1"), 1);
        assert_eq!(int("1 and 0 or 1"), 1);
        assert_eq!(int("not 1 == 2"), 1, "`not` is looser than `==`");
        assert_eq!(int("!1 == 0"), 1, "`!` is tighter than `==`: (!1) == 0");
        assert_eq!(int("true + True + false"), 2);
        assert_eq!(int("1 ? 10 : 20"), 10);
        assert_eq!(int("0 ? 10 : 1 ? 20 : 30"), 20, "right-associative");
        assert_eq!(int("10 if 0 else 20 if 1 else 30"), 20);
        // Short-circuit: the division by zero is never evaluated.
        assert_eq!(int("0 and 1 / 0"), 0);
        assert_eq!(int("1 or 1 / 0"), 1);
    }

    #[test]
    fn spec_text_is_c_with_the_fewest_parentheses_and_means_the_same() {
        for (text, printed) in [
            ("((a) + ((b) * 2))", "a + b * 2"),
            ("(a + b) * 2", "(a + b) * 2"),
            ("(c < 3) ? (x) : ((d) ? y : z)", "c < 3 ? x : d ? y : z"),
            ("((c) ? x : y) ? 1 : 2", "(c ? x : y) ? 1 : 2"),
            ("!(a < b) && c || d", "!(a < b) && c || d"),
            ("ceil_div((n), (t * 2))", "ceil_div(n, t * 2)"),
            ("a - (b - c)", "a - (b - c)"),
            ("(a // b) // c", "a // b // c"),
        ] {
            let expr = parse(text).unwrap();
            assert_eq!(expr.to_spec_text(), printed, "{text}");
            let vars = [("a", Value::Int(7)), ("b", Value::Int(3)), ("c", Value::Int(2)), ("d", Value::Int(0)), ("x", Value::Int(5)), ("y", Value::Int(9)), ("z", Value::Int(11)), ("n", Value::Int(100)), ("t", Value::Int(8))];
            assert_eq!(eval_in(printed, &vars), eval_in(text, &vars), "{text} and {printed} differ");
        }
    }

    #[test]
    fn functions() {
        assert_eq!(int("min(3, 1, 2)"), 1);
        assert_eq!(int("max(3, 1, 2)"), 3);
        assert_eq!(float("max(1, 2.5)"), 2.5);
        assert_eq!(int("ceil_div(10, 4)"), 3);
        assert_eq!(int("cdiv(8, 4)"), 2);
        assert_eq!(int("ceil_div(-10, 4)"), -2);
        assert_eq!(int("int(-2.7)"), -2);
        assert_eq!(float("float(3)"), 3.0);
        assert_eq!(int("ceil(2.1)"), 3);
        assert_eq!(int("floor(-2.1)"), -3);
        assert_eq!(float("log2(1024)"), 10.0);
        assert_eq!(int("abs(-4)"), 4);
    }

    #[test]
    fn names_come_from_the_environment() {
        let vars = [("rows", Value::Int(8192)), ("BLOCK", Value::Int(256))];
        assert_eq!(eval_in("ceil_div(rows, BLOCK)", &vars), Ok(Value::Int(32)));
        let err = eval_in("rows * cols", &vars).unwrap_err();
        assert_eq!(err.message, "`cols` has no value");
        assert_eq!(err.span, 7..11);
        let e = parse("a * b + a if c else d").unwrap();
        assert_eq!(e.free_variables(), ["a", "b", "c", "d"]);
        let spans: Vec<_> = e.names().into_iter().map(|(_, s)| s).collect();
        assert_eq!(spans, [0..1, 4..5, 8..9, 13..14, 20..21]);
    }

    #[test]
    fn evaluation_errors_are_values_not_panics() {
        assert_eq!(eval_in("1 / 0", &[]).unwrap_err().message, "division by zero");
        assert_eq!(eval_in("5 % 0", &[]).unwrap_err().message, "division by zero");
        assert_eq!(eval_in("9223372036854775807 + 1", &[]).unwrap_err().message, "integer overflow");
        assert_eq!(eval_in("2 ** 64", &[]).unwrap_err().message, "integer overflow");
        assert!(eval_in("log2(0)", &[]).unwrap_err().message.contains("positive"));
        assert!(eval_in("~1.5", &[]).is_err());
        let e = parse("rows / 3").unwrap();
        let err = e.eval_integer(&|_| Some(Value::Int(10))).unwrap_err();
        assert!(err.message.contains("use `//`"), "{}", err.message);
        assert_eq!(parse("rows / 2").unwrap().eval_integer(&|_| Some(Value::Int(10))), Ok(5));
    }

    #[test]
    fn parse_errors_name_the_offset_and_the_problem() {
        let e = parse_error("a * (b + 1");
        assert_eq!(e.span, 10..10);
        assert_eq!(e.message, "expected `)` to close the `(`, found the end of the expression");
        let e = parse_error("a +* b");
        assert_eq!(e.span, 3..4);
        assert_eq!(e.message, "expected a number, a name or `(`, found `*`");
        let e = parse_error("a b");
        assert_eq!((e.span, e.message.as_str()), (2..3, "expected an operator or the end of the expression, found `b`"));
        let e = parse_error("x = 3");
        assert_eq!((e.span, e.message.as_str()), (2..3, "`=` is not an operator here; did you mean `==`?"));
        let e = parse_error("x & 1 == 0");
        assert_eq!(e.span, 2..3);
        assert!(e.message.starts_with("bitwise `&` is not supported"), "{}", e.message);
        assert!(parse_error("x << 2").message.starts_with("bitwise `<<`"));
        assert!(parse_error("x ^ 2").message.starts_with("bitwise `^`"));
        let e = parse_error("sqrt(4)");
        assert_eq!(e.span, 0..4);
        assert!(e.message.starts_with("unknown function `sqrt`; the functions are min, max, ceil_div, cdiv"));
        assert_eq!(parse_error("min(1)").message, "`min` takes 2 or more arguments, not 1");
        assert_eq!(parse_error("ceil_div(1, 2, 3)").message, "`ceil_div` takes 2 arguments, not 3");
        assert_eq!(parse_error("256u").message, "`256u` is not a number (literal suffixes are not supported)");
        assert_eq!(parse_error("99999999999999999999").message, "integer literal `99999999999999999999` does not fit in 64 bits");
        assert_eq!(parse_error("a $ b").message, "unexpected character `$`");
        assert!(parse_error("plan->gridSize * 2").message.starts_with("`plan->gridSize` is a member of a host variable, which the spec cannot read"));
        assert!(parse_error("(dims.x + 1)").message.starts_with("`dims.x` is a member of a host variable"));
        assert!(parse_error("((input_size).width + 31) // 32").message.starts_with("`input_size.width` is a member of a host variable"));
        assert!(parse_error("(a + b)->size").message.starts_with("`…->size` is a member of a host variable"));
        assert!(parse_error("Traits::kRows::kLength * 4").message.starts_with("`Traits::kRows::kLength` is a member of a C++ type or namespace, which the spec cannot read"));
        assert!(parse_error("gridDim.x * 2").message.starts_with("`gridDim.x` is the launching kernel's own, in a launch from device code, which the spec cannot read"));
        assert!(parse_error("sizes[2]").message.starts_with("`sizes[…]` is an element of a host array"));
        assert!(parse_error("f(\"dimX\")").message.starts_with("a string is host code"));
        assert_eq!(parse("1.5 * .5").map(|e| e.to_spec_text()).ok().as_deref(), Some("1.5 * 0.5"));
        assert_eq!(parse_error("1 ? 2").message, "expected `:` to separate the two branches of `?:`, found the end of the expression");
        assert_eq!(parse_error("").message, "expected a number, a name or `(`, found the end of the expression");
        let e = parse_error("é");
        assert_eq!(e.span, 0..2, "a whole UTF-8 character");
    }

    #[test]
    fn printing_round_trips_and_keeps_meaning() {
        let cases = [
            ("a+b*c", "a + b * c"),
            ("(a+b)*c", "(a + b) * c"),
            ("a-(b-c)", "a - (b - c)"),
            ("(a-b)-c", "a - b - c"),
            ("(-2)**2", "(-2) ** 2"),
            ("2**-x", "2 ** -x"),
            ("32 <= a*b <= 1024", "32 <= a * b <= 1024"),
            ("(a < b) == c", "(a < b) == c"),
            ("!a && b || c", "not a and b or c"),
            ("!(a == b)", "not a == b"),
            ("!a + 1", "(not a) + 1"),
            ("not a == b", "not a == b"),
            ("c ? x : y", "x if c else y"),
            ("(c ? x : y) + 1", "(x if c else y) + 1"),
            ("true", "True"),
            ("ceil_div(n, bx * tx)", "-(-n // (bx * tx))"),
            ("max(a, 1.5)", "max(a, 1.5)"),
        ];
        for (input, printed) in cases {
            let e = parse(input).unwrap();
            assert_eq!(e.to_string(), printed, "{input}");
            let again = parse(printed).unwrap();
            assert_eq!(again.to_string(), printed, "printing is stable for {input}");
        }
        assert_eq!(parse("a + b").unwrap().to_python(&|n| (n == "a").then(|| "ProblemSize[0]".into())), "ProblemSize[0] + b");
    }

    /// Every restriction of the four T1 benchmark-hub files parses, names the parameters the file
    /// lists for it, and evaluates as Python would on known configurations.
    #[test]
    fn every_t1_restriction_parses_and_evaluates() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/t1");
        let mut count = 0;
        for name in ["convolution_milo.json", "dedispersion_milo.json", "gemm_milo.json", "hotspot_milo.json"] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            for condition in json["ConfigurationSpace"]["Conditions"].as_array().unwrap() {
                let source = condition["Expression"].as_str().unwrap();
                let expr = parse(source).unwrap_or_else(|e| panic!("{name}: {source}: {e}"));
                let mut listed: Vec<String> =
                    condition["Parameters"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
                let mut used = expr.free_variables();
                listed.sort();
                used.sort();
                // convolution lists only the tuned sizes it cares about; filter_* are constants there.
                used.retain(|n| !n.starts_with("filter_"));
                assert_eq!(used, listed, "{name}: {source}");
                count += 1;
            }
        }
        assert_eq!(count, 19);

        let check = |source: &str, vars: &[(&str, i64)], expected: bool| {
            let vars: Vec<(&str, Value)> = vars.iter().map(|(n, v)| (*n, Value::Int(*v))).collect();
            assert_eq!(eval_in(source, &vars).unwrap().is_true(), expected, "{source} with {vars:?}");
        };
        let conv_shmem = "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024";
        let conv = |bx, tx, by, ty| [("use_shmem", 1), ("block_size_x", bx), ("tile_size_x", tx), ("block_size_y", by), ("tile_size_y", ty), ("filter_width", 15), ("filter_height", 15)];
        check(conv_shmem, &conv(16, 1, 16, 1), true); // 30 * 30 = 900
        check(conv_shmem, &conv(256, 4, 16, 4), false); // 1038 * 78
        check("use_padding==0 or block_size_x % 32 != 0", &[("use_padding", 1), ("block_size_x", 64)], false);
        check("use_padding==0 or block_size_x % 32 != 0", &[("use_padding", 1), ("block_size_x", 48)], true);
        check("32 <= block_size_x * block_size_y <= 1024", &[("block_size_x", 16), ("block_size_y", 32)], true);
        check("32 <= block_size_x * block_size_y <= 1024", &[("block_size_x", 1), ("block_size_y", 32)], true);
        check("32 <= block_size_x * block_size_y <= 1024", &[("block_size_x", 32), ("block_size_y", 40)], false);
        check("tile_size_x > 1 or tile_stride_x == 0", &[("tile_size_x", 1), ("tile_stride_x", 1)], false);
        // gemm: `/` is true division, as in the Python the file was written for: 32 % 2.0 == 0.
        check("KWG % ((MDIMC * NDIMC)/MDIMA) == 0", &[("KWG", 32), ("MDIMC", 8), ("NDIMC", 8), ("MDIMA", 32)], true);
        check("KWG % ((MDIMC * NDIMC)/MDIMA) == 0", &[("KWG", 16), ("MDIMC", 32), ("NDIMC", 32), ("MDIMA", 32)], false);
        let gemm_not = "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)";
        check(gemm_not, &[("MWG", 128), ("NWG", 128), ("MDIMC", 8), ("NDIMC", 8)], false);
        check(gemm_not, &[("MWG", 128), ("NWG", 64), ("MDIMC", 8), ("NDIMC", 8)], true);
        let hotspot = "(block_size_x*tile_size_x+ temporal_tiling_factor * 2) * (block_size_y*tile_size_y+ temporal_tiling_factor * 2) * (2+sh_power) * 4 <= 49152";
        let hs = |bx, tx, by, ty, t, sh| [("block_size_x", bx), ("tile_size_x", tx), ("block_size_y", by), ("tile_size_y", ty), ("temporal_tiling_factor", t), ("sh_power", sh)];
        check(hotspot, &hs(256, 1, 1, 1, 1, 1), true); // 258 * 3 * 3 * 4 = 9288
        check(hotspot, &hs(1024, 2, 8, 2, 10, 1), false);
        check("temporal_tiling_factor % loop_unroll_factor_t == 0", &[("temporal_tiling_factor", 1), ("loop_unroll_factor_t", 2)], false);
    }
}
