//! Integer constant evaluation of C expressions given as text.
//!
//! Launch configurations, `#define` bodies, array sizes and `__launch_bounds__` arguments are
//! usually small integer expressions over literals and named constants. `#define` bodies are
//! raw text to tree-sitter, so one text evaluator serves all of them. Anything it does not
//! understand (casts, calls, floats, `sizeof` of a type it does not know) yields `None`:
//! unknown, never a guess.

/// Evaluates `text`, resolving identifiers through `resolve`.
pub fn eval(text: &str, resolve: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    let tokens = tokenize(text)?;
    let mut parser = Parser { tokens: &tokens, pos: 0, resolve };
    let value = parser.expr(0)?;
    (parser.pos == tokens.len()).then_some(value)
}

/// The words that may declare an integer constant besides its name: `static constexpr
/// unsigned int`, `const uint`.
const CONSTANT_DECLARATION_WORDS: [&str; 17] = [
    "static", "inline", "const", "constexpr", "int", "unsigned", "signed", "short", "long", "uint", "size_t", "int32_t", "uint32_t",
    "int64_t", "uint64_t", "std::size_t", "std::int64_t",
];

/// One line that declares one integer constant, `const int TILE_DIM = 32;` (with `constexpr`,
/// `static`, unsigned types, a trailing comment): its name and the range of its value in the
/// line. Lines that declare several names, or that may be anything else, are `None`.
pub fn integer_constant_line(line: &str) -> Option<(&str, std::ops::Range<usize>)> {
    let code = line.split("//").next()?.trim_end();
    let statement = code.strip_suffix(';')?;
    let (declared, value) = statement.split_once('=')?;
    let mut words: Vec<&str> = declared.split_whitespace().collect();
    let name = words.pop()?;
    let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let qualified = words.iter().any(|w| *w == "const" || *w == "constexpr");
    let integer = words.iter().all(|w| CONSTANT_DECLARATION_WORDS.contains(w)) && words.iter().any(|w| !matches!(*w, "static" | "inline" | "const" | "constexpr"));
    let value_text = value.trim();
    if !is_name || !qualified || !integer || value_text.is_empty() || value_text.contains([',', '=', '{', '"']) {
        return None;
    }
    let start = declared.len() + 1 + (value.len() - value.trim_start().len());
    Some((name, start..start + value_text.len()))
}

/// Parses a C integer literal: decimal, hex, octal or binary, with `u`/`l` suffixes and `'`
/// digit separators.
pub fn parse_int_literal(text: &str) -> Option<i64> {
    let cleaned: String = text.chars().filter(|&c| c != '\'').collect();
    let digits = cleaned.trim_end_matches(['u', 'U', 'l', 'L']);
    let (radix, body) = if let Some(rest) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        (16, rest)
    } else if let Some(rest) = digits.strip_prefix("0b").or(digits.strip_prefix("0B")) {
        (2, rest)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() {
        return None;
    }
    u64::from_str_radix(body, radix).ok().and_then(|v| i64::try_from(v).ok())
}

