use std::time::Instant;

use super::*;

fn outlined(path: &str, text: &str) -> String {
    outline(path, text, &OutlineLimits::default())
        .unwrap()
        .unwrap_or_else(|| panic!("{path} has no outline"))
}

#[test]
fn rust() {
    let source = r#"use std::fmt;

pub const LIMIT: usize = 3;

/// A setting.
pub struct Settings {
    port: u16,
}

impl Settings {
    pub fn load() -> Self {
        Settings { port: 1 }
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.port)
    }
}

pub trait Source {
    fn read(&self) -> String;
}

enum Mode { Fast, Slow }

fn main() {}

mod tests {
    fn checks() {}
}
"#;
    assert_eq!(
        outlined("src/settings.rs", source),
        "3 constant LIMIT\n\
         6-8 class Settings\n\
         10-14 impl Settings\n  11-13 method load\n\
         16-20 impl fmt::Display for Settings\n  17-19 method fmt\n\
         22-24 interface Source\n  23 method read\n\
         26 class Mode\n\
         28 function main\n\
         30-32 module tests\n  31 method checks"
    );
}

#[test]
fn python() {
    let source = r#"import os

LIMIT = 3

class Settings(Base):
    """A setting."""

    def load(self):
        return 1

    @staticmethod
    def parse(text):
        return text


def main():
    pass
"#;
    assert_eq!(
        outlined("app/settings.py", source),
        "3 constant LIMIT\n\
         5-13 class Settings\n  8-9 function load\n  12-13 function parse\n\
         16-17 function main"
    );
}

#[test]
fn javascript() {
    let source = r#"const path = require("path");

class Router {
  constructor() {
    this.routes = [];
  }

  add(route) {
    this.routes.push(route);
  }
}

function listen(port) {
  return port;
}

const handler = (request) => request;

module.exports = { Router, listen };
"#;
    assert_eq!(
        outlined("src/router.js", source),
        "3-11 class Router\n  8-10 method add\n\
         13-15 function listen\n\
         17 function handler"
    );
}

#[test]
fn typescript() {
    let source = r#"export interface Route {
  path: string;
  handle(request: Request): Response;
}

export type Handler = (request: Request) => Response;

export enum Method { Get, Post }

export abstract class Base {
  abstract start(): void;
}

export class Router extends Base {
  start(): void {}
}

export function listen(port: number): void {}
"#;
    assert_eq!(
        outlined("src/router.ts", source),
        "1-4 interface Route\n  3 method handle\n\
         6 type Handler\n\
         8 type Method\n\
         10-12 class Base\n  11 method start\n\
         14-16 class Router\n  15 method start\n\
         18 function listen"
    );
    let component = r#"export function App(props: Props) {
  return <div>{props.title}</div>;
}
"#;
    assert_eq!(outlined("web/App.tsx", component), "1-3 function App");
}

#[test]
fn go() {
    let source = r#"package server

import "net/http"

type Server struct {
	port int
}

type Handler interface {
	Serve()
}

func (s *Server) Listen() error {
	return nil
}

func New(port int) *Server {
	return &Server{port: port}
}
"#;
    assert_eq!(
        outlined("server/server.go", source),
        "5-7 type Server\n\
         9-11 type Handler\n\
         13-15 method Listen\n\
         17-19 function New"
    );
}

#[test]
fn java() {
    let source = r#"package app;

public class Server {
    private final int port;

    public Server(int port) {
        this.port = port;
    }

    @Override
    public String toString() {
        return "server";
    }

    enum Mode { FAST, SLOW }
}

interface Handler {
    void handle();
}
"#;
    assert_eq!(
        outlined("src/app/Server.java", source),
        "3-16 class Server\n  6-8 method Server\n  10-13 method toString\n  15 class Mode\n\
         18-20 interface Handler\n  19 method handle"
    );
}

#[test]
fn c() {
    let source = r#"#include <stdio.h>

struct point {
    int x;
    int y;
};

typedef int length;

static int *
origin(void)
{
    return 0;
}

int main(int argc, char **argv) {
    return 0;
}
"#;
    assert_eq!(
        outlined("src/main.c", source),
        "3-6 class point\n\
         8 type length\n\
         10-14 function origin\n\
         16-18 function main"
    );
}

