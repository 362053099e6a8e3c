//! Every conversion rule on hand-written Swagger 2.0, OpenAPI 3.0 and 3.1
//! documents (tests/fixtures), with the converted tools as insta snapshots
//! (`cargo insta review` to accept a deliberate change), and the errors
//! a bad document gets.

use std::path::Path;

use serde_json::{json, Value};
use toolpin_manifest::Glob;
use toolpin_openapi::{convert_all, BodyMode, Options, PathPattern, Selection, MAX_NAME_LEN};

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture JSON")
}

fn run(doc: &Value, options: &Options) -> (Vec<Value>, Vec<String>) {
    let (tools, converted) = convert_all(doc, options).unwrap_or_else(|e| panic!("converts: {e}"));
    assert_eq!(converted.tools, tools.len());
    (tools, converted.warnings)
}

/// The snapshot: every tool, then the warnings.
fn render(tools: &[Value], warnings: &[String]) -> String {
    serde_json::to_string_pretty(&json!({"tools": tools, "warnings": warnings})).expect("JSON")
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}: {:?}", names(tools)))
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

fn globs(list: &[&str]) -> Vec<Glob> {
    list.iter().map(|g| Glob::new(g).expect("glob")).collect()
}

fn err(doc: &Value, options: &Options) -> String {
    match convert_all(doc, options) {
        Ok((tools, _)) => panic!("converted {} tools, expected an error", tools.len()),
        Err(e) => e.message,
    }
}

#[test]
fn openapi31_default() {
    let (tools, warnings) = run(&fixture("openapi31.json"), &Options::default());
    insta::assert_snapshot!("openapi31", render(&tools, &warnings));
}

