//! An upper bound on the nodes an XPath 1.0 evaluation visits, computed from the expression
//! and the shape of the document before anything is evaluated.
//!
//! The XPath engine cannot be interrupted, so an expression is evaluated only when this bound
//! fits the work budget. The bound follows the evaluation: a location step visits, for each
//! node of its context set, the nodes its axis reaches (a child step at most the widest
//! fan-out, a descendant step at most every node, an ancestor step at most the depth), and
//! evaluates each predicate once per node it visits; a path nested in a predicate or in a
//! function argument is therefore multiplied by the visits of the step that owns it, which is
//! what makes `//*[count(//*)]` quadratic and one more level cubic. Operators add the costs of
//! their operands. Context sets never hold more nodes than the document has.

/// What the bound needs to know about a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Nodes of every kind (elements, attributes, text, comments), the root included.
    pub nodes: u64,
    /// Deepest nesting of elements.
    pub depth: u64,
    /// Most children plus attributes of any one node.
    pub fan_out: u64,
}

/// An expression read for its cost, once, when the pattern is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CostModel {
    tokens: Vec<Token>,
}

impl CostModel {
    /// The model of `expression`.
    pub(crate) fn of(expression: &str) -> CostModel {
        CostModel {
            tokens: tokenize(expression),
        }
    }

    /// The most nodes evaluating the expression once on a document of `shape` can visit
    /// (saturating).
    pub(crate) fn visits(&self, shape: Shape) -> u64 {
        visits(&self.tokens, shape)
    }
}

fn visits(tokens: &[Token], shape: Shape) -> u64 {
    let mut walker = Walker {
        tokens,
        at: 0,
        shape,
    };
    let mut total = 0u64;
    while walker.at < tokens.len() {
        let before = walker.at;
        total = total.saturating_add(walker.expression(Visits::ONCE));
        if walker.at == before {
            walker.at += 1;
        }
    }
    total.max(1)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Slash,
    DoubleSlash,
    OpenBracket,
    CloseBracket,
    OpenParen,
    CloseParen,
    Comma,
    At,
    Dot,
    DotDot,
    AxisSeparator,
    Operator,
    NameTest(String),
    Value,
}

/// XPath 1.0 lexical structure (§3.7): `*` and the names `and`, `or`, `div`, `mod` are
/// operators when a token precedes them that is not `@`, `::`, `(`, `[`, `,` or an operator.
fn tokenize(expression: &str) -> Vec<Token> {
    let chars: Vec<char> = expression.chars().collect();
    let mut tokens: Vec<Token> = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        let operator_position = tokens.last().is_some_and(|last| {
            !matches!(
                last,
                Token::At
                    | Token::AxisSeparator
                    | Token::OpenParen
                    | Token::OpenBracket
                    | Token::Comma
                    | Token::Operator
                    | Token::Slash
                    | Token::DoubleSlash
            )
        });
        let (token, length) = match c {
            c if c.is_whitespace() => {
                index += 1;
                continue;
            }
            '/' if next == Some('/') => (Token::DoubleSlash, 2),
            '/' => (Token::Slash, 1),
            '[' => (Token::OpenBracket, 1),
            ']' => (Token::CloseBracket, 1),
            '(' => (Token::OpenParen, 1),
            ')' => (Token::CloseParen, 1),
            ',' => (Token::Comma, 1),
            '@' => (Token::At, 1),
            ':' if next == Some(':') => (Token::AxisSeparator, 2),
            '.' if next == Some('.') => (Token::DotDot, 2),
            '.' if !next.is_some_and(|d| d.is_ascii_digit()) => (Token::Dot, 1),
            '!' | '<' | '>' if next == Some('=') => (Token::Operator, 2),
            '=' | '<' | '>' | '+' | '-' | '|' | '!' => (Token::Operator, 1),
            '*' if operator_position => (Token::Operator, 1),
            '*' => (Token::NameTest("*".into()), 1),
            '"' | '\'' => {
                let end = chars[index + 1..]
                    .iter()
                    .position(|&q| q == c)
                    .map_or(chars.len(), |offset| index + 1 + offset + 1);
                (Token::Value, end - index)
            }
            '$' => (Token::Value, 1 + name_length(&chars[index + 1..])),
            c if c.is_ascii_digit() || c == '.' => {
                let length = chars[index..]
                    .iter()
                    .take_while(|d| d.is_ascii_digit() || **d == '.')
                    .count();
                (Token::Value, length)
            }
            _ => {
                let length = name_length(&chars[index..]).max(1);
                let name: String = chars[index..index + length].iter().collect();
                let is_operator =
                    operator_position && matches!(name.as_str(), "and" | "or" | "div" | "mod");
                if is_operator {
                    (Token::Operator, length)
                } else {
                    (Token::NameTest(name), length)
                }
            }
        };
        tokens.push(token);
        index += length;
    }
    tokens
}

