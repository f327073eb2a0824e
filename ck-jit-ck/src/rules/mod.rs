//! Dispatch rules: the decision a C++ dispatcher function makes (CK's
//! `fmha_fwd(traits, args, stream)` and its siblings), read from its source
//! by the build and evaluated at run time, so that a Rust caller picks the
//! blob(s) the dispatcher of the same version would pick, with no code that
//! knows that version.
//!
//! A function is a tree of statements: `if`/`else if`/`else` chains whose
//! conditions are expressions over the function's parameters and locals
//! (`t.hdim_q <= 128`, `a.seqlen_k % 64 == 0`,
//! `t.data_type.compare("fp16") == 0`), local values, and leaves: a
//! statement that calls blobs, or a `return` that calls none.
//! [`RulesFile::decide`] walks the tree as the C++ would and stops at the
//! first leaf it reaches. What the tree cannot know (the values of the
//! parameters, `ck_tile::get_device_name()`) comes from an [`Env`];
//! anything the build could not read is kept as [`Expr::Opaque`] and is an
//! error only when a decision reaches it.
//!
//! A function may call other functions of the same file
//! ([`Stmt::Invoke`]): newer CK's public `fmha_fwd` holds no blob call of
//! its own, it tries an internal `fmha_fwd_v3` and falls back to
//! `fmha_fwd_v2` when that returns a negative value. The callee is decided
//! in place, its parameters bound to the caller's arguments, so the
//! [`Env`] is only ever asked for names in the terms of the function the
//! caller named (its [`Function::params`]). What a callee returns is known
//! here only by its sign: a function that reaches a `return` without
//! calling a blob returns a negative value (CK's `return -1`, "no kernel"),
//! one that called blobs returns what they return, which is negative only
//! when a kernel refuses its arguments at run time. A condition on that
//! result is therefore decided twice, once for each sign, and the decision
//! says "these blobs, and where they return a negative value, those"
//! ([`Decision::Fallback`]).
//!
//! The build writes the rules ([`read`] reads them out of a dispatcher's
//! source, [`CkFmhaFiles::write_rules`](crate::CkFmhaFiles::write_rules)
//! writes one file per dispatcher) and a program evaluates them; this
//! module is both sides' single definition of the format. It needs serde
//! alone and is all a program links of this crate: it depends on the crate
//! without its default `build` feature, which [`read`] and the rest of the
//! build machinery need (see the [crate] docs).
//!
//! # Format
//!
//! One JSON document per dispatcher file. Expressions are stored once
//! each, children before parents (`exprs`, indexed by `u32`), and blob
//! names once each (`blobs`):
//!
//! ```json
//! {"format":2,"file":"fmha_fwd_api.cpp","blobs":["fmha_fwd_d128_..."],
//!  "exprs":[{"name":"t.hdim_q"},{"int":128},{"bin":["le",0,1]},
//!           {"name":"traits"},{"name":"args"},{"name":"config"}],
//!  "functions":[{"name":"fmha_fwd_v2","line":40,"params":["t","a","s"],"body":[
//!     {"if":{"arms":[{"cond":2,"body":[{"call":{"line":60,"blobs":[0]}}]}]}},
//!     {"return":{"line":90}}]},
//!   {"name":"fmha_fwd","line":95,"params":["traits","args","config"],"body":[
//!     {"invoke":{"line":96,"function":"fmha_fwd_v2","args":[3,4,5],"returns":true}}]}]}
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Error;

#[cfg(feature = "build")]
pub mod read;

/// The rules format this crate writes and the newest it reads.
pub const RULES_FORMAT: u32 = 2;

/// How deep an expression or a statement tree may nest.
pub const MAX_DEPTH: usize = 200;

/// The rules of one dispatcher file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RulesFile {
    /// [`RULES_FORMAT`].
    pub format: u32,
    /// The dispatcher's file name.
    pub file: String,
    /// Every blob a call names, each once.
    pub blobs: Vec<String>,
    /// Every expression, each once; an expression's operands come before it.
    pub exprs: Vec<Expr>,
    /// The functions that call blobs or other functions of the file, in
    /// file order.
    pub functions: Vec<Function>,
}

/// One dispatcher function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// Its name as the source spells it (`fmha_fwd`, `fmha_bwd<2>`).
    pub name: String,
    /// The line of its name.
    pub line: u32,
    /// Its parameters' names, in order (empty for one left unnamed): what
    /// an [`Env`] is asked for when this function is decided is spelled
    /// with these (`t.hdim_q` of `fmha_fwd(fmha_fwd_traits t, ...)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
    /// Its statements.
    pub body: Vec<Stmt>,
}

