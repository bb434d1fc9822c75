//! The lexer and the recursive-descent parser: source text to statements.

use gc_object::Key;
use std::rc::Rc;

// ---------------------------------------------------------------- lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Id(String),
    P(&'static str),
    Eof,
}

const PUNCT: [&str; 27] = [
    "===", "!==", "==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "=", "!",
    "(", ")", "{", "}", "[", "]", ",", ";", ":", ".",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let b = src.as_bytes();
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if src[i..].starts_with("//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            let n = src[s..i]
                .parse()
                .map_err(|_| format!("bad number {}", &src[s..i]))?;
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push(Tok::Id(src[s..i].to_string()));
        } else if c == b'"' || c == b'\'' {
            let mut text = String::new();
            let mut chars = src[i + 1..].char_indices();
            loop {
                match chars.next() {
                    None => return Err("unterminated string".into()),
                    Some((j, q)) if q == c as char => {
                        i += 1 + j + 1;
                        break;
                    }
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => text.push('\n'),
                        Some((_, e)) => text.push(e),
                        None => return Err("unterminated string".into()),
                    },
                    Some((_, ch)) => text.push(ch),
                }
            }
            out.push(Tok::Str(text));
        } else {
            let p = PUNCT
                .iter()
                .find(|p| src[i..].starts_with(**p))
                .ok_or_else(|| format!("unexpected character {:?}", c as char))?;
            out.push(Tok::P(p));
            i += p.len();
        }
    }
    out.push(Tok::Eof);
    Ok(out)
}

// ---------------------------------------------------------------- parser

/// The program's statements, and every function body in it (`Expr::Func` indexes them).
pub fn parse(src: &str) -> Result<(Vec<Stmt>, Vec<Rc<FuncDef>>), String> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        funcs: Vec::new(),
    };
    let program = p.program()?;
    Ok((program, p.funcs))
}

