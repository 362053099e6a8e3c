//! Change points and alarms (`toolpin_usage::report`): the statistics
//! against scipy's values, each alarm kind on traffic built call by call,
//! and seeded unchanged traffic that must fire nothing.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use toolpin_usage::report::{
    report, stats, AlarmKind, Basis, Catalogs, PinnedCatalog, PinnedTool, Thresholds, UsageReport,
};
use toolpin_usage::{Aggregates, ArgValue, Call, Limits};

const HOUR: u64 = 3_600_000_000_000;
/// An hour far from the epoch, so windows never clamp at 0.
const H0: u64 = 500_000;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

#[test]
fn statistics_match_scipy() {
    // scipy.stats.chi2.sf
    for (x, df, want) in [
        (3.84, 1.0, 0.05004352124870519),
        (20.5, 3.0, 0.00013369478402083598),
        (0.1, 5.0, 0.9998376833880774),
        (150.0, 10.0, 3.727485055062505e-27),
    ] {
        let got = stats::chi2_sf(x, df);
        assert!(
            close(got, want, 1e-9),
            "chi2_sf({x}, {df}) = {got}, scipy {want}"
        );
    }
    // scipy.stats.norm.sf
    for (z, want) in [
        (1.96, 0.024997895148220435),
        (5.0, 2.866515718791933e-07),
        (-1.0, 0.8413447460685429),
        (9.0, 1.1285884059538324e-19),
    ] {
        let got = stats::normal_sf(z);
        assert!(
            close(got, want, 1e-9),
            "normal_sf({z}) = {got}, scipy {want}"
        );
    }
    // scipy.stats.chi2_contingency(correction=False)
    let (x, df, p) = stats::chi2_homogeneity(&[72, 288], &[126, 234]).expect("test");
    assert!(close(x, 20.31347962382445, 1e-12), "{x}");
    assert_eq!(df, 1.0);
    assert!(close(p, 6.573583741144836e-06, 1e-8), "{p}");
    let (x, df, p) = stats::chi2_homogeneity(&[50, 30, 20], &[40, 45, 15]).expect("test");
    assert!(close(x, 4.825396825396825, 1e-12), "{x}");
    assert_eq!(df, 2.0);
    assert!(close(p, 0.08957326253887996, 1e-9), "{p}");
    // A category too small to test is pooled with the other small ones;
    // one category left is no test.
    let (_, df, _) = stats::chi2_homogeneity(&[100, 100, 1, 1], &[100, 100, 2, 0]).expect("test");
    assert_eq!(df, 2.0);
    assert_eq!(stats::chi2_homogeneity(&[10, 0], &[12, 0]), None);
    // scipy.spatial.distance.jensenshannon(base=2)
    assert!(close(
        stats::js_distance(&[72, 288], &[126, 234]),
        0.14335307169080477,
        1e-12
    ));
    assert!(close(
        stats::js_distance(&[50, 30, 20], &[40, 45, 15]),
        0.13226630843228862,
        1e-12
    ));
    assert!(close(stats::js_distance(&[1, 0], &[0, 1]), 1.0, 1e-12));
    assert_eq!(stats::js_distance(&[3, 5], &[6, 10]), 0.0);
    // The pooled two-proportion z-test, as computed with scipy's normal.
    let (z, p) = stats::two_proportion(90, 100, 60, 100).expect("test");
    assert!(close(z, -4.8989794855663575, 1e-12), "{z}");
    assert!(close(p, 9.633570086430874e-07, 1e-8), "{p}");
    let (_, p) = stats::two_proportion(500, 1000, 520, 1000).expect("test");
    assert!(close(p, 0.37099767373660797, 1e-9), "{p}");
    assert_eq!(stats::two_proportion(0, 10, 0, 12), Some((0.0, 1.0)));
    assert_eq!(stats::two_proportion(1, 0, 0, 12), None);
    // Holm by hand: sorted 0.01, 0.02, 0.03, 0.5 over m = 4 →
    // 0.04, max(0.04, 0.06), max(0.06, 0.06), max(0.06, 0.5).
    let adjusted = stats::holm(&[0.03, 0.01, 0.5, 0.02]);
    let want = [0.06, 0.04, 0.5, 0.06];
    for (a, w) in adjusted.iter().zip(want) {
        assert!(close(*a, w, 1e-12), "{adjusted:?}");
    }
    assert_eq!(stats::holm(&[0.9, 0.8]), vec![1.0, 1.0]);
}

