//! Deterministic generator of a large, realistic MCP `tools/list` result
//! (`{"tools":[...]}`), shared by the `catalog` bench and the `gen_catalog`
//! example so that both measure the same document.
//!
//! No `rand`: a splitmix64 stream from a fixed seed, so the same `n` always
//! gives the same bytes. 12,000 tools come to about 17 MB of compact JSON.
//!
//! The JSON text is written by hand (not through `serde_json::Value`) so that
//! members keep the order a real server sends (`name`, `description`,
//! `inputSchema`, …) rather than sorted order, and `required` lists stay in
//! the random order normalization has to sort.

use std::collections::HashSet;
use std::fmt::Write as _;

/// Tools generated when no count is given.
pub const DEFAULT_TOOLS: usize = 12_000;

/// The `tools/list` result with `n` tools, as compact JSON bytes.
pub fn tools_list_json(n: usize) -> Vec<u8> {
    let mut g = Gen {
        rng: SplitMix(0x7001_9140_C0DE_5EED),
        out: String::with_capacity(n * 1_500 + 64),
        names: HashSet::with_capacity(n),
    };
    g.out.push_str("{\"tools\":[");
    for i in 0..n {
        if i > 0 {
            g.out.push(',');
        }
        g.tool(i);
    }
    g.out.push_str("]}");
    g.out.into_bytes()
}

/// splitmix64: tiny, fast, good enough to vary shapes.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `pct`/100.
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

const VERBS: [&str; 32] = [
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "fetch",
    "sync",
    "archive",
    "restore",
    "export",
    "import",
    "validate",
    "approve",
    "reject",
    "assign",
    "close",
    "reopen",
    "merge",
    "tag",
    "untag",
    "schedule",
    "cancel",
    "refund",
    "invite",
    "publish",
    "query",
    "summarize",
    "translate",
    "upload",
    "download",
    "resolve",
];
const NOUNS: [&str; 48] = [
    "order",
    "invoice",
    "customer",
    "ticket",
    "issue",
    "pull_request",
    "repository",
    "branch",
    "commit",
    "deployment",
    "pipeline",
    "build",
    "artifact",
    "release",
    "user",
    "team",
    "project",
    "task",
    "comment",
    "attachment",
    "file",
    "folder",
    "document",
    "page",
    "database",
    "table",
    "record",
    "query_result",
    "dashboard",
    "metric",
    "alert",
    "incident",
    "calendar_event",
    "meeting",
    "message",
    "channel",
    "thread",
    "contact",
    "lead",
    "opportunity",
    "subscription",
    "payment",
    "shipment",
    "product",
    "inventory_item",
    "warehouse",
    "report",
    "webhook",
];
const QUALIFIERS: [&str; 24] = [
    "by_id",
    "by_email",
    "details",
    "history",
    "status",
    "metadata",
    "permissions",
    "settings",
    "batch",
    "summary",
    "comments",
    "labels",
    "owners",
    "in_range",
    "for_user",
    "for_team",
    "latest",
    "draft",
    "preview",
    "stats",
    "audit_log",
    "links",
    "versions",
    "quota",
];
const PROP_NAMES: [&str; 56] = [
    "id",
    "name",
    "title",
    "email",
    "query",
    "limit",
    "offset",
    "cursor",
    "page_size",
    "sort_by",
    "order",
    "status",
    "priority",
    "labels",
    "tags",
    "assignee",
    "owner_id",
    "team_id",
    "project_key",
    "created_after",
    "created_before",
    "updated_since",
    "due_date",
    "timezone",
    "locale",
    "currency",
    "amount",
    "quantity",
    "notes",
    "body",
    "subject",
    "recipients",
    "cc",
    "attachments",
    "include_archived",
    "dry_run",
    "force",
    "notify",
    "visibility",
    "region",
    "format",
    "fields",
    "filter",
    "metadata",
    "options",
    "address",
    "coordinates",
    "url",
    "webhook_url",
    "retry_policy",
    "idempotency_key",
    "reason",
    "version",
    "branch",
    "path",
    "depth",
];
const WORDS: [&str; 64] = [
    "the",
    "a",
    "selected",
    "current",
    "remote",
    "workspace",
    "account",
    "record",
    "item",
    "returns",
    "matching",
    "results",
    "using",
    "given",
    "filters",
    "optionally",
    "including",
    "related",
    "resources",
    "paginated",
    "list",
    "of",
    "entries",
    "that",
    "match",
    "criteria",
    "sorted",
    "by",
    "most",
    "recent",
    "activity",
    "first",
    "requires",
    "write",
    "access",
    "to",
    "target",
    "scope",
    "fails",
    "if",
    "does",
    "not",
    "exist",
    "or",
    "caller",
    "lacks",
    "permission",
    "changes",
    "are",
    "applied",
    "atomically",
    "and",
    "can",
    "be",
    "undone",
    "within",
    "minutes",
    "rate",
    "limited",
    "per",
    "token",
    "identifier",
    "value",
    "field",
];
const ENUM_VALUES: [&str; 24] = [
    "open",
    "closed",
    "pending",
    "in_progress",
    "done",
    "blocked",
    "low",
    "medium",
    "high",
    "critical",
    "asc",
    "desc",
    "public",
    "private",
    "internal",
    "json",
    "csv",
    "markdown",
    "created_at",
    "updated_at",
    "us-east-1",
    "eu-west-1",
    "ap-south-1",
    "draft",
];
const FORMATS: [&str; 7] = [
    "date-time",
    "date",
    "email",
    "uri",
    "uuid",
    "hostname",
    "ipv4",
];
const PATTERNS: [&str; 6] = [
    "^[A-Z][A-Z0-9]+-[0-9]+$",
    "^[a-z0-9-]{3,64}$",
    "^#[0-9a-fA-F]{6}$",
    "^\\\\d{4}-\\\\d{2}-\\\\d{2}$",
    "^[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\\\\.[a-zA-Z0-9-.]+$",
    "^v?\\\\d+\\\\.\\\\d+\\\\.\\\\d+$",
];
/// Bits of text with characters that need escaping or are non-ASCII.
const ODD_BITS: [&str; 6] = [
    "(see \\\"Limits\\\")",
    "— café naïve façade",
    "e.g. `a\\\\b`",
    "\\n\\nNote: ",
    "→ 100 €",
    "\\u00e9t\\u00e9",
];

