//! Rename detection: when tools (or properties) disappear and others appear,
//! pair each removed item with at most one added item it was probably renamed
//! to.
//!
//! # Similarity
//!
//! [`similarity`] is a weighted sum of four parts, each in `[0, 1]`. The
//! arguments and the behaviour hints weigh more than prose, since prose is
//! what vendors rewrite in the release that renames a tool, and REST
//! catalogs share long boilerplate between unrelated operations:
//!
//! | part | weight |
//! |------|--------|
//! | schema | 0.5 |
//! | description | 0.2 |
//! | name | 0.2 |
//! | annotations | 0.1 |
//!
//! A candidate is a *tool* when its value is an object with an `inputSchema`
//! member; anything else is a *property schema*.
//!
//! - **Schema.** The compared schema is `inputSchema` for a tool and, for a
//!   property, the value itself minus its top-level `description` and
//!   `annotations` (those are scored on their own). The schema is flattened
//!   into leaves: objects and arrays are walked member by member and element
//!   by element down to scalars, empty objects and empty arrays, each leaf
//!   keyed by its JSON pointer. A `required` array (the keyword, not a
//!   property that happens to be named `required`) is a set: each member is
//!   one leaf, whatever its position, and duplicates count once. Numbers
//!   compare as doubles, so `1` equals `1.0`. A leaf is *shared* when both
//!   sides have its pointer with equal values. The score is Jaccard,
//!   `shared / union` (`union` counts the pointers found on either side),
//!   except when the side with more leaves requires no top-level argument
//!   the other does not: then it is the mean of Jaccard and containment
//!   (`shared / leaves of the smaller side`), because a tool that kept its
//!   arguments and gained optional ones is the same call extended
//!   (`browser_wait` → `browser_wait_for`). If neither side has a leaf, the
//!   score is 1. A tool and a property schema score 0.
//! - **Description.** This is Jaccard similarity (`|A∩B| / |A∪B|`) over the
//!   sets of lowercased words in `description`. A word is a run of Unicode
//!   alphanumeric characters. If both sides have no words (missing, not a
//!   string, or only punctuation), the score is 1. If only one side has no
//!   words, the score is 0.
//! - **Name.** A name is split into tokens on every non-alphanumeric
//!   character (`_`, `-`, `.`, `/`, and so the `__` of namespacing prefixes
//!   such as `orders__`, whose namespace stays a token). It is also split at
//!   camelCase humps (`getHTTPResponse` → `get http response`) and at
//!   letter/digit boundaries (`v2` → `v 2`). Tokens are lowercased. The
//!   score is 1 for equal token sequences, so `getOrder` and `get_order`
//!   score 1. It is 0.95 for equal token sets in a different order or with
//!   repeated tokens (`order_get` and `get_order`). For two tools, it is 0.9
//!   when one token sequence is a strict prefix of the other: the old name
//!   kept and qualified (`click` → `click_unsafe`, `browser_wait` →
//!   `browser_wait_for`); a character edit distance scores that pair 0.42,
//!   below unrelated names that share a prefix. Otherwise it is
//!   `0.9 × Dice` over the token sets (`2|A∩B| / (|A|+|B|)`), so
//!   `get_order` and `fetch_order` score `0.9 × 0.5 = 0.45`.
//! - **Annotations.** The share of annotation members whose effective
//!   values are equal. The four MCP hints always count, an absent one read
//!   as its spec default (`readOnlyHint` false, `destructiveHint` true,
//!   `idempotentHint` false, `openWorldHint` true) and `destructiveHint` as
//!   false on a read-only tool, so spelling out the defaults changes
//!   nothing. Any other member counts once, except `title`, which is display
//!   text.
//!
//! The function is symmetric (`similarity(a, b) == similarity(b, a)`, bit
//! for bit) and deterministic.
//!
//! # Corroboration
//!
//! A pair is only accepted when, besides reaching the threshold, its name or
//! its description scores at least 0.5 ([`corroborated`]). Identical small
//! schemas are common: GitHub's REST description has dozens of operations
//! taking exactly `{org}` or `{owner, repo}`, and every parameterless tool
//! of a server looks alike, so schema and annotations alone (0.6 of the
//! score) say little about which tool is which. Measured on hand-labelled
//! releases (docs/renames.md), the gate turned away every false pair above
//! the threshold and no true rename that the threshold let through.
//!
//! # Kept arguments
//!
//! A tool renamed *and* changed in one release (its description and title
//! rewritten, an argument made optional, optional ones added, the verb or
//! the noun of its name replaced) scores below the threshold, and neither
//! its name nor its description corroborates it. What stayed ties it
//! instead ([`kept_arguments`]): a removed and an added tool pair, whatever
//! their score, when
//!
//! - at least three top-level arguments (members of `inputSchema.
//!   properties`) are in both with equal schemas (leaf by leaf, as above)
//!   *and* in no other removed or added tool, and the kept arguments are
//!   most of the removed tool's;
//! - every argument the removed tool required is kept, and the added tool
//!   requires nothing the removed one did not;
//! - the annotations are equal (the score's annotation part is 1);
//! - at least half the tokens of the shorter name are in the other.
//!
//! Arguments shared with another removed or added tool do not count:
//! GitHub's REST operations share `{owner, repo, per_page, page}` and
//! playwright's `{element, x, y}`, and such arguments say nothing about
//! which tool is which. The uniqueness is counted over the removed and
//! added tools only: tools present on both sides are not candidates.
//!
//! # Matching
//!
//! [`match_renames`] returns the pairs that maximize the *total* similarity
//! over all accepted pairs. Only accepted pairs count: at or above
//! `threshold` and corroborated, or tied by their kept arguments (and, in
//! both cases, above 0). Any other pair adds nothing, so two weak pairs can
//! never push out one strong pair that is accepted. The solver is
//! the Hungarian method ([`hungarian`]). Greedy best-first can lose here: it
//! takes the single best pair even when that pair blocks two good ones.
//!
//! - **Determinism.** Both lists are first sorted by name; same-named items
//!   are ordered by their JSON text and then their index. All later work
//!   uses that order, so permuting the input does not change which names
//!   pair. Inside the solver, each similarity is rounded to a multiple of
//!   2⁻²⁰; the returned similarity is not rounded. Among assignments whose
//!   rounded totals are equal, the solver picks the one that pairs items at
//!   the closest positions in name order: it minimizes `Σ |i − j|`, where
//!   `i` and `j` are positions in name order within the group of items that
//!   compete with each other. Example: with four identical scores,
//!   `tool_one`/`tool_two` pair with `tool_four`/`tool_three` in that
//!   order.
//! - **Components.** Pairs that pass the threshold link removed items to
//!   added items. Every connected group is solved on its own, which gives
//!   the same answer as one big matrix. A group with more than 500 items on
//!   one side is solved greedily instead: best similarity first, ties
//!   broken by removed name and then added name. So the Hungarian method
//!   never runs on more than 500 × 500, which is O(n³) with n ≤ 500.
//! - **Large inputs.** If `removed.len() × added.len() > 250_000`, only pairs
//!   that share a name token or a description word are scored. Pairs where
//!   both names have no tokens, or both descriptions have no words, also
//!   count. Any other pair has a name and a description score of 0, so it
//!   fails the corroboration gate whatever its total, and shares no name
//!   token, which kept arguments need: this filter changes no result; it
//!   only saves work.
//!
//! The result lists `(removed index, added index, similarity)`, sorted by
//! removed name. Indices point into the slices passed in.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use toolpin_manifest::pointer::escape_token;

use crate::compare::{effective_hints, HINT_DEFAULTS};

/// Threshold for tool renames: 0.65.
///
/// With weights 0.5 / 0.2 / 0.2 / 0.1:
///
/// - **The schema alone is not enough.** A byte-identical `inputSchema` with
///   equal annotations reaches only 0.6; the pair must also be
///   [`corroborated`] by its name or description, unless arguments unique
///   to the pair tie it ([`kept_arguments`], below any threshold).
/// - **The text alone is not enough.** An identical description, name and
///   annotations reach 0.5. The schema must still agree on 30 % of its
///   leaves, so a tool whose inputs were replaced is not a rename.
///
/// Measured (docs/renames.md): of 29 hand-labelled true renames in real
/// releases of @playwright/mcp and server-everything, the 26 found score
/// 0.69 to 0.95; the lowest is `browser_wait` → `browser_wait_for` (its
/// schema grew, its description was rewritten). The three missed have
/// both name and description rewritten, so only the schema ties them.
///
/// Property schemas often have no description. Two such properties get 0.2
/// from "both empty" plus 0.1 from annotations, so their schema carries
/// the decision; the schema rules pass a higher threshold (0.8).
pub const TOOL_RENAME_THRESHOLD: f64 = 0.65;

// Weights in tenths, so that a perfect pair sums to exactly 1.0 (0.5 + 0.2
// + 0.2 + 0.1 in doubles is 0.9999999999999999).
const W_SCHEMA: f64 = 5.0;
const W_DESCRIPTION: f64 = 2.0;
const W_NAME: f64 = 2.0;
const W_ANNOTATIONS: f64 = 1.0;
const W_TOTAL: f64 = 10.0;
/// A pair is only accepted when its name or its description scores at
/// least this much: see [`corroborated`].
const TEXT_EVIDENCE: f64 = 0.5;
/// Fewest kept arguments unique to a pair that pair two tools whatever
/// their descriptions and scores: see [`kept_arguments`].
const KEPT_ARGUMENTS: usize = 3;