/// Traffic built call by call.
struct Traffic {
    agg: Aggregates,
}

#[derive(Clone)]
struct At<'a> {
    hour: u64,
    env: &'a str,
    tenant: &'a str,
    agent: &'a str,
    catalog: &'a str,
}

impl<'a> At<'a> {
    fn new(hour: u64, catalog: &'a str) -> Self {
        Self {
            hour,
            env: "prod",
            tenant: "acme",
            agent: "support",
            catalog,
        }
    }
}

impl Traffic {
    fn new() -> Self {
        Self {
            agg: Aggregates::new(Limits::default()),
        }
    }

    /// `n` calls of `tool` with `args` (name, value), failing with `error`
    /// if given, each taking `ms` milliseconds.
    fn calls(
        &mut self,
        at: &At<'_>,
        tool: &str,
        n: u64,
        args: &[(&str, &str)],
        error: Option<&str>,
        ms: u64,
    ) {
        let arguments: Vec<(Cow<'_, str>, ArgValue<'_>)> = args
            .iter()
            .map(|(k, v)| (Cow::Borrowed(*k), ArgValue::Str(Cow::Borrowed(*v))))
            .collect();
        for i in 0..n {
            self.agg.record_call(&Call {
                start_nanos: at.hour * HOUR + i % 3_000 * 1_000_000,
                duration_nanos: ms * 1_000_000 + i % 7,
                environment: at.env,
                tenant: at.tenant,
                agent: at.agent,
                catalog: at.catalog,
                tool,
                tool_fingerprint: "",
                error,
                arguments: Some(&arguments),
            });
        }
    }
}

const A: &str = "82d72548aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "9644aeefbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const CHANGE: &str =
    "lookup_order's description gained 'Prefer search_orders when the ID is unknown'";

/// Both catalogs pin lookup_order, search_orders (with an enum `status`)
/// and refund.
fn catalogs() -> Catalogs {
    let search = PinnedTool::from_input_schema(&json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "status": {"$ref": "#/$defs/Status"},
            "sort": {"anyOf": [{"enum": ["new", "old"]}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"enum": ["vip", "late"]}},
            "free": {"anyOf": [{"enum": ["x"]}, {"type": "string"}]}
        },
        "$defs": {"Status": {"enum": ["open", "shipped", "returned"]}}
    }));
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        search.enums,
        BTreeMap::from([
            ("sort".to_string(), set(&["new", "old"])),
            ("status".to_string(), set(&["open", "returned", "shipped"])),
            ("tags".to_string(), set(&["late", "vip"])),
        ])
    );
    let tools = BTreeMap::from([
        ("lookup_order".to_string(), PinnedTool::default()),
        ("search_orders".to_string(), search),
        ("refund".to_string(), PinnedTool::default()),
    ]);
    let pinned = PinnedCatalog { tools };
    Catalogs {
        pinned: BTreeMap::from([(A.to_string(), pinned.clone()), (B.to_string(), pinned)]),
        changes: BTreeMap::from([((A.to_string(), B.to_string()), CHANGE.to_string())]),
        sequence: BTreeMap::from([(A.to_string(), 1), (B.to_string(), 2)]),
    }
}

fn run(t: &Traffic, until: u64) -> UsageReport {
    report(&t.agg, &catalogs(), &Thresholds::default(), until)
}

fn kinds(r: &UsageReport) -> Vec<(AlarmKind, String)> {
    r.alarms.iter().map(|a| (a.kind, a.tool.clone())).collect()
}