struct Gen {
    rng: SplitMix,
    out: String,
    names: HashSet<String>,
}

impl Gen {
    fn tool(&mut self, index: usize) {
        let name = self.unique_name(index);
        self.out.push_str("{\"name\":");
        self.string(&name);
        if self.rng.chance(30) {
            self.out.push_str(",\"title\":");
            let title = name.replace('_', " ");
            self.string(&title);
        }
        self.out.push_str(",\"description\":\"");
        if self.rng.chance(10) {
            self.out.push_str("  ");
        }
        let sentences = self.rng.range(1, 3);
        self.sentences(sentences as usize);
        if self.rng.chance(10) {
            self.out.push_str("\\n");
        }
        self.out.push('"');

        self.out.push_str(",\"inputSchema\":");
        // 3..=12, skewed towards fewer as in real servers.
        let props = 3 + self.rng.range(0, 9).min(self.rng.range(0, 9)) as usize;
        self.object_schema(props, 0, true);

        if self.rng.chance(20) {
            self.out.push_str(",\"outputSchema\":");
            let props = self.rng.range(2, 4) as usize;
            self.object_schema(props, 1, false);
        }
        if self.rng.chance(85) {
            self.annotations(&name);
        }
        if self.rng.chance(20) {
            let _ = write!(
                self.out,
                ",\"_meta\":{{\"vendor.example/version\":\"{}.{}.{}\",\"generatedAt\":\"2025-{:02}-{:02}T{:02}:{:02}:00Z\",\"ui/category\":\"{}\"}}",
                self.rng.range(0, 4),
                self.rng.range(0, 20),
                self.rng.range(0, 99),
                self.rng.range(1, 12),
                self.rng.range(1, 28),
                self.rng.range(0, 23),
                self.rng.range(0, 59),
                self.rng.pick(&NOUNS),
            );
        }
        if self.rng.chance(15) {
            let mut req = vec!["scope", "owner", "tier"];
            self.rng.shuffle(&mut req);
            let _ = write!(
                self.out,
                ",\"x-vendor\":{{\"category\":\"{}\",\"rateLimit\":{{\"perMinute\":{},\"burst\":{}}},\"cost\":{}.{:02},\"required\":[\"{}\",\"{}\",\"{}\"]}}",
                self.rng.pick(&NOUNS),
                self.rng.range(10, 600),
                self.rng.range(1, 50),
                self.rng.range(0, 9),
                self.rng.range(0, 99),
                req[0],
                req[1],
                req[2],
            );
        }
        self.out.push('}');
    }