/// A statement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stmt {
    /// `if (c1) {..} else if (c2) {..} else {..}`: the first arm whose
    /// condition holds, else `otherwise`.
    If {
        /// Conditions (expression indices) and bodies.
        arms: Vec<Arm>,
        /// The final `else`, if any.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        otherwise: Vec<Stmt>,
    },
    /// A local (`const float min_cu_util_rate = 0.8;`): its value, or
    /// `None` when the build could not read it (a lambda, an uninitialised
    /// variable), in which case its name is looked up in the [`Env`].
    Let {
        /// The name.
        name: String,
        /// Expression index.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<u32>,
    },
    /// A statement that calls blobs: the decision.
    Call {
        /// Its line in the dispatcher.
        line: u32,
        /// Indices into [`RulesFile::blobs`], in call order.
        blobs: Vec<u32>,
    },
    /// A `return` that calls no blob (CK's `return -1;`: no kernel).
    Return {
        /// Its line.
        line: u32,
    },
    /// A statement that calls another function of the file
    /// (`return fmha_fwd_v2(t, a, s);`, `float r = fmha_fwd_v3(t, a, s);`):
    /// decided as that function decides, with its parameters bound to
    /// `args`.
    Invoke {
        /// Its line.
        line: u32,
        /// The function called ([`Function::name`]).
        function: String,
        /// The arguments (expression indices), in order.
        args: Vec<u32>,
        /// The variable the result is stored in, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// Whether the statement returns the result (`return f(...)`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        returns: bool,
    },
    /// A statement the build could not follow that calls blobs (a loop, a
    /// `switch`): an error when a decision reaches it.
    Unsupported {
        /// Its line.
        line: u32,
        /// What it is.
        what: String,
    },
}

/// One arm of an `if` chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// The condition (expression index).
    pub cond: u32,
    /// What runs when it holds.
    pub body: Vec<Stmt>,
}

/// An expression; operands are indices into [`RulesFile::exprs`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// `true`, `false`.
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// A string literal.
    Str(String),
    /// `nullptr`.
    Null,
    /// A name: a parameter's member (`t.hdim_q`), a local, or a qualified
    /// constant (`mask_enum::no_mask`).
    Name(String),
    /// `!x`.
    Not(u32),
    /// `-x`.
    Neg(u32),
    /// A binary operation.
    Bin(BinOp, u32, u32),
    /// `x && y && ...`.
    All(Vec<u32>),
    /// `x || y || ...`.
    Any(Vec<u32>),
    /// A function call (`get_num_blocks(128)`): answered by the [`Env`].
    Call(String, Vec<u32>),
    /// A method call (`t.data_type.compare("fp16")`).
    Method(u32, String, Vec<u32>),
    /// Source text the build could not read.
    Opaque(String),
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl BinOp {
    /// The C++ spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
        }
    }
}

/// A value during evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// Any integer type.
    Int(i64),
    /// `float`, `double`.
    Float(f64),
    /// `std::string`, a string literal.
    Str(String),
    /// A null pointer.
    Null,
    /// A non-null pointer.
    Ptr,
    /// An enumerator, by its qualified name (`mask_enum::no_mask`).
    Enum(String),
    /// What a call that ran kernels returns: their time, or 0 when not
    /// timed; known here only not to be negative.
    Ran,
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Null => f.write_str("nullptr"),
            Value::Ptr => f.write_str("(non-null pointer)"),
            Value::Enum(e) => f.write_str(e),
            Value::Ran => f.write_str("(what a kernel returns)"),
        }
    }
}

/// What a decision needs from outside: the values of names (`t.hdim_q`,
/// `a.seqlen_k`, `num_cus`) and the results of calls
/// (`ck_tile::get_device_name()`).
pub trait Env {
    /// The value of `name`, or `None` when unknown (an error if needed).
    /// A qualified name the environment does not know
    /// (`mask_enum::no_mask`) is the enumerator of that name.
    fn value(&self, name: &str) -> Option<Value>;

    /// The result of calling `function` with `args`, or `None` when
    /// unknown.
    fn call(&self, function: &str, args: &[Value]) -> Option<Value> {
        let _ = (function, args);
        None
    }
}

/// Where a decision ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'a> {
    /// A statement calling these blobs, at this line.
    Blobs {
        /// The line of the call.
        line: u32,
        /// The blobs it calls, in call order.
        blobs: Vec<&'a str>,
    },
    /// A `return` without a blob call (CK: no kernel for this operation).
    NoBlob {
        /// The line of the `return`.
        line: u32,
    },
    /// The end of the function, no blob called.
    End,
    /// Call `first`'s blobs; where they return a negative value (a kernel
    /// refusing its arguments at run time), what `otherwise` decides. CK's
    /// `if (r >= 0) return r;` after `r = fmha_fwd_v3(...)`.
    Fallback {
        /// What is tried first.
        first: Box<Decision<'a>>,
        /// What follows a negative result.
        otherwise: Box<Decision<'a>>,
    },
}

impl<'a> Decision<'a> {
    /// The blobs called first, if any.
    pub fn blobs(&self) -> &[&'a str] {
        match self {
            Decision::Blobs { blobs, .. } => blobs,
            Decision::Fallback { first, .. } => first.blobs(),
            _ => &[],
        }
    }

    /// Every set of blobs the C++ may call, in the order it tries them:
    /// the next only where the one before returned a negative value.
    pub fn candidates(&self) -> Vec<&[&'a str]> {
        match self {
            Decision::Blobs { blobs, .. } => vec![blobs.as_slice()],
            Decision::Fallback { first, otherwise } => {
                let mut v = first.candidates();
                v.extend(otherwise.candidates());
                v
            }
            Decision::NoBlob { .. } | Decision::End => Vec::new(),
        }
    }
}

impl RulesFile {
    /// Parses and checks a rules document: every index in range, operands
    /// before the expressions that use them, nesting within [`MAX_DEPTH`].
    ///
    /// # Errors
    ///
    /// [`Error::BadRules`] naming what is wrong, [`Error::NewerRules`].
    pub fn parse(text: &str) -> Result<RulesFile, Error> {
        let r: RulesFile =
            serde_json::from_str(text).map_err(|e| Error::BadRules { why: e.to_string() })?;
        r.validate()?;
        Ok(r)
    }