/// Lookups and searches in the given shares over `hours` hours from
/// `start`, `per_hour` calls an hour.
fn mix(t: &mut Traffic, start: u64, hours: u64, catalog: &str, per_hour: u64, search_share: f64) {
    for h in 0..hours {
        let at = At::new(start + h, catalog);
        let searches = (per_hour as f64 * search_share).round() as u64;
        t.calls(
            &at,
            "search_orders",
            searches,
            &[("query", "q"), ("status", "open")],
            None,
            40,
        );
        t.calls(
            &at,
            "lookup_order",
            per_hour - searches,
            &[("order_id", "A-1")],
            None,
            20,
        );
    }
}

#[test]
fn a_steering_change_fires_on_the_shifted_tool_and_names_the_change() {
    let mut t = Traffic::new();
    mix(&mut t, H0, 24, A, 100, 0.20);
    mix(&mut t, H0 + 24, 24, B, 100, 0.35);
    let r = run(&t, H0 + 48);
    assert_eq!(
        kinds(&r),
        vec![(AlarmKind::SelectionShare, "search_orders".to_string())],
        "{r:#?}"
    );
    let a = &r.alarms[0];
    assert_eq!(a.other_tool.as_deref(), Some("lookup_order"));
    assert_eq!(a.basis, Basis::CatalogChange);
    assert_eq!(
        (a.from_catalog.as_deref(), a.to_catalog.as_str()),
        (Some(A), B)
    );
    assert_eq!(a.change.as_deref(), Some(CHANGE));
    assert!(
        close(a.before, 0.20, 1e-12) && close(a.after, 0.35, 1e-12),
        "{a:#?}"
    );
    assert_eq!(
        a.message,
        format!("`search_orders` share 20% → 35% (lookup_order 80% → 65%) since catalog 82d72548 → 9644aeef: {CHANGE}")
    );
    assert!(a.adjusted_p.expect("tested") < 1e-10, "{a:#?}");
    assert_eq!(r.comparisons.len(), 1);
    assert_eq!(r.comparisons[0].before_calls, 2_400);

    // Without the change line at hand, the caller describes the pairs that
    // alarmed.
    let mut bare = catalogs();
    bare.changes.clear();
    let mut r = report(&t.agg, &bare, &Thresholds::default(), H0 + 48);
    assert_eq!(r.alarms[0].change, None);
    r.describe_changes(|from, to| (from == A && to == B).then(|| CHANGE.to_string()));
    assert_eq!(r.alarms[0].change.as_deref(), Some(CHANGE));
    assert!(
        r.alarms[0]
            .message
            .ends_with(&format!("9644aeef: {CHANGE}")),
        "{}",
        r.alarms[0].message
    );

    // The same traffic, no change in shares: nothing.
    let mut t = Traffic::new();
    mix(&mut t, H0, 24, A, 100, 0.20);
    mix(&mut t, H0 + 24, 24, B, 100, 0.20);
    let r = run(&t, H0 + 48);
    assert!(r.alarms.is_empty(), "{:#?}", r.alarms);
    assert!(r.tests > 0);
}

#[test]
fn catalogs_first_called_in_the_same_hour_are_ordered_by_the_lockfile_history() {
    let mut t = Traffic::new();
    // Both in one hour: A's calls came first, as the history says.
    mix(&mut t, H0, 1, B, 400, 0.35);
    mix(&mut t, H0, 1, A, 400, 0.20);
    let r = run(&t, H0 + 1);
    assert_eq!(
        kinds(&r),
        vec![(AlarmKind::SelectionShare, "search_orders".to_string())],
        "{r:#?}"
    );
    assert_eq!(r.alarms[0].from_catalog.as_deref(), Some(A));
    assert!(r.alarms[0].after > r.alarms[0].before);
}