    fn unique_name(&mut self, index: usize) -> String {
        let verb = self.rng.pick(&VERBS);
        let noun = self.rng.pick(&NOUNS);
        let mut name = format!("{verb}_{noun}");
        if self.rng.chance(60) {
            name.push('_');
            name.push_str(self.rng.pick(&QUALIFIERS));
        }
        if self.names.contains(&name) {
            // Real catalogs this large come from many namespaced servers.
            let _ = write!(name, "_v{}", index % 97 + 2);
            if self.names.contains(&name) {
                let _ = write!(name, "_{index}");
            }
        }
        self.names.insert(name.clone());
        name
    }

    /// Writes `count` sentences of prose (escaped JSON string content).
    fn sentences(&mut self, count: usize) {
        for s in 0..count {
            if s > 0 {
                self.out.push(' ');
            }
            let words = self.rng.range(5, 14);
            for w in 0..words {
                let word = self.rng.pick(&WORDS);
                if w == 0 {
                    let mut chars = word.chars();
                    if let Some(c) = chars.next() {
                        self.out.extend(c.to_uppercase());
                        self.out.push_str(chars.as_str());
                    }
                } else {
                    self.out.push(' ');
                    self.out.push_str(word);
                }
            }
            if self.rng.chance(8) {
                self.out.push(' ');
                self.out.push_str(self.rng.pick(&ODD_BITS));
            }
            self.out.push('.');
        }
    }

