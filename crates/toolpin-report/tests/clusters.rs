//! One change in two tools is one cluster in every report format: shown
//! once where people read (text, Markdown, GitHub annotations), linked from
//! each finding where tools read (JSON, SARIF, JUnit).

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toolpin_drift::policy::Policy;
use toolpin_manifest::{Catalog, ServerPin};
use toolpin_report::context::Context;
use toolpin_report::text::Sides;
use toolpin_report::{Input, Style, FORMATS};

fn catalog(url_type: Value) -> Catalog {
    let repo = |name: &str, wrap: &dyn Fn(Value) -> Value| {
        let license = json!({"type": "object", "properties": {"url": {"type": url_type.clone()}}});
        json!({"name": name, "description": "Reads repositories.",
            "outputSchema": wrap(json!({"type": "object", "properties": {"license": license}}))})
    };
    let tools = vec![
        repo(
            "get_repo",
            &|r| json!({"type": "object", "properties": {"repo": r}}),
        ),
        repo(
            "list_repos",
            &|r| json!({"type": "object", "properties": {"items": {"type": "array", "items": r}}}),
        ),
    ];
    let pin = ServerPin::new("gh", json!({"file": "t.json"}), "mcp", tools).expect("pin");
    Catalog::new("default", BTreeMap::from([("gh".to_string(), pin)])).expect("catalog")
}

#[test]
fn every_format_shows_or_links_the_cluster() {
    let mut c = toolpin_drift::compare(
        &catalog(json!("string")),
        &catalog(json!(["string", "null"])),
    );
    let verdict = Policy::default().apply(&mut c);
    assert_eq!(c.findings.len(), 2, "{:#?}", c.findings);
    let context = Context::new("toolpin.lock", None);
    let input = Input {
        comparison: &c,
        verdict: &verdict,
        context: &context,
        style: Style { color: false },
        sides: Sides::LockfileAndLive,
        verbose: false,
        rules_doc: toolpin_report::markdown::RULES_DOC,
    };
    let doc: Value = serde_json::from_str(
        &FORMATS
            .iter()
            .find(|f| f.name == "json")
            .expect("json")
            .render(&input),
    )
    .expect("JSON");
    let id = doc["clusters"][0]["id"]
        .as_str()
        .expect("a cluster")
        .to_string();
    assert_eq!(doc["clusters"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        doc["clusters"][0]["pointer"],
        "…/license/properties/url/type"
    );
    assert_eq!(doc["clusters"][0]["findings"], json!([0, 1]));
    for format in FORMATS {
        let out = format.render(&input);
        let mentions = out.matches(id.as_str()).count();
        let want = match format.name {
            // The cluster once; the two tools have nothing else to show.
            "text" => 1,
            // The cluster once, and each member naming it.
            "markdown" => 3,
            // Each finding names it.
            "json" => 3,
            "sarif" | "junit" => 2,
            // Each finding's record names it.
            "csv" => 2,
            // One annotation for the two findings.
            "github" => 1,
            other => panic!("no expectation for format {other}: add one"),
        };
        assert_eq!(
            mentions, want,
            "{} mentions {id} {mentions} times:\n{out}",
            format.name
        );
    }
}