#[test]
fn every_kind_of_shift_fires_its_alarm() {
    let mut t = Traffic::new();
    for h in 0..24 {
        let before = At::new(H0 + h, A);
        let after = At::new(H0 + 24 + h, B);
        // Enum shift: status mostly open, then mostly returned.
        t.calls(
            &before,
            "search_orders",
            40,
            &[("query", "q"), ("status", "open")],
            None,
            40,
        );
        t.calls(
            &before,
            "search_orders",
            10,
            &[("query", "q"), ("status", "returned")],
            None,
            40,
        );
        t.calls(
            &after,
            "search_orders",
            15,
            &[("query", "q"), ("status", "open")],
            None,
            40,
        );
        t.calls(
            &after,
            "search_orders",
            35,
            &[("query", "q"), ("status", "returned")],
            None,
            40,
        );
        // Supplied rate: `reason` stops being passed; errors: rate_limit
        // jumps; latency: p95 doubles.
        t.calls(
            &before,
            "refund",
            45,
            &[("order_id", "1"), ("reason", "late")],
            None,
            100,
        );
        t.calls(
            &before,
            "refund",
            5,
            &[("order_id", "1")],
            Some("upstream"),
            100,
        );
        t.calls(
            &after,
            "refund",
            10,
            &[("order_id", "1"), ("reason", "late")],
            None,
            300,
        );
        t.calls(&after, "refund", 25, &[("order_id", "1")], None, 300);
        t.calls(
            &after,
            "refund",
            15,
            &[("order_id", "1")],
            Some("rate_limit"),
            300,
        );
        // Selection between the three stays put.
        t.calls(&before, "lookup_order", 100, &[("order_id", "1")], None, 20);
        t.calls(&after, "lookup_order", 100, &[("order_id", "1")], None, 20);
    }
    let r = run(&t, H0 + 48);
    let got: Vec<(AlarmKind, &str, Option<&str>)> = r
        .alarms
        .iter()
        .map(|a| {
            (
                a.kind,
                a.tool.as_str(),
                a.parameter.as_deref().or(a.class.as_deref()),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (AlarmKind::EnumShift, "search_orders", Some("status")),
            (AlarmKind::SuppliedRate, "refund", Some("reason")),
            (AlarmKind::ErrorRate, "refund", Some("rate_limit")),
            // 10 % upstream errors before, none after: a move either way
            // is a change in behaviour.
            (AlarmKind::ErrorRate, "refund", Some("upstream")),
            (AlarmKind::LatencyP95, "refund", None),
        ],
        "{:#?}",
        r.alarms
    );
    let shift = &r.alarms[0];
    assert_eq!(shift.value.as_deref(), Some("returned"));
    assert!(close(shift.before, 0.2, 1e-12) && close(shift.after, 0.7, 1e-12));
    let latency = &r.alarms[4];
    assert!(
        close(latency.effect.expect("ratio"), 3.0, 0.02),
        "{latency:#?}"
    );
    assert!(r.alarms.iter().all(|a| a.change.as_deref() == Some(CHANGE)));
}

#[test]
fn unknown_tools_and_enum_values_fire_at_once_and_unpinned_catalogs_are_noted() {
    let mut t = Traffic::new();
    let at = At::new(H0, A);
    t.calls(&at, "search_orders", 3, &[("status", "open")], None, 5);
    t.calls(&at, "search_orders", 1, &[("status", "cancelled")], None, 5);
    t.calls(&at, "delete_everything", 2, &[], None, 5);
    let other = At::new(H0, "ffffffff00000000");
    t.calls(&other, "whatever", 7, &[], None, 5);
    let r = run(&t, H0 + 1);
    let got: Vec<(AlarmKind, &str, Option<&str>, f64)> = r
        .alarms
        .iter()
        .map(|a| (a.kind, a.tool.as_str(), a.value.as_deref(), a.after))
        .collect();
    assert_eq!(
        got,
        vec![
            (AlarmKind::UnknownTool, "delete_everything", None, 2.0),
            (
                AlarmKind::UnknownEnumValue,
                "search_orders",
                Some("cancelled"),
                1.0
            ),
        ]
    );
    assert_eq!(r.alarms[1].parameter.as_deref(), Some("status"));
    assert_eq!(r.alarms[0].basis, Basis::Immediate);
    assert_eq!(r.unpinned_catalogs.len(), 1);
    assert_eq!(r.unpinned_catalogs[0].calls, 7);
    // Too few calls for any test: counted, not silent.
    assert_eq!(r.tests, 0);
}

#[test]
fn too_few_calls_are_skipped_and_counted() {
    let mut t = Traffic::new();
    mix(&mut t, H0, 2, A, 30, 0.1);
    mix(&mut t, H0 + 2, 2, B, 30, 0.9);
    let r = run(&t, H0 + 4);
    assert!(r.alarms.is_empty(), "{:#?}", r.alarms);
    assert_eq!(r.tests, 0);
    assert!(r.skipped > 0);
    assert_eq!(r.comparisons.len(), 1);
}

#[test]
fn tenants_are_compared_apart() {
    let mut t = Traffic::new();
    for (tenant, after_share) in [("acme", 0.20), ("globex", 0.45)] {
        for h in 0..24 {
            for (start, catalog, share) in [(H0, A, 0.20), (H0 + 24, B, after_share)] {
                let at = At {
                    tenant,
                    ..At::new(start + h, catalog)
                };
                let s = (100.0 * share) as u64;
                t.calls(&at, "search_orders", s, &[("status", "open")], None, 40);
                t.calls(&at, "lookup_order", 100 - s, &[], None, 20);
            }
        }
    }
    let r = run(&t, H0 + 48);
    assert_eq!(r.groups, 2);
    let tenants: Vec<&str> = r.alarms.iter().map(|a| a.tenant.as_str()).collect();
    assert_eq!(tenants, vec!["globex"], "{:#?}", r.alarms);
}

#[test]
fn day_over_day_runs_when_no_catalog_changed() {
    let mut t = Traffic::new();
    let now = H0 + 100;
    mix(&mut t, now - 48, 24, A, 50, 0.2);
    mix(&mut t, now - 24, 24, A, 50, 0.2);
    let r = run(&t, now);
    assert_eq!(r.comparisons.len(), 1);
    assert_eq!(r.comparisons[0].basis, Basis::DayOverDay);
    assert!(r.tests > 0 && r.alarms.is_empty(), "{r:#?}");

    // The same shares, with a quarter of today's lookups timing out.
    let mut t = Traffic::new();
    mix(&mut t, now - 48, 24, A, 50, 0.2);
    for h in 0..24 {
        let at = At::new(now - 24 + h, A);
        t.calls(
            &at,
            "search_orders",
            10,
            &[("query", "q"), ("status", "open")],
            None,
            40,
        );
        t.calls(&at, "lookup_order", 30, &[("order_id", "A-1")], None, 20);
        t.calls(
            &at,
            "lookup_order",
            10,
            &[("order_id", "A-1")],
            Some("timeout"),
            20,
        );
    }
    let r = run(&t, now);
    assert_eq!(
        kinds(&r),
        vec![(AlarmKind::ErrorRate, "lookup_order".to_string())],
        "{r:#?}"
    );
    assert_eq!(r.alarms[0].basis, Basis::DayOverDay);
    assert!(
        r.alarms[0].message.ends_with("day over day"),
        "{}",
        r.alarms[0].message
    );
}

/// xorshift64*: a small deterministic generator for seeded traffic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn unchanged_seeded_traffic_fires_nothing() {
    let mut tests = 0;
    let mut alarms = 0;
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut t = Traffic::new();
        for h in 0..48 {
            let catalog = if h < 24 { A } else { B };
            let at = At::new(H0 + h, catalog);
            for _ in 0..60 {
                let u = rng.unit();
                let (tool, status) = if u < 0.25 {
                    (
                        "search_orders",
                        if rng.unit() < 0.7 { "open" } else { "shipped" },
                    )
                } else if u < 0.9 {
                    ("lookup_order", "")
                } else {
                    ("refund", "")
                };
                let error = (rng.unit() < 0.05).then_some("upstream");
                let args: Vec<(&str, &str)> = if status.is_empty() {
                    vec![("order_id", "1")]
                } else {
                    vec![("status", status)]
                };
                let ms = 20 + rng.next() % 20;
                t.calls(&at, tool, 1, &args, error, ms);
            }
        }
        let r = run(&t, H0 + 48);
        tests += r.tests;
        alarms += r.alarms.len();
        assert!(r.alarms.is_empty(), "seed {seed}: {:#?}", r.alarms);
    }
    assert!(tests >= 400, "only {tests} tests were made");
    assert_eq!(alarms, 0);
    eprintln!("60 unchanged reports: {tests} tests, {alarms} alarms");
}

