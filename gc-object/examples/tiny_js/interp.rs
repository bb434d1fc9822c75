//! The evaluator, its rooting discipline (a `Context` and handle scopes) and the natives.

use crate::parse::{Expr, FuncDef, Stmt};
use gc_object::{Error, Heap, Key, Local, Mutator, Pacing, PropertyKey, Root, Scope, Value};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A clock of this thread's CPU time where the system has one (`CLOCK_THREAD_CPUTIME_ID`),
/// else the wall clock: on a machine shared with other busy processes, wall time mostly
/// measures the others.
pub fn cpu_clock() -> Duration {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; the clock id is a constant the C
        // library knows.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return Duration::new(t.tv_sec as u64, t.tv_nsec as u32);
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// Why evaluation stopped early: a JS exception (uncatchable here). A `return` is the
/// `Some` of a statement's result. (Boxed: a result then fits two registers.)
struct Throw(Box<str>);

impl From<Error> for Throw {
    fn from(e: Error) -> Throw {
        Throw(e.to_string().into())
    }
}

type R<T> = Result<T, Throw>;

fn throw<T>(msg: String) -> R<T> {
    Err(Throw(msg.into()))
}

/// When the evaluator collects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gc {
    /// Before every statement (finds any value the evaluator forgot to keep in a handle).
    EveryStatement,
    /// When the heap's pacing says a collection is due (checked before every statement).
    Paced(Pacing),
}

/// Roots `v` in scope `s` (a handle of `s`).
#[inline(always)]
fn hold<'s>(s: &Scope<'s>, v: Value<'_>) -> R<Local<'s>> {
    Ok(s.root(v)?)
}

fn number_text(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        (if n > 0.0 { "Infinity" } else { "-Infinity" }).into()
    } else if n == n.trunc() && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// JS `String(v)` (arrays join their elements with ",", as JS does).
fn to_text(v: Value<'_>) -> Result<String, Error> {
    if let Some(s) = v.as_str() {
        return Ok(s.to_string());
    }
    if let Some(n) = v.as_number() {
        return Ok(number_text(n));
    }
    if let Some(b) = v.as_bool() {
        return Ok(b.to_string());
    }
    if v.is_null() {
        return Ok("null".into());
    }
    if v.is_undefined() {
        return Ok("undefined".into());
    }
    if let Some(s) = v.as_symbol() {
        let d = s.description().map_or("", Key::as_str);
        return Ok(format!("Symbol({d})"));
    }
    let o = v.as_object().ok_or(Error::WrongKind)?;
    if let Some(len) = o.array_length()? {
        let mut parts = Vec::new();
        for i in 0..len {
            let e = o.get(i)?;
            parts.push(if e.is_undefined() || e.is_null() {
                String::new()
            } else {
                to_text(e)?
            });
        }
        return Ok(parts.join(","));
    }
    Ok(if o.is_function() {
        "function"
    } else {
        "[object Object]"
    }
    .into())
}

fn truthy(v: Value<'_>) -> bool {
    if let Some(b) = v.as_bool() {
        b
    } else if let Some(n) = v.as_number() {
        n != 0.0 && !n.is_nan()
    } else if let Some(s) = v.as_str() {
        !s.is_empty()
    } else {
        !v.is_undefined() && !v.is_null()
    }
}

/// A value used as a property key (JS ToPropertyKey).
fn key_of(v: Value<'_>) -> Result<PropertyKey, Error> {
    if let Some(s) = v.as_symbol() {
        return Ok(s.key());
    }
    if let Some(i) = v.as_u32().filter(|&i| i <= gc_object::MAX_ARRAY_INDEX) {
        return Ok(PropertyKey::Index(i));
    }
    if let Some(k) = v.as_string() {
        return Ok(PropertyKey::from(k)); // `o.name`: already interned
    }
    // Text keys are interned: a computed key built from a string value lives for the
    // process, and past the bound on names the program gets an error, not a panic.
    PropertyKey::try_parse(&to_text(v)?).ok_or(Error::Unsupported("too many property names"))
}

// ---------------------------------------------------------------- the interpreter