/// Size in bytes of the scalar and vector types kernels use, the same on every CUDA target.
pub fn size_of_type(ty: &str) -> Option<u64> {
    let ty = ty.trim_start_matches("const ").trim_start_matches("volatile ").trim();
    let ty = host_type_definition(ty).unwrap_or(ty);
    if let Some((scalar, lanes)) = vector_type(ty) {
        return Some(lanes * size_of_type(scalar)?);
    }
    Some(match ty {
        "char" | "signed char" | "unsigned char" | "int8_t" | "uint8_t" | "bool" | "__nv_fp8_e4m3"
        | "__nv_fp8_e5m2" => 1,
        "short" | "unsigned short" | "int16_t" | "uint16_t" | "half" | "__half" | "__nv_bfloat16"
        | "nv_bfloat16" => 2,
        "int" | "unsigned" | "unsigned int" | "float" | "int32_t" | "uint32_t" | "half2" | "__half2"
        | "__nv_bfloat162" | "nv_bfloat162" => 4,
        "double" | "long" | "unsigned long" | "long long" | "unsigned long long" | "int64_t"
        | "uint64_t" | "size_t" => 8,
        // cuRAND's generator states (curand_kernel.h; `sizeof` with nvcc of CUDA 13 on the lent H100).
        "curandState" | "curandState_t" | "curandStateXORWOW" | "curandStateXORWOW_t" => 48,
        "curandStatePhilox4_32_10" | "curandStatePhilox4_32_10_t" => 64,
        "curandStateMRG32k3a" | "curandStateMRG32k3a_t" => 48,
        // Sobol states: three words and the 32 or 64 direction vectors, all of one word size.
        "curandStateSobol32" | "curandStateSobol32_t" | "curandStateScrambledSobol32"
        | "curandStateScrambledSobol32_t" => 140,
        "curandStateSobol64" | "curandStateSobol64_t" | "curandStateScrambledSobol64"
        | "curandStateScrambledSobol64_t" => 536,
        "curandDirectionVectors32_t" => 128,
        "curandDirectionVectors64_t" => 512,
        // cuFFT's and cuComplex's types (cufft.h, cuComplex.h): a float or double, or two of them.
        "cufftReal" => 4,
        "cufftDoubleReal" | "cufftComplex" | "cuComplex" | "cuFloatComplex" => 8,
        "cufftDoubleComplex" | "cuDoubleComplex" => 16,
        _ => return None,
    })
}

/// Types glibc's `<sys/types.h>` declares, which every nvcc compile of a `.cu` file sees (the
/// runtime's headers include it) and NVRTC does not: SGEMM kernels index with `uint`.
pub const HOST_TYPES: [(&str, &str); 3] = [("uint", "unsigned int"), ("ushort", "unsigned short"), ("ulong", "unsigned long")];

/// The type one of [`HOST_TYPES`] stands for (`unsigned int` for `uint`).
pub fn host_type_definition(ty: &str) -> Option<&'static str> {
    HOST_TYPES.iter().find(|(name, _)| *name == ty).map(|(_, definition)| *definition)
}

/// A CUDA vector type's scalar and lane count: `("unsigned char", 4)` for `uchar4`,
/// `("float", 3)` for `float3` (the three-lane types are unpadded: `sizeof(float3)` is 12).
pub fn vector_type(ty: &str) -> Option<(&'static str, u64)> {
    const SCALARS: [(&str, &str); 12] = [
        ("ulonglong", "unsigned long long"),
        ("longlong", "long long"),
        ("ushort", "unsigned short"),
        ("uchar", "unsigned char"),
        ("ulong", "unsigned long"),
        ("uint", "unsigned int"),
        ("short", "short"),
        ("char", "signed char"),
        ("long", "long"),
        ("int", "int"),
        ("float", "float"),
        ("double", "double"),
    ];
    let lanes = ty.strip_prefix(|c: char| c.is_ascii_alphabetic()).map(|_| ty.as_bytes()[ty.len() - 1])?;
    let lanes = u64::from(lanes.checked_sub(b'0').filter(|l| (1..=4).contains(l))?);
    let name = &ty[..ty.len() - 1];
    SCALARS.iter().find(|(vector, _)| *vector == name).map(|&(_, scalar)| (scalar, lanes))
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Ident(String),
    Op(&'static str),
}

const OPERATORS: [&str; 25] = [
    "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "(", ")", "<", ">",
    "&", "|", "^", "~", "!", "?", ":", ",",
];

/// C++'s words for operators (`M >= 128 and N >= 128`), reserved, so never a name.
fn alternative_operator(word: &str) -> Option<&'static str> {
    Some(match word {
        "and" => "&&",
        "or" => "||",
        "not" => "!",
        "not_eq" => "!=",
        "bitand" => "&",
        "bitor" => "|",
        "xor" => "^",
        "compl" => "~",
        _ => return None,
    })
}