/// Length of the (possibly prefixed, possibly `prefix:*`) name at the start of `chars`.
fn name_length(chars: &[char]) -> usize {
    let is_name = |c: &char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut length = chars.iter().take_while(|c| is_name(c)).count();
    if chars.get(length) == Some(&':') && chars.get(length + 1) != Some(&':') {
        length += 1;
        if chars.get(length) == Some(&'*') {
            length += 1;
        } else {
            length += chars[length..].iter().take_while(|c| is_name(c)).count();
        }
    }
    length
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    Child,
    Descendant,
    Parent,
    Ancestor,
    Sibling,
    Distant,
    Itself,
    Attribute,
}

impl Axis {
    fn named(name: &str) -> Axis {
        match name {
            "descendant" | "descendant-or-self" => Axis::Descendant,
            "parent" => Axis::Parent,
            "ancestor" | "ancestor-or-self" => Axis::Ancestor,
            "following-sibling" | "preceding-sibling" => Axis::Sibling,
            "following" | "preceding" => Axis::Distant,
            "self" => Axis::Itself,
            "attribute" | "namespace" => Axis::Attribute,
            _ => Axis::Child,
        }
    }

    /// Nodes the axis reaches from `set` distinct context nodes.
    fn reach(self, set: u64, shape: Shape) -> u64 {
        let Shape {
            nodes,
            depth,
            fan_out,
        } = shape;
        let (per_node, at_most) = match self {
            Axis::Child | Axis::Attribute => (fan_out, nodes),
            Axis::Descendant => (nodes, nodes.saturating_mul(depth + 1)),
            Axis::Parent | Axis::Itself => (1, nodes),
            Axis::Ancestor => (depth + 1, nodes.saturating_mul(depth + 1)),
            Axis::Sibling => (fan_out, nodes.saturating_mul(fan_out)),
            Axis::Distant => (nodes, nodes.saturating_mul(nodes)),
        };
        set.saturating_mul(per_node).min(at_most)
    }

    /// How often one node can be reached from distinct context nodes.
    fn repeats(self, shape: Shape) -> u64 {
        match self {
            Axis::Child | Axis::Attribute | Axis::Itself => 1,
            Axis::Descendant => shape.depth + 1,
            Axis::Parent | Axis::Sibling => shape.fan_out,
            Axis::Ancestor | Axis::Distant => shape.nodes,
        }
    }

    /// Whether distinct context nodes reach distinct nodes, or few repeats of them: the
    /// nodes a path of such steps visits from every node once add up to little more than
    /// the document.
    fn downward(self) -> bool {
        matches!(
            self,
            Axis::Child | Axis::Attribute | Axis::Itself | Axis::Descendant
        )
    }
}

/// The evaluations of an expression: once per visit of the step whose predicate holds it.
#[derive(Debug, Clone, Copy)]
struct Visits {
    /// Evaluations in all.
    count: u64,
    /// The most evaluations on one node.
    repeats: u64,
}

impl Visits {
    const ONCE: Visits = Visits {
        count: 1,
        repeats: 1,
    };

    /// `cost` paid on each evaluation.
    fn each(self, cost: u64) -> u64 {
        self.count.saturating_mul(cost)
    }
}

struct Walker<'t> {
    tokens: &'t [Token],
    at: usize,
    shape: Shape,
}