struct Interp {
    funcs: Vec<Rc<FuncDef>>,
    /// Hidden slots of a JS function object: which `FuncDef`, and the scope it closes over.
    /// Symbol keys, so no program can name them.
    code_key: PropertyKey,
    scope_key: PropertyKey,
    /// `this`, a binding of every call scope (interned once: `Key::new` is a table lookup).
    this_key: Key,
    gc: Gc,
    collections: u64,
    freed: u64,
    marked: u64,
    gc_time: Duration,
    /// The most bytes the heap held just before a collection, and the most a collection
    /// left live.
    peak_bytes: usize,
    max_live: u64,
    depth: usize,
}

const MAX_DEPTH: usize = 200;

impl Interp {
    /// Where collections run: before every statement, when nothing but handles refer to
    /// the heap (the borrow checker sees to that: `s` is borrowed mutably).
    fn safepoint(&mut self, s: &mut Scope<'_>) {
        let due = match self.gc {
            Gc::EveryStatement => true,
            Gc::Paced(_) => s.is_collection_due(),
        };
        if !due {
            return;
        }
        let before = s.mutator().heap().stats().heap_bytes;
        let start = cpu_clock();
        let st = s
            .collect()
            .expect("the evaluator's scopes belong to a context");
        self.gc_time += cpu_clock().saturating_sub(start);
        self.collections += 1;
        self.freed += st.freed;
        self.marked += st.marked;
        self.peak_bytes = self.peak_bytes.max(before);
        self.max_live = self.max_live.max(st.live_bytes);
    }