    /// Serialises the rules (compact JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Checks indices, operand order and depth.
    ///
    /// # Errors
    ///
    /// [`Error::BadRules`] naming what is wrong, [`Error::NewerRules`].
    pub fn validate(&self) -> Result<(), Error> {
        if self.format > RULES_FORMAT {
            return Err(Error::NewerRules { found: self.format });
        }
        let bad = |why: String| Error::BadRules { why };
        let mut depth = vec![0usize; self.exprs.len()];
        for (i, e) in self.exprs.iter().enumerate() {
            let mut d = 0;
            for op in operands(e) {
                if op as usize >= i {
                    return Err(bad(format!("expression {i} uses {op}, not an earlier one")));
                }
                d = d.max(depth[op as usize] + 1);
            }
            if d > MAX_DEPTH {
                return Err(bad(format!("expression {i} nests too deeply")));
            }
            depth[i] = d;
        }
        for f in &self.functions {
            self.validate_stmts(&f.body, 0)
                .map_err(|why| bad(format!("{}: {why}", f.name)))?;
        }
        Ok(())
    }

    fn validate_stmts(&self, stmts: &[Stmt], depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("statements nest too deeply".into());
        }
        let expr = |i: u32| {
            if (i as usize) < self.exprs.len() {
                Ok(())
            } else {
                Err(format!("expression {i} out of range"))
            }
        };
        for s in stmts {
            match s {
                Stmt::If { arms, otherwise } => {
                    for a in arms {
                        expr(a.cond)?;
                        self.validate_stmts(&a.body, depth + 1)?;
                    }
                    self.validate_stmts(otherwise, depth + 1)?;
                }
                Stmt::Let { value, .. } => {
                    if let Some(v) = value {
                        expr(*v)?;
                    }
                }
                Stmt::Call { blobs, .. } => {
                    if let Some(b) = blobs.iter().find(|&&b| b as usize >= self.blobs.len()) {
                        return Err(format!("blob {b} out of range"));
                    }
                }
                Stmt::Invoke { function, args, .. } => {
                    for a in args {
                        expr(*a)?;
                    }
                    if self.function(function).is_none() {
                        return Err(format!("calls `{function}`, which the rules do not have"));
                    }
                }
                Stmt::Return { .. } | Stmt::Unsupported { .. } => {}
            }
        }
        Ok(())
    }

    /// The function called `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Walks `function` as the C++ would with the values `env` gives, to
    /// the first statement that calls blobs or returns.
    ///
    /// # Errors
    ///
    /// No such function; a condition reached that needs a value `env`
    /// does not give, compares values of different kinds, divides by zero,
    /// or that the build could not read.
    pub fn decide(&self, function: &str, env: &dyn Env) -> Result<Decision<'_>, Error> {
        let f = self
            .function(function)
            .ok_or_else(|| Error::NoSuchFunction {
                file: self.file.clone(),
                function: function.to_string(),
                known: self.functions.iter().map(|f| f.name.clone()).collect(),
            })?;
        let err = |why: String| Error::Decide {
            file: self.file.clone(),
            function: function.to_string(),
            why,
        };
        let mut ev = Eval {
            rules: self,
            env,
            frames: Vec::new(),
            cur: 0,
        };
        ev.call(f, &[]).map_err(err)
    }

    /// The source form of expression `i`, for messages.
    pub fn show(&self, i: u32) -> String {
        let mut s = String::new();
        self.write_expr(i, &mut s, 0);
        s
    }

    fn write_expr(&self, i: u32, out: &mut String, depth: usize) {
        use fmt::Write as _;
        let Some(e) = self.exprs.get(i as usize) else {
            out.push('?');
            return;
        };
        if depth > MAX_DEPTH {
            out.push_str("...");
            return;
        }
        let list = |this: &Self, xs: &[u32], sep: &str, out: &mut String| {
            for (k, x) in xs.iter().enumerate() {
                if k > 0 {
                    out.push_str(sep);
                }
                this.write_expr(*x, out, depth + 1);
            }
        };
        match e {
            Expr::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Expr::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Expr::Float(v) => {
                let _ = write!(out, "{v}");
            }
            Expr::Str(v) => {
                let _ = write!(out, "{v:?}");
            }
            Expr::Null => out.push_str("nullptr"),
            Expr::Name(n) => out.push_str(n),
            Expr::Not(x) => {
                out.push('!');
                self.write_expr(*x, out, depth + 1);
            }
            Expr::Neg(x) => {
                out.push('-');
                self.write_expr(*x, out, depth + 1);
            }
            Expr::Bin(op, l, r) => {
                out.push('(');
                self.write_expr(*l, out, depth + 1);
                let _ = write!(out, " {} ", op.as_str());
                self.write_expr(*r, out, depth + 1);
                out.push(')');
            }
            Expr::All(xs) => {
                out.push('(');
                list(self, xs, " && ", out);
                out.push(')');
            }
            Expr::Any(xs) => {
                out.push('(');
                list(self, xs, " || ", out);
                out.push(')');
            }
            Expr::Call(f, args) => {
                out.push_str(f);
                out.push('(');
                list(self, args, ", ", out);
                out.push(')');
            }
            Expr::Method(recv, name, args) => {
                self.write_expr(*recv, out, depth + 1);
                let _ = write!(out, ".{name}(");
                list(self, args, ", ", out);
                out.push(')');
            }
            Expr::Opaque(text) => out.push_str(text),
        }
    }
}