#[test]
fn openapi31_rules() {
    let (tools, warnings) = run(&fixture("openapi31.json"), &Options::default());
    // Names: operationId sanitized; method + path without one; a long id
    // shortened with a hash; the duplicate renamed and reported.
    let mut got = names(&tools);
    got.sort_unstable();
    let long = got
        .iter()
        .find(|n| n.starts_with("users_list-every-user"))
        .copied()
        .expect("the long name");
    assert_eq!(long.len(), MAX_NAME_LEN);
    assert_eq!(
        got,
        vec![
            "createUser",
            "createUser_2",
            "delete_users_id",
            "getTree",
            "reports_get",
            "users_get",
            long,
            "users_set-avatar",
            "users_update",
        ]
    );
    assert_eq!(
        warnings,
        vec![
            "operation POST /users (operationId \"createUser\"): the tool name \"createUser\" is taken by POST /admin/invitations (operationId \"createUser\"); named \"createUser_2\"".to_string(),
            "operation GET /users/{id} (operationId \"users/get\"): header parameter \"Accept\" at #/paths/~1users~1{id}/get/parameters/2 is ignored, as OpenAPI 3 specifies".to_string(),
        ]
    );
    // Description: description over summary; summary alone; neither.
    let get = tool(&tools, "users_get");
    assert_eq!(
        get["description"],
        "Returns one user by id.\n\nPrefer this over listing when the id is known."
    );
    assert_eq!(tool(&tools, long)["description"], "List users");
    assert_eq!(
        tool(&tools, "delete_users_id")["description"],
        "Executes DELETE /users/{id}"
    );
    // Parameters: operation-level `verbose` replaces the path-level one;
    // path, query, header and cookie all become properties.
    assert_eq!(
        get["inputSchema"]["properties"]["verbose"],
        json!({"type": "boolean", "default": true, "description": "Operation-level: include every field."})
    );
    assert_eq!(
        get["inputSchema"]["properties"]["session"],
        json!({"type": "string", "deprecated": true})
    );
    assert_eq!(get["inputSchema"]["required"], json!(["id"]));
    // Recursion: a $ref into $defs, defined once.
    let tree = &tool(&tools, "getTree")["outputSchema"];
    assert_eq!(
        tree["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    assert_eq!(
        tree["$defs"]["Node"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    // A non-object response is wrapped; a sibling of $ref overrides.
    let list = &tool(&tools, long)["outputSchema"];
    assert_eq!(list["required"], json!(["result"]));
    assert_eq!(
        list["properties"]["result"]["items"]["properties"]["owner"]["description"],
        "Who manages this account (a sibling of $ref, kept over the target's)."
    );
    // Extensions and unknown members reach the tool.
    assert_eq!(get["outputSchema"]["x-pii"], true);
    let report = tool(&tools, "reports_get");
    assert_eq!(
        report["outputSchema"]["vendorThing"],
        json!({"kept": "as written"})
    );
    assert_eq!(
        report["inputSchema"]["properties"]["report id"]["description"],
        "Overrides the component's description."
    );
    // Which operation each tool came from.
    assert_eq!(
        get["_meta"],
        json!({"toolpin/openapi": {"method": "GET", "path": "/users/{id}", "operationId": "users/get"}})
    );
}

#[test]
fn openapi31_merge() {
    let options = Options {
        body: BodyMode::Merge,
        ..Options::default()
    };
    let (tools, warnings) = run(&fixture("openapi31.json"), &options);
    insta::assert_snapshot!("openapi31_merge", render(&tools, &warnings));
    // The body's `id` takes the name; the path parameter becomes id__path.
    let update = &tool(&tools, "users_update")["inputSchema"];
    assert_eq!(update["properties"]["id__path"]["format"], "uuid");
    assert_eq!(
        update["properties"]["id"],
        json!({"type": "string", "readOnly": true})
    );
    assert_eq!(update["required"], json!(["id", "id__path", "name"]));
    // A body that is not an object stays under `body`, with a warning.
    assert!(
        warnings.iter().any(|w| w.starts_with("operation PUT /users/{id}/avatar (operationId \"users/set-avatar\"): the request body is not an object schema")),
        "{warnings:#?}"
    );
}

#[test]
fn openapi30_default() {
    let (tools, warnings) = run(&fixture("openapi30.json"), &Options::default());
    insta::assert_snapshot!("openapi30", render(&tools, &warnings));
    assert!(warnings.is_empty(), "{warnings:?}");
    // The body under `body`, with the request body's description.
    let create = &tool(&tools, "createPet")["inputSchema"];
    assert_eq!(create["required"], json!(["body"]));
    assert_eq!(
        create["properties"]["body"]["description"],
        "The pet to add."
    );
    assert_eq!(
        create["properties"]["body"]["properties"]["tag"]["nullable"],
        true
    );
    // Mutual recursion: Person → Spouse → Person.
    let person = &tool(&tools, "getPerson")["outputSchema"];
    assert_eq!(
        person["properties"]["spouse"]["properties"]["partner"],
        json!({"$ref": "#/$defs/Person"})
    );
    assert!(
        person["$defs"]["Person"]["properties"]["spouse"]["properties"]["partner"]
            == json!({"$ref": "#/$defs/Person"})
    );
    // No responses: converted without an outputSchema.
    assert!(tool(&tools, "placeOrder").get("outputSchema").is_none());
    // The first 2xx response wins over `default`.
    assert_eq!(
        tool(&tools, "listPets")["outputSchema"]["properties"]["result"]["maxItems"],
        100
    );
}

#[test]
fn openapi30_merge_and_no_output_schema() {
    let options = Options {
        body: BodyMode::Merge,
        output_schema: false,
        ..Options::default()
    };
    let (tools, warnings) = run(&fixture("openapi30.json"), &options);
    insta::assert_snapshot!("openapi30_merge_no_output", render(&tools, &warnings));
    assert!(tools.iter().all(|t| t.get("outputSchema").is_none()));
    let create = &tool(&tools, "createPet")["inputSchema"];
    assert_eq!(create["required"], json!(["name"]));
    assert_eq!(create["properties"]["dry_run"]["default"], false);
    let update = &tool(&tools, "updatePet")["inputSchema"];
    assert_eq!(update["required"], json!(["petId__path"]));
    assert_eq!(
        update["properties"]["petId"]["description"],
        "A body field with a parameter's name."
    );
    assert_eq!(
        warnings,
        vec!["operation POST /store/orders (operationId \"placeOrder\"): the request body is not an object schema with properties; kept under `body` instead of merged".to_string()]
    );
}

#[test]
fn openapi30_pickers() {
    let selection = Selection {
        include_tags: globs(&["pets"]),
        include_paths: vec![PathPattern::parse("GET /store/*").expect("pattern")],
        exclude_operations: globs(&["delete*"]),
        exclude_tags: globs(&["people"]),
        ..Selection::default()
    };
    let options = Options {
        selection,
        ..Options::default()
    };
    let (tools, _) = run(&fixture("openapi30.json"), &options);
    let mut got = names(&tools);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "createPet",
            "getInventory",
            "listPets",
            "showPetById",
            "updatePet"
        ]
    );
    let only_writes = Options {
        selection: Selection {
            include_tags: globs(&["write"]),
            exclude_paths: vec![PathPattern::parse("/pets/{petId}").expect("pattern")],
            ..Selection::default()
        },
        ..Options::default()
    };
    let (tools, _) = run(&fixture("openapi30.json"), &only_writes);
    let mut got = names(&tools);
    got.sort_unstable();
    assert_eq!(got, ["createPet", "placeOrder"]);
}

#[test]
fn swagger2_default() {
    let (tools, warnings) = run(&fixture("swagger2.json"), &Options::default());
    insta::assert_snapshot!("swagger2", render(&tools, &warnings));
    assert!(warnings.is_empty(), "{warnings:?}");
    let find = &tool(&tools, "findPets")["inputSchema"];
    // A 2.0 parameter's own type keywords are its schema.
    assert_eq!(
        find["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string", "enum": ["dog", "cat"]}, "description": "tags to filter by"})
    );
    assert_eq!(find["properties"]["limit"]["default"], 10);
    assert_eq!(find["required"], json!(["Authorization"]));
    // Path-level parameter, with its x- extension kept.
    let by_id = &tool(&tools, "findPetById")["inputSchema"];
    assert_eq!(by_id["properties"]["id"]["x-example"], 42);
    // formData parameters form the body.
    let upload = &tool(&tools, "uploadPhoto")["inputSchema"];
    assert_eq!(upload["required"], json!(["body", "id"]));
    assert_eq!(upload["properties"]["body"]["required"], json!(["file"]));
    assert_eq!(
        upload["properties"]["body"]["properties"]["file"]["type"],
        "file"
    );
    // The body parameter, and a response $ref into #/responses.
    let add = &tool(&tools, "addPet");
    assert_eq!(
        add["inputSchema"]["properties"]["body"]["description"],
        "Pet to add to the store"
    );
    assert_eq!(
        tool(&tools, "uploadPhoto")["outputSchema"]["properties"]["ok"]["type"],
        "boolean"
    );
}