fn tokenize(text: &str) -> Option<Vec<Token>> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() || c == b'\\' {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'\'') {
                i += 1;
            }
            tokens.push(Token::Int(parse_int_literal(&text[start..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' || starts_qualified_name(&text[i..]) {
            // A name, qualified or not: `kBlock`, `detail::kBlock`, `::kBlock`.
            let start = i;
            loop {
                if starts_qualified_name(&text[i..]) {
                    i += 2;
                }
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                if !starts_qualified_name(&text[i..]) {
                    break;
                }
            }
            let name = &text[start..i];
            tokens.push(alternative_operator(name).map_or_else(|| Token::Ident(name.to_string()), Token::Op));
        } else if text[i..].starts_with("//") {
            break;
        } else if text[i..].starts_with("/*") {
            i += text[i..].find("*/").map(|e| e + 2)?;
        } else {
            let op = OPERATORS.iter().find(|op| text[i..].starts_with(**op))?;
            tokens.push(Token::Op(op));
            i += op.len();
        }
    }
    Some(tokens)
}

/// `::` followed by a name.
fn starts_qualified_name(text: &str) -> bool {
    text.strip_prefix("::").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    resolve: &'a dyn Fn(&str) -> Option<i64>,
}

/// Binding power of binary operators, C precedence (higher binds tighter).
fn binary_power(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | ">" | "<=" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Token::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self, min_power: u8) -> Option<i64> {
        let mut lhs = self.unary()?;
        loop {
            match self.peek() {
                // Only the branch taken is evaluated: `n < 256 ? next_pow2(n) : 256` is 256 for
                // a large `n`, though `next_pow2` means nothing here.
                Some(Token::Op("?")) if min_power == 0 => {
                    self.pos += 1;
                    if lhs != 0 {
                        let then = self.expr(0)?;
                        if !self.eat(":") {
                            return None;
                        }
                        self.skip_branch(false)?;
                        lhs = then;
                    } else {
                        self.skip_branch(true)?;
                        if !self.eat(":") {
                            return None;
                        }
                        lhs = self.expr(0)?;
                    }
                }
                Some(Token::Op(op)) => {
                    let Some(power) = binary_power(op) else { break };
                    if power <= min_power {
                        break;
                    }
                    let op = *op;
                    self.pos += 1;
                    let rhs = self.expr(power)?;
                    lhs = apply(op, lhs, rhs)?;
                }
                _ => break,
            }
        }
        Some(lhs)
    }

    /// Steps over a conditional's branch without evaluating it: the `then` branch up to its
    /// `:`, or the `else` branch up to the end of the conditional (a `)`, `,` or `:` of an
    /// enclosing expression, or the end). `None` when the parentheses do not balance.
    fn skip_branch(&mut self, then: bool) -> Option<()> {
        let (mut depth, mut nested) = (0i32, 0);
        while let Some(token) = self.peek() {
            match token {
                Token::Op("(") => depth += 1,
                Token::Op(")") if depth == 0 => return (!then).then_some(()),
                Token::Op(")") => depth -= 1,
                Token::Op(",") if depth == 0 => return (!then).then_some(()),
                Token::Op("?") if depth == 0 => nested += 1,
                Token::Op(":") if depth == 0 && nested == 0 => return Some(()),
                Token::Op(":") if depth == 0 => nested -= 1,
                _ => {}
            }
            self.pos += 1;
        }
        (!then && depth == 0).then_some(())
    }

    fn unary(&mut self) -> Option<i64> {
        match self.tokens.get(self.pos)?.clone() {
            Token::Int(v) => {
                self.pos += 1;
                Some(v)
            }
            Token::Ident(name) if name == "sizeof" => {
                self.pos += 1;
                self.size_of()
            }
            // `int(x)`, a truncation the host code spells `(int)(x)`: of an integer, the integer.
            Token::Ident(name) if name == "int" && matches!(self.tokens.get(self.pos + 1), Some(Token::Op("("))) => {
                self.pos += 1;
                self.unary()
            }
            Token::Ident(name) => {
                self.pos += 1;
                (self.resolve)(&name)
            }
            Token::Op("(") => {
                self.pos += 1;
                let v = self.expr(0)?;
                self.eat(")").then_some(v)
            }
            Token::Op("-") => {
                self.pos += 1;
                self.unary()?.checked_neg()
            }
            Token::Op("+") => {
                self.pos += 1;
                self.unary()
            }
            Token::Op("~") => {
                self.pos += 1;
                Some(!self.unary()?)
            }
            Token::Op("!") => {
                self.pos += 1;
                Some((self.unary()? == 0) as i64)
            }
            Token::Op(_) => None,
        }
    }

    /// `sizeof(T)` after the `sizeof`, for a type made of names only (`unsigned int`, `float4`).
    fn size_of(&mut self) -> Option<i64> {
        if !self.eat("(") {
            return None;
        }
        let mut words = Vec::new();
        while let Some(Token::Ident(word)) = self.peek() {
            words.push(word.clone());
            self.pos += 1;
        }
        if !self.eat(")") {
            return None;
        }
        size_of_type(&words.join(" ")).and_then(|size| i64::try_from(size).ok())
    }
}

