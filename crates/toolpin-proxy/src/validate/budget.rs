//! The static worst case: the schema graph (its `$ref`s followed by the
//! shared resolver, `toolpin_manifest::schema`), in-place cycles cut, and
//! the evaluations one value location may cost.

use super::*;

/// Instance types, for the keywords that descend into the value (the
/// fourth, 3, is any other type).
pub(super) const T_ARRAY: usize = 0;
pub(super) const T_OBJECT: usize = 1;
pub(super) const T_STRING: usize = 2;
pub(super) const TYPES: usize = 4;

#[derive(Default)]
pub(super) struct GNode {
    ptr: String,
    /// Applied at the same value location; `true` for a `$ref`-like edge.
    in_place: Vec<(usize, bool)>,
    /// Per instance type, groups of children: the children of one group
    /// apply to different locations (the largest counts), groups add up.
    descend: [Vec<Vec<usize>>; TYPES],
    /// The `$ref`-like keywords of this node (of [`REFS`]).
    ref_kws: Vec<&'static str>,
    /// They were cut (a cycle).
    refs_cut: bool,
}

pub(super) struct Graph<'s> {
    /// The shared reading of a `$ref` (toolpin_manifest::schema), the one
    /// the drift engine follows.
    refs: Resolver<'s>,
    nodes: Vec<GNode>,
    ids: HashMap<String, usize>,
    work: Vec<usize>,
    /// `$ref`s that do not resolve locally: (pointer of the keyword, why).
    broken: Vec<(String, String)>,
    /// `$ref`s naming a plain anchor, to be written as the pointer the
    /// shared resolver found, so the crate follows the same target:
    /// (pointer of the keyword, the new reference).
    anchored: Vec<(String, String)>,
}

impl<'s> Graph<'s> {
    fn node(&mut self, ptr: String) -> usize {
        if let Some(&id) = self.ids.get(&ptr) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(GNode {
            ptr: ptr.clone(),
            ..GNode::default()
        });
        self.ids.insert(ptr, id);
        self.work.push(id);
        id
    }

    /// The nodes a `$ref`-like keyword `k` (value `v`, at `kp`) leads to:
    /// where the shared resolver leads, and for a `$dynamicRef` (or a
    /// plain name only a `$dynamicAnchor` holds) every `$dynamicAnchor` of
    /// that name. A broken one is noted; one naming a plain anchor is to
    /// be written as the pointer it leads to.
    fn follow(&mut self, k: &str, v: &Value, kp: String) -> Vec<usize> {
        let r = match k {
            "$recursiveRef" => "#",
            _ => v.as_str().unwrap_or_default(),
        };
        let mut targets = match self.refs.target(r) {
            Ok(Target::Local { pointer, .. }) => vec![pointer],
            Ok(Target::Remote) => {
                let r = excerpt(r, MESSAGE_EXCERPT);
                let why = format!("remote $ref {r} is not resolved; treated as always valid");
                self.broken.push((kp, why));
                return Vec::new();
            }
            Err(_) => Vec::new(),
        };
        if k != "$ref" || targets.is_empty() {
            for p in self.refs.dynamic_targets(r) {
                if !targets.contains(p) {
                    targets.push(p.clone());
                }
            }
        }
        if targets.is_empty() {
            self.broken.push((kp, unresolved(r)));
        } else if k == "$ref" {
            self.anchored
                .extend(as_pointer_ref(r, &targets).map(|to| (kp, to)));
        }
        targets.into_iter().map(|t| self.node(t)).collect()
    }