#[test]
fn swagger2_merge() {
    let options = Options {
        body: BodyMode::Merge,
        ..Options::default()
    };
    let (tools, _) = run(&fixture("swagger2.json"), &options);
    let add = &tool(&tools, "addPet")["inputSchema"];
    assert_eq!(add["required"], json!(["name"]));
    assert_eq!(add["properties"]["tag"]["x-nullable"], true);
    let upload = &tool(&tools, "uploadPhoto")["inputSchema"];
    assert_eq!(upload["required"], json!(["file", "id"]));
}

/// A document with one operation whose 200 response has `schema`, plus
/// `components`.
fn doc_with(schema: Value, components: Value) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/x": {"get": {"operationId": "getX", "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}}}},
        "components": components,
    })
}

#[test]
fn bad_references_are_located_errors() {
    let d = Options::default();
    let missing = doc_with(
        json!({"type": "object", "properties": {"a": {"$ref": "#/components/schemas/Nope"}}}),
        json!({}),
    );
    assert_eq!(
        err(&missing, &d),
        "operation GET /x (operationId \"getX\"): $ref \"#/components/schemas/Nope\" points to nothing (at #/paths/~1x/get/responses/200/content/application~1json/schema/properties/a)"
    );
    let cycle = doc_with(
        json!({"$ref": "#/components/schemas/A"}),
        json!({"schemas": {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"}}}),
    );
    assert_eq!(
        err(&cycle, &d),
        "operation GET /x (operationId \"getX\"): $ref cycle: #/components/schemas/A → #/components/schemas/B → #/components/schemas/A never reaches a schema (at #/components/schemas/B)"
    );
    let remote = doc_with(
        json!({"type": "object", "properties": {"pet": {"$ref": "https://example.com/pet.json#/Pet"}}}),
        json!({}),
    );
    assert_eq!(
        err(&remote, &d),
        "operation GET /x (operationId \"getX\"): $ref \"https://example.com/pet.json#/Pet\" at #/paths/~1x/get/responses/200/content/application~1json/schema/properties/pet leaves the document; set allow_remote_refs = true to keep such references as written"
    );
    let allowed = Options {
        allow_remote_refs: true,
        ..Options::default()
    };
    let (tools, _) = run(&remote, &allowed);
    assert_eq!(
        tools[0]["outputSchema"]["properties"]["pet"],
        json!({"$ref": "https://example.com/pet.json#/Pet"})
    );
    let other_file = doc_with(
        json!({"$ref": "common.yaml#/components/schemas/Pet"}),
        json!({}),
    );
    assert!(err(&other_file, &d).contains("$ref \"common.yaml#/components/schemas/Pet\" at #/paths/~1x/get/responses/200/content/application~1json/schema leaves the document"));
    // A parameter that refers out of the document cannot be converted even
    // when schemas may.
    let remote_param = json!({
        "openapi": "3.1.0",
        "paths": {"/x": {"get": {"parameters": [{"$ref": "params.yaml#/limit"}], "responses": {}}}}
    });
    assert!(err(&remote_param, &allowed)
        .contains("only schemas may (allow_remote_refs), not parameters"));
    let param_cycle = json!({
        "openapi": "3.1.0",
        "paths": {"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/a"}], "responses": {}}}},
        "components": {"parameters": {"a": {"$ref": "#/components/parameters/b"}, "b": {"$ref": "#/components/parameters/a"}}}
    });
    assert_eq!(
        err(&param_cycle, &d),
        "operation GET /x: $ref cycle: #/components/parameters/a → #/components/parameters/b → #/components/parameters/a never reaches an object (at #/paths/~1x/get/parameters/0)"
    );
}

