//! The evaluator, its rooting discipline (`Held`, `step`, `safepoint`) and the natives.

use crate::parse::{Expr, FuncDef, Stmt};
use gc_object::{Error, Heap, Key, Mutator, PropertyKey, Root, Value};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

// ---------------------------------------------------------------- values the evaluator keeps

/// A value kept by the evaluator across heap steps (and so across collections).
#[derive(Clone)]
enum Held {
    /// Names no cell: needs no root.
    Plain(Value<'static>),
    /// A cell (object, string value, symbol): rooted until the last clone is dropped.
    Rooted(Rc<Root>),
}

impl Held {
    fn hold(heap: &Heap, v: Value<'_>) -> Result<Held, Error> {
        Ok(match v.as_static() {
            Some(p) => Held::Plain(p),
            None => Held::Rooted(Rc::new(heap.root_value(v)?)),
        })
    }
    fn get<'h>(&self, heap: &'h Heap) -> Value<'h> {
        match self {
            Held::Plain(v) => *v,
            Held::Rooted(r) => r.value(heap).expect("rooted in this heap"),
        }
    }
}

const UNDEFINED: Held = Held::Plain(Value::UNDEFINED);

/// Why evaluation stopped early: a `return`, or an error (a JS exception, uncatchable here).
enum Flow {
    Return(Held),
    Throw(String),
}

impl From<Error> for Flow {
    fn from(e: Error) -> Flow {
        Flow::Throw(e.to_string())
    }
}

type R<T> = Result<T, Flow>;

fn throw<T>(msg: String) -> R<T> {
    Err(Flow::Throw(msg))
}

/// One heap step: a fresh mutator, `f`, and the result held (so it survives what follows).
fn step<'h>(
    heap: &'h Heap,
    f: impl FnOnce(&mut Mutator<'h>) -> Result<Value<'h>, Flow>,
) -> R<Held> {
    let mut m = heap.mutator();
    let v = f(&mut m)?;
    Ok(Held::hold(heap, v)?)
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
    _symbols: [Root; 2],
    /// Collect when this many cells were allocated since the last collection.
    gc_every: u64,
    allocated_at_gc: u64,
    collections: u64,
    freed: u64,
    depth: usize,
}

const MAX_DEPTH: usize = 200;

impl Interp {
    /// The only place a collection runs: between two statements, when nothing but `Held`s
    /// refer to the heap.
    fn safepoint(&mut self, heap: &mut Heap) {
        if heap.stats().cells_allocated - self.allocated_at_gc >= self.gc_every {
            let s = heap.collect();
            self.collections += 1;
            self.freed += s.freed;
            self.allocated_at_gc = heap.stats().cells_allocated;
        }
    }

    fn run_block(&mut self, heap: &mut Heap, scope: &Held, body: &[Stmt]) -> R<()> {
        let inner = step(heap, |m| {
            let parent = scope.get(m.heap()).as_object();
            Ok(m.object_with_proto(parent)?.value())
        })?;
        for s in body {
            self.safepoint(heap);
            self.exec(heap, &inner, s)?;
        }
        Ok(())
    }

