//! The file-wide names an expression can use: `#define`s and file- or namespace-scope constants.
//!
//! Built anew for every version of a file from each item's declarations (cheap: a few hundred
//! short evaluations), so that an item's cached analysis can be reused only while every name it
//! could have read still means the same: see [`Environment::meanings`].

use std::collections::HashMap;

use super::consteval;
use super::model::{Define, Dim3};

pub(super) enum ConstantSource {
    /// The index of the `#define` in [`Environment::defines`].
    Define(usize),
    Value(Option<i64>),
}

pub(super) struct Environment {
    /// Every object-like `#define` in source order, with its value.
    pub defines: Vec<Define>,
    constants: HashMap<String, ConstantSource>,
    meanings: Vec<Meaning>,
}

/// A name, whether it is a `#define` (else a constant), and its value.
pub(super) type Meaning = (String, bool, Option<i64>);

impl Environment {
    /// `defines` in source order, without values; `constants` as (name, value text) in source order.
    pub fn new<'a>(defines: Vec<Define>, constants: impl IntoIterator<Item = (&'a str, &'a str)>) -> Environment {
        let mut env = Environment { defines, constants: HashMap::new(), meanings: Vec::new() };
        // A later #define of the same name wins, as it would after the preprocessor.
        for (i, d) in env.defines.iter().enumerate() {
            env.constants.insert(d.name.clone(), ConstantSource::Define(i));
        }
        // A constant sees the defines and the constants declared before it.
        for (name, value) in constants {
            let v = env.eval(value, &Locals::default());
            env.constants.entry(name.to_string()).or_insert(ConstantSource::Value(v));
        }
        for i in 0..env.defines.len() {
            env.defines[i].value = env.eval_define(i, 0);
        }
        env.meanings = env.compute_meanings();
        env
    }

    /// Every name with its kind and value, sorted: all that an item's analysis reads from the
    /// environment, so two environments with equal meanings give every item the same analysis.
    /// Which `#define` line a name comes from is left out; only the file-wide pass that records
    /// define sites reads it.
    pub fn meanings(&self) -> &[Meaning] {
        &self.meanings
    }

    fn compute_meanings(&self) -> Vec<Meaning> {
        let mut meanings: Vec<Meaning> = self
            .constants
            .iter()
            .map(|(name, source)| match source {
                ConstantSource::Define(i) => (name.clone(), true, self.defines[*i].value),
                ConstantSource::Value(v) => (name.clone(), false, *v),
            })
            .collect();
        meanings.sort_unstable();
        meanings
    }

    pub fn get(&self, name: &str) -> Option<&ConstantSource> {
        self.constants.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.constants.contains_key(name)
    }

    fn eval_define(&self, index: usize, depth: u32) -> Option<i64> {
        // Depth bounds self-referential macros (#define A B / #define B A).
        if depth > 16 {
            return None;
        }
        let text = &self.defines[index].value_text;
        consteval::eval(text, &|name| self.constant_value(name, depth + 1))
    }

    fn constant_value(&self, name: &str, depth: u32) -> Option<i64> {
        match self.constants.get(unqualified(name))? {
            ConstantSource::Define(i) => self.eval_define(*i, depth),
            ConstantSource::Value(v) => *v,
        }
    }

    /// Evaluates `text` with `locals` shadowing file-scope constants and defines.
    pub fn eval(&self, text: &str, locals: &Locals) -> Option<i64> {
        consteval::eval(text, &|name| match locals.get(name) {
            Some(v) => v,
            None => self.constant_value(name, 0),
        })
    }
}

/// `kBlock` for `detail::kBlock`: constants are known by their unqualified names.
pub(super) fn unqualified(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

/// Names visible to the evaluator besides defines and file-scope constants: template
/// parameters (unknown values) and a host function's locals.
#[derive(Debug, Default)]
pub(super) struct Locals {
    pub scalars: HashMap<String, Option<i64>>,
    pub dims: HashMap<String, Option<Dim3>>,
}

impl Locals {
    /// The scalar value of `name` if it is a local; a `dim3` local has none.
    pub fn get(&self, name: &str) -> Option<Option<i64>> {
        match self.scalars.get(name) {
            Some(v) => Some(*v),
            None => self.dims.contains_key(name).then_some(None),
        }
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.scalars.contains_key(name) || self.dims.contains_key(name)
    }
}