fn operands(e: &Expr) -> Vec<u32> {
    match e {
        Expr::Not(x) | Expr::Neg(x) => vec![*x],
        Expr::Bin(_, l, r) => vec![*l, *r],
        Expr::All(xs) | Expr::Any(xs) | Expr::Call(_, xs) => xs.clone(),
        Expr::Method(recv, _, args) => std::iter::once(*recv).chain(args.iter().copied()).collect(),
        _ => Vec::new(),
    }
}

/// How deep calls between a file's functions may nest.
const MAX_CALLS: usize = 32;

/// How many results of calls that ran kernels one function may test (each
/// doubles the work: the function is decided once per sign).
const MAX_FORKS: usize = 8;

/// Control flow out of a statement list.
enum Flow<'a> {
    Next,
    Done(Decision<'a>),
    /// A call ran kernels and no sign is assumed yet for its result: the
    /// function is decided again for each.
    Fork,
}

/// A local's value.
#[derive(Clone)]
enum Local {
    /// An expression of the rules, read where it is used.
    Expr(u32),
    /// Not known to the rules: asked of the env.
    Env,
    /// A value already known (the result of a call).
    Value(Value),
}

/// One function being decided.
struct Frame<'a> {
    function: &'a Function,
    /// The caller's arguments (in the caller's frame); none for the
    /// function the decision started with.
    args: &'a [u32],
    locals: Vec<(&'a str, Local)>,
    /// The sign assumed for each result of a call that ran kernels, in the
    /// order they are met: `true` not negative.
    assumed: Vec<bool>,
    /// How many such results were met so far.
    forks: usize,
    /// What ran, when a call's result was assumed not negative: the
    /// decision once the function returns.
    ran: Option<Decision<'a>>,
}

struct Eval<'a, 'e> {
    rules: &'a RulesFile,
    env: &'e dyn Env,
    frames: Vec<Frame<'a>>,
    /// The frame names are read in.
    cur: usize,
}