    /// Runs statements, each in a scope of its own (its temporaries go when it ends); a
    /// `return`'s value is handed out to `s`.
    fn exec_list<'s>(
        &mut self,
        s: &mut Scope<'s>,
        env: Local<'s>,
        body: &[Stmt],
    ) -> R<Option<Local<'s>>> {
        for stmt in body {
            self.safepoint(s);
            let mut t = s.escape_scope();
            if let Some(v) = self.exec(&mut t, env, stmt)? {
                return Ok(Some(t.escape(v)?));
            }
        }
        Ok(None)
    }

    /// A block: a scope object whose prototype is the enclosing one.
    fn run_block<'s>(
        &mut self,
        s: &mut Scope<'s>,
        env: Local<'s>,
        body: &[Stmt],
    ) -> R<Option<Local<'s>>> {
        let inner = {
            let o = s.mutator().object_with_proto(s.get(env).as_object())?;
            hold(s, o.value())?
        };
        self.exec_list(s, inner, body)
    }

    /// One statement; `Some` is a `return`'s value.
    fn exec<'s>(&mut self, s: &mut Scope<'s>, env: Local<'s>, st: &Stmt) -> R<Option<Local<'s>>> {
        match st {
            Stmt::Let(name, init) => {
                let v = self.eval(s, env, init)?;
                scope_object(s, env).set(*name, s.get(v))?;
            }
            Stmt::Expr(e) => {
                self.eval(s, env, e)?;
            }
            Stmt::If(c, then, otherwise) => {
                let c = self.eval(s, env, c)?;
                let body = if truthy(s.get(c)) { then } else { otherwise };
                return self.run_block(s, env, body);
            }
            Stmt::While(cond, body) => loop {
                // Each round in a scope of its own, so a long loop keeps no handles.
                let mut t = s.escape_scope();
                let c = self.eval(&mut t, env, cond)?;
                if !truthy(t.get(c)) {
                    break;
                }
                if let Some(v) = self.run_block(&mut t, env, body)? {
                    return Ok(Some(t.escape(v)?));
                }
                drop(t);
                self.safepoint(s);
            },
            Stmt::Return(e) => {
                return Ok(Some(match e {
                    Some(e) => self.eval(s, env, e)?,
                    None => hold(s, Value::UNDEFINED)?,
                }));
            }
            Stmt::Block(body) => return self.run_block(s, env, body),
        }
        Ok(None)
    }

    /// The scope object that holds `name` (the innermost one), walking the scope chain.
    fn find_scope<'h>(scope: Value<'h>, name: Key) -> R<gc_object::Obj<'h>> {
        let mut cur = scope.as_object();
        while let Some(o) = cur {
            if o.has_own(name)? {
                return Ok(o);
            }
            cur = o.prototype()?;
        }
        throw(format!("ReferenceError: {} is not defined", name.as_str()))
    }

    fn eval<'s>(&mut self, s: &mut Scope<'s>, env: Local<'s>, e: &Expr) -> R<Local<'s>> {
        Ok(match e {
            Expr::Num(n) => hold(s, Value::number(*n))?,
            Expr::Bool(b) => hold(s, Value::bool(*b))?,
            Expr::Null => hold(s, Value::NULL)?,
            Expr::Undefined => hold(s, Value::UNDEFINED)?,
            Expr::Name(k) => hold(s, Value::string(*k))?,
            Expr::Str(text) => hold(s, s.mutator().string(text)?.value())?,
            Expr::This => self.lookup(s, env, self.this_key)?,
            Expr::Var(name) => self.lookup(s, env, *name)?,
            Expr::Array(items) => {
                let arr = hold(s, s.mutator().array()?.value())?;
                for item in items {
                    let v = self.eval(s, env, item)?;
                    scope_object(s, arr).push(s.get(v))?;
                }
                arr
            }
            Expr::Object(props) => {
                let obj = hold(s, s.mutator().object()?.value())?;
                for (k, v) in props {
                    let k = self.eval(s, env, k)?;
                    let v = self.eval(s, env, v)?;
                    let key = key_of(s.get(k))?;
                    s.mutator().set(scope_object(s, obj), key, s.get(v))?;
                }
                obj
            }
            Expr::Func(i) => {
                let f = s.mutator().object()?;
                f.set(self.code_key, Value::from(*i as u32))?;
                f.set(self.scope_key, s.get(env))?;
                hold(s, f.value())?
            }
            Expr::Member(o, k) => {
                let o = self.eval(s, env, o)?;
                let k = self.eval(s, env, k)?;
                hold(s, get_property(s.mutator(), s.get(o), s.get(k))?)?
            }
            Expr::Assign(target, v) => self.assign(s, env, target, v)?,
            Expr::Call(callee, args) => {
                let (this, f) = match &**callee {
                    Expr::Member(o, k) => {
                        let o = self.eval(s, env, o)?;
                        let k = self.eval(s, env, k)?;
                        let f = hold(s, get_property(s.mutator(), s.get(o), s.get(k))?)?;
                        (o, f)
                    }
                    other => (hold(s, Value::UNDEFINED)?, self.eval(s, env, other)?),
                };
                self.call(s, env, f, this, args)?
            }
            Expr::Not(x) => {
                let v = self.eval(s, env, x)?;
                hold(s, Value::bool(!truthy(s.get(v))))?
            }
            Expr::TypeOf(x) => {
                let v = self.eval(s, env, x)?;
                let v = s.get(v);
                // The interpreter's own functions are plain objects to the crate.
                let t = match v.as_object() {
                    Some(o) if o.has_own(self.code_key)? => "function",
                    _ => v.type_of(),
                };
                hold(s, Value::string(Key::new(t)))?
            }
            Expr::Neg(x) => {
                let v = self.eval(s, env, x)?;
                hold(s, Value::number(-number(s.get(v))?))?
            }
            Expr::Bin(op @ ("&&" | "||"), a, b) => {
                let a = self.eval(s, env, a)?;
                if truthy(s.get(a)) == (*op == "&&") {
                    self.eval(s, env, b)?
                } else {
                    a
                }
            }
            Expr::Bin(op, a, b) => {
                let a = self.eval(s, env, a)?;
                let b = self.eval(s, env, b)?;
                hold(s, binary(s.mutator(), op, s.get(a), s.get(b))?)?
            }
        })
    }

    fn lookup<'s>(&mut self, s: &mut Scope<'s>, env: Local<'s>, name: Key) -> R<Local<'s>> {
        let v = Interp::find_scope(s.get(env), name)?.get(name)?;
        hold(s, v)
    }

    fn assign<'s>(
        &mut self,
        s: &mut Scope<'s>,
        env: Local<'s>,
        target: &Expr,
        v: &Expr,
    ) -> R<Local<'s>> {
        match target {
            Expr::Var(name) => {
                let v = self.eval(s, env, v)?;
                Interp::find_scope(s.get(env), *name)?.set(*name, s.get(v))?;
                Ok(v)
            }
            Expr::Member(o, k) => {
                let o = self.eval(s, env, o)?;
                let k = self.eval(s, env, k)?;
                let v = self.eval(s, env, v)?;
                let Some(obj) = s.get(o).as_object() else {
                    return throw(format!(
                        "TypeError: cannot set a property of {}",
                        to_text(s.get(o))?
                    ));
                };
                s.mutator().set(obj, key_of(s.get(k))?, s.get(v))?;
                Ok(v)
            }
            _ => unreachable!("the parser accepts only names and members"),
        }
    }

    /// Calls `f` with the arguments `args` evaluated in `env`.
    fn call<'s>(
        &mut self,
        s: &mut Scope<'s>,
        env: Local<'s>,
        f: Local<'s>,
        this: Local<'s>,
        args: &[Expr],
    ) -> R<Local<'s>> {
        let (ck, sk) = (self.code_key, self.scope_key);
        let Some(fo) = s.get(f).as_object() else {
            return throw(format!(
                "TypeError: {} is not a function",
                to_text(s.get(f))?
            ));
        };
        if fo.has_own(ck)? {
            let def =
                Rc::clone(&self.funcs[fo.get(ck)?.as_u32().expect("a function index") as usize]);
            if self.depth == MAX_DEPTH {
                return throw("RangeError: too much recursion".into());
            }
            // The call's scope object first; each argument goes straight into it.
            let call_env = {
                let c = s.mutator().object_with_proto(fo.get(sk)?.as_object())?;
                c.set(self.this_key, s.get(this))?;
                hold(s, c.value())?
            };
            for (i, a) in args.iter().enumerate() {
                let v = self.eval(s, env, a)?;
                if let Some(p) = def.params.get(i) {
                    scope_object(s, call_env).set(*p, s.get(v))?;
                }
            }
            for p in def.params.iter().skip(args.len()) {
                scope_object(s, call_env).set(*p, Value::UNDEFINED)?;
            }
            self.depth += 1;
            let out = self.exec_list(s, call_env, &def.body);
            self.depth -= 1;
            return match out? {
                Some(v) => Ok(v),
                None => hold(s, Value::UNDEFINED),
            };
        }
        // A native function: the crate's calls take one argument, so the arguments go in an
        // array.
        let list = hold(s, s.mutator().array()?.value())?;
        for a in args {
            let v = self.eval(s, env, a)?;
            scope_object(s, list).push(s.get(v))?;
        }
        Ok(s.call(f, this, list)?)
    }
}