/// Above this many removed × added pairs, only overlapping pairs are scored.
const FULL_PAIRS_LIMIT: usize = 250_000;
/// Largest side of a component solved exactly; larger ones are greedy.
const MAX_EXACT_SIDE: usize = 500;
/// Similarities are compared in steps of 2⁻²⁰ inside the matcher.
const QUANTUM: f64 = (1u64 << 20) as f64;
/// Weight of one similarity step relative to the name-position tie break.
/// It must be larger than any tie-break total (≤ 500 × 500 < 2¹⁸), and the
/// costs must stay exact in an f64 (2²⁰ × 2¹⁸ × 500 < 2⁵³).
const STEP: f64 = (1u64 << 18) as f64;

/// JSON Schema keywords whose members are named by the schema author, so a
/// member called `required` there is a property, not the keyword.
const NAME_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// One side of a candidate pair.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub value: &'a serde_json::Value,
}

/// Similarity in [0, 1] of two tools (or two property schemas); see the
/// module docs for the exact definition.
pub fn similarity(a: &Candidate, b: &Candidate) -> f64 {
    let mut interner = Interner::default();
    let fa = Features::new(a, &mut interner);
    let fb = Features::new(b, &mut interner);
    pair_similarity(&fa, &fb)
}

/// The four parts of [`similarity`], each in `[0, 1]`, before weighting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parts {
    pub schema: f64,
    pub description: f64,
    pub name: f64,
    pub annotations: f64,
}

/// The parts [`similarity`] weighs, for explaining a pairing.
pub fn similarity_parts(a: &Candidate, b: &Candidate) -> Parts {
    let mut interner = Interner::default();
    let fa = Features::new(a, &mut interner);
    let fb = Features::new(b, &mut interner);
    Parts {
        schema: schema_similarity(&fa, &fb),
        description: description_similarity(&fa, &fb),
        name: name_similarity(&fa, &fb),
        annotations: annotations_similarity(&fa, &fb),
    }
}

/// Pairs (index into removed, index into added, similarity), sorted by removed name.
///
/// Only accepted pairs are returned: `similarity >= threshold` and
/// corroborated, or two tools tied by their kept arguments (whose
/// similarity may be lower), and always `similarity > 0`; each index
/// appears at most once. See the module docs for the acceptance, the
/// assignment, tie breaking and the large-input guard.
pub fn match_renames(
    removed: &[Candidate],
    added: &[Candidate],
    threshold: f64,
) -> Vec<(usize, usize, f64)> {
    let prefilter = removed.len().saturating_mul(added.len()) > FULL_PAIRS_LIMIT;
    match_with(removed, added, threshold, prefilter, MAX_EXACT_SIDE)
}

/// Minimum-cost assignment (Hungarian method / Kuhn–Munkres with
/// potentials, O(n³) with `n = max(rows, columns)`).
///
/// Returns, for every row, the column it is assigned to. The matrix may be
/// rectangular: it is padded with zero-cost dummy rows or columns up to a
/// square. A constant padding changes no optimum. With more rows than
/// columns, the rows left on dummy columns get `None`.
///
/// Non-finite entries (NaN, ±∞) are forbidden cells, and so are the missing
/// cells of rows shorter than the longest. A row is only put on a forbidden
/// cell when nothing else is possible, and then it gets `None`. Finite costs
/// should stay well inside the f64 range (|cost| < 1e150).
///
/// The result is deterministic: the same matrix always gives the same
/// assignment. Rows are inserted in order, and an equal reduced cost goes
/// to the lowest column. So a constant matrix gives row `i` column `i`.
pub fn hungarian(cost: &[Vec<f64>]) -> Vec<Option<usize>> {
    let rows = cost.len();
    let cols = cost.iter().map(Vec::len).max().unwrap_or(0);
    if rows == 0 {
        return Vec::new();
    }
    let finite = cost.iter().flatten().copied().filter(|c| c.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
        (lo.min(c), hi.max(c))
    });
    if cols == 0 || lo > hi {
        return vec![None; rows];
    }
    let n = rows.max(cols);
    // Any assignment using a forbidden cell costs more than every assignment
    // that uses none: forbidden > hi + (n − 1)(hi − lo).
    let forbidden = hi + (hi - lo + 1.0) * n as f64;
    let real =
        |i: usize, j: usize| -> Option<f64> { cost[i].get(j).copied().filter(|c| c.is_finite()) };
    // Dense 1-based matrix, row 0 and column 0 unused.
    let w = n + 1;
    let mut a = vec![0.0; w * w];
    for i in 0..rows {
        for j in 0..cols {
            a[(i + 1) * w + j + 1] = real(i, j).unwrap_or(forbidden);
        }
    }
    let mut u = vec![0.0; w];
    let mut v = vec![0.0; w];
    let mut p = vec![0usize; w]; // p[j]: row assigned to column j
    let mut way = vec![0usize; w];
    let mut minv = vec![0.0; w];
    let mut used = vec![false; w];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        minv.fill(f64::INFINITY);
        used.fill(false);
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            let row = &a[i0 * w..(i0 + 1) * w];
            for j in 1..=n {
                if !used[j] {
                    let cur = row[j] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut out = vec![None; rows];
    for (j, &row) in p.iter().enumerate().skip(1) {
        let (i, col) = (row - 1, j - 1);
        if i < rows && col < cols && real(i, col).is_some() {
            out[i] = Some(col);
        }
    }
    out
}

/// The matcher, with its two guards as parameters so tests can force them.
fn match_with(
    removed: &[Candidate],
    added: &[Candidate],
    threshold: f64,
    prefilter: bool,
    max_exact_side: usize,
) -> Vec<(usize, usize, f64)> {
    if removed.is_empty() || added.is_empty() {
        return Vec::new();
    }
    let r_order = canonical_order(removed);
    let a_order = canonical_order(added);
    let mut interner = Interner::default();
    let rf: Vec<Features> = r_order
        .iter()
        .map(|&i| Features::new(&removed[i], &mut interner))
        .collect();
    let af: Vec<Features> = a_order
        .iter()
        .map(|&i| Features::new(&added[i], &mut interner))
        .collect();

    let unique = unique_arguments(&rf, &af);
    let edges = edges(&rf, &af, threshold, prefilter, &unique);
    let mut pairs: Vec<(usize, usize, f64)> = components(&edges, rf.len(), af.len())
        .iter()
        .flat_map(|comp| solve_component(comp, max_exact_side))
        .collect();
    pairs.sort_by_key(|p| p.0);
    pairs
        .into_iter()
        .map(|(ri, aj, s)| (r_order[ri], a_order[aj], s))
        .collect()
}

/// The pairs that may be renames, in rank space (rank = position in name
/// order), ordered by (removed rank, added rank): scored at least
/// `threshold` and corroborated, or tied by their kept arguments
/// ([`kept_arguments`]). With `prefilter`, only pairs that share a feature
/// key are scored; without, every pair.
fn edges(
    rf: &[Features],
    af: &[Features],
    threshold: f64,
    prefilter: bool,
    unique: &HashSet<u32>,
) -> Vec<(usize, usize, f64)> {
    let mut edges: Vec<(usize, usize, f64)> = Vec::new();
    let mut consider = |ri: usize, aj: usize| {
        let (r, a) = (&rf[ri], &af[aj]);
        let s = pair_similarity(r, a);
        if s > 0.0 && ((s >= threshold && corroborated(r, a)) || kept_arguments(r, a, unique)) {
            edges.push((ri, aj, s));
        }
    };
    if !prefilter {
        for ri in 0..rf.len() {
            for aj in 0..af.len() {
                consider(ri, aj);
            }
        }
        return edges;
    }
    let mut index: HashMap<Key, Vec<usize>> = HashMap::new();
    for (aj, f) in af.iter().enumerate() {
        for key in f.keys() {
            index.entry(key).or_default().push(aj);
        }
    }
    let mut seen = vec![usize::MAX; af.len()];
    let mut partners = Vec::new();
    for (ri, f) in rf.iter().enumerate() {
        partners.clear();
        for key in f.keys() {
            for &aj in index.get(&key).map(Vec::as_slice).unwrap_or(&[]) {
                if seen[aj] != ri {
                    seen[aj] = ri;
                    partners.push(aj);
                }
            }
        }
        partners.sort_unstable();
        for &aj in &partners {
            consider(ri, aj);
        }
    }
    edges
}

/// Connected components of the edge graph (removed ranks, then added
/// ranks offset by the number removed), each with its edges in the order
/// given, in the order of their first edge.
fn components(
    edges: &[(usize, usize, f64)],
    removed: usize,
    added: usize,
) -> Vec<Vec<(usize, usize, f64)>> {
    let mut parent: Vec<usize> = (0..removed + added).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &(ri, aj, _) in edges {
        let (x, y) = (find(&mut parent, ri), find(&mut parent, removed + aj));
        if x != y {
            parent[x.max(y)] = x.min(y);
        }
    }
    let mut component_of: HashMap<usize, usize> = HashMap::new();
    let mut components: Vec<Vec<(usize, usize, f64)>> = Vec::new();
    for &edge in edges {
        let root = find(&mut parent, edge.0);
        let c = *component_of.entry(root).or_insert_with(|| {
            components.push(Vec::new());
            components.len() - 1
        });
        components[c].push(edge);
    }
    components
}

/// Best pairs of one connected component, given its edges in rank space
/// (rank = position in name order). The total similarity, each term rounded
/// to a multiple of 2⁻²⁰, comes first; among equal totals, the assignment
/// with the least `Σ |i − j|` over positions within the component wins.
fn solve_component(
    comp: &[(usize, usize, f64)],
    max_exact_side: usize,
) -> Vec<(usize, usize, f64)> {
    let mut rows: Vec<usize> = comp.iter().map(|e| e.0).collect();
    let mut cols: Vec<usize> = comp.iter().map(|e| e.1).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    if rows.len().max(cols.len()) > max_exact_side {
        return greedy(comp);
    }
    let mut sims = vec![vec![None; cols.len()]; rows.len()];
    let mut cost = vec![vec![0.0; cols.len()]; rows.len()];
    for &(ri, aj, s) in comp {
        let li = rows.binary_search(&ri).unwrap_or_default();
        let lj = cols.binary_search(&aj).unwrap_or_default();
        sims[li][lj] = Some(s);
        let steps = (s * QUANTUM).round();
        cost[li][lj] = -steps * STEP + li.abs_diff(lj) as f64;
    }
    let mut out = Vec::new();
    for (li, col) in hungarian(&cost).into_iter().enumerate() {
        let Some(lj) = col else { continue };
        if let Some(s) = sims[li][lj] {
            out.push((rows[li], cols[lj], s));
        }
    }
    out
}

/// Greedy best-first over one component's edges: highest similarity first,
/// ties by removed rank then added rank (that is, by names).
fn greedy(edges: &[(usize, usize, f64)]) -> Vec<(usize, usize, f64)> {
    let mut sorted = edges.to_vec();
    sorted.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)).then(x.1.cmp(&y.1)));
    let mut taken_r = std::collections::HashSet::new();
    let mut taken_a = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (ri, aj, s) in sorted {
        if !taken_r.contains(&ri) && !taken_a.contains(&aj) {
            taken_r.insert(ri);
            taken_a.insert(aj);
            out.push((ri, aj, s));
        }
    }
    out
}