#[test]
fn cpp() {
    let source = r#"namespace app {

class Server {
public:
    void listen(int port);
};

void Server::listen(int port) {
}

}
"#;
    assert_eq!(
        outlined("src/server.cpp", source),
        "3-6 class Server\n  5 function listen\n\
         8-9 method listen"
    );
    let header = "struct point { int x; };\nint distance(struct point a, struct point b);\n";
    assert_eq!(
        outlined("include/point.h", header),
        "1 class point\n2 function distance"
    );
}

#[test]
fn ruby() {
    let source = r#"module Shop
  class Cart
    def add(item)
      @items << item
    end

    def self.empty
      new
    end
  end
end
"#;
    assert_eq!(
        outlined("lib/shop/cart.rb", source),
        "1-11 module Shop\n  2-10 class Cart\n    3-5 method add\n    7-9 method empty"
    );
}

#[test]
fn files_without_a_grammar_or_definitions_have_no_outline() {
    let limits = OutlineLimits::default();
    assert_eq!(outline("README.md", "# fn main() {}", &limits), Ok(None));
    assert_eq!(outline("notes.txt", "def a(): pass", &limits), Ok(None));
    assert_eq!(
        outline("src/empty.rs", "// nothing here\n", &limits),
        Ok(None)
    );
    assert_eq!(outline("src/noise.rs", "}}}{{{ ))) fn", &limits), Ok(None));
}

#[test]
fn a_text_over_the_size_limit_is_not_parsed() {
    let text = "fn a() {}\n";
    let limits = OutlineLimits {
        max_bytes: text.len(),
        ..OutlineLimits::default()
    };
    assert_eq!(
        outline("a.rs", text, &limits),
        Ok(Some("1 function a".into()))
    );
    let limits = OutlineLimits {
        max_bytes: text.len() - 1,
        ..OutlineLimits::default()
    };
    assert_eq!(outline("a.rs", text, &limits), Ok(None));
    let off = OutlineLimits {
        max_bytes: 0,
        ..OutlineLimits::default()
    };
    assert_eq!(outline("a.rs", text, &off), Ok(None));
}

#[test]
fn parsing_stops_at_its_time_limit() {
    let text = "fn a() { let x = [".to_string() + &"(1, [2, {3}]), ".repeat(200_000) + "]; }\n";
    let limits = OutlineLimits {
        max_bytes: usize::MAX,
        timeout: Duration::from_millis(1),
    };
    let started = Instant::now();
    assert_eq!(outline("a.rs", &text, &limits), Err(OutlineError::TimedOut));
    assert!(started.elapsed() < Duration::from_secs(2));
}

fn symbol(depth: usize, line: usize, name: &str) -> Symbol {
    Symbol {
        kind: "function",
        name: name.into(),
        first_line: line,
        last_line: line,
        depth,
    }
}

#[test]
fn an_outline_too_long_drops_its_deepest_levels_first() {
    let symbols = [
        symbol(0, 1, "a"),
        symbol(1, 2, "inner"),
        symbol(0, 3, "b"),
        symbol(1, 4, "inner"),
    ];
    let whole = render(&symbols, 1000);
    assert_eq!(
        whole,
        "1 function a\n  2 function inner\n3 function b\n  4 function inner"
    );
    assert_eq!(render(&symbols, whole.chars().count()), whole);
    assert_eq!(
        render(&symbols, whole.chars().count() - 1),
        "1 function a\n3 function b\n… 2 more"
    );
    assert_eq!(render(&symbols, 24), "1 function a\n… 3 more");
    assert_eq!(render(&symbols, 10), "… 4 more");
}

#[test]
fn a_long_outline_stays_within_its_bound() {
    let text: String = (0..2000)
        .map(|index| format!("fn function_{index}() {{}}\n"))
        .collect();
    let outline = outlined("big.rs", &text);
    assert!(
        outline.chars().count() <= MAX_OUTLINE_CHARS,
        "{}",
        outline.len()
    );
    assert!(outline.starts_with("1 function function_0\n2 function function_1\n"));
    let kept = outline.lines().count() - 1;
    assert!(
        outline.ends_with(&format!("\n… {} more", 2000 - kept)),
        "{outline}"
    );
}

#[test]
fn a_long_name_is_cut_and_kept_on_one_line() {
    let name = "a".repeat(100);
    let source = format!("impl Wrapper<\n    {name},\n> {{}}\n");
    let expected = format!("1-3 impl Wrapper< {}", "a".repeat(80 - "Wrapper< ".len()));
    assert_eq!(outlined("src/long.rs", &source), expected);
}