/// The object a handle holds (a scope object, or one the evaluator made).
fn scope_object<'a, 's>(s: &'a Scope<'s>, l: Local<'s>) -> gc_object::Obj<'a> {
    s.get(l).as_object().expect("an object")
}

fn number(v: Value<'_>) -> Result<f64, Throw> {
    if let Some(n) = v.as_number() {
        Ok(n)
    } else if let Some(b) = v.as_bool() {
        Ok(f64::from(u8::from(b)))
    } else if v.is_null() {
        Ok(0.0)
    } else if v.is_undefined() {
        Ok(f64::NAN)
    } else if let Some(s) = v.as_str() {
        Ok(s.trim().parse().unwrap_or(f64::NAN))
    } else {
        throw(format!(
            "TypeError: cannot convert {} to a number",
            to_text(v)?
        ))
    }
}

fn get_property<'h>(m: &Mutator<'h>, o: Value<'h>, k: Value<'h>) -> R<Value<'h>> {
    let key = key_of(k)?;
    if let Some(obj) = o.as_object() {
        return Ok(m.get(obj, key)?);
    }
    if let Some(s) = o.as_str() {
        return Ok(if key == PropertyKey::length() {
            Value::from(s.chars().count() as u32)
        } else {
            Value::UNDEFINED
        });
    }
    if o.is_undefined() || o.is_null() {
        return throw(format!(
            "TypeError: cannot read property of {}",
            to_text(o)?
        ));
    }
    Ok(Value::UNDEFINED)
}