/// Indices sorted by name, then JSON text, then index.
fn canonical_order(items: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&x, &y| {
        let (a, b) = (&items[x], &items[y]);
        a.name
            .cmp(b.name)
            .then_with(|| a.value.to_string().cmp(&b.value.to_string()))
            .then(x.cmp(&y))
    });
    order
}

/// Interns pointers and words so that comparisons are on integers. Ids
/// depend on insertion order, but only equality of ids is ever used, so
/// results do not.
#[derive(Default)]
struct Interner<'v> {
    pointers: HashMap<String, u32>,
    words: HashMap<String, u32>,
    /// A top-level argument: its leaves (pointer ids, so its name too).
    arguments: HashMap<Vec<(u32, Leaf<'v>)>, u32>,
}

fn intern(map: &mut HashMap<String, u32>, s: String) -> u32 {
    let next = map.len() as u32;
    *map.entry(s).or_insert(next)
}

/// Value of one schema leaf.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Leaf<'v> {
    Null,
    Bool(bool),
    /// Bits of the number as a double (with −0 folded into 0).
    Number(u64),
    /// A number that does not parse as a double (kept as text).
    NumberText(String),
    String(&'v str),
    EmptyObject,
    EmptyArray,
    /// Member of a `required` set.
    Member,
}

impl<'v> Leaf<'v> {
    fn of(v: &'v Value) -> Self {
        match v {
            Value::Null => Leaf::Null,
            Value::Bool(b) => Leaf::Bool(*b),
            Value::Number(n) => match n.as_f64() {
                Some(f) => Leaf::Number(if f == 0.0 { 0f64 } else { f }.to_bits()),
                None => Leaf::NumberText(n.to_string()),
            },
            Value::String(s) => Leaf::String(s),
            Value::Object(_) => Leaf::EmptyObject,
            Value::Array(_) => Leaf::EmptyArray,
        }
    }
}

/// Key of the large-input index: what two candidates must share for their
/// name or description similarity to be non-zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    NameToken(u32),
    NoNameTokens,
    Word(u32),
    NoWords,
}

/// Everything [`pair_similarity`] needs, computed once per candidate.
struct Features<'v> {
    is_tool: bool,
    /// Sorted by pointer id, one leaf per pointer.
    leaves: Vec<(u32, Leaf<'v>)>,
    /// Sorted, deduplicated word ids of the description.
    words: Vec<u32>,
    name_seq: Vec<u32>,
    /// Sorted, deduplicated `name_seq`.
    name_set: Vec<u32>,
    /// The top-level `required` names, sorted and deduplicated.
    required: Vec<&'v str>,
    /// Effective hints (absent → spec default), in `HINT_DEFAULTS` order.
    hints: [Option<bool>; 4],
    /// Other annotation members, sorted by key; `title` is display text
    /// and is left out.
    other_annotations: Vec<(&'v str, &'v Value)>,
    /// A tool's top-level arguments (members of `inputSchema.properties`)
    /// as (id, name), sorted by id. Two arguments have the same id when
    /// they have the same name and equal schemas (leaf by leaf). Empty for
    /// a property schema.
    arguments: Vec<(u32, &'v str)>,
}

impl<'v> Features<'v> {
    fn new(c: &Candidate<'v>, interner: &mut Interner<'v>) -> Self {
        let obj = c.value.as_object();
        let is_tool = obj.is_some_and(|o| o.contains_key("inputSchema"));
        let mut raw = Vec::new();
        let mut ptr = String::new();
        match (obj, is_tool) {
            (Some(o), true) => walk(&o["inputSchema"], &mut ptr, false, &mut raw),
            (Some(o), false) => walk_members(
                o.iter()
                    .filter(|(k, _)| *k != "description" && *k != "annotations"),
                &mut ptr,
                false,
                &mut raw,
            ),
            (None, _) => walk(c.value, &mut ptr, false, &mut raw),
        }
        // Which top-level argument each leaf belongs to (tools only).
        let owners: Vec<Option<&'v str>> = match (obj, is_tool) {
            (Some(o), true) => argument_owners(&o["inputSchema"], &raw),
            _ => Vec::new(),
        };
        let mut leaves: Vec<(u32, Leaf<'v>)> = raw
            .into_iter()
            .map(|(p, leaf)| (intern(&mut interner.pointers, p), leaf))
            .collect();
        let arguments = intern_arguments(&owners, &leaves, interner);
        leaves.sort_by_key(|l| l.0);
        leaves.dedup_by_key(|l| l.0);

        let description = obj
            .and_then(|o| o.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut words: Vec<u32> = words(description)
            .map(|w| intern(&mut interner.words, w))
            .collect();
        words.sort_unstable();
        words.dedup();

        let name_seq: Vec<u32> = name_tokens(c.name)
            .into_iter()
            .map(|t| intern(&mut interner.words, t))
            .collect();
        let mut name_set = name_seq.clone();
        name_set.sort_unstable();
        name_set.dedup();

        let schema = match (obj, is_tool) {
            (Some(o), true) => &o["inputSchema"],
            _ => c.value,
        };
        let mut required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        required.sort_unstable();
        required.dedup();
        let hints = effective_hints(c.value);
        let mut other_annotations: Vec<(&str, &Value)> = obj
            .and_then(|o| o.get("annotations"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(k, v)| {
                !v.is_null() && k.as_str() != "title" && !HINT_DEFAULTS.iter().any(|(h, _)| h == k)
            })
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        other_annotations.sort_by_key(|(k, _)| *k);
        Features {
            is_tool,
            leaves,
            words,
            name_seq,
            name_set,
            required,
            hints,
            other_annotations,
            arguments,
        }
    }

    fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        let no_name = self.name_set.is_empty().then_some(Key::NoNameTokens);
        let no_words = self.words.is_empty().then_some(Key::NoWords);
        self.name_set
            .iter()
            .map(|&t| Key::NameToken(t))
            .chain(self.words.iter().map(|&w| Key::Word(w)))
            .chain(no_name)
            .chain(no_words)
    }
}

/// For each leaf of a tool's `inputSchema`, the name of the top-level
/// argument (member of `properties`) it lies under, if any.
fn argument_owners<'v>(schema: &'v Value, raw: &[(String, Leaf)]) -> Vec<Option<&'v str>> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return vec![None; raw.len()];
    };
    let by_token: HashMap<String, &'v str> = props
        .keys()
        .map(|k| (escape_token(k).into_owned(), k.as_str()))
        .collect();
    // An argument's leaves come one after the other: look each token up once.
    let mut last: Option<(&str, Option<&'v str>)> = None;
    raw.iter()
        .map(|(ptr, _)| {
            let rest = ptr.strip_prefix("/properties/")?;
            let token = rest.split('/').next().unwrap_or(rest);
            match last {
                Some((t, owner)) if t == token => owner,
                _ => {
                    let owner = by_token.get(token).copied();
                    last = Some((token, owner));
                    owner
                }
            }
        })
        .collect()
}