#[test]
fn thresholds_say_which_key_is_out_of_range() {
    assert_eq!(Thresholds::default().validate(), Ok(()));
    let cases: [(Thresholds, &str); 5] = [
        (
            Thresholds {
                alpha: 0.0,
                ..Thresholds::default()
            },
            "usage.report.alpha",
        ),
        (
            Thresholds {
                min_js: 2.0,
                ..Thresholds::default()
            },
            "usage.report.min-js",
        ),
        (
            Thresholds {
                latency_ratio: 1.0,
                ..Thresholds::default()
            },
            "usage.report.latency-ratio",
        ),
        (
            Thresholds {
                window_hours: 0,
                ..Thresholds::default()
            },
            "usage.report.window-hours",
        ),
        (
            Thresholds {
                min_share_points: f64::NAN,
                ..Thresholds::default()
            },
            "usage.report.min-share-points",
        ),
    ];
    for (t, key) in cases {
        let e = t.validate().expect_err(key);
        assert!(e.starts_with(key), "{e}");
    }
}

/// A report with an alarm of every kind, kept in
/// tests/fixtures/usage-report.json for scripts/check-schemas to validate
/// against docs/usage-report.schema.json (`TOOLPIN_BLESS=1` rewrites it).
#[test]
fn the_report_fixture_is_current() {
    let mut t = Traffic::new();
    for h in 0..24 {
        let before = At::new(H0 + h, A);
        let after = At::new(H0 + 24 + h, B);
        t.calls(
            &before,
            "search_orders",
            40,
            &[("query", "q"), ("status", "open")],
            None,
            40,
        );
        t.calls(
            &before,
            "search_orders",
            10,
            &[("query", "q"), ("status", "returned")],
            None,
            40,
        );
        t.calls(
            &after,
            "search_orders",
            45,
            &[("query", "q"), ("status", "open")],
            None,
            40,
        );
        t.calls(
            &after,
            "search_orders",
            105,
            &[("query", "q"), ("status", "returned")],
            None,
            40,
        );
        t.calls(
            &before,
            "refund",
            45,
            &[("order_id", "1"), ("reason", "late")],
            None,
            100,
        );
        t.calls(
            &after,
            "refund",
            10,
            &[("order_id", "1"), ("reason", "late")],
            None,
            300,
        );
        t.calls(&after, "refund", 25, &[("order_id", "1")], None, 300);
        t.calls(
            &after,
            "refund",
            15,
            &[("order_id", "1")],
            Some("rate_limit"),
            300,
        );
        t.calls(&before, "lookup_order", 100, &[("order_id", "1")], None, 20);
        t.calls(&after, "lookup_order", 100, &[("order_id", "1")], None, 20);
    }
    let at = At::new(H0 + 30, B);
    t.calls(&at, "search_orders", 1, &[("status", "cancelled")], None, 5);
    t.calls(&at, "delete_everything", 1, &[], None, 5);
    t.calls(&At::new(H0 + 30, "ffff0000"), "whatever", 3, &[], None, 5);
    let r = run(&t, H0 + 48);
    let mut kinds: Vec<&str> = r.alarms.iter().map(|a| a.kind.name()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "enum-shift",
            "error-rate",
            "latency-p95",
            "selection-share",
            "supplied-rate",
            "unknown-enum-value",
            "unknown-tool"
        ]
    );
    let json = toolpin_usage::report::render_json(&r);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/usage-report.json");
    if std::env::var_os("TOOLPIN_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, &json).expect("write");
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == json,
        "{} is stale: run with TOOLPIN_BLESS=1",
        path.display()
    );
}