fn binary<'h>(m: &Mutator<'h>, op: &str, a: Value<'h>, b: Value<'h>) -> R<Value<'h>> {
    let stringy = |v: Value<'_>| v.as_str().is_some();
    // ToPrimitive of an object is its text here (no valueOf).
    let texty = |v: Value<'_>| stringy(v) || v.as_object().is_some();
    Ok(match op {
        "+" if texty(a) || texty(b) => {
            let text = to_text(a)? + &to_text(b)?;
            m.string(&text)?.value()
        }
        "==" | "===" => Value::bool(strict_equals(a, b)),
        "!=" | "!==" => Value::bool(!strict_equals(a, b)),
        "<" | ">" | "<=" | ">=" if stringy(a) && stringy(b) => {
            let (x, y) = (a.as_str().unwrap(), b.as_str().unwrap());
            Value::bool(match op {
                "<" => x < y,
                ">" => x > y,
                "<=" => x <= y,
                _ => x >= y,
            })
        }
        _ => {
            let (x, y) = (number(a)?, number(b)?);
            match op {
                "+" => Value::number(x + y),
                "-" => Value::number(x - y),
                "*" => Value::number(x * y),
                "/" => Value::number(x / y),
                "%" => Value::number(x % y),
                "<" => Value::bool(x < y),
                ">" => Value::bool(x > y),
                "<=" => Value::bool(x <= y),
                ">=" => Value::bool(x >= y),
                _ => unreachable!("operator {op}"),
            }
        }
    })
}

/// `===`: SameValue, except that NaN is unequal to itself and +0 equals -0.
fn strict_equals(a: Value<'_>, b: Value<'_>) -> bool {
    match (a.as_number(), b.as_number()) {
        (Some(x), Some(y)) => x == y,
        _ => a.same_value(b),
    }
}

// ---------------------------------------------------------------- globals and natives

/// The first argument of a native call (arguments come as one array).
fn arg<'h>(args: Value<'h>, i: u32) -> Result<Value<'h>, Error> {
    args.as_object().ok_or(Error::WrongKind)?.get(i)
}

/// Makes the global scope: `print` (captures the host's output buffer), `counter` (its
/// count lives in a heap object, the closure's environment), `Symbol`, `freeze`, and
/// `args` (the numbers given after `--file PATH`).
fn globals(heap: &Heap, out: &Arc<Mutex<String>>, args: &[f64]) -> Result<Root, Error> {
    let m = heap.mutator();
    let g = m.object()?;
    let sink = Arc::clone(out);
    let print = m.closure(Value::UNDEFINED, move |_, _, args, _| {
        let list = args.as_object().ok_or(Error::WrongKind)?;
        let mut parts = Vec::new();
        for i in 0..list.array_length()?.unwrap_or(0) {
            parts.push(to_text(list.get(i)?)?);
        }
        let mut s = sink.lock().unwrap();
        s.push_str(&parts.join(" "));
        s.push('\n');
        Ok(Value::UNDEFINED)
    })?;
    g.set("print", print.value())?;
    let state = m.object()?;
    state.set("n", Value::from(0u32))?;
    let counter = m.closure(state.value(), |_, _, _, env| {
        let state = env.as_object().ok_or(Error::WrongKind)?;
        let n = state
            .get("n")?
            .as_number()
            .ok_or(Error::Thrown("counter state"))?
            + 1.0;
        state.set("n", Value::number(n))?;
        Ok(Value::number(n))
    })?;
    g.set("counter", counter.value())?;
    let symbol = m.closure(Value::UNDEFINED, |m, _, args, _| {
        let d = arg(args, 0)?;
        let text = if d.is_undefined() {
            None
        } else {
            Some(to_text(d)?)
        };
        Ok(m.symbol(text.as_deref())?.value())
    })?;
    g.set("Symbol", symbol.value())?;
    let freeze = m.closure(Value::UNDEFINED, |_, _, args, _| {
        let o = arg(args, 0)?;
        o.as_object()
            .ok_or(Error::Thrown("freeze of a non-object"))?
            .freeze()?;
        Ok(o)
    })?;
    g.set("freeze", freeze.value())?;
    g.set("this", Value::UNDEFINED)?;
    let list = m.array()?;
    for &a in args {
        list.push(Value::number(a))?;
    }
    g.set("args", list.value())?;
    heap.root(g)
}