impl<'a> Eval<'a, '_> {
    /// Decides `f` called with `args` (expressions of the current frame).
    fn call(&mut self, f: &'a Function, args: &'a [u32]) -> Result<Decision<'a>, String> {
        if self.frames.len() >= MAX_CALLS {
            return Err(format!(
                "calls nest more than {MAX_CALLS} deep (at `{}`)",
                f.name
            ));
        }
        self.run(f, args, Vec::new())
    }

    /// Decides `f` with the signs `assumed` for the results of its calls
    /// that run kernels.
    fn run(
        &mut self,
        f: &'a Function,
        args: &'a [u32],
        assumed: Vec<bool>,
    ) -> Result<Decision<'a>, String> {
        let depth = assumed.len();
        self.frames.push(Frame {
            function: f,
            args,
            locals: Vec::new(),
            assumed,
            forks: 0,
            ran: None,
        });
        let saved = self.cur;
        self.cur = self.frames.len() - 1;
        let flow = self.block(&f.body);
        self.cur = saved;
        let frame = self.frames.pop();
        let (assumed, ran) = frame.map(|f| (f.assumed, f.ran)).unwrap_or_default();
        match flow? {
            Flow::Done(d) => Ok(d),
            Flow::Next => Ok(ran.unwrap_or(Decision::End)),
            Flow::Fork => {
                if depth >= MAX_FORKS {
                    return Err(format!(
                        "`{}` tests the results of more than {MAX_FORKS} calls",
                        f.name
                    ));
                }
                let mut ok = assumed.clone();
                ok.push(true);
                let first = self.run(f, args, ok)?;
                let mut failed = assumed;
                failed.push(false);
                let otherwise = self.run(f, args, failed)?;
                Ok(if otherwise.candidates().is_empty() {
                    first
                } else {
                    Decision::Fallback {
                        first: Box::new(first),
                        otherwise: Box::new(otherwise),
                    }
                })
            }
        }
    }

    fn frame(&mut self) -> &mut Frame<'a> {
        let cur = self.cur;
        &mut self.frames[cur]
    }

    fn block(&mut self, body: &'a [Stmt]) -> Result<Flow<'a>, String> {
        let scope = self.frame().locals.len();
        let flow = self.block_inner(body);
        self.frame().locals.truncate(scope);
        flow
    }

    /// An error when kernels already ran in this function: the rules say
    /// which kernels one call runs, not a sequence of them.
    fn nothing_ran(&mut self, line: u32) -> Result<(), String> {
        if self.frame().ran.is_some() {
            return Err(format!(
                "line {line}: calls kernels after a call that ran kernels returned"
            ));
        }
        Ok(())
    }

    fn block_inner(&mut self, body: &'a [Stmt]) -> Result<Flow<'a>, String> {
        for s in body {
            match s {
                Stmt::If { arms, otherwise } => {
                    let mut taken = None;
                    for a in arms {
                        let v = self.expr(a.cond, 0)?;
                        if truth(&v).map_err(|why| {
                            format!("condition `{}`: {why}", self.rules.show(a.cond))
                        })? {
                            taken = Some(&a.body);
                            break;
                        }
                    }
                    match self.block(taken.unwrap_or(otherwise))? {
                        Flow::Next => {}
                        flow => return Ok(flow),
                    }
                }
                Stmt::Let { name, value } => {
                    let local = value.map_or(Local::Env, Local::Expr);
                    self.frame().locals.push((name, local));
                }
                Stmt::Call { line, blobs } => {
                    self.nothing_ran(*line)?;
                    let blobs = blobs
                        .iter()
                        .filter_map(|&b| self.rules.blobs.get(b as usize).map(String::as_str))
                        .collect();
                    return Ok(Flow::Done(Decision::Blobs { line: *line, blobs }));
                }
                Stmt::Invoke {
                    line,
                    function,
                    args,
                    result,
                    returns,
                } => {
                    let callee = self
                        .rules
                        .function(function)
                        .ok_or_else(|| format!("line {line}: no function `{function}`"))?;
                    let d = self
                        .call(callee, args)
                        .map_err(|why| format!("line {line}: in `{function}`: {why}"))?;
                    let ran = !d.candidates().is_empty();
                    if ran {
                        self.nothing_ran(*line)?;
                    }
                    if *returns {
                        return Ok(Flow::Done(d));
                    }
                    let value = if ran {
                        let frame = self.frame();
                        let k = frame.forks;
                        frame.forks += 1;
                        match frame.assumed.get(k) {
                            None => return Ok(Flow::Fork),
                            Some(true) => {
                                frame.ran = Some(d);
                                Value::Ran
                            }
                            Some(false) => Value::Int(-1),
                        }
                    } else {
                        // CK's "no kernel" (`return -1;`, `float r = -1;
                        // ... return r;`).
                        Value::Int(-1)
                    };
                    if let Some(name) = result {
                        self.frame().locals.push((name, Local::Value(value)));
                    }
                }
                Stmt::Return { line } => {
                    let ran = self.frame().ran.take();
                    return Ok(Flow::Done(ran.unwrap_or(Decision::NoBlob { line: *line })));
                }
                Stmt::Unsupported { line, what } => {
                    return Err(format!("line {line}: cannot follow {what}"))
                }
            }
        }
        Ok(Flow::Next)
    }

    fn expr(&mut self, i: u32, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("expression nests too deeply".into());
        }
        let e = self
            .rules
            .exprs
            .get(i as usize)
            .ok_or_else(|| format!("expression {i} out of range"))?;
        let d = depth + 1;
        Ok(match e {
            Expr::Bool(b) => Value::Bool(*b),
            Expr::Int(v) => Value::Int(*v),
            Expr::Float(v) => Value::Float(*v),
            Expr::Str(s) => Value::Str(s.clone()),
            Expr::Null => Value::Null,
            Expr::Name(n) => self.name(n, d)?,
            Expr::Not(x) => {
                let v = self.expr(*x, d)?;
                Value::Bool(!truth(&v)?)
            }
            Expr::Neg(x) => match self.expr(*x, d)? {
                Value::Int(v) => Value::Int(v.checked_neg().ok_or("integer overflow")?),
                Value::Float(v) => Value::Float(-v),
                v => return Err(format!("cannot negate {v}")),
            },
            Expr::Bin(op, l, r) => {
                let (l, r) = (self.expr(*l, d)?, self.expr(*r, d)?);
                binary(*op, &l, &r)?
            }
            Expr::All(xs) => {
                for x in xs {
                    let v = self.expr(*x, d)?;
                    if !truth(&v).map_err(|why| format!("`{}`: {why}", self.rules.show(*x)))? {
                        return Ok(Value::Bool(false));
                    }
                }
                Value::Bool(true)
            }
            Expr::Any(xs) => {
                for x in xs {
                    let v = self.expr(*x, d)?;
                    if truth(&v).map_err(|why| format!("`{}`: {why}", self.rules.show(*x)))? {
                        return Ok(Value::Bool(true));
                    }
                }
                Value::Bool(false)
            }
            Expr::Call(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.expr(*a, d)?);
                }
                self.env
                    .call(f, &vals)
                    .ok_or_else(|| format!("needs the result of `{}`", self.rules.show(i)))?
            }
            Expr::Method(recv, name, args) => {
                let r = self.expr(*recv, d)?;
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.expr(*a, d)?);
                }
                method(&r, name, &vals).map_err(|why| format!("`{}`: {why}", self.rules.show(i)))?
            }
            Expr::Opaque(text) => return Err(format!("cannot evaluate `{text}`")),
        })
    }

    fn name(&mut self, n: &str, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("names refer to each other too deeply".into());
        }
        let frame = &self.frames[self.cur];
        let local = frame
            .locals
            .iter()
            .rev()
            .find(|(l, _)| *l == n)
            .map(|(_, v)| v.clone());
        match local {
            Some(Local::Expr(v)) => return self.expr(v, depth),
            Some(Local::Value(v)) => return Ok(v),
            Some(Local::Env) | None => {}
        }
        // A parameter of a called function: the caller's argument, read in
        // the caller's frame (`t.hdim_q` of `fmha_fwd_v2(t, ...)` called as
        // `fmha_fwd_v2(traits, ...)` is the caller's `traits.hdim_q`).
        if self.cur > 0 {
            let (root, rest) = n.find('.').map_or((n, ""), |k| n.split_at(k));
            if let Some(k) = frame.function.params.iter().position(|p| p == root) {
                let callee = frame.function.name.clone();
                let arg = *frame
                    .args
                    .get(k)
                    .ok_or_else(|| format!("`{callee}` is called without its `{root}`"))?;
                let saved = self.cur;
                self.cur -= 1;
                let v = match self.rules.exprs.get(arg as usize) {
                    Some(Expr::Name(m)) => {
                        let m = format!("{m}{rest}");
                        self.name(&m, depth + 1)
                    }
                    _ if rest.is_empty() => self.expr(arg, depth + 1),
                    _ => Err(format!(
                        "`{n}`: `{callee}` is called with `{}` for `{root}`",
                        self.rules.show(arg)
                    )),
                };
                self.cur = saved;
                return v;
            }
        }
        if let Some(v) = self.env.value(n) {
            return Ok(v);
        }
        if n.contains("::") {
            return Ok(Value::Enum(n.to_string()));
        }
        Err(format!("needs the value of `{n}`"))
    }
}

