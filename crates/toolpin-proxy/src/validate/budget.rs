//! The static worst case: the schema graph (its `$ref`s followed by the
//! shared resolver, `toolpin_manifest::schema`), in-place cycles cut, and
//! the evaluations one value location may cost.

use super::*;

/// Instance types, for the keywords that descend into the value.
pub(super) const T_ARRAY: usize = 0;
pub(super) const T_OBJECT: usize = 1;
pub(super) const T_STRING: usize = 2;
pub(super) const T_OTHER: usize = 3;
pub(super) const TYPES: usize = 4;

#[derive(Default)]
pub(super) struct GNode {
    ptr: String,
    /// Applied at the same value location; `true` for a `$ref`-like edge.
    in_place: Vec<(usize, bool)>,
    /// Per instance type, groups of children: the children of one group
    /// apply to different locations (the largest counts), groups add up.
    descend: [Vec<Vec<usize>>; TYPES],
    /// The `$ref`-like keywords of this node.
    ref_kws: Vec<&'static str>,
    /// They were cut (a cycle).
    refs_cut: bool,
}

pub(super) struct Graph<'s> {
    root: &'s Value,
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
    pub(super) fn node(&mut self, ptr: String) -> usize {
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

    /// The local targets of a `$ref`-like keyword, or why there are none:
    /// where the shared resolver leads, and for a `$dynamicRef` (or a
    /// plain name only a `$dynamicAnchor` holds) every `$dynamicAnchor` of
    /// that name.
    pub(super) fn resolve(&self, r: &str, dynamic: bool) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        match self.refs.target(r) {
            Ok(Target::Local { pointer, .. }) => out.push(pointer),
            Ok(Target::Remote) => {
                return Err(format!(
                    "remote $ref {} is not resolved; treated as always valid",
                    excerpt(r, MESSAGE_EXCERPT)
                ))
            }
            Err(_) => {}
        }
        if dynamic || out.is_empty() {
            for p in self.refs.dynamic_targets(r) {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        if out.is_empty() {
            return Err(format!(
                "$ref {} does not resolve; treated as always valid",
                excerpt(r, MESSAGE_EXCERPT)
            ));
        }
        Ok(out)
    }

    /// The nodes a `$ref`-like keyword `k` (value `v`, at `kp`) leads to;
    /// a broken one is noted, one naming a plain anchor is to be written
    /// as the pointer it leads to.
    fn follow(&mut self, k: &str, v: &Value, kp: String) -> Vec<usize> {
        let r = if k == "$recursiveRef" {
            "#"
        } else {
            v.as_str().unwrap_or_default()
        };
        match self.resolve(r, k != "$ref") {
            Ok(targets) => {
                if k == "$ref" {
                    if let Some(to) = as_pointer_ref(r, &targets) {
                        self.anchored.push((kp, to));
                    }
                }
                targets.into_iter().map(|t| self.node(t)).collect()
            }
            Err(why) => {
                self.broken.push((kp, why));
                Vec::new()
            }
        }
    }

    pub(super) fn fill(&mut self, id: usize) {
        let ptr = self
            .nodes
            .get(id)
            .map(|n| n.ptr.clone())
            .unwrap_or_default();
        let Some(Value::Object(m)) = lookup(self.root, &ptr) else {
            return;
        };
        let at = |kw: &str| format!("{ptr}/{}", escape_token(kw));
        let mut in_place = Vec::new();
        let mut ref_kws = Vec::new();
        let mut descend: [Vec<Vec<usize>>; TYPES] = Default::default();
        for (k, v) in m {
            match k.as_str() {
                "$ref" | "$dynamicRef" | "$recursiveRef"
                    if v.is_string() || k == "$recursiveRef" =>
                {
                    ref_kws.push(match k.as_str() {
                        "$ref" => "$ref",
                        "$dynamicRef" => "$dynamicRef",
                        _ => "$recursiveRef",
                    });
                    in_place.extend(self.follow(k, v, at(k)).into_iter().map(|t| (t, true)));
                }
                _ => {
                    let (_, applies) = holds(k);
                    if applies == Applies::Nowhere {
                        // `$defs` apply only through a `$ref`.
                        continue;
                    }
                    let group: Vec<usize> = subschemas(k, v)
                        .into_iter()
                        .map(|p| self.node(format!("{}{p}", at(k))))
                        .collect();
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
            }
        }
        if let Some(n) = self.nodes.get_mut(id) {
            n.in_place = in_place;
            n.descend = descend;
            n.ref_kws = ref_kws;
        }
    }
}

/// Resolve `$ref`s, cut in-place cycles and compute the worst case of
/// `schema` (edited: broken and cycle-closing `$ref`s are removed).
pub(super) fn worst_case(schema: &mut Value, notes: &mut Notes) -> u64 {
    let mut cuts: Vec<String> = Vec::new();
    let mut cost = 0;
    // A removed `$ref` can only remove edges: a few rounds settle it.
    for _ in 0..4 {
        let mut g = Graph {
            root: schema,
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
        let broken = std::mem::take(&mut g.broken);
        let anchored = std::mem::take(&mut g.anchored);
        let mut nodes = g.nodes;
        let cycles = cut_cycles(&mut nodes);
        cost = dp(&nodes);
        let done = broken.is_empty() && cycles.is_empty();
        for (p, why) in broken {
            notes.note(&p, why);
            cuts.push(p);
        }
        for p in cycles {
            notes.note(
                &p,
                "a cycle of $ref and in-place applicators that never descends into the value; ignored",
            );
            cuts.push(p);
        }
        for (p, to) in anchored {
            if let Some(v) = lookup_mut(schema, &p) {
                *v = Value::String(to);
            }
        }
        for p in cuts.drain(..) {
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
pub(super) fn cut_cycles(nodes: &mut [GNode]) -> Vec<String> {
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
            let edge = nodes.get(u).and_then(|x| {
                if x.refs_cut {
                    x.in_place.iter().filter(|e| !e.1).nth(k).copied()
                } else {
                    x.in_place.get(k).copied()
                }
            });
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
                        stack
                            .iter()
                            .enumerate()
                            .skip(pos + 1)
                            .rev()
                            .find(|(_, f)| f.2)
                            .and_then(|(i, _)| stack.get(i.wrapping_sub(1)))
                            .map(|f| f.0)
                    };
                    let mut cut = false;
                    if let Some(x) = from.and_then(|f| nodes.get_mut(f)) {
                        if !x.refs_cut {
                            x.refs_cut = true;
                            for kw in &x.ref_kws {
                                out.push(format!("{}/{kw}", x.ptr));
                            }
                            cut = true;
                        }
                    }
                    // Restart this node's edges with the cut applied.
                    if cut {
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
pub(super) fn dp(nodes: &[GNode]) -> u64 {
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
            match live_edges(nodes, u).nth(k) {
                Some(v) => {
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
                for v in live_edges(nodes, u) {
                    *slot = slot.saturating_add(cur.get(v).map_or(0, |x| x[t]));
                }
                if depth > 0 {
                    for group in &node.descend[t.min(T_OTHER)] {
                        let worst = group
                            .iter()
                            .map(|&v| prev.get(v).copied().unwrap_or(0))
                            .max()
                            .unwrap_or(0);
                        *slot = slot.saturating_add(worst);
                    }
                }
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

pub(super) fn live_edges(nodes: &[GNode], u: usize) -> impl Iterator<Item = usize> + '_ {
    let node = nodes.get(u);
    let cut = node.is_some_and(|x| x.refs_cut);
    node.into_iter()
        .flat_map(|x| x.in_place.iter())
        .filter(move |e| !(cut && e.1))
        .map(|e| e.0)
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