    /// The edges of node `id`.
    fn fill(&mut self, id: usize) {
        let Some(ptr) = self.nodes.get(id).map(|n| n.ptr.clone()) else {
            return;
        };
        let Some(Value::Object(m)) = lookup(self.refs.root(), &ptr) else {
            return;
        };
        let mut in_place = Vec::new();
        let mut ref_kws = Vec::new();
        let mut descend: [Vec<Vec<usize>>; TYPES] = Default::default();
        for (k, v) in m {
            let kp = format!("{ptr}/{}", escape_token(k));
            let ref_kw = REFS.into_iter().find(|r| *r == k.as_str());
            if let Some(kw) = ref_kw.filter(|_| v.is_string() || k == "$recursiveRef") {
                ref_kws.push(kw);
                in_place.extend(self.follow(k, v, kp).into_iter().map(|t| (t, true)));
                continue;
            }
            // `$defs` apply only through a `$ref`.
            let applies = holds(k).1;
            if applies == Applies::Nowhere {
                continue;
            }
            let subs = subschemas(k, v).into_iter();
            let group: Vec<usize> = subs.map(|p| self.node(format!("{kp}{p}"))).collect();
            match applies {
                Applies::InPlace => in_place.extend(group.into_iter().map(|c| (c, false))),
                Applies::Group(t) => descend[t].push(group),
                Applies::Each(t) => descend[t].extend(group.into_iter().map(|c| vec![c])),
                // Exclusive per index, like the entries of properties.
                Applies::Index => match descend[T_ARRAY].first_mut() {
                    Some(first) => first.extend(group),
                    None => descend[T_ARRAY].push(group),
                },
                Applies::Nowhere => {}
            }
        }
        if let Some(n) = self.nodes.get_mut(id) {
            (n.in_place, n.descend, n.ref_kws) = (in_place, descend, ref_kws);
        }
    }
}

/// Resolve `$ref`s, cut in-place cycles and compute the worst case of
/// `schema` (edited: broken and cycle-closing `$ref`s are removed).
pub(super) fn worst_case(schema: &mut Value, notes: &mut Notes) -> u64 {
    let mut cost = 0;
    // A removed `$ref` can only remove edges: a few rounds settle it.
    for _ in 0..4 {
        let mut g = Graph {
            refs: Resolver::new(schema),
            nodes: Vec::new(),
            ids: HashMap::new(),
            work: Vec::new(),
            broken: Vec::new(),
            anchored: Vec::new(),
        };
        g.node(String::new());
        while let Some(id) = g.work.pop() {
            g.fill(id);
        }
        let (mut nodes, broken, anchored) = (g.nodes, g.broken, g.anchored);
        let cycles = cut_cycles(&mut nodes);
        cost = dp(&nodes);
        let done = broken.is_empty() && cycles.is_empty();
        let cycle =
            "a cycle of $ref and in-place applicators that never descends into the value; ignored";
        let cycles = cycles.into_iter().map(|p| (p, cycle.to_string()));
        let mut cuts = Vec::new();
        for (p, why) in broken.into_iter().chain(cycles) {
            notes.note(&p, why);
            cuts.push(p);
        }
        for (p, to) in anchored {
            if let Some(v) = lookup_mut(schema, &p) {
                *v = Value::String(to);
            }
        }
        for p in cuts {
            remove_at(schema, &p);
        }
        if done {
            break;
        }
    }
    cost
}