/// A condition's truth, as C++ converts to `bool`.
fn truth(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Int(i) => Ok(*i != 0),
        Value::Float(x) => Ok(*x != 0.0),
        Value::Null => Ok(false),
        Value::Ptr => Ok(true),
        Value::Str(_) | Value::Enum(_) => Err(format!("{v} is not a condition")),
        Value::Ran => Err(ran_unknown()),
    }
}

fn ran_unknown() -> String {
    "what a kernel returns is known only when it runs, beyond its sign".into()
}

/// `x OP c` where `x` is what kernels returned (not negative, unknown
/// beyond that) and `c` a number: decided where the sign decides it.
fn ran_vs(op: BinOp, c: f64) -> Option<bool> {
    use BinOp::*;
    match op {
        Ge | Gt if c < 0.0 => Some(true),
        Ge if c == 0.0 => Some(true),
        Lt | Le if c < 0.0 => Some(false),
        Lt if c == 0.0 => Some(false),
        Eq if c < 0.0 => Some(false),
        Ne if c < 0.0 => Some(true),
        _ => None,
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) => Some(*x),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn binary(op: BinOp, l: &Value, r: &Value) -> Result<Value, String> {
    use BinOp::*;
    let mismatch = || format!("cannot apply `{}` to {l} and {r}", op.as_str());
    let flipped = |op: BinOp| match op {
        Lt => Gt,
        Le => Ge,
        Gt => Lt,
        Ge => Le,
        op => op,
    };
    match (l, r) {
        (Value::Ran, other) => {
            let c = number(other).ok_or_else(mismatch)?;
            return ran_vs(op, c).map(Value::Bool).ok_or_else(ran_unknown);
        }
        (other, Value::Ran) => {
            let c = number(other).ok_or_else(mismatch)?;
            return ran_vs(flipped(op), c)
                .map(Value::Bool)
                .ok_or_else(ran_unknown);
        }
        _ => {}
    }
    if matches!(op, Eq | Ne) {
        let eq = match (l, r) {
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Enum(a), Value::Enum(b)) => a == b,
            (Value::Null | Value::Ptr, Value::Null | Value::Ptr) => {
                matches!(l, Value::Null) == matches!(r, Value::Null)
            }
            (Value::Bool(a), Value::Bool(b)) => a == b,
            _ => match (integer(l), integer(r)) {
                (Some(a), Some(b)) => a == b,
                _ => match (number(l), number(r)) {
                    (Some(a), Some(b)) => a == b,
                    _ => return Err(mismatch()),
                },
            },
        };
        return Ok(Value::Bool(eq == (op == Eq)));
    }
    if let (Some(a), Some(b)) = (integer(l), integer(r)) {
        let overflow = || "integer overflow".to_string();
        return Ok(match op {
            Mul => Value::Int(a.checked_mul(b).ok_or_else(overflow)?),
            Add => Value::Int(a.checked_add(b).ok_or_else(overflow)?),
            Sub => Value::Int(a.checked_sub(b).ok_or_else(overflow)?),
            Div | Rem if b == 0 => return Err(format!("division by zero ({l} {} 0)", op.as_str())),
            Div => Value::Int(a.checked_div(b).ok_or_else(overflow)?),
            Rem => Value::Int(a.checked_rem(b).ok_or_else(overflow)?),
            Lt => Value::Bool(a < b),
            Le => Value::Bool(a <= b),
            Gt => Value::Bool(a > b),
            Ge => Value::Bool(a >= b),
            Eq | Ne => unreachable!("decided above"),
        });
    }
    let (Some(a), Some(b)) = (number(l), number(r)) else {
        return Err(mismatch());
    };
    Ok(match op {
        Mul => Value::Float(a * b),
        Add => Value::Float(a + b),
        Sub => Value::Float(a - b),
        Div => Value::Float(a / b),
        Rem => return Err(mismatch()),
        Lt => Value::Bool(a < b),
        Le => Value::Bool(a <= b),
        Gt => Value::Bool(a > b),
        Ge => Value::Bool(a >= b),
        Eq | Ne => unreachable!("decided above"),
    })
}