impl Walker<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_at(&self, offset: usize) -> Option<&Token> {
        self.tokens.get(self.at + offset)
    }

    fn eat(&mut self, token: &Token) -> bool {
        if self.peek() == Some(token) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Operands joined by operators, up to a `]`, `)`, `,` or the end: the nodes visited by
    /// all its `outer` evaluations.
    fn expression(&mut self, outer: Visits) -> u64 {
        let mut cost = 0u64;
        loop {
            while self.eat(&Token::Operator) {}
            match self.peek() {
                None | Some(Token::CloseBracket | Token::CloseParen | Token::Comma) => return cost,
                _ => {}
            }
            let before = self.at;
            cost = cost.saturating_add(self.operand(outer));
            if self.at == before {
                self.at += 1;
            }
        }
    }

    /// One path, literal, number, variable, function call or parenthesised expression, with
    /// its predicates and the path that may follow it.
    fn operand(&mut self, outer: Visits) -> u64 {
        let nodes = self.shape.nodes;
        match self.peek() {
            Some(Token::Slash) => {
                self.at += 1;
                if self.starts_step() {
                    outer.each(self.steps(1, 1))
                } else {
                    outer.count
                }
            }
            Some(Token::DoubleSlash) => {
                self.at += 1;
                outer.each(self.descend(1))
            }
            Some(Token::Value) => {
                self.at += 1;
                outer.count.saturating_add(self.filtered(outer))
            }
            Some(Token::OpenParen) => {
                self.at += 1;
                let inner = self.expression(outer);
                self.eat(&Token::CloseParen);
                inner.saturating_add(self.filtered(outer))
            }
            Some(Token::NameTest(name))
                if self.peek_at(1) == Some(&Token::OpenParen) && !is_node_type(name) =>
            {
                self.at += 2;
                let mut cost = outer.count;
                while !matches!(self.peek(), None | Some(Token::CloseParen)) {
                    let before = self.at;
                    cost = cost.saturating_add(self.expression(outer));
                    self.eat(&Token::Comma);
                    if self.at == before {
                        self.at += 1;
                    }
                }
                self.eat(&Token::CloseParen);
                cost.saturating_add(self.filtered(outer))
            }
            _ if self.starts_step() && self.path_is_downward() => {
                outer.repeats.saturating_mul(self.steps(nodes, 1))
            }
            _ if self.starts_step() => outer.each(self.steps(1, 1)),
            _ => 0,
        }
    }

    /// Predicates on a value and a path after it, which may hold every node.
    fn filtered(&mut self, outer: Visits) -> u64 {
        let nodes = self.shape.nodes;
        let all = Visits {
            count: nodes,
            repeats: 1,
        };
        let mut cost = 0u64;
        while self.peek() == Some(&Token::OpenBracket) {
            cost = cost.saturating_add(outer.each(self.predicate(all)));
        }
        match self.peek() {
            Some(Token::Slash) => {
                self.at += 1;
                cost.saturating_add(outer.each(self.steps(nodes, 1)))
            }
            Some(Token::DoubleSlash) => {
                self.at += 1;
                cost.saturating_add(outer.each(self.descend(nodes)))
            }
            _ => cost,
        }
    }

    fn starts_step(&self) -> bool {
        matches!(
            self.peek(),
            Some(Token::NameTest(_) | Token::At | Token::Dot | Token::DotDot)
        )
    }

    /// Whether the relative path starting here uses only downward axes (looking past its
    /// predicates, up to the end of the path).
    fn path_is_downward(&self) -> bool {
        let mut nesting = 0usize;
        let mut previous: Option<&Token> = None;
        for token in &self.tokens[self.at..] {
            match token {
                Token::OpenBracket | Token::OpenParen => nesting += 1,
                Token::CloseBracket | Token::CloseParen if nesting == 0 => return true,
                Token::CloseBracket | Token::CloseParen => nesting -= 1,
                Token::Operator | Token::Comma if nesting == 0 => return true,
                Token::DotDot if nesting == 0 => return false,
                Token::AxisSeparator if nesting == 0 => {
                    if let Some(Token::NameTest(axis)) = previous {
                        if !Axis::named(axis).downward() {
                            return false;
                        }
                    }
                }
                _ => {}
            }
            previous = Some(token);
        }
        true
    }

    /// `//` from `set` distinct nodes, then the steps after it (from distinct nodes: a step's
    /// result is a node set).
    fn descend(&mut self, set: u64) -> u64 {
        let reach = Axis::Descendant.reach(set, self.shape);
        reach.saturating_add(self.steps(reach.min(self.shape.nodes), 1))
    }

    /// Steps separated by `/` or `//`, from `set` distinct nodes, each up to `repeats` times.
    fn steps(&mut self, set: u64, repeats: u64) -> u64 {
        let (visits, next) = self.step(Visits {
            count: set,
            repeats,
        });
        if self.eat(&Token::Slash) {
            return visits.saturating_add(self.steps(next.count, next.repeats));
        }
        if self.eat(&Token::DoubleSlash) {
            return visits.saturating_add(self.descend(next.count));
        }
        visits
    }

    /// One step from a context set: the nodes it visits (each with its predicates) and the
    /// set it keeps.
    fn step(&mut self, from: Visits) -> (u64, Visits) {
        let axis = match self.peek().cloned() {
            Some(Token::Dot) => {
                self.at += 1;
                Axis::Itself
            }
            Some(Token::DotDot) => {
                self.at += 1;
                Axis::Parent
            }
            Some(Token::At) => {
                self.at += 1;
                self.node_test();
                Axis::Attribute
            }
            Some(Token::NameTest(name)) if self.peek_at(1) == Some(&Token::AxisSeparator) => {
                self.at += 2;
                self.node_test();
                Axis::named(&name)
            }
            Some(Token::NameTest(_)) => {
                self.node_test();
                Axis::Child
            }
            _ => return (0, from),
        };
        let reached = Visits {
            count: axis.reach(from.count, self.shape),
            repeats: from.repeats.saturating_mul(axis.repeats(self.shape)),
        };
        let reached = Visits {
            repeats: reached.repeats.min(reached.count).max(1),
            ..reached
        };
        let mut cost = reached.count;
        while self.peek() == Some(&Token::OpenBracket) {
            cost = cost.saturating_add(self.predicate(reached));
        }
        let kept = Visits {
            count: reached.count.min(self.shape.nodes),
            repeats: 1,
        };
        (cost, kept)
    }

    /// A name test, `*`, or a node type test such as `text()` or `processing-instruction('x')`.
    fn node_test(&mut self) {
        if let Some(Token::NameTest(name)) = self.peek().cloned() {
            self.at += 1;
            if is_node_type(&name) && self.eat(&Token::OpenParen) {
                self.eat(&Token::Value);
                self.eat(&Token::CloseParen);
            }
        }
    }

    /// `[ expression ]` evaluated once per visit of `visits`.
    fn predicate(&mut self, visits: Visits) -> u64 {
        self.eat(&Token::OpenBracket);
        let cost = self.expression(visits);
        self.eat(&Token::CloseBracket);
        cost
    }
}