/// The arguments as (id, name), sorted by id, from the leaves (already
/// interned) and the argument each lies under.
fn intern_arguments<'v>(
    owners: &[Option<&'v str>],
    leaves: &[(u32, Leaf<'v>)],
    interner: &mut Interner<'v>,
) -> Vec<(u32, &'v str)> {
    let mut groups: HashMap<&'v str, Vec<(u32, Leaf<'v>)>> = HashMap::new();
    let mut i = 0;
    while i < owners.len() {
        let run = owners[i..].iter().take_while(|o| **o == owners[i]).count();
        if let Some(name) = owners[i] {
            groups
                .entry(name)
                .or_default()
                .extend_from_slice(&leaves[i..i + run]);
        }
        i += run;
    }
    let mut out: Vec<(u32, &'v str)> = groups
        .into_iter()
        .map(|(name, mut group)| {
            group.sort_by_key(|l| l.0);
            group.dedup_by_key(|l| l.0);
            let next = interner.arguments.len() as u32;
            (*interner.arguments.entry(group).or_insert(next), name)
        })
        .collect();
    out.sort_unstable();
    out
}

fn push_token(ptr: &mut String, token: &str) {
    ptr.push('/');
    ptr.push_str(&escape_token(token));
}

/// Flattens `v` into `(pointer, leaf)` pairs. `names_map` is true when the
/// object's members are author-chosen names (the value of `properties`, …).
fn walk<'v>(v: &'v Value, ptr: &mut String, names_map: bool, out: &mut Vec<(String, Leaf<'v>)>) {
    match v {
        Value::Object(m) => walk_members(m.iter(), ptr, names_map, out),
        Value::Array(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                let len = ptr.len();
                push_token(ptr, &i.to_string());
                walk(item, ptr, false, out);
                ptr.truncate(len);
            }
        }
        _ => out.push((ptr.clone(), Leaf::of(v))),
    }
}

fn walk_members<'v>(
    members: impl Iterator<Item = (&'v String, &'v Value)>,
    ptr: &mut String,
    names_map: bool,
    out: &mut Vec<(String, Leaf<'v>)>,
) {
    let before = out.len();
    for (key, child) in members {
        let len = ptr.len();
        push_token(ptr, key);
        match child {
            Value::Array(items) if !names_map && key == "required" => {
                // A set: one leaf per member, keyed `/~` + the member's JSON
                // text (`/required/~"id"`), so its position does not matter.
                // Array indices never start with `~`, so the keys cannot
                // collide with those of a positional walk.
                for item in items {
                    let l2 = ptr.len();
                    ptr.push_str("/~");
                    ptr.push_str(&item.to_string());
                    out.push((ptr.clone(), Leaf::Member));
                    ptr.truncate(l2);
                }
            }
            _ => walk(
                child,
                ptr,
                !names_map && NAME_MAPS.contains(&key.as_str()),
                out,
            ),
        }
        ptr.truncate(len);
    }
    // An object that yielded no leaf (empty, or only an empty `required`)
    // is itself a leaf, so `{}` differs from a missing schema.
    if out.len() == before {
        out.push((ptr.clone(), Leaf::EmptyObject));
    }
}

/// Lowercased runs of alphanumeric characters.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Splits a name on non-alphanumerics, camelCase humps and letter/digit
/// boundaries; tokens are lowercased.
fn name_tokens(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut tokens = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                tokens.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_numeric() != c.is_numeric())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower);
            if boundary {
                tokens.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    tokens
}

fn pair_similarity(a: &Features, b: &Features) -> f64 {
    let total = W_SCHEMA * schema_similarity(a, b)
        + W_DESCRIPTION * description_similarity(a, b)
        + W_NAME * name_similarity(a, b)
        + W_ANNOTATIONS * annotations_similarity(a, b);
    (total / W_TOTAL).clamp(0.0, 1.0)
}

/// The name or the description ties the two together: one of them scores
/// at least [`TEXT_EVIDENCE`]. Without this, an identical small schema
/// (`{org}`, `{owner, repo}`, no arguments at all) and equal annotations
/// carry a pair on their own, and such schemas recur across dozens of
/// unrelated tools of one catalog (GitHub's REST description pairs
/// `repos_list-tag-protection` with `repos_list-issue-types` that way).
fn corroborated(a: &Features, b: &Features) -> bool {
    name_similarity(a, b) >= TEXT_EVIDENCE || description_similarity(a, b) >= TEXT_EVIDENCE
}

/// The arguments (name and schema, by id) that exactly one removed and
/// exactly one added item have: only these tie a pair on their own. An
/// argument that several removed or added tools take (GitHub's `{owner,
/// repo, per_page, page}`, playwright's `{element, x, y}`) says nothing
/// about which of them is which.
fn unique_arguments(rf: &[Features], af: &[Features]) -> HashSet<u32> {
    let count = |side: &[Features]| {
        let mut n: HashMap<u32, usize> = HashMap::new();
        for f in side {
            for &(id, _) in &f.arguments {
                *n.entry(id).or_default() += 1;
            }
        }
        n
    };
    let (r, a) = (count(rf), count(af));
    r.into_iter()
        .filter(|&(id, n)| n == 1 && a.get(&id) == Some(&1))
        .map(|(id, _)| id)
        .collect()
}

/// The removed tool `r` and the added tool `a` are the same call renamed
/// and changed, whatever their descriptions say: what stayed outweighs
/// what moved. All of:
///
/// - **Kept arguments.** At least [`KEPT_ARGUMENTS`] top-level arguments
///   are in both with equal schemas *and* in no other removed or added
///   tool (`unique`), and the kept arguments are most of `r`'s arguments.
/// - **The old call still works.** Every argument `r` required is kept, and
///   `a` requires nothing `r` did not (one may become optional, new ones
///   must be optional).
/// - **Same behaviour.** The annotations are equal (effective hints and
///   every other member but `title`).
/// - **The name partly stayed.** At least half the tokens of the shorter
///   name are in the other (the verb or the noun: `search_issues` →
///   `find_issues`, `list_prs` → `list_pull_requests`).
fn kept_arguments(r: &Features, a: &Features, unique: &HashSet<u32>) -> bool {
    // The cheap conditions first: most pairs fail one of them.
    let shorter = r.name_set.len().min(a.name_set.len());
    if !(r.is_tool && a.is_tool)
        || r.arguments.len() < KEPT_ARGUMENTS
        || shorter == 0
        || 2 * intersection(&r.name_set, &a.name_set) < shorter
        || annotations_similarity(r, a) != 1.0
    {
        return false;
    }
    let (mut i, mut j) = (0, 0);
    let (mut kept, mut kept_unique) = (Vec::new(), 0usize);
    while i < r.arguments.len() && j < a.arguments.len() {
        match r.arguments[i].0.cmp(&a.arguments[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                kept.push(r.arguments[i].1);
                kept_unique += usize::from(unique.contains(&r.arguments[i].0));
                i += 1;
                j += 1;
            }
        }
    }
    if kept_unique < KEPT_ARGUMENTS || 2 * kept.len() <= r.arguments.len() {
        return false;
    }
    kept.sort_unstable();
    let subset = |p: &[&str], q: &[&str]| p.iter().all(|x| q.binary_search(x).is_ok());
    subset(&r.required, &kept) && subset(&a.required, &r.required)
}

fn schema_similarity(a: &Features, b: &Features) -> f64 {
    if a.is_tool != b.is_tool {
        return 0.0;
    }
    let (x, y) = (&a.leaves, &b.leaves);
    let (mut i, mut j, mut union, mut same) = (0, 0, 0usize, 0usize);
    while i < x.len() && j < y.len() {
        union += 1;
        match x[i].0.cmp(&y[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                same += usize::from(x[i].1 == y[j].1);
                i += 1;
                j += 1;
            }
        }
    }
    union += (x.len() - i) + (y.len() - j);
    if union == 0 {
        return 1.0;
    }
    let jaccard = same as f64 / union as f64;
    // A tool that kept its arguments and gained optional ones (`browser_wait`
    // → `browser_wait_for`) is closer than Jaccard says: then the score is
    // the mean of Jaccard and containment (shared / smaller side). Only when
    // the larger side requires nothing the smaller does not: new required
    // arguments make it a different call (`browser_screen_type {text}` →
    // `browser_type {element, ref, text}`).
    let subset = |p: &[&str], q: &[&str]| p.iter().all(|r| q.binary_search(r).is_ok());
    let extends = match x.len().cmp(&y.len()) {
        std::cmp::Ordering::Less => subset(&b.required, &a.required),
        std::cmp::Ordering::Greater => subset(&a.required, &b.required),
        std::cmp::Ordering::Equal => {
            subset(&a.required, &b.required) || subset(&b.required, &a.required)
        }
    };
    let smaller = x.len().min(y.len());
    if !extends || smaller == 0 {
        return jaccard;
    }
    (jaccard + same as f64 / smaller as f64) / 2.0
}

fn description_similarity(a: &Features, b: &Features) -> f64 {
    match (a.words.is_empty(), b.words.is_empty()) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        (false, false) => {
            let inter = intersection(&a.words, &b.words);
            inter as f64 / (a.words.len() + b.words.len() - inter) as f64
        }
    }
}

fn name_similarity(a: &Features, b: &Features) -> f64 {
    if a.name_seq == b.name_seq {
        1.0
    } else if a.name_set == b.name_set {
        0.95
    } else if a.is_tool && b.is_tool && token_prefix(&a.name_seq, &b.name_seq) {
        // The old name kept and qualified (`click` → `click_unsafe`,
        // `browser_wait` → `browser_wait_for`). Not for properties, where
        // `page` → `page_size` is as often a new property as a renamed one.
        0.9
    } else {
        let inter = intersection(&a.name_set, &b.name_set);
        0.9 * (2 * inter) as f64 / (a.name_set.len() + b.name_set.len()) as f64
    }
}

/// One non-empty token sequence is a strict prefix of the other.
fn token_prefix(x: &[u32], y: &[u32]) -> bool {
    let (short, long) = if x.len() <= y.len() { (x, y) } else { (y, x) };
    !short.is_empty() && short.len() < long.len() && long.starts_with(short)
}

/// The share of annotation members with equal effective values: the four
/// hints (absent reads as the spec default) and any other member but
/// `title`.
fn annotations_similarity(a: &Features, b: &Features) -> f64 {
    let hints_equal = a.hints.iter().zip(&b.hints).filter(|(x, y)| x == y).count();
    let (x, y) = (&a.other_annotations, &b.other_annotations);
    let (mut i, mut j, mut members, mut equal) = (0, 0, HINT_DEFAULTS.len(), hints_equal);
    while i < x.len() || j < y.len() {
        members += 1;
        match (x.get(i), y.get(j)) {
            (Some(p), Some(q)) if p.0 == q.0 => {
                equal += usize::from(json_eq(p.1, q.1));
                i += 1;
                j += 1;
            }
            (Some(p), Some(q)) if p.0 < q.0 => i += 1,
            (Some(_), None) => i += 1,
            _ => j += 1,
        }
    }
    equal as f64 / members as f64
}