    /// `{"type":"object","properties":{…},"required":[…],…}` with `props`
    /// properties; `depth` limits nesting.
    fn object_schema(&mut self, props: usize, depth: usize, top: bool) {
        self.out.push_str("{\"type\":\"object\"");
        if !top && self.rng.chance(50) {
            self.out.push_str(",\"description\":\"");
            self.sentences(1);
            self.out.push('"');
        }
        self.out.push_str(",\"properties\":{");
        let mut names: Vec<&str> = Vec::with_capacity(props);
        while names.len() < props {
            let p = self.rng.pick(&PROP_NAMES);
            if !names.contains(&p) {
                names.push(p);
            }
        }
        for (i, p) in names.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.string(p);
            self.out.push(':');
            self.property(depth);
        }
        self.out.push('}');
        let mut required: Vec<&str> = names
            .iter()
            .copied()
            .filter(|_| self.rng.chance(40))
            .collect();
        if required.is_empty() {
            required.push(names[(self.rng.next() % names.len() as u64) as usize]);
        }
        self.rng.shuffle(&mut required);
        self.out.push_str(",\"required\":[");
        for (i, r) in required.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.string(r);
        }
        self.out.push(']');
        if top && self.rng.chance(60) {
            self.out.push_str(",\"additionalProperties\":false");
        }
        if top && self.rng.chance(20) {
            self.out
                .push_str(",\"$schema\":\"http://json-schema.org/draft-07/schema#\"");
        }
        self.out.push('}');
    }

    fn property(&mut self, depth: usize) {
        let kind = self.rng.next() % 100;
        match kind {
            0..=39 => self.string_schema(),
            40..=54 => {
                let d = self.short_text();
                let _ = write!(
                    self.out,
                    "{{\"type\":\"integer\",\"description\":\"{}\",\"minimum\":{},\"maximum\":{}",
                    d,
                    self.rng.range(0, 1),
                    self.rng
                        .pick(&["100", "1000", "500", "86400", "2147483647"]),
                );
                if self.rng.chance(50) {
                    let _ = write!(self.out, ",\"default\":{}", self.rng.range(1, 100));
                }
                self.out.push('}');
            }
            55..=61 => {
                let d = self.short_text();
                let _ = write!(
                    self.out,
                    "{{\"type\":\"number\",\"description\":\"{}\",\"minimum\":{}.{},\"maximum\":{}.5,\"multipleOf\":0.01}}",
                    d,
                    self.rng.range(0, 9),
                    self.rng.range(0, 99),
                    self.rng.range(10, 100_000),
                );
            }
            62..=71 => {
                let d = self.short_text();
                let _ = write!(
                    self.out,
                    "{{\"type\":\"boolean\",\"description\":\"{}\",\"default\":{}}}",
                    d,
                    self.rng.chance(50),
                );
            }
            72..=83 => {
                let d = self.short_text();
                let _ = write!(
                    self.out,
                    "{{\"type\":\"array\",\"description\":\"{}\",\"items\":",
                    d
                );
                if depth == 0 && self.rng.chance(15) {
                    let props = self.rng.range(2, 3) as usize;
                    self.object_schema(props, depth + 1, false);
                } else {
                    self.string_schema();
                }
                if self.rng.chance(50) {
                    let _ = write!(
                        self.out,
                        ",\"minItems\":{},\"maxItems\":{}",
                        self.rng.range(0, 1),
                        self.rng.range(5, 100)
                    );
                }
                if self.rng.chance(30) {
                    self.out.push_str(",\"uniqueItems\":true");
                }
                self.out.push('}');
            }
            84..=89 if depth == 0 => {
                let props = self.rng.range(2, 3) as usize;
                self.object_schema(props, depth + 1, false);
            }
            _ => {
                let d = self.short_text();
                let _ = write!(self.out, "{{\"description\":\"{}\",\"anyOf\":[", d);
                self.string_schema();
                if self.rng.chance(50) {
                    self.out.push_str(",{\"type\":\"integer\",\"minimum\":0}");
                }
                self.out.push_str(",{\"type\":\"null\"}]}");
            }
        }
    }

    fn string_schema(&mut self) {
        let d = self.short_text();
        let _ = write!(self.out, "{{\"type\":\"string\",\"description\":\"{}\"", d);
        match self.rng.next() % 5 {
            0 | 1 => {
                let count = self.rng.range(2, 5) as usize;
                let mut values: Vec<&str> = Vec::with_capacity(count);
                while values.len() < count {
                    let v = self.rng.pick(&ENUM_VALUES);
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                self.out.push_str(",\"enum\":[");
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.string(v);
                }
                self.out.push(']');
                if self.rng.chance(50) {
                    self.out.push_str(",\"default\":");
                    self.string(values[0]);
                }
            }
            2 => {
                self.out.push_str(",\"format\":");
                let f = self.rng.pick(&FORMATS);
                self.string(f);
            }
            3 => {
                let _ = write!(self.out, ",\"pattern\":\"{}\"", self.rng.pick(&PATTERNS));
            }
            _ => {
                let _ = write!(
                    self.out,
                    ",\"minLength\":1,\"maxLength\":{}",
                    self.rng.pick(&["64", "255", "1024", "65536"])
                );
                if self.rng.chance(30) {
                    let _ = write!(self.out, ",\"default\":\"{}\"", self.rng.pick(&WORDS));
                }
            }
        }
        self.out.push('}');
    }

    /// A one-sentence property description (escaped JSON string content).
    fn short_text(&mut self) -> String {
        let mut s = String::with_capacity(80);
        let words = self.rng.range(2, 6);
        for w in 0..words {
            if w > 0 {
                s.push(' ');
            }
            s.push_str(self.rng.pick(&WORDS));
        }
        if self.rng.chance(5) {
            s.push(' ');
            s.push_str(self.rng.pick(&ODD_BITS));
        }
        s
    }

    fn annotations(&mut self, name: &str) {
        let read_only = name.starts_with("get_")
            || name.starts_with("list_")
            || name.starts_with("search_")
            || name.starts_with("query_");
        self.out.push_str(",\"annotations\":{");
        if self.rng.chance(50) {
            self.out.push_str("\"title\":");
            let mut title = name.replace('_', " ");
            if let Some(first) = title.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            self.string(&title);
            self.out.push(',');
        }
        let _ = write!(
            self.out,
            "\"readOnlyHint\":{read_only},\"destructiveHint\":{},\"idempotentHint\":{},\"openWorldHint\":{}}}",
            !read_only && self.rng.chance(30),
            self.rng.chance(50),
            self.rng.chance(40),
        );
    }

    /// A plain string literal (callers pass text without characters that
    /// need escaping).
    fn string(&mut self, s: &str) {
        self.out.push('"');
        self.out.push_str(s);
        self.out.push('"');
    }
}