/// `std::string::compare`, the only method CK's conditions call: with one
/// argument, and as `compare(pos, len, str)`.
fn method(recv: &Value, name: &str, args: &[Value]) -> Result<Value, String> {
    let Value::Str(s) = recv else {
        return Err(format!("{recv} has no method `{name}`"));
    };
    if name != "compare" {
        return Err(format!("unknown method `{name}` of a string"));
    }
    let ord = match args {
        [Value::Str(other)] => s.as_str().cmp(other.as_str()),
        [Value::Int(pos), Value::Int(len), Value::Str(other)] => {
            let pos = usize::try_from(*pos).map_err(|_| "negative position")?;
            if pos > s.len() {
                return Err(format!("position {pos} past the end of {recv}"));
            }
            let len = usize::try_from(*len).unwrap_or(usize::MAX);
            let end = pos.saturating_add(len).min(s.len());
            let part = s.get(pos..end).ok_or("not at a character boundary")?;
            part.cmp(other.as_str())
        }
        _ => return Err("`compare` with arguments other than (str) or (pos, len, str)".into()),
    };
    Ok(Value::Int(ord as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Map(BTreeMap<&'static str, Value>);

    impl Env for Map {
        fn value(&self, name: &str) -> Option<Value> {
            self.0.get(name).cloned()
        }
        fn call(&self, f: &str, args: &[Value]) -> Option<Value> {
            match (f, args) {
                ("ck_tile::get_device_name", []) => Some(Value::Str("gfx942".into())),
                ("blocks", [Value::Int(m)]) => Some(Value::Int(1000 / m)),
                _ => None,
            }
        }
    }

    /// `if (dev.compare(0,4,"gfx9")==0) { if (t.h <= 64 && a.s % 64 == 0) call b0;
    /// else if (blocks(128) < cus * rate) call b1; else return; } call b2`.
    fn sample() -> RulesFile {
        use Expr::*;
        let exprs = vec![
            Name("device_name".into()),                      // 0
            Int(0),                                          // 1
            Int(4),                                          // 2
            Str("gfx9".into()),                              // 3
            Method(0, "compare".into(), vec![1, 2, 3]),      // 4
            Bin(BinOp::Eq, 4, 1),                            // 5
            Name("t.h".into()),                              // 6
            Int(64),                                         // 7
            Bin(BinOp::Le, 6, 7),                            // 8
            Name("a.s".into()),                              // 9
            Bin(BinOp::Rem, 9, 7),                           // 10
            Bin(BinOp::Eq, 10, 1),                           // 11
            All(vec![8, 11]),                                // 12
            Int(128),                                        // 13
            Call("blocks".into(), vec![13]),                 // 14
            Name("cus".into()),                              // 15
            Name("rate".into()),                             // 16
            Bin(BinOp::Mul, 15, 16),                         // 17
            Bin(BinOp::Lt, 14, 17),                          // 18
            Call("ck_tile::get_device_name".into(), vec![]), // 19
            Float(0.8),                                      // 20
        ];
        let body = vec![
            Stmt::Let {
                name: "device_name".into(),
                value: Some(19),
            },
            Stmt::Let {
                name: "rate".into(),
                value: Some(20),
            },
            Stmt::If {
                arms: vec![Arm {
                    cond: 5,
                    body: vec![Stmt::If {
                        arms: vec![
                            Arm {
                                cond: 12,
                                body: vec![Stmt::Call {
                                    line: 3,
                                    blobs: vec![0],
                                }],
                            },
                            Arm {
                                cond: 18,
                                body: vec![Stmt::Call {
                                    line: 4,
                                    blobs: vec![1, 0],
                                }],
                            },
                        ],
                        otherwise: vec![Stmt::Return { line: 5 }],
                    }],
                }],
                otherwise: vec![],
            },
            Stmt::Call {
                line: 7,
                blobs: vec![2],
            },
        ];
        RulesFile {
            format: RULES_FORMAT,
            file: "api.cpp".into(),
            blobs: vec!["b0".into(), "b1".into(), "b2".into()],
            exprs,
            functions: vec![Function {
                name: "f".into(),
                line: 1,
                params: Vec::new(),
                body,
            }],
        }
    }

    fn env(pairs: &[(&'static str, Value)]) -> Map {
        Map(pairs.iter().cloned().collect())
    }

    #[test]
    fn a_decision_follows_the_first_arm_that_holds() {
        let r = RulesFile::parse(&sample().to_json()).unwrap();
        let e = env(&[
            ("t.h", Value::Int(64)),
            ("a.s", Value::Int(128)),
            ("cus", Value::Int(100)),
        ]);
        assert_eq!(r.decide("f", &e).unwrap().blobs(), ["b0"]);
        // Not a multiple of 64: the second arm, 1000/128 = 7 < 80.
        let e = env(&[
            ("t.h", Value::Int(64)),
            ("a.s", Value::Int(100)),
            ("cus", Value::Int(100)),
        ]);
        assert_eq!(
            r.decide("f", &e).unwrap(),
            Decision::Blobs {
                line: 4,
                blobs: vec!["b1", "b0"]
            }
        );
        // Neither: the else returns without a blob.
        let e = env(&[
            ("t.h", Value::Int(128)),
            ("a.s", Value::Int(128)),
            ("cus", Value::Int(1)),
        ]);
        assert_eq!(r.decide("f", &e).unwrap(), Decision::NoBlob { line: 5 });
    }

    #[test]
    fn what_a_decision_needs_and_lacks_is_named() {
        let r = sample();
        let e = env(&[("t.h", Value::Int(64))]);
        let err = r.decide("f", &e).unwrap_err().to_string();
        assert!(err.contains("needs the value of `a.s`"), "{err}");
        // Short-circuit: `t.h <= 64` false, `a.s` is never read, `cus` is.
        let e = env(&[("t.h", Value::Int(128)), ("a.s", Value::Str("x".into()))]);
        let err = r.decide("f", &e).unwrap_err().to_string();
        assert!(err.contains("`cus`"), "{err}");
        let err = r.decide("g", &e).unwrap_err().to_string();
        assert!(err.contains("no such function (the file has: f)"), "{err}");
        let e = env(&[("t.h", Value::Int(1)), ("a.s", Value::Str("x".into()))]);
        let err = r.decide("f", &e).unwrap_err().to_string();
        assert!(err.contains("cannot apply `%`"), "{err}");
    }

    #[test]
    fn values_compare_as_cpp_compares_them() {
        let eq = |l: Value, r: Value| binary(BinOp::Eq, &l, &r).unwrap();
        assert_eq!(eq(Value::Null, Value::Null), Value::Bool(true));
        assert_eq!(eq(Value::Ptr, Value::Null), Value::Bool(false));
        assert_eq!(eq(Value::Bool(true), Value::Int(1)), Value::Bool(true));
        assert_eq!(eq(Value::Int(2), Value::Float(2.0)), Value::Bool(true));
        assert_eq!(
            eq(
                Value::Enum("mask_enum::no_mask".into()),
                Value::Enum("mask_enum::no_mask".into())
            ),
            Value::Bool(true)
        );
        assert!(binary(BinOp::Eq, &Value::Enum("e::a".into()), &Value::Int(0)).is_err());
        assert!(binary(BinOp::Rem, &Value::Int(3), &Value::Int(0)).is_err());
        let s = Value::Str("gfx950".into());
        let cmp = |args: &[Value]| method(&s, "compare", args).unwrap();
        assert_eq!(
            cmp(&[Value::Int(0), Value::Int(4), Value::Str("gfx9".into())]),
            Value::Int(0)
        );
        assert_eq!(cmp(&[Value::Str("gfx950".into())]), Value::Int(0));
        assert_ne!(cmp(&[Value::Str("gfx9".into())]), Value::Int(0));
        assert!(method(
            &s,
            "compare",
            &[Value::Int(9), Value::Int(1), Value::Str("".into())]
        )
        .is_err());
    }

    #[test]
    fn what_kernels_return_is_compared_by_its_sign_only() {
        let cmp = |op, l: Value, r: Value| binary(op, &l, &r);
        assert_eq!(
            cmp(BinOp::Ge, Value::Ran, Value::Int(0)),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            cmp(BinOp::Lt, Value::Ran, Value::Int(0)),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            cmp(BinOp::Ne, Value::Ran, Value::Int(-1)),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            cmp(BinOp::Gt, Value::Int(0), Value::Ran),
            Ok(Value::Bool(false))
        );
        // A timed kernel returns more than 0, an untimed one 0.
        assert!(cmp(BinOp::Gt, Value::Ran, Value::Int(0)).is_err());
        assert!(cmp(BinOp::Eq, Value::Ran, Value::Float(0.0)).is_err());
        assert!(truth(&Value::Ran).is_err());
    }

    #[test]
    fn a_fallback_lists_what_is_tried_in_order() {
        let d = Decision::Fallback {
            first: Box::new(Decision::Blobs {
                line: 1,
                blobs: vec!["v3"],
            }),
            otherwise: Box::new(Decision::Blobs {
                line: 2,
                blobs: vec!["v2a", "v2b"],
            }),
        };
        assert_eq!(d.blobs(), ["v3"]);
        assert_eq!(d.candidates(), [&["v3"][..], &["v2a", "v2b"][..]]);
        assert!(Decision::NoBlob { line: 3 }.candidates().is_empty());
    }

    #[test]
    fn malformed_rules_are_refused() {
        let mut r = sample();
        r.exprs.push(Expr::Not(99));
        assert!(RulesFile::parse(&r.to_json())
            .unwrap_err()
            .to_string()
            .contains("not an earlier one"));
        let mut r = sample();
        r.functions[0].body.push(Stmt::Call {
            line: 1,
            blobs: vec![7],
        });
        assert!(RulesFile::parse(&r.to_json())
            .unwrap_err()
            .to_string()
            .contains("blob 7 out of range"));
        let mut r = sample();
        r.functions[0].body.push(Stmt::Invoke {
            line: 1,
            function: "g".into(),
            args: Vec::new(),
            result: None,
            returns: true,
        });
        assert!(RulesFile::parse(&r.to_json())
            .unwrap_err()
            .to_string()
            .contains("calls `g`, which the rules do not have"));
        let mut r = sample();
        r.format = RULES_FORMAT + 1;
        assert!(RulesFile::parse(&r.to_json())
            .unwrap_err()
            .to_string()
            .contains("format"));
        assert!(RulesFile::parse("{").is_err());
        // A deep chain of `!` is refused, not evaluated recursively.
        let mut r = sample();
        for _ in 0..MAX_DEPTH + 5 {
            let prev = r.exprs.len() as u32 - 1;
            r.exprs.push(Expr::Not(prev));
        }
        assert!(RulesFile::parse(&r.to_json())
            .unwrap_err()
            .to_string()
            .contains("nests too deeply"));
    }
}