/// Size of the intersection of two sorted, deduplicated slices.
fn intersection(x: &[u32], y: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// JSON equality with numbers compared as doubles.
fn json_eq(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (Value::Number(a), Value::Number(b)) => {
            a == b || matches!((a.as_f64(), b.as_f64()), (Some(p), Some(q)) if p == q)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, p)| b.get(k).is_some_and(|q| json_eq(p, q)))
        }
        _ => x == y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, props: Value, required: Value) -> Value {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": props, "required": required},
        })
    }

    fn cands(values: &[Value]) -> Vec<Candidate<'_>> {
        values
            .iter()
            .map(|v| Candidate {
                name: v["name"].as_str().unwrap_or(""),
                value: v,
            })
            .collect()
    }

    /// Pairs as (removed name, added name).
    fn named<'a>(
        pairs: &[(usize, usize, f64)],
        removed: &[Candidate<'a>],
        added: &[Candidate<'a>],
    ) -> Vec<(&'a str, &'a str)> {
        pairs
            .iter()
            .map(|&(r, a, _)| (removed[r].name, added[a].name))
            .collect()
    }

    fn features_of(v: &Value) -> (Features<'_>, Interner<'_>) {
        let mut interner = Interner::default();
        let name = v["name"].as_str().unwrap_or("");
        let f = Features::new(&Candidate { name, value: v }, &mut interner);
        (f, interner)
    }

    fn name_sim(a: &str, b: &str) -> f64 {
        let mut interner = Interner::default();
        let (va, vb) = (json!({}), json!({}));
        let fa = Features::new(
            &Candidate {
                name: a,
                value: &va,
            },
            &mut interner,
        );
        let fb = Features::new(
            &Candidate {
                name: b,
                value: &vb,
            },
            &mut interner,
        );
        name_similarity(&fa, &fb)
    }

    fn schema_sim(a: &Value, b: &Value) -> f64 {
        let mut interner = Interner::default();
        let fa = Features::new(
            &Candidate {
                name: "a",
                value: a,
            },
            &mut interner,
        );
        let fb = Features::new(
            &Candidate {
                name: "b",
                value: b,
            },
            &mut interner,
        );
        schema_similarity(&fa, &fb)
    }

    /// Deterministic generator (64-bit LCG, high bits).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, bound: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) % bound as u64) as usize
        }
    }

    fn total(cost: &[Vec<f64>], assignment: &[Option<usize>]) -> f64 {
        assignment
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|j| cost[i][j]))
            .sum()
    }

    /// Minimum total over all assignments of min(rows, cols) pairs.
    fn brute_force(cost: &[Vec<f64>]) -> f64 {
        fn go(cost: &[Vec<f64>], row: usize, used: &mut Vec<bool>, left: usize) -> f64 {
            if left == 0 {
                return 0.0;
            }
            if cost.len() - row < left {
                return f64::INFINITY;
            }
            // Skip this row (only useful when rows > cols).
            let mut best = go(cost, row + 1, used, left);
            for j in 0..used.len() {
                if !used[j] {
                    used[j] = true;
                    best = best.min(cost[row][j] + go(cost, row + 1, used, left - 1));
                    used[j] = false;
                }
            }
            best
        }
        let cols = cost[0].len();
        go(cost, 0, &mut vec![false; cols], cost.len().min(cols))
    }

    #[test]
    fn hungarian_classic_3x3() {
        let cost = vec![
            vec![4.0, 1.0, 3.0],
            vec![2.0, 0.0, 5.0],
            vec![3.0, 2.0, 2.0],
        ];
        let a = hungarian(&cost);
        assert_eq!(a, vec![Some(1), Some(0), Some(2)]);
        assert_eq!(total(&cost, &a), 5.0);
    }

    #[test]
    fn hungarian_rectangular() {
        // 2x3: both rows prefer column 1; the optimum sends row 1 to column 0.
        let wide = vec![vec![5.0, 1.0, 9.0], vec![2.0, 8.0, 9.0]];
        assert_eq!(hungarian(&wide), vec![Some(1), Some(0)]);
        // 3x2: one row must stay unassigned; the cheapest pair of rows wins.
        let tall = vec![vec![5.0, 1.0], vec![2.0, 8.0], vec![0.0, 0.5]];
        let a = hungarian(&tall);
        assert_eq!(a, vec![Some(1), None, Some(0)]);
        assert_eq!(total(&tall, &a), 1.0);
    }

    #[test]
    fn hungarian_matches_brute_force() {
        let mut rng = Lcg(7);
        for _ in 0..300 {
            let (rows, cols) = (1 + rng.next(5), 1 + rng.next(5));
            let cost: Vec<Vec<f64>> = (0..rows)
                .map(|_| (0..cols).map(|_| rng.next(20) as f64 - 5.0).collect())
                .collect();
            let a = hungarian(&cost);
            assert_eq!(a.len(), rows);
            let assigned: Vec<usize> = a.iter().flatten().copied().collect();
            assert_eq!(assigned.len(), rows.min(cols), "{cost:?} -> {a:?}");
            let mut dedup = assigned.clone();
            dedup.sort_unstable();
            dedup.dedup();
            assert_eq!(dedup.len(), assigned.len(), "column used twice");
            assert_eq!(total(&cost, &a), brute_force(&cost), "{cost:?} -> {a:?}");
        }
    }

    #[test]
    fn hungarian_ties_are_deterministic() {
        let flat = vec![vec![1.0; 3]; 3];
        assert_eq!(hungarian(&flat), vec![Some(0), Some(1), Some(2)]);
        assert_eq!(hungarian(&vec![vec![0.0; 3]; 2]), vec![Some(0), Some(1)]);
        assert_eq!(
            hungarian(&vec![vec![0.0; 2]; 3]),
            vec![Some(0), Some(1), None]
        );
        // Two optima of cost 9: {0→1, 1→2} and {0→2, 1→1}.
        let tie = vec![vec![10.0, 2.0, 8.0], vec![9.0, 1.0, 7.0]];
        let first = hungarian(&tie);
        assert_eq!(total(&tie, &first), 9.0);
        for _ in 0..5 {
            assert_eq!(hungarian(&tie), first);
        }
    }

    #[test]
    fn hungarian_forbidden_and_degenerate() {
        let inf = f64::INFINITY;
        assert_eq!(
            hungarian(&[vec![inf, 1.0], vec![1.0, f64::NAN]]),
            vec![Some(1), Some(0)]
        );
        // Row 0 only has forbidden cells: it gets None rather than a cell.
        assert_eq!(
            hungarian(&[vec![f64::NAN, inf], vec![1.0, 2.0]]),
            vec![None, Some(0)]
        );
        // Short rows: the missing cells are forbidden.
        assert_eq!(
            hungarian(&[vec![1.0], vec![3.0, 1.0]]),
            vec![Some(0), Some(1)]
        );
        assert_eq!(hungarian(&[]), Vec::<Option<usize>>::new());
        assert_eq!(hungarian(&[vec![], vec![]]), vec![None, None]);
        assert_eq!(hungarian(&[vec![f64::NAN]]), vec![None]);
    }

    #[test]
    fn get_order_renamed_to_fetch_order() {
        let props = json!({"order_id": {"type": "string", "description": "The order id"}});
        let removed = [tool(
            "get_order",
            "Get an order by its id.",
            props.clone(),
            json!(["order_id"]),
        )];
        let added = [tool(
            "fetch_order",
            "Fetch an order by its id.",
            props,
            json!(["order_id"]),
        )];
        let (r, a) = (cands(&removed), cands(&added));
        let s = similarity(&r[0], &a[0]);
        // schema 1, description 5/7, name 0.9 × 1/2, annotations 1.
        let expected = 0.5 + 0.2 * 5.0 / 7.0 + 0.2 * 0.45 + 0.1;
        assert!((s - expected).abs() < 1e-12, "{s}");
        assert!(s >= TOOL_RENAME_THRESHOLD);
        assert_eq!(
            match_renames(&r, &a, TOOL_RENAME_THRESHOLD),
            vec![(0, 0, s)]
        );
    }

    #[test]
    fn swapped_order_pairs_by_content() {
        let removed = [
            tool(
                "get_order",
                "Get an order by its id.",
                json!({"order_id": {"type": "string"}}),
                json!(["order_id"]),
            ),
            tool(
                "list_users",
                "List the users of a workspace, newest first.",
                json!({"workspace": {"type": "string"}, "limit": {"type": "integer"}}),
                json!(["workspace"]),
            ),
        ];
        let added = [
            tool(
                "users_list",
                "List the users of a workspace, newest first.",
                json!({"workspace": {"type": "string"}, "limit": {"type": "integer"}}),
                json!(["workspace"]),
            ),
            tool(
                "fetch_order",
                "Fetch an order by its id.",
                json!({"order_id": {"type": "string"}}),
                json!(["order_id"]),
            ),
        ];
        let (r, a) = (cands(&removed), cands(&added));
        let pairs = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        assert_eq!(
            named(&pairs, &r, &a),
            vec![("get_order", "fetch_order"), ("list_users", "users_list")]
        );
        assert_eq!(
            pairs.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>(),
            vec![(0, 1), (1, 0)]
        );
    }

    #[test]
    fn assignment_beats_greedy() {
        let id = || json!({"order_id": {"type": "string"}});
        let with =
            |extra: &str, ty: &str| json!({"order_id": {"type": "string"}, extra: {"type": ty}});
        let removed = [
            tool(
                "get_order",
                "Return one order by id",
                id(),
                json!(["order_id"]),
            ),
            tool(
                "fetch_order_legacy",
                "Return one order by id legacy endpoint",
                with("legacy", "boolean"),
                json!(["order_id"]),
            ),
        ];
        let added = [
            tool(
                "fetch_order",
                "Return one order by id",
                id(),
                json!(["order_id"]),
            ),
            tool(
                "get_order_v2",
                "Return one order by id with expansions",
                with("expand", "boolean"),
                json!(["order_id"]),
            ),
        ];
        let (r, a) = (cands(&removed), cands(&added));
        let s = |i: usize, j: usize| similarity(&r[i], &a[j]);
        // The trap: the single best pair is get_order → fetch_order. Taking
        // it leaves fetch_order_legacy → get_order_v2, which is below the
        // threshold, so greedy explains one rename where two fit.
        assert!(s(0, 0) > s(0, 1) && s(0, 0) > s(1, 0));
        assert!(s(0, 1) >= TOOL_RENAME_THRESHOLD && s(1, 0) >= TOOL_RENAME_THRESHOLD);
        assert!(s(1, 1) < TOOL_RENAME_THRESHOLD);

        let greedy = match_with(&r, &a, TOOL_RENAME_THRESHOLD, false, 0);
        assert_eq!(named(&greedy, &r, &a), vec![("get_order", "fetch_order")]);

        let best = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        assert_eq!(
            named(&best, &r, &a),
            vec![
                ("fetch_order_legacy", "fetch_order"),
                ("get_order", "get_order_v2")
            ]
        );
        let sum = |p: &[(usize, usize, f64)]| p.iter().map(|x| x.2).sum::<f64>();
        assert!(sum(&best) > sum(&greedy));
    }

    #[test]
    fn unrelated_tools_do_not_pair() {
        let removed = [tool(
            "get_order",
            "Get an order by its id.",
            json!({"order_id": {"type": "string"}}),
            json!(["order_id"]),
        )];
        let added = [tool(
            "send_email",
            "Send an email message to a recipient.",
            json!({"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}),
            json!(["to", "body"]),
        )];
        let (r, a) = (cands(&removed), cands(&added));
        assert!(
            similarity(&r[0], &a[0]) < 0.3,
            "{}",
            similarity(&r[0], &a[0])
        );
        assert!(match_renames(&r, &a, TOOL_RENAME_THRESHOLD).is_empty());
    }

    #[test]
    fn identical_small_schema_alone_is_not_a_rename() {
        // Two unrelated tools that both take `{id}` and share the words
        // "by id" reach the threshold (0.5 + 0.2 × 2/8 + 0.1 = 0.65), but
        // neither their names (0) nor their descriptions (0.25) tie them.
        let removed = [tool(
            "get_order",
            "Fetch an order by id",
            json!({"id": {"type": "string"}}),
            json!(["id"]),
        )];
        let added = [tool(
            "delete_user",
            "Delete a user by id",
            json!({"id": {"type": "string"}}),
            json!(["id"]),
        )];
        let (r, a) = (cands(&removed), cands(&added));
        let s = similarity(&r[0], &a[0]);
        assert!((s - 0.65).abs() < 1e-12, "{s}");
        assert!(match_renames(&r, &a, TOOL_RENAME_THRESHOLD).is_empty());
        assert!(match_renames(&r, &a, 0.1).is_empty());
        // The same pair with a description that ties them is a rename.
        let mut again = added.clone();
        again[0]["description"] = json!("Fetch an order by id");
        let a = cands(&again);
        assert_eq!(match_renames(&r, &a, TOOL_RENAME_THRESHOLD).len(), 1);
    }

    #[test]
    fn name_tokens_and_name_similarity() {
        assert_eq!(name_tokens("getOrder"), ["get", "order"]);
        assert_eq!(name_tokens("get_order"), ["get", "order"]);
        assert_eq!(name_tokens("get-order"), ["get", "order"]);
        assert_eq!(
            name_tokens("getHTTPResponse2"),
            ["get", "http", "response", "2"]
        );
        assert_eq!(name_tokens("orders__get_order"), ["orders", "get", "order"]);
        assert_eq!(name_tokens("v2"), ["v", "2"]);
        assert_eq!(name_tokens("__"), Vec::<String>::new());

        assert_eq!(name_sim("getOrder", "get_order"), 1.0);
        assert_eq!(name_sim("orders__getOrder", "orders.get-order"), 1.0);
        assert_eq!(name_sim("order_get", "get_order"), 0.95);
        assert_eq!(name_sim("get_order", "fetch_order"), 0.45);
        assert_eq!(name_sim("get_order", "send_email"), 0.0);
        assert!(name_sim("getOrder", "get_order") > name_sim("get_order", "get_orders"));
    }

    #[test]
    fn schema_required_is_a_set_and_numbers_are_doubles() {
        let a = json!({"inputSchema": {"type": "object", "required": ["a", "b"], "maximum": 1}});
        let b =
            json!({"inputSchema": {"type": "object", "required": ["b", "a", "a"], "maximum": 1.0}});
        assert_eq!(schema_sim(&a, &b), 1.0);
        // A required member dropped: leaves /type, /maximum, /required/~"a",
        // /required/~"b" — one of four differs.
        let c = json!({"inputSchema": {"type": "object", "required": ["a"], "maximum": 1}});
        assert_eq!(schema_sim(&a, &c), 0.75);
        // A property named `required` is a schema, not a set.
        let p = json!({"inputSchema": {"properties": {"required": {"enum": ["x", "y"]}}}});
        let q = json!({"inputSchema": {"properties": {"required": {"enum": ["y", "x"]}}}});
        assert_eq!(schema_sim(&p, &q), 0.0);
        // Tools compare their inputSchema only; a tool never matches a property.
        assert_eq!(
            schema_sim(&json!({"inputSchema": {}}), &json!({"inputSchema": {}})),
            1.0
        );
        assert_eq!(schema_sim(&json!({"inputSchema": {}}), &json!({})), 0.0);
        // Properties compare the value minus description/annotations.
        assert_eq!(
            schema_sim(
                &json!({"type": "string", "description": "x"}),
                &json!({"type": "string", "description": "y"})
            ),
            1.0
        );
        let prop = json!({"type": "string", "description": "Order ID."});
        let (f, _) = features_of(&prop);
        assert!(!f.is_tool);
        assert_eq!(f.words.len(), 2);
    }

    #[test]
    fn annotations_compare_effective_hints_and_leave_out_title() {
        let mk = |ann: Option<Value>| {
            let mut t = tool("t", "d", json!({}), json!([]));
            if let Some(a) = ann {
                t["annotations"] = a;
            }
            t
        };
        let sim = |x: &Value, y: &Value| {
            let mut interner = Interner::default();
            let fx = Features::new(
                &Candidate {
                    name: "t",
                    value: x,
                },
                &mut interner,
            );
            let fy = Features::new(
                &Candidate {
                    name: "t",
                    value: y,
                },
                &mut interner,
            );
            annotations_similarity(&fx, &fy)
        };
        let ro = json!({"readOnlyHint": true});
        assert_eq!(sim(&mk(None), &mk(None)), 1.0);
        assert_eq!(sim(&mk(None), &mk(Some(json!({})))), 1.0);
        assert_eq!(sim(&mk(Some(ro.clone())), &mk(Some(ro.clone()))), 1.0);
        // readOnlyHint true also means destructiveHint false: two of the
        // four effective hints differ from the defaults.
        assert_eq!(sim(&mk(Some(ro.clone())), &mk(None)), 0.5);
        // Spelling out the defaults is the same as leaving them out.
        let defaults = json!({"readOnlyHint": false, "destructiveHint": true,
            "idempotentHint": false, "openWorldHint": true});
        assert_eq!(sim(&mk(Some(defaults)), &mk(None)), 1.0);
        // `title` is display text; other members count one each.
        let titled = json!({"readOnlyHint": true, "title": "Wait for"});
        assert_eq!(sim(&mk(Some(titled)), &mk(Some(ro.clone()))), 1.0);
        let vendor = json!({"readOnlyHint": true, "x-cost": 3});
        assert_eq!(sim(&mk(Some(vendor.clone())), &mk(Some(ro))), 0.8);
        assert_eq!(sim(&mk(Some(vendor.clone())), &mk(Some(vendor))), 1.0);
    }

    #[test]
    fn similarity_is_symmetric_and_bounded() {
        let values = [
            tool(
                "get_order",
                "Get an order.",
                json!({"id": {"type": "string"}}),
                json!(["id"]),
            ),
            tool(
                "fetchOrder",
                "",
                json!({"id": {"type": "integer"}}),
                json!([]),
            ),
            tool("orders__list", "List orders", json!({}), json!([])),
            json!({"type": "string", "description": "An id"}),
            json!({"name": "x", "inputSchema": {"type": "object"}, "annotations": {"a": 1}}),
            json!(true),
        ];
        let c = cands(&values);
        for x in &c {
            assert_eq!(similarity(x, x), 1.0, "{}", x.name);
            for y in &c {
                let (s, t) = (similarity(x, y), similarity(y, x));
                assert_eq!(s.to_bits(), t.to_bits(), "{} / {}", x.name, y.name);
                assert!((0.0..=1.0).contains(&s));
            }
        }
    }

    fn scenario() -> (Vec<Value>, Vec<Value>) {
        let removed = vec![
            tool(
                "get_order",
                "Get an order by its id.",
                json!({"order_id": {"type": "string"}}),
                json!(["order_id"]),
            ),
            tool(
                "list_users",
                "List the users of a workspace.",
                json!({"workspace": {"type": "string"}}),
                json!(["workspace"]),
            ),
            tool(
                "delete_file",
                "Delete a file from the drive.",
                json!({"path": {"type": "string"}}),
                json!(["path"]),
            ),
            tool(
                "old_thing",
                "Something obsolete.",
                json!({"flag": {"type": "boolean"}}),
                json!([]),
            ),
        ];
        let added = vec![
            tool(
                "fetch_order",
                "Fetch an order by its id.",
                json!({"order_id": {"type": "string"}}),
                json!(["order_id"]),
            ),
            tool(
                "users_list",
                "List the users of a workspace.",
                json!({"workspace": {"type": "string"}}),
                json!(["workspace"]),
            ),
            tool(
                "removeFile",
                "Delete a file from the drive.",
                json!({"path": {"type": "string"}}),
                json!(["path"]),
            ),
            tool(
                "brand_new",
                "Creates invoices for customers.",
                json!({"amount": {"type": "number"}}),
                json!(["amount"]),
            ),
        ];
        (removed, added)
    }

    #[test]
    fn deterministic_and_independent_of_input_order() {
        let (removed, added) = scenario();
        let (r, a) = (cands(&removed), cands(&added));
        let first = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        assert_eq!(first, match_renames(&r, &a, TOOL_RENAME_THRESHOLD));
        let expected = vec![
            ("delete_file", "removeFile"),
            ("get_order", "fetch_order"),
            ("list_users", "users_list"),
        ];
        assert_eq!(named(&first, &r, &a), expected);
        let sims: Vec<u64> = first.iter().map(|p| p.2.to_bits()).collect();

        for k in 1..4 {
            let mut r2 = r.clone();
            let mut a2 = a.clone();
            r2.rotate_left(k);
            a2.reverse();
            a2.rotate_left(k % 2);
            let pairs = match_renames(&r2, &a2, TOOL_RENAME_THRESHOLD);
            assert_eq!(named(&pairs, &r2, &a2), expected);
            let s2: Vec<u64> = pairs.iter().map(|p| p.2.to_bits()).collect();
            assert_eq!(s2, sims);
        }
    }

    #[test]
    fn equal_scores_pair_by_name_position() {
        let same = |name: &str| {
            tool(
                name,
                "Does the thing.",
                json!({"x": {"type": "string"}}),
                json!([]),
            )
        };
        let removed = [same("tool_two"), same("tool_one")];
        let added = [same("tool_three"), same("tool_four")];
        let (r, a) = (cands(&removed), cands(&added));
        // All four pairs score the same (each name pair shares "tool").
        let s = similarity(&r[0], &a[0]);
        for x in &r {
            for y in &a {
                assert_eq!(similarity(x, y), s);
            }
        }
        let expected = vec![("tool_one", "tool_four"), ("tool_two", "tool_three")];
        assert_eq!(named(&match_renames(&r, &a, 0.5), &r, &a), expected);
        let (mut r2, mut a2) = (r.clone(), a.clone());
        r2.reverse();
        a2.reverse();
        assert_eq!(named(&match_renames(&r2, &a2, 0.5), &r2, &a2), expected);
    }

    #[test]
    fn equal_totals_prefer_closest_name_positions() {
        // Both assignments total 1.5 (dyadic values, so rounding to steps
        // is exact); the diagonal one (Σ|i − j| = 0) wins, whichever side
        // holds the larger single similarity.
        for (d0, d1) in [(0.875, 0.625), (0.625, 0.875)] {
            let edges = [(0, 0, d0), (0, 1, 0.75), (1, 0, 0.75), (1, 1, d1)];
            let mut got = solve_component(&edges, MAX_EXACT_SIDE);
            got.sort_by_key(|p| p.0);
            assert_eq!(got, vec![(0, 0, d0), (1, 1, d1)]);
        }
        // 1 × 3 with equal similarities: the closest position, column 0.
        let edges = [(0, 1, 0.7), (0, 0, 0.7), (0, 2, 0.7)];
        assert_eq!(solve_component(&edges, MAX_EXACT_SIDE), vec![(0, 0, 0.7)]);
        // Differences below one step (2⁻²⁰) count as ties too: the
        // anti-diagonal is 1e-9 better, the diagonal still wins.
        let tiny = 1e-9;
        let edges = [
            (0, 0, 0.75 + tiny),
            (0, 1, 0.75),
            (1, 0, 0.75 + 2.0 * tiny),
            (1, 1, 0.75),
        ];
        let mut got = solve_component(&edges, MAX_EXACT_SIDE);
        got.sort_by_key(|p| p.0);
        assert_eq!(got, vec![(0, 0, 0.75 + tiny), (1, 1, 0.75)]);
        // A real difference still beats position.
        let edges = [(0, 0, 0.8), (0, 1, 0.9), (1, 0, 0.9), (1, 1, 0.8)];
        let mut got = solve_component(&edges, MAX_EXACT_SIDE);
        got.sort_by_key(|p| p.0);
        assert_eq!(got, vec![(0, 1, 0.9), (1, 0, 0.9)]);
    }

    #[test]
    fn same_names_are_ordered_by_content() {
        let removed = [
            tool(
                "lookup",
                "Find a customer by email address.",
                json!({"email": {"type": "string"}}),
                json!(["email"]),
            ),
            tool(
                "lookup",
                "Find an invoice by its number.",
                json!({"number": {"type": "integer"}}),
                json!(["number"]),
            ),
        ];
        let added = [
            tool(
                "find",
                "Find an invoice by its number.",
                json!({"number": {"type": "integer"}}),
                json!(["number"]),
            ),
            tool(
                "find",
                "Find a customer by email address.",
                json!({"email": {"type": "string"}}),
                json!(["email"]),
            ),
        ];
        let describe = |pairs: &[(usize, usize, f64)], r: &[Candidate], a: &[Candidate]| {
            pairs
                .iter()
                .map(|&(i, j, _)| {
                    (
                        r[i].value["description"].to_string(),
                        a[j].value["description"].to_string(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let (r, a) = (cands(&removed), cands(&added));
        let first = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        assert_eq!(first.len(), 2);
        let by_content = describe(&first, &r, &a);
        assert!(by_content.iter().all(|(x, y)| x == y), "{by_content:?}");
        let (mut r2, mut a2) = (r.clone(), a.clone());
        r2.reverse();
        a2.reverse();
        // Same pairs, in the same order (same-named items sort by content).
        assert_eq!(
            describe(&match_renames(&r2, &a2, TOOL_RENAME_THRESHOLD), &r2, &a2),
            by_content
        );
    }

    #[test]
    fn empty_inputs() {
        let (removed, _) = scenario();
        let r = cands(&removed);
        assert!(match_renames(&[], &[], TOOL_RENAME_THRESHOLD).is_empty());
        assert!(match_renames(&r, &[], TOOL_RENAME_THRESHOLD).is_empty());
        assert!(match_renames(&[], &r, TOOL_RENAME_THRESHOLD).is_empty());
    }

    #[test]
    fn property_renames() {
        let removed = [
            json!({"type": "string", "description": "Identifier of the order."}),
            json!({"type": "integer", "minimum": 1, "description": "Page size."}),
        ];
        let added = [
            json!({"type": "integer", "minimum": 1, "description": "Page size"}),
            json!({"type": "string", "description": "Identifier of the order"}),
        ];
        let r = [
            Candidate {
                name: "orderId",
                value: &removed[0],
            },
            Candidate {
                name: "pageSize",
                value: &removed[1],
            },
        ];
        let a = [
            Candidate {
                name: "page_size",
                value: &added[0],
            },
            Candidate {
                name: "order_id",
                value: &added[1],
            },
        ];
        let pairs = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        assert_eq!(
            named(&pairs, &r, &a),
            vec![("orderId", "order_id"), ("pageSize", "page_size")]
        );
        assert!(pairs.iter().all(|p| p.2 == 1.0));
    }

    const VERBS: [&str; 8] = [
        "get", "list", "create", "delete", "update", "search", "sync", "export",
    ];
    const NOUNS: [&str; 16] = [
        "order", "user", "file", "invoice", "report", "ticket", "project", "comment", "label",
        "branch", "issue", "payment", "customer", "event", "metric", "channel",
    ];
    const WORDS: [&str; 24] = [
        "the",
        "a",
        "for",
        "of",
        "returns",
        "items",
        "page",
        "current",
        "account",
        "by",
        "id",
        "filter",
        "matching",
        "all",
        "new",
        "records",
        "workspace",
        "from",
        "given",
        "query",
        "status",
        "recent",
        "batch",
        "into",
    ];
    const PROPS: [&str; 12] = [
        "id", "limit", "cursor", "query", "status", "owner", "since", "until", "tags", "format",
        "path", "force",
    ];
    const TYPES: [&str; 4] = ["string", "integer", "boolean", "number"];

    /// `n` tools plus, for each, a renamed and slightly edited twin; the
    /// twins come back shuffled along with the permutation.
    fn generated(seed: u64, n: usize) -> (Vec<Value>, Vec<Value>, Vec<usize>) {
        let mut rng = Lcg(seed);
        let mut removed = Vec::new();
        let mut twins = Vec::new();
        for k in 0..n {
            let verb = VERBS[rng.next(VERBS.len())];
            let noun = NOUNS[rng.next(NOUNS.len())];
            let mut words: Vec<&str> = (0..5 + rng.next(4))
                .map(|_| WORDS[rng.next(WORDS.len())])
                .collect();
            words.push(noun);
            let mut props = serde_json::Map::new();
            for _ in 0..1 + rng.next(5) {
                props.insert(
                    PROPS[rng.next(PROPS.len())].to_string(),
                    json!({"type": TYPES[rng.next(TYPES.len())]}),
                );
            }
            let first = props.keys().next().cloned().unwrap_or_default();
            let name = format!("{verb}_{noun}_{k}");
            removed.push(tool(
                &name,
                &words.join(" "),
                Value::Object(props.clone()),
                json!([first]),
            ));
            // The twin: camelCase name with another verb, one word changed,
            // and sometimes one property type changed.
            let mut verb2 = VERBS[rng.next(VERBS.len())];
            if verb2 == verb {
                verb2 = "fetch";
            }
            let noun_cap = noun[..1].to_uppercase() + &noun[1..];
            let name2 = format!("{verb2}{noun_cap}");
            let w = rng.next(words.len());
            words[w] = "changed";
            if rng.next(2) == 0 {
                props.insert(first.clone(), json!({"type": "array"}));
            }
            twins.push(tool(
                &name2,
                &words.join(" "),
                Value::Object(props),
                json!([first]),
            ));
        }
        // Fisher–Yates with the same generator.
        let mut perm: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            perm.swap(i, rng.next(i + 1));
        }
        let added = perm.iter().map(|&i| twins[i].clone()).collect();
        (removed, added, perm)
    }

    fn check_valid(pairs: &[(usize, usize, f64)], r: &[Candidate], a: &[Candidate], t: f64) {
        let mut rs: Vec<usize> = pairs.iter().map(|p| p.0).collect();
        let mut as_: Vec<usize> = pairs.iter().map(|p| p.1).collect();
        rs.dedup();
        as_.sort_unstable();
        as_.dedup();
        assert_eq!(rs.len(), pairs.len(), "removed index twice");
        assert_eq!(as_.len(), pairs.len(), "added index twice");
        assert!(
            pairs.windows(2).all(|w| r[w[0].0].name <= r[w[1].0].name),
            "not sorted"
        );
        for &(i, j, s) in pairs {
            assert!(s >= t);
            assert_eq!(s, similarity(&r[i], &a[j]));
        }
    }

    /// `search_issues` renamed `find_issues` and changed in the same
    /// release (issue 34): description rewritten, `sort` made optional,
    /// `page` and `state` added. Below the threshold and not corroborated.
    fn renamed_and_changed() -> (Value, Value) {
        let kept = json!({
            "q": {"type": "string", "description": "Search query"},
            "sort": {"type": "string", "enum": ["created", "updated"]},
            "order": {"type": "string", "enum": ["asc", "desc"]},
            "per_page": {"type": "integer", "minimum": 1, "maximum": 100},
        });
        let mut props = kept.clone();
        props["page"] = json!({"type": "integer", "minimum": 1});
        props["state"] = json!({"type": "string", "enum": ["open", "closed"]});
        let annotations = json!({"readOnlyHint": true, "title": "Search issues"});
        let mut before = tool(
            "search_issues",
            "Search for issues in GitHub repositories using the issues search syntax.",
            kept,
            json!(["q", "sort"]),
        );
        before["annotations"] = annotations.clone();
        let mut after = tool(
            "find_issues",
            "Find issues and pull requests matching a query, one page at a time.",
            props,
            json!(["q"]),
        );
        after["annotations"] = annotations;
        after["annotations"]["title"] = json!("Find issues");
        (before, after)
    }

    fn pairs_of(removed: &[Value], added: &[Value]) -> Vec<(String, String)> {
        let (r, a) = (cands(removed), cands(added));
        named(&match_renames(&r, &a, TOOL_RENAME_THRESHOLD), &r, &a)
            .into_iter()
            .map(|(x, y)| (x.to_string(), y.to_string()))
            .collect()
    }

    #[test]
    fn kept_arguments_pair_a_tool_renamed_and_changed() {
        let (before, after) = renamed_and_changed();
        let (r, a) = (
            cands(std::slice::from_ref(&before)),
            cands(std::slice::from_ref(&after)),
        );
        let s = similarity(&r[0], &a[0]);
        assert!(s < TOOL_RENAME_THRESHOLD, "{s}");
        let p = similarity_parts(&r[0], &a[0]);
        assert!(
            p.name < TEXT_EVIDENCE && p.description < TEXT_EVIDENCE,
            "{p:?}"
        );
        assert_eq!(
            pairs_of(&[before], &[after]),
            vec![("search_issues".to_string(), "find_issues".to_string())]
        );
    }

    /// Each condition of [`kept_arguments`], broken on its own, leaves the
    /// pair a removal and an addition.
    #[test]
    fn kept_arguments_need_every_condition() {
        let (before, after) = renamed_and_changed();
        type Edit = fn(&mut Value, &mut Value);
        let cases: [(&str, Edit); 8] = [
            ("only two kept: `order` changed its schema", |_, a| {
                a["inputSchema"]["properties"]["order"]["enum"] = json!(["up", "down"]);
                a["inputSchema"]["properties"]["per_page"]["maximum"] = json!(50);
            }),
            ("a required argument dropped", |_, a| {
                let props = a["inputSchema"]["properties"].as_object_mut().unwrap();
                props.remove("q");
                a["inputSchema"]["required"] = json!([]);
            }),
            ("a new required argument", |_, a| {
                a["inputSchema"]["required"] = json!(["q", "state"]);
            }),
            ("different hints", |_, a| {
                a["annotations"]["readOnlyHint"] = json!(false);
            }),
            ("another annotation member differs", |_, a| {
                a["annotations"]["category"] = json!("search");
            }),
            ("no name token in common", |_, a| {
                a["name"] = json!("lookup_tickets");
            }),
            ("fewer than half the tokens of the shorter name", |b, a| {
                b["name"] = json!("gh_search_issue_list");
                a["name"] = json!("gh_find_pull_requests");
            }),
            ("the kept arguments are not most of the old ones", |b, _| {
                let props = b["inputSchema"]["properties"].as_object_mut().unwrap();
                for k in ["a", "b", "c", "d"] {
                    props.insert(k.into(), json!({"type": "boolean"}));
                }
            }),
        ];
        for (what, edit) in cases {
            let (mut b, mut a) = (before.clone(), after.clone());
            edit(&mut b, &mut a);
            let found = pairs_of(&[b], &[a]);
            assert!(found.is_empty(), "{what}: {found:?}");
        }
        // Arguments another added tool also takes are not unique to the
        // pair: `q`, `sort`, `order` on a second added tool leave one.
        let mut other = after.clone();
        other["name"] = json!("count_issues");
        other["annotations"]["readOnlyHint"] = json!(false);
        let found = pairs_of(std::slice::from_ref(&before), &[after.clone(), other]);
        assert!(found.is_empty(), "not unique: {found:?}");
        // The same with an unrelated second tool: still paired.
        let unrelated = tool("get_me", "Who am I", json!({}), json!([]));
        assert_eq!(pairs_of(&[before], &[after, unrelated]).len(), 1);
    }

    #[test]
    fn prefilter_is_lossless_at_any_threshold() {
        let (removed, added, _) = generated(11, 80);
        let (r, a) = (cands(&removed), cands(&added));
        for t in [0.05, 0.3, 0.56, TOOL_RENAME_THRESHOLD, 0.8] {
            let full = match_with(&r, &a, t, false, MAX_EXACT_SIDE);
            let filtered = match_with(&r, &a, t, true, MAX_EXACT_SIDE);
            assert_eq!(full, filtered, "threshold {t}");
            check_valid(&full, &r, &a, t);
        }
    }

    #[test]
    fn prefilter_keeps_pairs_that_share_only_empty_text() {
        // No shared name token, no descriptions on either side: the
        // "both empty" description still scores 1, so the pair (0.8)
        // must survive the filter.
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let removed = [json!({"name": "alpha", "inputSchema": schema})];
        let added = [json!({"name": "beta", "inputSchema": schema})];
        let (r, a) = (cands(&removed), cands(&added));
        let full = match_with(&r, &a, TOOL_RENAME_THRESHOLD, false, MAX_EXACT_SIDE);
        assert_eq!(full.len(), 1);
        assert!((full[0].2 - 0.8).abs() < 1e-12, "{full:?}");
        assert_eq!(
            match_with(&r, &a, TOOL_RENAME_THRESHOLD, true, MAX_EXACT_SIDE),
            full
        );
        // Same for two names without any token.
        let removed = [json!({"name": "__", "description": "x", "inputSchema": schema})];
        let added = [json!({"name": "--", "description": "y", "inputSchema": schema})];
        let (r, a) = (cands(&removed), cands(&added));
        let full = match_with(&r, &a, TOOL_RENAME_THRESHOLD, false, MAX_EXACT_SIDE);
        assert_eq!(full.len(), 1);
        assert_eq!(
            match_with(&r, &a, TOOL_RENAME_THRESHOLD, true, MAX_EXACT_SIDE),
            full
        );
    }

    #[test]
    fn large_inputs_take_the_prefilter_path_without_losing_pairs() {
        let (removed, added, _) = generated(5, 600);
        let (r, a) = (cands(&removed), cands(&added[..500]));
        assert!(r.len() * a.len() > FULL_PAIRS_LIMIT);
        let pairs = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        check_valid(&pairs, &r, &a, TOOL_RENAME_THRESHOLD);
        assert_eq!(
            pairs,
            match_with(&r, &a, TOOL_RENAME_THRESHOLD, false, MAX_EXACT_SIDE)
        );
    }

    #[test]
    fn generated_300_by_300_is_fast_and_finds_the_twins() {
        let (removed, added, perm) = generated(42, 300);
        let (r, a) = (cands(&removed), cands(&added));
        let start = std::time::Instant::now();
        let pairs = match_renames(&r, &a, TOOL_RENAME_THRESHOLD);
        let elapsed = start.elapsed();
        // Generous bound for unoptimized builds on a slow machine.
        assert!(elapsed.as_secs() < 20, "took {elapsed:?}");
        check_valid(&pairs, &r, &a, TOOL_RENAME_THRESHOLD);
        // added[j] is the twin of removed[perm[j]].
        let correct = pairs.iter().filter(|&&(i, j, _)| perm[j] == i).count();
        assert!(
            correct >= 270,
            "only {correct} of 300 twins found ({} pairs)",
            pairs.len()
        );
        assert_eq!(pairs, match_renames(&r, &a, TOOL_RENAME_THRESHOLD));
    }
}