#[test]
fn bad_documents_are_errors() {
    let d = Options::default();
    assert_eq!(
        err(&json!({"tools": []}), &d),
        "not an OpenAPI document: it has no `openapi` or `swagger` member"
    );
    assert_eq!(
        err(&json!([1]), &d),
        "not an OpenAPI document: it is an array, expected an object"
    );
    assert!(
        err(&json!({"openapi": "4.0.0"}), &d).starts_with("unsupported OpenAPI version \"4.0.0\"")
    );
    assert!(err(&json!({"swagger": "1.2"}), &d).starts_with("unsupported Swagger version \"1.2\""));
    assert_eq!(
        err(&json!({"openapi": "3.1.0", "paths": []}), &d),
        "#/paths is an array, expected an object"
    );
    assert_eq!(
        err(
            &json!({"openapi": "3.1.0", "paths": {"/a": {"get": "nope"}}}),
            &d
        ),
        "GET /a: the operation at #/paths/~1a/get is a string, expected an object"
    );
    assert_eq!(
        err(
            &json!({"openapi": "3.1.0", "paths": {"/a": {"get": {"parameters": [{"in": "query"}]}}}}),
            &d
        ),
        "operation GET /a: the parameter at #/paths/~1a/get/parameters/0 has no string `name`"
    );
    assert_eq!(
        err(
            &json!({"openapi": "3.1.0", "paths": {"/a": {"get": {"parameters": {"name": "x"}}}}}),
            &d
        ),
        "operation GET /a: #/paths/~1a/get/parameters is an object, expected an array"
    );
    // Nothing to convert is not an error.
    let (tools, converted) =
        convert_all(&json!({"openapi": "3.1.0", "info": {}}), &d).expect("empty");
    assert!(tools.is_empty());
    assert_eq!(converted.operations, 0);
}