/// What a program printed, the error that stopped it, and the collections during its run.
pub struct Outcome {
    pub output: String,
    pub error: Option<String>,
    pub collections: u64,
    pub freed: u64,
    /// Cells the collections marked (the work of marking).
    pub marked: u64,
    /// Time spent collecting (CPU time, see [`cpu_clock`]).
    pub gc_time: Duration,
    /// The most bytes the heap held (sampled before each collection and at the end), and
    /// the most a collection left live.
    pub peak_bytes: usize,
    pub max_live: u64,
}

/// Parses and runs `src` on a fresh heap, collecting as `gc` says; `args` is the program's
/// global `args` array. An error if the program leaves anything reachable beyond the
/// globals.
pub fn run(src: &str, gc: Gc, args: &[f64]) -> Result<Outcome, String> {
    let (program, funcs) = crate::parse::parse(src)?;
    let mut heap = Heap::new();
    if let Gc::Paced(p) = gc {
        heap.set_pacing(p);
    }
    let out = Arc::new(Mutex::new(String::new()));
    let (global, symbols) = {
        let m = heap.mutator();
        let (a, b) = (m.symbol(Some("code")), m.symbol(Some("scope")));
        let (a, b) = (a.map_err(|e| e.to_string())?, b.map_err(|e| e.to_string())?);
        let g = globals(&heap, &out, args).map_err(|e| e.to_string())?;
        let roots = [heap.root_value(a.value()), heap.root_value(b.value())];
        let [ra, rb] = roots.map(|r| r.expect("a symbol of this heap"));
        (g, ([a.key(), b.key()], [ra, rb]))
    };
    let mut it = Interp {
        funcs,
        code_key: symbols.0[0],
        scope_key: symbols.0[1],
        this_key: Key::new("this"),
        gc,
        collections: 0,
        freed: 0,
        marked: 0,
        gc_time: Duration::ZERO,
        peak_bytes: 0,
        max_live: 0,
        depth: 0,
    };
    // Everything the program makes hangs off its own scope, below the globals.
    let baseline = heap.collect().marked;
    let mut error = None;
    {
        let mut cx = heap.context();
        let mut s = cx.scope();
        let scope = {
            let g = global.get(s.mutator().heap()).expect("the global scope");
            let o = s.mutator().object_with_proto(Some(g));
            hold(&s, o.map_err(|e| e.to_string())?.value()).map_err(|e| e.0.to_string())?
        };
        for st in &program {
            it.safepoint(&mut s);
            let mut t = s.escape_scope();
            match it.exec(&mut t, scope, st) {
                Ok(None) => {}
                Ok(Some(_)) => {
                    error = Some("SyntaxError: return outside a function".into());
                    break;
                }
                Err(Throw(e)) => {
                    error = Some(e.into());
                    break;
                }
            }
        }
    }
    it.peak_bytes = it.peak_bytes.max(heap.stats().heap_bytes);
    // Everything the program made is garbage now: only the globals stay.
    let live = heap.collect().marked;
    drop(symbols.1);
    if live != baseline {
        return Err(format!(
            "{live} cells reachable after the program, {baseline} before"
        ));
    }
    let output = out.lock().unwrap().clone();
    Ok(Outcome {
        output,
        error,
        collections: it.collections,
        freed: it.freed,
        marked: it.marked,
        gc_time: it.gc_time,
        peak_bytes: it.peak_bytes,
        max_live: it.max_live,
    })
}