/// Cut the cycles of in-place edges (each through a `$ref`): the pointers of
/// the `$ref` keywords cut.
fn cut_cycles(nodes: &mut [GNode]) -> Vec<String> {
    let n = nodes.len();
    let mut color = vec![0u8; n];
    let mut out = Vec::new();
    for start in 0..n {
        if color.get(start) != Some(&0) {
            continue;
        }
        color[start] = 1;
        // (node, next edge, entered by a ref edge)
        let mut stack: Vec<(usize, usize, bool)> = vec![(start, 0, false)];
        while let Some(&(u, k, _)) = stack.last() {
            let edge = live(nodes, u).nth(k);
            let Some((v, is_ref)) = edge else {
                color[u] = 2;
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match color.get(v) {
                Some(0) => {
                    color[v] = 1;
                    stack.push((v, 0, is_ref));
                }
                Some(1) => {
                    // A cycle: cut the nearest `$ref` on it.
                    let from = if is_ref {
                        Some(u)
                    } else {
                        let pos = stack.iter().rposition(|f| f.0 == v).unwrap_or(0);
                        let by_ref = (pos + 1..stack.len()).rev().find(|&i| stack[i].2);
                        by_ref.and_then(|i| stack.get(i - 1)).map(|f| f.0)
                    };
                    let from = from.and_then(|f| nodes.get_mut(f));
                    if let Some(x) = from.filter(|x| !x.refs_cut) {
                        x.refs_cut = true;
                        out.extend(x.ref_kws.iter().map(|kw| format!("{}/{kw}", x.ptr)));
                        // Restart this node's edges with the cut applied.
                        if let Some(top) = stack.last_mut() {
                            top.1 = 0;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The worst case: evaluations at one value location over all levels of
/// nesting down to [`MAX_DEPTH`], saturating.
fn dp(nodes: &[GNode]) -> u64 {
    let n = nodes.len();
    // In-place edges form a DAG now: children before parents.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for start in 0..n {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut stack = vec![(start, 0usize)];
        while let Some(&(u, k)) = stack.last() {
            match live(nodes, u).nth(k) {
                Some((v, _)) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    if !seen.get(v).copied().unwrap_or(true) {
                        seen[v] = true;
                        stack.push((v, 0));
                    }
                }
                None => {
                    order.push(u);
                    stack.pop();
                }
            }
        }
    }
    let mut prev = vec![0u64; n];
    let mut cur = vec![[0u64; TYPES]; n];
    for depth in 0..=MAX_DEPTH {
        for &u in &order {
            let Some(node) = nodes.get(u) else { continue };
            let mut c = [1u64; TYPES];
            for (t, slot) in c.iter_mut().enumerate() {
                let here = live(nodes, u).map(|(v, _)| cur.get(v).map_or(0, |x| x[t]));
                // Per group the largest child, one value level down.
                let worst = |g: &Vec<usize>| g.iter().filter_map(|&v| prev.get(v)).max();
                let below = node.descend[t].iter().filter(|_| depth > 0).map(worst);
                let below = below.map(|w| w.copied().unwrap_or(0));
                *slot = here.chain(below).fold(*slot, u64::saturating_add);
            }
            cur[u] = c;
        }
        let next: Vec<u64> = cur
            .iter()
            .map(|c| c.iter().copied().max().unwrap_or(0))
            .collect();
        let root = next.first().copied().unwrap_or(0);
        if next == prev || root > MAX_STEPS {
            return root;
        }
        prev = next;
    }
    prev.first().copied().unwrap_or(0)
}

/// The in-place edges of node `u` not cut: (target, by a `$ref`).
fn live(nodes: &[GNode], u: usize) -> impl Iterator<Item = (usize, bool)> + '_ {
    let node = nodes.get(u);
    let cut = node.is_some_and(|x| x.refs_cut);
    let edges = node.into_iter().flat_map(|x| x.in_place.iter().copied());
    edges.filter(move |e| !(cut && e.1))
}

/// Bytes of a JSON pointer written as they are in a `$ref` fragment.
const FRAGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'~')
    .remove(b'$')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// For a `$ref` to a plain-name anchor (`#name`) the shared resolver
/// followed to one target, the same reference written as that target's
/// pointer: the crate then follows it too (with a duplicate anchor it
/// would pick its own).
pub(super) fn as_pointer_ref(reference: &str, targets: &[String]) -> Option<String> {
    let (_, fragment) = reference.split_once('#')?;
    let [target] = targets else { return None };
    if fragment.is_empty() || fragment.starts_with('/') {
        return None;
    }
    Some(format!(
        "#{}",
        percent_encoding::utf8_percent_encode(target, FRAGMENT)
    ))
}