    fn exec(&mut self, heap: &mut Heap, scope: &Held, s: &Stmt) -> R<()> {
        match s {
            Stmt::Let(name, init) => {
                let v = self.eval(heap, scope, init)?;
                step(heap, |m| {
                    let h = m.heap();
                    scope
                        .get(h)
                        .as_object()
                        .expect("scopes are objects")
                        .set(*name, v.get(h))?;
                    Ok(Value::UNDEFINED)
                })?;
            }
            Stmt::Expr(e) => {
                self.eval(heap, scope, e)?;
            }
            Stmt::If(c, then, otherwise) => {
                let c = self.eval(heap, scope, c)?;
                let body = if truthy(c.get(heap)) { then } else { otherwise };
                self.run_block(heap, scope, body)?;
            }
            Stmt::While(cond, body) => loop {
                let c = self.eval(heap, scope, cond)?;
                if !truthy(c.get(heap)) {
                    break;
                }
                self.run_block(heap, scope, body)?;
                self.safepoint(heap);
            },
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(heap, scope, e)?,
                    None => UNDEFINED,
                };
                return Err(Flow::Return(v));
            }
            Stmt::Block(body) => self.run_block(heap, scope, body)?,
        }
        Ok(())
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

    fn eval(&mut self, heap: &mut Heap, scope: &Held, e: &Expr) -> R<Held> {
        Ok(match e {
            Expr::Num(n) => Held::Plain(Value::number(*n)),
            Expr::Bool(b) => Held::Plain(Value::bool(*b)),
            Expr::Null => Held::Plain(Value::NULL),
            Expr::Undefined => UNDEFINED,
            Expr::Name(k) => Held::Plain(Value::string(*k)),
            Expr::Str(s) => step(heap, |m| Ok(m.string(s)?.value()))?,
            Expr::This => self.lookup(heap, scope, self.this_key)?,
            Expr::Var(name) => self.lookup(heap, scope, *name)?,
            Expr::Array(items) => {
                let arr = step(heap, |m| Ok(m.array()?.value()))?;
                for item in items {
                    let v = self.eval(heap, scope, item)?;
                    let o = arr.get(heap).as_object().expect("made as an array");
                    o.push(v.get(heap))?;
                }
                arr
            }
            Expr::Object(props) => {
                let obj = step(heap, |m| Ok(m.object()?.value()))?;
                for (k, v) in props {
                    let k = self.eval(heap, scope, k)?;
                    let v = self.eval(heap, scope, v)?;
                    step(heap, |m| {
                        let h = m.heap();
                        let key = key_of(k.get(h))?;
                        m.set(
                            obj.get(h).as_object().expect("made as an object"),
                            key,
                            v.get(h),
                        )?;
                        Ok(Value::UNDEFINED)
                    })?;
                }
                obj
            }
            Expr::Func(i) => {
                let (ck, sk) = (self.code_key, self.scope_key);
                step(heap, |m| {
                    let f = m.object()?;
                    f.set(ck, Value::from(*i as u32))?;
                    f.set(sk, scope.get(m.heap()))?;
                    Ok(f.value())
                })?
            }
            Expr::Member(o, k) => {
                let o = self.eval(heap, scope, o)?;
                let k = self.eval(heap, scope, k)?;
                step(heap, |m| {
                    let h = m.heap();
                    get_property(m, o.get(h), k.get(h))
                })?
            }
            Expr::Assign(target, v) => self.assign(heap, scope, target, v)?,
            Expr::Call(callee, args) => {
                let (this, f) = match &**callee {
                    Expr::Member(o, k) => {
                        let o = self.eval(heap, scope, o)?;
                        let k = self.eval(heap, scope, k)?;
                        let f = step(heap, |m| {
                            let h = m.heap();
                            get_property(m, o.get(h), k.get(h))
                        })?;
                        (o, f)
                    }
                    other => (UNDEFINED, self.eval(heap, scope, other)?),
                };
                let mut held = Vec::with_capacity(args.len());
                for a in args {
                    held.push(self.eval(heap, scope, a)?);
                }
                self.call(heap, &f, this, &held)?
            }
            Expr::Not(x) => {
                let v = self.eval(heap, scope, x)?;
                Held::Plain(Value::bool(!truthy(v.get(heap))))
            }
            Expr::TypeOf(x) => {
                let v = self.eval(heap, scope, x)?;
                let v = v.get(heap);
                // The interpreter's own functions are plain objects to the crate.
                let t = match v.as_object() {
                    Some(o) if o.has_own(self.code_key)? => "function",
                    _ => v.type_of(),
                };
                Held::Plain(Value::string(Key::new(t)))
            }
            Expr::Neg(x) => {
                let v = self.eval(heap, scope, x)?;
                Held::Plain(Value::number(-number(v.get(heap))?))
            }
            Expr::Bin(op @ ("&&" | "||"), a, b) => {
                let a = self.eval(heap, scope, a)?;
                if truthy(a.get(heap)) == (*op == "&&") {
                    self.eval(heap, scope, b)?
                } else {
                    a
                }
            }
            Expr::Bin(op, a, b) => {
                let a = self.eval(heap, scope, a)?;
                let b = self.eval(heap, scope, b)?;
                step(heap, |m| {
                    let h = m.heap();
                    binary(m, op, a.get(h), b.get(h))
                })?
            }
        })
    }

    fn lookup(&mut self, heap: &mut Heap, scope: &Held, name: Key) -> R<Held> {
        step(heap, |m| {
            let s = Interp::find_scope(scope.get(m.heap()), name)?;
            Ok(s.get(name)?)
        })
    }

    fn assign(&mut self, heap: &mut Heap, scope: &Held, target: &Expr, v: &Expr) -> R<Held> {
        match target {
            Expr::Var(name) => {
                let v = self.eval(heap, scope, v)?;
                step(heap, |m| {
                    let h = m.heap();
                    Interp::find_scope(scope.get(h), *name)?.set(*name, v.get(h))?;
                    Ok(v.get(h))
                })
            }
            Expr::Member(o, k) => {
                let o = self.eval(heap, scope, o)?;
                let k = self.eval(heap, scope, k)?;
                let v = self.eval(heap, scope, v)?;
                step(heap, |m| {
                    let h = m.heap();
                    let Some(obj) = o.get(h).as_object() else {
                        return throw(format!(
                            "TypeError: cannot set a property of {}",
                            to_text(o.get(h))?
                        ));
                    };
                    m.set(obj, key_of(k.get(h))?, v.get(h))?;
                    Ok(v.get(h))
                })
            }
            _ => unreachable!("the parser accepts only names and members"),
        }
    }

    fn call(&mut self, heap: &mut Heap, f: &Held, this: Held, args: &[Held]) -> R<Held> {
        let (ck, sk, this_key) = (self.code_key, self.scope_key, self.this_key);
        let Some(fo) = f.get(heap).as_object() else {
            return throw(format!(
                "TypeError: {} is not a function",
                to_text(f.get(heap))?
            ));
        };
        if fo.has_own(ck)? {
            let def =
                Rc::clone(&self.funcs[fo.get(ck)?.as_u32().expect("a function index") as usize]);
            if self.depth == MAX_DEPTH {
                return throw("RangeError: too much recursion".into());
            }
            let call_scope = step(heap, |m| {
                let h = m.heap();
                let fo = f.get(h).as_object().expect("checked above");
                let s = m.object_with_proto(fo.get(sk)?.as_object())?;
                s.set(this_key, this.get(h))?;
                for (i, p) in def.params.iter().enumerate() {
                    s.set(*p, args.get(i).map_or(Value::UNDEFINED, |a| a.get(h)))?;
                }
                Ok(s.value())
            })?;
            self.depth += 1;
            let mut out = Ok(UNDEFINED);
            for s in &def.body {
                self.safepoint(heap);
                match self.exec(heap, &call_scope, s) {
                    Ok(()) => {}
                    Err(Flow::Return(v)) => {
                        out = Ok(v);
                        break;
                    }
                    Err(e) => {
                        out = Err(e);
                        break;
                    }
                }
            }
            self.depth -= 1;
            return out;
        }
        // A native function: the crate's calls take one argument, so the arguments go in an
        // array.
        step(heap, |m| {
            let h = m.heap();
            let list = m.array()?;
            for a in args {
                list.push(a.get(h))?;
            }
            Ok(m.call(
                f.get(h).as_object().expect("checked above"),
                this.get(h),
                list.value(),
            )?)
        })
    }
}

