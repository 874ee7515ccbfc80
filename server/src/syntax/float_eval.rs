//! Floating-point constant expressions of host code, for the scalar arguments a program passes
//! a kernel: `1.0f / sqrtf(HS)`, `1.0f - powf(beta1, t)`, `1e-3f`.

/// Evaluates `text`; names resolve through `resolve`. `None` for anything it cannot read.
pub fn eval_float(text: &str, resolve: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let mut parser = Parser { text: text.as_bytes(), at: 0, resolve };
    let value = parser.sum()?;
    parser.skip_spaces();
    (parser.at == parser.text.len() && value.is_finite()).then_some(value)
}

struct Parser<'t> {
    text: &'t [u8],
    at: usize,
    resolve: &'t dyn Fn(&str) -> Option<f64>,
}

impl Parser<'_> {
    fn skip_spaces(&mut self) {
        while self.text.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_spaces();
        let found = self.text.get(self.at) == Some(&c);
        self.at += usize::from(found);
        found
    }

    fn sum(&mut self) -> Option<f64> {
        let mut value = self.product()?;
        loop {
            if self.eat(b'+') {
                value += self.product()?;
            } else if self.eat(b'-') {
                value -= self.product()?;
            } else {
                return Some(value);
            }
        }
    }

    fn product(&mut self) -> Option<f64> {
        let mut value = self.unary()?;
        loop {
            if self.eat(b'*') {
                value *= self.unary()?;
            } else if self.eat(b'/') {
                value /= self.unary()?;
            } else {
                return Some(value);
            }
        }
    }

    fn unary(&mut self) -> Option<f64> {
        if self.eat(b'-') {
            return Some(-self.unary()?);
        }
        if self.eat(b'+') {
            return self.unary();
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<f64> {
        self.skip_spaces();
        if self.eat(b'(') {
            // `(float)x`: a cast changes nothing here.
            let save = self.at;
            let word = self.word();
            if matches!(word.as_str(), "float" | "double" | "int" | "size_t" | "long") && self.eat(b')') {
                return self.unary();
            }
            self.at = save;
            let value = self.sum()?;
            return self.eat(b')').then_some(value);
        }
        let c = *self.text.get(self.at)?;
        if c.is_ascii_digit() || c == b'.' {
            return self.number();
        }
        let word = self.word();
        if word.is_empty() {
            return None;
        }
        if self.eat(b'(') {
            let mut args = vec![self.sum()?];
            while self.eat(b',') {
                args.push(self.sum()?);
            }
            if !self.eat(b')') {
                return None;
            }
            return call(&word, &args);
        }
        (self.resolve)(&word)
    }

    fn word(&mut self) -> String {
        self.skip_spaces();
        let start = self.at;
        // A member (`args.cutoff`) is one name; a number never starts a word.
        while self.text.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b':' || (*c == b'.' && self.at > start)) {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.at]).into_owned()
    }

    fn number(&mut self) -> Option<f64> {
        let start = self.at;
        while let Some(&c) = self.text.get(self.at) {
            let exponent_sign = (c == b'-' || c == b'+') && matches!(self.text.get(self.at - 1), Some(b'e' | b'E'));
            if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || exponent_sign {
                self.at += 1;
            } else {
                break;
            }
        }
        let digits = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        let value = digits.parse::<f64>().ok()?;
        // Suffixes: `1e-3f`, `2u`, `1.0L`.
        while self.text.get(self.at).is_some_and(|c| matches!(c, b'f' | b'F' | b'u' | b'U' | b'l' | b'L')) {
            self.at += 1;
        }
        Some(value)
    }
}

fn call(name: &str, args: &[f64]) -> Option<f64> {
    let name = name.trim_start_matches("std::");
    let unary = |f: fn(f64) -> f64| (args.len() == 1).then(|| f(args[0]));
    match name {
        "sqrtf" | "sqrt" => unary(f64::sqrt),
        "expf" | "exp" => unary(f64::exp),
        "logf" | "log" => unary(f64::ln),
        "log2f" | "log2" => unary(f64::log2),
        "fabsf" | "fabs" | "abs" => unary(f64::abs),
        "rsqrtf" => unary(|x| 1.0 / x.sqrt()),
        "powf" | "pow" => (args.len() == 2).then(|| args[0].powf(args[1])),
        "fminf" | "fmin" | "min" => (args.len() == 2).then(|| args[0].min(args[1])),
        "fmaxf" | "fmax" | "max" => (args.len() == 2).then(|| args[0].max(args[1])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::eval_float;

    #[test]
    fn host_float_expressions_evaluate() {
        let names = |n: &str| match n {
            "HS" => Some(64.0),
            "beta1" => Some(0.9),
            "args.cutoff" => Some(0.5),
            _ => None,
        };
        assert_eq!(eval_float("1e-3f", &names), Some(0.001));
        assert_eq!(eval_float("1.0 / sqrtf(HS)", &names), Some(0.125));
        assert_eq!(eval_float("(float)1 - powf(beta1, 2)", &names), Some(1.0 - 0.81));
        assert_eq!(eval_float("-2.5e+1f * 2", &names), Some(-50.0));
        assert_eq!(eval_float("args.cutoff * 2 + .5", &names), Some(1.5));
        assert_eq!(eval_float("unknown * 2", &names), None);
        assert_eq!(eval_float("rand()", &names), None);
        assert_eq!(eval_float("1.0 / 0", &names), None);
    }
}