pub enum Expr {
    Num(f64),
    /// A string literal: a new string value each time it is evaluated.
    Str(Rc<str>),
    /// A property name written as a name (`o.name`, `{name: 1}`): an interned string.
    Name(Key),
    Bool(bool),
    Null,
    Undefined,
    This,
    Var(Key),
    Array(Vec<Expr>),
    /// (key, value): a fixed key is an `Expr::Str`.
    Object(Vec<(Expr, Expr)>),
    Func(usize),
    Member(Box<Expr>, Box<Expr>),
    Call(Box<Expr>, Vec<Expr>),
    Assign(Box<Expr>, Box<Expr>),
    Bin(&'static str, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    TypeOf(Box<Expr>),
    Neg(Box<Expr>),
}

pub enum Stmt {
    Let(Key, Expr),
    Expr(Expr),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    While(Expr, Vec<Stmt>),
    Return(Option<Expr>),
    Block(Vec<Stmt>),
}

pub struct FuncDef {
    pub params: Vec<Key>,
    pub body: Vec<Stmt>,
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    funcs: Vec<Rc<FuncDef>>,
}

type PResult<T> = Result<T, String>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos]
    }
    fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].clone();
        if t != Tok::Eof {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Tok::P(q) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, p: &str) -> PResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(format!("expected {p:?}, found {:?}", self.peek()))
        }
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Id(x) if x == w)
    }
    fn ident(&mut self) -> PResult<Key> {
        match self.next() {
            Tok::Id(x) => Ok(Key::new(&x)),
            t => Err(format!("expected a name, found {t:?}")),
        }
    }

    fn program(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        while *self.peek() != Tok::Eof {
            out.push(self.stmt()?);
        }
        Ok(out)
    }
    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.expect("{")?;
        let mut out = Vec::new();
        while !self.eat("}") {
            out.push(self.stmt()?);
        }
        Ok(out)
    }
    fn stmt(&mut self) -> PResult<Stmt> {
        if self.is_word("let") {
            self.pos += 1;
            let name = self.ident()?;
            let init = if self.eat("=") {
                self.expr()?
            } else {
                Expr::Undefined
            };
            self.expect(";")?;
            Ok(Stmt::Let(name, init))
        } else if self.is_word("function") {
            self.pos += 1;
            let name = self.ident()?;
            let f = self.function()?;
            Ok(Stmt::Let(name, f))
        } else if self.is_word("return") {
            self.pos += 1;
            let e = if self.eat(";") {
                None
            } else {
                let e = self.expr()?;
                self.expect(";")?;
                Some(e)
            };
            Ok(Stmt::Return(e))
        } else if self.is_word("while") {
            self.pos += 1;
            self.expect("(")?;
            let c = self.expr()?;
            self.expect(")")?;
            Ok(Stmt::While(c, self.block()?))
        } else if self.is_word("if") {
            self.pos += 1;
            self.expect("(")?;
            let c = self.expr()?;
            self.expect(")")?;
            let then = self.block()?;
            let otherwise = if self.is_word("else") {
                self.pos += 1;
                if self.is_word("if") {
                    vec![self.stmt()?]
                } else {
                    self.block()?
                }
            } else {
                Vec::new()
            };
            Ok(Stmt::If(c, then, otherwise))
        } else if matches!(self.peek(), Tok::P("{")) {
            Ok(Stmt::Block(self.block()?))
        } else {
            let e = self.expr()?;
            self.expect(";")?;
            Ok(Stmt::Expr(e))
        }
    }
    /// Parameters and body after `function [name]`.
    fn function(&mut self) -> PResult<Expr> {
        self.expect("(")?;
        let mut params = Vec::new();
        while !self.eat(")") {
            params.push(self.ident()?);
            if !self.eat(",") {
                self.expect(")")?;
                break;
            }
        }
        let body = self.block()?;
        self.funcs.push(Rc::new(FuncDef { params, body }));
        Ok(Expr::Func(self.funcs.len() - 1))
    }
    fn expr(&mut self) -> PResult<Expr> {
        let lhs = self.binary(0)?;
        if self.eat("=") {
            if !matches!(lhs, Expr::Var(_) | Expr::Member(..)) {
                return Err("invalid assignment target".into());
            }
            return Ok(Expr::Assign(Box::new(lhs), Box::new(self.expr()?)));
        }
        Ok(lhs)
    }
    fn binary(&mut self, level: usize) -> PResult<Expr> {
        const LEVELS: [&[&str]; 6] = [
            &["||"],
            &["&&"],
            &["===", "!==", "==", "!="],
            &["<=", ">=", "<", ">"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Tok::P(p) = *self.peek() {
            if !LEVELS[level].contains(&p) {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Bin(p, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }
    fn unary(&mut self) -> PResult<Expr> {
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.is_word("typeof") {
            self.pos += 1;
            return Ok(Expr::TypeOf(Box::new(self.unary()?)));
        }
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                let name = self.ident()?;
                e = Expr::Member(Box::new(e), Box::new(Expr::Name(name)));
            } else if self.eat("[") {
                let k = self.expr()?;
                self.expect("]")?;
                e = Expr::Member(Box::new(e), Box::new(k));
            } else if self.eat("(") {
                let mut args = Vec::new();
                while !self.eat(")") {
                    args.push(self.expr()?);
                    if !self.eat(",") {
                        self.expect(")")?;
                        break;
                    }
                }
                e = Expr::Call(Box::new(e), args);
            } else {
                return Ok(e);
            }
        }
    }
    fn primary(&mut self) -> PResult<Expr> {
        Ok(match self.next() {
            Tok::Num(n) => Expr::Num(n),
            Tok::Str(s) => Expr::Str(s.into()),
            Tok::Id(w) => match w.as_str() {
                "true" => Expr::Bool(true),
                "false" => Expr::Bool(false),
                "null" => Expr::Null,
                "undefined" => Expr::Undefined,
                "this" => Expr::This,
                "function" => self.function()?,
                _ => Expr::Var(Key::new(&w)),
            },
            Tok::P("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                e
            }
            Tok::P("[") => {
                let mut items = Vec::new();
                while !self.eat("]") {
                    items.push(self.expr()?);
                    if !self.eat(",") {
                        self.expect("]")?;
                        break;
                    }
                }
                Expr::Array(items)
            }
            Tok::P("{") => {
                let mut props = Vec::new();
                while !self.eat("}") {
                    let key = match self.next() {
                        Tok::Id(x) | Tok::Str(x) => Expr::Name(Key::new(&x)),
                        Tok::Num(n) => Expr::Num(n),
                        Tok::P("[") => {
                            let k = self.expr()?;
                            self.expect("]")?;
                            k
                        }
                        t => return Err(format!("bad property name {t:?}")),
                    };
                    self.expect(":")?;
                    props.push((key, self.expr()?));
                    if !self.eat(",") {
                        self.expect("}")?;
                        break;
                    }
                }
                Expr::Object(props)
            }
            t => return Err(format!("unexpected {t:?}")),
        })
    }
}