#[test]
fn path_item_refs_and_percent_encoded_pointers() {
    let doc = json!({
        "openapi": "3.1.0",
        "paths": {"/a": {"$ref": "#/components/pathItems/shared"}},
        "components": {
            "pathItems": {"shared": {"get": {"operationId": "shared", "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/a~1b%25c"}}}}}}}},
            "schemas": {"a/b%c": {"type": "object", "title": "escaped"}}
        }
    });
    let (tools, _) = run(&doc, &Options::default());
    assert_eq!(
        tools[0]["outputSchema"],
        json!({"type": "object", "title": "escaped"})
    );
    assert_eq!(tools[0]["_meta"]["toolpin/openapi"]["path"], "/a");
}

#[test]
fn duplicates_and_long_names_stay_distinct() {
    // Two operationIds that share their first 64 characters, and two that
    // sanitize to the same name.
    let long_a = format!("{}-alpha", "x".repeat(70));
    let long_b = format!("{}-bravo", "x".repeat(70));
    let doc = json!({
        "openapi": "3.1.0",
        "paths": {
            "/a": {"get": {"operationId": long_a}, "post": {"operationId": long_b}},
            "/b": {"get": {"operationId": "same name"}, "post": {"operationId": "same/name"}}
        }
    });
    let (tools, warnings) = run(&doc, &Options::default());
    let got = names(&tools);
    assert_eq!(got.len(), 4);
    assert!(got.iter().all(|n| n.len() <= MAX_NAME_LEN), "{got:?}");
    assert_ne!(got[0], got[1]);
    assert_eq!(&got[2..], ["same_name", "same_name_2"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    // Deterministic: the same document converts to the same names.
    let (again, _) = run(&doc, &Options::default());
    assert_eq!(names(&again), got);
}

#[test]
fn exponential_refs_fall_back_to_defs() {
    // Each level refers to the next one 8 times: 8^7 ≈ 2 million values
    // if inlined; with $defs it stays small.
    let mut schemas = serde_json::Map::new();
    for level in 0..7 {
        let next = json!({"$ref": format!("#/components/schemas/L{}", level + 1)});
        let props: serde_json::Map<String, Value> =
            (0..8).map(|i| (format!("p{i}"), next.clone())).collect();
        schemas.insert(
            format!("L{level}"),
            json!({"type": "object", "properties": props}),
        );
    }
    schemas.insert("L7".into(), json!({"type": "string"}));
    let doc = doc_with(
        json!({"$ref": "#/components/schemas/L0"}),
        json!({"schemas": schemas}),
    );
    let (tools, warnings) = run(&doc, &Options::default());
    let out = &tools[0]["outputSchema"];
    assert_eq!(out["properties"]["p0"], json!({"$ref": "#/$defs/L1"}));
    assert_eq!(
        out["$defs"]["L6"]["properties"]["p7"],
        json!({"$ref": "#/$defs/L7"})
    );
    assert!(serde_json::to_string(out).expect("json").len() < 10_000);
    assert_eq!(
        warnings,
        vec![format!(
            "operation GET /x (operationId \"getX\"): its schemas would inline to more than {} values; every $ref is kept in $defs instead",
            toolpin_openapi::INLINE_BUDGET
        )]
    );
}

#[test]
fn deep_ref_chains_stop_inlining_at_the_depth_limit() {
    // 80 distinct schemas, each nesting the next: inlined whole, the tool
    // would nest deeper than a lockfile allows.
    let mut schemas = serde_json::Map::new();
    for i in 0..80 {
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/components/schemas/S{}", i + 1)}}}),
        );
    }
    schemas.insert("S80".into(), json!({"type": "string"}));
    let doc = doc_with(
        json!({"$ref": "#/components/schemas/S0"}),
        json!({"schemas": schemas}),
    );
    let (tools, _) = run(&doc, &Options::default());
    let text = serde_json::to_string(&tools[0]).expect("json");
    assert!(text.contains("\"$ref\":\"#/$defs/S"), "{}", &text[..200]);
    fn depth(v: &Value) -> usize {
        match v {
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    assert!(
        depth(&tools[0]) <= toolpin_openapi::MAX_INLINE_DEPTH + 4,
        "{}",
        depth(&tools[0])
    );
}

#[test]
fn record_holds_every_setting() {
    assert_eq!(
        Options::default().record(),
        json!({"allow_remote_refs": false, "body": "property", "output_schema": true, "version": 1})
    );
    let picky = Options {
        body: BodyMode::Merge,
        selection: Selection {
            include_tags: globs(&["repos"]),
            exclude_paths: vec![PathPattern::parse("DELETE /*").expect("pattern")],
            ..Selection::default()
        },
        ..Options::default()
    };
    assert_eq!(
        picky.record(),
        json!({"allow_remote_refs": false, "body": "merge", "output_schema": true, "version": 1,
               "include_tags": ["repos"], "exclude_paths": ["DELETE /*"]})
    );
}

#[test]
fn long_reference_chains_are_bounded() {
    // 5,000 schemas that are only a reference to the next: refused, not
    // followed into a stack overflow.
    let mut schemas = serde_json::Map::new();
    for i in 0..5000 {
        schemas.insert(
            format!("A{i}"),
            json!({"$ref": format!("#/components/schemas/A{}", i + 1)}),
        );
    }
    schemas.insert("A5000".into(), json!({"type": "string"}));
    let doc = doc_with(
        json!({"$ref": "#/components/schemas/A0"}),
        json!({"schemas": schemas}),
    );
    assert!(
        err(&doc, &Options::default())
            .contains("a chain of more than 1000 $refs that are only references"),
        "{}",
        err(&doc, &Options::default())
    );
    // 5,000 references each with a sibling (so each is a schema of its
    // own): every 64 nested ones, the next is kept in $defs, whose
    // definition inlines the next 64.
    let mut schemas = serde_json::Map::new();
    for i in 0..5000 {
        schemas.insert(
            format!("B{i}"),
            json!({"$ref": format!("#/components/schemas/B{}", i + 1), "description": format!("level {i}")}),
        );
    }
    schemas.insert("B5000".into(), json!({"type": "string"}));
    let doc = doc_with(
        json!({"$ref": "#/components/schemas/B0"}),
        json!({"schemas": schemas}),
    );
    let (tools, _) = run(&doc, &Options::default());
    let out = &tools[0]["outputSchema"];
    let defs = out["$defs"].as_object().map_or(0, |d| d.len());
    assert_eq!(defs, 5000 / 64, "{defs} definitions");
    assert_eq!(out["$defs"]["B64"]["description"], "level 64");
}

#[test]
fn thousands_of_duplicate_operation_ids_are_numbered() {
    let paths: serde_json::Map<String, Value> = (0..3000)
        .map(|i| (format!("/p{i:04}"), json!({"get": {"operationId": "same"}})))
        .collect();
    let doc = json!({"openapi": "3.1.0", "paths": paths});
    let (tools, warnings) = run(&doc, &Options::default());
    assert_eq!(tools.len(), 3000);
    assert_eq!(warnings.len(), 2999);
    assert_eq!(tools[0]["name"], "same");
    assert_eq!(tools[2999]["name"], "same_3000");
}

#[test]
fn a_response_schema_with_its_own_defs_keeps_them_beside_the_recursion_defs() {
    let doc = doc_with(
        json!({"$ref": "#/components/schemas/Tree"}),
        json!({"schemas": {
            "Tree": {"type": "object", "$defs": {"Node": {"type": "string", "title": "the document's own Node"}},
                     "properties": {"label": {"$ref": "#/components/schemas/Tree/$defs/Node"}, "node": {"$ref": "#/components/schemas/Node"}}},
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}}
        }}),
    );
    let (tools, _) = run(&doc, &Options::default());
    let out = &tools[0]["outputSchema"];
    assert_eq!(out["$defs"]["Node"]["title"], "the document's own Node");
    assert_eq!(
        out["properties"]["node"]["properties"]["next"],
        json!({"$ref": "#/$defs/Node_2"})
    );
    assert_eq!(
        out["$defs"]["Node_2"]["properties"]["next"],
        json!({"$ref": "#/$defs/Node_2"})
    );
}