fn apply(op: &str, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "+" => a.checked_add(b)?,
        "-" => a.checked_sub(b)?,
        "*" => a.checked_mul(b)?,
        "/" => a.checked_div(b)?,
        "%" => a.checked_rem(b)?,
        "<<" => a.checked_shl(u32::try_from(b).ok()?)?,
        ">>" => a.checked_shr(u32::try_from(b).ok()?)?,
        "&" => a & b,
        "|" => a | b,
        "^" => a ^ b,
        "<" => (a < b) as i64,
        ">" => (a > b) as i64,
        "<=" => (a <= b) as i64,
        ">=" => (a >= b) as i64,
        "==" => (a == b) as i64,
        "!=" => (a != b) as i64,
        "&&" => (a != 0 && b != 0) as i64,
        "||" => (a != 0 || b != 0) as i64,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_names(_: &str) -> Option<i64> {
        None
    }

    #[test]
    fn vector_types_are_lanes_of_their_scalar() {
        assert_eq!(vector_type("uchar4"), Some(("unsigned char", 4)));
        assert_eq!(vector_type("ulonglong2"), Some(("unsigned long long", 2)));
        assert_eq!((vector_type("float"), vector_type("half2"), vector_type("uint32_t"), vector_type("int5")), (None, None, None, None));
        let sizes: Vec<Option<u64>> = ["uchar4", "char3", "short2", "float3", "double4", "longlong2", "int1"].iter().map(|t| size_of_type(t)).collect();
        assert_eq!(sizes, [Some(4), Some(3), Some(4), Some(12), Some(32), Some(16), Some(4)]);
    }

    #[test]
    fn literals_in_every_base_and_suffix() {
        assert_eq!(parse_int_literal("256"), Some(256));
        assert_eq!(parse_int_literal("0x100"), Some(256));
        assert_eq!(parse_int_literal("0400"), Some(256));
        assert_eq!(parse_int_literal("0b100000000"), Some(256));
        assert_eq!(parse_int_literal("256u"), Some(256));
        assert_eq!(parse_int_literal("256ULL"), Some(256));
        assert_eq!(parse_int_literal("1'024"), Some(1024));
        assert_eq!(parse_int_literal("0"), Some(0));
        assert_eq!(parse_int_literal("1.5f"), None);
    }

    #[test]
    fn c_precedence_and_integer_division() {
        assert_eq!(eval("(1000 + 255) / 256", &no_names), Some(4));
        assert_eq!(eval("2 + 3 * 4", &no_names), Some(14));
        assert_eq!(eval("1 << 8 | 1", &no_names), Some(257));
        assert_eq!(eval("-7 / 2", &no_names), Some(-3));
        assert_eq!(eval("32 * 33 * 4", &no_names), Some(4224));
        assert_eq!(eval("1 ? 64 : 128", &no_names), Some(64));
        assert_eq!(eval("(16) /* rows */", &no_names), Some(16));
    }

    #[test]
    fn conditionals_evaluate_only_the_branch_taken() {
        let n = |value: i64| move |name: &str| (name == "n").then_some(value);
        assert_eq!(eval("n < 256 ? next_pow2(n) : 256", &n(1 << 24)), Some(256));
        assert_eq!(eval("n >= 256 ? 256 : next_pow2(n)", &n(1 << 24)), Some(256));
        assert_eq!(eval("n < 256 ? next_pow2(n) : 256", &n(3)), None);
        assert_eq!(eval("(n < 3 ? f(n, 2) : n > 5 ? 7 : g(1)) + 1", &n(9)), Some(8));
        assert_eq!(eval("n ? 1 : (2", &n(1)), None);
    }

    #[test]
    fn operator_words_are_operators() {
        let m = |name: &str| (name == "M").then_some(4096);
        assert_eq!(eval("M >= 128 and M < 8192", &m), Some(1));
        assert_eq!(eval("M < 128 or not (M > 0)", &m), Some(0));
        assert_eq!(eval("M bitand 255 xor 1", &m), Some(1));
        assert_eq!(eval("M not_eq 4096", &m), Some(0));
    }

    #[test]
    fn sizeof_of_known_types() {
        assert_eq!(eval("256 * sizeof(float)", &no_names), Some(1024));
        assert_eq!(eval("sizeof(unsigned int) * 2", &no_names), Some(8));
        assert_eq!(eval("sizeof(float4)", &no_names), Some(16));
        assert_eq!(eval("sizeof(cufftComplex) * 2", &no_names), Some(16));
    }

    #[test]
    fn names_resolve_through_the_callback() {
        let resolve = |n: &str| match n {
            "BLOCK" => Some(128),
            _ => None,
        };
        assert_eq!(eval("BLOCK * 2", &resolve), Some(256));
        assert_eq!(eval("BLOCK * N", &resolve), None);
        let qualified = |n: &str| (n == "cfg::BLOCK" || n == "::BLOCK").then_some(64);
        assert_eq!(eval("(n + cfg::BLOCK - 1) / cfg::BLOCK", &|n| if n == "n" { Some(1000) } else { qualified(n) }), Some(16));
        assert_eq!(eval("::BLOCK", &qualified), Some(64));
    }

    #[test]
    fn unknown_forms_are_none_not_guesses() {
        for text in ["1.5", "sizeof(float*)", "sizeof(T)", "sizeof x", "(int)3", "f(2)", "4 / 0", "", "1 +", "9223372036854775807 + 1"] {
            assert_eq!(eval(text, &no_names), None, "{text}");
        }
    }

    #[test]
    fn a_line_declaring_one_integer_constant_gives_its_name_and_value() {
        let value = |line: &'static str| integer_constant_line(line).map(|(name, range)| (name, &line[range]));
        assert_eq!(value("const int TILE_DIM = 32;"), Some(("TILE_DIM", "32")));
        assert_eq!(value("  static constexpr unsigned int SHMEM = 1 << 10;  // bytes"), Some(("SHMEM", "1 << 10")));
        assert_eq!(value("const uint BM = 64;"), Some(("BM", "64")));
        for other in ["int n = 32;", "const float scale = 2.0f;", "const int a = 1, b = 2;", "const char* name = \"x\";", "const int N = 4", "if (x == 1);"] {
            assert_eq!(integer_constant_line(other), None, "{other}");
        }
    }
}