fn number(v: Value<'_>) -> Result<f64, Flow> {
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

fn get_property<'h>(m: &mut Mutator<'h>, o: Value<'h>, k: Value<'h>) -> R<Value<'h>> {
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

fn binary<'h>(m: &mut Mutator<'h>, op: &str, a: Value<'h>, b: Value<'h>) -> R<Value<'h>> {
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
/// count lives in a heap object, the closure's environment), `Symbol`, `freeze`.
fn globals(heap: &Heap, out: &Arc<Mutex<String>>) -> Result<Root, Error> {
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
    heap.root(g)
}

/// What a program printed, the error that stopped it, and the collections during its run.
pub struct Outcome {
    pub output: String,
    pub error: Option<String>,
    pub collections: u64,
    pub freed: u64,
}

/// Parses and runs `src` on a fresh heap, collecting when `gc_every` cells were allocated
/// since the last collection (0: before every statement). An error if the program leaves
/// anything reachable beyond the globals.
pub fn run(src: &str, gc_every: u64) -> Result<Outcome, String> {
    let (program, funcs) = crate::parse::parse(src)?;
    let mut heap = Heap::new();
    let out = Arc::new(Mutex::new(String::new()));
    let (global, symbols) = {
        let m = heap.mutator();
        let (a, b) = (m.symbol(Some("code")), m.symbol(Some("scope")));
        let (a, b) = (a.map_err(|e| e.to_string())?, b.map_err(|e| e.to_string())?);
        let g = globals(&heap, &out).map_err(|e| e.to_string())?;
        let roots = [heap.root_value(a.value()), heap.root_value(b.value())];
        let [ra, rb] = roots.map(|r| r.expect("a symbol of this heap"));
        (g, ([a.key(), b.key()], [ra, rb]))
    };
    let mut it = Interp {
        funcs,
        code_key: symbols.0[0],
        scope_key: symbols.0[1],
        this_key: Key::new("this"),
        _symbols: symbols.1,
        gc_every,
        allocated_at_gc: 0,
        collections: 0,
        freed: 0,
        depth: 0,
    };
    // Everything the program makes hangs off its own scope, below the globals.
    let baseline = heap.collect().marked;
    let scope = step(&heap, |m| {
        let g = global.get(m.heap()).expect("the global scope");
        Ok(m.object_with_proto(Some(g))?.value())
    })
    .map_err(|_| "no memory for the program's scope".to_string())?;
    let mut error = None;
    for s in &program {
        it.safepoint(&mut heap);
        match it.exec(&mut heap, &scope, s) {
            Ok(()) => {}
            Err(Flow::Return(_)) => {
                error = Some("SyntaxError: return outside a function".into());
                break;
            }
            Err(Flow::Throw(e)) => {
                error = Some(e);
                break;
            }
        }
    }
    // Everything the program made is garbage now: only the globals stay.
    drop(scope);
    let live = heap.collect().marked;
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
    })
}