fn is_node_type(name: &str) -> bool {
    matches!(name, "node" | "text" | "comment" | "processing-instruction")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visits(expression: &str, shape: Shape) -> u64 {
        CostModel::of(expression).visits(shape)
    }

    const FLAT: Shape = Shape {
        nodes: 1_000,
        depth: 2,
        fan_out: 1_000,
    };

    #[test]
    fn a_simple_path_is_linear_in_the_document() {
        for expression in [
            "//item",
            "/root/item[1]",
            "//item[@id='5']/name",
            "//a[b/c = 'x']",
        ] {
            let cost = visits(expression, FLAT);
            assert!(cost <= 20 * FLAT.nodes, "{expression}: {cost}");
        }
    }

    #[test]
    fn a_path_inside_a_predicate_multiplies() {
        let linear = visits("//*", FLAT);
        let quadratic = visits("//*[count(//*) > 0]", FLAT);
        let cubic = visits("//*[count(//*[count(//*) > 0]) > 0]", FLAT);
        assert!(quadratic >= linear * FLAT.nodes, "{linear} {quadratic}");
        assert!(cubic >= quadratic * FLAT.nodes, "{quadratic} {cubic}");
        let distant = visits("//*[preceding::*]", FLAT);
        assert!(distant >= FLAT.nodes * FLAT.nodes, "{distant}");
    }

    #[test]
    fn operators_and_names_are_told_apart() {
        let tokens = tokenize("//div[@a * 2 = 4 and div mod 3]/*");
        let operators = tokens.iter().filter(|t| **t == Token::Operator).count();
        assert_eq!(operators, 4, "{tokens:?}");
        let names: Vec<_> = tokens
            .iter()
            .filter_map(|t| match t {
                Token::NameTest(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["div", "a", "div", "*"]);
    }

    #[test]
    fn every_input_gets_a_bound() {
        for expression in [
            "", "]]", "((", "count(", "//a[", "'open", "$v[1]//x", "a::b::c",
        ] {
            assert!(visits(expression, FLAT) >= 1, "{expression}");
        }
        let huge = Shape {
            nodes: u64::MAX / 2,
            depth: 256,
            fan_out: u64::MAX / 2,
        };
        assert_eq!(visits("//*[count(//*[//*])]", huge), u64::MAX);
    }
}
