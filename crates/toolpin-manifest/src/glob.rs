//! Tool-name globs for `include` / `exclude`: `*` any run of characters,
//! `?` one character, `[abc]` / `[a-z]` / `[!a-z]` a class, `\x` a literal.

/// A compiled glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    pub fn new(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => {
                    if parts.last() != Some(&Part::Star) {
                        parts.push(Part::Star);
                    }
                }
                '?' => parts.push(Part::Any),
                '\\' => match chars.next() {
                    Some(lit) => parts.push(Part::Literal(lit)),
                    None => return Err(format!("glob {text:?} ends with a lone '\\'")),
                },
                '[' => {
                    let negated = matches!(chars.peek(), Some('!') | Some('^'));
                    if negated {
                        chars.next();
                    }
                    let mut ranges = Vec::new();
                    let mut closed = false;
                    let mut first = true;
                    while let Some(c) = chars.next() {
                        if c == ']' && !first {
                            closed = true;
                            break;
                        }
                        first = false;
                        let lo = c;
                        if chars.peek() == Some(&'-') {
                            chars.next();
                            match chars.next() {
                                Some(']') => {
                                    ranges.push((lo, lo));
                                    ranges.push(('-', '-'));
                                    closed = true;
                                    break;
                                }
                                Some(hi) if hi >= lo => ranges.push((lo, hi)),
                                Some(hi) => {
                                    return Err(format!(
                                        "glob {text:?}: range {lo}-{hi} is reversed"
                                    ))
                                }
                                None => break,
                            }
                        } else {
                            ranges.push((lo, lo));
                        }
                    }
                    if !closed {
                        return Err(format!("glob {text:?} has an unclosed '['"));
                    }
                    parts.push(Part::Class { negated, ranges });
                }
                c => parts.push(Part::Literal(c)),
            }
        }
        Ok(Self {
            text: text.to_string(),
            parts,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_match(&self, name: &str) -> bool {
        let chars: Vec<char> = name.chars().collect();
        // Iterative matcher with single-star backtracking: linear in practice,
        // never exponential.
        let (mut p, mut n) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while n < chars.len() {
            match self.parts.get(p) {
                Some(Part::Star) => {
                    star = Some((p, n));
                    p += 1;
                    continue;
                }
                Some(part) if part_matches(part, chars[n]) => {
                    p += 1;
                    n += 1;
                    continue;
                }
                _ => {}
            }
            match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            }
        }
        self.parts[p..].iter().all(|part| *part == Part::Star)
    }
}

fn part_matches(part: &Part, c: char) -> bool {
    match part {
        Part::Literal(l) => *l == c,
        Part::Any => true,
        Part::Star => false,
        Part::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, name: &str) -> bool {
        Glob::new(glob).expect("valid glob").is_match(name)
    }

    #[test]
    fn matches_like_a_shell() {
        assert!(m("*", ""));
        assert!(m("get_*", "get_order"));
        assert!(!m("get_*", "list_orders"));
        assert!(m("*_order*", "lookup_orders"));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "ac"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("a\\*", "a*"));
        assert!(!m("a\\*", "ab"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("*a*b*c*", "xxaxxcxxbxx"));
        assert!(m("[]]", "]"));
        assert!(m("[a-]", "-"));
    }

    #[test]
    fn rejects_malformed() {
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("abc\\").is_err());
        assert!(Glob::new("[z-a]").is_err());
    }
}
